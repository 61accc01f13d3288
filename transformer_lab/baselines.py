"""data/baselines.json: the measured numbers the notebooks show, found and read from anywhere.

Looked for, in order: $TRANSFORMER_LAB_BASELINES; data/baselines.json above the working folder
(a notebook in notebooks/ of a clone, which is also how the Colab setup cell runs them); the
clone this package was installed from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from .train import LAB3_RECIPE, training_summary

ENV = "TRANSFORMER_LAB_BASELINES"


def baselines_path() -> Path | None:
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    here = Path.cwd()
    candidates = [
        here / "data" / "baselines.json",
        here.parent / "data" / "baselines.json",
        Path(__file__).resolve().parents[1] / "data" / "baselines.json",
    ]
    return next((p for p in candidates if p.is_file()), None)


def load_baselines() -> dict | None:
    """The recorded baselines, or None where none are recorded or the file is not found."""
    path = baselines_path()
    if path is None or not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def device_class(device) -> str:
    """Runs are kept apart by what sets their numerics and speed: cpu, mps, cuda-fp16 (below
    compute capability 8, e.g. a T4) or cuda-bf16 (8 and above). A device class passes as it is:
    a saved run names the class it trained on, read later on a machine that may lack it."""
    from .runtime import precision_for

    if isinstance(device, str) and device in DEVICE_CLASSES:
        return device
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda-{precision_for(device).name}"
    return device.type


def run_key(mode: str, device) -> str:
    return f"{mode}/{device_class(device)}"


def recorded_rows(run: dict) -> dict:
    """A run's results rows by name (trigram, 5gram, gpt, lstm, lstm_lab3), {} where none."""
    return run.get("results", {}).get("rows", {})


# Where nothing is recorded for a device class, the nearest one is shown: these in this order.
DEVICE_CLASSES = ("cuda-fp16", "cuda-bf16", "cpu", "mps")
# The budgets a student is shown, the lecture's table's first; smoke runs are for tests, shown
# only when asked for. (runtime.MODES are the modes a notebook runs in.)
RECORDED_MODES = ("full", "quick")


def _nearest_classes(device) -> list[str]:
    """The student's device class, then the others in DEVICE_CLASSES order."""
    wanted = device_class(device)
    return [wanted, *(c for c in DEVICE_CLASSES if c != wanted)]


def nearest_run(mode: str, device, has=None, baselines: dict | None = None, section="runs"):
    """(key, run) recorded for this mode and device class; else the same mode on another device
    class, then the other mode; None where nothing is recorded. `has(run)` picks only runs that
    hold what the caller needs; `section`: "runs", or "ablations" for the ablation ladder."""
    baselines = load_baselines() if baselines is None else baselines
    runs = (baselines or {}).get(section, {})
    for m in dict.fromkeys([mode, *RECORDED_MODES]):
        for c in _nearest_classes(device):
            run = runs.get(f"{m}/{c}")
            if run is not None and (has is None or has(run)):
                return f"{m}/{c}", run
    return None


def lab3_label(recipe: dict | None = None) -> str:
    """Lab 3's LSTM row is Lab 3's recipe trained again by this course's pipeline (notebook 04,
    full runs), not a number from Lab 3 itself: every table and sentence shows it under this
    label, whatever label the run was recorded with. How it trained is read from the row's
    recorded recipe (LAB3_RECIPE where a row records none)."""
    summary = training_summary(recipe or LAB3_RECIPE.as_dict())
    return f"LSTM, d_h 256, Lab 3's recipe ({summary}), re-run by this course's pipeline"


def lab3_lstm_row(baselines: dict | None = None):
    """The LSTM trained with Lab 3's recipe by this course's pipeline, as a ResultRow, from any
    recorded run that has it."""
    from .report import ResultRow

    baselines = load_baselines() if baselines is None else baselines
    for run in (baselines or {}).get("runs", {}).values():
        row = recorded_rows(run).get("lstm_lab3")
        if row:
            where = row.get("trained_on") or run["provenance"]["device"]
            return ResultRow(
                **(row | {"model": lab3_label(row.get("recipe")), "trained_on": where})
            )
    return None


def seed_nats(entry: dict) -> dict[str, float]:
    """A row's test loss per seed ({} where the row records no seeds of its own)."""
    return {seed: s["nats"] for seed, s in (entry.get("seeds") or {}).items()}


def _compared(run: dict) -> bool:
    return {"gpt", "lstm"} <= set(recorded_rows(run))


def recorded_budgets(device, baselines: dict | None = None) -> dict[str, tuple[str, dict]]:
    """{budget: (key, run)} for the full and the quick budget: the run of exactly that budget
    with GPT and LSTM rows, on the student's device class or else the nearest one recorded."""
    baselines = load_baselines() if baselines is None else baselines
    runs = (baselines or {}).get("runs", {})
    found = {}
    for budget in RECORDED_MODES:
        for c in _nearest_classes(device):
            run = runs.get(f"{budget}/{c}")
            if run is not None and _compared(run):
                found[budget] = (f"{budget}/{c}", run)
                break
    return found


def _merge(into: dict, new: dict) -> dict:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


def _stopped_rows(entries: dict, at: str = "") -> list[str]:
    """The places in `entries` ("rows/gpt/seeds/0") of the rows whose training Stop ended."""
    if entries.get("stopped_at") is not None:
        return [at]
    return [
        place
        for key, value in entries.items()
        if isinstance(value, dict)
        for place in _stopped_rows(value, f"{at}/{key}".lstrip("/"))
    ]


def record(results_path: str | Path | None, entries: dict) -> None:
    """Merge `entries` into the notebook's results file (the pipeline's RESULTS parameter).

    A student's run passes RESULTS = None, and nothing is written. A row whose training Stop (■)
    ended (its `stopped_at` set) is refused, ValueError, and nothing is written: the notebook
    stops there, and so does the pipeline, which then records nothing of the run.
    """
    if results_path is None:
        return
    stopped = _stopped_rows(entries)
    if stopped:
        raise ValueError(
            f"not recorded: Stop ended the training of {', '.join(stopped)}; a stopped run is not "
            "the budget's run. Run the notebook again to the end."
        )
    path = Path(results_path)
    current = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    path.write_text(json.dumps(_merge(current, entries), indent=1), encoding="utf-8")
