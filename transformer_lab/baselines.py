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
    compute capability 8, e.g. a T4) or cuda-bf16 (8 and above)."""
    from .runtime import precision_for

    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda-{precision_for(device).name}"
    return device.type


def run_key(mode: str, device) -> str:
    return f"{mode}/{device_class(device)}"


def _rows(run: dict) -> dict:
    return run.get("results", {}).get("rows", {})


# Where nothing is recorded for a device class, the nearest one is shown: these in this order.
DEVICE_CLASSES = ("cuda-fp16", "cuda-bf16", "cpu", "mps")
MODES = ("full", "quick")  # smoke runs are for tests: shown only when asked for


def nearest_run(mode: str, device, has=None, baselines: dict | None = None):
    """(key, run) recorded for this mode and device class; else the same mode on another device
    class, then the other mode; None where nothing is recorded. `has(run)` picks only runs that
    hold what the caller needs."""
    baselines = load_baselines() if baselines is None else baselines
    runs = (baselines or {}).get("runs", {})
    wanted = device_class(device)
    classes = [wanted, *(c for c in DEVICE_CLASSES if c != wanted)]
    for m in dict.fromkeys([mode, *MODES]):
        for c in classes:
            run = runs.get(f"{m}/{c}")
            if run is not None and (has is None or has(run)):
                return f"{m}/{c}", run
    return None


def provenance_line(key: str, run: dict, wanted: str) -> str:
    """Where and how a recorded run was measured; says so when it is not the student's own."""
    p = run["provenance"]
    line = (
        f"Recorded by `make regenerate-baselines` on {p['device']} ({p['precision']}), "
        f"mode `{p['mode']}` (batch {p['batch_size']} × {p['steps']:,} steps), seeds "
        f"{', '.join(map(str, p['seeds']))}, commit `{p['git_commit'][:10]}`, {p['date'][:10]}."
    )
    if key != wanted:
        line += (
            f" Nothing is recorded for your `{wanted}` yet, so this is the nearest recorded run, "
            f"`{key}`: compare shapes and orders, not the last digits."
        )
    return line


def lab3_lstm_row(baselines: dict | None = None):
    """Lab 3's own LSTM run as a ResultRow, from any recorded run that has it."""
    from .report import ResultRow

    baselines = load_baselines() if baselines is None else baselines
    for run in (baselines or {}).get("runs", {}).values():
        row = _rows(run).get("lstm_lab3")
        if row:
            return ResultRow(**row)
    return None


def _band(entry: dict) -> str:
    seeds = entry.get("seeds", {})
    values = [s["nats"] for s in seeds.values()]
    if len(values) < 2:
        return f"{entry['nats']:.4f}"
    return f"{entry['nats']:.4f} (seeds {min(values):.4f} – {max(values):.4f}, n = {len(values)})"


def after_the_lab(
    mode: str, device, gpt_nats: float | None = None, lstm_nats: float | None = None
) -> str:
    """Markdown: the recorded table for this mode and device class (or the nearest recorded
    one), and your run beside it."""
    found = nearest_run(mode, device, has=_rows)
    if found is None:
        return (
            "No measurements are recorded yet. A maintainer records them with "
            "`make regenerate-baselines`."
        )
    key, run = found
    lines = [
        provenance_line(key, run, run_key(mode, device)),
        "",
        "| model | parameters | test nats/char (mean; seed range) | perplexity | bits/char |",
        "|---|---:|---|---:|---:|",
    ]
    for entry in _rows(run).values():
        params = "–" if entry.get("parameters") is None else f"{entry['parameters']:,}"
        lines.append(
            f"| {entry['model']} | {params} | {_band(entry)} "
            f"| {entry['perplexity']:.3f} | {entry['bits']:.4f} |"
        )
    for label, mine, name in (("mini-GPT", gpt_nats, "gpt"), ("LSTM", lstm_nats, "lstm")):
        recorded = _rows(run).get(name)
        if mine is not None and recorded:
            lines.append(f"\nYour {label}: {mine:.4f} nats/char; recorded: {_band(recorded)}.")
    return "\n".join(lines)


def _merge(into: dict, new: dict) -> dict:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


def record(results_path: str | Path | None, entries: dict) -> None:
    """Merge `entries` into the notebook's results file (the pipeline's RESULTS parameter).

    A student's run passes RESULTS = None, and nothing is written.
    """
    if results_path is None:
        return
    path = Path(results_path)
    current = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    path.write_text(json.dumps(_merge(current, entries), indent=1), encoding="utf-8")


def recorded_distances(mode: str, device, baselines: dict | None = None) -> str:
    """The recorded mean attention distance of every head (for this mode and device class, or
    the nearest recorded run), as text, or why there is none."""

    def distances_of(run: dict):
        return run.get("results", {}).get("mean_attention_distance")

    found = nearest_run(mode, device, has=distances_of, baselines=baselines)
    if found is None:
        return "No mean attention distances are recorded yet."
    key, run = found
    distances = distances_of(run)
    lines = [
        provenance_line(key, run, run_key(mode, device)),
        f"Seed {run['provenance']['seeds'][0]}:",
    ]
    for layer, heads in enumerate(distances, start=1):
        lines.append(f"  layer {layer}: " + "  ".join(f"{d:5.1f}" for d in heads))
    return "\n".join(lines)
