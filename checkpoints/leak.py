"""The leak test on a whole model's logits (notebooks 03, 04 and 06): change one token, and no
logit before it may move at all. Run in eval mode, so dropout cannot cause a difference."""

from __future__ import annotations

import torch

from ._core import CheckFailed, call, change_at, named_positions, passed
from .codes import LEAK

_no_grad = torch.no_grad


def model_leak_test(
    model, label: str = "the model", t0: int | None = None, seed: int = 0, pieces=None
) -> float:
    """Returns the largest change of a logit before t0 (0.0 when nothing leaks). With `pieces`
    (checkpoints.yours.load: what `model` is built from), a leak names the student's piece
    that causes it."""
    try:
        t0, later = measure_leak(model, label, t0, seed)
    except CheckFailed as failure:
        if pieces is None or failure.code != LEAK.code("reads_the_future"):
            raise
        raise CheckFailed(f"{failure.message} {_culprits(model, pieces)}", failure.code) from None
    passed(
        LEAK,
        f"Leak test on {label}: changing position {t0} moved no earlier logit "
        f"(largest change 0.0), and moved later ones by up to {later:.3g}.",
    )
    return 0.0


def _culprits(model, pieces) -> str:
    """Which of the student's pieces leaks: each alone, among the course's, on `model`'s
    weights, through the explicit attention path."""
    from transformer_lab.student import course_pieces

    course = course_pieces("")
    leaking = []
    for piece in pieces:
        if not piece.yours:
            continue
        alone = course._replace(**{piece.name: piece}).model(model.config, explicit=True)
        alone.load_state_dict(model.state_dict())
        alone.to(next(model.parameters()).device)
        try:
            measure_leak(alone, piece.whose, None)
        except CheckFailed as failure:
            if failure.code == LEAK.code("reads_the_future"):
                leaking.append(piece)
    if not leaking:
        return f"It is built from {pieces.names()}: together they read the future."
    named = " and ".join(f"{p.whose} (from notebook {p.exercise.number})" for p in leaking)
    return (
        f"The leak comes from {named}: with the course's pieces around it, it still reads the "
        "future."
    )


def measure_leak(model, label: str, t0: int | None, seed: int = 0) -> tuple[int, float]:
    """The leak test without its tick, for a check that runs it as one of its steps: fails as
    model_leak_test does, else returns t0 and the largest change of a logit from t0 on."""
    T = model.config.T_max
    t0 = T // 2 if t0 is None else t0
    g = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    idx = torch.randint(0, model.config.vocab_size, (2, T), generator=g).to(device)

    def run(ids):  # a stub inside the model reports itself as the exercise not done yet
        return call(LEAK.titled("An exercise this model runs on"), model, ids)

    def the_next_token(ids):
        ids[:, t0] = (ids[:, t0] + 1) % model.config.vocab_size

    was_training = model.training
    model.eval()
    try:
        with _no_grad():
            before, earlier, later = change_at(run, idx, t0, the_next_token)
            if earlier != 0.0:
                changed = idx.clone()
                the_next_token(changed)
                moved = (run(changed) - before).abs().amax(-1).amax(0)[:t0]  # per position
    finally:
        model.train(was_training)
    if earlier != 0.0:
        positions = named_positions([t for t in range(t0) if moved[t] != 0])
        raise CheckFailed(
            f"Leak test on {label}: changing the token at position {t0} moved the logits at "
            f"earlier {positions} by up to {earlier:.3g}; they must not move at all. "
            "Something reads the future: a mask that is missing, inverted or applied after the "
            "softmax, or a layer that mixes positions outside attention.",
            LEAK.code("reads_the_future"),
        )
    if later == 0.0:
        raise CheckFailed(
            f"Leak test on {label}: changing the token at position {t0} changed no logit at "
            "all, not even its own: the model ignores its input, so the test proves nothing.",
            LEAK.code("ignores_input"),
        )
    return t0, later
