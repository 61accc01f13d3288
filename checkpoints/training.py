"""Checks of notebook 04: the loss, perplexity and bits per character (Exercise 4, Equation 15),
and the comparison the lab does assert (the mini-GPT well below the trigram)."""

from __future__ import annotations

import math

import torch

from transformer_lab.model import GPTConfig

from ._core import CheckFailed, call, expect_unchanged, match_mistake, passed, snapshot
from .codes import EX4, TRIGRAM

_log_softmax = torch.log_softmax
_LN2 = math.log(2)
_LAB = GPTConfig()  # the lab's vocabulary and window
# How far below the trigram the GPT must land when it is trained at a real budget.
WELL_BELOW_NATS = 0.1


def _reference(logits: torch.Tensor, targets: torch.Tensor) -> tuple[float, float, float]:
    log_probs = _log_softmax(logits.double(), dim=-1)  # (B, T, V)
    nats = -log_probs.gather(-1, targets.unsqueeze(-1)).mean().item()
    return nats, math.exp(nats), nats / _LN2


def _mistakes(logits, targets) -> dict[str, tuple[str, tuple[float, float, float]]]:
    """name -> (diagnosis, (nats, perplexity, bits)) of the usual wrong versions: the loss
    reduced wrongly, then the units mixed up."""
    return {**_loss_mistakes(logits, targets), **_unit_mistakes(*_reference(logits, targets))}


def _triple(nats: float) -> tuple[float, float, float]:
    """(nats, perplexity, bits) of a loss, the perplexity kept finite."""
    return nats, math.exp(min(nats, 700)), nats / _LN2


def _loss_mistakes(logits, targets) -> dict[str, tuple[str, tuple[float, float, float]]]:
    """The mean log-probability taken wrongly."""
    log_probs = _log_softmax(logits.double(), dim=-1)
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    raw = logits.double().gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    B, T = targets.shape
    return {
        "summed_over_positions": (
            "the loss is summed over the positions instead of averaged: Equation 15 divides by "
            "T (mean over every position of every sequence)",
            _triple(-picked.sum(-1).mean().item()),
        ),
        "summed_over_batch": (
            "the loss is summed over the batch instead of averaged over every position",
            _triple(-picked.sum(0).mean().item()),
        ),
        "summed_over_everything": (
            "the loss is summed over every position of every sequence (reduction='sum'): "
            "Equation 15 is the mean, so divide by B x T, or keep cross_entropy's default "
            "reduction='mean'",
            _triple(-picked.sum().item()),
        ),
        "mean_precedence": (
            "the sum is divided by B and then multiplied by T: `/ B * T` is (... / B) * T. "
            "Write / (B * T), or take .mean()",
            _triple(-picked.sum().item() / B * T),
        ),
        "sign_flipped": (
            "the sign is flipped: the loss is the NEGATIVE mean log-probability",
            _triple(picked.mean().item()),
        ),
        "raw_logits": (
            "the loss uses the raw logits: take log_softmax (or cross_entropy) first, so the "
            "scores become log-probabilities",
            _triple(-raw.mean().item()),
        ),
    }


def _unit_mistakes(nats: float, ppl: float, bits: float) -> dict[str, tuple[str, tuple]]:
    """The right loss, turned into perplexity and bits wrongly."""
    return {
        "loss_in_bits": (
            "the loss is in bits (log base 2) where nats (natural log) are asked for: nats come "
            "from ln, bits = nats / ln 2",
            (bits, 2**bits, bits / _LN2),
        ),
        "bits_times_ln2": (
            "bits are computed as nats * ln 2; bits per character = nats / ln 2",
            (nats, ppl, nats * _LN2),
        ),
        "bits_as_log2_of_nats": (
            "bits are computed as log2(nats); the logarithm is already inside the loss, so "
            "changing its base divides by ln 2: bits = nats / ln 2 (or math.log2(perplexity))",
            (nats, ppl, math.log2(nats)),
        ),
        "bits_in_nats": (
            "the bits equal the nats: math.log(perplexity) is the natural logarithm, which "
            "gives the nats back. Bits per character = nats / ln 2, or math.log2(perplexity)",
            (nats, ppl, nats),
        ),
        "perplexity_of_bits": (
            "perplexity is computed as exp(bits), mixing two bases: it is exp(nats), or "
            "equally 2 ** bits",
            (nats, math.exp(bits), bits),
        ),
        "perplexity_base_2": (
            "perplexity is 2 ** nats; with a loss in nats it is exp(nats)",
            (nats, 2**nats, bits),
        ),
    }


def _agree(a: tuple, b: tuple) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-5) for x, y in zip(a, b, strict=True))


def _case(fn, logits, targets, case: str) -> None:
    before = snapshot(logits, targets)
    result = call(EX4, fn, logits, targets)
    expect_unchanged(
        EX4.at(case),
        before,
        (logits, targets),
        "your function changed logits or targets in place (`logits -= ...`, or a method "
        "ending in `_`). The caller still needs them, and training would learn from the "
        "changed ones: compute new tensors, e.g. log_probs = logits - ... .",
    )
    if not isinstance(result, tuple) or len(result) != 3:
        raise CheckFailed(
            f"{EX4}: return the triple (nats, perplexity, bits).", EX4.code("not_a_triple")
        )
    if any(type(x) is not float for x in result):
        kinds = ", ".join(type(x).__name__ for x in result)
        raise CheckFailed(
            f"{EX4}: return three Python floats, got ({kinds}); call .item() on a 0-d tensor.",
            EX4.code("not_floats"),
        )
    expected = _reference(logits, targets)
    if _agree(result, expected):
        return
    # Each mistake's output is one triple: a tuple of one candidate, not three.
    mistakes = {name: (why, (wrong,)) for name, (why, wrong) in _mistakes(logits, targets).items()}
    found = match_mistake(result, mistakes, same=_agree)
    if found:
        name, diagnosis = found
        raise CheckFailed(f"{EX4} ({case}): {diagnosis}.", EX4.code(name))
    names = ("nats", "perplexity", "bits")
    wrong = [
        f"{n} {r:.4f} (expected {e:.4f})"
        for n, r, e in zip(names, result, expected, strict=True)
        if not math.isclose(r, e, rel_tol=1e-4, abs_tol=1e-5)
    ]
    raise CheckFailed(
        f"{EX4} ({case}): {', '.join(wrong)}. Re-read Equation 15.", EX4.code("wrong_values")
    )


def _inputs(seed: int, B: int, T: int, V: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, T, V, generator=g, dtype=dtype) * 2
    return logits, torch.randint(0, V, (B, T), generator=g)


def exercise_4(lm_metrics) -> None:
    V = _LAB.vocab_size
    uniform = torch.zeros(2, 5, V)
    targets = torch.randint(0, V, (2, 5), generator=torch.Generator().manual_seed(0))
    _case(lm_metrics, uniform, targets, f"uniform logits over {V} characters: ln {V} nats")
    for seed, B, T in ((1, 4, 8), (2, 3, 16)):
        _case(lm_metrics, *_inputs(seed, B, T, V), f"random logits, B = {B}, T = {T}")
    passed(EX4, f"{EX4}: the mean cross-entropy in nats, exp(nats) and nats / ln 2 (Equation 15).")


def gpt_well_below_trigram(gpt_nats: float, trigram_nats: float, budget: str) -> None:
    """The one comparison the lab asserts; nothing is asserted about GPT against LSTM."""
    if budget not in ("quick", "full"):
        print(f"(budget {budget!r} trains for seconds only: the comparison is not checked)")
        return
    if gpt_nats > trigram_nats - WELL_BELOW_NATS:
        raise CheckFailed(
            f"The mini-GPT scored {gpt_nats:.4f} nats against the trigram's "
            f"{trigram_nats:.4f}: a trained model should be well below the counts. Was it "
            "trained (loss curve falling?), and does evaluation use the trained weights?",
            TRIGRAM.code("not_well_below"),
        )
    passed(
        TRIGRAM,
        f"The mini-GPT ({gpt_nats:.4f} nats) is well below the trigram ({trigram_nats:.4f}).",
    )
