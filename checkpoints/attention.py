"""Checks of notebook 01: reading the model (Exercise 0) and scaled dot-product attention."""

from __future__ import annotations

import math

import torch

from transformer_lab.attention import scaled_dot_product_attention as _reference

from ._core import (
    CheckFailed,
    all_finite,
    call,
    close,
    code,
    expect_tensor,
    match_mistake,
    passed,
    snapshot,
    unchanged,
)

EX0 = "Exercise 0"
EX1 = "Exercise 1"
PARAMETERS = 824_897
_softmax = torch.softmax

# Parts of the count people often leave out or add, and what each is worth at the lab's sizes:
# gap -> (mistake name, what the gap is).
_MISCOUNTS = {
    -16_384: (
        "count_without_positions",
        "the position table p_1 .. p_T_max (T_max x d_model = 128 x 128)",
    ),
    -8_320: ("count_without_embedding", "the token embedding table (65 x 128)"),
    -8_385: ("count_without_output_layer", "the output layer W_o and its bias (128 x 65 + 65)"),
    -65: ("count_without_output_bias", "the output layer's bias b_o"),
    -512: (
        "count_without_proj_bias",
        "the bias b_proj of each layer's W_proj (4 layers x 128)",
    ),
    -2_304: (
        "count_without_layernorms",
        "the LayerNorm gains and biases (2 per block, plus the final one: 9 x 256)",
    ),
    -2_048: (
        "count_without_block_layernorms",
        "the LayerNorm gains and biases inside the blocks (8 x 256)",
    ),
    -256: ("count_without_final_layernorm", "the final LayerNorm (gain and bias, 2 x 128)"),
    -2_560: (
        "count_without_ffn_biases",
        "the biases b_1 and b_2 of the feed-forward layers (4 x (512 + 128))",
    ),
    +12_288: (
        "count_with_qkv_biases",
        "biases on W_Q, W_K, W_V: the lab's projections have none",
    ),
}


def exercise_0(read_the_model) -> None:
    """The parameter count of the lab's model, and the shape of Q when your function is called."""
    answers = call(EX0, read_the_model)
    if not isinstance(answers, tuple) or len(answers) != 2:
        raise CheckFailed(
            f"{EX0}: return the pair (n_parameters, attention_input_shape).",
            code(EX0, "not_a_pair"),
        )
    n_parameters, attention_input_shape = answers
    if not isinstance(n_parameters, int) or isinstance(n_parameters, bool):
        raise CheckFailed(
            f"{EX0}: n_parameters should be a whole number (an int).", code(EX0, "count_not_int")
        )
    if n_parameters != PARAMETERS:
        gap = n_parameters - PARAMETERS
        name, hint = _MISCOUNTS.get(gap, ("wrong_count", None))
        where = f" You are {abs(gap):,} {'short' if gap < 0 else 'over'}"
        raise CheckFailed(
            f"{EX0}: {n_parameters:,} is not the model's count.{where}"
            + (f": that is exactly {hint}." if hint else ".")
            + " Go through MiniGPT.__init__, Block and MultiHeadAttention one layer at a time.",
            code(EX0, name),
        )
    expected = ("B", "n_heads", "T", "d_k")
    if tuple(attention_input_shape) != expected:
        raise CheckFailed(
            f"{EX0}: MultiHeadAttention calls your function with Q of shape "
            f"{expected}, not {tuple(attention_input_shape)}: the head index becomes a batch "
            "dimension (look at `split` in MultiHeadAttention.forward).",
            code(EX0, "wrong_q_shape"),
        )
    passed(
        f"{EX0}: {PARAMETERS:,} parameters, and Q reaches your function as (B, n_heads, T, d_k)."
    )


def _mistakes(Q, K, V, allowed) -> dict[str, tuple[str, torch.Tensor]]:
    """name -> (diagnosis, output V_bar) of the usual wrong versions, computed with our own
    operations."""
    d_k = Q.shape[-1]
    raw = Q.double() @ K.double().transpose(-2, -1)
    V = V.double()

    def masked(scores, keep):
        return scores if keep is None else scores.masked_fill(~keep, float("-inf"))

    out = {
        "softmax_wrong_axis": (
            "the softmax runs over the wrong axis: each row of A must sum to 1 over the keys, "
            "so use softmax(..., dim=-1)",
            _softmax(masked(raw / math.sqrt(d_k), allowed), dim=-2) @ V,
        ),
        "no_sqrt_dk": (
            "the scores are not divided by sqrt(d_k) (Equation 3)",
            _softmax(masked(raw, allowed), -1) @ V,
        ),
        "divided_by_d_k": (
            "the scores are divided by d_k instead of sqrt(d_k): the variance argument of "
            "Equation 5 needs the square root",
            _softmax(masked(raw / d_k, allowed), -1) @ V,
        ),
    }
    if allowed is not None:
        full = _softmax(raw / math.sqrt(d_k), -1)
        out["mask_after_softmax"] = (
            "the mask is applied after the softmax without renormalising: forbidden scores "
            "must become -inf *before* the softmax, or the kept weights still depend on them",
            (full * allowed) @ V,
        )
        out["mask_inverted"] = (
            "the mask is inverted: `allowed` is True where a query MAY read, so fill the "
            "scores where it is False (~allowed)",
            _softmax(raw.masked_fill(allowed, float("-inf")) / math.sqrt(d_k), -1) @ V,
        )
    return out


def _compare(fn, Q, K, V, allowed, case: str) -> None:
    before = snapshot(Q, K, V)
    args = (Q, K, V) if allowed is None else (Q, K, V, allowed)
    result = call(EX1, fn, *args)
    if not unchanged(before, (Q, K, V)):
        raise CheckFailed(
            f"{EX1} ({case}): your function changed Q, K or V in place (an operation ending in "
            "`_`, or `/=`). Compute new tensors instead: the caller still needs its inputs.",
            code(EX1, "modified_inputs"),
        )
    if not isinstance(result, tuple) or len(result) != 2:
        raise CheckFailed(
            f"{EX1}: return the pair (V_bar, A), got {type(result).__name__}.",
            code(EX1, "not_a_pair"),
        )
    V_bar, A = result
    ref_V_bar, ref_A = _reference(Q, K, V, allowed)
    expect_tensor(EX1, "V_bar", V_bar, ref_V_bar.shape)
    expect_tensor(EX1, "A", A, ref_A.shape)
    if close(V_bar, ref_V_bar) and close(A, ref_A):
        return
    mistake = match_mistake(V_bar, _mistakes(Q, K, V, allowed))
    if mistake:
        name, diagnosis = mistake
        raise CheckFailed(f"{EX1} ({case}): {diagnosis}.", code(EX1, name))
    if not all_finite(V_bar) or not all_finite(A):
        raise CheckFailed(
            f"{EX1} ({case}): the output holds NaN. A common cause is 0 * (-inf): multiplying "
            "the scores by a 0/1 mask and adding -inf gives NaN. Fill the forbidden scores with "
            "`scores.masked_fill(~allowed, float('-inf'))` or `torch.where` instead.",
            code(EX1, "nan_output"),
        )
    row_sums = A.double().sum(-1)
    if not close(row_sums, torch.ones_like(row_sums), atol=1e-4):
        raise CheckFailed(
            f"{EX1} ({case}): rows of A should sum to 1 but sum to values from "
            f"{row_sums.min().item():.3f} to {row_sums.max().item():.3f}: check the softmax.",
            code(EX1, "rows_do_not_sum_to_1"),
        )
    if not close(A, ref_A):
        raise CheckFailed(
            f"{EX1} ({case}): A differs from softmax(Q K^T / sqrt(d_k)) by up to "
            f"{(A.double() - ref_A.double()).abs().max().item():.3g}. Check the order of "
            "Q @ K^T (not K @ Q^T) and which axes you transpose.",
            code(EX1, "wrong_weights"),
        )
    raise CheckFailed(
        f"{EX1} ({case}): A is right but V_bar is not (off by up to "
        f"{(V_bar.double() - ref_V_bar.double()).abs().max().item():.3g}): V_bar = A @ V.",
        code(EX1, "wrong_v_bar"),
    )


def _inputs(seed: int, lead: tuple, T_q: int, T_k: int, d_k: int, d_v: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*lead, T_q, d_k, generator=g, dtype=dtype),
        torch.randn(*lead, T_k, d_k, generator=g, dtype=dtype),
        torch.randn(*lead, T_k, d_v, generator=g, dtype=dtype),
    )


def _leading_dims(fn, case, inputs, allowed=None) -> None:
    try:
        _compare(fn, *inputs, allowed, case)
    except CheckFailed as failure:
        message = failure.message
        if failure.code == code(EX1, "raised") and ("transpose" in message or "size" in message):
            raise CheckFailed(
                f"{message} With leading dimensions, transpose only the last two axes of K: "
                "K.transpose(-2, -1). K.T reverses all of them.",
                failure.code,
            ) from None
        raise


def exercise_1(scaled_dot_product_attention) -> None:
    fn = scaled_dot_product_attention
    # Module 3's worked example: Q = K, three positions, d_k = 2, causal.
    Q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    V = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    allowed = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    _compare(fn, Q, Q.clone(), V, None, "3 positions, no mask")
    _compare(fn, Q, Q.clone(), V, allowed, "3 positions, causal mask")
    _compare(fn, *_inputs(0, (), 5, 5, 8, 8), None, "one sequence, T = 5, d_k = 8")
    g = torch.Generator().manual_seed(1)
    random_mask = torch.rand(6, 6, generator=g) < 0.5
    random_mask[:, 0] = True
    _compare(fn, *_inputs(1, (), 6, 6, 16, 16), random_mask, "T = 6 with a mask")
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    _leading_dims(fn, "leading dims (2, 4), causal", _inputs(2, (2, 4), 7, 7, 8, 8), causal)
    passed(
        f"{EX1}: your attention matches Equations 3-4, with and without a mask, "
        "for any leading dimensions."
    )


def exercise_1_hidden(scaled_dot_product_attention) -> None:
    fn = scaled_dot_product_attention
    causal = torch.ones(9, 9, dtype=torch.bool).tril()
    _leading_dims(
        fn, "float64, leading dims (3,)", _inputs(10, (3,), 9, 9, 4, 4, torch.float64), causal
    )
    _leading_dims(fn, "T_q != T_k, d_v != d_k", _inputs(11, (2,), 3, 9, 8, 5), None)
    _leading_dims(fn, "4 leading dims", _inputs(12, (2, 1, 3, 2), 4, 4, 6, 6), causal[:4, :4])
    passed(f"{EX1} (further cases): float64, non-square attention, deeper batches.")
