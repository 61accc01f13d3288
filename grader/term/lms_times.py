"""The LMS's own record of when each notebook was handed in, for `collect --times FILE`.

Canvas's submissions zip carries no hand-in time (every entry holds the moment the zip was
built); Canvas keeps it as each submission's `submitted_at`, in its submissions API
(GET /api/v1/courses/:course_id/students/submissions?student_ids[]=all). FILE is that, as CSV:

    user_id,assignment_id,submitted_at,attachment_ids
    111,7001,2027-01-15T19:02:11Z,9002
    222,7001,2027-01-16T11:40:00Z,9003 9010

user_id      Canvas's user id, the number after the login (and LATE) in its download names
assignment_id  Canvas's assignment id, named in COURSE/canvas_assignments.json
             ({"01_attention": 7001}); or a column `assignment` holding the notebook (01_attention)
submitted_at   ISO 8601, as the API writes it (UTC, "Z"); empty: not handed in
attachment_ids optional: the submission's attachment ids, space-separated; where given, the
             time goes only to those files, so a file uploaded since the export gets none
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

TIME_FROM = "LMS times"  # where collect's table says such a time came from
CANVAS_IDS = "canvas_assignments.json"  # the export's file of Canvas's assignment ids
COLUMN_ID = re.compile(r"\((\d+)\)\s*$")  # "01_attention (7001)", Canvas's column heading


@dataclass
class Times:
    """(Canvas user id, notebook) -> (seconds since the epoch, attachment ids or None)."""

    by_user: dict = field(default_factory=dict)

    def of(self, user: str, notebook: str, attachment: float | None) -> float | None:
        """The time the LMS recorded for this file, or None where it recorded none for it."""
        found = self.by_user.get((user, notebook))
        if found is None:
            return None
        when, attachments = found
        if attachments is not None and (attachment is None or int(attachment) not in attachments):
            return None
        return when


def _canvas_ids(course: Path) -> dict[str, str]:
    """Canvas's assignment id -> notebook, from COURSE/canvas_assignments.json."""
    path = Path(course) / CANVAS_IDS
    if not path.is_file():
        return {}
    try:
        given = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise GradingError(f"{path}: not JSON ({err})") from None
    out = {}
    for notebook, value in given.items():
        hit = COLUMN_ID.search(str(value))
        out[hit[1] if hit else str(value).strip()] = notebook
    return out


def read(path: Path, course: Path, notebooks: list[str]) -> Times:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as err:
        raise GradingError(f"--times {path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text))
    columns = {c.strip() for c in reader.fieldnames or []}
    if not {"user_id", "submitted_at"} <= columns or not columns & {"assignment_id", "assignment"}:
        raise GradingError(
            f"--times {path}: needs the columns user_id, assignment_id (or assignment) and "
            f"submitted_at, from Canvas's submissions API (this file has: {', '.join(columns)})"
        )
    ids = _canvas_ids(course)
    times = Times()
    for n, row in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        notebook = row.get("assignment") or ids.get(row.get("assignment_id", ""))
        if not notebook:
            raise GradingError(
                f"--times {path}, line {n}: assignment id {row.get('assignment_id')!r} is in no "
                f'{CANVAS_IDS} ({{"01_attention": 7001, ...}}); add it, or give a column '
                "`assignment` with the notebook's name"
            )
        if notebook not in notebooks or not row["submitted_at"]:
            continue  # another assignment of the course, or not handed in
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
        chosen = {int(a) for a in listed if a} if listed is not None else None
        times.by_user[row["user_id"], notebook] = (when.timestamp(), chosen)
    return times
