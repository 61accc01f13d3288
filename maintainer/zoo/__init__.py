"""The bug zoo: the usual mistakes and the right variants of every exercise, as data. Its tables
are this package's modules (nb01 .. nb06, one per notebook; integrity, the answers that delegate
to a ready-made implementation and honest ones that look like them); its one harness is
tests/test_bugzoo.py, and maintainer/copy_corpus.py takes its right answers as honest students.
This module is their vocabulary.

An Exercise names a solution notebook's exercise cell and its checkpoint cell, the cells that must
run before it and how many ✅ a right answer prints; its name (the prefix of its mistake codes)
is its checkpoint's grade id without `_check`. A Mistake is a body injected into the exercise that
the checkpoint must fail with `code` and a message that holds every diagnosis fragment; a Right is
a body that must keep full marks.
"""

from __future__ import annotations

from typing import NamedTuple


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


def fragments(mistake: Mistake) -> tuple[str, ...]:
    if mistake.diagnosis is None:
        return ()
    if isinstance(mistake.diagnosis, str):
        return (mistake.diagnosis,)
    return mistake.diagnosis
