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
"""

from __future__ import annotations

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

    def recipe(self, budget: Budget) -> Recipe:
        return Recipe.of(budget, lr=DEFAULT_LR["gpt"], warmup=self.warmup)


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


def train_rung(rung: Rung, corpus: Corpus, budget: Budget, seed: int, progress: bool = False):
    """One seed of one rung, trained and scored as notebook 04 trains and scores the GPT:
    (the model, its history, a dict for the record)."""
    torch.manual_seed(seed)
    model = rung.make_model()
    recipe = rung.recipe(budget)
    history = train_lm(model, corpus, recipe, seed=seed, progress=progress, desc=rung.name)
    score = evaluate_gpt(model, corpus, characters=budget.test_characters)
    row = {
        "nats": score.nats,
        "parameters": count_parameters(model),
        "train_seconds": history.wall_time_s,
        "recipe": history.recipe.as_dict(),
    }
    return model, history, row
