"""Switching heads off: what each head of a trained mini-GPT costs the loss (notebook 05).

A map of attention weights says where a head reads, not whether the prediction needs what it
reads: the lecture's gotcha, "an attention map explains the prediction". Switching one head off
and measuring the loss again tests it. Head r of a layer is switched off by zeroing its slice of
V_bar, the columns r d_k .. (r + 1) d_k - 1, before W_proj mixes the heads (Equation 7). The
hook sits on W_proj, so it works whichever attention function runs inside the layer: PyTorch's
fused kernel, the package's reference or the student's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .model import MiniGPT, MultiHeadAttention

RECORD_KEY = "head_costs"  # where the pipeline records them in a run's results


@contextmanager
def head_switched_off(attention: MultiHeadAttention, head: int) -> Iterator[None]:
    """Within the `with`, head `head` (from 0) of this layer adds nothing: its slice of V_bar
    (B, T, d_model) is zero where W_proj reads it."""
    start = head * attention.d_k

    def zero_the_slice(proj, inputs):
        (V_bar,) = inputs
        kept = torch.ones(V_bar.shape[-1], dtype=V_bar.dtype, device=V_bar.device)
        kept[start : start + attention.d_k] = 0
        return (V_bar * kept,)  # a new tensor: the layer's own V_bar is left as it was

    hook = attention.proj.register_forward_pre_hook(zero_the_slice)
    try:
        yield
    finally:
        hook.remove()


@dataclass(frozen=True)
class HeadCosts:
    """The loss with every head on, and how much it rises when one head alone is switched off."""

    nats: float  # mean loss per predicted character, every head on
    costs: torch.Tensor  # (n_layers, n_heads): the loss with that head off, minus `nats`
    windows: int
    characters: int  # the predictions scored: windows x T

    def costliest(self) -> tuple[int, int]:
        """(layer, head), from 0, of the head whose removal raises the loss most."""
        layer, head = divmod(int(self.costs.argmax()), self.costs.shape[1])
        return layer, head

    def summary(self, distances: torch.Tensor) -> str:
        """One line: the loss, the costliest head and how far back it reads, the head that reads
        furthest back (`distances`, (n_layers, n_heads): Exercise 5's D) and what it costs."""
        n_heads = self.costs.shape[1]
        costly = self.costliest()
        far = divmod(int(distances.argmax()), n_heads)
        return (
            f"Every head on: {self.nats:.3f} nats/char on {self.windows} validation windows "
            f"({self.characters:,} characters). Costliest head off: {_name(*costly)}, "
            f"{self.costs[costly]:+.3f} nats/char, D {distances[costly]:.1f}. Furthest-reading "
            f"head: {_name(*far)}, D {distances[far]:.1f}, {self.costs[far]:+.3f} nats/char."
        )

    def record(self) -> dict:
        """What the pipeline keeps in a run's results (`record(RESULTS, ...)`)."""
        return {
            RECORD_KEY: {
                "nats": self.nats,
                "windows": self.windows,
                "characters": self.characters,
                "costs": self.costs.tolist(),
            }
        }


def _name(layer: int, head: int) -> str:
    return f"layer {layer + 1} · head {head + 1}"  # numbered from 1, as the lecture does


def _loss(model: MiniGPT, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    logits = model(inputs).float()  # (B, T, vocab_size)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()


@torch.no_grad()
def head_ablation(model: MiniGPT, inputs: torch.Tensor, targets: torch.Tensor) -> HeadCosts:
    """The loss of `model` on the windows `inputs` (B, T) with targets (B, T), then again with
    each head switched off in turn: n_layers x n_heads + 1 evaluations, in eval mode."""
    was_training, n_heads = model.training, model.config.n_heads
    model.eval()
    try:
        nats = _loss(model, inputs, targets)
        costs = torch.tensor(
            [
                [_off_loss(model, block.attn, r, inputs, targets) - nats for r in range(n_heads)]
                for block in model.blocks
            ]
        )
    finally:
        model.train(was_training)
    return HeadCosts(nats, costs, inputs.shape[0], inputs.numel())


def _off_loss(model, attention, head, inputs, targets) -> float:
    with head_switched_off(attention, head):
        return _loss(model, inputs, targets)
