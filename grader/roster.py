"""The class roster, and telling from a download's name whose it is.

`python -m grader roster students.csv` loads nbgrader's student CSV (columns id, first_name,
last_name, email, and lms_user_id where the LMS has one) into the gradebook, as `nbgrader db
student import` does, and keeps the rows as COURSE/roster.csv: once it is there, collect files
a notebook only under a student on the roster, and reports the rest.

Names the LMSs give downloads:
    Canvas  smithjohn_12345_67890_01_attention.ipynb       login, user id, submission id, file
            smithjohn_LATE_12345_67890_01_attention-1.ipynb
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
from pathlib import Path

from .course import GradingError, db_url

ROSTER_FILE = "roster.csv"
COLUMNS = ("id", "first_name", "last_name", "email", "lms_user_id")  # nbgrader's Student

CANVAS = re.compile(
    r"^(?P<login>[^\W_]+)(?:_late)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$",
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
        return Named(hit["login"], "canvas", hit["user"], hit["file"])
    return None


def read_csv(path: Path) -> list[dict]:
    """nbgrader's student CSV: an `id` column, the others optional, empty cells as None,
    columns the gradebook does not have left out (as nbgrader's import does)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # Excel's CSV starts with a BOM
    except OSError as err:
        raise GradingError(f"cannot read the roster {path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text))
    reader.fieldnames = [k.strip() for k in reader.fieldnames or []]
    if "id" not in reader.fieldnames:
        raise GradingError(f"{path}: the roster needs an `id` column (nbgrader's student CSV)")
    rows, seen = [], {}
    for n, row in enumerate(reader, start=2):
        row = {k: (row.get(k) or "").strip() or None for k in COLUMNS if k in reader.fieldnames}
        if not row["id"]:
            raise GradingError(f"{path}, line {n}: no id")
        key = row["id"].casefold()
        if key in seen:  # collect matches ids case-insensitively, so they must differ so too
            raise GradingError(f"{path}, line {n}: {row['id']!r} is {seen[key]!r} already")
        seen[key] = row["id"]
        rows.append(row)
    return rows


def import_roster(course: Path, path: Path) -> tuple[int, int]:
    """The roster into the gradebook (created or updated) and COURSE/roster.csv; (rows, new)."""
    from nbgrader.api import Gradebook

    rows = read_csv(path)
    with Gradebook(db_url(course)) as gb:
        known = {s.id for s in gb.students}
        for row in rows:
            fields = {k: v for k, v in row.items() if k != "id"}
            gb.update_or_create_student(row["id"], **fields)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row.get(k) or "" for k in COLUMNS} for row in rows)
    (Path(course) / ROSTER_FILE).write_text(out.getvalue(), encoding="utf-8")
    return len(rows), sum(row["id"] not in known for row in rows)


class Roster:
    """The roster collect matches names against; see the module's docstring for how."""

    def __init__(self, rows: list[dict]):
        self.ids = [row["id"] for row in rows]
        self.by_id = {row["id"].casefold(): row["id"] for row in rows}
        self.by_lms = {row["lms_user_id"]: row["id"] for row in rows if row.get("lms_user_id")}
        self.by_login: dict[str, set[str]] = {}
        self.by_name: dict[str, set[str]] = {}
        for row in rows:
            first, last = row.get("first_name") or "", row.get("last_name") or ""
            if first or last:
                self.by_login.setdefault(squash(last + first), set()).add(row["id"])
                for full in (f"{first} {last}", f"{last} {first}"):
                    self.by_name.setdefault(fold(full), set()).add(row["id"])

    @classmethod
    def of(cls, course: Path) -> Roster | None:
        """The roster last loaded into this course, or None: collect then works without one."""
        path = Path(course) / ROSTER_FILE
        return cls(read_csv(path)) if path.is_file() else None

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
        return self.starting(named.text)

    def starting(self, text: str) -> tuple[str | None, str]:
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
