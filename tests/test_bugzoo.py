"""The bug zoo: each usual mistake, injected into its exercise, fails with the matching diagnosis;
each correct variant passes. Rows: ((notebook, exercise cell, checkpoint cell), injected code,
diagnosis, mistake code); the failure's message holds the diagnosis and its .code is the code."""

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
        "ex1.softmax_wrong_axis",
    ),
    "no 1/sqrt(d_k)": (
        EX1,
        attention(scores="Q @ K.transpose(-2, -1)"),
        "not divided by sqrt(d_k)",
        "ex1.no_sqrt_dk",
    ),
    "dividing by d_k": (
        EX1,
        attention(scores="Q @ K.transpose(-2, -1) / d_k"),
        "divided by d_k instead",
        "ex1.divided_by_d_k",
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
        "ex1.mask_after_softmax",
    ),
    "mask inverted": (
        EX1,
        attention(mask='scores = scores.masked_fill(allowed, float("-inf"))'),
        "inverted",
        "ex1.mask_inverted",
    ),
    "NaN from 0 * (-inf)": (
        EX1,
        attention(mask='scores = scores + (~allowed).float() * float("-inf")'),
        "0 * (-inf)",
        "ex1.not_finite",
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
        "ex1.modified_input",
    ),
    "K.T with leading dims": (
        EX1,
        attention(scores="Q @ K.T / math.sqrt(d_k)"),
        "K.transpose(-2, -1)",
        "ex1.shapes_do_not_match",
    ),
    "returns A only": (
        EX1,
        attention().replace("return A @ V, A", "return A"),
        "pair (V_bar, A)",
        "ex1.not_a_pair",
    ),
    "miscount: no position table": (
        EX0,
        'return 824_897 - 128 * 128, ("B", "n_heads", "T", "d_k")',
        "position table",
        "ex0.count_without_positions",
    ),
    "miscount: biases on W_Q, W_K, W_V": (
        EX0,
        'return 824_897 + 12_288, ("B", "n_heads", "T", "d_k")',
        "biases on W_Q",
        "ex0.count_with_qkv_biases",
    ),
    "heads not a batch dimension": (
        EX0,
        'return 824_897, ("B", "T", "n_heads", "d_k")',
        "batch dimension",
        "ex0.wrong_q_shape",
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
    (stem, exercise, check), body, diagnosis, expected_code = MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(stem, exercise, check, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_passes(name, capsys):
    run_exercise(*EX1, CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 2  # visible checks and hidden tests


@pytest.mark.parametrize("exercise", [EX0, EX1])
def test_solution_passes_and_stub_is_not_done(exercise, capsys):
    run_exercise(*exercise)
    assert "✅" in capsys.readouterr().out
    with pytest.raises(NotDoneYet, match="not done yet") as failure:
        run_exercise(*exercise, 'raise NotImplementedError("not done yet")')
    assert failure.value.code.endswith(".not_done"), str(failure.value)


EX4 = ("04_training", "ex4_metrics", "ex4_check")
PICKED = """
log_probs = torch.log_softmax(logits, dim=-1)
picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
"""
METRIC_MUTANTS = {
    "summed over positions": (
        PICKED + "nats = -picked.sum(-1).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "summed over the positions",
        "ex4.summed_over_positions",
    ),
    "log base 2 for nats": (
        PICKED + "nats = -(picked / math.log(2)).mean().item()\n"
        "return nats, 2 ** nats, nats / math.log(2)",
        "in bits (log base 2)",
        "ex4.loss_in_bits",
    ),
    "bits as nats * ln 2": (
        PICKED + "nats = -picked.mean().item()\nreturn nats, math.exp(nats), nats * math.log(2)",
        "nats * ln 2",
        "ex4.bits_times_ln2",
    ),
    "perplexity as 2 ** nats": (
        PICKED + "nats = -picked.mean().item()\nreturn nats, 2 ** nats, nats / math.log(2)",
        "2 ** nats",
        "ex4.perplexity_base_2",
    ),
    "sign flipped": (
        PICKED + "nats = picked.mean().item()\nreturn nats, math.exp(nats), nats / math.log(2)",
        "sign is flipped",
        "ex4.sign_flipped",
    ),
    "raw logits": (
        "nats = -logits.gather(-1, targets.unsqueeze(-1)).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "raw logits",
        "ex4.raw_logits",
    ),
    "tensors returned": (
        PICKED + "nats = -picked.mean()\nreturn nats, nats.exp(), nats / math.log(2)",
        "Python floats",
        "ex4.not_floats",
    ),
}
METRIC_CORRECT = {
    "cross_entropy flattened": (
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()"
        "\nreturn nats, math.exp(nats), nats / math.log(2)"
    ),
    "cross_entropy on axis 1": (
        "nats = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets).item()\n"
        "return nats, math.exp(nats), math.log2(math.exp(nats))"
    ),
}


@pytest.mark.parametrize("name", METRIC_MUTANTS)
def test_metric_mutant_fails_with_its_diagnosis(name, capsys):
    body, diagnosis, expected_code = METRIC_MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*EX4, body)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", METRIC_CORRECT)
def test_metric_correct_variant_passes(name, capsys):
    run_exercise(*EX4, METRIC_CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 2


def test_metric_solution_passes_and_stub_is_not_done(capsys):
    run_exercise(*EX4)
    with pytest.raises(NotDoneYet) as failure:
        run_exercise(*EX4, 'raise NotImplementedError("not done yet")')
    assert failure.value.code.endswith(".not_done"), str(failure.value)
