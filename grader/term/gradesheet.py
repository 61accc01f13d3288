"""The term's grades as every file of grades shows them (a Sheet, read from the gradebook once
per `make export`: export.py), and two of those files:

    reports/grades.csv          nbgrader's export, with a status column (NbgraderCsv)
    reports/gradesheet.csv      one row per student: id, first_name, last_name, email, then per
                                notebook NN_score (NN_extra_credit) and NN_status, then total
                                and out_of
    reports/canvas_import.csv   Canvas's gradebook import (canvas.py)

Only the notebooks that count are in them: those course.toml assigns (Term.counted),
each out of its release's points. An extra-credit notebook (06_stretch by default) adds what it
earns to the total and nothing to out_of; Canvas gets it with 0 points possible, Canvas's way of
saying extra credit. The students are the gradebook's (the roster, where one was loaded, plus
anyone who handed something in); names and emails are nbgrader's Student records, Canvas's own
ids the roster's. Scores come from the gradebook, so hand grades count; a notebook's status comes
from the last autograde report:

    graded       scored by autograde (and by hand where a cell needs it)
    late         scored, handed in after its due date; the score is after the penalty
    needs hand grading   scored by autograde, but a written answer still waits for its hand
                 grade (hand_grading.py): no score, since the answer would count 0
    partial: needs hand grading   the same, exported with --partial: the partial score
    missing      nothing handed in, and the notebook is due: scores 0 in the total
    not due      nothing handed in yet, before the due date: no score, nothing lost yet
    skipped      extra credit, nothing handed in: no score, nothing lost
    pending      handed in, not graded yet: run `make autograde`
    wrong notebook   only another notebook was handed in for it (collect names which): kept,
                 graded as neither; settled once the right one is collected
    quarantined  not gradeable as handed in (the report says why)
    failed       its grading job failed (the report says why)

A quarantined, failed, pending, wrong or hand-grading notebook has an empty score, never the
gradebook's older or partial score or a 0, and leaves the student's total empty too, until it is
settled. Times are ISO 8601 in course.toml's timezone, with their offset.

A student who has left the class list (roster.dropped: on an earlier roster, not on the last) is
left out of every file, unless asked for (`dropped="keep"`); their work stays where it is.

Nothing is written from a gradebook that the last autograde has not caught up with
(since_autograde; export refuses with Stale, one line, before writing anything):

    to regrade   autograde would grade it again: what it would run now (the file that counts,
                 preflighted against the release and sanitized from the gradebook, as
                 autograde.prepare makes it) is not what it graded last (autograded/), or the
                 file it quarantined would now be graded. A release that changes a check's
                 points or code, and a newer file collected, come here.
    lateness to settle   autograde's settling (deadlines.settle, tried on a copy of the
                 gradebook) would change its lateness or penalty: a due date, an extension or
                 the [late] policy changed in course.toml, a time handed in corrected, a hand
                 grade entered since under a policy that takes a share of the score.

A submission is prepared again only where its file or its release is newer than its last grading
(job.json): a graded class as it stands is checked from the files' times. Not seen: an edit of the
engine, the checks or the package alone (the rerun key's code part, which no file of the course
records), and a notebook whose last job failed (it is exported as `failed`, never with a score).
"""

from __future__ import annotations

import contextlib
import csv
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

import nbformat
from nbgrader.plugins import CsvExportPlugin
from traitlets import Bool, Enum

from ..course import GradingError, Layout
from ..engine import autograde as engine
from ..outcome import NOT_GRADED, SCORED, SheetStatus, Status
from . import collected, deadlines, roster
from .course_open import Course
from .hand_grading import waiting
from .nbgrader_apps import gradebook
from .rules import Counted
from .scores import QUIET, load_outcomes

WITH_SCORE = (SheetStatus.GRADED, SheetStatus.LATE, SheetStatus.PARTIAL)  # a number in every file
COUNTED = (*WITH_SCORE, SheetStatus.MISSING)  # in the total; a missing notebook counts 0
# No total while one of these stands.
UNSETTLED = (
    *(SheetStatus.PENDING, SheetStatus.QUARANTINED, SheetStatus.FAILED, SheetStatus.NEEDS),
    SheetStatus.WRONG,
)
LEAVE_OUT, KEEP = "leave-out", "keep"  # what the files do with a student who left the class list
DROPPED_CHOICES = (LEAVE_OUT, KEEP)


@dataclass
class Mark:
    """One student's result for one notebook, as the sheets show it."""

    score: float | None
    status: SheetStatus
    waiting: list[str] = field(default_factory=list)  # written answers still to grade by hand


@dataclass
class Row:
    id: str
    first_name: str
    last_name: str
    email: str
    marks: dict  # notebook -> Mark
    lms_user_id: str = ""  # Canvas's own user id, where the gradebook has it

    def total(self) -> float | None:
        if any(m.status in UNSETTLED for m in self.marks.values()):
            return None
        return sum(m.score for m in self.marks.values() if m.status in COUNTED)


@dataclass
class Sheet:
    """The gradebook read once for every file of grades: a Row per student of the gradebook,
    the notebooks that count in course order, and what the gradebook holds of each submission
    (nbgrader's submission record: its raw score and time; its lateness)."""

    rows: list[Row]
    notebooks: list[Counted]
    submissions: dict[tuple[str, str], dict]  # (student, notebook) -> nbgrader's record
    lateness: deadlines.Lateness


def penalised(score: float, penalty: float) -> float:
    """The penalty is in points (nbgrader's late_submission_penalty), taken off the score."""
    return round(max(score - max(penalty, 0.0), 0.0), 2)


def _students(gb, also=(), left=()) -> list[tuple[str, str, str, str, str]]:
    """The gradebook's students, and those of `also` it lacks (a wrong notebook is all they
    handed in, and there is no roster), but those of `left` (who left the class list)."""
    students = [
        (s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
        for s in gb.students
        if s.id not in left
    ]
    known = {s[0] for s in students}
    return sorted(students + [(s, "", "", "", "") for s in set(also) - known - set(left)])


def left_out(course: Course, dropped: str = LEAVE_OUT) -> list[str]:
    """The students the files leave out: those who left the class list (roster.dropped), unless
    `dropped` is KEEP."""
    if dropped not in DROPPED_CHOICES:
        raise ValueError(f"dropped: {dropped!r}, not one of {', '.join(DROPPED_CHOICES)}")
    return roster.dropped(course) if dropped == LEAVE_OUT else []


def _submissions(gb, names: list[str]) -> dict[tuple[str, str], dict]:
    known = {a.name for a in gb.assignments}
    return {
        (d["student"], name): d
        for name in names
        if name in known
        for d in gb.submission_dicts(name)
    }


def mark(
    course: Course,
    student: str,
    notebook: Counted,
    score: float | None,
    outcome,
    late: tuple[float, float] = (0.0, 0.0),
    answers: list[str] | tuple = (),
    partial: bool = False,
    wrong: bool = False,
) -> Mark:
    """The report's verdict first: a gradebook score behind a quarantine or a failure is stale.
    `late`: (seconds late, points taken). `answers`: the notebook's written answers still to
    grade by hand; its score is then partial, left empty unless `partial`. `wrong`: only
    another notebook was handed in for it."""
    name = notebook.name
    if outcome is not None and outcome.status in NOT_GRADED:
        return Mark(None, SheetStatus(outcome.status))
    if score is None:
        handed_in = course.layout.notebook("submitted", name, student).is_file()
        if handed_in:
            return Mark(None, SheetStatus.PENDING)
        if wrong:
            return Mark(None, SheetStatus.WRONG)
        if notebook.extra_credit:
            return Mark(None, SheetStatus.SKIPPED)
        return Mark(0.0, SheetStatus.MISSING) if notebook.due else Mark(None, SheetStatus.NOT_DUE)
    seconds, penalty = late
    if seconds > 0:
        score, status = penalised(score, penalty), SheetStatus.LATE
    else:
        status = SheetStatus.GRADED
    if answers:
        return Mark(
            score if partial else None,
            SheetStatus.PARTIAL if partial else SheetStatus.NEEDS,
            list(answers),
        )
    return Mark(score, status)


def read(course: Course, gb, partial: bool = False, dropped: str = LEAVE_OUT) -> Sheet:
    """The Sheet, from the command's gradebook session `gb`: one Row per student of the
    gradebook, and of anyone who handed in nothing but a wrong notebook, but those who left the
    class list unless `dropped` is KEEP. `partial`: a notebook with written answers still to
    grade by hand gets its partial score."""
    notebooks = course.term.counted()
    names = [nb.name for nb in notebooks]
    submissions, lateness = _submissions(gb, names), deadlines.lateness(gb)
    outcomes = {(o.student, o.assignment): o for o in load_outcomes(course)}
    pending, wrong = waiting(gb, names), collected.Store(course).wrong()
    rows = []
    also = (student for student, name in wrong if name in names)
    for student, first, last, email, lms_user_id in _students(gb, also, left_out(course, dropped)):
        marks = {}
        for nb in notebooks:
            key = (student, nb.name)
            score = submissions[key]["score"] if key in submissions else None
            late, answers = lateness[key], pending.get(key, [])
            marks[nb.name] = mark(
                course, student, nb, score, outcomes.get(key), late, answers, partial, key in wrong
            )
        rows.append(Row(student, first, last, email, marks, lms_user_id))
    return Sheet(rows, notebooks, submissions, lateness)


REGRADE, LATENESS = "to regrade", "lateness to settle"  # why a submission is Changed


@dataclass(frozen=True, order=True)
class Changed:
    """A submission the gradebook holds otherwise than `make autograde` would leave it now."""

    student: str
    notebook: str
    why: str  # REGRADE or LATENESS


class Stale(GradingError):
    """Export refused: the last autograde has not caught up with these submissions (`changed`),
    so a score, a maximum or a lateness it would write is an old one. Nothing was written."""

    code = "export.stale"
    SHOWN = 8  # submissions named in the line; the rest counted

    def __init__(self, changed: list[Changed]):
        self.changed = changed
        n = len(changed)
        named = [f"{c.student} / {c.notebook} ({c.why})" for c in changed[: self.SHOWN]]
        named += [f"{n - self.SHOWN} more"] * (n > self.SHOWN)
        super().__init__(
            f"run autograde first: {n} submission{'s' * (n != 1)} changed since it last ran: "
            f"{', '.join(named)}; nothing was written"
        )


def since_autograde(course: Course, gb, dropped: str = LEAVE_OUT) -> list[Changed]:
    """The submissions of the notebooks that count whose grades in the gradebook (`gb`, the
    command's session) the last autograde has not caught up with, sorted (the module's
    docstring says what is seen); those of students left out (`dropped`) aside."""
    if gb is None:
        return []
    left, counted = set(left_out(course, dropped)), {nb.name for nb in course.term.counted()}
    last = [o for o in load_outcomes(course) if o.assignment in counted and o.student not in left]
    releases: dict[str, nbformat.NotebookNode] = {}
    regrade = [(o.student, o.assignment) for o in last if _to_regrade(course, o, releases)]
    scored = [(o.student, o.assignment) for o in last if o.status in SCORED]
    unsettled = _unsettled(course, gb, [key for key in scored if key not in regrade])
    changed = [Changed(*key, REGRADE) for key in regrade]
    return sorted(changed + [Changed(*key, LATENESS) for key in unsettled])


def refuse_stale(course: Course, gb, dropped: str = LEAVE_OUT) -> None:
    """Stale where since_autograde finds anything; before any file is written."""
    changed = since_autograde(course, gb, dropped)
    if changed:
        raise Stale(changed)


def _to_regrade(course: Course, outcome, releases: dict) -> bool:
    """Whether autograde would grade this submission again, by what it would run now against
    what it ran last (a failed job's submission is left to its status)."""
    layout, student, name = course.layout, outcome.student, outcome.assignment
    path = layout.notebook("submitted", name, student)
    if outcome.status not in (*SCORED, Status.QUARANTINED) or not path.is_file():
        return False
    executed, job = layout.notebook("autograded", name, student), layout.job(student, name)
    if outcome.status in SCORED:
        if not (executed.is_file() and job.is_file()):
            return True
        since = job.stat().st_mtime
        if max(path.stat().st_mtime, layout.notebook("release", name).stat().st_mtime) < since:
            return False  # nothing it reads is newer than its last grading
    if name not in releases:
        releases[name] = layout.release_notebook(name)
    text, _ = engine.prepare(layout, student, name, path, releases[name])
    quarantined = outcome.status == Status.QUARANTINED
    if quarantined or text is None:
        return quarantined != (text is None)  # quarantined now and not then, or the reverse
    return _as_run(nbformat.reads(text, 4)) != _as_run(nbformat.read(executed, 4))


def _as_run(nb) -> list:
    """What of a notebook its grading runs and scores: each cell's kind, source and nbgrader
    metadata (grade id, points, locked), its outputs and ids aside."""
    return [(c.cell_type, c.source, c.metadata.get("nbgrader", {})) for c in nb.cells]


def _unsettled(course: Course, gb, scored: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Those of the scored submissions whose lateness autograde's settling (deadlines.settle)
    would change now, tried on a copy of the gradebook."""
    held = deadlines.lateness(gb)
    scored = [key for key in scored if key in held]
    if not scored:
        return []
    with tempfile.TemporaryDirectory(prefix="tl-export-") as folder:
        trial = Course(Layout(Path(folder)), course.term)
        with (
            contextlib.closing(sqlite3.connect(course.layout.gradebook)) as source,
            contextlib.closing(sqlite3.connect(trial.layout.gradebook)) as copy,
        ):
            source.backup(copy)
        with gradebook(trial) as trial_gb:
            settled = deadlines.settle(course, trial_gb, scored, QUIET)
    return [key for key in scored if not _same(settled[key], held[key])]


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(abs(x - y) < 1e-6 for x, y in zip(a, b, strict=True))


def number(value: float | None) -> str:
    return "" if value is None else f"{round(value, 2):g}"


def write_gradesheet(course: Course, sheet: Sheet) -> Path:
    """reports/gradesheet.csv; its path."""
    header = ["id", "first_name", "last_name", "email"]
    for nb in sheet.notebooks:
        header += [f"{nb.name}_{'extra_credit' if nb.extra_credit else 'score'}"]
        header += [f"{nb.name}_status"]
    out_of = sum(nb.out_of for nb in sheet.notebooks)
    path = course.layout.report("gradesheet.csv")
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([*header, "total", "out_of"])
        for row in sheet.rows:
            line = [row.id, row.first_name, row.last_name, row.email]
            for nb in sheet.notebooks:
                line += [number(row.marks[nb.name].score), row.marks[nb.name].status]
            out.writerow([*line, number(row.total()), number(out_of)])
    return path


class NbgraderCsv(CsvExportPlugin):
    """nbgrader's CSV export (its columns, then `status`) of the notebooks that count, as the
    grade sheet has them: a quarantined, failed or pending notebook has an empty score, never 0;
    extra credit has a max_score of 0; times are in the course's zone, with their offset; a
    student who left the class list is left out unless `dropped` is "keep".
    nbgrader_config.py makes it `nbgrader export`'s own; `make export` writes it from the Sheet
    it reads for the others."""

    partial = Bool(False, help="write the partial score of a notebook still to grade by hand")
    partial = partial.tag(config=True)
    dropped = Enum(
        DROPPED_CHOICES, LEAVE_OUT, help="a student who left the class list: left out, or kept"
    )
    dropped = dropped.tag(config=True)

    KEYS = (
        *("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name"),
        *("email", "raw_score", "late_submission_penalty", "score", "max_score", "status"),
    )

    def export(self, gradebook) -> None:
        """`nbgrader export`'s call, with the gradebook nbgrader opened: refused (Stale) where
        the last autograde has not caught up with it, as `make export` is."""
        course = Course.open(Path(self.parent.coursedir.root))
        refuse_stale(course, gradebook, self.dropped)
        self.write(course, read(course, gradebook, self.partial, self.dropped))

    def write(self, course: Course, sheet: Sheet) -> None:
        zone = course.term.zone
        with open(self.to or "grades.csv", "w", newline="", encoding="utf-8") as f:
            out = csv.DictWriter(f, fieldnames=self.KEYS)
            out.writeheader()
            for nb in sheet.notebooks:
                if self.assignment and nb.name not in self.assignment:
                    continue
                due = shown(course.term.due.get(nb.name), zone)
                for row in sheet.rows:
                    if self.student and row.id not in self.student:
                        continue
                    line = submission_line(sheet, row, nb, zone)
                    line.update(
                        duedate=due,
                        last_name=row.last_name,
                        first_name=row.first_name,
                        email=row.email,
                        max_score=number(nb.out_of),
                    )
                    out.writerow(line)


def shown(moment, zone) -> str:
    """ISO 8601 in the course's zone (None: this machine's), with its offset; the gradebook's
    naive times are UTC."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone).isoformat(timespec="seconds")


def submission_line(sheet: Sheet, row: Row, nb: Counted, zone=None) -> dict:
    """nbgrader's raw score and penalty where the notebook is scored, 0 where it is missing,
    nothing where there is no score to give."""
    m = row.marks[nb.name]
    raw = penalty = timestamp = None
    if m.status in WITH_SCORE or m.waiting:  # its score (if any) comes from this submission
        timestamp = sheet.submissions[row.id, nb.name]["timestamp"]
    if m.status in WITH_SCORE:
        raw = sheet.submissions[row.id, nb.name]["score"]
        penalty = sheet.lateness[row.id, nb.name][1]
    elif m.status == SheetStatus.MISSING:
        raw = penalty = 0.0
    return {
        "assignment": nb.name,
        "timestamp": shown(timestamp, zone),
        "student_id": row.id,
        "raw_score": number(raw),
        "late_submission_penalty": number(penalty),
        "score": number(m.score),
        "status": m.status,
    }
