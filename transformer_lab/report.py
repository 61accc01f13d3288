"""The results table of notebook 04, as Markdown: one row per model, the same 60,394 characters."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .evaluate import Score


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
        return asdict(self)


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
        seconds = _cell(r.train_seconds, ".0f") + (" s" if r.train_seconds is not None else "")
        lines.append(
            f"| {r.model} | {r.lab} | {_cell(r.parameters, ',')} | {steps} | {seconds} "
            f"| {r.nats:.4f} | {r.perplexity:.3f} | {r.bits:.4f} |"
        )
    return "\n".join(lines)
