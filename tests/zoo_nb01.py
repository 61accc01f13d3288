"""Bug zoo of notebook 01 (attention): Exercise 0 (reading the model: the parameter count and the
shape of Q) and Exercise 1 (scaled_dot_product_attention). Also the mistakes students bring from
other courses (the Annotated Transformer, nanoGPT) and one case for each code the others do not
reach (see test_codes.py)."""

from zoo import Exercise, Mistake, Right

# Exercise 0's checkpoint prints one ✅.
EX0 = Exercise("01_attention", "ex0_read_the_model", "ex0_check", (), 1, "ex0")
EX1 = Exercise("01_attention", "ex1_attention", "ex1_check", (), 2, "ex1")
SHAPE = '("B", "n_heads", "T", "d_k")'

ATTENTION = """
d_k = Q.shape[-1]
scores = {scores}
if allowed is not None:
    {mask}
A = {softmax}
return A @ V, A
"""


def attention(
    scores="Q @ K.transpose(-2, -1) / math.sqrt(d_k)",
    mask='scores = scores.masked_fill(~allowed, float("-inf"))',
    softmax="torch.softmax(scores, dim=-1)",
):
    return ATTENTION.format(scores=scores, mask=mask, softmax=softmax)


def weights(scores="Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])", fill='float("-inf")'):
    """Scores, mask and softmax, without the return."""
    return (
        f"scores = {scores}\n"
        f"if allowed is not None:\n    scores = scores.masked_fill(~allowed, {fill})\n"
        "A = torch.softmax(scores, dim=-1)\n"
    )


# The student's own attention weights A, without the return.
OWN_A = """
d_k = Q.shape[-1]
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
if allowed is not None:
    scores = scores.masked_fill(~allowed, float("-inf"))
A = torch.softmax(scores, dim=-1)
"""

MISCOUNTS = {
    "ex0.count_ffn_width_d_model": -394_752,
    "ex0.count_without_block_layernorms": -2_048,
    "ex0.count_without_embedding": -8_320,
    "ex0.count_without_ffn_biases": -2_560,
    "ex0.count_without_final_layernorm": -256,
    "ex0.count_without_layernorms": -2_304,
    "ex0.count_without_output_bias": -65,
    "ex0.count_without_output_layer": -8_385,
    "ex0.count_without_proj_bias": -512,
}

MISTAKES = {
    "softmax over the wrong axis": Mistake(
        EX1,
        attention(softmax="torch.softmax(scores, dim=-2)"),
        "ex1.softmax_wrong_axis",
        "wrong axis",
    ),
    "no 1/sqrt(d_k)": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(-2, -1)"),
        "ex1.no_sqrt_dk",
        "not divided by sqrt(d_k)",
    ),
    "dividing by d_k": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) / d_k"),
        "ex1.divided_by_d_k",
        "divided by d_k instead",
    ),
    "masking after softmax": Mistake(
        EX1,
        """
        d_k = Q.shape[-1]
        A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
        if allowed is not None:
            A = A * allowed
        return A @ V, A
        """,
        "ex1.mask_after_softmax",
        "after the softmax without renormalising",
    ),
    "mask inverted": Mistake(
        EX1,
        attention(mask='scores = scores.masked_fill(allowed, float("-inf"))'),
        "ex1.mask_inverted",
        "inverted",
    ),
    "NaN from 0 * (-inf)": Mistake(
        EX1,
        attention(mask='scores = scores + (~allowed).float() * float("-inf")'),
        "ex1.not_finite",
        "0 * (-inf)",
    ),
    "in-place change of Q": Mistake(
        EX1,
        """
        Q /= math.sqrt(Q.shape[-1])
        scores = Q @ K.transpose(-2, -1)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        A = torch.softmax(scores, dim=-1)
        return A @ V, A
        """,
        "ex1.modified_input",
        "in place",
    ),
    "K.T with leading dims": Mistake(
        EX1,
        attention(scores="Q @ K.T / math.sqrt(d_k)"),
        "ex1.shapes_do_not_match",
        "K.transpose(-2, -1)",
    ),
    "returns A only": Mistake(
        EX1,
        attention().replace("return A @ V, A", "return A"),
        "ex1.not_a_pair",
        "pair (V_bar, A)",
    ),
    "miscount: no position table": Mistake(
        EX0,
        'return 824_897 - 128 * 128, ("B", "n_heads", "T", "d_k")',
        "ex0.count_without_positions",
        "position table",
    ),
    "miscount: biases on W_Q, W_K, W_V": Mistake(
        EX0,
        'return 824_897 + 12_288, ("B", "n_heads", "T", "d_k")',
        "ex0.count_with_qkv_biases",
        "biases on W_Q",
    ),
    "heads not a batch dimension": Mistake(
        EX0,
        'return 824_897, ("B", "T", "n_heads", "d_k")',
        "ex0.wrong_q_shape",
        "batch dimension",
    ),
    # One case for each code the cases above do not reach.
    "Ex0: a count alone": Mistake(EX0, "return 824_897", "ex0.not_a_pair"),
    "Ex0: a float count": Mistake(EX0, f"return 824_897.0, {SHAPE}", "ex0.count_not_int"),
    **{
        f"Ex0: {expected}": Mistake(EX0, f"return {824_897 + gap}, {SHAPE}", expected)
        for expected, gap in MISCOUNTS.items()
    },
    "Ex1: softmax replaced by exp": Mistake(
        EX1,
        weights() + "A = torch.exp(scores)\nreturn A @ V, A",
        "ex1.rows_do_not_sum_to_1",
    ),
    "Ex1: K @ Q^T": Mistake(
        EX1,
        weights(scores="K @ Q.transpose(-2, -1) / math.sqrt(Q.shape[-1])") + "return A @ V, A",
        "ex1.wrong_weights",
    ),
    "Ex1: V_bar doubled": Mistake(EX1, weights() + "return 2 * (A @ V), A", "ex1.wrong_v_bar"),
    "Ex1: 1 - allowed as the mask": Mistake(
        EX1,
        weights().replace("~allowed", "1 - allowed") + "return A @ V, A",
        "ex1.mask_not_bool",
    ),
    "Ex1: T, d_k = Q.shape": Mistake(
        EX1,
        "T, d_k = Q.shape\n" + weights() + "return A @ V, A",
        "ex1.shape_unpacked",
    ),
    # Mistakes students bring from other courses.
    "Ex1: scores multiplied by the mask": Mistake(
        EX1,
        OWN_A.replace('scores.masked_fill(~allowed, float("-inf"))', "scores * allowed")
        + "return A @ V, A",
        "ex1.mask_zeroes_scores",
    ),
    "Ex1: forbidden scores set to 0": Mistake(
        EX1,
        OWN_A.replace('float("-inf")', "0.0") + "return A @ V, A",
        "ex1.mask_zeroes_scores",
    ),
    "Ex1: d_k read from axis 1": Mistake(
        EX1,
        OWN_A.replace("Q.shape[-1]", "Q.shape[1]") + "return A @ V, A",
        "ex1.d_k_wrong_axis",
    ),
    "Ex1: d_k read as the number of positions": Mistake(
        EX1,
        OWN_A.replace("Q.shape[-1]", "Q.size(-2)") + "return A @ V, A",
        "ex1.d_k_wrong_axis",
    ),
    "Ex1: the pair in the wrong order": Mistake(EX1, OWN_A + "return A, A @ V", "ex1.pair_swapped"),
    "Ex0: full-width projections for every head": Mistake(
        EX0,
        'return 824_897 + 589_824, ("B", "n_heads", "T", "d_k")',
        "ex0.count_full_width_heads",
    ),
}

RIGHT = {
    "einsum and where": Right(
        EX1,
        attention(
            scores='torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(d_k)',
            mask='scores = torch.where(allowed, scores, torch.tensor(float("-inf")))',
        ),
    ),
    "rsqrt and F.softmax": Right(
        EX1,
        attention(
            scores="(Q @ K.transpose(-2, -1)) * torch.rsqrt(torch.tensor(float(d_k)))",
            softmax="torch.nn.functional.softmax(scores, dim=-1)",
        ),
    ),
    "explicit exponentials": Right(
        EX1,
        attention(
            softmax="(scores - scores.amax(-1, keepdim=True)).exp() / "
            "(scores - scores.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True)"
        ),
    ),
}

EXERCISES = (EX0, EX1)
