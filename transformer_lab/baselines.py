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
    """Markdown: the recorded table for this mode and device class, and your run beside it."""
    baselines = load_baselines()
    key = run_key(mode, device)
    run = (baselines or {}).get("runs", {}).get(key)
    if run is None:
        recorded = ", ".join(sorted((baselines or {}).get("runs", {}))) or "none"
        return (
            f"No measurements are recorded for `{key}` yet (recorded: {recorded}). "
            "A maintainer records them with `make regenerate-baselines`."
        )
    p = run["provenance"]
    lines = [
        f"Recorded by `make regenerate-baselines` on {p['device']} ({p['precision']}), "
        f"mode `{p['mode']}` (batch {p['batch_size']} × {p['steps']:,} steps), seeds "
        f"{', '.join(map(str, p['seeds']))}, commit `{p['git_commit'][:10]}`, {p['date']}.",
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
    """The recorded mean attention distance of every head, as text, or why there is none."""
    baselines = load_baselines() if baselines is None else baselines
    key = run_key(mode, device)
    run = (baselines or {}).get("runs", {}).get(key)
    distances = (run or {}).get("results", {}).get("mean_attention_distance")
    if not distances:
        return f"No mean attention distances are recorded for `{key}` yet."
    p = run["provenance"]
    lines = [f"Recorded for {key} ({p['device']}, seed {p['seeds'][0]}, {p['date'][:10]}):"]
    for layer, heads in enumerate(distances, start=1):
        lines.append(f"  layer {layer}: " + "  ".join(f"{d:5.1f}" for d in heads))
    return "\n".join(lines)
