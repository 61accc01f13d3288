"""The kinds of answer compared (code, written text), the bars a match must clear to be
flagged, and the names the module's parts share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    """When a match against one kind of source is worth a look: enough alike, in a long enough
    run, and enough of either side."""

    mine: float  # share of the student's own code the source covers
    held: float  # share of the source's own code the student's holds
    tokens: int  # tokens alike below this are never flagged, however alike
    run: int  # nor a match whose longest shared run is shorter
    alone: int  # a run this long is flagged whatever the shares: no honest pair writes one


@dataclass(frozen=True)
class Kind:
    """How one kind of answer is fingerprinted and when its match is worth a look."""

    k: int  # tokens per hashed run: shorter runs are noise
    window: int  # winnowing window: every run of k + window - 1 shared tokens is seen
    handout: int  # a handed-out piece shorter than this is an idiom, not given
    published: Bar  # against the course's solution or the package's reference
    classmate: Bar  # against a classmate's (shares weighed by rarity)

    def bar(self, source: str) -> Bar:
        return self.classmate if source == "classmate" else self.published


# Measured with `python -m maintainer.copy_corpus` (its docstring says on what; the figures are
# in grader/README.md, "Copies"): with 32 tokens alike or more, honest code reaches 0.90 of the
# student's side (Challenge A's hint followed) and 0.85 of the source's (the bug zoo's Challenge
# A: the solution with a line changed) against a published source, in runs of up to 71 tokens;
# 0.67 of either side against a classmate's with 40 or more; and all of a short solution under
# 32 (Challenge B, the hint of notebook 04).
CODE = Kind(
    k=8,
    window=4,
    handout=8,
    published=Bar(mine=0.92, held=0.88, tokens=32, run=12, alone=96),
    classmate=Bar(mine=0.7, held=0.85, tokens=40, run=16, alone=96),
)
TEXT = Kind(
    k=5,
    window=4,
    handout=5,
    published=Bar(mine=0.6, held=0.6, tokens=20, run=5, alone=30),
    classmate=Bar(mine=0.6, held=0.6, tokens=20, run=5, alone=30),
)
COMMON = 0.1  # a fingerprint held by more than this share of the class weighs less
COMMON_FLOOR = 3  # ... and by more than this many students, whatever the class size
PUBLISHED = ("solution", "reference")
NOTEBOOK = "notebook"  # the part that sums a notebook's code parts
ADDED = "added cells"  # the part that holds the code cells the student added
