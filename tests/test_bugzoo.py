"""The bug zoo: each usual mistake, injected into its exercise, fails with the matching diagnosis;
each correct variant passes. Rows: (notebook, exercise cell, checkpoint cell, code, diagnosis)."""

import pytest
from notebook_harness import run_exercise

from checkpoints import CheckFailed, NotDoneYet

EX0 = ("01_attention", "ex0_read_the_model", "ex0_check")
EX1 = ("01_attention", "ex1_attention", "ex1_check")

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


MUTANTS = {
    "softmax over the wrong axis": (
        EX1,
        attention(softmax="torch.softmax(scores, dim=-2)"),
        "wrong axis",
    ),
    "no 1/sqrt(d_k)": (
        EX1,
        attention(scores="Q @ K.transpose(-2, -1)"),
        "not divided by sqrt(d_k)",
    ),
    "dividing by d_k": (
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) / d_k"),
        "divided by d_k instead",
    ),
    "masking after softmax": (
        EX1,
        """
        d_k = Q.shape[-1]
        A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
        if allowed is not None:
            A = A * allowed
        return A @ V, A
        """,
        "after the softmax without renormalising",
    ),
    "mask inverted": (
        EX1,
        attention(mask='scores = scores.masked_fill(allowed, float("-inf"))'),
        "inverted",
    ),
    "NaN from 0 * (-inf)": (
        EX1,
        attention(mask='scores = scores + (~allowed).float() * float("-inf")'),
        "0 * (-inf)",
    ),
    "in-place change of Q": (
        EX1,
        """
        Q /= math.sqrt(Q.shape[-1])
        scores = Q @ K.transpose(-2, -1)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        A = torch.softmax(scores, dim=-1)
        return A @ V, A
        """,
        "in place",
    ),
    "K.T with leading dims": (
        EX1,
        attention(scores="Q @ K.T / math.sqrt(d_k)"),
        "K.transpose(-2, -1)",
    ),
    "returns A only": (EX1, attention().replace("return A @ V, A", "return A"), "pair (V_bar, A)"),
    "miscount: no position table": (
        EX0,
        'return 824_897 - 128 * 128, ("B", "n_heads", "T", "d_k")',
        "position table",
    ),
    "miscount: biases on W_Q, W_K, W_V": (
        EX0,
        'return 824_897 + 12_288, ("B", "n_heads", "T", "d_k")',
        "biases on W_Q",
    ),
    "heads not a batch dimension": (
        EX0,
        'return 824_897, ("B", "T", "n_heads", "d_k")',
        "batch dimension",
    ),
}

CORRECT = {
    "einsum and where": attention(
        scores='torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(d_k)',
        mask='scores = torch.where(allowed, scores, torch.tensor(float("-inf")))',
    ),
    "rsqrt and F.softmax": attention(
        scores="(Q @ K.transpose(-2, -1)) * torch.rsqrt(torch.tensor(float(d_k)))",
        softmax="torch.nn.functional.softmax(scores, dim=-1)",
    ),
    "explicit exponentials": attention(
        softmax="(scores - scores.amax(-1, keepdim=True)).exp() / "
        "(scores - scores.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True)"
    ),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_mutant_fails_with_its_diagnosis(name, capsys):
    (stem, exercise, check), body, diagnosis = MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(stem, exercise, check, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_passes(name, capsys):
    run_exercise(*EX1, CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 2  # visible checks and hidden tests


@pytest.mark.parametrize("exercise", [EX0, EX1])
def test_solution_passes_and_stub_is_not_done(exercise, capsys):
    run_exercise(*exercise)
    assert "✅" in capsys.readouterr().out
    with pytest.raises(NotDoneYet, match="not done yet"):
        run_exercise(*exercise, 'raise NotImplementedError("not done yet")')
