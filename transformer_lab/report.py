"""The results table of notebook 04, as Markdown: one row per model, the same 60,394 characters;
each training time with the device it was measured on."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .evaluate import Score
from .train import stopped_words


@dataclass(frozen=True)
class ResultRow:
    model: str
    lab: int
    parameters: int | None  # None for count-based models
    steps: int | None  # None: counts, no training
    batch_size: int | None
    train_seconds: float | None
    nats: float
    perplexity: float
    bits: float
    recipe: dict | None = None  # how it trained (train.Recipe.as_dict); None for counts
    # where train_seconds was measured ("Tesla T4", "cpu"): shown beside it, since a row read
    # from the record and the student's own can sit in one table
    trained_on: str | None = None
    # the steps taken where Stop (■) ended the training, of `steps`; None: it took them all
    stopped_at: int | None = None

    @property
    def stopped(self) -> str | None:
        """'stopped at step 412 of 1,500' where Stop ended its training; None where it ran its
        budget. A stopped row is never a run of its budget: the table and the record say so."""
        if self.stopped_at is None:
            return None
        return stopped_words(self.stopped_at, self.steps)

    @classmethod
    def from_training(
        cls, model: str, lab: int, score: Score, history, parameters: int
    ) -> ResultRow:
        """A trained model's row, how and where it trained read from its `train.TrainHistory`."""
        from .runtime import device_name

        return cls.from_score(
            model,
            lab,
            score,
            parameters=parameters,
            steps=history.recipe.steps,
            batch_size=history.recipe.batch_size,
            train_seconds=history.wall_time_s,
            recipe=history.recipe.as_dict(),
            trained_on=device_name(history.device),
            stopped_at=history.stopped_at,
        )

    @classmethod
    def from_score(cls, model: str, lab: int, score: Score, **training) -> ResultRow:
        fields = {"parameters": None, "steps": None, "batch_size": None, "train_seconds": None}
        fields["recipe"] = None
        return cls(
            model,
            lab,
            **(fields | training),
            nats=score.nats,
            perplexity=score.perplexity,
            bits=score.bits,
        )

    def as_dict(self) -> dict:
        """Every field; `stopped_at` only where Stop ended the training, so that a row that ran
        its budget reads as rows always have (data/baselines.json)."""
        row = asdict(self)
        if self.stopped_at is None:
            del row["stopped_at"]
        return row


def _cell(value, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def results_markdown(rows: list[ResultRow]) -> str:
    lines = [
        "| model | lab | parameters | steps × batch | training time | test nats/char "
        "| perplexity | bits/char |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        steps = "counts" if r.steps is None else f"{r.steps:,} × {r.batch_size}"
        if r.stopped:
            steps = f"{r.stopped_at:,} of {r.steps:,} × {r.batch_size}, stopped"
        seconds = _cell(r.train_seconds, ",.0f") + (" s" if r.train_seconds is not None else "")
        if r.train_seconds is not None and r.trained_on:
            seconds += f" ({r.trained_on})"
        lines.append(
            f"| {r.model} | {r.lab} | {_cell(r.parameters, ',')} | {steps} | {seconds} "
            f"| {r.nats:.4f} | {r.perplexity:.3f} | {r.bits:.4f} |"
        )
    return "\n".join(lines + _stopped_note(rows))


def _stopped_note(rows: list[ResultRow]) -> list[str]:
    """A line under the table for the rows whose training Stop ended, none where there are none."""
    stopped = [f"the {r.model} {r.stopped}" for r in rows if r.stopped]
    if not stopped:
        return []
    return [
        "",
        f"Stop (■) ended the training early: {'; '.join(stopped)}. Such a row is what the model "
        "learned in the steps it took, not a run of the budget; run the training cell again to "
        "start over.",
    ]
