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
    needs hand grading   scored by autograde, but a written answer still waits for its hand
                 grade (hand_grading.py): no score, since the answer would count 0
    partial: needs hand grading   the same, exported with --partial: the partial score
    missing      nothing handed in, and the notebook is due: scores 0 in the total
    not due      nothing handed in yet, before the due date: no score, nothing lost yet
    skipped      extra credit, nothing handed in: no score, nothing lost
    pending      handed in, not graded yet: run `make autograde`
    quarantined  not gradeable as handed in (the report says why)
    failed       its grading job failed (the report says why)

A quarantined, failed, pending or hand-grading notebook has an empty score, never the
gradebook's older or partial score or a 0, and leaves the student's total empty too, until it is
settled. Times are ISO 8601 in course.toml's timezone, with their offset.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin
from traitlets import Bool

from ..course import GradingError, Layout
from ..outcome import NOT_GRADED, SheetStatus
from . import deadlines, hand_grading, roster
from .hand_grading import waiting
from .scores import load_outcomes

WITH_SCORE = (SheetStatus.GRADED, SheetStatus.LATE, SheetStatus.PARTIAL)  # a number in every file
COUNTED = (*WITH_SCORE, SheetStatus.MISSING)  # in the total; a missing notebook counts 0
# No total while one of these stands.
UNSETTLED = (SheetStatus.PENDING, SheetStatus.QUARANTINED, SheetStatus.FAILED, SheetStatus.NEEDS)
CANVAS_IDENTITY = list(roster.CANVAS_IDENTITY)
# Optional, in the course folder: {"01_attention": 123456, ...}, Canvas's assignment ids, or
# {"01_attention": "01_attention (123456)"}, the column as Canvas's own export heads it (`export
# --canvas-export` keeps them so), so the columns update those assignments; without it each
# column is a new assignment on first import.
CANVAS_IDS = "canvas_assignments.json"
# Canvas heads an assignment's column "Name (id)" in its export, and its import reads the id back.
CANVAS_COLUMN = re.compile(r"^(?P<name>.*\S)\s+\((?P<id>\d+)\)$")
# Said in the Canvas file, where Canvas's importer reads nothing (the Points Possible row's
# Section cell), and printed by export: Canvas must not take a late penalty a second time.
PENALTIES_TAKEN = "late penalties already taken: turn off Canvas's automatic late deduction"
NO_PENALTIES = "no late penalty taken"


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


def penalised(score: float, penalty: float) -> float:
    """The penalty is in points (nbgrader's late_submission_penalty), taken off the score."""
    return round(max(score - max(penalty, 0.0), 0.0), 2)


def gradebook(course: Path, names: list[str]) -> tuple[list, dict]:
    """(students, {(student, notebook): score}) from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(Layout.of(course).db_url) as gb:
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


def mark(
    course: Path,
    student: str,
    notebook,
    score: float | None,
    outcome,
    answers: list[str] | tuple = (),
    partial: bool = False,
) -> Mark:
    """The report's verdict first: a gradebook score behind a quarantine or a failure is stale.
    `answers`: the notebook's written answers still to grade by hand; its score is then partial,
    left empty unless `partial`."""
    name = notebook.name
    if outcome is not None and outcome.status in NOT_GRADED:
        return Mark(None, SheetStatus(outcome.status))
    if score is None:
        handed_in = Layout.of(course).notebook("submitted", name, student).is_file()
        if handed_in:
            return Mark(None, SheetStatus.PENDING)
        if notebook.extra_credit:
            return Mark(None, SheetStatus.SKIPPED)
        return Mark(0.0, SheetStatus.MISSING) if notebook.due else Mark(None, SheetStatus.NOT_DUE)
    seconds, penalty = deadlines.lateness(course, student, name)
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


def rows(course: Path, partial: bool = False) -> tuple[list[Row], list]:
    """One Row per student of the gradebook, and the notebooks that count, in course order.
    `partial`: a notebook with written answers still to grade by hand gets its partial score."""
    course = Path(course)
    notebooks = deadlines.notebooks(course)
    students, scores = gradebook(course, [nb.name for nb in notebooks])
    outcomes = {(o.student, o.assignment): o for o in load_outcomes(course)}
    pending = waiting(course, [nb.name for nb in notebooks])
    table = []
    for student, first, last, email, lms_user_id in students:
        marks = {
            nb.name: mark(
                course,
                student,
                nb,
                scores.get((student, nb.name)),
                outcomes.get((student, nb.name)),
                pending.get((student, nb.name), []),
                partial,
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
    """The column as Canvas exported it, or "Name (id)", for an assignment it has; a new one
    named so it says what it is."""
    ids_file = Path(course) / CANVAS_IDS
    ids = json.loads(ids_file.read_text(encoding="utf-8")) if ids_file.is_file() else {}
    columns = []
    for nb in notebooks:
        known = ids.get(nb.name)
        if isinstance(known, str):
            columns.append(known)
        elif known is not None:
            columns.append(f"{nb.name} ({known})")
        else:
            columns.append(nb.name + " (extra credit)" * nb.extra_credit)
    return columns


def keep_canvas_columns(course: Path, export: Path) -> list[str]:
    """The columns of Canvas's gradebook export that are our notebooks' assignments ("01_attention
    (7001)", "06_stretch (extra credit) (7006)": the name our first import gave, then Canvas's
    id), kept in CANVAS_IDS as Canvas wrote them; returns them. Canvas's other columns (scores,
    totals, other assignments) are left alone."""
    course, names = Path(course), Layout.of(course).assignments()
    try:
        with Path(export).open(encoding="utf-8-sig", newline="") as f:
            header = next(csv.reader(f), [])
    except OSError as err:
        raise GradingError(f"cannot read Canvas's export {export}: {err}") from None
    found = {}
    for column in (h.strip() for h in header):
        hit = CANVAS_COLUMN.match(column)
        mine = [n for n in names if hit and hit["name"].split(" (")[0] == n]
        if mine:
            found[mine[0]] = column
    if not found:
        raise GradingError(
            f"{export}: no column of Canvas's export is one of our notebooks ({', '.join(names)}) "
            'with its id, "01_attention (7001)": import canvas_import.csv into Canvas once, then '
            "export Canvas's gradebook again"
        )
    ids_file = course / CANVAS_IDS
    kept = json.loads(ids_file.read_text(encoding="utf-8")) if ids_file.is_file() else {}
    ids_file.write_text(json.dumps(kept | found, indent=2) + "\n", encoding="utf-8")
    return list(found.values())


def penalties_taken(course: Path, table: list[Row]) -> bool:
    """Whether any score in the file is net of a late penalty nbgrader took."""
    return any(
        deadlines.lateness(course, row.id, name)[1] > 0
        for row in table
        for name, m in row.marks.items()
        if m.status in (SheetStatus.LATE, SheetStatus.PARTIAL)
    )


def hand_grading_note(table: list[Row]) -> str:
    """What the Canvas file says, beside the penalty note, of notebooks whose written answers
    are not graded by hand yet; empty where there are none."""
    marks = [m for row in table for m in row.marks.values() if m.waiting]
    if not marks:
        return ""
    notebooks = f"{len(marks)} notebook" + "s" * (len(marks) != 1)
    if any(m.status == SheetStatus.PARTIAL for m in marks):
        return f"partial scores: {notebooks} with written answers not graded by hand"
    return f"{SheetStatus.NEEDS}: {notebooks} left empty"


def write_canvas(path: Path, course: Path, table: list[Row], notebooks: list) -> str:
    """Only scored notebooks get a number: Canvas leaves an empty cell's grade as it was, and its
    own missing-submission policy, if any, applies to what was never handed in. Returns what the
    file says of late penalties."""
    identities = roster.canvas_identities(course)
    said = PENALTIES_TAKEN if penalties_taken(course, table) else NO_PENALTIES
    said = "; ".join(filter(None, (said, hand_grading_note(table))))
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
                line.append(number(m.score if m.status in WITH_SCORE else None))
            out.writerow(line)
    return said


def write(course: Path, partial: bool = False) -> list[str]:
    """reports/gradesheet.csv and reports/canvas_import.csv; returns what to print of them."""
    course = Path(course)
    table, notebooks = rows(course, partial)
    folder = Layout.of(course).step("reports")
    folder.mkdir(parents=True, exist_ok=True)
    sheet, canvas = folder / "gradesheet.csv", folder / "canvas_import.csv"
    write_gradesheet(sheet, table, notebooks)
    said = write_canvas(canvas, course, table, notebooks)
    lines = [f"wrote {sheet}", f"wrote {canvas} ({said})"]
    later = [nb.name for nb in notebooks if not nb.due]
    if later:
        lines.append(f"not due yet, nothing handed in is 'not due', not 0: {', '.join(later)}")
    pending = {(r.id, name): m.waiting for r in table for name, m in r.marks.items() if m.waiting}
    said = hand_grading.summary(course, pending, partial)
    return lines + [said] * bool(said)


class NbgraderCsv(CsvExportPlugin):
    """nbgrader's CSV export (its columns, then `status`) of the notebooks that count, as the
    grade sheet has them: a quarantined, failed or pending notebook has an empty score, never 0;
    extra credit has a max_score of 0; times are in the course's zone, with their offset.
    nbgrader_config.py makes it `nbgrader export`'s own."""

    partial = Bool(False, help="write the partial score of a notebook still to grade by hand")
    partial = partial.tag(config=True)

    KEYS = (
        *("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name"),
        *("email", "raw_score", "late_submission_penalty", "score", "max_score", "status"),
    )

    def export(self, gradebook) -> None:
        course = Path(self.parent.coursedir.root)
        table, notebooks = rows(course, self.partial)
        zone = deadlines.course_timezone(course)
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
                    line = submission_line(gradebook, row, nb, row.marks[nb.name], zone)
                    student = students[row.id]
                    line.update(
                        duedate=shown(due, zone),
                        last_name=student.last_name or "",
                        first_name=student.first_name or "",
                        email=student.email or "",
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


def submission_line(gradebook, row: Row, nb, m: Mark, zone=None) -> dict:
    """nbgrader's raw score and penalty where the notebook is scored, 0 where it is missing,
    nothing where there is no score to give."""
    raw = penalty = timestamp = None
    if m.status in WITH_SCORE or m.waiting:  # its score (if any) comes from this submission
        submission = gradebook.find_submission(nb.name, row.id)
        timestamp = submission.timestamp
    if m.status in WITH_SCORE:
        raw = submission.score
        penalty = submission.late_submission_penalty or 0.0
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
