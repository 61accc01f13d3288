"""Notebook 04's run, saved beside its model for the notebook's "After the lab": both results
rows, the loss curves, the samples, the budget and the device.

The lecture files "After the lab" under what to read later, and on Colab later means a new
runtime: the T4 that trained is released before notebook 05 (a free account gets one GPU at a
time), and its variables go with it. So "After the lab" never reads them: it reads this file,
which `save_run` writes beside `mini_gpt.pt` and copies to the student's Drive with it, and
`load_run` finds where the model is found (the Drive, then beside the notebook). A CPU runtime
reads it as well as the T4 that wrote it, and what it shows is the run that made the saved
model (the file records the model's SHA-256).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..baselines import device_class
from ..report import ResultRow
from ..runtime import device_name
from ..saving import (
    DRIVE_FOLDER,
    TRAINED_GPT,
    _own_model,
    load_gpt,
    save_gpt,
    save_to_drive,
    sha256,
)

RUN_FILE = TRAINED_GPT.with_name("mini_gpt_run.json")  # beside the model, wherever it goes
LABELS = {"gpt": "mini-GPT", "lstm": "LSTM"}
PROMPT, SAMPLE_LENGTH, TEMPERATURE = "ROMEO:\n", 300, 0.8


@dataclass(frozen=True)
class Curve:
    """One model's loss curves as `plots.plot_loss_curves` reads a `train.TrainHistory`."""

    budget: str
    train_loss: list[tuple[int, float]]
    val_loss: list[tuple[int, float]]


@dataclass(frozen=True)
class SavedRun:
    record: dict  # the file's content
    path: Path  # where it was read from
    where: str  # the same, as a phrase: "from your Google Drive"

    @property
    def budget(self) -> str:
        return self.record["budget"]

    @property
    def device_class(self) -> str:
        return self.record["device_class"]

    @property
    def rows(self) -> dict[str, ResultRow]:
        return {name: ResultRow(**row) for name, row in self.record["rows"].items()}

    @property
    def nats(self) -> dict[str, float]:
        return {name: row["nats"] for name, row in self.record["rows"].items()}

    @property
    def stopped(self) -> dict[str, str]:
        """{model: 'stopped at step 412 of 1,500'} for each model whose training Stop (■) ended."""
        return {name: row.stopped for name, row in self.rows.items() if row.stopped}

    @property
    def budget_nats(self) -> dict[str, float | None]:
        """Each model's test loss where it ran the budget; None where Stop ended its training:
        not set beside the budget's recorded runs as one of them."""
        return {name: None if name in self.stopped else n for name, n in self.nats.items()}

    @property
    def own(self) -> tuple[str, dict[str, float]]:
        """(the budget `plots.plot_budgets` draws this run at, its test losses): where a model was
        stopped, a place of its own that says so, never the budget's."""
        stops = "; ".join(f"{LABELS[name]} {said}" for name, said in self.stopped.items())
        return (f"{self.budget}, {stops}" if stops else self.budget), self.nats

    @property
    def curves(self) -> dict[str, Curve]:
        return {
            LABELS[name]: Curve(self.budget, *(list(map(tuple, c[k])) for k in ("train", "val")))
            for name, c in self.record["curves"].items()
        }

    @property
    def levels(self) -> dict[str, float]:
        return self.record["levels"]

    def said(self) -> str:
        """One line: which run this is and where it was read from."""
        r = self.record
        return (
            f"Your run of notebook 04, read {self.where} ({self._shown_path}): the {r['budget']} "
            f"budget on {r['device']}, seed {r['seed']}, saved {r['saved'][:16].replace('T', ' ')} "
            f"UTC; the mini-GPT was built from {r['pieces']}.{self._stops_said}"
        )

    @property
    def _stops_said(self) -> str:
        if not self.stopped:
            return ""
        stops = "; ".join(f"the {LABELS[name]} {said}" for name, said in self.stopped.items())
        return (
            f" Stop (■) ended training early ({stops}): what a stopped model shows is not a run "
            f"of the {self.budget} budget, and is not set beside its recorded runs."
        )

    @property
    def _shown_path(self) -> str:
        """The file's path as the student knows it: inside the Drive, or beside the notebook."""
        if self.path == RUN_FILE:
            return str(RUN_FILE)
        return str(DRIVE_FOLDER / RUN_FILE.name)

    def samples(self) -> str:
        """Each model's sample, under a line that says how it was drawn."""
        how = f"{SAMPLE_LENGTH} characters after {PROMPT!r}, temperature {TEMPERATURE}"
        return "\n".join(
            f"--- {LABELS[name]} ({how}) ---\n{text}"
            for name, text in self.record["samples"].items()
        )

    def gpt(self, device="cpu"):
        """The saved mini-GPT of this run, from beside the file; refused where the model there
        is not the one this run saved (the notebook trained and saved again since)."""
        path = self.path.with_name(TRAINED_GPT.name)
        if not path.is_file() or sha256(path) != self.record["model_sha256"]:
            raise FileNotFoundError(
                f"{path} is missing or is not the model of this run (its SHA-256 differs): run "
                "notebook 04's training and saving cells again."
            )
        return load_gpt(path, device)[0]


def _sample(model, vocab) -> str:
    from ..sample import generate
    from ..student import printed

    prompt = vocab.encode(PROMPT)
    out = generate(model, prompt, SAMPLE_LENGTH, temperature=TEMPERATURE, seed=0)
    return "\n".join(filter(None, [vocab.decode(prompt + out.ids), printed(model)]))


def levels(counts: list[ResultRow], vocab) -> dict[str, float]:
    """The levels drawn beside the loss curves: a uniform guess's loss, and the count models'."""
    return {f"ln {len(vocab)} (uniform)": math.log(len(vocab))} | {
        f"{row.model}, test": row.nats for row in counts
    }


def save_run(
    trained: dict[str, tuple], counts: list[ResultRow], vocab, pieces: str, use_drive=None
) -> str:
    """Notebook 04's saving cell: `trained` ({"gpt": (model, history, row), "lstm": ...}) saved
    as the mini-GPT (mini_gpt.pt, for 05 and 06) and this run's file beside it, with the count
    models' rows `counts` as levels for the loss curves, both copied to the Drive as the setup
    cell decided; one line that says where they went. A model whose training Stop (■) ended is
    saved with its stop (its row's `stopped_at`, and the mini-GPT's file), and the line says so."""
    gpt, history, gpt_row = trained["gpt"]
    stop = {} if history.stopped_at is None else {"stopped_at": history.stopped_at}
    model = save_gpt(
        gpt, budget=history.budget, seed=history.seed, test_nats=gpt_row.nats, pieces=pieces, **stop
    )
    record = {
        "budget": history.budget,
        "device": device_name(history.device),
        "device_class": device_class(history.device),
        "seed": history.seed,
        "pieces": pieces,
        "saved": datetime.now(UTC).isoformat(timespec="seconds"),
        "model_sha256": sha256(model),
        "rows": {name: row.as_dict() for name, (_, _, row) in trained.items()},
        "curves": {
            name: {"train": h.train_loss, "val": h.val_loss} for name, (_, h, _) in trained.items()
        },
        "levels": levels(counts, vocab),
        "samples": {name: _sample(m, vocab) for name, (m, _, _) in trained.items()},
    }
    run = model.with_name(RUN_FILE.name)
    run.write_text(json.dumps(record, indent=1), encoding="utf-8")
    stops = SavedRun(record, run, "beside this notebook")._stops_said
    return f"Saved {model} and {run}. {save_to_drive(model, use_drive, also=(run,))}{stops}"


def load_run(use_drive=None) -> SavedRun:
    """The run notebook 04 saved, from beside the student's model (their Drive on Colab, then
    beside the notebook); FileNotFoundError, saying what to run, where there is none."""
    model, _, why_not = _own_model(use_drive)
    path = model.with_name(RUN_FILE.name) if model is not None else None
    if path is None or not path.is_file():
        missing = why_not or f"{model} has no {RUN_FILE.name} beside it"
        raise FileNotFoundError(
            f"No saved run of notebook 04 to show: {missing}. Run the notebook from the top down "
            "to its saving cell (it trains both models), then this section."
        )
    where = "from beside this notebook" if model == TRAINED_GPT else "from your Google Drive"
    return SavedRun(json.loads(path.read_text(encoding="utf-8")), path, where)
