"""Switching heads off: what each head of a trained mini-GPT costs the loss (notebook 05).

A map of attention weights says where a head reads, not whether the prediction needs what it
reads: the lecture's gotcha, "an attention map explains the prediction". Switching one head off
and measuring the loss again tests it. Head r of a layer owns the columns r d_k .. (r + 1) d_k - 1
of V_bar, before W_proj mixes the heads (Equation 7).

A head is switched off by MEAN-ablation: its slice of V_bar is replaced by that slice's mean over
the same validation windows on which the cost is measured (mean over the batch and the
positions, every head on, computed once per layer). Zeroing the slice instead would feed the
layers after it a V_bar unlike any they were trained on, and charge the head for that shift as
well as for what it reads; the mean keeps what the head always adds and takes away only what it
adds for this window and position. The hook sits on W_proj, so it works whichever attention
function runs inside the layer: PyTorch's fused kernel, the package's reference or the
student's own.

Costs are compared within a layer (`largest_within_layers`): the layers after a head were
trained with it and differ in how much one head can move the loss, so the costliest head of
layer 1 and the furthest reader of layer 4 are not two answers to one question.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .model import MiniGPT, MultiHeadAttention

RECORD_KEY = "head_costs"  # where the pipeline records them in a run's results
ABLATION = "mean"  # how a head is switched off, recorded with its costs


@contextmanager
def head_switched_off(
    attention: MultiHeadAttention, head: int, V_bar_mean: torch.Tensor
) -> Iterator[None]:
    """Within the `with`, head `head` (from 0) of this layer adds only its mean: its slice of
    V_bar (B, T, d_model), where W_proj reads it, is that slice of `V_bar_mean` (d_model,), the
    layer's V_bar averaged over the windows and positions (`V_bar_means`)."""
    columns = slice(head * attention.d_k, (head + 1) * attention.d_k)

    def mean_in_the_slice(proj, inputs):
        (V_bar,) = inputs
        V_bar = V_bar.clone()  # a new tensor: the layer's own V_bar is left as it was
        V_bar[..., columns] = V_bar_mean[columns].to(V_bar)  # (d_k,) broadcast over (B, T)
        return (V_bar,)

    hook = attention.proj.register_forward_pre_hook(mean_in_the_slice)
    try:
        yield
    finally:
        hook.remove()


@torch.no_grad()
def V_bar_means(model: MiniGPT, inputs: torch.Tensor) -> torch.Tensor:
    """(n_layers, d_model) float32: each layer's V_bar, every head on, averaged over the windows
    `inputs` (B, T) and their positions, as the model is (call it in eval mode)."""
    means = []

    def keep_the_mean(proj, inputs):
        (V_bar,) = inputs  # (B, T, d_model)
        means.append(V_bar.float().mean(dim=(0, 1)))

    hooks = [block.attn.proj.register_forward_pre_hook(keep_the_mean) for block in model.blocks]
    try:
        model(inputs)
    finally:
        for hook in hooks:
            hook.remove()
    return torch.stack(means)


def largest_within_layers(values) -> list[int]:
    """For each layer, the head (from 0) with the largest of `values` (n_layers, n_heads): the
    costliest head, or the furthest reader, each head set against its own layer's only."""
    return torch.as_tensor(values).argmax(dim=1).tolist()


@dataclass(frozen=True)
class HeadCosts:
    """The loss with every head on, and how much it rises when one head alone is switched off
    (mean-ablated: its slice of V_bar set to its mean over the same windows)."""

    nats: float  # mean loss per predicted character, every head on
    costs: torch.Tensor  # (n_layers, n_heads): the loss with that head off, minus `nats`
    windows: int
    characters: int  # the predictions scored: windows x T

    def summary(self, distances: torch.Tensor) -> str:
        """The loss, then a line a layer: its costliest head, what it costs and its D, and its
        furthest-reading head (`distances`, (n_layers, n_heads): Exercise 5's D). Each head is
        set against the heads of its own layer only."""
        lines = [
            f"Every head on: {self.nats:.3f} nats/char on {self.windows} validation windows "
            f"({self.characters:,} characters); a head off: its slice of V_bar set to its mean."
        ]
        within = zip(
            largest_within_layers(self.costs), largest_within_layers(distances), strict=True
        )
        for layer, (costly, far) in enumerate(within):
            line = (
                f"  layer {layer + 1}: costliest head {costly + 1}, "
                f"{self.costs[layer, costly]:+.3f} nats/char, D {distances[layer, costly]:.1f}; "
            )
            if far == costly:
                line += "also its furthest reader"
            else:
                line += (
                    f"furthest reader head {far + 1}, D {distances[layer, far]:.1f}, "
                    f"{self.costs[layer, far]:+.3f} nats/char"
                )
            lines.append(line)
        return "\n".join(lines)

    def record(self) -> dict:
        """What the pipeline keeps in a run's results (`record(RESULTS, ...)`)."""
        return {
            RECORD_KEY: {
                "nats": self.nats,
                "windows": self.windows,
                "characters": self.characters,
                "ablation": ABLATION,
                "costs": self.costs.tolist(),
            }
        }


def _loss(model: MiniGPT, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    logits = model(inputs).float()  # (B, T, vocab_size)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()


@torch.no_grad()
def head_ablation(model: MiniGPT, inputs: torch.Tensor, targets: torch.Tensor) -> HeadCosts:
    """The loss of `model` on the windows `inputs` (B, T) with targets (B, T), then again with
    each head switched off in turn, its slice of V_bar set to its mean over these same windows:
    n_layers x n_heads + 1 evaluations and one pass for the means, in eval mode."""
    was_training, n_heads = model.training, model.config.n_heads
    model.eval()
    try:
        nats = _loss(model, inputs, targets)
        means = V_bar_means(model, inputs)  # (n_layers, d_model)
        costs = torch.tensor(
            [
                [
                    _off_loss(model, block.attn, r, mean, inputs, targets) - nats
                    for r in range(n_heads)
                ]
                for block, mean in zip(model.blocks, means, strict=True)
            ]
        )
    finally:
        model.train(was_training)
    return HeadCosts(nats, costs, inputs.shape[0], inputs.numel())


def _off_loss(model, attention, head, mean, inputs, targets) -> float:
    with head_switched_off(attention, head, mean):
        return _loss(model, inputs, targets)
