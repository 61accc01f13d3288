"""The grader's further cases for `attention` (hidden tests): run by autograde from the course's
checkout, left out of the package students install, so a graded runtime cannot read them."""

from __future__ import annotations

import torch

from ._core import passed
from .attention import _random_case
from .codes import EX1


def exercise_1(scaled_dot_product_attention) -> None:
    fn = scaled_dot_product_attention
    causal = torch.ones(9, 9, dtype=torch.bool).tril()
    _random_case(fn, 10, (3,), 9, 9, 4, 4, causal, "float64, causal", torch.float64)
    _random_case(fn, 11, (2,), 3, 9, 8, 5, None, "no mask")
    _random_case(fn, 12, (2, 1, 3, 2), 4, 4, 6, 6, causal[:4, :4], "causal")
    passed(EX1, f"{EX1} (further cases): float64, non-square attention, deeper batches.")
