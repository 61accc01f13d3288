"""Checks of notebook 04: the loss, perplexity and bits per character (Exercise 4, Equation 15),
and the comparison the lab does assert (the mini-GPT well below the trigram)."""

from __future__ import annotations

import math

import torch

from ._core import CheckFailed, call, code, passed

EX4 = "Exercise 4"
_TRIGRAM = "The comparison with the trigram"  # not an exercise: its codes are check.<name>
_log_softmax = torch.log_softmax
_LN2 = math.log(2)
# How far below the trigram the GPT must land when it is trained at a real budget.
WELL_BELOW_NATS = 0.1


def _reference(logits: torch.Tensor, targets: torch.Tensor) -> tuple[float, float, float]:
    log_probs = _log_softmax(logits.double(), dim=-1)  # (B, T, V)
    nats = -log_probs.gather(-1, targets.unsqueeze(-1)).mean().item()
    return nats, math.exp(nats), nats / _LN2


def _mistakes(logits, targets) -> dict[str, tuple[str, tuple[float, float, float]]]:
    """name -> (diagnosis, (nats, perplexity, bits)) of the usual wrong versions."""
    log_probs = _log_softmax(logits.double(), dim=-1)
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    nats, ppl, bits = _reference(logits, targets)
    summed_over_T = -picked.sum(-1).mean().item()
    summed_over_B = -picked.sum(0).mean().item()
    summed = -picked.sum().item()
    raw = logits.double().gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return {
        "summed_over_positions": (
            "the loss is summed over the positions instead of averaged: Equation 15 divides by "
            "T (mean over every position of every sequence)",
            (summed_over_T, math.exp(min(summed_over_T, 700)), summed_over_T / _LN2),
        ),
        "summed_over_batch": (
            "the loss is summed over the batch instead of averaged over every position",
            (summed_over_B, math.exp(min(summed_over_B, 700)), summed_over_B / _LN2),
        ),
        "summed_over_everything": (
            "the loss is summed over every position of every sequence (reduction='sum'): "
            "Equation 15 is the mean, so divide by B x T, or keep cross_entropy's default "
            "reduction='mean'",
            (summed, math.exp(min(summed, 700)), summed / _LN2),
        ),
        "loss_in_bits": (
            "the loss is in bits (log base 2) where nats (natural log) are asked for: nats come "
            "from ln, bits = nats / ln 2",
            (bits, 2**bits, bits / _LN2),
        ),
        "bits_times_ln2": (
            "bits are computed as nats * ln 2; bits per character = nats / ln 2",
            (nats, ppl, nats * _LN2),
        ),
        "perplexity_base_2": (
            "perplexity is 2 ** nats; with a loss in nats it is exp(nats)",
            (nats, 2**nats, bits),
        ),
        "sign_flipped": (
            "the sign is flipped: the loss is the NEGATIVE mean log-probability",
            (-nats, math.exp(-nats), -bits),
        ),
        "raw_logits": (
            "the loss uses the raw logits: take log_softmax (or cross_entropy) first, so the "
            "scores become log-probabilities",
            (
                -raw.mean().item(),
                math.exp(min(-raw.mean().item(), 700)),
                -raw.mean().item() / _LN2,
            ),
        ),
    }


def _agree(a: tuple, b: tuple) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-5) for x, y in zip(a, b, strict=True))


def _case(fn, logits, targets, case: str) -> None:
    result = call(EX4, fn, logits, targets)
    if not isinstance(result, tuple) or len(result) != 3:
        raise CheckFailed(
            f"{EX4}: return the triple (nats, perplexity, bits).", code(EX4, "not_a_triple")
        )
    if any(type(x) is not float for x in result):
        kinds = ", ".join(type(x).__name__ for x in result)
        raise CheckFailed(
            f"{EX4}: return three Python floats, got ({kinds}); call .item() on a 0-d tensor.",
            code(EX4, "not_floats"),
        )
    expected = _reference(logits, targets)
    if _agree(result, expected):
        return
    for name, (diagnosis, wrong) in _mistakes(logits, targets).items():
        if _agree(result, wrong):
            raise CheckFailed(f"{EX4} ({case}): {diagnosis}.", code(EX4, name))
    names = ("nats", "perplexity", "bits")
    wrong = [
        f"{n} {r:.4f} (expected {e:.4f})"
        for n, r, e in zip(names, result, expected, strict=True)
        if not math.isclose(r, e, rel_tol=1e-4, abs_tol=1e-5)
    ]
    raise CheckFailed(
        f"{EX4} ({case}): {', '.join(wrong)}. Re-read Equation 15.", code(EX4, "wrong_values")
    )


def _inputs(seed: int, B: int, T: int, V: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, T, V, generator=g, dtype=dtype) * 2
    return logits, torch.randint(0, V, (B, T), generator=g)


def exercise_4(lm_metrics) -> None:
    uniform = torch.zeros(2, 5, 65)
    targets = torch.randint(0, 65, (2, 5), generator=torch.Generator().manual_seed(0))
    _case(lm_metrics, uniform, targets, "uniform logits over 65 characters: ln 65 nats")
    _case(lm_metrics, *_inputs(1, 4, 8, 65), "random logits, B = 4, T = 8")
    _case(lm_metrics, *_inputs(2, 3, 16, 65), "random logits, B = 3, T = 16")
    passed(f"{EX4}: the mean cross-entropy in nats, exp(nats) and nats / ln 2 (Equation 15).")


def exercise_4_hidden(lm_metrics) -> None:
    _case(lm_metrics, *_inputs(10, 1, 1, 7), "B = T = 1, 7 classes")
    _case(lm_metrics, *_inputs(11, 5, 3, 11, torch.float64), "float64")
    _case(lm_metrics, *_inputs(12, 2, 128, 65), "a full window")
    passed(f"{EX4} (further cases): single positions, float64, full windows.")


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
            code(_TRIGRAM, "gpt_not_below_trigram"),
        )
    passed(f"The mini-GPT ({gpt_nats:.4f} nats) is well below the trigram ({trigram_nats:.4f}).")
