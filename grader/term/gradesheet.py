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
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin
from traitlets import Bool

from ..outcome import NOT_GRADED, SheetStatus
from . import collected, deadlines
from .course_open import Course
from .hand_grading import waiting
from .rules import Counted
from .scores import load_outcomes

WITH_SCORE = (SheetStatus.GRADED, SheetStatus.LATE, SheetStatus.PARTIAL)  # a number in every file
COUNTED = (*WITH_SCORE, SheetStatus.MISSING)  # in the total; a missing notebook counts 0
# No total while one of these stands.
UNSETTLED = (
    *(SheetStatus.PENDING, SheetStatus.QUARANTINED, SheetStatus.FAILED, SheetStatus.NEEDS),
    SheetStatus.WRONG,
)


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


def _students(gb, also=()) -> list[tuple[str, str, str, str, str]]:
    """The gradebook's students, and those of `also` it lacks (a wrong notebook is all they
    handed in, and there is no roster)."""
    students = [
        (s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
        for s in gb.students
    ]
    known = {s[0] for s in students}
    return sorted(students + [(s, "", "", "", "") for s in set(also) - known])


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


def read(course: Course, gb, partial: bool = False) -> Sheet:
    """The Sheet, from the command's gradebook session `gb`: one Row per student of the
    gradebook, and of anyone who handed in nothing but a wrong notebook. `partial`: a notebook
    with written answers still to grade by hand gets its partial score."""
    notebooks = course.term.counted()
    names = [nb.name for nb in notebooks]
    submissions, lateness = _submissions(gb, names), deadlines.lateness(gb)
    outcomes = {(o.student, o.assignment): o for o in load_outcomes(course)}
    pending, wrong = waiting(gb, names), collected.Store(course).wrong()
    rows = []
    also = (student for student, name in wrong if name in names)
    for student, first, last, email, lms_user_id in _students(gb, also):
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
    extra credit has a max_score of 0; times are in the course's zone, with their offset.
    nbgrader_config.py makes it `nbgrader export`'s own; `make export` writes it from the Sheet
    it reads for the others."""

    partial = Bool(False, help="write the partial score of a notebook still to grade by hand")
    partial = partial.tag(config=True)

    KEYS = (
        *("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name"),
        *("email", "raw_score", "late_submission_penalty", "score", "max_score", "status"),
    )

    def export(self, gradebook) -> None:
        """`nbgrader export`'s call, with the gradebook nbgrader opened."""
        course = Course.open(Path(self.parent.coursedir.root))
        self.write(course, read(course, gradebook, self.partial))

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
