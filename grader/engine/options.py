"""How the engine grades, in one object: the limits of a job, where jobs run, the sandbox, and
whether unchanged submissions are graded again. Built once per command (`EngineOptions.build`)
from course.toml's [autograde] table and the command line, the command line winning over
course.toml and course.toml over the defaults; passed down unchanged, and written into what
autograde reports (`said`, `record`), with where each setting that is not a default came from.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from ..course import MEMORY_GB, GradingError, cell_timeout

NOTEBOOK_TIMEOUT = 600  # seconds; the backstop for a kernel that ignores interrupts
WORKERS = os.cpu_count() or 1  # jobs at a time: one per core, each with one torch thread
COURSE_TOML, COMMAND_LINE = "course.toml", "command line"  # where a setting was given
WHERE = (COURSE_TOML, COMMAND_LINE)
# field -> (its key in course.toml's [autograde], None where the file cannot set it; its
# attribute of the parsed command line, None there where it was not given)
SOURCES = {
    "workers": ("workers", "workers"),
    "cell_timeout": ("cell_timeout", "cell_timeout"),
    "notebook_timeout": ("notebook_timeout", "notebook_timeout"),
    "memory_gb": ("memory_gb", "memory_gb"),
    "sandboxed": ("sandbox", "sandbox"),
    "scheduler": ("scheduler", "scheduler"),
    "force": (None, "force"),
}


@dataclass(frozen=True)
class EngineOptions:
    """One autograde's settings. `origin`: (field, COURSE_TOML or COMMAND_LINE) of each setting
    given rather than defaulted, for the record; it changes nothing of the grading."""

    workers: int = WORKERS
    cell_timeout: int = field(default_factory=cell_timeout)  # nbgrader_config.py's
    notebook_timeout: int = NOTEBOOK_TIMEOUT
    memory_gb: float = MEMORY_GB
    sandboxed: bool = True
    scheduler: str | None = None  # a Dask scheduler, tcp://HOST:PORT; None: the local pool
    force: bool = False  # grade unchanged submissions again
    progress: bool = True  # the progress bar on the terminal
    origin: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for name in ("workers", "cell_timeout", "notebook_timeout", "memory_gb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise GradingError(f"{self._where(name)}: {value!r} is not a positive number")
        if not isinstance(self.workers, int):
            raise GradingError(f"{self._where('workers')}: {self.workers!r} is not a whole number")
        if self.scheduler is not None and not str(self.scheduler).startswith("tcp://"):
            raise GradingError(
                f"{self._where('scheduler')}: {self.scheduler!r} is no Dask scheduler's address; "
                "give it as tcp://HOST:PORT"
            )

    def _given_in(self, name: str) -> str | None:
        return dict(self.origin).get(name)

    def _spelled(self, name: str) -> str:
        """A setting as its source spells it: course.toml's key, else the command line's flag."""
        if self._given_in(name) == COURSE_TOML:
            return SOURCES[name][0]
        if name == "sandboxed":
            return "--sandbox" if self.sandboxed else "--no-sandbox"
        return "--" + name.replace("_", "-")

    def _where(self, name: str) -> str:
        """A bad setting, named where the instructor gave it."""
        if self._given_in(name) == COURSE_TOML:
            return f"course.toml: [autograde] {self._spelled(name)}"
        return self._spelled(name)

    @classmethod
    def build(cls, given: Mapping, cli: argparse.Namespace) -> EngineOptions:
        """The options of one command: course.toml's [autograde] table (`given`, only the keys
        it sets), over which the command line's (`cli`: an attribute that is None or absent was
        not given) wins; the defaults where neither says."""
        chosen, origin = {}, {}
        for name, (toml_key, cli_name) in SOURCES.items():
            if toml_key in given:
                chosen[name], origin[name] = given[toml_key], COURSE_TOML
            said = getattr(cli, cli_name, None)
            if said is not None:
                chosen[name], origin[name] = said, COMMAND_LINE
        return cls(**chosen, origin=tuple(origin.items()))

    def said(self) -> str:
        """One line for the report and the term's log: every setting, then where those that are
        not defaults came from."""
        where = self.scheduler or "the local pool"
        line = (
            f"workers {self.workers}, cell timeout {self.cell_timeout} s, notebook timeout "
            f"{self.notebook_timeout} s, memory {self.memory_gb:g} GB, "
            f"sandbox {'on' if self.sandboxed else 'off'}, jobs on {where}, "
            f"force {'yes' if self.force else 'no'}"
        )
        by = {src: [self._spelled(n) for n, s in self.origin if s == src] for src in WHERE}
        given = "; ".join(f"{src}: {', '.join(names)}" for src, names in by.items() if names)
        return line + (f" ({given})" if given else " (none given)")

    def record(self) -> dict:
        """The settings as values, and where each given one came from, for autograde.json."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "origin"}
        return {**values, "given": dict(self.origin)}

    def settings(self, isolated: str) -> str:
        """What of these can change a score, for every rerun key (rerun_key.py): the limits of
        a job and what kept it in (autograde.isolation's words)."""
        return f"{self.cell_timeout} {self.memory_gb} {isolated}"
