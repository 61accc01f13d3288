"""Bug zoo of notebook 05 (heads): Exercise 5, mean_attention_distance."""

from maintainer.zoo import Mistake, Right
from transformer_lab.catalogue import BY_NAME

EX5 = BY_NAME["ex5"]

OFFSETS = """
T = A.shape[-1]
positions = torch.arange(T, device=A.device)
offsets = positions[:, None] - positions[None, :]
"""


def distance(result: str, offsets: str = OFFSETS) -> str:
    return offsets + f"return {result}\n"


MISTAKES = {
    "mean over all T x T cells": Mistake(
        EX5,
        distance("(A * offsets).mean(dim=(-2, -1))"),
        "ex5.mean_over_keys",
        "counts the masked future cells",
    ),
    "mean over keys, then mean over queries": Mistake(
        EX5,
        distance("(A * offsets).mean(dim=-1).mean(dim=-1)"),
        "ex5.mean_over_keys",
        "mean over the keys where you need a sum",
    ),
    "|t - i| including the future cells, divided by T * T": Mistake(
        EX5,
        distance("(A * offsets.abs()).sum(dim=(-2, -1)) / (T * T)"),
        "ex5.mean_over_keys",
        "counts the masked future cells",
    ),
    "divided by the number of allowed cells": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=(-2, -1)) / (T * (T + 1) / 2)"),
        "ex5.divided_by_allowed_cells",
        "number of allowed cells",
    ),
    "mean over the allowed keys of each query": Mistake(
        EX5,
        distance("((A * offsets).sum(dim=-1) / torch.arange(1, T + 1)).mean(dim=-1)"),
        "ex5.divided_by_keys_per_query",
        "t + 1 keys it may read",
    ),
    "distance i - t": Mistake(
        EX5,
        distance("(A * -offsets).sum(dim=-1).mean(dim=-1)"),
        "ex5.wrong_sign",
        "wrong sign",
    ),
    "A transposed": Mistake(
        EX5,
        distance("(A.transpose(-2, -1) * offsets).sum(dim=-1).mean(dim=-1)"),
        "ex5.wrong_sign",
        "A is transposed",
    ),
    "unweighted |t - i| over the whole matrix": Mistake(
        EX5,
        distance("offsets.abs().float().mean() + torch.zeros(A.shape[:-2])"),
        "ex5.unweighted_all_cells",
        "without weighting each one by the attention weight",
    ),
    "unweighted t - i over the allowed keys": Mistake(
        EX5,
        distance(
            "(offsets.clamp(min=0).float().sum(-1) / torch.arange(1, T + 1)).mean()"
            " + torch.zeros(A.shape[:-2])"
        ),
        "ex5.unweighted_allowed_keys",
        "without weighting each one by the attention weight",
    ),
    "sum over queries instead of mean": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=-1).sum(dim=-1)"),
        "ex5.summed_over_queries",
        "sum over the queries instead of averaging",
    ),
    "only the keys reduced": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=-1)"),
        "ex5.only_keys_reduced",
        "reduced only one of the two last axes",
    ),
    "leading axes reduced too": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=-1).mean()"),
        "ex5.leading_axes_reduced",
        "reduced every axis",
    ),
    "wrong axis for the queries": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=-1).mean(dim=0)"),
        "ex5.wrong_shape",
        "Reduce exactly the last two axes",
    ),
    "returns a Python float": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=-1).mean().item()"),
        "ex5.not_a_tensor",
        "return a torch.Tensor",
    ),
    "float32 result for float64 A": Mistake(
        EX5,
        distance("(A.float() * offsets).sum(dim=-1).mean(dim=-1)"),
        "ex5.dtype_not_kept",
        "Keep A's dtype",
    ),
    "changes A in place": Mistake(
        EX5,
        OFFSETS + "A *= offsets\nreturn A.sum(dim=-1).mean(dim=-1)\n",
        "ex5.modified_input",
        "in place",
    ),
    # A GPU session's slips (the check simulates the GPU on the CPU).
    "offsets made on the CPU, the hint without its device": Mistake(
        EX5,
        distance(
            "(A * offsets).sum(dim=-1).mean(dim=-1)",
            "T = A.shape[-1]\npositions = torch.arange(T)\n"
            "offsets = positions[:, None] - positions[None, :]\n",
        ),
        "ex5.device_mismatch",
        ("mixes tensors of two devices", "torch.arange(T, device=A.device)"),
    ),
    "result moved to the CPU": Mistake(
        EX5,
        distance("(A * offsets).sum(dim=-1).mean(dim=-1).cpu()"),
        "ex5.result_not_on_device",
        "your result is on the CPU",
    ),
    # One case for each code the cases above do not reach.
    "Ex5: an integer result": Mistake(
        EX5,
        "T = A.shape[-1]\nt = torch.arange(T)\noffsets = t[:, None] - t[None, :]\n"
        "return (A * offsets).sum(-1).mean(-1).round().long()",
        "ex5.integer_result",
    ),
    "Ex5: distances averaged over the allowed cells, unweighted": Mistake(
        EX5,
        "T = A.shape[-1]\nt = torch.arange(T, dtype=A.dtype)\n"
        "offsets = (t[:, None] - t[None, :]).clamp(min=0)\n"
        "return torch.zeros(A.shape[:-2], dtype=A.dtype) + offsets.sum() / (T * (T + 1) / 2)",
        "ex5.unweighted_allowed_cells",
    ),
}

RIGHT = {
    "einsum": Right(EX5, distance('torch.einsum("...ti,ti->...", A, offsets.to(A.dtype)) / T')),
    "sum over queries first": Right(EX5, distance("(A * offsets).sum(dim=-2).mean(dim=-1)")),
    "|t - i| with float offsets": Right(
        EX5,
        distance(
            "(A * offsets.abs()).sum(dim=-1).mean(dim=-1)",
            "T = A.shape[-1]\n"
            "positions = torch.arange(T, dtype=A.dtype, device=A.device)\n"
            "offsets = positions[:, None] - positions[None, :]\n",
        ),
    ),
    "tril of the offsets": Right(EX5, distance("(A * offsets.tril()).sum(-1).sum(-1) / T")),
    "explicit loops": Right(
        EX5,
        """
        T = A.shape[-1]
        total = torch.zeros(A.shape[:-2], dtype=A.dtype, device=A.device)
        for t in range(T):
            for i in range(t + 1):
                total = total + A[..., t, i] * (t - i)
        return total / T
        """,
    ),
}

EXERCISES = (EX5,)
