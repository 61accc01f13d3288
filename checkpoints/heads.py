"""Checks of notebook 05: the mean attention distance of a head (Exercise 5).

Every case is built here, by hand or from a seeded generator, so the check needs no trained
model and no other cell of the notebook.
"""

from __future__ import annotations

import torch

from ._core import (
    CheckFailed,
    call,
    expect_unchanged,
    judge,
    passed,
    snapshot,
)
from ._devices import DEVICE, DeviceMismatch, on_host, other_device
from .codes import EX5

_arange = torch.arange
_ones = torch.ones
_zeros = torch.zeros
_eye = torch.eye
_softmax = torch.softmax
_randn = torch.randn
_float64 = torch.float64


def _offsets(T: int) -> torch.Tensor:
    """(T, T) float64: entry (t, i) is t - i, how many positions query t looks back to key i."""
    positions = _arange(T, dtype=_float64)
    return positions[:, None] - positions[None, :]


def _allowed(T: int) -> torch.Tensor:
    return _ones(T, T, dtype=torch.bool).tril()


def _reference(A: torch.Tensor) -> torch.Tensor:
    """Mean over queries t of sum_i A[t, i] (t - i), in float64."""
    return (A.double() * _offsets(A.shape[-1])).sum(-1).mean(-1)


def _mistakes(A: torch.Tensor) -> dict[str, tuple[str, torch.Tensor]]:
    """{name: (diagnosis, output)}: what the usual wrong versions return on A, in float64."""
    T = A.shape[-1]
    A = A.double()
    offsets = _offsets(T)
    weighted = A * offsets  # (..., T, T)
    total = weighted.sum((-2, -1))
    n_allowed = T * (T + 1) / 2
    keys_per_query = _arange(1, T + 1, dtype=_float64)  # query t may read t + 1 keys
    lead = A.shape[:-2]
    return {
        "wrong_sign": (
            "the distance has the wrong sign: query t reading key i <= t looks back t - i "
            "positions, so use (t - i), not (i - t); or A is transposed (rows of A are "
            "queries, columns are keys)",
            -total / T,
        ),
        "mean_over_keys": (
            "you take a mean over the keys where you need a sum: averaging over all T x T "
            "cells (or over all T keys of each row) counts the masked future cells i > t in "
            "the denominator. The weights of a row already sum to 1, so the weighted sum over "
            "i is already that query's average distance; then average over the queries t only",
            total / (T * T),
        ),
        "divided_by_allowed_cells": (
            "you divide by the number of allowed cells T(T+1)/2: that averages over the cells "
            "of the triangle, not over the queries. Sum over the keys i (the weights already "
            "sum to 1), then average over the T queries",
            total / n_allowed,
        ),
        "divided_by_keys_per_query": (
            "you divide each query's weighted sum by the t + 1 keys it may read: the weights "
            "alpha_{t,i} already sum to 1 over the keys, so sum_i alpha_{t,i} (t - i) is "
            "already an average. Sum over the keys, average over the queries",
            (weighted.sum(-1) / keys_per_query).mean(-1),
        ),
        "summed_over_queries": (
            "you sum over the queries instead of averaging: divide by T (use .mean over the "
            "query axis after summing over the keys)",
            total,
        ),
        **_unweighted_mistakes(T, lead, keys_per_query),
    }


def _unweighted_mistakes(T: int, lead, keys_per_query) -> dict[str, tuple[str, torch.Tensor]]:
    """Averages of the distances that forget to weight them by A: constants, whatever A is."""
    offsets, allowed = _offsets(T), _allowed(T)
    n_allowed = T * (T + 1) / 2

    def constant(value: float) -> torch.Tensor:
        return _zeros(lead, dtype=_float64) + value

    unweighted_all = offsets.abs().mean().item()
    unweighted_rows = (offsets * allowed).sum(-1).div(keys_per_query).mean().item()
    unweighted_cells = (offsets * allowed).sum().item() / n_allowed
    return {
        "unweighted_all_cells": (
            "the result does not depend on A at all: you average the distances |t - i| "
            "without weighting each one by the attention weight A[t, i]",
            constant(unweighted_all),
        ),
        "unweighted_allowed_keys": (
            "the result does not depend on A at all: you average the distances t - i over the "
            "allowed keys without weighting each one by the attention weight A[t, i]",
            constant(unweighted_rows),
        ),
        "unweighted_allowed_cells": (
            "the result does not depend on A at all: you average the distances t - i over the "
            "allowed cells without weighting each one by the attention weight A[t, i]",
            constant(unweighted_cells),
        ),
    }


def _uniform(T: int) -> torch.Tensor:
    """Row t spreads its weight evenly over keys 0..t: mean distance t/2 for that row."""
    allowed = _allowed(T).float()
    return allowed / allowed.sum(-1, keepdim=True)


def _identity(T: int) -> torch.Tensor:
    """Every query reads only itself: distance 0."""
    return _eye(T)


def _first_key(T: int) -> torch.Tensor:
    """Every query reads only the first character: row t has distance t."""
    A = _zeros(T, T)
    A[:, 0] = 1.0
    return A


def _random_causal(seed: int, lead: tuple, T: int, dtype=torch.float32) -> torch.Tensor:
    """A softmax over random scores, masked causally, like the model's A."""
    g = torch.Generator().manual_seed(seed)
    scores = 2.0 * _randn(*lead, T, T, generator=g, dtype=_float64)
    scores = scores.masked_fill(~_allowed(T), float("-inf"))
    return _softmax(scores, dim=-1).to(dtype)


def _shape_hint(A: torch.Tensor, got: tuple) -> tuple[str, str]:
    """(name, hint) of the likely mistake behind a result of shape `got`."""
    lead, T = tuple(A.shape[:-2]), A.shape[-1]
    if got == (*lead, T):
        return "only_keys_reduced", (
            " You reduced only one of the two last axes: sum over the keys (dim=-1), then "
            "average over the queries (dim=-1 again, or dim=-2 before the sum)."
        )
    if got == () and lead:
        return "leading_axes_reduced", (
            " You reduced every axis to one number: keep the leading axes (layer, batch, head, "
            "...) and reduce only the last two, e.g. .sum(dim=-1).mean(dim=-1)."
        )
    return "wrong_shape", (
        " Reduce exactly the last two axes (keys, then queries) and keep all leading axes."
    )


def _expect_form(result, A: torch.Tensor, case: str) -> None:
    """One floating-point number per head, in A's dtype."""
    shape = tuple(A.shape[:-2])
    if type(result) is not torch.Tensor:
        raise CheckFailed(
            f"{EX5} ({case}): return a torch.Tensor of shape {shape} (one number per head), "
            f"got {type(result).__name__}. Avoid .item() and Python loops that build floats.",
            EX5.code("not_a_tensor"),
        )
    if tuple(result.shape) != shape:
        name, hint = _shape_hint(A, tuple(result.shape))
        raise CheckFailed(
            f"{EX5} ({case}): for A of shape {tuple(A.shape)} the result should have shape "
            f"{shape}, got {tuple(result.shape)}." + hint,
            EX5.code(name),
        )
    if not result.is_floating_point():
        raise CheckFailed(
            f"{EX5} ({case}): the result has dtype {result.dtype}; a mean distance is a "
            "floating-point number. Multiply the weights by the distances as floats.",
            EX5.code("integer_result"),
        )
    if result.dtype != A.dtype:
        raise CheckFailed(
            f"{EX5} ({case}): A is {A.dtype} but the result is {result.dtype}. Keep A's dtype: "
            "build the distances with torch.arange(T, dtype=A.dtype, device=A.device) or let "
            "PyTorch promote an integer arange.",
            EX5.code("dtype_not_kept"),
        )


def _call_on_gpu(fn, A: torch.Tensor, case: str):
    """The student's function as a GPU session runs it (simulated on this CPU by other_device):
    A on the GPU, new tensors on the CPU unless they name a device. Returns the result on the
    CPU, for the comparisons."""
    try:
        with other_device():
            result = call(EX5, fn, A.to(DEVICE))
            on_cpu = type(result) is torch.Tensor and on_host(result)
            result = result.cpu() if type(result) is torch.Tensor else result
    except CheckFailed as failure:
        if not isinstance(failure.__cause__, DeviceMismatch):
            raise
        raise CheckFailed(
            f"{EX5} ({case}): your function mixes tensors of two devices: "
            f"{failure.__cause__}. On a GPU (Colab's T4) the model's A lives on the GPU, and a "
            "tensor made without device= on the CPU, so the notebook's next cell would fail "
            "there. Make the offsets on A's device: torch.arange(T, device=A.device).",
            EX5.code("device_mismatch"),
        ) from None
    if on_cpu:
        raise CheckFailed(
            f"{EX5} ({case}): A is on the GPU but your result is on the CPU. Return it on A's "
            "device: build it from A and tensors made with device=A.device, without .cpu(), "
            ".tolist() or torch.tensor(...) of Python numbers.",
            EX5.code("result_not_on_device"),
        )
    return result


def _compare(
    fn, A: torch.Tensor, case: str, known: str | None = None, on_gpu: bool = False
) -> None:
    exercise = EX5.at(case)
    before = snapshot(A)
    result = _call_on_gpu(fn, A, case) if on_gpu else call(EX5, fn, A)
    expect_unchanged(
        exercise,
        before,
        (A,),
        "your function changed A in place (an operation ending in `_`, or `*=`). Build new "
        "tensors: the notebook reuses A for the plots.",
    )
    _expect_form(result, A, case)
    expected = _reference(A)
    tolerance = {"atol": 1e-4, "rtol": 1e-4} if A.dtype != _float64 else {}
    got = result.double()

    def where() -> str:
        if not known:
            return ""
        shown = (
            f"{got.item():.4g}"
            if got.numel() == 1
            else str([round(v, 4) for v in got.flatten().tolist()])
        )
        return f" Here the answer is {known}; you returned {shown}."

    judge(
        exercise,
        got,
        expected,
        lambda: {
            name: (f"{diagnosis}.{where()}".rstrip("."), wrong)
            for name, (diagnosis, wrong) in _mistakes(A).items()
        },
        nan_hint="Multiplying A by distances should never produce one: check for a division "
        "by zero or a log.",
        otherwise=lambda gap: (
            f"your result differs from the mean over queries t of sum_i A[t, i] (t - i) by up "
            f"to {gap:.3g}. Build the (T, T) matrix of offsets t - i from "
            "torch.arange(T, device=A.device) "
            "(queries down the rows, keys across the columns), weight it by A, sum over the "
            "keys and average over the queries." + where()
        ),
        **tolerance,
    )


def exercise_5(mean_attention_distance) -> None:
    fn = mean_attention_distance
    T = 6
    _compare(
        fn,
        _uniform(T),
        "uniform causal rows, T = 6",
        "1.25: row t reads keys 0..t evenly, so its distance is t/2, and (0+0.5+...+2.5)/6 = 1.25",
    )
    _compare(fn, _identity(T), "identity: every query reads itself", "0.0")
    _compare(
        fn,
        _first_key(T),
        "all weight on the first key, T = 6",
        "2.5: row t reads only key 0, t positions back, and (0+1+...+5)/6 = 2.5",
    )
    hand_built = torch.stack([_uniform(T), _identity(T), _first_key(T)])
    _compare(fn, hand_built, "the three matrices stacked, shape (3, 6, 6)", "(1.25, 0.0, 2.5)")
    _compare(fn, _random_causal(0, (), 10), "random causal A, T = 10")
    _compare(
        fn,
        _random_causal(1, (4, 2, 4), 16),
        "random causal A shaped like the model's, (n_layers, B, n_heads, T, T) = (4, 2, 4, 16, 16)",
    )
    _compare(fn, _random_causal(2, (2, 3), 8), "A on a GPU, simulated", on_gpu=True)
    passed(
        EX5,
        f"{EX5}: mean attention distance matches mean_t sum_i A[t, i] (t - i): 1.25 for "
        "uniform rows, 0 for the identity, 2.5 for the first key, one number per head, on A's "
        "device.",
    )
