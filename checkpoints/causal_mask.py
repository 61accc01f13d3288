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
    named_positions,
    passed,
)
from .codes import EX2
from .in_the_model import trains

_bool = torch.bool
_ones = torch.ones
_tril = torch.tril
_triu = torch.triu
_equal = torch.equal
_randn = torch.randn
_generator = torch.Generator
_clone = torch.Tensor.clone
_fill = torch.Tensor.fill_
LEAK_T = 8  # positions of the leak test's one attention step

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


def exercise_2(causal_mask, attention=None) -> float:
    """The lecture's checkpoint is the leak test, so it comes first: your mask inside your
    attention (`attention`, as for attention_leak_test), where a mask that reads the future
    fails by what it does, naming the earlier positions that moved. Then the mask against
    Equation 6 at several T, then inside the lab's model. Returns the leak test's largest
    change of an earlier output (0.0)."""
    mask = call(EX2, causal_mask, LEAK_T)
    largest_leak = None
    if type(mask) is torch.Tensor and mask.dtype == _bool and tuple(mask.shape) == (LEAK_T,) * 2:
        largest_leak = attention_leak_test(causal_mask, attention)
    sizes = (5, 1, 2, 128)  # T = 5 first: the small cases alone cannot tell some mistakes apart
    for T in sizes:
        _compare(causal_mask, T)
    trains(EX2, "mask", causal_mask)
    passed(
        EX2,
        f"{EX2}: causal_mask(T) is the bool lower triangle of Equation 6 for T = "
        f"{', '.join(str(T) for T in sorted(sizes))}, and trains inside the lab's model in "
        "float32 and in a T4's float16.",
    )
    keep("mask", causal_mask, exercise_2)
    return largest_leak or 0.0


def attention_leak_test(causal_mask, attention=None, T: int = LEAK_T, t0: int = 5) -> float:
    """The lecture's leak test: one self-attention step of your mask inside your attention
    (`attention`: a piece from checkpoints.yours.load, a function, or None for the package's).

    The inputs X of T positions go through fixed projections to Q, K and V; then row t0 of X is
    replaced. Returns the largest change of an output before t0 (0.0 when nothing leaks). A
    failure names the earlier positions that moved and, where the mask is a usual wrong one,
    which.
    """
    allowed = call(EX2, causal_mask, T)
    expect_tensor(EX2, f"causal_mask({T})", allowed, (T, T))
    fn, whose = _attention_of(attention)
    known = _diagnose_pattern(allowed, T) if allowed.dtype == _bool else None
    return _leak_test(allowed, fn, t0, "your mask", whose, known)


def _attention_of(attention) -> tuple:
    """(function, whose it is, in words) of a piece, a plain function or None."""
    if attention is None:
        return _attention, "the package's attention"
    if isinstance(attention, Piece):
        where = f", from notebook {attention.exercise.number}" if attention.yours else ""
        return attention.fn, f"{attention.whose}{where}"
    return attention, "this attention"


def leak_demo(attention, T: int = 8, t0: int = 5) -> CheckFailed:
    """The leak test on the course's own demonstration of a leaky `attention`, with the
    reference mask: returns the failure it shows, so that a notebook can assert its code.

    No exercise is graded here, so nothing is watched: the demonstration may use the package's
    mask, which a student's answer to Exercise 2 may not."""
    name = getattr(attention, "__name__", "this attention")
    try:
        _leak_test(_reference(T), attention, t0, "the right mask", name)
    except CheckFailed as failure:
        return failure
    raise AssertionError(f"the leak test passed on {name}: it demonstrates nothing")


class _Step:
    """One self-attention step of the leak test: fixed inputs X of T positions through fixed
    projections to Q, K and V, then `attention` under `allowed`."""

    def __init__(self, allowed: torch.Tensor, attention, title: str, refused: str):
        self.allowed, self.attention, self.title, self.refused = allowed, attention, title, refused
        self.g = _generator().manual_seed(0)
        d_model, d_k = 16, 8
        self.X = _randn(allowed.shape[-1], d_model, generator=self.g)
        self.W = [_randn(d_model, d_k, generator=self.g) / d_model**0.5 for _ in range(3)]

    def __call__(self, X):
        W_Q, W_K, W_V = self.W
        try:
            return self.attention(X @ W_Q, X @ W_K, X @ W_V, _clone(self.allowed))
        except Exception as err:
            raise CheckFailed(
                f"{self.title}: {self.refused} ({type(err).__name__}: {err}).",
                EX2.code("leak_mask_refused"),
            ) from err

    def new_row(self, X, at: int) -> None:
        X[at] = _randn(X.shape[-1], generator=self.g)

    def moved_before(self, at: int, V_bar) -> tuple[list[int], float]:
        """The positions before `at` whose output moved when row `at` of X changed, and by
        how much at most."""
        changed = _clone(self.X)
        self.new_row(changed, at)
        moved = (self(changed)[0] - V_bar).abs().amax(-1)[:at]
        return [t for t in range(at) if moved[t] != 0], moved.max().item() if at else 0.0


def _failure(title: str, known, saw: str, code: str, otherwise: str) -> CheckFailed:
    """What the leak test saw; then the usual wrong mask it is (`known`: its name and
    diagnosis) with that mistake's code, or else `otherwise` with the leak test's `code`."""
    if known is not None:
        name, diagnosis = known
        return CheckFailed(f"{title}: {saw} {diagnosis[0].upper()}{diagnosis[1:]}.", EX2.code(name))
    return CheckFailed(f"{title}: {saw} {otherwise}", EX2.code(code))


def _expect_each_reads_itself(allowed: torch.Tensor, title: str, known) -> None:
    blind = [t for t in range(allowed.shape[-1]) if not bool(allowed[t, t])]
    if blind:
        raise _failure(
            title,
            known,
            f"{named_positions(blind)} may not read "
            f"{'themselves' if len(blind) > 1 else 'itself'}.",
            "diagonal_excluded",
            f"{_NO_DIAGONAL[0].upper()}{_NO_DIAGONAL[1:]}.",
        )


def _expect_nothing_above_the_diagonal(step: _Step, V_bar, A, t0: int, known) -> None:
    T = A.shape[-1]
    above = A * _triu(_ones(T, T), diagonal=1)
    largest = above.abs().max().item()
    if largest == 0.0:
        return
    readers = (above != 0).sum(0)  # how many earlier queries read each key
    at = t0 if readers[t0] == readers.max() else int(readers.argmax())
    moved, by = step.moved_before(at, V_bar)
    raise _failure(
        step.title,
        known,
        f"changing position {at} moved the outputs at earlier {named_positions(moved)} (by up "
        f"to {by:.3g}): they read position {at}, a later one. Every weight above the diagonal "
        f"must be exactly 0; here they reach {largest:.3g}.",
        "leak_above_diagonal",
        "A query reads a later key: check the mask and where it is applied.",
    )


def _leak_test(
    allowed: torch.Tensor, attention, t0: int, which: str, name: str, known=None
) -> float:
    """`known`: (name, diagnosis) of the usual wrong mask that `allowed` is, if it is one: a
    failure then carries that mistake's code and says so after what the leak test saw."""
    title = f"Leak test of {which} inside {name}"
    _expect_each_reads_itself(allowed, title, known)
    step = _Step(allowed, attention, title, f"{name} refused {which}")
    V_bar, A = step(step.X)
    _expect_nothing_above_the_diagonal(step, V_bar, A, t0, known)
    _, earlier, later = change_at(
        lambda X: step(X)[0], step.X, t0, lambda X: step.new_row(X, t0), dim=0, before=V_bar
    )
    if earlier != 0.0:
        moved, _ = step.moved_before(t0, V_bar)
        raise _failure(
            title,
            known,
            f"changing position {t0} moved the outputs at earlier {named_positions(moved)} by up "
            f"to {earlier:.3g}, though every weight above the diagonal is 0.",
            "reads_the_future",
            "Each earlier row was normalised over the later keys too, as when the mask is "
            "applied after the softmax.",
        )
    if later == 0.0:
        raise CheckFailed(
            f"{title}: changing position {t0} changed no output at all, not even its own; the "
            "test proves nothing this way.",
            EX2.code("ignores_input"),
        )
    passed(
        EX2,
        f"Leak test on one attention step, {which} inside {name}: every weight above the "
        f"diagonal is exactly 0, and changing position {t0} moved no earlier output (largest "
        f"change 0.0) while moving later ones by up to {later:.3g}.",
    )
    return earlier
