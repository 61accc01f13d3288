"""A piece run as notebook 04 will run it: inside the lab's mini-GPT, forward and backward, in
fp32 and in the T4's half precision.

A piece can pass every numerical case and still not train. A copy that cuts the gradient
(`torch.tensor(scores)`, `.detach()`, a trip through numpy) gives the right numbers and a model
whose projections never learn; a fill of -1e9 is exact in float32 and overflows float16, where
a T4 trains (PyTorch refuses it at the first step). So Exercises 1-3, once their cases pass, train
one step of the model built from the piece (the course's other pieces around it), at the lab's
sizes, and name what would break in 04. On a CPU the half precision is CPU autocast's float16,
which refuses the same fills; on a GPU it is the GPU's own.
"""

from __future__ import annotations

import contextlib
import inspect
import re

import torch
import torch.nn.functional as F

from transformer_lab.model import GPTConfig
from transformer_lab.student import Printed, course_pieces

from ._core import CheckFailed, call, quiet
from .codes import Codes

LAB = GPTConfig()  # d_model 128, n_heads 4, n_layers 4, T_max 128
B = 2
_fork_rng = torch.random.fork_rng
_randint = torch.randint
_generator = torch.Generator
_isfinite = torch.isfinite

# Lines of a function that can cut a gradient, and what to write instead.
_CUTS = re.compile(
    r"torch\.(tensor|as_tensor|from_numpy)\(|\.detach\(|\.data\b|\.numpy\(|no_grad|\.item\(|"
    r"\.tolist\("
)
_KEEP_THE_GRADIENT = (
    "Keep every step a torch operation on the tensors you are given: `.clone()` where you want "
    "a copy (not torch.tensor(...) or torch.as_tensor(...)), and no .detach(), .data or "
    ".numpy() inside the model."
)


def _half_precision() -> tuple[str, contextlib.AbstractContextManager]:
    """(where, autocast) of the half precision 04 trains in on this machine's GPU, or its
    stand-in on a CPU."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return device, torch.autocast(device, dtype=torch.float16)


def trains(exercise: Codes, name: str, fn) -> None:
    """Train one step of the lab's model on `fn` as the piece `name`; fail naming what would
    break in 04. Says how many lines the piece printed meanwhile (04 holds them back)."""
    with _fork_rng(devices=[]):  # the student's random draws stay as they were
        model = course_pieces("").using(name, fn, "this notebook").model(LAB).eval()
    idx = _randint(0, LAB.vocab_size, (B, LAB.T_max), generator=_generator().manual_seed(0))
    _step(exercise.at("inside the model, float32"), model, idx, contextlib.nullcontext(), fn)
    _expect_learning(exercise, name, model, fn)
    device, autocast = _half_precision()
    model.zero_grad(set_to_none=True)
    case = f"inside the model, float16 as on a T4 ({device} autocast)"
    _step(exercise.at(case), model.to(device), idx.to(device), autocast, fn)
    _expect_finite_gradients(exercise.at(case), model)
    _tell_printed(name, model.printed)


def _step(exercise: Codes, model, idx, precision, fn) -> None:
    """Forward and backward on a batch of lab-sized windows: errors named by their cause."""

    def forward_backward():
        with precision:
            logits = model(idx)  # (B, T_max, vocab_size)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), idx.flatten())
        loss.backward()
        return loss.detach()

    loss = call(exercise, forward_backward)
    if not bool(_isfinite(loss)):
        raise CheckFailed(
            f"{exercise}: the loss of one training step is {loss.item()}. Your function gives "
            "right numbers on the checks' small inputs but not on the model's: in half "
            "precision the largest number is 65,504, so an exponential written by hand "
            "(torch.exp of the scores without subtracting their maximum) overflows; use "
            "torch.softmax, which does.",
            exercise.code("not_finite"),
        )


def _expect_learning(exercise: Codes, name: str, model, fn) -> None:
    """The parameters the piece passes a gradient to: W_Q, W_K, W_V through the attention; the
    token and position tables through the embedding."""
    if name == "attention":
        layer = model.blocks[0].attn
        cut = [p for p in ("W_Q", "W_K", "W_V") if _no_gradient(getattr(layer, p).weight)]
        if cut:
            raise CheckFailed(
                f"{exercise}: inside the model no gradient reaches {' and '.join(cut)}: your "
                "attention computes the right numbers from a copy that autograd cannot see "
                f"through{_cutting_line(fn)}, so in 04 these projections would never learn and "
                f"the model would train silently worse. {_KEEP_THE_GRADIENT}",
                exercise.code("gradient_cut"),
            )
    if name == "embedding":
        for table, code in (
            ("pos_emb", "position_table_detached"),
            ("tok_emb", "token_table_detached"),
        ):
            if _no_gradient(getattr(model, table).weight):
                raise CheckFailed(
                    f"{exercise}: inside the model no gradient reaches {table}, so it would "
                    f"never learn{_cutting_line(fn)}. {_KEEP_THE_GRADIENT}",
                    exercise.code(code),
                )


def _no_gradient(weight) -> bool:
    return weight.grad is None or not bool((weight.grad != 0).any())


def _cutting_line(fn) -> str:
    """' (line N: `...`)' of the first line of `fn` that can cut a gradient, or ''."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return ""
    for number, line in enumerate(lines, start):
        if _CUTS.search(line):
            return f" (line {number}: `{line.strip()}`)"
    return ""


def _expect_finite_gradients(exercise: Codes, model) -> None:
    bad = [n for n, p in model.named_parameters() if p.grad is not None and not _finite(p.grad)]
    if bad:
        raise CheckFailed(
            f"{exercise}: the gradients of {', '.join(bad[:3])} hold NaN or infinity after one "
            "step. Something overflows in half precision (largest number 65,504): a fill or a "
            "constant that large, or an exponential written by hand; use float('-inf') and "
            "torch.softmax.",
            exercise.code("not_finite"),
        )


def _finite(t) -> bool:
    return bool(_isfinite(t).all())


def _tell_printed(name: str, printed: Printed) -> None:
    if printed.lines and not quiet():
        print(
            f"Note: your {name} printed {printed.lines:,} lines in one training step of the "
            f"model ({LAB.n_layers} layers). Notebook 04 holds such lines back and counts them; "
            "remove the print once you no longer need it."
        )
