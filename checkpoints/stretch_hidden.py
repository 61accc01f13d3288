"""The grader's further cases for `stretch` (hidden tests): run by autograde from the course's
checkout, left out of the package students install, so a graded runtime cannot read them."""

from __future__ import annotations

from ._core import passed
from .codes import EX6A, EX6B
from .stretch import _block_leak_test, _check_block, _check_mha, _further, _GPTConfig


def challenge_a(MyMultiHeadAttention) -> None:
    cases = (
        (_GPTConfig(d_model=64, n_heads=8), 2, 12, 7),
        (_GPTConfig(d_model=32, n_heads=1), 3, 9, 8),
        (_GPTConfig(d_model=48, n_heads=3), 1, 20, 9),
        (_GPTConfig(d_model=32, n_heads=4), 4, 1, 10),
    )
    for config, B, T, seed in cases:
        _check_mha(MyMultiHeadAttention, config, B, T, seed)
    passed(EX6A, f"{EX6A} (further cases): {_further(cases)}.")


def challenge_b(MyBlock) -> None:
    cases = (
        (_GPTConfig(d_model=64, n_heads=8), 2, 12, 7),
        (_GPTConfig(d_model=32, n_heads=1), 4, 9, 8),
        (_GPTConfig(d_model=32, n_heads=4), 1, 1, 9),
    )
    for config, B, T, seed in cases:
        _check_block(MyBlock, config, B, T, seed)
    _block_leak_test(MyBlock, cases[0][0], 10)
    passed(EX6B, f"{EX6B} (further cases): {_further(cases)}, leak test.")
