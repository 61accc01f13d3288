"""The class roster, and telling from a download's name whose it is.

`python -m grader roster FILE` loads the class into the gradebook, as `nbgrader db student
import` does, and keeps the rows as COURSE/roster.csv: once it is there, collect files a
notebook only under a student on the roster, and reports the rest (what a Canvas export tells
of Canvas's own ids is canvas.py's). FILE is any of

    nbgrader's student CSV   id, first_name, last_name, email[, lms_user_id]
    Canvas's gradebook export  Student, ID, SIS User ID, SIS Login ID, Section, ...
                             ("Last, First"; ID is Canvas's user id; the "Manual Posting" and
                             "Points Possible" rows and Canvas's test student are skipped)
    Moodle's participants or grades export  First name, Surname, ID number, Email address, ...

Loading a roster that leaves out someone an earlier one had (a student who dropped the course)
keeps them in the gradebook, with their submissions and grades, and in roster.csv below the class,
marked with the day they left it (a column `dropped`, there once anyone has): `dropped` names
them, collect no longer files their notebooks, and export leaves them out of its files unless
asked. Back on a later roster, they are in the class again.

Which column of an LMS's export is the student's id (the folder in submitted/, and the column
of the Canvas import file it goes back to) is course.toml's choice:

    [roster]
    id = "SIS Login ID"     # default: "SIS User ID" (Canvas), "ID number" (Moodle)

Names the LMSs give downloads:
    Canvas  smithjohn_12345_67890_01_attention.ipynb       login, user id, attachment id, file
            smithjohn_LATE_12345_67890_01_attention-1.ipynb  (LATE: Canvas's own late mark)
    Moodle  John Smith_1234567_assignsubmission_file_01_attention.ipynb
            (or a folder "John Smith_1234567_assignsubmission_file_/" holding the file)
and any other, through a regular expression with a named group `student` (and, optionally,
`time`), [collect] pattern in course.toml or collect's --pattern.

A Canvas name goes to the roster row whose lms_user_id is its user id (Canvas's user ids do not
change), else whose id, or last name followed by first name with everything but letters and
digits removed ("Smith, John" is "smithjohn"), is its login. A Moodle name goes to the row whose
"first last" or "last first" is its full name; its number is a participant id that Moodle draws
for each assignment, so it names no one across assignments and is not used. Everything else
goes to the row whose id the name starts with. Case never matters.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..course import GradingError
from .course_open import Course
from .nbgrader_apps import gradebook

COLUMNS = ("id", "first_name", "last_name", "email", "lms_user_id")  # nbgrader's Student
# Canvas's identity columns kept in roster.csv from its export (canvas.py gives them back).
KEPT = {"sis_user_id": "SIS User ID", "sis_login_id": "SIS Login ID", "section": "Section"}
ID_COLUMN = {"canvas": "SIS User ID", "moodle": "ID number"}  # course.toml's [roster] id
MOODLE_NAMES = {"first_name": "First name", "last_name": "Surname", "email": "Email address"}
# roster.csv's column for a student no longer on the class list: the day a roster without them
# was loaded ("" for everyone on it).
DROPPED = "dropped"

# lib/content_zipper.rb of canvas-lms: sortable name (lower case, word characters only), LATE
# where Canvas deems the submission late, user id, the attachment's id, its display name.
CANVAS = re.compile(
    r"^(?P<login>[^\W_]+)(?P<late>_LATE)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$",
    re.IGNORECASE,
)
MOODLE = re.compile(
    r"^(?P<name>[^_]+)_(?P<participant>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)$"
)


@dataclass
class Named:
    """Who a file name says handed it in, before the roster is asked."""

    text: str  # what names the student: a login, a full name, an id
    how: str  # canvas | moodle | pattern | folder | name
    lms_id: str = ""
    rest: str = ""  # what of the name is left to name the notebook
    time: str = ""  # the time the name carries (pattern's `time` group), as written
    attachment: int | None = None  # Canvas's attachment id: grows with each upload
    late: bool | None = None  # Canvas's LATE mark (True, or False where it has none)


def fold(text: str) -> str:
    """Case and accents set aside, runs of space and separators made one space."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return " ".join(re.split(r"[\s_.,-]+", text)).strip()


def squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", fold(text))


def lms_name(name: str) -> Named | None:
    """A Canvas or Moodle download name (file or folder), taken apart."""
    hit = MOODLE.match(name)
    if hit:
        return Named(hit["name"].strip(), "moodle", hit["participant"], hit["file"])
    hit = CANVAS.match(name)
    if hit:
        attachment, late = int(hit["attachment"]), bool(hit["late"])
        return Named(
            hit["login"], "canvas", hit["user"], hit["file"], attachment=attachment, late=late
        )
    return None


def _reader(path: Path) -> csv.DictReader:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # Excel's CSV starts with a BOM
    except OSError as err:
        raise GradingError(f"cannot read the roster {path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text))
    reader.fieldnames = [k.strip() for k in reader.fieldnames or []]
    return reader


def lms_of(fieldnames: list[str]) -> str:
    """Whose export a header is: nbgrader, canvas or moodle."""
    if "id" in fieldnames:
        return "nbgrader"
    if {"Student", "ID"} <= set(fieldnames):
        return "canvas"
    if {"First name", "Surname"} <= set(fieldnames):
        return "moodle"
    return ""


def id_column(roster_id: str | None, lms: str) -> str:
    """The column of the LMS's export that is the student's id: course.toml's [roster] id
    (`roster_id`), else the LMS's usual one."""
    return roster_id or ID_COLUMN[lms]


def read_csv(path: Path, roster_id: str | None = None) -> list[dict]:
    """The class from nbgrader's student CSV, Canvas's gradebook export or Moodle's export:
    rows with COLUMNS (and, from Canvas, KEPT), empty cells as None, other columns left out.
    `roster_id`: course.toml's [roster] id, the export's column that is the student's id."""
    reader = _reader(path)
    lms = lms_of(reader.fieldnames)
    if not lms:
        raise GradingError(
            f"{path}: not a roster: nbgrader's student CSV needs an `id` column; Canvas's "
            "gradebook export starts Student, ID, SIS User ID; Moodle's has First name, Surname"
        )
    rows, seen = [], {}
    for n, row in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() or None for k, v in row.items() if k}
        if lms == "canvas" and _not_a_student(row):
            continue
        row = _as_nbgrader(row, lms, id_column(roster_id, lms) if lms != "nbgrader" else "id")
        if not row["id"]:
            raise GradingError(_no_id(path, n, lms, roster_id, reader.fieldnames))
        key = row["id"].casefold()
        if key in seen:  # collect matches ids case-insensitively, so they must differ so too
            raise GradingError(f"{path}, line {n}: {row['id']!r} is {seen[key]!r} already")
        seen[key] = row["id"]
        rows.append(row)
    return rows


def _not_a_student(row: dict) -> bool:
    """Canvas's rows that are no one (lib/gradebook_exporter.rb): "Manual Posting", before the
    points where an assignment's grades are posted by hand (no Student, no ID), "Points
    Possible", and its test student."""
    student = row.get("Student") or ""
    return (
        not (student or row.get("ID")) or "Points Possible" in student or student == "Student, Test"
    )


def _as_nbgrader(row: dict, lms: str, id_from: str) -> dict:
    """One row of an export as nbgrader's student CSV has it."""
    if lms == "nbgrader":
        return {k: row.get(k) for k in (*COLUMNS, *KEPT, DROPPED) if k in row}
    if lms == "moodle":
        return {"id": row.get(id_from), **{k: row.get(v) for k, v in MOODLE_NAMES.items()}}
    last, _, first = (row.get("Student") or "").partition(", ")
    names = {"first_name": first or None, "last_name": last or None}
    if not first:  # a name without "Last, First"
        names = {"first_name": last or None, "last_name": None}
    kept = {k: row.get(v) for k, v in KEPT.items()}
    return {"id": row.get(id_from), **names, "lms_user_id": row.get("ID"), **kept}


def _no_id(path: Path, n: int, lms: str, roster_id: str | None, fieldnames: list[str]) -> str:
    if lms == "nbgrader":
        return f"{path}, line {n}: no id"
    column = id_column(roster_id, lms)
    where = "has no column" if column not in fieldnames else f"line {n} has no"
    return (
        f"{path} {where} {column!r}, the student's id: choose a column every student has in "
        f'course.toml, [roster] id = "..." (this file has: {", ".join(fieldnames)})'
    )


def import_roster(course: Course, path: Path) -> tuple[int, int]:
    """The roster into the gradebook (created or updated) and COURSE/roster.csv, with whoever
    an earlier roster had and this one has not below it, marked dropped; (rows, new). Nobody is
    removed from the gradebook."""
    if not course.layout.step("release").is_dir():
        raise GradingError(
            f"{course.layout.root} has no release yet: run `make release` first (it makes the "
            "course folder and its gradebook), then `make roster`"
        )
    # The file is the class now: a `dropped` column in it is not the instructor's to give.
    rows = read_csv(path, course.term.roster_id)
    rows = [{k: v for k, v in row.items() if k != DROPPED} for row in rows]
    with gradebook(course, create=True) as gb:
        known = {s.id for s in gb.students}
        for row in rows:
            fields = {k: v for k, v in row.items() if k in COLUMNS[1:]}
            gb.update_or_create_student(row["id"], **fields)
    on_it = {row["id"].casefold() for row in rows}
    today = datetime.now(course.term.zone).date().isoformat()
    left = [
        row | {DROPPED: row.get(DROPPED) or today}
        for row in kept_rows(course)
        if row["id"].casefold() not in on_it
    ]
    out = io.StringIO()
    columns = [*COLUMNS, *KEPT, *[DROPPED] * bool(left)]
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row.get(k) or "" for k in columns} for row in rows + left)
    course.layout.roster.write_text(out.getvalue(), encoding="utf-8")
    return len(rows), sum(row["id"] not in known for row in rows)


def kept_rows(course: Course) -> list[dict]:
    """COURSE/roster.csv's rows, as `make roster` last kept them, those who have left the class
    list since included (marked DROPPED); [] before any."""
    return read_csv(course.layout.roster) if course.layout.roster.is_file() else []


def dropped(course: Course) -> list[str]:
    """The students no longer on the class list (on an earlier roster, not on the last one),
    sorted: their work stays in the gradebook and the course folder."""
    return sorted(row["id"] for row in kept_rows(course) if row.get(DROPPED))


class Roster:
    """The roster collect matches names against; see the module's docstring for how."""

    def __init__(self, rows: list[dict]):
        self.ids = [row["id"] for row in rows]
        self.by_id = {row["id"].casefold(): row["id"] for row in rows}
        self.by_lms = {row["lms_user_id"]: row["id"] for row in rows if row.get("lms_user_id")}
        # What an instructor may type for a student besides the id: a login, an email.
        self.by_handle: dict[str, set[str]] = {}
        for row in rows:
            for handle in (row.get("sis_login_id"), row.get("email"), row.get("lms_user_id")):
                if handle:
                    self.by_handle.setdefault(handle.casefold(), set()).add(row["id"])
        self.by_login: dict[str, set[str]] = {}
        self.by_name: dict[str, set[str]] = {}
        for row in rows:
            first, last = row.get("first_name") or "", row.get("last_name") or ""
            if first or last:
                self.by_login.setdefault(squash(last + first), set()).add(row["id"])
                for full in (f"{first} {last}", f"{last} {first}"):
                    self.by_name.setdefault(fold(full), set()).add(row["id"])

    @classmethod
    def of(cls, course: Course) -> Roster | None:
        """The class list last loaded into this course (who has left it aside), or None:
        collect then works without one."""
        if not course.layout.roster.is_file():
            return None
        return cls([row for row in kept_rows(course) if not row.get(DROPPED)])

    def match(self, named: Named) -> tuple[str | None, str]:
        """(roster id, '') or (None, why not)."""
        if named.how == "canvas":
            if named.lms_id in self.by_lms:
                return self.by_lms[named.lms_id], ""
            if named.text.casefold() in self.by_id:
                return self.by_id[named.text.casefold()], ""
            return self._one(self.by_login.get(squash(named.text), set()), named)
        if named.how == "moodle":
            return self._one(self.by_name.get(fold(named.text), set()), named)
        return self.id_at_start(named.text)

    def find(self, text: str) -> tuple[str | None, str]:
        """The student an instructor names (--student): the roster id, else the SIS login,
        email or Canvas user id, else the login of Canvas's file names ("smithjohn")."""
        low = text.strip().casefold()
        if low in self.by_id:
            return self.by_id[low], ""
        ids = self.by_handle.get(low) or self.by_login.get(squash(text), set())
        if len(ids) == 1:
            return next(iter(ids)), ""
        if ids:
            return None, f"{text!r} fits several on the roster ({', '.join(sorted(ids))})"
        return None, f"{text!r} is not on the roster (its id, SIS login, email or Canvas login)"

    def id_at_start(self, text: str) -> tuple[str | None, str]:
        """The roster id the text is, or starts with before a separator: the longest one, so
        that `jdoe05_06_stretch` is jdoe05's even where jdoe0 is on the roster too."""
        low = text.casefold()
        if low in self.by_id:
            return self.by_id[low], ""
        prefixes = [k for k in self.by_id if low.startswith(k) and low[len(k)] in " _-."]
        if prefixes:
            return self.by_id[max(prefixes, key=len)], ""
        return None, f"{text!r} does not start with an id on the roster"

    @staticmethod
    def _one(ids: set[str], named: Named) -> tuple[str | None, str]:
        said = f"{named.how.capitalize()} name {named.text!r}" + (
            f", user id {named.lms_id}" if named.how == "canvas" else ""
        )
        if len(ids) == 1:
            return next(iter(ids)), ""
        if ids:
            return None, f"{said} fits several on the roster ({', '.join(sorted(ids))})"
        return None, f"{said} is not on the roster"
