"""One notebook's grading, as the engine leaves it and the term completes it: the engine fills
the status, the scores and the review flags, the term the lateness and the copy flags
(grader/term/scores.py). A flag is data from where it is found to where a report writes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Status(StrEnum):
    """What became of one notebook's grading (a string: it is written to the reports as is)."""

    GRADED = "graded"  # executed now, its scores saved
    UNCHANGED = "unchanged"  # nothing that can change its scores changed: the last ones kept
    QUARANTINED = "quarantined"  # not executed: preflight could not make it gradable
    FAILED = "failed"  # its job did not finish: nothing saved


SCORED = (Status.GRADED, Status.UNCHANGED)  # statuses with scores in the gradebook
NOT_GRADED = (Status.QUARANTINED, Status.FAILED)  # statuses with a reason and no score


class SheetStatus(StrEnum):
    """A notebook's status on the grade sheets (reports/grades.csv, the gradebook's CSV, the
    Canvas file): the engine's verdict where it gave no score, else the term's."""

    GRADED = "graded"  # scored, on time
    LATE = "late"  # scored, the late penalty taken
    PARTIAL = "partial: needs hand grading"  # scored, a written answer still at 0 (--partial)
    NEEDS = "needs hand grading"  # a written answer to grade by hand: its score left empty
    MISSING = "missing"  # nothing handed in, and due: 0
    NOT_DUE = "not due"  # nothing handed in, not due yet
    SKIPPED = "skipped"  # extra credit, not handed in
    PENDING = "pending"  # handed in, not autograded yet
    WRONG = "wrong notebook"  # only another notebook handed in for it (collect names it)
    QUARANTINED = Status.QUARANTINED.value
    FAILED = Status.FAILED.value


REVIEW, COPY = "review", "copy"  # the kinds of flag


@dataclass(frozen=True)
class Flag:
    """A reason for the instructor to look at a submission; it never changes a score.

    REVIEW (grader/engine/review.py): a line of the student's code that reaches for the checking
    machinery. COPY (grader/term/copies/): a part that matches a source, reported from both
    sides with its longest run, as MOSS and JPlag report one."""

    kind: str  # REVIEW or COPY
    part: str  # review: the cell ("cell 12 (ex1_attention)"); copy: the exercise's grade id
    source: str  # review: what the line does; copy: what it matches ("classmate bea's")
    quoted: str = ""  # review: the line itself
    share: float = 0.0  # copy: the share of the student's answer the match covers
    held: float = 0.0  # copy: the share of the source's that the student's holds
    alike: int = 0  # copy: tokens (words, for a written answer) alike
    longest: int = 0  # copy: the longest run of them
    answer: str = "own code"  # copy: "own code" or "written answer"
    whose: str = ""  # copy: the source as a possessive ("the solution's", "bea's")
    written: str = ""  # the text of a flag that an earlier version kept as text only

    def text(self) -> str:
        """The flag as the reports quote it."""
        if self.written:
            return self.written
        if self.kind == REVIEW:
            return f"{self.part} {self.source}: `{self.quoted}`"
        unit = "words" if self.answer == "written answer" else "tokens"
        return (
            f"copy: {self.part} matches {self.source}: {self.share:.0%} of the student's "
            f"{self.answer}, {self.held:.0%} of {self.whose} ({self.alike} {unit} alike, "
            f"longest run {self.longest})"
        )

    __str__ = text

    @classmethod
    def read(cls, saved: dict | str) -> Flag:
        """A flag as reports/autograde.json holds it; a report from before flags were data holds
        its text, kept whole (a copy flag's is replaced when the class is compared again)."""
        if isinstance(saved, str):
            return cls(COPY if saved.startswith("copy: ") else REVIEW, "", "", written=saved)
        return cls(**saved)


@dataclass(frozen=True)
class SetAside:
    """An override (a hand score on an autograded check) whose answer changed since it was given:
    the new autograde counts, and the override stays on record (COURSE/hand_grades.jsonl), to
    count again with `python -m grader override keep`, or cleared (engine/kept_grades.py)."""

    grade_id: str
    override: float | None  # the hand score set aside
    autograde: float | None  # the new autograde's score, which counts now
    max_score: float

    @classmethod
    def read(cls, saved: dict | SetAside) -> SetAside:
        """One as reports/autograde.json holds it."""
        return saved if isinstance(saved, SetAside) else cls(**saved)


@dataclass
class Outcome:
    student: str
    assignment: str  # the notebook: in this course one assignment is one notebook
    status: Status
    score: float = 0.0
    max_score: float = 0.0
    needs_manual: int = 0
    seconds: float = 0.0
    repairs: list[str] = field(default_factory=list)
    reason: str = ""
    flags: list[Flag] = field(default_factory=list)  # for a look; never change a score
    # The earlier release the submission was made from (review.Release as a dict); None: this one.
    made_from: dict | None = None
    seconds_late: float = 0.0  # past the due date (extension included): the term's, after scoring
    late_penalty: float = 0.0  # points nbgrader's late penalty takes off `score`: the term's too
    # Hand grades over this grading (kept_grades.py): kept, their answers unchanged; written
    # answers asked for again, their answers changed; overrides set aside, the autograde counting.
    hand_kept: int = 0
    hand_asked: list[str] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
