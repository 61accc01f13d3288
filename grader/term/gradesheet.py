"""The term's grades in the shapes an LMS takes, written by `make export`:

    reports/grades.csv          nbgrader's export, with a status column (NbgraderCsv)
    reports/gradesheet.csv      one row per student: id, first_name, last_name, email, then per
                                notebook NN_score (NN_extra_credit) and NN_status, then total
                                and out_of
    reports/canvas_import.csv   Canvas's gradebook import: Student, ID, SIS User ID,
                                SIS Login ID, Section, one column per notebook, a
                                "Points Possible" row

Only the notebooks that count are in them: those course.toml assigns (deadlines.notebooks),
each out of its release's points. An extra-credit notebook (06_stretch by default) adds what it
earns to the total and nothing to out_of; Canvas gets it with 0 points possible, Canvas's way of
saying extra credit. The students are the gradebook's (the roster, where one was loaded, plus
anyone who handed something in); names and emails are nbgrader's Student records, Canvas's own
ids the roster's. Scores come from the gradebook, so hand grades count; a notebook's status comes
from the last autograde report:

    graded       scored by autograde (and by hand where a cell needs it)
    late         scored, handed in after its due date; the score is after the penalty
    missing      nothing handed in, and the notebook is due: scores 0 in the total
    not due      nothing handed in yet, before the due date: no score, nothing lost yet
    skipped      extra credit, nothing handed in: no score, nothing lost
    pending      handed in, not graded yet: run `make autograde`
    quarantined  not gradeable as handed in (the report says why)
    failed       its grading job failed (the report says why)

A quarantined, failed or pending notebook has an empty score, never the gradebook's older score
or a 0, and leaves the student's total empty too, until it is settled.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin

from ..course import db_url
from . import deadlines, roster
from .scores import load_outcomes

SCORED = ("graded", "late")
COUNTED = (*SCORED, "missing")  # in the total; a missing notebook counts 0
UNSETTLED = ("pending", "quarantined", "failed")
CANVAS_IDENTITY = list(roster.CANVAS_IDENTITY)
# Optional, in the course folder: {"01_attention": 123456, ...}, Canvas's assignment ids, so the
# columns update those assignments; without it each column is a new assignment on first import.
CANVAS_IDS = "canvas_assignments.json"
# Said in the Canvas file, where Canvas's importer reads nothing (the Points Possible row's
# Section cell), and printed by export: Canvas must not take a late penalty a second time.
PENALTIES_TAKEN = "late penalties already taken: turn off Canvas's automatic late deduction"
NO_PENALTIES = "no late penalty taken"


@dataclass
class Mark:
    """One student's result for one notebook, as the sheets show it."""

    score: float | None
    status: str


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


def penalised(score: float, penalty: float) -> float:
    """The penalty is in points (nbgrader's late_submission_penalty), taken off the score."""
    return round(max(score - max(penalty, 0.0), 0.0), 2)


def gradebook(course: Path, names: list[str]) -> tuple[list, dict]:
    """(students, {(student, notebook): score}) from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(course)) as gb:
        students = [
            (s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
            for s in gb.students
        ]
        known = {a.name for a in gb.assignments}
        scores = {
            (d["student"], name): d["score"]
            for name in names
            if name in known
            for d in gb.submission_dicts(name)
        }
    return sorted(students), scores


def mark(course: Path, student: str, notebook, score: float | None, outcome) -> Mark:
    """The report's verdict first: a gradebook score behind a quarantine or a failure is stale."""
    name = notebook.name
    if outcome is not None and outcome.status in ("quarantined", "failed"):
        return Mark(None, outcome.status)
    if score is None:
        handed_in = (Path(course) / "submitted" / student / name / f"{name}.ipynb").is_file()
        if handed_in:
            return Mark(None, "pending")
        if notebook.extra_credit:
            return Mark(None, "skipped")
        return Mark(0.0, "missing") if notebook.due else Mark(None, "not due")
    seconds, penalty = deadlines.lateness(course, student, name)
    if seconds > 0:
        return Mark(penalised(score, penalty), "late")
    return Mark(score, "graded")


def rows(course: Path) -> tuple[list[Row], list]:
    """One Row per student of the gradebook, and the notebooks that count, in course order."""
    course = Path(course)
    notebooks = deadlines.notebooks(course)
    students, scores = gradebook(course, [nb.name for nb in notebooks])
    outcomes = {(o.student, o.assignment): o for o in load_outcomes(course)}
    table = []
    for student, first, last, email, lms_user_id in students:
        marks = {
            nb.name: mark(
                course,
                student,
                nb,
                scores.get((student, nb.name)),
                outcomes.get((student, nb.name)),
            )
            for nb in notebooks
        }
        table.append(Row(student, first, last, email, marks, lms_user_id))
    return table, notebooks


def number(value: float | None) -> str:
    return "" if value is None else f"{round(value, 2):g}"


def write_gradesheet(path: Path, table: list[Row], notebooks: list) -> None:
    header = ["id", "first_name", "last_name", "email"]
    for nb in notebooks:
        header += [f"{nb.name}_{'extra_credit' if nb.extra_credit else 'score'}"]
        header += [f"{nb.name}_status"]
    out_of = sum(nb.out_of for nb in notebooks)
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([*header, "total", "out_of"])
        for row in table:
            line = [row.id, row.first_name, row.last_name, row.email]
            for nb in notebooks:
                line += [number(row.marks[nb.name].score), row.marks[nb.name].status]
            out.writerow([*line, number(row.total()), number(out_of)])


def canvas_columns(course: Path, notebooks: list) -> list[str]:
    """Canvas's "Name (id)" for an assignment it has; a new one named so it says what it is."""
    ids_file = Path(course) / CANVAS_IDS
    ids = json.loads(ids_file.read_text(encoding="utf-8")) if ids_file.is_file() else {}
    return [
        f"{nb.name} ({ids[nb.name]})"
        if nb.name in ids
        else nb.name + " (extra credit)" * nb.extra_credit
        for nb in notebooks
    ]


def penalties_taken(course: Path, table: list[Row]) -> bool:
    """Whether any score in the file is net of a late penalty nbgrader took."""
    return any(
        deadlines.lateness(course, row.id, name)[1] > 0
        for row in table
        for name, m in row.marks.items()
        if m.status == "late"
    )


def write_canvas(path: Path, course: Path, table: list[Row], notebooks: list) -> str:
    """Only scored notebooks get a number: Canvas leaves an empty cell's grade as it was, and its
    own missing-submission policy, if any, applies to what was never handed in. Returns what the
    file says of late penalties."""
    identities = roster.canvas_identities(course)
    said = PENALTIES_TAKEN if penalties_taken(course, table) else NO_PENALTIES
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(CANVAS_IDENTITY + canvas_columns(course, notebooks))
        points = [number(nb.out_of) for nb in notebooks]
        out.writerow(["    Points Possible", "", "", "", said] + points)
        for row in table:
            who = ", ".join(part for part in (row.last_name, row.first_name) if part) or row.id
            identity = {"Student": who, **identities(row.id, row.lms_user_id)}
            line = [identity.get(column, "") for column in CANVAS_IDENTITY]
            for nb in notebooks:
                m = row.marks[nb.name]
                line.append(number(m.score if m.status in SCORED else None))
            out.writerow(line)
    return said


def write(course: Path) -> list[str]:
    """reports/gradesheet.csv and reports/canvas_import.csv; returns what to print of them."""
    course = Path(course)
    table, notebooks = rows(course)
    folder = course / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    sheet, canvas = folder / "gradesheet.csv", folder / "canvas_import.csv"
    write_gradesheet(sheet, table, notebooks)
    said = write_canvas(canvas, course, table, notebooks)
    lines = [f"wrote {sheet}", f"wrote {canvas} ({said})"]
    later = [nb.name for nb in notebooks if not nb.due]
    if later:
        lines.append(f"not due yet, nothing handed in is 'not due', not 0: {', '.join(later)}")
    return lines


class NbgraderCsv(CsvExportPlugin):
    """nbgrader's CSV export (its columns, then `status`) of the notebooks that count, as the
    grade sheet has them: a quarantined, failed or pending notebook has an empty score, never 0;
    extra credit has a max_score of 0. nbgrader_config.py makes it `nbgrader export`'s own."""

    KEYS = (
        *("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name"),
        *("email", "raw_score", "late_submission_penalty", "score", "max_score", "status"),
    )

    def export(self, gradebook) -> None:
        course = Path(self.parent.coursedir.root)
        table, notebooks = rows(course)
        students = {s.id: s for s in gradebook.students}
        with open(self.to or "grades.csv", "w", newline="", encoding="utf-8") as f:
            out = csv.DictWriter(f, fieldnames=self.KEYS)
            out.writeheader()
            for nb in notebooks:
                if self.assignment and nb.name not in self.assignment:
                    continue
                due = deadlines.due_date(course, nb.name)
                for row in table:
                    if self.student and row.id not in self.student:
                        continue
                    line = submission_line(gradebook, row, nb, row.marks[nb.name])
                    student = students[row.id]
                    line.update(
                        duedate=due.isoformat() if due else "",
                        last_name=student.last_name or "",
                        first_name=student.first_name or "",
                        email=student.email or "",
                        max_score=number(nb.out_of),
                    )
                    out.writerow(line)


def submission_line(gradebook, row: Row, nb, m: Mark) -> dict:
    """nbgrader's raw score and penalty where the notebook is scored, 0 where it is missing,
    nothing where there is no score to give."""
    raw = penalty = timestamp = None
    if m.status in SCORED:  # its score came from this submission
        submission = gradebook.find_submission(nb.name, row.id)
        raw, timestamp = submission.score, submission.timestamp
        penalty = submission.late_submission_penalty or 0.0
    elif m.status == "missing":
        raw = penalty = 0.0
    return {
        "assignment": nb.name,
        "timestamp": timestamp or "",
        "student_id": row.id,
        "raw_score": number(raw),
        "late_submission_penalty": number(penalty),
        "score": number(m.score),
        "status": m.status,
    }
