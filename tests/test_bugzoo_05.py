"""Bug zoo of notebook 05: each usual mistake in mean_attention_distance, injected into the
exercise, fails with the matching diagnosis; each correct variant passes."""

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
    ),
    "mean over keys, then mean over queries": (
        distance("(A * offsets).mean(dim=-1).mean(dim=-1)"),
        "mean over the keys where you need a sum",
    ),
    "|t - i| including the future cells, divided by T * T": (
        distance("(A * offsets.abs()).sum(dim=(-2, -1)) / (T * T)"),
        "counts the masked future cells",
    ),
    "divided by the number of allowed cells": (
        distance("(A * offsets).sum(dim=(-2, -1)) / (T * (T + 1) / 2)"),
        "number of allowed cells",
    ),
    "mean over the allowed keys of each query": (
        distance("((A * offsets).sum(dim=-1) / torch.arange(1, T + 1)).mean(dim=-1)"),
        "t + 1 keys it may read",
    ),
    "distance i - t": (
        distance("(A * -offsets).sum(dim=-1).mean(dim=-1)"),
        "wrong sign",
    ),
    "A transposed": (
        distance("(A.transpose(-2, -1) * offsets).sum(dim=-1).mean(dim=-1)"),
        "A is transposed",
    ),
    "unweighted |t - i| over the whole matrix": (
        distance("offsets.abs().float().mean() + torch.zeros(A.shape[:-2])"),
        "without weighting each one by the attention weight",
    ),
    "unweighted t - i over the allowed keys": (
        distance(
            "(offsets.clamp(min=0).float().sum(-1) / torch.arange(1, T + 1)).mean()"
            " + torch.zeros(A.shape[:-2])"
        ),
        "without weighting each one by the attention weight",
    ),
    "sum over queries instead of mean": (
        distance("(A * offsets).sum(dim=-1).sum(dim=-1)"),
        "sum over the queries instead of averaging",
    ),
    "only the keys reduced": (
        distance("(A * offsets).sum(dim=-1)"),
        "reduced only one of the two last axes",
    ),
    "leading axes reduced too": (
        distance("(A * offsets).sum(dim=-1).mean()"),
        "reduced every axis",
    ),
    "wrong axis for the queries": (
        distance("(A * offsets).sum(dim=-1).mean(dim=0)"),
        "Reduce exactly the last two axes",
    ),
    "returns a Python float": (
        distance("(A * offsets).sum(dim=-1).mean().item()"),
        "return a torch.Tensor",
    ),
    "float32 result for float64 A": (
        distance("(A.float() * offsets).sum(dim=-1).mean(dim=-1)"),
        "Keep A's dtype",
    ),
    "changes A in place": (
        OFFSETS + "A *= offsets\nreturn A.sum(dim=-1).mean(dim=-1)\n",
        "in place",
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
def test_mutant_fails_with_its_diagnosis(name, capsys):
    body, diagnosis = MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*EX5, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_passes(name, capsys):
    run_exercise(*EX5, CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 2  # visible checks and hidden tests


def test_solution_passes_and_stub_is_not_done(capsys):
    run_exercise(*EX5)
    assert capsys.readouterr().out.count("✅") == 2
    with pytest.raises(NotDoneYet, match="not done yet"):
        run_exercise(*EX5, 'raise NotImplementedError("not done yet")')
