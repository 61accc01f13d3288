"""What training on the student's pieces will cost, said before it is paid.

Notebook 04 trains the mini-GPT on the student's attention, mask and input step: every step
calls them, in every layer. A piece that is right but slow (a loop over the queries instead of
one matrix product) can make a seed take several times as long, and a student finds out only
when the progress bar crawls. So before the first step, a few steps of the model on the
student's pieces and of the course's are timed on the student's device, and one line says what
a seed of this budget will take with each; past `SLOW` times the course's, it names the piece
that costs most and how to train on the course's pieces for this run.
"""

from __future__ import annotations

from dataclasses import dataclass

from .data import Corpus
from .runtime import Budget
from .student import Pieces, course_pieces
from .train import DEFAULT_LR, seconds_a_step

SLOW = 2.0  # times the course's step: past it, 04 offers the course's pieces for the run
SAME = 1.15  # below it, the line says the two train about as fast
STEPS = 3  # steps timed, after two to warm up


@dataclass(frozen=True)
class StepCost:
    """Seconds of a training step and a validation batch, on the student's pieces and on the
    course's, at one budget on one device."""

    budget: Budget
    device: str
    course: tuple[float, float]
    yours: tuple[float, float] | None  # None: no piece is the student's
    slowest: str | None = None  # the student's piece that costs most, where the step is slow

    def seed_s(self, times: tuple[float, float]) -> float:
        """A seed of the budget: its steps, and its validation estimates."""
        step_s, val_s = times
        estimates = -(-self.budget.steps // self.budget.eval_every)
        return self.budget.steps * step_s + estimates * self.budget.eval_batches * val_s

    @property
    def factor(self) -> float:
        return self.yours[0] / self.course[0] if self.yours else 1.0

    def said(self) -> str:
        """One line (two past SLOW): what a seed will take, and what to do if it is slow."""
        here = f"{self.budget.name} budget on {self.device}, timed over {STEPS} steps"
        course = _duration(self.seed_s(self.course))
        if self.yours is None:
            return f"One seed of the mini-GPT will take about {course} here ({here})."
        ms = f"{self.yours[0] * 1000:.0f} ms a step against {self.course[0] * 1000:.0f} ms"
        yours = _duration(self.seed_s(self.yours))
        if self.factor < SAME:
            return (
                f"Your pieces train about as fast as the course's ({ms}; {here}): one seed will "
                f"take about {yours}."
            )
        line = (
            f"Your pieces make each training step {self.factor:.1f}× as long as the course's "
            f"({ms}; {here}): one seed will take about {yours}, against {course} with the "
            "course's."
        )
        if self.factor < SLOW:
            return line
        return (
            f"{line}\nYour {self.slowest} costs the most. To train on the course's pieces this "
            'time, set PIECES = "course" in the first cell and run the notebook again; the '
            "results table says whose pieces trained."
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.1f} min" if minutes < 10 else f"{minutes:.0f} min"


def measure(pieces: Pieces, corpus: Corpus, budget: Budget) -> StepCost:
    """Time a few steps of fresh models on `pieces` and on the course's (see the module's doc)."""

    def times(chosen: Pieces) -> tuple[float, float]:
        model = chosen.model()
        return seconds_a_step(model, corpus, budget, lr=DEFAULT_LR["gpt"], steps=STEPS)

    course = course_pieces("")
    cost = StepCost(budget, str(corpus.device), times(course), None)
    theirs = [piece for piece in pieces if piece.yours]
    if not theirs:
        return cost
    cost = StepCost(budget, cost.device, cost.course, times(pieces), theirs[0].name)
    if cost.factor >= SLOW and len(theirs) > 1:
        alone = {p.name: times(course._replace(**{p.name: p}))[0] for p in theirs}
        cost = StepCost(budget, cost.device, cost.course, cost.yours, max(alone, key=alone.get))
    return cost
