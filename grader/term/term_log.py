"""The term's log: each collect, collect-pin, autograde, release and override appends what it
did to COURSE/reports/term_log.md, oldest first, so that no step's record is overwritten by the
next.
Every time in it, and in the reports that quote it, is shown in the course's zone
(course.toml's `timezone`; this machine's where it names none), with the zone written, and a
lateness as days, hours and minutes (`describe`)."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

from .course_open import Course

LOG = "term_log.md"
HEADER = (
    "# The term's log\n\n"
    "Every collect, collect-pin, autograde, release and override of this course, oldest first. "
    "Each collect's full "
    "table is here; reports/collect.md holds only the last one.\n\n"
)


def shown(moment: datetime | float, zone) -> str:
    """'2027-01-15 23:59 CET': a time in the course's zone (None: this machine's), zone named."""
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment).astimezone()
    moment = moment.astimezone(zone) if zone else moment.astimezone()
    return f"{moment:%Y-%m-%d %H:%M} {moment.tzname() or moment.strftime('%z')}"


def describe(seconds: float) -> str:
    """'1 d 2 h' late, for reports."""
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours)
    return " ".join(parts + [f"{minutes} min"] * bool(minutes and not days)) or "0 min"


def append(course: Course, step: str, body: str) -> Path:
    """A section '## TIME · STEP' with `body` at the end of the log; its path."""
    path = course.layout.report(LOG)
    path.parent.mkdir(parents=True, exist_ok=True)
    now = shown(datetime.now().astimezone(), course.term.zone)
    with path.open("a", encoding="utf-8") as log:
        if log.tell() == 0:
            log.write(HEADER)
        log.write(f"## {now} · {step}\n\n{body.rstrip()}\n\n")
    return path
