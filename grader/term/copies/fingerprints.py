"""Fingerprints: runs of K own tokens hashed and winnowed (Schleimer, Wilkerson and Aiken,
SIGMOD 2003), and the piece of code they are taken from."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

from .kinds import CODE, Kind
from .tokens import Span


def _hash(run: tuple[str, ...]) -> int:
    """A run's hash, the same in every process (Python's own hash of a string is salted)."""
    return int.from_bytes(hashlib.blake2b("\x1f".join(run).encode(), digest_size=8).digest())


def winnow(hashes: list[int], window: int) -> list[int]:
    """Positions of the fingerprints: in every window of `window` hashes, the smallest (the
    rightmost of equals), each position once. Shorter than a window: every position."""
    if len(hashes) <= window:
        return list(range(len(hashes)))
    chosen: list[int] = []
    for start in range(len(hashes) - window + 1):
        low = min(hashes[start : start + window])
        at = max(i for i in range(start, start + window) if hashes[i] == low)
        if not chosen or chosen[-1] != at:
            chosen.append(at)
    return chosen


def _stretches(mine: list[bool]) -> list[Span]:
    """The runs [start, end) of consecutive own tokens."""
    found, start = [], None
    for i, own in enumerate([*mine, False]):
        if own and start is None:
            start = i
        elif not own and start is not None:
            found.append((start, i))
            start = None
    return found


def fingerprints(tokens: list[str], kind: Kind, mine: list[bool] | None = None) -> dict:
    """Winnowed hash -> the token positions its run starts at; only runs of own tokens (all,
    where `mine` is None), each stretch of them winnowed on its own."""
    found: dict[int, list[int]] = defaultdict(list)
    for start, end in _stretches(mine if mine is not None else [True] * len(tokens)):
        runs = range(start, end - kind.k + 1)
        hashes = [_hash(tuple(tokens[i : i + kind.k])) for i in runs]
        for at in winnow(hashes, kind.window):
            found[hashes[at]].append(start + at)
    return dict(found)


@dataclass
class Passage:
    """Code (or a written answer) compared as one: an exercise's own lines, a source."""

    label: str  # what the instructor reads: "ex1_attention", "the course's solution (...)"
    text: str  # shown side by side
    tokens: list[str]
    lines: list[int]  # line of `text` each token comes from
    mine: list[bool]  # the tokens that are the author's own: not given, not the release's
    kind: Kind = CODE
    prints: dict[int, list[int]] = field(default_factory=dict)

    def fingerprint(self) -> Passage:
        self.prints = fingerprints(self.tokens, self.kind, self.mine)
        return self
