"""Test-split scores in nats per character, for every model, over the same 60,394 characters.

- GPT: windows of T_max moved by T_max/2; only the second half of each window is scored, so every
  test character is scored once with 65 to 128 characters of context (which may reach back into
  the text before the test split).
- LSTM: the state is carried across the whole test split.
- n-gram: each character's context is the text before it.
Evaluation runs in fp32 so that scores compare across devices. `characters` scores only the
first so many test characters: the short budgets (smoke, grade) need a score, not the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import VAL_END, Corpus
from .ngram import NGramModel


@dataclass(frozen=True)
class Score:
    nats: float  # mean negative log-likelihood per character, natural log
    n_chars: int

    @property
    def perplexity(self) -> float:
        return math.exp(self.nats)

    @property
    def bits(self) -> float:
        return self.nats / math.log(2)


def gpt_windows(start: int, end: int, T_max: int) -> list[tuple[int, int]]:
    """(a, j0) per window: inputs ids[a : a+T_max], targets ids[a+1 : a+T_max+1];
    targets at offsets j0..T_max-1 are scored. Together they cover [start, end) exactly once.
    """
    half = T_max // 2
    if start < half + 1:
        raise ValueError(f"the first scored character needs {half + 1} characters before it")
    windows, target = [], start  # target: the next character still to be scored
    while target < end:
        a = min(target - half - 1, end - T_max - 1)  # the last window is aligned to the end
        windows.append((a, target - a - 1))
        target = a + T_max + 1
    return windows


def _test_end(ids, characters: int | None) -> int:
    """Where scoring stops: the end of the test split, or `characters` into it."""
    if characters is None:
        return len(ids)
    if not 0 < characters <= len(ids) - VAL_END:
        raise ValueError(f"characters must be 1 to {len(ids) - VAL_END:,}, got {characters}")
    return VAL_END + characters


def _in_eval_mode(model: nn.Module):
    was_training = model.training
    model.eval()
    return was_training


@torch.no_grad()
def evaluate_gpt(
    model: nn.Module, corpus: Corpus, batch_size: int = 64, characters: int | None = None
) -> Score:
    T_max = model.config.T_max
    device = next(model.parameters()).device
    ids = corpus.ids.to(device)
    end = _test_end(ids, characters)
    windows = gpt_windows(VAL_END, end, T_max)
    was_training = _in_eval_mode(model)
    total = torch.zeros((), dtype=torch.float64, device=device)
    offsets = torch.arange(T_max + 1, device=device)
    for i in range(0, len(windows), batch_size):
        a, j0 = torch.tensor(windows[i : i + batch_size], device=device).T  # (B,), (B,)
        chunk = ids[a[:, None] + offsets]  # (B, T_max + 1)
        logits = model(chunk[:, :-1]).float()  # (B, T_max, vocab)
        nll = F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:], reduction="none")  # (B, T_max)
        scored = offsets[None, :-1] >= j0[:, None]  # (B, T_max)
        total += (nll * scored).sum(dtype=torch.float64)
    model.train(was_training)
    return Score(total.item() / (end - VAL_END), end - VAL_END)


@torch.no_grad()
def evaluate_lstm(
    model: nn.Module, corpus: Corpus, chunk: int = 4096, characters: int | None = None
) -> Score:
    """Reads from the character before the test split to the second-to-last one, in chunks,
    passing the state on: character p is predicted from everything since the split began."""
    device = next(model.parameters()).device
    ids = corpus.ids.to(device)
    end = _test_end(ids, characters)
    was_training = _in_eval_mode(model)
    total, state = torch.zeros((), dtype=torch.float64, device=device), None
    for s in range(VAL_END, end, chunk):
        e = min(s + chunk, end)
        logits, state = model.step(ids[None, s - 1 : e - 1], state)  # (1, e - s, vocab)
        total += F.cross_entropy(logits[0].float(), ids[s:e], reduction="sum").double()
    model.train(was_training)
    return Score(total.item() / (end - VAL_END), end - VAL_END)


def evaluate_ngram(corpus: Corpus, order: int, k: float, characters: int | None = None) -> Score:
    ids = corpus.ids.cpu().numpy()
    model = NGramModel(order, k, len(corpus.vocab)).fit(corpus.train.cpu().numpy())
    log_probs = model.log_probs(ids, VAL_END, _test_end(ids, characters))
    return Score(float(-log_probs.mean()), len(log_probs))
