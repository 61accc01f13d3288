"""Bug zoo of notebook 06 (the optional challenge): Challenge A, MyMultiHeadAttention, and
Challenge B, MyBlock. Also the mistakes students bring from other courses (F.dropout, PyTorch's
mask convention) and one case for each code the others do not reach.

MyBlock's __init__ builds a MyMultiHeadAttention, so Challenge B first runs the (solution) cell of
Challenge A; its checkpoint then swaps in the package's attention layer, so only the block is
judged."""

from maintainer.zoo import Mistake, Right
from transformer_lab.catalogue import BY_NAME

STEM = "06_stretch"
EX6A = BY_NAME["ex6a"]
EX6B = BY_NAME["ex6b"]

MHA = """
B, T, d_model = H.shape

def split(X):
    return {split}

Q, K, V = split(self.W_Q(H)), split(self.W_K(H)), split(self.W_V(H))
{attention}
V_bar = {merge}
return {output}
"""

OWN_ATTENTION = """scores = Q @ K.transpose(-2, -1) / {scale}
scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
A = torch.softmax(scores, dim=-1)
V_bar = A @ V"""


def mha(
    split="X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)",
    attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T))",
    merge="V_bar.transpose(1, 2).reshape(B, T, d_model)",
    output="self.drop(self.proj(V_bar)), A",
):
    return MHA.format(split=split, attention=attention, merge=merge, output=output)


def block(attention_line: str, ffn_line: str) -> str:
    return f"{attention_line}\n{ffn_line}\n"


PRE_NORM_ATTENTION = "H = H + self.attn(self.ln1(H))[0]"
PRE_NORM_FFN = "return H + self.ffn(self.ln2(H))"

# Challenge A's layer up to its output `out`, without the return.
MHA_OUT = """
B, T, d_model = H.shape
Q, K, V = (X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
           for X in (self.W_Q(H), self.W_K(H), self.W_V(H)))
V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T))
out = self.drop(self.proj(V_bar.transpose(1, 2).reshape(B, T, d_model)))
"""
# Heads split, and merged back, as in the solution.
SPLIT = """
B, T, d_model = H.shape
Q, K, V = (X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
           for X in (self.W_Q(H), self.W_K(H), self.W_V(H)))
"""
MERGE = "V_bar = V_bar.transpose(1, 2).reshape(B, T, d_model)\n"

MISTAKES_A = {
    "view(B, n_heads, T, d_k) directly": Mistake(
        EX6A,
        mha(split="X.view(B, self.n_heads, T, self.d_k)", merge="V_bar.reshape(B, T, d_model)"),
        "ex6a.wrong_split_and_merge",
        "heads are cut wrongly",
    ),
    "view(B, n_heads, T, d_k), transposed back": Mistake(
        EX6A,
        mha(split="X.view(B, self.n_heads, T, self.d_k)"),
        "ex6a.wrong_split",
        "heads are cut wrongly",
    ),
    "merged without transposing back": Mistake(
        EX6A,
        mha(merge="V_bar.reshape(B, T, d_model)"),
        "ex6a.merge_without_transpose",
        "put back together without transposing",
    ),
    "view after transpose": Mistake(
        EX6A,
        mha(merge="V_bar.transpose(1, 2).view(B, T, d_model)"),
        "ex6a.view_after_transpose",
        "no longer contiguous",
    ),
    "interleaved columns per head": Mistake(
        EX6A,
        mha(
            split="X.view(B, T, self.d_k, self.n_heads).permute(0, 3, 1, 2)",
            merge="V_bar.permute(0, 2, 3, 1).reshape(B, T, d_model)",
        ),
        "ex6a.interleaved_heads",
        "consecutive columns",
    ),
    "no causal mask": Mistake(
        EX6A,
        mha(attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V)"),
        "ex6a.no_causal_mask",
        "no causal mask",
    ),
    "mask transposed (reads the future)": Mistake(
        EX6A,
        mha(attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T).T)"),
        "ex6a.reads_the_future",
        "reads the future",
    ),
    "scaled by sqrt(d_model)": Mistake(
        EX6A,
        mha(attention=OWN_ATTENTION.format(scale="d_model ** 0.5")),
        "ex6a.scaled_by_d_model",
        "divided by sqrt(d_model)",
    ),
    "not scaled": Mistake(
        EX6A,
        mha(attention=OWN_ATTENTION.format(scale="1.0")),
        "ex6a.no_sqrt_dk",
        "not divided by sqrt(d_k)",
    ),
    "no W_proj": Mistake(
        EX6A, mha(output="self.drop(V_bar), A"), "ex6a.no_proj", "W_proj is missing"
    ),
    "no dropout": Mistake(
        EX6A, mha(output="self.proj(V_bar), A"), "ex6a.no_dropout", "self.drop is never applied"
    ),
    "returns the output only": Mistake(
        EX6A, mha(output="self.drop(self.proj(V_bar))"), "ex6a.not_a_pair", "pair (output, A)"
    ),
    "returns no weights": Mistake(
        EX6A,
        mha(output="self.drop(self.proj(V_bar)), None"),
        "ex6a.wrong_weights_shape",
        "the second value should be A",
    ),
    "returns the weights averaged over heads": Mistake(
        EX6A,
        mha(output="self.drop(self.proj(V_bar)), A.mean(1)"),
        "ex6a.weights_averaged_over_heads",
        "averaged over the heads",
    ),
    # The slips of a first-time PyTorch user.
    "K.T on the heads": Mistake(
        EX6A,
        mha(
            attention=OWN_ATTENTION.format(scale="self.d_k ** 0.5").replace(
                "K.transpose(-2, -1)", "K.T"
            )
        ),
        "ex6a.transpose_all_axes",
        "(B, n_heads, T, d_k).T is (d_k, T, n_heads, B)",
    ),
    "if mask: on a tensor": Mistake(
        EX6A,
        mha(
            attention="allowed = tl.causal_mask(T)\n"
            "scores = Q @ K.transpose(-2, -1) / self.d_k ** 0.5\n"
            "if allowed:\n"
            "    scores = scores.masked_fill(~allowed, float('-inf'))\n"
            "A = torch.softmax(scores, dim=-1)\nV_bar = A @ V"
        ),
        "ex6a.tensor_as_condition",
        "is not None",
    ),
    # One case for each code the cases above do not reach.
    "Challenge A: the last position dropped": Mistake(
        EX6A, MHA_OUT + "return out[:, :-1], A", "ex6a.wrong_shape"
    ),
    "Challenge A: weights halved": Mistake(
        EX6A, MHA_OUT + "return out, A / 2", "ex6a.wrong_weights"
    ),
    "Challenge A: nn.MultiheadAttention consulted": Mistake(
        EX6A,
        MHA_OUT + "torch.nn.MultiheadAttention(d_model, self.n_heads, batch_first=True)(H, H, H)\n"
        "return out, A",
        "ex6a.uses_nn_multihead_attention",
    ),
    # Mistakes students bring from other courses.
    "Challenge A: F.dropout that ignores eval()": Mistake(
        EX6A,
        SPLIT
        + "V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T))\n"
        + MERGE
        + "return torch.nn.functional.dropout(self.proj(V_bar), 0.1), A",
        "ex6a.dropout_in_eval",
    ),
    "Challenge A: PyTorch's mask convention (True = masked out)": Mistake(
        EX6A,
        SPLIT
        + "mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)\n"
        + "V_bar, A = tl.scaled_dot_product_attention(Q, K, V, mask)\n"
        + MERGE
        + "return self.drop(self.proj(V_bar)), A",
        "ex6a.mask_inverted",
    ),
    "Challenge A: PyTorch's mask convention, empty rows zeroed": Mistake(
        EX6A,
        SPLIT
        + "mask = ~tl.causal_mask(T)\n"
        + "V_bar, A = tl.scaled_dot_product_attention(Q, K, V, mask, empty_row='zero')\n"
        + MERGE
        + "return self.drop(self.proj(V_bar)), A",
        "ex6a.mask_inverted",
    ),
}

MISTAKES_B = {
    "post-norm (Equation 13)": Mistake(
        EX6B,
        block("H = self.ln1(H + self.attn(H)[0])", "return self.ln2(H + self.ffn(H))"),
        "ex6b.post_norm",
        "post-norm",
    ),
    "no residual around attention": Mistake(
        EX6B,
        block("H = self.attn(self.ln1(H))[0]", PRE_NORM_FFN),
        "ex6b.no_attn_residual",
        "residual around attention is missing",
    ),
    "no residual around the feed-forward layer": Mistake(
        EX6B,
        block(PRE_NORM_ATTENTION, "return self.ffn(self.ln2(H))"),
        "ex6b.no_ffn_residual",
        "residual around the feed-forward layer is missing",
    ),
    "no residuals": Mistake(
        EX6B,
        block("H = self.attn(self.ln1(H))[0]", "return self.ffn(self.ln2(H))"),
        "ex6b.no_residuals",
        "both residuals are missing",
    ),
    "LayerNorm of the stream itself, both sublayers": Mistake(
        EX6B,
        "H = self.ln1(H)\nH = H + self.attn(H)[0]\nH = self.ln2(H)\nreturn H + self.ffn(H)\n",
        "ex6b.normed_stream",
        "you normalize the stream itself",
    ),
    "LayerNorm of the stream itself, before attention": Mistake(
        EX6B,
        "H = self.ln1(H)\nH = H + self.attn(H)[0]\n" + PRE_NORM_FFN,
        "ex6b.normed_stream_attn",
        "before attention you normalize the stream itself",
    ),
    "LayerNorm of the stream itself, before the feed-forward layer": Mistake(
        EX6B,
        PRE_NORM_ATTENTION + "\nH = self.ln2(H)\nreturn H + self.ffn(H)\n",
        "ex6b.normed_stream_ffn",
        "before the feed-forward layer you normalize the stream itself",
    ),
    "LayerNorm on the sublayer outputs": Mistake(
        EX6B,
        block("H = H + self.ln1(self.attn(H)[0])", "return H + self.ln2(self.ffn(H))"),
        "ex6b.norm_after_sublayer",
        "normalizes the sublayer's output",
    ),
    "LayerNorms swapped": Mistake(
        EX6B,
        block("H = H + self.attn(self.ln2(H))[0]", "return H + self.ffn(self.ln1(H))"),
        "ex6b.swapped_norms",
        "swapped",
    ),
    "feed-forward layer reads the block's input": Mistake(
        EX6B,
        block("H1 = H + self.attn(self.ln1(H))[0]", "return H1 + self.ffn(self.ln2(H))"),
        "ex6b.ffn_reads_input",
        "LN2 of the block's input H",
    ),
    "second residual adds the block's input": Mistake(
        EX6B,
        block("H1 = H + self.attn(self.ln1(H))[0]", "return H + self.ffn(self.ln2(H1))"),
        "ex6b.ffn_residual_adds_input",
        "adds the block's input H instead of H'",
    ),
    "no LayerNorm before the feed-forward layer": Mistake(
        EX6B,
        block(PRE_NORM_ATTENTION, "return H + self.ffn(H)"),
        "ex6b.no_ln2",
        "reads H' without LayerNorm",
    ),
    "no LayerNorm before attention": Mistake(
        EX6B,
        block("H = H + self.attn(H)[0]", PRE_NORM_FFN),
        "ex6b.no_ln1",
        "attention reads H without LayerNorm",
    ),
    "LayerNorm over positions and features": Mistake(
        EX6B,
        block(
            "H = H + self.attn(torch.nn.functional.layer_norm(H, H.shape[-2:]))[0]", PRE_NORM_FFN
        ),
        "ex6b.reads_the_future",
        "only attention may mix positions",
    ),
    "in-place residual": Mistake(
        EX6B,
        block("H += self.attn(self.ln1(H))[0]", PRE_NORM_FFN),
        "ex6b.modified_input",
        "in place",
    ),
    "attention pair not unpacked": Mistake(
        EX6B,
        block("H = H + self.attn(self.ln1(H))", PRE_NORM_FFN),
        "ex6b.pair_not_unpacked",
        "Unpack it first",
    ),
    "returns a pair": Mistake(
        EX6B,
        block(PRE_NORM_ATTENTION, "return H + self.ffn(self.ln2(H)), None"),
        "ex6b.returns_tuple",
        "the new H only",
    ),
    # One case for each code the cases above do not reach.
    "Challenge B: the last position dropped": Mistake(
        EX6B,
        "attended, _ = self.attn(self.ln1(H))\nH = H + attended\n"
        "return (H + self.ffn(self.ln2(H)))[:, :-1]",
        "ex6b.wrong_shape",
    ),
    # Mistakes students bring from other courses.
    "Challenge B: F.dropout that ignores eval()": Mistake(
        EX6B,
        "attended, _ = self.attn(self.ln1(H))\nH = H + attended\n"
        "return H + torch.nn.functional.dropout(self.ffn(self.ln2(H)), 0.1)",
        "ex6b.dropout_in_eval",
    ),
}

MISTAKES = {**MISTAKES_A, **MISTAKES_B}
assert len(MISTAKES) == len(MISTAKES_A) + len(MISTAKES_B), "a name is in both tables"

RIGHT = {
    "contiguous().view": Right(
        EX6A, mha(merge="V_bar.transpose(1, 2).contiguous().view(B, T, d_model)")
    ),
    "unflatten and flatten": Right(
        EX6A,
        mha(
            split="X.unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)",
            merge="V_bar.transpose(1, 2).flatten(-2)",
        ),
    ),
    "permute": Right(
        EX6A,
        mha(
            split="X.reshape(B, T, self.n_heads, self.d_k).permute(0, 2, 1, 3)",
            merge="V_bar.permute(0, 2, 1, 3).reshape(B, T, d_model)",
        ),
    ),
    "own attention with einsum": Right(
        EX6A,
        mha(
            attention=(
                'scores = torch.einsum("bhtd,bhsd->bhts", Q, K) / self.d_k ** 0.5\n'
                "allowed = torch.ones(T, T, dtype=torch.bool).tril()\n"
                'A = torch.softmax(torch.where(allowed, scores, float("-inf")), dim=-1)\n'
                'V_bar = torch.einsum("bhts,bhsd->bhtd", A, V)'
            )
        ),
    ),
    "a loop over the heads": Right(
        EX6A,
        """
        B, T, d_model = H.shape
        Q, K, V = self.W_Q(H), self.W_K(H), self.W_V(H)
        allowed = tl.causal_mask(T)
        outputs, weights = [], []
        for r in range(self.n_heads):
            cols = slice(r * self.d_k, (r + 1) * self.d_k)
            V_bar_r, A_r = tl.scaled_dot_product_attention(
                Q[..., cols], K[..., cols], V[..., cols], allowed
            )
            outputs.append(V_bar_r)
            weights.append(A_r)
        V_bar = torch.cat(outputs, dim=-1)
        return self.drop(self.proj(V_bar)), torch.stack(weights, dim=1)
        """,
    ),
    "the solution's two steps, inlined": Right(EX6B, block(PRE_NORM_ATTENTION, PRE_NORM_FFN)),
    "named intermediate": Right(
        EX6B,
        "attended, _ = self.attn(self.ln1(H))\nH_prime = H + attended\n"
        "return H_prime + self.ffn(self.ln2(H_prime))\n",
    ),
    "functional layer_norm with the block's own parameters": Right(
        EX6B,
        "F = torch.nn.functional\n"
        "X = F.layer_norm(H, (H.shape[-1],), self.ln1.weight, self.ln1.bias, self.ln1.eps)\n"
        "H = H + self.attn(X)[0]\n"
        "X = F.layer_norm(H, (H.shape[-1],), self.ln2.weight, self.ln2.bias, self.ln2.eps)\n"
        "return H + self.ffn(X)\n",
    ),
}

EXERCISES = (EX6A, EX6B)
