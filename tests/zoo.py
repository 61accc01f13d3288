"""The bug zoo's vocabulary, shared by its tables (tests/zoo_*.py, one per notebook and one for
delegated answers) and its one harness (tests/test_bugzoo.py).

An Exercise names a solution notebook's exercise cell and its checkpoint cell, the cells that must
run before it and how many ✅ a right answer prints; its name (the prefix of its mistake codes)
is its checkpoint's grade id without `_check`. A Mistake is a body injected into the exercise that
the checkpoint must fail with `code` and a message that holds every diagnosis fragment; a Right is
a body that must keep full marks. The zoo_*.py modules are data: pytest does not collect them
(their names do not start with test_).
"""

from __future__ import annotations

from typing import NamedTuple

from notebook_harness import run_exercise


class Exercise(NamedTuple):
    stem: str  # solutions/<stem>.py
    cell: str  # grade_id of the exercise cell
    check: str  # grade_id of its checkpoint cell
    before: tuple[str, ...]  # grade_ids of cells to run first (as written)
    ticks: int  # ✅ printed by a right answer: visible checks, leak test, hidden tests

    @property
    def prefix(self) -> str:
        """The exercise's one name: its checkpoint's grade id is "<name>_check", its mistake
        codes start with "<name>."."""
        return self.check.removesuffix("_check")


class Mistake(NamedTuple):
    exercise: Exercise
    body: str
    code: str
    diagnosis: str | tuple[str, ...] | None = None  # fragment(s) of the failure's message


class Right(NamedTuple):
    exercise: Exercise
    body: str


def run(exercise: Exercise, body: str | None = None) -> dict:
    """Run the exercise (its solution when body is None) and its checkpoint."""
    return run_exercise(exercise.stem, exercise.cell, exercise.check, body, before=exercise.before)


def fragments(mistake: Mistake) -> tuple[str, ...]:
    if mistake.diagnosis is None:
        return ()
    if isinstance(mistake.diagnosis, str):
        return (mistake.diagnosis,)
    return mistake.diagnosis
