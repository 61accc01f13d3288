"""The course a command works on, opened once at its start and handed to every function of the
term as its first argument, as nbgrader's apps hold one CourseDirectory: the folder's Layout
(every path of it) and its Term (what course.toml sets, read and checked). A course.toml edited
while a command runs applies from the next command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..course import Layout
from . import settings
from .rules import Term


@dataclass(frozen=True)
class Course:
    layout: Layout
    term: Term

    @classmethod
    def open(cls, root: Path) -> Course:
        """The course folder at `root`, its course.toml and release read now; a bad course.toml
        stops here, before any work."""
        layout = Layout(Path(root))
        return cls(layout, settings.read_term(layout))
