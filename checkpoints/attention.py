"""Checks of notebook 01: reading the model (Exercise 0) and scaled dot-product attention."""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_lab.attention import scaled_dot_product_attention as _reference
from transformer_lab.model import GPTConfig, MiniGPT

from ._core import (
    CheckFailed,
    Forbidden,
    call,
    close,
    expect_tensor,
    expect_unchanged,
    forbid,
    judge,
    keep,
    passed,
    snapshot,
)
from .codes import EX0, EX1, Codes
from .in_the_model import trains

LAB = GPTConfig()  # the lab's sizes: d_model 128, n_heads 4, n_layers 4, T_max 128, 65 characters
_softmax = torch.softmax

_WRITE_IT = (
    "Write it with the operations of Equations 3-4: scores = Q @ K.transpose(-2, -1) / "
    "math.sqrt(d_k), scores.masked_fill(~allowed, float('-inf')), torch.softmax(scores, dim=-1)."
)
forbid(
    EX1,
    Forbidden(
        "the package's attention (tl.scaled_dot_product_attention)",
        "uses_package_attention",
        _WRITE_IT,
        functions=(_reference,),
    ),
    Forbidden(
        "PyTorch's F.scaled_dot_product_attention",
        "uses_torch_attention",
        _WRITE_IT,
        operators=("scaled_dot_product",),
    ),
    Forbidden(
        "PyTorch's nn.MultiheadAttention",
        "uses_nn_multihead_attention",
        _WRITE_IT,
        functions=(nn.MultiheadAttention.forward, F.multi_head_attention_forward),
        operators=("multi_head_attention",),
    ),
)


def _feed_forward(d: int, width: int) -> int:
    """W_1 and W_2 of a feed-forward layer of this width, with their biases."""
    return d * width + width + width * d + d


def _miscounts(c: GPTConfig) -> dict[int, tuple[str, str]]:
    """Parts of the count people often leave out or add, and what each is worth at the sizes
    of `c` (the lab's): gap -> (mistake name, what the gap is). The student writes the
    attention layer's line; the stub counts the rest, which a count typed in by hand misses."""
    return {**_rest_miscounts(c), **_attention_miscounts(c)}


def _attention_miscounts(c: GPTConfig) -> dict[int, tuple[str, str]]:
    """The slips of the one line the student writes: one attention layer's parameters."""
    d, L = c.d_model, c.n_layers
    return {
        -L * (d * d + d): (
            "count_without_proj",
            f"W_proj and its bias b_proj, the fourth Linear of each attention layer ({L} layers "
            f"x ({d} x {d} + {d})): your line counts W_Q, W_K and W_V, then the heads' outputs "
            "are mixed by proj, which has parameters too",
        ),
        -L * d: (
            "count_without_proj_bias",
            f"the bias b_proj of each layer's W_proj ({L} layers x {d})",
        ),
        +3 * d * L: (
            "count_with_qkv_biases",
            f"biases on W_Q, W_K, W_V (3 x {d} x {L} layers): the lab's projections have none",
        ),
        +3 * (c.n_heads - 1) * d * d * L: (
            "count_full_width_heads",
            "W_Q, W_K and W_V counted at full width d_model x d_model for every head (3 x "
            f"{c.n_heads - 1} extra heads x {d} x {d} x {L} layers). A head projects to d_k = "
            f"d_model / n_heads = {c.d_k} columns, so the {c.n_heads} heads together share one "
            f"{d} x {d} matrix each",
        ),
    }


def _rest_miscounts(c: GPTConfig) -> dict[int, tuple[str, str]]:
    d, L, V, d_ff = c.d_model, c.n_layers, c.vocab_size, c.d_ff
    layer_norm = 2 * d  # a gain and a bias
    ffn = partial(_feed_forward, d)
    return {
        -c.T_max * d: (
            "count_without_positions",
            f"the position table p_1 .. p_T_max (T_max x d_model = {c.T_max} x {d})",
        ),
        -V * d: (
            "count_without_embedding",
            f"the token embedding table ({V} x {d}), or the weights of the output layer W_o "
            f"({d} x {V}): both hold {V * d:,}",
        ),
        -(d * V + V): (
            "count_without_output_layer",
            f"the output layer W_o and its bias ({d} x {V} + {V})",
        ),
        -V: ("count_without_output_bias", "the output layer's bias b_o"),
        -(2 * L + 1) * layer_norm: (
            "count_without_layernorms",
            "the LayerNorm gains and biases (2 per block, plus the final one: "
            f"{2 * L + 1} x {layer_norm})",
        ),
        -2 * L * layer_norm: (
            "count_without_block_layernorms",
            f"the LayerNorm gains and biases inside the blocks ({2 * L} x {layer_norm})",
        ),
        -layer_norm: (
            "count_without_final_layernorm",
            f"the final LayerNorm (gain and bias, 2 x {d})",
        ),
        -L * (d_ff + d): (
            "count_without_ffn_biases",
            f"the biases b_1 and b_2 of the feed-forward layers ({L} x ({d_ff} + {d}))",
        ),
        -L * (ffn(d_ff) - ffn(d)): (
            "count_ffn_width_d_model",
            f"a feed-forward layer of width d_model instead of d_ff = 4 x d_model = {d_ff} "
            f"({L} layers x {ffn(d_ff) - ffn(d):,})",
        ),
    }


def _count(c: GPTConfig) -> int:
    """The parameters of the lab's model, counted on the model itself. It is built on the CPU
    with the random generator put back afterwards: the student's draws stay as they were (the
    meta device would cost a second of imports, on every run of the check)."""
    with torch.random.fork_rng(devices=[]):
        return sum(p.numel() for p in MiniGPT(c).parameters())


# Sizes of another model, where a count typed from the lab's printout cannot be right.
OTHER = GPTConfig(vocab_size=50, d_model=64, n_heads=2, n_layers=2, T_max=32)


def _counted(read_the_model, c: GPTConfig) -> int:
    """The student's parameter count for a model of sizes `c`."""
    sizes = {"d_model": c.d_model, "n_layers": c.n_layers, "T_max": c.T_max, "vocab": c.vocab_size}
    n_parameters = call(EX0, read_the_model, **sizes)
    if not isinstance(n_parameters, int) or isinstance(n_parameters, bool):
        raise CheckFailed(
            f"{EX0}: return the number of parameters as a whole number (an int), not "
            f"{type(n_parameters).__name__} {n_parameters!r}.",
            EX0.code("count_not_int"),
        )
    return n_parameters


def exercise_0(read_the_model) -> None:
    """The parameter count worked out from the sizes: the lab's, then another model's."""
    n_parameters = _counted(read_the_model, LAB)
    right = _count(LAB)
    if n_parameters != right:
        gap = n_parameters - right
        name, hint = _miscounts(LAB).get(gap, ("wrong_count", None))
        where = f" You are {abs(gap):,} {'short' if gap < 0 else 'over'}"
        raise CheckFailed(
            f"{EX0}: {n_parameters:,} is not the model's count.{where}"
            + (f": that is exactly {hint}." if hint else ".")
            + " Your line counts one attention layer: the four Linear lines of "
            "MultiHeadAttention in the print above, W_Q, W_K and W_V (bias=False) and proj "
            "(bias=True), in terms of d_model.",
            EX0.code(name),
        )
    other = _counted(read_the_model, OTHER)
    if other != _count(OTHER):
        raise CheckFailed(
            f"{EX0}: your count is right at the lab's sizes, but read_the_model(d_model="
            f"{OTHER.d_model}, n_layers={OTHER.n_layers}, T_max={OTHER.T_max}, vocab="
            f"{OTHER.vocab_size}) returns {other:,}, which is not that model's count. Work the "
            "count out from the arguments, as a sum of the layers, not from a number you read.",
            EX0.code("count_not_from_sizes"),
        )
    passed(
        EX0,
        f"{EX0}: your sum counts {right:,} parameters at the lab's sizes and is right at other "
        "sizes too.",
    )


def _mistakes(Q, K, V, allowed) -> dict[str, tuple[str, torch.Tensor]]:
    """name -> (diagnosis, output V_bar) of the usual wrong versions, computed with our own
    operations: first the scaling of the scores, then the mask."""
    raw = Q.double() @ K.double().transpose(-2, -1)
    return {
        **_scale_mistakes(Q, raw, V.double(), allowed),
        **_mask_mistakes(Q, raw, V.double(), allowed),
    }


def _masked(scores, keep):
    return scores if keep is None else scores.masked_fill(~keep, float("-inf"))


def _scale_mistakes(Q, raw, V, allowed) -> dict[str, tuple[str, torch.Tensor]]:
    """The softmax and the scaling of the scores `raw` = Q K^T gone wrong."""
    d_k = Q.shape[-1]

    def attend(scores, dim=-1):
        return _softmax(_masked(scores, allowed), dim) @ V

    out = {
        "softmax_wrong_axis": (
            "the softmax runs over the wrong axis: each row of A must sum to 1 over the keys, "
            "so use softmax(..., dim=-1)",
            attend(raw / math.sqrt(d_k), dim=-2),
        ),
        "no_sqrt_dk": ("the scores are not divided by sqrt(d_k) (Equation 3)", attend(raw)),
        "divided_by_d_k": (
            "the scores are divided by d_k instead of sqrt(d_k): the variance argument of "
            "Equation 5 needs the square root",
            attend(raw / d_k),
        ),
        "scores_floor_divided": (
            "the scores are floor-divided by sqrt(d_k) (`//`), which rounds each one down to a "
            "whole number: divide with /",
            attend(raw // math.sqrt(d_k)),
        ),
    }
    # `/ d_k ** 1/2` is (... / d_k) / 2, and `/ (d_k ** 1/2)` divides by d_k / 2: each is
    # listed where it differs from the right answer and the mistakes above (d_k / 2 is 1 when
    # d_k = 2, and sqrt(d_k) when d_k = 4).
    halves = {2 * d_k, d_k / 2} - {1, d_k, math.sqrt(d_k)}
    if halves:
        out["sqrt_precedence"] = (
            "the scores are divided by d_k / 2 or 2 d_k, not sqrt(d_k): `d_k ** 1/2` is "
            "(d_k ** 1) / 2, because ** binds tighter than /. Write d_k ** 0.5 or "
            "math.sqrt(d_k)",
            tuple(attend(raw / n) for n in halves),
        )
    # d_k read from another axis than the last: the same values only where the sizes agree.
    sizes = sorted({size for size in Q.shape[:-1] if size != d_k})
    if sizes:
        out["d_k_wrong_axis"] = (
            "the scores are divided by the square root of another axis's size, not of d_k: "
            "d_k is the size of the last axis, Q.shape[-1] (with leading dimensions, "
            "Q.shape[1] is not d_k, and Q.shape[-2] is the number of positions)",
            tuple(attend(raw / math.sqrt(n)) for n in sizes),
        )
    return out


def _mask_mistakes(Q, raw, V, allowed) -> dict[str, tuple[str, torch.Tensor]]:
    """The mask applied wrongly (none when there is no mask)."""
    if allowed is None:
        return {}
    scaled = raw / math.sqrt(Q.shape[-1])
    return {
        "mask_after_softmax": (
            "the mask is applied after the softmax without renormalising: forbidden scores "
            "must become -inf *before* the softmax, or the kept weights still depend on them",
            (_softmax(scaled, -1) * allowed) @ V,
        ),
        "mask_zeroes_scores": (
            "the forbidden scores are set to 0 (multiplying the scores by the mask, or "
            "masked_fill with 0), but a score of 0 still gets the weight e^0 after the softmax. "
            "Forbidden scores must become -inf: scores.masked_fill(~allowed, float('-inf'))",
            _softmax(scaled * allowed, -1) @ V,
        ),
        "mask_inverted": (
            "the mask is inverted: `allowed` is True where a query MAY read, so fill the "
            "scores where it is False (~allowed). PyTorch's nn.MultiheadAttention uses the "
            "opposite convention (True = masked out); this lab does not",
            _softmax(scaled.masked_fill(allowed, float("-inf")), -1) @ V,
        ),
    }


_NAN_HINT = (
    "A common cause is 0 * (-inf): multiplying the scores by a 0/1 mask and adding -inf gives "
    "NaN. Fill the forbidden scores with `scores.masked_fill(~allowed, float('-inf'))` or "
    "`torch.where` instead."
)


def _pair(result, ref_V_bar, ref_A, exercise: Codes):
    """(V_bar, A) from the student's result, or a failure naming what is wrong with it."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise CheckFailed(
            f"{exercise}: return the pair (V_bar, A), got {type(result).__name__}.",
            exercise.code("not_a_pair"),
        )
    first, second = result
    swapped = (
        type(first) is torch.Tensor
        and type(second) is torch.Tensor
        and (first.shape, second.shape) == (ref_A.shape, ref_V_bar.shape)
        and (ref_A.shape != ref_V_bar.shape or close(first, ref_A))
    )
    if swapped:
        raise CheckFailed(
            f"{exercise}: the pair is in the wrong order: you returned (A, V_bar). Return "
            "(V_bar, A), the output first and the weights second, as the layer that calls "
            "your function unpacks it.",
            exercise.code("pair_swapped"),
        )
    return expect_tensor(exercise, "V_bar", first, ref_V_bar.shape), expect_tensor(
        exercise, "A", second, ref_A.shape
    )


def _wrong_weights_or_output(exercise: Codes, A, ref_A, V_bar, ref_V_bar):
    row_sums = A.double().sum(-1)
    if not close(row_sums, torch.ones_like(row_sums), atol=1e-4):
        return CheckFailed(
            f"{exercise}: rows of A should sum to 1 but sum to values from "
            f"{row_sums.min().item():.3f} to {row_sums.max().item():.3f}: check the softmax.",
            exercise.code("rows_do_not_sum_to_1"),
        )
    if not close(A, ref_A):
        return CheckFailed(
            f"{exercise}: A differs from softmax(Q K^T / sqrt(d_k)) by up to "
            f"{(A.double() - ref_A.double()).abs().max().item():.3g}. Check the order of "
            "Q @ K^T (not K @ Q^T), which axes you transpose, and that forbidden scores "
            "become -inf before the softmax.",
            exercise.code("wrong_weights"),
        )
    return CheckFailed(
        f"{exercise}: A is right but V_bar is not (off by up to "
        f"{(V_bar.double() - ref_V_bar.double()).abs().max().item():.3g}): V_bar = A @ V.",
        exercise.code("wrong_v_bar"),
    )


def _compare(fn, Q, K, V, allowed, case: str) -> None:
    exercise = EX1.at(case)
    args = (Q, K, V) if allowed is None else (Q, K, V, allowed)
    before = snapshot(*args)
    result = call(exercise, fn, *args)
    expect_unchanged(
        exercise,
        before,
        args,
        "your function changed its inputs (Q, K, V or allowed) in place: an operation ending "
        "in `_` (K.transpose_, Q.div_, allowed.logical_not_), or `/=`, `+=` on an input or on "
        "a view of one (a transpose, a slice, a reshape shares the input's memory). Compute "
        "new tensors instead: the caller still needs its inputs.",
    )
    ref_V_bar, ref_A = _reference(Q, K, V, allowed)
    V_bar, A = _pair(result, ref_V_bar, ref_A, exercise)
    if close(V_bar, ref_V_bar) and close(A, ref_A):
        return

    def wrong(gap: float | None = None) -> CheckFailed:
        return _wrong_weights_or_output(exercise, A, ref_A, V_bar, ref_V_bar)

    judge(
        exercise,
        V_bar,
        ref_V_bar,
        lambda: _mistakes(Q, K, V, allowed),
        nan_hint=_NAN_HINT,
        otherwise=wrong,
    )
    raise wrong()


def _inputs(seed: int, lead: tuple, T_q: int, T_k: int, d_k: int, d_v: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*lead, T_q, d_k, generator=g, dtype=dtype),
        torch.randn(*lead, T_k, d_k, generator=g, dtype=dtype),
        torch.randn(*lead, T_k, d_v, generator=g, dtype=dtype),
    )


def _random_case(
    fn,
    seed: int,
    lead: tuple,
    T_q: int,
    T_k: int,
    d_k: int,
    d_v: int,
    allowed,
    what: str,
    dtype=torch.float32,
) -> None:
    """Random Q, K, V of these sizes, named by them."""
    sizes = [f"leading dims {lead}"] if lead else []
    sizes.append(f"T = {T_q}" if T_q == T_k else f"T_q = {T_q}, T_k = {T_k}")
    sizes.append(f"d_k = {d_k}" if d_k == d_v else f"d_k = {d_k}, d_v = {d_v}")
    case = ", ".join([what, *sizes])
    _compare(fn, *_inputs(seed, lead, T_q, T_k, d_k, d_v, dtype), allowed, case)


def exercise_1(scaled_dot_product_attention) -> None:
    fn = scaled_dot_product_attention
    # d_k = 8 first: at d_k = 2 some slips give the same numbers (`d_k ** 1/2` is 1).
    _random_case(fn, 0, (), 5, 5, 8, 8, None, "no mask")
    # A worked example small enough to do by hand: Q = K, three positions, d_k = 2, causal.
    Q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    V = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    allowed = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    example = f"the hand-sized example, Q = K, {len(Q)} positions, d_k = 2"
    _compare(fn, Q, Q.clone(), V, None, f"{example}, no mask")
    _compare(fn, Q, Q.clone(), V, allowed, f"{example}, causal mask")
    g = torch.Generator().manual_seed(1)
    random_mask = torch.rand(6, 6, generator=g) < 0.5
    random_mask[:, 0] = True
    _random_case(fn, 1, (), 6, 6, 16, 16, random_mask, "a random mask")
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    _random_case(fn, 2, (2, 4), 7, 7, 8, 8, causal, "causal")
    trains(EX1, "attention", fn)
    passed(
        EX1,
        f"{EX1}: your attention matches Equations 3-4, with and without a mask, for any "
        "leading dimensions, and trains inside the lab's model in float32 and in a T4's "
        "float16.",
    )
    keep("attention", scaled_dot_product_attention, exercise_1)
