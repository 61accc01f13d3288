"""What notebook 04's training cell will cost, said before it is paid.

The cell trains the mini-GPT on the student's attention, mask and input step, then the LSTM, and
scores both on the test split. Every step of the mini-GPT calls the student's pieces, in every
layer: a piece that is right but slow (a loop over the queries instead of one matrix product)
can make the training take several times as long, and a student finds out only when the
progress bar crawls. So before the first step, a few steps of each model are timed on the
student's device, and the scoring of each on a few thousand test characters; one line says what
the whole cell will take, and how to stop it early.

A student's piece is "slow" against the course's own functions plugged into the model the same
way (`written_out`): the same equations, vectorised, on the same explicit path. The course's
pieces train on PyTorch's fused kernel, which no function written in a notebook can reach; a
right, vectorised answer is never called slow for that. Past `SLOW` times the course's functions,
the line names the piece that costs most and how to train on the course's pieces for this run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

from .data import Corpus
from .evaluate import evaluate_gpt, evaluate_lstm
from .lstm import CharLSTM
from .runtime import Budget
from .student import Pieces, course_pieces
from .train import DEFAULT_LR, seconds_a_step

SLOW = 2.0  # times the course's functions plugged in the same way: past it, 04 offers its pieces
SAME = 1.15  # below it, the line says the two train about as fast
STEPS = 3  # steps timed, after two to warm up
SCORED = 4096  # test characters scored to time the scoring (one batch of the GPT's windows)
PARAMETERS_CELL = "the parameters cell (the one that sets MODE)"
SETUP_CELL = '"Imports, the device, …"'  # the title of the cell that loads the pieces
STOP = "■ Stop ends a training early; the model keeps what it learned."


class CellCost(NamedTuple):
    """Seconds of each part of 04's training cell."""

    gpt: float  # training the mini-GPT, its validation estimates included
    lstm: float  # training the LSTM, the same way
    scoring: float  # scoring both on the budget's test characters

    @property
    def total(self) -> float:
        return self.gpt + self.lstm + self.scoring


@dataclass(frozen=True)
class StepCost:
    """Seconds of a training step and a validation batch of each model, and of scoring both, at
    one budget on one device."""

    budget: Budget
    device: str
    course: tuple[float, float]  # the mini-GPT on the course's pieces (PyTorch's fused kernel)
    lstm: tuple[float, float]
    scoring: tuple[float, float]  # the mini-GPT as it trains, and the LSTM, over the test split
    yours: tuple[float, float] | None = None  # None: no piece is the student's
    written: tuple[float, float] | None = None  # the course's functions where yours are plugged
    slowest: str | None = None  # the student's piece that costs most, where the step is slow

    def seed_s(self, times: tuple[float, float]) -> float:
        """A seed of the budget: its steps, and its validation estimates."""
        step_s, val_s = times
        estimates = -(-self.budget.steps // self.budget.eval_every)
        return self.budget.steps * step_s + estimates * self.budget.eval_batches * val_s

    def cell(self) -> CellCost:
        """What the training cell will take: both trainings and both scorings."""
        gpt = self.seed_s(self.yours or self.course)
        return CellCost(gpt, self.seed_s(self.lstm), sum(self.scoring))

    @property
    def factor(self) -> float:
        """The student's step against the course's functions plugged in the same way."""
        return self.yours[0] / self.written[0] if self.yours and self.written else 1.0

    @property
    def slow(self) -> bool:
        return self.factor >= SLOW

    def said(self) -> str:
        """What the cell will take, how the student's pieces pace it, and how to stop it."""
        cell = self.cell()
        lines = [
            f"This cell will take about {_duration(cell.total)} here: the mini-GPT "
            f"{_duration(cell.gpt)}, the LSTM {_duration(cell.lstm)}, scoring both "
            f"{_duration(cell.scoring)} ({self.budget.name} budget on {self.device}, timed over "
            f"{STEPS} steps)."
        ]
        if self.yours is not None:
            lines.append(self._pace())
        return "\n".join([*lines, STOP])

    def _pace(self) -> str:
        ms = f"{self.yours[0] * 1000:.0f} ms a step against {self.written[0] * 1000:.0f} ms"
        if self.factor < SAME:
            return (
                f"Your pieces train about as fast as the course's plugged in the same way ({ms})."
            )
        line = (
            f"Your pieces make each step of the mini-GPT {self.factor:.1f}× as long as the "
            f"course's plugged in the same way ({ms})."
        )
        if not self.slow:
            return line
        return (
            f"{line}\nYour {self.slowest} costs the most. On the course's pieces the mini-GPT "
            f'would take about {_duration(self.seed_s(self.course))}: set PIECES = "course" in '
            f"{PARAMETERS_CELL}, run it and the {SETUP_CELL} cell under it again, then this "
            "cell; the results table says whose pieces trained."
        )


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under 1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.1f} min" if minutes < 10 else f"{minutes:.0f} min"


def written_out(pieces: Pieces) -> Pieces:
    """`pieces` with the course's function in place of each of the student's, plugged in as the
    student's is (`Pieces.plug`): the yardstick a piece's speed is judged against."""
    theirs = [piece for piece in pieces if piece.yours]
    return pieces._replace(**{p.name: replace(p, fn=p.exercise.course) for p in theirs})


def seconds_to_score(model, evaluate: Callable, corpus: Corpus, budget: Budget) -> float:
    """Seconds `evaluate` takes on the budget's test characters, from `SCORED` of them timed
    after one warm-up: the scoring is linear in the characters."""
    characters = budget.test_characters or len(corpus.test)
    timed = min(SCORED, characters)
    model.to(corpus.device)
    evaluate(model, corpus, characters=timed)  # warm-up: a GPU's first batch picks its kernels
    begin = time.perf_counter()
    evaluate(model, corpus, characters=timed)
    return (time.perf_counter() - begin) * characters / timed


def measure(pieces: Pieces, corpus: Corpus, budget: Budget) -> StepCost:
    """Time fresh models on `pieces`, the course's and the LSTM, and the scoring of both (see the
    module's doc)."""

    def times(model, name: str = "gpt") -> tuple[float, float]:
        return seconds_a_step(model, corpus, budget, lr=DEFAULT_LR[name], steps=STEPS)

    scoring = (
        seconds_to_score(pieces.model(), evaluate_gpt, corpus, budget),
        seconds_to_score(CharLSTM(), evaluate_lstm, corpus, budget),
    )
    course = times(course_pieces("").model())
    cost = StepCost(budget, str(corpus.device), course, times(CharLSTM(), "lstm"), scoring)
    theirs = [piece for piece in pieces if piece.yours]
    if not theirs:
        return cost
    written = written_out(pieces)
    cost = replace(cost, yours=times(pieces.model()), written=times(written.model()))
    cost = replace(cost, slowest=theirs[0].name)
    if cost.slow and len(theirs) > 1:
        alone = {p.name: times(written._replace(**{p.name: p}).model())[0] for p in theirs}
        cost = replace(cost, slowest=max(alone, key=alone.get))
    return cost
