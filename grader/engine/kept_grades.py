"""Hand grades kept over a regrade. A hand grade (a written answer's score, given in the
formgrader) or an override (a hand score on an autograded check) belongs to the answer it judged,
and lasts as long as that answer is unchanged, whatever else changed: a check, the kit, the
release, the points.

nbgrader's SaveAutoGrades marks every grade that has a manual score as needing a grader each
time the scores are saved. So autograde reads the hand grades before it (`before`: the gradebook's
scores, extra credit and comments, each with the digest of the answer it judged in the notebook
last graded, which is what the formgrader showed), and puts them right after it (`after`):

    the answer unchanged            the hand grade or override stays done
    a written answer changed        nbgrader's flag stands: the score is kept, a second look asked
    an override's answer changed    set aside: the new autograde counts, and the override is kept
                                    on record, restorable (`python -m grader override keep`)
    not known (no notebook graded before)   as changed

The record, COURSE/hand_grades.jsonl, is written one line per event and never rewritten. It also
carries a notebook's hand grades across an errata that rebuilds the notebook in the gradebook
(grader/term/errata.py): every score, extra credit, comment and flag, keyed by student, grade id
and the digest of the answer it judged, so that none is lost; and each hand score left standing
on a cell whose points a release changed ("points changed", with both maxima: term/overrides.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime

from ..cells import answers
from ..course import Layout
from ..outcome import SetAside

SET_ASIDE, KEPT, CLEARED, SAVED = "set aside", "kept", "cleared", "saved for errata"
POINTS_CHANGED = "points changed"  # a release changed the points of a hand-scored cell


@dataclass(frozen=True)
class HandGrade:
    """What a grader gave one cell of one submission, and the answer it judged. `grade_id` None
    stands for the notebook itself, for its formgrader flag alone."""

    student: str
    notebook: str
    grade_id: str | None
    answer: str | None  # cells.answers' digest of what it judged; None: not known
    written: bool = False  # a written answer (solution and grade); else an override, a comment
    manual_score: float | None = None
    extra_credit: float | None = None
    comment: str | None = None
    done: bool = True  # graded, not waiting for a (second) look
    flagged: bool = False  # the submission's flag in the formgrader

    @property
    def scored(self) -> bool:
        return self.manual_score is not None or self.extra_credit is not None


@dataclass
class Kept:
    """What `after` did with one submission's hand grades."""

    kept: int = 0  # done, and still done: the answer unchanged
    asked: list[str] = field(default_factory=list)  # written answers to grade again
    set_aside: list[SetAside] = field(default_factory=list)


def before(gb, student: str, notebook: str, previous) -> list[HandGrade]:
    """The submission's hand grades as the gradebook (`gb`) holds them now, each with the
    digest of its answer in `previous`, the notebook last graded (None where there is none)."""
    from nbgrader.api import MissingEntry

    try:
        submitted = gb.find_submission_notebook(notebook, notebook, student)
    except MissingEntry:
        return []
    judged = answers(previous) if previous is not None else {}
    solutions = {cell.name for cell in submitted.notebook.solution_cells}
    found: dict[str | None, HandGrade] = {}
    for g in submitted.grades:
        if g.manual_score is not None or g.extra_credit is not None:
            found[g.name] = HandGrade(
                student,
                notebook,
                g.name,
                judged.get(g.name),
                written=g.name in solutions,
                manual_score=g.manual_score,
                extra_credit=g.extra_credit,
                done=not g.needs_manual_grade,
                flagged=bool(submitted.flagged),
            )
    for c in submitted.comments:
        if c.manual_comment is not None:
            base = found.get(c.name) or HandGrade(student, notebook, c.name, judged.get(c.name))
            found[c.name] = _with(base, comment=c.manual_comment, flagged=bool(submitted.flagged))
    if submitted.flagged and not found:
        found[None] = HandGrade(student, notebook, None, None, flagged=True)
    return list(found.values())


def _with(hand: HandGrade, **changes) -> HandGrade:
    return HandGrade(**{**asdict(hand), **changes})


def after(gb, hands: list[HandGrade], executed, layout: Layout) -> Kept:
    """Put `hands` back on the grades just saved for `executed` (see the module's docstring);
    an override set aside goes to the record. Commits."""
    if not hands:
        return Kept()
    student, notebook = hands[0].student, hands[0].notebook
    submitted = gb.find_submission_notebook(notebook, notebook, student)
    grades = {g.name: g for g in submitted.grades}
    comments = {c.name: c for c in submitted.comments}
    now, done, aside = answers(executed), Kept(), []
    for hand in hands:
        submitted.flagged = bool(submitted.flagged or hand.flagged)
        if hand.comment is not None and hand.grade_id in comments:
            comments[hand.grade_id].manual_comment = hand.comment
        if not hand.scored:
            continue
        grade = grades.get(hand.grade_id)
        if grade is None:  # its cell is gone (an errata): the record keeps it
            continue
        same = hand.answer is not None and now.get(hand.grade_id) == hand.answer
        # A check's own flag only ever said "re-saved" (nbgrader flags every hand score then):
        # its override stands on its answer alone. A written answer's flag means "to grade".
        done_before = hand.done or not hand.written
        if hand.written or same:
            grade.manual_score, grade.extra_credit = hand.manual_score, hand.extra_credit
            grade.needs_manual_grade = not (same and done_before)
            done.kept += int(same and done_before)
            if hand.written and hand.done and not same:
                done.asked.append(hand.grade_id)
            continue
        grade.manual_score, grade.extra_credit, grade.needs_manual_grade = None, None, False
        done.set_aside.append(
            SetAside(hand.grade_id, hand.manual_score, grade.auto_score, grade.max_score)
        )
        aside.append(hand)
    gb.db.commit()
    autograded = {s.grade_id: s.autograde for s in done.set_aside}
    record(layout, SET_ASIDE, aside, autograde=autograded)
    return done


def record(layout: Layout, event: str, hands: list[HandGrade], **extra: dict) -> None:
    """One line per hand grade at the end of COURSE/hand_grades.jsonl: when, what happened
    (`event`) and the hand grade whole; `extra` maps a grade id to one more field's value."""
    if not hands:
        return
    at = datetime.now().astimezone().isoformat(timespec="seconds")
    with layout.hand_grades.open("a", encoding="utf-8") as out:
        for hand in hands:
            line = {"at": at, "event": event, **asdict(hand)}
            line |= {key: values[hand.grade_id] for key, values in extra.items()}
            out.write(json.dumps(line) + "\n")


def recorded(layout: Layout) -> list[dict]:
    """Every line of the record, oldest first; [] before any."""
    if not layout.hand_grades.is_file():
        return []
    lines = layout.hand_grades.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def hand_grade(line: dict) -> HandGrade:
    """A line of the record read back as the hand grade it holds."""
    known = HandGrade.__dataclass_fields__
    return HandGrade(**{k: v for k, v in line.items() if k in known})
