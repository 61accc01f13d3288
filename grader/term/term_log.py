"""The term's log: each collect, collect-pin and autograde appends what it did to
COURSE/reports/term_log.md, oldest first, so that no step's record is overwritten by the next.
Every time in it, and in the reports that quote it, is shown in the course's zone
(course.toml's `timezone`; this machine's where it names none), with the zone written."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..course import Layout
from . import deadlines

LOG = "term_log.md"
HEADER = (
    "# The term's log\n\n"
    "Every collect, collect-pin and autograde of this course, oldest first. Each collect's full "
    "table is here; reports/collect.md holds only the last one.\n\n"
)


def shown(moment: datetime | float, zone) -> str:
    """'2027-01-15 23:59 CET': a time in the course's zone (None: this machine's), zone named."""
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment).astimezone()
    moment = moment.astimezone(zone) if zone else moment.astimezone()
    return f"{moment:%Y-%m-%d %H:%M} {moment.tzname() or moment.strftime('%z')}"


def append(course: Path, step: str, body: str) -> Path:
    """A section '## TIME · STEP' with `body` at the end of the log; its path."""
    folder = Layout.of(course).step("reports")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOG
    now = shown(datetime.now().astimezone(), deadlines.course_timezone(course))
    with path.open("a", encoding="utf-8") as log:
        if log.tell() == 0:
            log.write(HEADER)
        log.write(f"## {now} · {step}\n\n{body.rstrip()}\n\n")
    return path
