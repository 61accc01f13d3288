"""Which notebooks count, due dates, extensions and late penalties, from COURSE/course.toml.

    assigned = ["01_attention", "02_causal_mask", "04_training", "06_stretch"]
                                     # the notebooks that count; default: every released one
    extra_credit = ["06_stretch"]    # earn points beyond the maximum; default: the lecture's
                                     # optional challenge, 06_stretch; [] makes it core
    timezone = "Europe/Berlin"       # for times written without an offset; default: this machine's

    [due]                            # one per notebook; a notebook not listed has no due date
    01_attention = 2027-01-15T23:59:00+00:00

    [extensions.alice]               # per student and notebook: days, or a new due date
    01_attention = 2
    02_causal_mask = "2027-01-25T12:00:00+01:00"

    [late]
    penalty = "percent_per_day"      # none (default) | zero | percent_per_day
    percent_per_day = 10             # of the notebook's score, per day or part of a day late

nbgrader does the arithmetic: the due date goes to the gradebook's `Assignment.duedate`, the
extension to `SubmittedAssignment.extension`, the time collect wrote to timestamp.txt to
`SubmittedAssignment.timestamp`, and its `AssignLatePenalties` preprocessor, with the plugin
chosen here, writes each notebook's `late_submission_penalty`. Collect writes a timestamp.txt
only where a source recorded the hand-in time (collect.py): a file from Canvas's zip has none,
so nbgrader takes no penalty for it and Canvas's own late policy prices its LATE mark.

The grade sheet, the Canvas file, nbgrader's export and the autograde report count the assigned
notebooks only, each out of its release's points (extra credit out of none). Nothing handed in
scores 0 only once the notebook is due (no due date, or the due date has passed).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from ..course import Layout, nbgrader_config
from .settings import aware as aware  # re-exported: collect reads its times through it
from .settings import term

TIMESTAMP_FILE = "timestamp.txt"  # nbgrader's name, read by its own autograde too
# nbgrader's exchange writes its timestamps in this form; parse_utc reads it back.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"
DAY = 86400.0


class PercentPerDay(LateSubmissionPlugin):
    """A share of the notebook's score per day late, a started day counting as a whole one,
    never more than the score (nbgrader caps it there too)."""

    percent_per_day = Float(10.0, help="percent of the score taken per day late").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / DAY)
        return score * min(1.0, days * self.percent_per_day / 100.0)


def assigned(course: Path) -> list[str]:
    """The notebooks that count this term, in course order: course.toml's `assigned`, else every
    released notebook."""
    settings = term(course)
    if not settings.released:
        Layout.of(course).assignments()  # says that nothing is released, and what to do
    return list(settings.assigned)


def extra_credit(course: Path) -> list[str]:
    """The assigned notebooks whose points add to a total but not to its maximum."""
    return list(term(course).extra_credit)


def is_due(course: Path, assignment: str, now: datetime | None = None) -> bool:
    """Whether nothing handed in is a miss yet: no due date, or the due date has passed."""
    due = due_date(course, assignment)
    return due is None or due <= (now or datetime.now(UTC))


@dataclass(frozen=True)
class Counted:
    """A notebook as every file of grades counts it."""

    name: str
    points: float  # the release's: the one maximum of this notebook everywhere
    extra_credit: bool = False
    due: bool = True  # nothing handed in is "missing" (0) once due, "not due" before

    @property
    def out_of(self) -> float:
        """What it adds to the maximum of a total: nothing, for extra credit."""
        return 0.0 if self.extra_credit else self.points


def notebooks(course: Path, now: datetime | None = None) -> list[Counted]:
    """The assigned notebooks, in course order, with what each adds to a total and whether it
    is due yet."""
    extra, points = extra_credit(course), term(course).points
    return [
        Counted(name, points[name], name in extra, is_due(course, name, now))
        for name in assigned(course)
    ]


def course_timezone(course: Path):
    """The zone of times that carry none; None means this machine's local zone."""
    return term(course).zone


def utc_naive(moment: datetime) -> datetime:
    """The gradebook keeps UTC without a zone."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def due_date(course: Path, assignment: str) -> datetime | None:
    return term(course).due.get(assignment)


def extension(course: Path, student: str, assignment: str) -> timedelta | None:
    """Extra time for this student on this notebook: days, or a later due date. Roster ids are
    matched case-insensitively elsewhere, so here too."""
    return term(course).extension(student, assignment)


def write_timestamp(folder: Path, moment: datetime) -> None:
    (Path(folder) / TIMESTAMP_FILE).write_text(
        moment.astimezone(UTC).strftime(TIMESTAMP_FORMAT) + "\n", encoding="utf-8"
    )


def read_timestamp(folder: Path) -> datetime | None:
    from nbgrader.utils import parse_utc

    path = Path(folder) / TIMESTAMP_FILE
    text = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
    return parse_utc(text) if text else None


def record(gb, course: Path, student: str, assignment: str) -> None:
    """Due date, submission time and extension into the gradebook, before the scores are saved.
    A notebook with no due date in course.toml keeps whatever the gradebook has (the formgrader
    can set one too)."""
    due = due_date(course, assignment)
    if due is not None:
        gb.update_or_create_assignment(assignment, duedate=utc_naive(due))
    fields = {"extension": extension(course, student, assignment)}
    stamp = read_timestamp(Layout.of(course).folder("submitted", assignment, student))
    if stamp is not None:
        fields["timestamp"] = stamp
    gb.update_or_create_submission(assignment, student, **fields)


def penalty_config(course: Path):
    """nbgrader_config.py's configuration with course.toml's [late] over it, for
    AssignLatePenalties: a plugin set in nbgrader_config.py still applies where [late] is absent."""
    config = copy.deepcopy(nbgrader_config())
    late = term(course).late
    if late.penalty in ("none", "zero"):
        config.AssignLatePenalties.plugin_class = LateSubmissionPlugin
        config.LateSubmissionPlugin.penalty_method = late.penalty
    elif late.penalty == "percent_per_day":
        config.AssignLatePenalties.plugin_class = PercentPerDay
        config.PercentPerDay.percent_per_day = late.percent_per_day
    return config


def settle(course: Path, student: str, assignment: str, log=None) -> tuple[float, float]:
    """Due date, time and extension into the gradebook, then nbgrader's AssignLatePenalties on
    the scores it holds; (seconds late, points taken). Run on every autograde, graded again or
    not, so that a changed due date, extension or policy, or a score given by hand since,
    applies without executing anything again."""
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties

    gradebook = Layout.of(course).db_url
    with Gradebook(gradebook) as gb:
        record(gb, course, student, assignment)
    resources = {
        "nbgrader": {
            "db_url": gradebook,
            "assignment": assignment,
            "notebook": assignment,  # one notebook per assignment in this course
            "student": student,
        }
    }
    quiet = {"log": log} if log is not None else {}
    step = AssignLatePenalties(config=penalty_config(course), **quiet)
    step.preprocess(nbformat.v4.new_notebook(), resources)  # it reads the gradebook, not cells
    return lateness(course, student, assignment)


def lateness(course: Path, student: str, assignment: str) -> tuple[float, float]:
    """(seconds late, points taken) for a student's notebook, as the gradebook holds them after
    autograde; (0, 0) where it holds no such submission."""
    from nbgrader.api import Gradebook, MissingEntry

    if not Layout.of(course).gradebook.is_file():
        return 0.0, 0.0
    with Gradebook(Layout.of(course).db_url) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return 0.0, 0.0
        return float(submission.total_seconds_late), float(submission.late_submission_penalty or 0)


def describe(seconds: float) -> str:
    """'1 d 2 h' late, for reports."""
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours)
    return " ".join(parts + [f"{minutes} min"] * bool(minutes and not days)) or "0 min"
