"""The term's grades in the shapes an LMS takes, written by `make export` beside grades.csv:

    reports/gradesheet.csv      one row per student: id, first_name, last_name, email, then per
                                notebook NN_score and NN_status, then total and out_of
    reports/canvas_import.csv   Canvas's gradebook import: Student, ID, SIS User ID,
                                SIS Login ID, Section, one column per notebook, a
                                "Points Possible" row

The students are the gradebook's (the roster, where one was loaded, plus anyone who handed
something in); names and emails are nbgrader's Student records. Scores come from the gradebook,
so hand grades count; a notebook's status comes from the last autograde report:

    graded       scored by autograde (and by hand where a cell needs it)
    late         scored, handed in after its due date; the score is after the penalty
    missing      nothing handed in: scores 0 in the total
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

from . import deadlines
from .autograde import load_outcomes
from .course import assignments, db_url

SCORED = ("graded", "late")
COUNTED = (*SCORED, "missing")  # in the total; a missing notebook counts 0
UNSETTLED = ("pending", "quarantined", "failed")
# Canvas matches an imported row to a student by ID (Canvas's own user id: the roster's
# lms_user_id, where it has one), else by SIS User ID, else by SIS Login ID. The roster id goes
# in this column, on the assumption that the roster's ids are the SIS ids Canvas exported.
CANVAS_MATCH = "SIS User ID"
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# Optional, in the course folder: {"01_attention": 123456, ...}, Canvas's assignment ids, so the
# columns update those assignments; without it each column is a new assignment on first import.
CANVAS_IDS = "canvas_assignments.json"


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
    lms_user_id: str = ""  # Canvas's own user id, where the roster carried it

    def total(self) -> float | None:
        if any(m.status in UNSETTLED for m in self.marks.values()):
            return None
        return sum(m.score for m in self.marks.values() if m.status in COUNTED)


def penalised(score: float, penalty: float) -> float:
    """The penalty is in points (nbgrader's late_submission_penalty), taken off the score."""
    return round(max(score - max(penalty, 0.0), 0.0), 2)


def gradebook(course: Path, names: list[str]) -> tuple[list, dict, dict]:
    """(students, {(student, notebook): score}, {notebook: max score}) from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(course)) as gb:
        students = [
            (s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
            for s in gb.students
        ]
        out_of = {name: gb.find_assignment(name).max_score for name in names}
        scores = {
            (d["student"], name): d["score"] for name in names for d in gb.submission_dicts(name)
        }
    return sorted(students), scores, out_of


def mark(course: Path, student: str, name: str, score: float | None, outcome) -> Mark:
    """The report's verdict first: a gradebook score behind a quarantine or a failure is stale."""
    if outcome is not None and outcome.status in ("quarantined", "failed"):
        return Mark(None, outcome.status)
    if score is None:
        handed_in = (Path(course) / "submitted" / student / name / f"{name}.ipynb").is_file()
        return Mark(None, "pending") if handed_in else Mark(0.0, "missing")
    seconds, penalty = deadlines.lateness(course, student, name)
    if seconds > 0:
        return Mark(penalised(score, penalty), "late")
    return Mark(score, "graded")


def rows(course: Path) -> tuple[list[Row], dict]:
    """One Row per student of the gradebook, and each notebook's max score, in course order."""
    course = Path(course)
    names = assignments(course)
    students, scores, out_of = gradebook(course, names)
    outcomes = {(o.student, o.assignment): o for o in load_outcomes(course)}
    table = []
    for student, first, last, email, lms_user_id in students:
        marks = {
            name: mark(
                course, student, name, scores.get((student, name)), outcomes.get((student, name))
            )
            for name in names
        }
        table.append(Row(student, first, last, email, marks, lms_user_id))
    return table, out_of


def number(value: float | None) -> str:
    return "" if value is None else f"{round(value, 2):g}"


def write_gradesheet(path: Path, table: list[Row], out_of: dict) -> None:
    header = ["id", "first_name", "last_name", "email"]
    for name in out_of:
        header += [f"{name}_score", f"{name}_status"]
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([*header, "total", "out_of"])
        for row in table:
            line = [row.id, row.first_name, row.last_name, row.email]
            for name in out_of:
                line += [number(row.marks[name].score), row.marks[name].status]
            out.writerow([*line, number(row.total()), number(sum(out_of.values()))])


def canvas_columns(course: Path, names: list[str]) -> list[str]:
    ids_file = Path(course) / CANVAS_IDS
    ids = json.loads(ids_file.read_text(encoding="utf-8")) if ids_file.is_file() else {}
    return [f"{name} ({ids[name]})" if name in ids else name for name in names]


def write_canvas(path: Path, course: Path, table: list[Row], out_of: dict) -> None:
    """Only scored notebooks get a number: Canvas leaves an empty cell's grade as it was, and its
    own missing-submission policy, if any, applies to what was never handed in."""
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(CANVAS_IDENTITY + canvas_columns(course, list(out_of)))
        out.writerow(["    Points Possible", "", "", "", ""] + [number(m) for m in out_of.values()])
        for row in table:
            who = ", ".join(part for part in (row.last_name, row.first_name) if part) or row.id
            identity = {"Student": who, "ID": row.lms_user_id, CANVAS_MATCH: row.id}
            line = [identity.get(column, "") for column in CANVAS_IDENTITY]
            for name in out_of:
                m = row.marks[name]
                line.append(number(m.score if m.status in SCORED else None))
            out.writerow(line)


def write(course: Path) -> list[Path]:
    """reports/gradesheet.csv and reports/canvas_import.csv; returns their paths."""
    course = Path(course)
    table, out_of = rows(course)
    folder = course / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    sheet, canvas = folder / "gradesheet.csv", folder / "canvas_import.csv"
    write_gradesheet(sheet, table, out_of)
    write_canvas(canvas, course, table, out_of)
    return [sheet, canvas]
