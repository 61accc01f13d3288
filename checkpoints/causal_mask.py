"""Checks of notebook 02: the causal mask (Exercise 2) and the leak test on one attention step."""

from __future__ import annotations

import torch
import torch.nn as nn

from transformer_lab.attention import causal_mask as _reference
from transformer_lab.attention import scaled_dot_product_attention as _attention
from transformer_lab.student import Piece

from ._core import (
    CheckFailed,
    Forbidden,
    call,
    change_at,
    expect_tensor,
    forbid,
    keep,
    match_mistake,
    passed,
)
from .codes import EX2

_bool = torch.bool
_ones = torch.ones
_tril = torch.tril
_triu = torch.triu
_equal = torch.equal
_randn = torch.randn
_generator = torch.Generator
_clone = torch.Tensor.clone
_fill = torch.Tensor.fill_

_WRITE_IT = (
    "Build the lower triangle yourself: torch.ones(T, T, dtype=torch.bool).tril(), or compare "
    "two torch.arange(T)."
)
forbid(
    EX2,
    Forbidden(
        "the package's causal_mask (tl.causal_mask)", "uses_package_mask", _WRITE_IT, (_reference,)
    ),
    Forbidden(
        "PyTorch's nn.Transformer.generate_square_subsequent_mask",
        "uses_torch_mask",
        _WRITE_IT,
        (
            nn.Transformer.generate_square_subsequent_mask,
            nn.modules.transformer._generate_square_subsequent_mask,
        ),
    ),
)

_NO_DIAGONAL = (
    "the diagonal is excluded (like tril(diagonal=-1) or i < t): position t must be allowed "
    "to read itself. Without the diagonal the first row has no allowed key at all, and its "
    "softmax is all -inf, which gives NaN; use i <= t"
)


def _inverted(what: str) -> str:
    return (
        f"the mask is inverted: you returned {what}, so query t reads the later keys i > t. "
        "Row t is the query and column i the key; `allowed` must be True where i <= t, which "
        "is the lower triangle (torch.tril)"
    )


def _mistakes(T: int) -> dict[str, tuple[str, torch.Tensor]]:
    """name -> (diagnosis, wrong mask) of the usual wrong masks for size T, as bool tensors."""
    ones = _ones(T, T, dtype=_bool)
    return {
        "mask_inverted": (_inverted("the upper triangle, diagonal included"), _triu(ones)),
        "mask_negated": (
            _inverted("the strict upper triangle, the negation of the right mask"),
            _triu(ones, diagonal=1),
        ),
        "diagonal_excluded": (_NO_DIAGONAL, _tril(ones, diagonal=-1)),
    }


def _diagnose_pattern(pattern: torch.Tensor, T: int) -> tuple[str, str] | None:
    """(name, diagnosis) of the known wrong mask that `pattern` is, if any."""
    return match_mistake(pattern, _mistakes(T), same=_equal)


def _shape_failure(mask: torch.Tensor, T: int, case: str) -> CheckFailed:
    shape = tuple(mask.shape)
    if mask.ndim > 2 and shape[-2:] == (T, T):
        return CheckFailed(
            f"{EX2} ({case}): the mask has shape {shape}, with extra leading dimensions. Return "
            f"({T}, {T}): the attention function broadcasts a (T, T) mask over batch and heads.",
            EX2.code("extra_leading_dims"),
        )
    if mask.ndim == 2 and shape[0] == shape[1]:
        return CheckFailed(
            f"{EX2} ({case}): the mask is {shape[0]} x {shape[1]}, but causal_mask({T}) must be "
            f"{T} x {T}. Build it from the argument T, not from a fixed size such as T_max.",
            EX2.code("fixed_size"),
        )
    return CheckFailed(
        f"{EX2} ({case}): causal_mask({T}) should have shape ({T}, {T}): one row per query t, "
        f"one column per key i. Got {shape}.",
        EX2.code("wrong_shape"),
    )


def _dtype_failure(mask: torch.Tensor, right: torch.Tensor, case: str) -> CheckFailed:
    if mask.is_floating_point():
        values = mask.double()
        if bool((values[right] == 0).all()) and bool((values[~right] < 0).all()):
            return CheckFailed(
                f"{EX2} ({case}): you returned the additive mask M of Equation 6 (0 where "
                "i <= t, a large negative number or -inf elsewhere). The attention function "
                "takes the boolean form instead: return dtype torch.bool, True where key i <= "
                "query t; it turns False into -inf itself.",
                EX2.code("additive_mask"),
            )
    pattern = mask != 0
    if _equal(pattern, right):
        entries = "Read as True/False, your entries are right."
    else:
        wrong = _diagnose_pattern(pattern, right.shape[0])
        entries = (
            f"Read as True/False, there is a second mistake: {wrong[1]}."
            if wrong
            else "Read as True/False, the entries are wrong too: True where i <= t."
        )
    return CheckFailed(
        f"{EX2} ({case}): the mask has dtype {mask.dtype}; return dtype torch.bool "
        "(e.g. torch.ones(T, T, dtype=torch.bool), or .bool() at the end). A 0/1 number "
        "mask is not a boolean one: masked_fill refuses it, and ~ does not swap 0 and 1 "
        f"(on integers ~1 is -2). {entries}",
        EX2.code("wrong_dtype"),
    )


def _compare(causal_mask, T: int, case: str | None = None) -> torch.Tensor:
    case = case or f"T = {T}"
    mask = call(EX2, causal_mask, T)
    expect_tensor(EX2, f"causal_mask({T})", mask)
    right = _reference(T)
    if tuple(mask.shape) != (T, T):
        raise _shape_failure(mask, T, case)
    if mask.dtype != _bool:
        raise _dtype_failure(mask, right, case)
    if _equal(mask, right):
        return mask
    mistake = _diagnose_pattern(mask, T)
    if mistake:
        name, diagnosis = mistake
        raise CheckFailed(f"{EX2} ({case}): {diagnosis}.", EX2.code(name))
    wrong = int((mask != right).sum())
    raise CheckFailed(
        f"{EX2} ({case}): {wrong} of the {T * T} entries are wrong. Entry [t, i] must be True "
        "exactly when i <= t (Equation 6: M is 0 on and below the diagonal). Print "
        f"causal_mask({min(T, 6)}): row t must be True in columns 0 to t and False after.",
        EX2.code("wrong_entries"),
    )


def exercise_2(causal_mask) -> None:
    sizes = (5, 1, 2, 128)  # T = 5 first: the small cases alone cannot tell some mistakes apart
    for T in sizes:
        _compare(causal_mask, T)
    passed(
        EX2,
        f"{EX2}: causal_mask(T) is the bool lower triangle of Equation 6 for T = "
        f"{', '.join(str(T) for T in sorted(sizes))}.",
    )
    keep("mask", causal_mask)


def attention_leak_test(causal_mask, attention=None, T: int = 8, t0: int = 5) -> float:
    """The lecture's leak test: one self-attention step of your mask inside your attention
    (`attention`: a piece from checkpoints.yours.load, a function, or None for the package's).

    The inputs X of T positions go through fixed projections to Q, K and V; then row t0 of X is
    replaced. Returns the largest change of an output before t0 (0.0 when nothing leaks).
    """
    allowed = call(EX2, causal_mask, T)
    expect_tensor(EX2, f"causal_mask({T})", allowed, (T, T))
    fn, whose = _attention_of(attention)
    return _leak_test(allowed, fn, t0, "your mask", whose)


def _attention_of(attention) -> tuple:
    """(function, whose it is, in words) of a piece, a plain function or None."""
    if attention is None:
        return _attention, "the package's attention"
    if isinstance(attention, Piece):
        where = f", from notebook {attention.spec.notebook}" if attention.yours else ""
        return attention.fn, f"{attention.whose}{where}"
    return attention, "this attention"


def leak_demo(attention, T: int = 8, t0: int = 5) -> CheckFailed:
    """The leak test on the course's own demonstration of a leaky `attention`, with the
    reference mask: returns the failure it shows, so that a notebook can assert its code.

    No exercise is graded here, so nothing is watched: the demonstration may use the package's
    mask, which a student's answer to Exercise 2 may not."""
    try:
        _leak_test(_reference(T), attention, t0, "the right mask", "this attention")
    except CheckFailed as failure:
        return failure
    name = getattr(attention, "__name__", "this attention")
    raise AssertionError(f"the leak test passed on {name}: it demonstrates nothing")


def _leak_test(allowed: torch.Tensor, attention, t0: int, which: str, name: str) -> float:
    T = allowed.shape[-1]
    g = _generator().manual_seed(0)
    d_model, d_k = 16, 8
    X = _randn(T, d_model, generator=g)
    W_Q, W_K, W_V = (_randn(d_model, d_k, generator=g) / d_model**0.5 for _ in range(3))

    def step(X):
        try:
            return attention(X @ W_Q, X @ W_K, X @ W_V, _clone(allowed))
        except Exception as err:
            raise CheckFailed(
                f"Leak test: {name} refused {which} ({type(err).__name__}: {err}). "
                "Run the Exercise 2 checks first.",
                EX2.code("leak_mask_refused"),
            ) from err

    V_bar, A = step(X)
    above = (A * _triu(_ones(T, T), diagonal=1)).abs().max().item()
    if above != 0.0:
        raise CheckFailed(
            f"Leak test of {which} inside {name}: weights above the diagonal reach {above:.3g}; "
            "they must be exactly 0. A query reads a later key: check the mask and where it is "
            "applied.",
            EX2.code("leak_above_diagonal"),
        )

    def a_new_row(changed):
        changed[t0] = _randn(d_model, generator=g)

    _, earlier, later = change_at(lambda X: step(X)[0], X, t0, a_new_row, dim=0, before=V_bar)
    if earlier != 0.0:
        raise CheckFailed(
            f"Leak test of {which} inside {name}: changing position {t0} moved the outputs at "
            f"earlier positions by up to {earlier:.3g}, though every weight above the diagonal "
            "is 0. The kept weights of an earlier row still depend on later scores, as when the "
            "mask is applied after the softmax: the row was normalised over the future keys too.",
            EX2.code("reads_the_future"),
        )
    if later == 0.0:
        raise CheckFailed(
            f"Leak test of {which} inside {name}: changing position {t0} changed no output at "
            "all, not even its own; the test proves nothing this way.",
            EX2.code("ignores_input"),
        )
    passed(
        EX2,
        f"Leak test on one attention step, {which} inside {name}: every weight above the "
        f"diagonal is exactly 0, and changing position {t0} moved no earlier output (largest "
        f"change 0.0) while moving later ones by up to {later:.3g}.",
    )
    return earlier
