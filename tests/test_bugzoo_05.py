"""Bug zoo of notebook 05: each usual mistake in mean_attention_distance, injected into the
exercise, fails with the matching diagnosis and mistake code; each correct variant passes."""

import pytest
from notebook_harness import run_exercise

from checkpoints import CheckFailed, NotDoneYet

EX5 = ("05_heads", "ex5_mean_distance", "ex5_check")

OFFSETS = """
T = A.shape[-1]
positions = torch.arange(T)
offsets = positions[:, None] - positions[None, :]
"""


def distance(result: str, offsets: str = OFFSETS) -> str:
    return offsets + f"return {result}\n"


MUTANTS = {
    "mean over all T x T cells": (
        distance("(A * offsets).mean(dim=(-2, -1))"),
        "counts the masked future cells",
        "ex5.mean_over_keys",
    ),
    "mean over keys, then mean over queries": (
        distance("(A * offsets).mean(dim=-1).mean(dim=-1)"),
        "mean over the keys where you need a sum",
        "ex5.mean_over_keys",
    ),
    "|t - i| including the future cells, divided by T * T": (
        distance("(A * offsets.abs()).sum(dim=(-2, -1)) / (T * T)"),
        "counts the masked future cells",
        "ex5.mean_over_keys",
    ),
    "divided by the number of allowed cells": (
        distance("(A * offsets).sum(dim=(-2, -1)) / (T * (T + 1) / 2)"),
        "number of allowed cells",
        "ex5.divided_by_allowed_cells",
    ),
    "mean over the allowed keys of each query": (
        distance("((A * offsets).sum(dim=-1) / torch.arange(1, T + 1)).mean(dim=-1)"),
        "t + 1 keys it may read",
        "ex5.divided_by_keys_per_query",
    ),
    "distance i - t": (
        distance("(A * -offsets).sum(dim=-1).mean(dim=-1)"),
        "wrong sign",
        "ex5.wrong_sign",
    ),
    "A transposed": (
        distance("(A.transpose(-2, -1) * offsets).sum(dim=-1).mean(dim=-1)"),
        "A is transposed",
        "ex5.wrong_sign",
    ),
    "unweighted |t - i| over the whole matrix": (
        distance("offsets.abs().float().mean() + torch.zeros(A.shape[:-2])"),
        "without weighting each one by the attention weight",
        "ex5.unweighted_all_cells",
    ),
    "unweighted t - i over the allowed keys": (
        distance(
            "(offsets.clamp(min=0).float().sum(-1) / torch.arange(1, T + 1)).mean()"
            " + torch.zeros(A.shape[:-2])"
        ),
        "without weighting each one by the attention weight",
        "ex5.unweighted_allowed_keys",
    ),
    "sum over queries instead of mean": (
        distance("(A * offsets).sum(dim=-1).sum(dim=-1)"),
        "sum over the queries instead of averaging",
        "ex5.summed_over_queries",
    ),
    "only the keys reduced": (
        distance("(A * offsets).sum(dim=-1)"),
        "reduced only one of the two last axes",
        "ex5.only_keys_reduced",
    ),
    "leading axes reduced too": (
        distance("(A * offsets).sum(dim=-1).mean()"),
        "reduced every axis",
        "ex5.leading_axes_reduced",
    ),
    "wrong axis for the queries": (
        distance("(A * offsets).sum(dim=-1).mean(dim=0)"),
        "Reduce exactly the last two axes",
        "ex5.wrong_shape",
    ),
    "returns a Python float": (
        distance("(A * offsets).sum(dim=-1).mean().item()"),
        "return a torch.Tensor",
        "ex5.not_a_tensor",
    ),
    "float32 result for float64 A": (
        distance("(A.float() * offsets).sum(dim=-1).mean(dim=-1)"),
        "Keep A's dtype",
        "ex5.dtype_not_kept",
    ),
    "changes A in place": (
        OFFSETS + "A *= offsets\nreturn A.sum(dim=-1).mean(dim=-1)\n",
        "in place",
        "ex5.modified_input",
    ),
}

CORRECT = {
    "einsum": distance('torch.einsum("...ti,ti->...", A, offsets.to(A.dtype)) / T'),
    "sum over queries first": distance("(A * offsets).sum(dim=-2).mean(dim=-1)"),
    "|t - i| with float offsets": distance(
        "(A * offsets.abs()).sum(dim=-1).mean(dim=-1)",
        "T = A.shape[-1]\n"
        "positions = torch.arange(T, dtype=A.dtype)\n"
        "offsets = positions[:, None] - positions[None, :]\n",
    ),
    "tril of the offsets": distance("(A * offsets.tril()).sum(-1).sum(-1) / T"),
    "explicit loops": """
        T = A.shape[-1]
        total = torch.zeros(A.shape[:-2], dtype=A.dtype)
        for t in range(T):
            for i in range(t + 1):
                total = total + A[..., t, i] * (t - i)
        return total / T
        """,
}


@pytest.mark.parametrize("name", MUTANTS)
def test_mutant_fails_with_its_diagnosis_and_code(name, capsys):
    body, diagnosis, expected_code = MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*EX5, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_passes(name, capsys):
    run_exercise(*EX5, CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 2  # visible checks and hidden tests


def test_solution_passes_and_stub_is_not_done(capsys):
    run_exercise(*EX5)
    assert capsys.readouterr().out.count("✅") == 2
    with pytest.raises(NotDoneYet, match="not done yet") as failure:
        run_exercise(*EX5, 'raise NotImplementedError("not done yet")')
    assert failure.value.code.endswith(".not_done"), failure.value.code
