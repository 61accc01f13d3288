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


def nearest_reason(key: str, wanted: str, what: str, baselines: dict | None = None) -> str:
    """Why run `key` is the one shown to a student whose own mode and device class is `wanted`:
    a clause naming what is missing and how `key` was chosen (the order of `nearest_run`)."""
    if key == wanted:
        return f"it is the run recorded for your budget and device class, `{wanted}`"
    runs = ((load_baselines() if baselines is None else baselines) or {}).get("runs", {})
    if wanted in runs:
        missing = f"`{wanted}` is recorded without {what}"
    else:
        missing = f"nothing is recorded for your `{wanted}`"
    (mode, device), (own_mode, own_device) = key.split("/"), wanted.split("/")
    if mode == own_mode:
        how = "the same budget on another device class (a budget match is preferred)"
    elif device == own_device:
        how = "the same device class at the other budget, as no run at your budget has it"
    else:
        how = "another budget and device class, as nothing nearer has it"
    return f"{missing}, and `{key}` is the nearest recorded run with {what}: {how}"


def provenance_line(key: str, run: dict, wanted: str, reason: str | None = None) -> str:
    """Where and how a recorded run was measured; says so when it is not the student's own
    (`reason`: why this run was chosen, from `nearest_reason`)."""
    p = run["provenance"]
    line = (
        f"Recorded by `make regenerate-baselines` on {p['device']} ({p['precision']}), "
        f"mode `{p['mode']}` (batch {p['batch_size']} × {p['steps']:,} steps), seeds "
        f"{', '.join(map(str, p['seeds']))}, commit `{p['git_commit'][:10]}`, {p['date'][:10]}."
    )
    if key != wanted:
        reason = reason or f"`{key}` is the nearest recorded run to your `{wanted}`"
        line += (
            f" This is not your own run: {reason}. Compare shapes and orders, not the last digits."
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
    wanted = run_key(mode, device)
    lines = [
        provenance_line(key, run, wanted, nearest_reason(key, wanted, "a results table")),
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


# The lecture's reading of its own table (Lab 5, "After the Lab"), phrase by phrase, and what
# each phrase is taken to cover, so that this course's numbers can be held against it. The
# lecture's own figures are not repeated: a notebook shows only numbers this course measured.
A_FEW_HUNDREDTHS = (0.01, 0.1)  # nats: one hundredth or more, less than a tenth
ABOUT_AN_ORDER_OF_MAGNITUDE = (5.0, 20.0)  # a ratio of times within a factor of two of ten


def _recorded_at(mode: str, device, has, baselines: dict) -> tuple[str, dict] | None:
    """The run of exactly this mode, on the student's device class or else the nearest one."""
    runs = (baselines or {}).get("runs", {})
    wanted = device_class(device)
    for c in [wanted, *(c for c in DEVICE_CLASSES if c != wanted)]:
        run = runs.get(f"{mode}/{c}")
        if run is not None and has(run):
            return f"{mode}/{c}", run
    return None


def _seeds(entry: dict, run: dict) -> list[str]:
    """The seeds a row was measured with: its own, else those of its run."""
    return sorted(entry.get("seeds") or map(str, run["provenance"]["seeds"]), key=int)


def _seed_words(seeds: list[str]) -> str:
    return f"seed {seeds[0]} alone" if len(seeds) == 1 else f"the mean of seeds {', '.join(seeds)}"


def _spread(entry: dict) -> float | None:
    values = [s["nats"] for s in (entry.get("seeds") or {}).values()]
    return max(values) - min(values) if len(values) > 1 else None


def _where(value: float, band: tuple[float, float]) -> str:
    return "below" if value < band[0] else "above" if value >= band[1] else "within"


def _gpt_against_lstm(key: str, run: dict, budget: str) -> tuple[str, str | None]:
    """The lecture's reading of GPT against the retrained LSTM at one budget, this run's numbers,
    and how they differ (None: they agree)."""
    gpt, lstm = _rows(run)["gpt"], _rows(run)["lstm"]
    seeds = _seeds(gpt, run)
    lead = lstm["nats"] - gpt["nats"]  # above 0: the GPT is ahead (the lower loss)
    leader, size = ("GPT" if lead > 0 else "LSTM"), abs(lead)
    spreads = [s for s in (_spread(gpt), _spread(lstm)) if s is not None]
    if budget == "full":
        lecture = (
            "the GPT ahead by a few hundredths of a nat, from a single seed, which it reads as "
            "a tie, not a ranking"
        )
        expected = "GPT"
    else:
        lecture = (
            "the LSTM wins clearly, three seeds of each model, whose seeds spread over a few "
            "hundredths of a nat"
        )
        expected = "LSTM"
    text = (
        f"**GPT against the retrained LSTM, {budget} budget.** The lecture: {lecture}. Here "
        f"(`{key}`, {_seed_words(seeds)}): the {leader} is ahead by {size:.3f} nats (GPT "
        f"{gpt['nats']:.4f}, LSTM {lstm['nats']:.4f})."
    )
    if spreads:
        text += (
            f" The seeds of each model spread over {max(spreads):.3f} nats at most, so the gap "
            f"is {'larger' if size > max(spreads) else 'no larger'} than what a seed changes."
        )
    else:
        text += " One seed gives no measure of how far another seed would move either model."
    differs = None
    if leader != expected:
        differs = f"at the {budget} budget the {leader}, not the {expected}, is ahead"
        if budget == "full" and not spreads and _where(size, A_FEW_HUNDREDTHS) != "above":
            text += (
                " A gap this small from one seed is still a tie, as the lecture reads its own; "
                "only the direction differs."
            )
    elif budget == "full" and _where(size, A_FEW_HUNDREDTHS) != "within":
        more = "more" if _where(size, A_FEW_HUNDREDTHS) == "above" else "less"
        differs = f"the GPT's lead at the full budget is {more} than a few hundredths of a nat"
    elif budget != "full" and not spreads:
        differs = "the quick budget has one seed, so the LSTM's clear win cannot be checked"
    elif budget != "full" and size <= max(spreads):
        differs = "at the quick budget the LSTM's lead is no larger than the spread of the seeds"
    return text, differs


def _retrained_lstm(key: str, run: dict) -> tuple[str, str | None]:
    lstm, lab3 = _rows(run)["lstm"], _rows(run).get("lstm_lab3")
    head = (
        "**Retraining the LSTM.** The lecture: training Lab 3's LSTM with the GPT's loop and "
        "budget moved it by a few hundredths of a nat."
    )
    if lab3 is None:
        return head + f" Lab 3's own run is not recorded in `{key}`: not checked here.", None
    moved = lab3["nats"] - lstm["nats"]  # above 0: the GPT's loop did better
    text = (
        f"{head} Here (`{key}`): from {lab3['nats']:.4f} (Lab 3's own run, one run) to "
        f"{lstm['nats']:.4f} ({_seed_words(_seeds(lstm, run))}), "
        f"{'lower' if moved > 0 else 'higher'} by {abs(moved):.3f} nats."
    )
    where = _where(abs(moved), A_FEW_HUNDREDTHS)
    if where == "within":
        return text, None
    amount = "more than a few hundredths" if where == "above" else "less than a hundredth"
    return text, f"retraining moved the LSTM by {amount} of a nat"


def _training_time(key: str, run: dict) -> tuple[str, str | None]:
    gpt, lstm, p = _rows(run)["gpt"], _rows(run)["lstm"], run["provenance"]
    head = (
        "**Training time.** The lecture: on its CPU the GPT took about an order of magnitude "
        "longer to train than the LSTM."
    )
    if not gpt.get("train_seconds") or not lstm.get("train_seconds"):
        return head + f" `{key}` has no training times: not checked here.", None
    ratio = gpt["train_seconds"] / lstm["train_seconds"]
    several = len(_seeds(gpt, run)) > 1
    text = (
        f"{head} Here (`{key}`, {p['device']}, {p['precision']}): {ratio:.1f} times as long "
        f"({gpt['train_seconds']:,.0f} s against {lstm['train_seconds']:,.0f} s"
        f"{', each the mean over the seeds' if several else ''})."
    )
    if run.get("device_class", key.split("/")[1]) != "cpu":
        text += (
            " The lecture's times are CPU times; these are not, and on a GPU the transformer's "
            "work runs in parallel over positions."
        )
    where = _where(ratio, ABOUT_AN_ORDER_OF_MAGNITUDE)
    if where == "within":
        return text, None
    amount = "well under" if where == "below" else "well over"
    return text, f"the GPT took {amount} an order of magnitude longer to train than the LSTM"


def lecture_comparison(device, baselines: dict | None = None) -> str:
    """Markdown: the lecture's reading of its own table set against this course's recorded runs
    (the full and the quick budget, on the student's device class or the nearest recorded one):
    the gap between GPT and LSTM and its direction, how far retraining moved the LSTM, the ratio
    of training times, the seeds behind each, and in the end where the two differ."""
    baselines = load_baselines() if baselines is None else baselines

    def compared(run: dict) -> bool:
        return {"gpt", "lstm"} <= set(_rows(run))

    lines, differences = ["**The lecture's reading against this course's numbers**", ""], []
    for budget, points in (
        ("full", (_gpt_against_lstm, _retrained_lstm, _training_time)),
        ("quick", (_gpt_against_lstm,)),
    ):
        found = _recorded_at(budget, device, compared, baselines)
        if found is None:
            lines.append(
                f"- Nothing is recorded at the {budget} budget: the lecture's reading of it is "
                "not checked here."
            )
            continue
        for point in points:
            args = (*found, budget) if point is _gpt_against_lstm else found
            text, differs = point(*args)
            lines.append(f"- {text}" + (f" **Unlike the lecture: {differs}.**" if differs else ""))
            differences += [differs] if differs else []
    lines.append("")
    if differences:
        lines.append(
            "**Where this course's measurement differs from the lecture's:** "
            + "; ".join(differences)
            + ". The lecture reads its own run; the rows above are this course's, measured at "
            "the stated budget, device and seeds."
        )
    else:
        lines.append("**On every point checked here, the course agrees with the lecture.**")
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


def recorded_distances(
    run: str | None, wanted: str | None = None, baselines: dict | None = None
) -> str:
    """The recorded mean attention distance of every head of run `run`, the run whose model the
    notebook loaded (`load_trained_gpt` says which), as text with the reason it is that run.

    run None means the student's own model: nothing recorded was measured on it, so nothing is
    shown beside it. wanted: the student's own mode and device class (`run_key`)."""
    if run is None:
        return (
            "You are looking at your own model, so the distances above are the only ones that "
            "belong to it: the course's recorded distances were measured on other models (other "
            "seeds, budgets or machines), and are not shown beside yours."
        )
    baselines = load_baselines() if baselines is None else baselines
    recorded = ((baselines or {}).get("runs") or {}).get(run)
    distances = (recorded or {}).get("results", {}).get("mean_attention_distance")
    if not distances:
        return f"No mean attention distances are recorded for run `{run}`, whose model this is."
    seed = recorded["provenance"].get("model", {}).get("seed", recorded["provenance"]["seeds"][0])
    why = nearest_reason(run, wanted or run, "a saved model", baselines)
    lines = [
        f"Recorded for run `{run}`, the run whose model (seed {seed}) is loaded above: {why}. The "
        "course measured them on the same validation windows, so they should match yours above "
        "apart from rounding and the device's arithmetic.",
        provenance_line(run, recorded, run),
    ]
    for layer, heads in enumerate(distances, start=1):
        lines.append(f"  layer {layer}: " + "  ".join(f"{d:5.1f}" for d in heads))
    return "\n".join(lines)
