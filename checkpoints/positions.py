"""Checks of notebook 03: attention is blind to order, Exercise 3 (embed_with_positions, the
input step of Equation 8) and the untrained model's test loss."""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn as nn

from transformer_lab.attention import scaled_dot_product_attention as _attention
from transformer_lab.evaluate import evaluate_gpt as _evaluate_gpt
from transformer_lab.model import GPTConfig as _GPTConfig
from transformer_lab.model import MultiHeadAttention as _MultiHeadAttention
from transformer_lab.model import embed_with_positions as _reference
from transformer_lab.student import course_pieces

from ._core import (
    CheckFailed,
    Forbidden,
    call,
    expect_tensor,
    forbid,
    judge,
    keep,
    passed,
)
from ._devices import DEVICE, DeviceMismatch, other_device
from .codes import EX3, LEAK, ORDER, UNTRAINED
from .in_the_model import trains
from .leak import measure_leak

# A small model for the leak test that opens Exercise 3: a leak shows at any size.
_LEAK_CONFIG = _GPTConfig(d_model=32, n_heads=2, n_layers=2, T_max=32)
LN_VOCAB = math.log(65)  # 4.1744: the loss of a uniform guess over the 65 characters
_Embedding = nn.Embedding
_arange = torch.arange
_randn = torch.randn
_randint = torch.randint
_generator = torch.Generator
_no_grad = torch.no_grad
_grad = torch.autograd.grad
_equal = torch.equal
_fork_rng = torch.random.fork_rng

forbid(
    EX3,
    Forbidden(
        "the package's embed_with_positions (tl.embed_with_positions)",
        "uses_package_embedding",
        "Write Equation 8 yourself: tok_emb(idx) + pos_emb(torch.arange(T, device=idx.device)).",
        (_reference,),
    ),
)


def order_blindness(first: torch.Tensor, second: torch.Tensor, seed: int = 0) -> float:
    """One causal attention layer, token embeddings only: the last output ignores the order.

    `first` and `second` are (1, T) token ids holding the same tokens in two orders, with the same
    last token. Returns the largest difference between the two outputs at the last position.
    """
    if first.shape != second.shape or first.ndim != 2 or first.shape[0] != 1:
        raise CheckFailed(
            "order_blindness needs two (1, T) tensors of token ids of equal shape.",
            ORDER.code("wrong_inputs"),
        )
    if not _equal(first.sort().values, second.sort().values) or first[0, -1] != second[0, -1]:
        raise CheckFailed(
            "order_blindness needs the same tokens in two orders, with the same last token.",
            ORDER.code("not_a_reordering"),
        )
    config = _GPTConfig()
    with _fork_rng(), _no_grad():
        torch.manual_seed(seed)
        tok_emb = _Embedding(config.vocab_size, config.d_model)
        pos_emb = _Embedding(config.T_max, config.d_model)
        layer = _MultiHeadAttention(config, attention=_attention).eval()
        without = [layer(tok_emb(idx))[0][0, -1] for idx in (first, second)]
        with_positions = [
            layer(_reference(idx, tok_emb, pos_emb))[0][0, -1] for idx in (first, second)
        ]
    gap = (without[0] - without[1]).abs().max().item()
    gap_with = (with_positions[0] - with_positions[1]).abs().max().item()
    if gap > 1e-5 or gap_with < 1e-3:
        raise CheckFailed(
            f"Order blindness: without positions the last outputs differ by {gap:.3g}, with "
            f"positions by {gap_with:.3g}; expected about 0 and clearly more than 0. Has the "
            "package been changed?",
            ORDER.code("package_changed"),
        )
    passed(
        ORDER,
        f"Without positions, reordering the {first.shape[1] - 1} tokens before the last one "
        f"moved its output by {gap:.1g} (float rounding); with positions added, by "
        f"{gap_with:.2g}.",
    )
    return gap


def _tables(seed: int, vocab: int, T_max: int, d_model: int, dtype=torch.float32):
    g = _generator().manual_seed(seed)
    tok_emb, pos_emb = _Embedding(vocab, d_model), _Embedding(T_max, d_model)
    with _no_grad():
        for table in (tok_emb, pos_emb):
            table.weight.copy_(_randn(table.weight.shape, generator=g))
    return tok_emb.to(dtype), pos_emb.to(dtype)


def _sinusoids(T: int, d_model: int) -> torch.Tensor:
    """The original transformer's fixed positions: sin on even columns, cos on odd ones."""
    position = _arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    rates = torch.exp(_arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    table = torch.zeros(T, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * rates)
    table[:, 1::2] = torch.cos(position * rates)[:, : d_model // 2]
    return table


def _mistakes(idx, tok_emb, pos_emb) -> dict[str, tuple[str, torch.Tensor]]:
    """{name: (diagnosis, output)} of the usual wrong versions, computed with our own
    operations."""
    T = idx.shape[1]
    with _no_grad():
        tokens = tok_emb(idx)  # (B, T, d_model)
        positions = pos_emb(_arange(T))  # (T, d_model)
        out = {
            "positions_not_added": (
                "the positions are left out: add pos_emb(positions) to the token embeddings",
                tokens,
            ),
            "tokens_not_added": (
                "the token embeddings are left out: Equation 8 is e_(w_t) + p_t, so look up both "
                "tables",
                positions.expand_as(tokens),
            ),
            "positions_indexed_by_token": (
                "the position table is indexed by the token ids (pos_emb(idx)). Row t of that "
                "table belongs to position t, whatever the token there: look it up with "
                "torch.arange(T)",
                tokens + pos_emb(idx),
            ),
            "same_position_everywhere": (
                "every position gets p_0, the same row of the table: look up one row per "
                "position, torch.arange(T) with T = idx.shape[1]",
                tokens + pos_emb.weight[0],
            ),
            "scaled_by_sqrt_d_model": (
                "the token embeddings are scaled by sqrt(d_model), as in the original "
                "transformer; the lab's model adds them unscaled (Equation 8)",
                tokens * math.sqrt(tokens.shape[-1]) + positions,
            ),
            "sinusoidal_positions": (
                "the positions are the fixed sines and cosines of the original transformer; "
                "this lab learns them: add the rows of the table pos_emb, "
                "pos_emb(torch.arange(T))",
                tokens + _sinusoids(T, tokens.shape[-1]).to(tokens.dtype),
            ),
        }
        if T < pos_emb.num_embeddings:
            out["positions_off_by_one"] = (
                "the positions are off by one: the first position is row 0 of the table, so use "
                "torch.arange(T), which runs 0 .. T-1, not 1 .. T",
                tokens + pos_emb(_arange(1, T + 1)),
            )
    return out


def _call(fn, idx, tok_emb, pos_emb, case: str, on_gpu: bool):
    """The student's function on the inputs, its errors told by their usual cause. on_gpu: as a
    GPU session runs it (simulated on this CPU), where a tensor made without device= is on the
    CPU."""
    B, T = idx.shape
    try:
        with other_device() if on_gpu else nullcontext():
            return call(EX3, fn, idx, tok_emb, pos_emb)
    except CheckFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, DeviceMismatch):
            raise CheckFailed(
                f"{EX3} ({case}): your function mixes tensors of two devices: {cause}. On a GPU "
                "(Colab's T4) idx and both tables live on the GPU, and a tensor made without "
                "device= on the CPU, so the model would fail there. Make the positions on "
                "idx's device: torch.arange(T, device=idx.device).",
                EX3.code("device_mismatch"),
            ) from None
        if isinstance(cause, IndexError):
            raise CheckFailed(
                f"{EX3} ({case}) raised IndexError: {cause}. A position is out of range: the "
                f"table has rows 0 .. {pos_emb.num_embeddings - 1}, and the T = {T} positions "
                "are 0 .. T-1 (torch.arange(T)).",
                EX3.code("position_out_of_range"),
            ) from None
        if isinstance(cause, RuntimeError) and "size" in str(cause):
            raise CheckFailed(
                f"{EX3} ({case}) raised RuntimeError: {cause}. The shapes do not add up: "
                f"tok_emb(idx) is (B, T, d_model) = ({B}, {T}, {tok_emb.embedding_dim}) and the "
                "positions must give (T, d_model). T is idx.shape[1] (idx.shape[0] is the batch "
                "size B), and look up only the T rows you need, not the whole table.",
                EX3.code("positions_wrong_length"),
            ) from None
        raise


def _compare(fn, idx, tok_emb, pos_emb, case: str, on_gpu: bool = False) -> None:
    B, T = idx.shape
    d_model = tok_emb.embedding_dim
    if on_gpu:  # the inputs are on the GPU already, unless a simulated session runs the check
        with other_device():
            idx, tok_emb, pos_emb = (x.to(DEVICE) for x in (idx, tok_emb, pos_emb))
    result = _call(fn, idx, tok_emb, pos_emb, case, on_gpu)
    if type(result) is torch.Tensor and tuple(result.shape) == (B, T, 2 * d_model):
        raise CheckFailed(
            f"{EX3} ({case}): the output has shape {(B, T, 2 * d_model)}: the positions are "
            "concatenated to the token embeddings. Equation 8 adds them: e_(w_t) + p_t keeps "
            "the width d_model.",
            EX3.code("positions_concatenated"),
        )
    expect_tensor(EX3, "the output", result, (B, T, d_model))
    with _no_grad():
        right = _reference(idx, tok_emb, pos_emb)
    judge(
        EX3.at(case),
        result.detach(),
        right,
        lambda: _mistakes(idx, tok_emb, pos_emb),
        nan_hint="Adding two embeddings never produces one: look for a division or a log.",
        otherwise=lambda gap: (
            f"the output differs from tok_emb(idx) + pos_emb(torch.arange(T)) by up to {gap:.3g}."
        ),
    )
    _expect_gradients(result, tok_emb, pos_emb, case)


def _expect_gradients(result, tok_emb, pos_emb, case: str) -> None:
    """Both tables must learn: a gradient reaches each of them through the output."""
    if not result.requires_grad:
        raise CheckFailed(
            f"{EX3} ({case}): the output carries no gradient, so neither table would learn. "
            "Do not use torch.no_grad(), .detach() or .data here.",
            EX3.code("no_gradient"),
        )
    tok_grad, pos_grad = _grad(result.sum(), (tok_emb.weight, pos_emb.weight), allow_unused=True)
    if pos_grad is None or not bool((pos_grad != 0).any()):
        raise CheckFailed(
            f"{EX3} ({case}): no gradient reaches the position table, so p_t would never be "
            "learned. Look the rows up through pos_emb(...) or pos_emb.weight without "
            ".detach() or .data.",
            EX3.code("position_table_detached"),
        )
    if tok_grad is None or not bool((tok_grad != 0).any()):
        raise CheckFailed(
            f"{EX3} ({case}): no gradient reaches the token table: use tok_emb(idx) without "
            ".detach() or .data.",
            EX3.code("token_table_detached"),
        )


def _case(
    fn, seed: int, B: int, T: int, d_model: int, vocab: int, T_max: int, dtype=None, on_gpu=False
):
    tok_emb, pos_emb = _tables(seed, vocab, T_max, d_model, dtype or torch.float32)
    idx = _randint(0, vocab, (B, T), generator=_generator().manual_seed(seed + 100))
    case = f"B = {B}, T = {T}, d_model = {d_model}, T_max = {T_max}"
    _compare(fn, idx, tok_emb, pos_emb, case + (", on a GPU, simulated" if on_gpu else ""), on_gpu)


def exercise_3(embed_with_positions, pieces=None) -> None:
    """The lecture's checkpoint is the leak test, so it comes first: the model built from your
    pieces (`pieces`, from checkpoints.yours.load; None: the course's) with this input step,
    where a step that mixes positions fails by what it does, naming the earlier positions that
    moved. Then Equation 8 on small tables, on a simulated GPU, and inside the lab's model."""
    _leak_first(embed_with_positions, pieces)
    _case(embed_with_positions, 0, B=2, T=5, d_model=8, vocab=11, T_max=16)
    _case(embed_with_positions, 1, B=3, T=10, d_model=12, vocab=13, T_max=32)
    _case(embed_with_positions, 2, B=2, T=6, d_model=8, vocab=11, T_max=16, on_gpu=True)
    trains(EX3, "embedding", embed_with_positions)
    passed(
        EX3,
        f"{EX3}: embed_with_positions adds p_t to e_(w_t) (Equation 8), (B, T, d_model), on "
        "idx's device, and trains inside the lab's model in float32 and in a T4's float16.",
    )
    keep("embedding", embed_with_positions, exercise_3)


def _leak_first(fn, pieces) -> None:
    """The whole-model leak test with `fn` as the input step. Only a leak fails here: a step
    that raises or gives another shape is named by the cases that follow."""
    with _fork_rng(devices=[]):
        base = pieces if pieces is not None else course_pieces("")
        model = base.using("embedding", fn, "this notebook").model(_LEAK_CONFIG, explicit=True)
    try:
        measure_leak(model, "the model built on your input step", None)
    except CheckFailed as failure:
        if failure.code == LEAK.code("reads_the_future"):
            raise CheckFailed(
                f"{EX3}: {failure.message.split(' Something reads')[0]} Your input step "
                "reads the future: Equation 8 gives each position its own token's row and its "
                "own position's row, e_(w_t) + p_t, and nothing from other positions.",
                EX3.code("reads_the_future"),
            ) from None


def untrained_loss(
    model, corpus, label: str = "the untrained model", characters: int | None = None
) -> float:
    """The untrained model's test loss (on the first `characters` of the test split, or all of
    it) should be close to ln 65: it knows nothing yet."""
    score = call(UNTRAINED.titled(label), _evaluate_gpt, model, corpus, characters=characters)
    nats = score.nats
    if not math.isfinite(nats):
        raise CheckFailed(
            f"Test loss of {label}: {nats} nats. Some logits are NaN or infinite: look for a "
            "row of attention with no allowed key, or an overflow in the input step.",
            UNTRAINED.code("loss_not_finite"),
        )
    gap = nats - LN_VOCAB
    if abs(gap) > 0.1:
        side = "above" if gap > 0 else "below"
        raise CheckFailed(
            f"Test loss of {label}: {nats:.4f} nats, {abs(gap):.3f} {side} ln 65 = "
            f"{LN_VOCAB:.4f}. An untrained model should guess almost uniformly over the 65 "
            "characters, within 0.1 nats of ln 65. The initialisation or the scale of the "
            "logits is off: the weights start with std 0.02 and zero biases, so the logits "
            "start near 0; look for anything that enlarges the embeddings or the logits.",
            UNTRAINED.code("loss_far_from_ln_65"),
        )
    passed(
        UNTRAINED,
        f"Test loss of {label}: {nats:.4f} nats, within 0.1 of ln 65 = "
        f"{LN_VOCAB:.4f}: it guesses almost uniformly, as a model that knows nothing should.",
    )
    return nats
