"""The grader's further cases for `causal_mask` (hidden tests): run by autograde from the course's
checkout, left out of the package students install, so a graded runtime cannot read them."""

from __future__ import annotations

import torch

from ._core import CheckFailed, call, passed
from .causal_mask import _compare, _equal, _fill, _reference
from .codes import EX2


def exercise_2(causal_mask) -> None:
    sizes = (3, 7, 64, 129, 300)
    for T in sizes:
        _compare(causal_mask, T)
    # A fresh tensor on every call: a caller that edits one mask must not change the next one.
    T = 6
    first = _compare(causal_mask, T, f"T = {T}, first call")
    try:
        _fill(first, False)
    except RuntimeError:
        pass  # a read-only view cannot be changed, so it cannot be corrupted either
    again = call(EX2, causal_mask, T)
    if type(again) is not torch.Tensor or not _equal(again, _reference(T)):
        raise CheckFailed(
            f"{EX2}: your function hands out a cached constant: after the mask returned by "
            f"causal_mask({T}) was changed in place, the next call returned the changed mask. "
            "Build a new tensor on every call (or return a .clone() of the cached one).",
            EX2.code("cached_constant"),
        )
    for T in (9, 4, 9):  # the result depends on the T of this call, not on an earlier one
        _compare(causal_mask, T, f"T = {T} after other sizes")
    passed(
        EX2,
        f"{EX2} (further cases): T = {min(sizes)} to {max(sizes)}, and a fresh mask on every call.",
    )
