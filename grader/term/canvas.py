"""Canvas, in one place: who each student is to Canvas, which Canvas assignment each notebook's
column updates, the gradebook import `make export` writes, and the hand-in times Canvas records.

    reports/canvas_import.csv   Canvas's gradebook import (Grades > Import): Student, ID,
                                SIS User ID, SIS Login ID, Section, one column per notebook, a
                                "Points Possible" row
    COURSE/canvas_assignments.json   Canvas's assignment ids: {"01_attention": 7001, ...}, or
                                the column as Canvas's own export heads it ("01_attention
                                (7001)"), kept by `export --canvas-export` and by a roster read
                                from such an export; without it each column is a new assignment
                                on first import

A row goes back to Canvas with the roster's ids as Canvas's export had them (roster.py keeps
them in roster.csv), or the student's id in the column course.toml's [roster] id names (SIS
User ID by default). Only scored notebooks carry a number: Canvas leaves an empty cell's grade
as it was, and its own missing-submission policy applies to what was never handed in.

Canvas's submissions zip carries no hand-in time (every entry holds the moment the zip was
built); Canvas keeps it as each submission's `submitted_at`, in its submissions API
(GET /api/v1/courses/:course_id/students/submissions?student_ids[]=all). `collect --times FILE`
reads that, as CSV:

    user_id,assignment_id,submitted_at,attachment_ids
    111,7001,2027-01-15T19:02:11Z,9002
    222,7001,2027-01-16T11:40:00Z,9003 9010

user_id      Canvas's user id, the number after the login (and LATE) in its download names
assignment_id  Canvas's assignment id, named in COURSE/canvas_assignments.json
             ({"01_attention": 7001}); or a column `assignment` holding the notebook (01_attention)
submitted_at   ISO 8601, as the API writes it (UTC, "Z"); empty: not handed in
attachment_ids optional: the submission's attachment ids, space-separated; where given, the
             time goes only to those files, so a file uploaded since the export gets none,
             and each of those files is known to be handed in for that assignment

That last column is the one place where Canvas says which assignment an upload was for. Its
zip does not: an entry is named login[_LATE]_userid_attachmentid_filename
(lib/content_zipper.rb), and the zip's own name is "submissions.zip" where Instructure stores the
files (the download takes the attachment's display name), and only a Canvas keeping them on its
own disk serves ContentZipper's "<course code>-<assignment title>_submissions.zip", each part
cut to 30 characters, from a title the instructor typed. So collect takes the assignment a file
was handed in for from attachment_ids, or from the instructor (collect --notebook), never from
the name of a zip.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..course import GradingError
from ..outcome import SheetStatus
from .course_open import Course
from .gradesheet import WITH_SCORE, Row, Sheet, number
from .roster import ID_COLUMN, KEPT, id_column, kept_rows

# Canvas's identity columns, in its order: kept from its export, given back in the import file.
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
# Canvas heads an assignment's column "Name (id)" in its export, and its import reads the id back.
COLUMN = re.compile(r"^(?P<name>.*\S)\s+\((?P<id>\d+)\)$")
# Said in the import file, where Canvas's importer reads nothing (the Points Possible row's
# Section cell), and printed by export: Canvas must not take a late penalty a second time.
PENALTIES_TAKEN = "late penalties already taken: turn off Canvas's automatic late deduction"
NO_PENALTIES = "no late penalty taken"
TIME_FROM = "LMS times"  # where collect's table says such a time came from


def identities(course: Course):
    """student id -> the import file's ID, SIS User ID, SIS Login ID and Section: as Canvas's
    export had them, where the roster came from it; the id in the column course.toml's [roster]
    id names where that column is empty (SIS User ID by default)."""
    column = id_column(course.term.roster_id, "canvas")
    column = column if column in IDENTITY[1:4] else ID_COLUMN["canvas"]
    kept = {row["id"]: row for row in kept_rows(course)}

    def of(student: str, lms_user_id: str = "") -> dict:
        """lms_user_id: the gradebook's, which the formgrader may have changed since."""
        row = kept.get(student, {})
        found = {"ID": lms_user_id or row.get("lms_user_id") or ""}
        found |= {canvas: row.get(k) or "" for k, canvas in KEPT.items()}
        return found | {column: found.get(column) or student}

    return of


def _kept_ids(course: Course) -> dict:
    """COURSE/canvas_assignments.json as written: notebook -> an id or Canvas's heading."""
    path = course.layout.lms_ids
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise GradingError(f"{path}: not JSON ({err})") from None


def assignment_ids(course: Course) -> dict[str, str]:
    """Canvas's assignment id -> notebook."""
    out = {}
    for notebook, value in _kept_ids(course).items():
        hit = COLUMN.match(str(value).strip())
        out[hit["id"] if hit else str(value).strip()] = notebook
    return out


def columns(course: Course, notebooks: list) -> list[str]:
    """The column as Canvas exported it, or "Name (id)", for an assignment it has; a new one
    named so it says what it is."""
    ids, found = _kept_ids(course), []
    for nb in notebooks:
        known = ids.get(nb.name)
        if isinstance(known, str):
            found.append(known)
        elif known is not None:
            found.append(f"{nb.name} ({known})")
        else:
            found.append(nb.name + " (extra credit)" * nb.extra_credit)
    return found


def keep_columns(course: Course, export: Path) -> list[str]:
    """The columns of Canvas's gradebook export that are our notebooks' assignments ("01_attention
    (7001)", "06_stretch (extra credit) (7006)": the name our first import gave, then Canvas's
    id), kept in canvas_assignments.json as Canvas wrote them; returns them. Canvas's other
    columns (scores, totals, other assignments) are left alone."""
    names = course.layout.assignments()
    try:
        with Path(export).open(encoding="utf-8-sig", newline="") as f:
            header = next(csv.reader(f), [])
    except OSError as err:
        raise GradingError(f"cannot read Canvas's export {export}: {err}") from None
    found = {}
    for column in (h.strip() for h in header):
        hit = COLUMN.match(column)
        mine = [n for n in names if hit and hit["name"].split(" (")[0] == n]
        if mine:
            found[mine[0]] = column
    if not found:
        raise GradingError(
            f"{export}: no column of Canvas's export is one of our notebooks ({', '.join(names)}) "
            'with its id, "01_attention (7001)": import canvas_import.csv into Canvas once, then '
            "export Canvas's gradebook again"
        )
    kept = _kept_ids(course) | found
    course.layout.lms_ids.write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")
    return list(found.values())


def keep_columns_of_roster(course: Course, roster: Path) -> None:
    """A roster read from a Canvas export made after our first import names our columns with
    Canvas's ids: keep them, so the next canvas_import.csv updates those assignments. Any other
    roster, or an export made before that first import, has none, and nothing is kept."""
    try:
        keep_columns(course, roster)
    except GradingError:
        pass


def penalties_taken(sheet: Sheet) -> bool:
    """Whether any score in the file is net of a late penalty nbgrader took."""
    return any(
        sheet.lateness[row.id, name][1] > 0
        for row in sheet.rows
        for name, m in row.marks.items()
        if m.status in (SheetStatus.LATE, SheetStatus.PARTIAL)
    )


def hand_grading_note(rows: list[Row]) -> str:
    """What the import file says, beside the penalty note, of notebooks whose written answers
    are not graded by hand yet; empty where there are none."""
    marks = [m for row in rows for m in row.marks.values() if m.waiting]
    if not marks:
        return ""
    notebooks = f"{len(marks)} notebook" + "s" * (len(marks) != 1)
    if any(m.status == SheetStatus.PARTIAL for m in marks):
        return f"partial scores: {notebooks} with written answers not graded by hand"
    return f"{SheetStatus.NEEDS}: {notebooks} left empty"


def write_import(course: Course, sheet: Sheet, path: Path | None = None) -> tuple[Path, str]:
    """reports/canvas_import.csv (or `path`); where it went and what it says of late
    penalties."""
    path = path or course.layout.report("canvas_import.csv")
    who = identities(course)
    said = PENALTIES_TAKEN if penalties_taken(sheet) else NO_PENALTIES
    said = "; ".join(filter(None, (said, hand_grading_note(sheet.rows))))
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([*IDENTITY, *columns(course, sheet.notebooks)])
        points = [number(nb.out_of) for nb in sheet.notebooks]
        out.writerow(["    Points Possible", "", "", "", said, *points])
        for row in sheet.rows:
            name = ", ".join(part for part in (row.last_name, row.first_name) if part) or row.id
            identity = {"Student": name, **who(row.id, row.lms_user_id)}
            line = [identity.get(column, "") for column in IDENTITY]
            for nb in sheet.notebooks:
                m = row.marks[nb.name]
                line.append(number(m.score if m.status in WITH_SCORE else None))
            out.writerow(line)
    return path, said


@dataclass
class Times:
    """(Canvas user id, notebook) -> (seconds since the epoch, attachment ids or None); and
    the notebook each listed attachment was handed in for."""

    by_user: dict = field(default_factory=dict)
    by_attachment: dict[int, str] = field(default_factory=dict)

    def handed_in_for(self, attachment: float | None) -> str | None:
        """The notebook whose Canvas assignment this upload belongs to; None where the file
        lists no attachment ids for it."""
        return None if attachment is None else self.by_attachment.get(int(attachment))

    def of(self, user: str, notebook: str, attachment: float | None) -> float | None:
        """The time Canvas recorded for this file, or None where it recorded none for it."""
        found = self.by_user.get((user, notebook))
        if found is None:
            return None
        when, attachments = found
        if attachments is not None and (attachment is None or int(attachment) not in attachments):
            return None
        return when


def read_times(course: Course, path: Path, notebooks: list[str]) -> Times:
    """`collect --times FILE`: Canvas's submission times of these notebooks (the module's
    docstring has the columns)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as err:
        raise GradingError(f"--times {path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text))
    found = {c.strip() for c in reader.fieldnames or []}
    if not {"user_id", "submitted_at"} <= found or not found & {"assignment_id", "assignment"}:
        raise GradingError(
            f"--times {path}: needs the columns user_id, assignment_id (or assignment) and "
            f"submitted_at, from Canvas's submissions API (this file has: {', '.join(found)})"
        )
    ids, times = assignment_ids(course), Times()
    for n, row in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        notebook = row.get("assignment") or ids.get(row.get("assignment_id", ""))
        if not notebook:
            raise GradingError(
                f"--times {path}, line {n}: assignment id {row.get('assignment_id')!r} is in no "
                f'{course.layout.lms_ids.name} ({{"01_attention": 7001, ...}}); add it, or give '
                "a column `assignment` with the notebook's name"
            )
        if notebook not in notebooks or not row["submitted_at"]:
            continue  # another assignment of the course, or not handed in
        when, attachments = _time_of(path, n, row)
        times.by_user[row["user_id"], notebook] = when, attachments
        times.by_attachment |= dict.fromkeys(attachments or (), notebook)
    return times


def _time_of(path: Path, n: int, row: dict) -> tuple[float, set[int] | None]:
    """(seconds since the epoch, the attachment ids it is for, or None) of one row."""
    try:
        when = datetime.fromisoformat(row["submitted_at"])
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise GradingError(
            f"--times {path}, line {n}: submitted_at {row['submitted_at']!r} is not an ISO "
            "8601 time with its zone, as Canvas writes it (2027-01-15T19:02:11Z)"
        )
    attachments = row.get("attachment_ids")
    listed = re.split(r"[\s,;]+", attachments) if attachments else None
    if listed is not None and not all(a.isdigit() for a in listed if a):
        raise GradingError(f"--times {path}, line {n}: attachment_ids are Canvas's numbers")
    return when.timestamp(), {int(a) for a in listed if a} if listed is not None else None
