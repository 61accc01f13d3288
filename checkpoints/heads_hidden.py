"""The grader's further cases for `heads` (hidden tests): run by autograde from the course's
checkout, left out of the package students install, so a graded runtime cannot read them."""

from __future__ import annotations

from ._core import passed
from .codes import EX5
from .heads import _compare, _float64, _random_causal, _uniform


def exercise_5(mean_attention_distance) -> None:
    fn = mean_attention_distance
    _compare(fn, _random_causal(10, (3,), 12, _float64), "float64, leading dims (3,)")
    _compare(fn, _random_causal(11, (2, 1, 5, 2), 7), "4 leading dims")
    _compare(fn, _random_causal(12, (2, 3), 1), "T = 1: a single query reading itself", "0.0")
    _compare(fn, _uniform(1), "T = 1, no leading dims", "0.0")
    _compare(fn, _random_causal(13, (2,), 33), "T = 33")
    passed(EX5, f"{EX5} (further cases): float64, deeper batches, T = 1 and T = 33.")
