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
`SubmittedAssignment.timestamp`, and the plugin its `AssignLatePenalties` preprocessor runs
(chosen here) prices each notebook's `late_submission_penalty`, between 0 and the score as the
preprocessor keeps it, for every notebook in one gradebook session. Collect writes a timestamp.txt
only where a source recorded the hand-in time (collect.py): a file from Canvas's zip has none,
so nbgrader takes no penalty for it and Canvas's own late policy prices its LATE mark.

The grade sheet, the Canvas file, nbgrader's export and the autograde report count the assigned
notebooks only, each out of its release's points (extra credit out of none). Nothing handed in
scores 0 only once the notebook is due (no due date, or the due date has passed). Those facts
are the Term's (rules.py); here is what goes into the gradebook, in the command's one session,
and the lateness read back from it as one table.
"""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from ..course import nbgrader_config
from .course_open import Course
from .rules import Late

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


class Lateness(dict):
    """(student, notebook) -> (seconds late, points taken), as the gradebook holds them after
    autograde; (0, 0) for a notebook it holds no submission of."""

    def __missing__(self, key) -> tuple[float, float]:
        return 0.0, 0.0


def utc_naive(moment: datetime) -> datetime:
    """The gradebook keeps UTC without a zone."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def write_timestamp(course: Course, student: str, assignment: str, moment: datetime) -> None:
    course.layout.timestamp(assignment, student).write_text(
        moment.astimezone(UTC).strftime(TIMESTAMP_FORMAT) + "\n", encoding="utf-8"
    )


def read_timestamp(course: Course, student: str, assignment: str) -> datetime | None:
    from nbgrader.utils import parse_utc

    path = course.layout.timestamp(assignment, student)
    text = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
    return parse_utc(text) if text else None


def penalty_config(late: Late):
    """nbgrader_config.py's configuration with course.toml's [late] over it, for
    AssignLatePenalties: a plugin set in nbgrader_config.py still applies where [late] is absent."""
    config = copy.deepcopy(nbgrader_config())
    if late.penalty in ("none", "zero"):
        config.AssignLatePenalties.plugin_class = LateSubmissionPlugin
        config.LateSubmissionPlugin.penalty_method = late.penalty
    elif late.penalty == "percent_per_day":
        config.AssignLatePenalties.plugin_class = PercentPerDay
        config.PercentPerDay.percent_per_day = late.percent_per_day
    return config


def settle(course: Course, gb, handed_in: list[tuple[str, str]], log=None) -> Lateness:
    """Due dates, times handed in and extensions into the gradebook, then nbgrader's late penalty
    on the scores it holds, for each (student, notebook) of `handed_in`; the gradebook's lateness
    after. Run on every autograde, graded again or not, so that a changed due date, extension or
    policy, or a score given by hand since, applies without executing anything again. A notebook
    with no due date in course.toml keeps whatever the gradebook has (the formgrader can set one
    too)."""
    from nbgrader.preprocessors import AssignLatePenalties

    quiet = {"log": log} if log is not None else {}  # the plugin logs through it
    step = AssignLatePenalties(config=penalty_config(course.term.late), **quiet)
    step.init_plugin()  # the plugin with its settings, as the preprocessor makes it
    for name in sorted({assignment for _, assignment in handed_in}):
        due = course.term.due.get(name)
        if due is not None:
            gb.update_or_create_assignment(name, duedate=utc_naive(due))
    for student, assignment in handed_in:
        fields = {"extension": course.term.extension(student, assignment)}
        stamp = read_timestamp(course, student, assignment)
        gb.update_or_create_submission(assignment, student, **fields, **_as_timestamp(stamp))
        _penalise(gb, step.plugin_inst, student, assignment)
    gb.db.commit()
    return lateness(gb)


def _as_timestamp(stamp: datetime | None) -> dict:
    return {} if stamp is None else {"timestamp": stamp}


def _penalise(gb, plugin, student: str, assignment: str) -> None:
    """What nbgrader's AssignLatePenalties does for one notebook (its plugin's penalty, kept
    between 0 and the score), in the command's session: the preprocessor opens a gradebook of
    its own for every notebook."""
    submission = gb.find_submission(assignment, student)
    notebook = gb.find_submission_notebook(assignment, assignment, student)
    notebook.late_submission_penalty = None
    seconds = submission.total_seconds_late
    penalty = plugin.late_submission_penalty(student, notebook.score, seconds) if seconds else None
    if penalty is not None:
        notebook.late_submission_penalty = min(max(penalty, 0), notebook.score)


def lateness(gb) -> Lateness:
    """Every submission's lateness, read at once; an empty table without a gradebook."""
    if gb is None:
        return Lateness()
    return Lateness(
        {
            (s.student_id, a.name): (
                float(s.total_seconds_late),
                float(s.late_submission_penalty or 0),
            )
            for a in gb.assignments
            for s in a.submissions
        }
    )
