"""The bug zoo: the usual mistakes and the right variants of every exercise, as data. Its tables
are this package's modules (nb01 .. nb06, one per notebook; integrity, the answers that delegate
to a ready-made implementation and honest ones that look like them); its one harness is
tests/test_bugzoo.py, and maintainer/copy_corpus.py takes its right answers as honest students.
This module is their vocabulary.

An exercise is the catalogue's (transformer_lab/catalogue.py): its solution notebook's exercise
cell and checkpoint cell, the cells that must run before it and how many ✅ a right answer
prints; its name is the prefix of its mistake codes. A Mistake is a body injected into the
exercise that the checkpoint must fail with `code` and a message that holds every diagnosis
fragment; a Right is a body that must keep full marks.
"""

from __future__ import annotations

from typing import NamedTuple

from transformer_lab.catalogue import Exercise


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
