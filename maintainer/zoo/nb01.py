"""Bug zoo of notebook 01 (attention): Exercise 0 (reading the model: the parameter count) and
Exercise 1 (scaled_dot_product_attention). Also the mistakes students bring from
other courses (the Annotated Transformer, nanoGPT) and one case for each code the others do not
reach (see test_codes.py)."""

import torch.nn as nn

import transformer_lab as tl
from maintainer.zoo import Mistake, Right
from transformer_lab.catalogue import BY_NAME

# Exercise 0's checkpoint prints one ✅.
EX0 = BY_NAME["ex0"]
EX1 = BY_NAME["ex1"]

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

# Each miscount's gap, taken from the parts of the lab's model itself (the check works it out
# from the sizes, so the two must agree).
LAB = tl.MiniGPT(tl.GPTConfig())
COUNT = tl.count_parameters(LAB)
BLOCKS = LAB.blocks
PROJECTIONS = [m for b in BLOCKS for m in (b.attn.W_Q, b.attn.W_K, b.attn.W_V)]
d_model = LAB.config.d_model


def size(*modules: nn.Module) -> int:
    return sum(tl.count_parameters(m) for m in modules)


MISCOUNTS = {
    "ex0.count_without_positions": -size(LAB.pos_emb),
    "ex0.count_ffn_width_d_model": sum(
        2 * size(nn.Linear(d_model, d_model)) - size(b.ffn) for b in BLOCKS
    ),
    "ex0.count_without_block_layernorms": -size(*(m for b in BLOCKS for m in (b.ln1, b.ln2))),
    "ex0.count_without_embedding": -size(LAB.tok_emb),
    "ex0.count_without_ffn_biases": -sum(
        b.ffn.W_1.bias.numel() + b.ffn.W_2.bias.numel() for b in BLOCKS
    ),
    "ex0.count_without_final_layernorm": -size(LAB.ln_f),
    "ex0.count_without_layernorms": -size(
        *(m for m in LAB.modules() if isinstance(m, nn.LayerNorm))
    ),
    "ex0.count_without_output_bias": -LAB.W_o.bias.numel(),
    "ex0.count_without_output_layer": -size(LAB.W_o),
    "ex0.count_without_proj": -size(*(b.attn.proj for b in BLOCKS)),
    "ex0.count_without_proj_bias": -sum(b.attn.proj.bias.numel() for b in BLOCKS),
    # A bias on each projection: one per output column.
    "ex0.count_with_qkv_biases": sum(m.out_features for m in PROJECTIONS),
    # Every head with its own d_model x d_model projections instead of a d_k-wide share.
    "ex0.count_full_width_heads": (LAB.config.n_heads - 1) * size(*PROJECTIONS),
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
        "ex1.transpose_all_axes",
        ("reverses every axis", "K.transpose(-2, -1)"),
    ),
    "K transposed over its first two axes": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(0, 1) / math.sqrt(d_k)"),
        "ex1.shapes_do_not_match",
        "K.transpose(-2, -1)",
    ),
    # The slips of a first-time PyTorch user.
    "if allowed: for a tensor": Mistake(
        EX1,
        attention().replace("if allowed is not None:", "if allowed:"),
        "ex1.tensor_as_condition",
        "`if allowed is not None:`",
    ),
    "math.exp on the scores": Mistake(
        EX1,
        weights() + "A = math.exp(scores) / math.exp(scores).sum(-1, keepdim=True)\n"
        "return A @ V, A",
        "ex1.math_on_tensor",
        "torch.exp",
    ),
    "torch.sqrt of the int d_k": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) / torch.sqrt(d_k)"),
        "ex1.number_not_tensor",
        "math.sqrt(d_k)",
    ),
    "d_k ** 1/2": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) / d_k ** 1/2"),
        "ex1.sqrt_precedence",
        "** binds tighter than /",
    ),
    "d_k ** 1/2 in brackets": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) / (d_k ** 1/2)"),
        "ex1.sqrt_precedence",
        "d_k ** 0.5",
    ),
    "F.softmax without dim": Mistake(
        EX1,
        attention(softmax="torch.nn.functional.softmax(scores)"),
        "ex1.softmax_without_dim",
        "dim=-1",
    ),
    "floor division of the scores": Mistake(
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) // math.sqrt(d_k)"),
        "ex1.scores_floor_divided",
        "divide with /",
    ),
    "K transposed in place": Mistake(
        EX1,
        attention(scores="Q @ K.transpose_(-2, -1) / math.sqrt(d_k)"),
        "ex1.modified_input",
        "K.transpose_",
    ),
    "a view of Q scaled in place": Mistake(
        EX1,
        "Q[..., :] /= math.sqrt(Q.shape[-1])\n"
        + weights(scores="Q @ K.transpose(-2, -1)")
        + "return A @ V, A",
        "ex1.modified_input",
        "a view of one",
    ),
    "returns A only": Mistake(
        EX1,
        attention().replace("return A @ V, A", "return A"),
        "ex1.not_a_pair",
        "pair (V_bar, A)",
    ),
    # One case for each code the cases above do not reach.
    "Ex0: a float count": Mistake(EX0, f"return {float(COUNT)}", "ex0.count_not_int"),
    "Ex0: the old pair with a shape": Mistake(
        EX0, f'return {COUNT}, ("B", "n_heads", "T", "d_k")', "ex0.count_not_int", "not tuple"
    ),
    **{
        f"Ex0: {expected}": Mistake(
            EX0, f"return {COUNT + gap}", expected, (f"{abs(gap):,}", "exactly")
        )
        for expected, gap in MISCOUNTS.items()
    },
    "Ex0: W_Q, W_K and W_V without W_proj, as the line is written": Mistake(
        EX0,
        "attention = 3 * d_model * d_model",
        "ex0.count_without_proj",
        ("66,048 short", "W_proj and its bias", "four Linear lines"),
    ),
    "Ex0: the lab's count, typed in from the lecture": Mistake(
        EX0,
        f"return {COUNT}",
        "ex0.count_not_from_sizes",
        ("right at the lab's sizes", "not from a number you read"),
    ),
    "Ex0: a count off by no known mistake": Mistake(
        EX0, f"return {COUNT + 1}", "ex0.wrong_count", "You are 1 over."
    ),
    "Ex1: an error of no known cause": Mistake(
        EX1,
        'raise KeyError("d_k")',
        "ex1.raised",
        ("raised KeyError", "The traceback above this message points at the line"),
    ),
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
    # Right on the checks' inputs, wrong in the model 04 trains (inside the model, fp32 and fp16).
    "Ex1: the Annotated Transformer's -1e9 fill, which overflows float16": Mistake(
        EX1,
        attention(mask="scores = scores.masked_fill(~allowed, -1e9)"),
        "ex1.overflows_in_half",
        ("float16", "masked_fill(~allowed, -1e9)", "torch.finfo(scores.dtype).min"),
    ),
    "Ex1: the Annotated Transformer's attention, as it is written there": Mistake(
        EX1,
        "d_k = Q.size(-1)\nscores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)\n"
        "if allowed is not None:\n    scores = scores.masked_fill(allowed == 0, -1e9)\n"
        "p_attn = scores.softmax(dim=-1)\nreturn torch.matmul(p_attn, V), p_attn",
        "ex1.overflows_in_half",
        "masked_fill(allowed == 0, -1e9)",
    ),
    "Ex1: the fill as float32's lowest number": Mistake(
        EX1,
        attention(mask="scores = scores.masked_fill(~allowed, torch.finfo(torch.float32).min)"),
        "ex1.overflows_in_half",
        "65,504",
    ),
    "Ex1: a copy of the scores with torch.tensor": Mistake(
        EX1,
        attention(scores="torch.tensor(Q @ K.transpose(-2, -1) / math.sqrt(d_k))"),
        "ex1.gradient_cut",
        ("W_Q and W_K", "torch.tensor(Q @ K", ".clone()"),
    ),
    "Ex1: the weights detached": Mistake(
        EX1,
        OWN_A + "A = A.detach()\nreturn A @ V, A",
        "ex1.gradient_cut",
        ("W_Q and W_K", "A = A.detach()"),
    ),
    "Ex1: V_bar detached": Mistake(
        EX1,
        OWN_A + "V_bar = (A @ V).detach()\nreturn V_bar, A",
        "ex1.gradient_cut",
        "W_Q and W_K and W_V",
    ),
    "Ex1: the softmax through numpy": Mistake(
        EX1,
        weights().replace(
            "A = torch.softmax(scores, dim=-1)",
            "import numpy as np\n"
            "e = np.exp(scores.numpy())\n"
            "A = torch.from_numpy(e / e.sum(-1, keepdims=True))",
        )
        + "return A @ V, A",
        "ex1.numpy_in_model",
        ("numpy", "torch operations"),
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
    "a debugging print left in": Right(EX1, 'print("scores", Q.shape)\n' + attention()),
    "explicit exponentials": Right(
        EX1,
        attention(
            softmax="(scores - scores.amax(-1, keepdim=True)).exp() / "
            "(scores - scores.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True)"
        ),
    ),
}

EXERCISES = (EX0, EX1)
