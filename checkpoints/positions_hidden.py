"""The grader's further cases for `positions` (hidden tests): run by autograde from the course's
checkout, left out of the package students install, so a graded runtime cannot read them."""

from __future__ import annotations

import torch

from ._core import passed
from .codes import EX3
from .positions import _case


def exercise_3(embed_with_positions) -> None:
    _case(embed_with_positions, 10, B=3, T=1, d_model=16, vocab=65, T_max=128)
    _case(embed_with_positions, 11, B=2, T=128, d_model=128, vocab=65, T_max=128)
    _case(embed_with_positions, 12, B=1, T=7, d_model=6, vocab=9, T_max=7, dtype=torch.float64)
    _case(embed_with_positions, 13, B=5, T=3, d_model=4, vocab=300, T_max=8)
    passed(EX3, f"{EX3} (further cases): T = 1, T = T_max, B = 1, float64, a large vocabulary.")
