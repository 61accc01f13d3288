"""Bug zoo of notebook 06 (the optional challenge): each usual mistake in MyMultiHeadAttention
and MyBlock, injected into its forward, fails with the matching diagnosis and mistake code;
each correct variant passes.

MyBlock's __init__ builds a MyMultiHeadAttention, so the block's rows also run the (solution)
cell of Challenge A; its checkpoint then swaps in the package's attention layer, so only the
block is judged."""

import pytest
from notebook_harness import cell, inject, prelude, run_exercise

from checkpoints import CheckFailed, NotDoneYet

STEM = "06_stretch"
EXA = (STEM, "ex6a_multi_head", "ex6a_check")
EXB = (STEM, "ex6b_block", "ex6b_check")
NOT_DONE = 'raise NotImplementedError("not done yet")'

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

MUTANTS_A = {
    "view(B, n_heads, T, d_k) directly": (
        mha(split="X.view(B, self.n_heads, T, self.d_k)", merge="V_bar.reshape(B, T, d_model)"),
        "heads are cut wrongly",
        "exa.wrong_split_and_merge",
    ),
    "view(B, n_heads, T, d_k), transposed back": (
        mha(split="X.view(B, self.n_heads, T, self.d_k)"),
        "heads are cut wrongly",
        "exa.wrong_split",
    ),
    "merged without transposing back": (
        mha(merge="V_bar.reshape(B, T, d_model)"),
        "put back together without transposing",
        "exa.merge_without_transpose",
    ),
    "view after transpose": (
        mha(merge="V_bar.transpose(1, 2).view(B, T, d_model)"),
        "no longer contiguous",
        "exa.view_after_transpose",
    ),
    "interleaved columns per head": (
        mha(
            split="X.view(B, T, self.d_k, self.n_heads).permute(0, 3, 1, 2)",
            merge="V_bar.permute(0, 2, 3, 1).reshape(B, T, d_model)",
        ),
        "consecutive columns",
        "exa.interleaved_heads",
    ),
    "no causal mask": (
        mha(attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V)"),
        "no causal mask",
        "exa.no_causal_mask",
    ),
    "mask transposed (reads the future)": (
        mha(attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T).T)"),
        "reads the future",
        "exa.reads_future",
    ),
    "scaled by sqrt(d_model)": (
        mha(attention=OWN_ATTENTION.format(scale="d_model ** 0.5")),
        "divided by sqrt(d_model)",
        "exa.scaled_by_d_model",
    ),
    "not scaled": (
        mha(attention=OWN_ATTENTION.format(scale="1.0")),
        "not divided by sqrt(d_k)",
        "exa.no_sqrt_dk",
    ),
    "no W_proj": (mha(output="self.drop(V_bar), A"), "W_proj is missing", "exa.no_proj"),
    "no dropout": (
        mha(output="self.proj(V_bar), A"),
        "self.drop is never applied",
        "exa.no_dropout",
    ),
    "returns the output only": (
        mha(output="self.drop(self.proj(V_bar))"),
        "pair (output, A)",
        "exa.not_a_pair",
    ),
    "returns no weights": (
        mha(output="self.drop(self.proj(V_bar)), None"),
        "the second value should be A",
        "exa.wrong_weights_shape",
    ),
    "returns the weights averaged over heads": (
        mha(output="self.drop(self.proj(V_bar)), A.mean(1)"),
        "averaged over the heads",
        "exa.weights_averaged_over_heads",
    ),
}

MUTANTS_B = {
    "post-norm (Equation 13)": (
        block("H = self.ln1(H + self.attn(H)[0])", "return self.ln2(H + self.ffn(H))"),
        "post-norm",
        "exb.post_norm",
    ),
    "no residual around attention": (
        block("H = self.attn(self.ln1(H))[0]", PRE_NORM_FFN),
        "residual around attention is missing",
        "exb.no_attn_residual",
    ),
    "no residual around the feed-forward layer": (
        block(PRE_NORM_ATTENTION, "return self.ffn(self.ln2(H))"),
        "residual around the feed-forward layer is missing",
        "exb.no_ffn_residual",
    ),
    "no residuals": (
        block("H = self.attn(self.ln1(H))[0]", "return self.ffn(self.ln2(H))"),
        "both residuals are missing",
        "exb.no_residuals",
    ),
    "LayerNorm of the stream itself, both sublayers": (
        "H = self.ln1(H)\nH = H + self.attn(H)[0]\nH = self.ln2(H)\nreturn H + self.ffn(H)\n",
        "you normalize the stream itself",
        "exb.normed_stream",
    ),
    "LayerNorm of the stream itself, before attention": (
        "H = self.ln1(H)\nH = H + self.attn(H)[0]\n" + PRE_NORM_FFN,
        "before attention you normalize the stream itself",
        "exb.normed_stream_attn",
    ),
    "LayerNorm of the stream itself, before the feed-forward layer": (
        PRE_NORM_ATTENTION + "\nH = self.ln2(H)\nreturn H + self.ffn(H)\n",
        "before the feed-forward layer you normalize the stream itself",
        "exb.normed_stream_ffn",
    ),
    "LayerNorm on the sublayer outputs": (
        block("H = H + self.ln1(self.attn(H)[0])", "return H + self.ln2(self.ffn(H))"),
        "normalizes the sublayer's output",
        "exb.norm_after_sublayer",
    ),
    "LayerNorms swapped": (
        block("H = H + self.attn(self.ln2(H))[0]", "return H + self.ffn(self.ln1(H))"),
        "swapped",
        "exb.swapped_norms",
    ),
    "feed-forward layer reads the block's input": (
        block("H1 = H + self.attn(self.ln1(H))[0]", "return H1 + self.ffn(self.ln2(H))"),
        "LN2 of the block's input H",
        "exb.ffn_reads_input",
    ),
    "second residual adds the block's input": (
        block("H1 = H + self.attn(self.ln1(H))[0]", "return H + self.ffn(self.ln2(H1))"),
        "adds the block's input H instead of H'",
        "exb.ffn_residual_adds_input",
    ),
    "no LayerNorm before the feed-forward layer": (
        block(PRE_NORM_ATTENTION, "return H + self.ffn(H)"),
        "reads H' without LayerNorm",
        "exb.no_ln2",
    ),
    "no LayerNorm before attention": (
        block("H = H + self.attn(H)[0]", PRE_NORM_FFN),
        "attention reads H without LayerNorm",
        "exb.no_ln1",
    ),
    "LayerNorm over positions and features": (
        block(
            "H = H + self.attn(torch.nn.functional.layer_norm(H, H.shape[-2:]))[0]", PRE_NORM_FFN
        ),
        "only attention may mix positions",
        "exb.mixes_positions",
    ),
    "in-place residual": (
        block("H += self.attn(self.ln1(H))[0]", PRE_NORM_FFN),
        "in place",
        "exb.in_place_add",
    ),
    "attention pair not unpacked": (
        block("H = H + self.attn(self.ln1(H))", PRE_NORM_FFN),
        "Unpack it first",
        "exb.pair_not_unpacked",
    ),
    "returns a pair": (
        block(PRE_NORM_ATTENTION, "return H + self.ffn(self.ln2(H)), None"),
        "the new H only",
        "exb.returns_tuple",
    ),
}

CORRECT_A = {
    "contiguous().view": mha(merge="V_bar.transpose(1, 2).contiguous().view(B, T, d_model)"),
    "unflatten and flatten": mha(
        split="X.unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)",
        merge="V_bar.transpose(1, 2).flatten(-2)",
    ),
    "permute": mha(
        split="X.reshape(B, T, self.n_heads, self.d_k).permute(0, 2, 1, 3)",
        merge="V_bar.permute(0, 2, 1, 3).reshape(B, T, d_model)",
    ),
    "own attention with einsum": mha(
        attention=(
            'scores = torch.einsum("bhtd,bhsd->bhts", Q, K) / self.d_k ** 0.5\n'
            "allowed = torch.ones(T, T, dtype=torch.bool).tril()\n"
            'A = torch.softmax(torch.where(allowed, scores, float("-inf")), dim=-1)\n'
            'V_bar = torch.einsum("bhts,bhsd->bhtd", A, V)'
        )
    ),
    "a loop over the heads": """
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
}

CORRECT_B = {
    "the solution's two steps, inlined": block(PRE_NORM_ATTENTION, PRE_NORM_FFN),
    "named intermediate": (
        "attended, _ = self.attn(self.ln1(H))\nH_prime = H + attended\n"
        "return H_prime + self.ffn(self.ln2(H_prime))\n"
    ),
    "functional layer_norm with the block's own parameters": (
        "F = torch.nn.functional\n"
        "X = F.layer_norm(H, (H.shape[-1],), self.ln1.weight, self.ln1.bias, self.ln1.eps)\n"
        "H = H + self.attn(X)[0]\n"
        "X = F.layer_norm(H, (H.shape[-1],), self.ln2.weight, self.ln2.bias, self.ln2.eps)\n"
        "return H + self.ffn(X)\n"
    ),
}


def run_block(body: str | None = None) -> dict:
    """The block exercise runs after Challenge A's solution: MyBlock builds a
    MyMultiHeadAttention."""
    return run_exercise(*EXB, body, before=(EXA[1],))


@pytest.mark.parametrize("name", MUTANTS_A)
def test_attention_mutant_fails_with_its_diagnosis(name, capsys):
    body, diagnosis, expected_code = MUTANTS_A[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*EXA, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", MUTANTS_B)
def test_block_mutant_fails_with_its_diagnosis(name, capsys):
    body, diagnosis, expected_code = MUTANTS_B[name]
    with pytest.raises(CheckFailed) as failure:
        run_block(body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", CORRECT_A)
def test_correct_attention_variant_passes(name, capsys):
    run_exercise(*EXA, CORRECT_A[name])
    assert capsys.readouterr().out.count("✅") == 2  # visible checks and hidden tests


@pytest.mark.parametrize("name", CORRECT_B)
def test_correct_block_variant_passes(name, capsys):
    run_block(CORRECT_B[name])
    assert capsys.readouterr().out.count("✅") == 2


def test_block_is_graded_without_counting_a_wrong_attention_layer(capsys):
    """A broken Challenge A (no causal mask) does not fail Challenge B's checkpoint."""
    namespace: dict = {"__name__": "__notebook__"}
    leaky = inject(
        cell(STEM, EXA[1]), mha(attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V)")
    )
    for source in (prelude(STEM), leaky, cell(STEM, EXB[1]), cell(STEM, EXB[2])):
        exec(compile(source, f"<{STEM}>", "exec"), namespace)
    assert capsys.readouterr().out.count("✅") == 2


def test_block_check_names_the_missing_attention_cell():
    namespace: dict = {"__name__": "__notebook__"}
    with pytest.raises(CheckFailed, match="run the cell of Challenge A first") as failure:
        for source in (prelude(STEM), cell(STEM, EXB[1]), cell(STEM, EXB[2])):
            exec(compile(source, f"<{STEM}>", "exec"), namespace)
    assert failure.value.code == "exb.attention_cell_not_run"


@pytest.mark.parametrize("exercise", ["A", "B"])
def test_solution_passes_and_stub_is_not_done(exercise, capsys):
    run = (lambda body=None: run_exercise(*EXA, body)) if exercise == "A" else run_block
    run()
    assert capsys.readouterr().out.count("✅") == 2
    with pytest.raises(NotDoneYet, match="not done yet") as failure:
        run(NOT_DONE)
    assert failure.value.code.endswith(".not_done")
    assert failure.value.code == f"ex{exercise.lower()}.not_done"
