"""Generation: temperature, then top-k, then top-p; EOS and length stops; optional KV cache.

As in the lab, the sampler recomputes: every step re-reads the last T_max characters. The KV
cache is the optional extension of notebook 06 (`use_cache=True`).

Filter order and tie-breaking are part of the protocol (Module 3, section 12.1): equal
probabilities are ranked by token id, the candidate that crosses the top-p threshold is kept, and
top-p is measured within what top-k kept. The result is renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn


def filter_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """logits (..., V) -> the sampling distribution (..., V), zero outside the kept candidates."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}; use top_k=1 for greedy")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    # Stable descending sort: among equal probabilities the lower id comes first.
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    keep = torch.ones_like(sorted_probs, dtype=torch.bool)
    if top_k is not None:
        keep[..., top_k:] = False
    # top_p = 1 means no nucleus: every candidate stays, with no running sum to round.
    if top_p is not None and top_p < 1:
        # float64: in float32 the running sum rounds to 1.0 while the tail still holds mass.
        kept = sorted_probs.double() * keep
        kept = kept / kept.sum(dim=-1, keepdim=True)
        mass_before = kept.cumsum(dim=-1) - kept  # mass of the better-ranked candidates
        keep &= mass_before < top_p  # so the candidate that crosses top_p stays in
    sorted_probs = sorted_probs * keep
    filtered = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return filtered / filtered.sum(dim=-1, keepdim=True)


@dataclass(frozen=True)
class Generation:
    ids: list[int]  # the new tokens only
    stop_reason: str  # "eos" or "length"


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt: list[int] | torch.Tensor,
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_id: int | None = None,
    seed: int | None = None,
    use_cache: bool = False,
) -> Generation:
    """Sample up to max_new_tokens after `prompt` from a MiniGPT (or CharLSTM) in eval mode.

    The GPT reads at most its last T_max tokens, recomputed at every step. With use_cache, keys
    and values of earlier positions are kept instead; but once the text is longer than T_max the
    window slides, every learned absolute position shifts by one, and the cache must restart at
    each step: the cache only pays while the text fits in T_max.
    """
    prompt = prompt.tolist() if isinstance(prompt, torch.Tensor) else list(prompt)
    if not prompt:
        raise ValueError("the prompt needs at least one token")
    device = next(model.parameters()).device
    # A CPU generator, drawing from CPU probabilities: a seed gives the same text on every device
    # (apart from the rounding of the logits), where CUDA's generator would draw other numbers.
    generator = torch.Generator()
    generator.seed() if seed is None else generator.manual_seed(seed)
    was_training = model.training
    model.eval()
    next_logits = _logit_source(model, use_cache, device)
    ids, new, stop = list(prompt), [], "length"
    for _ in range(max_new_tokens):
        probs = filter_probs(next_logits(ids), temperature, top_k, top_p)
        token = int(torch.multinomial(probs.cpu(), 1, generator=generator))
        ids.append(token)
        new.append(token)
        if token == eos_id:
            stop = "eos"
            break
    model.train(was_training)
    return Generation(new, stop)


def _logit_source(model: nn.Module, use_cache: bool, device):
    """A function ids -> next-token logits (V,), hiding how the model keeps its context."""
    if hasattr(model, "step"):  # CharLSTM: carry the state, feed each token once
        fed, state = 0, None

        def lstm_logits(ids):
            nonlocal fed, state
            x = torch.tensor([ids[fed:]], device=device)
            logits, state = model.step(x, state)
            fed = len(ids)
            return logits[0, -1]

        return lstm_logits

    T_max = model.config.T_max
    if not use_cache:
        return lambda ids: model(torch.tensor([ids[-T_max:]], device=device))[0, -1]
    cache, fed = None, 0

    def cached_logits(ids):
        nonlocal cache, fed
        if cache is None or len(ids) > T_max:  # first call, or the window slid: start afresh
            cache, fed = model.new_cache(), max(0, len(ids) - T_max)
        x = torch.tensor([ids[fed:]], device=device)
        fed = len(ids)
        return model(x, cache=cache)[0, -1]

    return cached_logits
