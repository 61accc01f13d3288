"""The ablation ladder: the lab's mini-GPT with one part taken away at a time, each a claim of
the lecture put to a test. Every rung trains with the course's recipe at one budget, on the
same seeds (hence the same batches, `train.run_windows`) as the full model, so each rung is read
against the full model seed by seed, with the rule the GPT/LSTM comparison uses (verdict.py).

    rung            what changes                              the lecture's claim it tests
    no_positions    no position table: h_t = e_{w_t}          §5: without positions, order-blind
    no_scaling      scores Q K^T, not divided by sqrt(d_k)    §2: 1/sqrt(d_k) keeps the softmax
                                                              from saturating
    post_norm       LN after each residual add (2017's)       §6: pre-norm trains more stably
    no_warmup       pre-norm, the rate at its peak from       §6: pre-norm trains without
                    step 0                                    warm-up
    one_head        1 head of d_k = 128 (same d_model)        §4: heads are narrower lookups,
                                                              not more parameters
    no_ffn          no feed-forward layer in any block        §6: the FFN is where a position
                                                              computes on what it read

An experiment is fair before it is read. Every rung, the complete model included, first goes
through the same short sweep of rates (`SWEEP_RATES`, `SWEEP_STEPS` steps each, the rung's own
warm-up) and is then trained and read at its own best rate. Two claims need more than a rung:
§6's stability is read from the window of rates at which pre-norm and post-norm, each with and
without the warm-up, train (`STABILITY`, two seeds a rate); §2's 1/sqrt(d_k) is measured where
its premise holds, q and k with unit-variance coordinates (`UNIT_QK`), as well as at the lab's
std-0.02 initialization, where the unscaled scores start small (`premise`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from .data import Corpus
from .evaluate import evaluate_gpt
from .model import Block, GPTConfig, MiniGPT, count_parameters
from .runtime import Budget
from .train import DEFAULT_LR, Recipe, train_lm


class PostNormBlock(Block):
    """The original transformer's block: H' = LN(H + MHA(H)); H_out = LN(H' + FFN(H'))."""

    def forward(self, H, *, cache=None, need_weights=False):
        attended, A = self.attn(H, cache=cache, need_weights=need_weights)
        H = self.ln1(H + attended)
        return self.ln2(H + self.ffn(H)), A


class AttentionOnlyBlock(Block):
    """A pre-norm block without its feed-forward layer: H_out = H + MHA(LN(H))."""

    def __init__(self, config: GPTConfig, attention=None, mask=None):
        super().__init__(config, attention, mask)
        del self.ln2, self.ffn

    def forward(self, H, *, cache=None, need_weights=False):
        attended, A = self.attn(self.ln1(H), cache=cache, need_weights=need_weights)
        return H + attended, A


def unscaled_attention(Q, K, V, allowed=None):
    """softmax(Q K^T + mask) V: Equation 3 without its 1/sqrt(d_k) (PyTorch's kernel, scale 1)."""
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed, scale=1.0), None


def tokens_only(idx, tok_emb, pos_emb):
    """h_t = e_{w_t}: the input step without Equation 8's position vector."""
    return tok_emb(idx)


class PostNormGPT(MiniGPT):
    block_type = PostNormBlock


class AttentionOnlyGPT(MiniGPT):
    block_type = AttentionOnlyBlock


def _gpt(config: GPTConfig | None = None, kind: type[MiniGPT] = MiniGPT, **plugged) -> MiniGPT:
    model = kind(config or GPTConfig(), **plugged)
    if "embed" in plugged:  # the table it no longer reads is not part of it
        model.pos_emb = None
    return model


@dataclass(frozen=True)
class Rung:
    name: str
    removes: str  # what the student reads in the ladder's table
    claim: str  # the lecture's claim it tests, with its section
    make_model: Callable[[], MiniGPT]
    warmup: int | None = None  # None: the course's (a twentieth of the steps)

    def recipe(self, budget: Budget, lr: float | None = None) -> Recipe:
        """The course's recipe at `budget` with the rung's warm-up, at `lr` (None: the rate the
        course chose for the complete model)."""
        return Recipe.of(budget, lr=lr or DEFAULT_LR["gpt"], warmup=self.warmup)


FULL = Rung("full", "nothing (the lab's mini-GPT)", "", _gpt)
RUNGS = (
    Rung(
        "no_positions",
        "the position table",
        "§5: without positions the model is blind to order",
        lambda: _gpt(embed=tokens_only),
    ),
    Rung(
        "no_scaling",
        "the 1/√d_k",
        "§2: dividing by √d_k keeps the softmax from saturating",
        lambda: _gpt(attention=unscaled_attention),
    ),
    Rung(
        "post_norm",
        "pre-norm (post-norm instead)",
        "§6: pre-norm keeps the residual stream clean and trains more stably",
        lambda: _gpt(kind=PostNormGPT),
    ),
    Rung(
        "no_warmup",
        "the warm-up (pre-norm)",
        "§6: pre-norm trains without warm-up",
        _gpt,
        warmup=0,
    ),
    Rung(
        "one_head",
        "three of the four heads (one head, same d_model)",
        "§4: heads are narrower lookups, not more parameters",
        lambda: _gpt(replace(GPTConfig(), n_heads=1)),
    ),
    Rung(
        "no_ffn",
        "the feed-forward layers",
        "§6: the FFN computes on what attention gathered",
        lambda: _gpt(kind=AttentionOnlyGPT),
    ),
)
LADDER = {rung.name: rung for rung in (FULL, *RUNGS)}


def unit_qk(model: MiniGPT) -> MiniGPT:
    """W_Q and W_K drawn with std 1/sqrt(d_model): a LayerNorm'd input's coordinates have unit
    variance, so each coordinate of q and k does too, §2's premise (the lab's std 0.02 gives
    them a variance of d_model * 0.02^2 = 0.05)."""
    for block in model.blocks:
        for W in (block.attn.W_Q, block.attn.W_K):
            torch.nn.init.normal_(W.weight, std=model.config.d_model**-0.5)
    return model


# Variants that are swept and never laddered: the fourth corner of the stability grid, and the
# scale's pair where its premise holds.
SWEPT_ONLY = (
    Rung(
        "post_norm_no_warmup",
        "pre-norm and the warm-up (post-norm, the rate at its peak from step 0)",
        "§6: without warm-up, post-norm is the one that struggles",
        lambda: _gpt(kind=PostNormGPT),
        warmup=0,
    ),
    Rung(
        "unit_qk",
        "nothing, with q and k of unit variance at initialization",
        "§2's premise: q and k with unit-variance coordinates",
        lambda: unit_qk(_gpt()),
    ),
    Rung(
        "unit_qk_no_scaling",
        "the 1/√d_k, with q and k of unit variance at initialization",
        "§2: dividing by √d_k keeps the softmax from saturating",
        lambda: unit_qk(_gpt(attention=unscaled_attention)),
    ),
)
SWEPT = LADDER | {rung.name: rung for rung in SWEPT_ONLY}
# §6's grid: (norm, warm-up) -> the variant that trains it.
STABILITY = {
    ("pre-norm", "warm-up"): "full",
    ("pre-norm", "no warm-up"): "no_warmup",
    ("post-norm", "warm-up"): "post_norm",
    ("post-norm", "no warm-up"): "post_norm_no_warmup",
}
UNIT_QK = ("unit_qk", "unit_qk_no_scaling")
# A factor of 4 on each side of the rate the course chose (4e-3), each rung's sweep and §6's.
SWEEP_RATES = (1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2)
SWEEP_STEPS = 300
SWEEP_EVAL_EVERY = 100


def sweep_seeds(name: str) -> tuple[int, ...]:
    """Two seeds a rate where the spread of outcomes is read (§6's grid, §2's pair); one where
    only the best rate is wanted."""
    return (0, 1) if name in (*STABILITY.values(), *UNIT_QK) else (0,)


def unigram_nats(corpus: Corpus) -> float:
    """Validation loss of the training split's character frequencies (add-one): a run at or above
    it learned nothing but how often each character occurs."""
    V = len(corpus.vocab)
    counts = torch.bincount(corpus.train.cpu(), minlength=V).double() + 1
    return float(-(counts / counts.sum()).log()[corpus.val.cpu()].mean())


# A run must end this far below the unigram's loss to count as having learned more than how often
# each character occurs: a run stuck on that plateau ends a few thousandths below it.
STALL_MARGIN = 0.1


def outcome(val_loss: float | None, unigram: float, vocab_size: int) -> str:
    """diverged: the loss is not finite or no better than a uniform guess (ln V); stalled: not
    clear of the unigram's plateau (STALL_MARGIN); else trains."""
    if val_loss is None or not math.isfinite(val_loss) or val_loss >= math.log(vocab_size):
        return "diverged"
    return "stalled" if val_loss >= unigram - STALL_MARGIN else "trains"


def sweep_run(rung: Rung, corpus: Corpus, budget: Budget, lr: float, seed: int) -> dict:
    """One rate of one rung's sweep: SWEEP_STEPS steps at the budget's batch size, the rung's
    warm-up and the course's schedule over the short run (as `train.choose_lr`)."""
    short = Budget(
        f"{budget.name}-sweep",
        budget.batch_size,
        SWEEP_STEPS,
        SWEEP_EVAL_EVERY,
        budget.eval_batches,
    )
    torch.manual_seed(seed)
    history = train_lm(rung.make_model(), corpus, rung.recipe(short, lr), seed=seed, progress=False)
    val_loss = history.val_loss[-1][1]
    return {
        "lr": lr,
        "seed": seed,
        "steps": SWEEP_STEPS,
        "val_loss": val_loss if math.isfinite(val_loss) else None,
        "curve": [[step, loss if math.isfinite(loss) else None] for step, loss in history.val_loss],
        "outcome": outcome(val_loss, unigram_nats(corpus), len(corpus.vocab)),
        "train_seconds": history.wall_time_s,
    }


def best_rate(runs: list[dict]) -> float | None:
    """The rate whose every seed trains with the lowest mean validation loss; None if none
    trains."""
    by_rate: dict[float, list[dict]] = {}
    for run in runs:
        by_rate.setdefault(run["lr"], []).append(run)
    trained = {
        lr: sum(r["val_loss"] for r in rs) / len(rs)
        for lr, rs in by_rate.items()
        if all(r["outcome"] == "trains" for r in rs)
    }
    return min(trained, key=trained.get) if trained else None


def premise(corpus: Corpus, init: str, scaled: bool, seed: int = 0, batch: int = 16) -> dict:
    """§2 at initialization, in the first layer: the spread (std) of the scores the softmax sees,
    the weights' entropy as a fraction of a uniform row's (1: spread evenly; near 0: saturated)
    and the gradient that reaches W_Q, for a batch of validation windows. init: "lab" (std 0.02)
    or "unit" (q and k with unit-variance coordinates)."""
    torch.manual_seed(seed)
    model = _gpt(attention=None if scaled else unscaled_attention)
    if init == "unit":
        unit_qk(model)
    seen: dict[str, float] = {}

    def attend(Q, K, V, allowed=None):
        scores = Q @ K.transpose(-2, -1) / (math.sqrt(Q.shape[-1]) if scaled else 1.0)
        scores = scores.masked_fill(~allowed, float("-inf"))
        A = scores.softmax(dim=-1)
        if not seen:  # the first layer
            rows = allowed.sum(-1)  # keys each query may read
            weights = A.detach()
            entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1)
            seen["score_std"] = float(scores.detach()[..., allowed].std())
            seen["entropy_ratio"] = float((entropy[..., 1:] / rows[1:].log()).mean())
        return A @ V, A

    model.use_attention(attend)
    T = model.config.T_max
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(corpus.val) - T - 1, (batch,), generator=generator)
    x = torch.stack([corpus.val[s : s + T] for s in starts])
    y = torch.stack([corpus.val[s + 1 : s + T + 1] for s in starts])
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    loss.backward()
    W_Q = model.blocks[0].attn.W_Q.weight
    return seen | {"grad_W_Q": float(W_Q.grad.norm()), "init": init, "scaled": scaled}


def train_rung(
    rung: Rung,
    corpus: Corpus,
    budget: Budget,
    seed: int,
    progress: bool = False,
    lr: float | None = None,
):
    """One seed of one rung, trained and scored as notebook 04 trains and scores the GPT, at
    `lr` (None: the course's rate): (the model, its history, a dict for the record)."""
    torch.manual_seed(seed)
    model = rung.make_model()
    recipe = rung.recipe(budget, lr)
    history = train_lm(model, corpus, recipe, seed=seed, progress=progress, desc=rung.name)
    score = evaluate_gpt(model, corpus, characters=budget.test_characters)
    row = {
        "nats": score.nats,
        "parameters": count_parameters(model),
        "train_seconds": history.wall_time_s,
        "recipe": history.recipe.as_dict(),
    }
    return model, history, row
