"""The term's rules as course.toml sets them (settings.py reads and checks it), typed and frozen:
which notebooks count and how, when each is due and for whom later, what lateness costs, which
column of an LMS's export is a student's id, how collect reads names and times, how autograde
runs where its command line does not say. Every fact of
the term is a field or a method of the Term a command opened once (course_open.py), never a
question put to course.toml again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class Late:
    """[late]: nbgrader's penalty method, or None where course.toml sets none (then a plugin
    set in nbgrader_config.py applies)."""

    penalty: str | None = None
    percent_per_day: float = 10.0


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


@dataclass(frozen=True)
class Term:
    """One term's settings, as course.toml gives them and checked whole."""

    released: tuple[str, ...]
    assigned: tuple[str, ...]  # in course order: the notebooks that count
    extra_credit: tuple[str, ...]  # assigned ones only, in course order
    zone: ZoneInfo | None  # of times written without one; None: this machine's local zone
    due: dict[str, datetime] = field(default_factory=dict)  # aware
    # (student id casefolded, notebook) -> days (float) or a later due date (aware)
    extensions: dict[tuple[str, str], float | datetime] = field(default_factory=dict)
    late: Late = Late()
    roster_id: str | None = None
    collect_pattern: re.Pattern | None = None
    time_format: str | None = None  # strptime's, for the pattern's `time` group; None: ISO 8601
    stamped: bool = False  # [collect] stamped: a file's own time is its hand-in time
    # [autograde]: only the keys the file sets (workers, cell_timeout, ...), read-only; the
    # command's options override them and its defaults fill the rest
    autograde: Mapping[str, int | float | bool | str] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # released notebook -> its maximum: the release's graded cells' points, everywhere the same
    points: dict[str, float] = field(default_factory=dict)

    def extension(self, student: str, assignment: str) -> timedelta | None:
        """Extra time for this student on this notebook: days, or a later due date. Roster ids
        are matched case-insensitively elsewhere, so here too."""
        value = self.extensions.get((student.casefold(), assignment))
        if value is None or isinstance(value, float):
            return None if value is None else timedelta(days=value)
        return value - self.due[assignment]

    def due_for(self, student: str, assignment: str) -> datetime | None:
        """This student's due date of the notebook, extension included; None: none is due."""
        due = self.due.get(assignment)
        return None if due is None else due + (self.extension(student, assignment) or timedelta())

    def is_due(self, assignment: str, now: datetime | None = None) -> bool:
        """Whether nothing handed in is a miss yet: no due date, or the due date has passed."""
        due = self.due.get(assignment)
        return due is None or due <= (now or datetime.now(UTC))

    def counted(self, now: datetime | None = None) -> list[Counted]:
        """The assigned notebooks, in course order, with what each adds to a total and whether
        it is due yet (at `now`)."""
        return [
            Counted(name, self.points[name], name in self.extra_credit, self.is_due(name, now))
            for name in self.assigned
        ]
