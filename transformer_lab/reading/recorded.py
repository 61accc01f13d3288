"""What the notebooks say beside a recorded run: which run is shown and why, where it was
measured, the results table after the lab, and the recorded head distances and costs. Words in
templates/, numbers from data/baselines.json."""

from __future__ import annotations

from ..baselines import lab3_label, load_baselines, nearest_run, recorded_rows, run_key, seed_nats
from ..heads import RECORD_KEY, largest_within_layers
from .text import render


def nearest_reason(
    key: str, wanted: str, what: str, baselines: dict | None = None, section: str = "runs"
) -> str:
    """Why run `key` is the one shown to a student whose own mode and device class is `wanted`:
    a clause naming what is missing and how `key` was chosen (the order of `nearest_run`)."""
    runs = ((load_baselines() if baselines is None else baselines) or {}).get(section, {})
    (mode, device), (own_mode, own_device) = key.split("/"), wanted.split("/")
    how = (
        "same budget"
        if mode == own_mode
        else "same device class"
        if device == own_device
        else "neither"
    )
    missing = "recorded without" if wanted in runs else "not recorded"
    return render(
        "nearest_reason.md.j2", key=key, wanted=wanted, what=what, missing=missing, how=how
    )


def provenance_line(key: str, run: dict, wanted: str, reason: str | None = None) -> str:
    """Where and how a recorded run was measured; says so when it is not the student's own
    (`reason`: why this run was chosen, from `nearest_reason`)."""
    reason = reason or f"`{key}` is the nearest recorded run to your `{wanted}`"
    return render("provenance.md.j2", p=run["provenance"], key=key, wanted=wanted, reason=reason)


def _label(name: str, entry: dict) -> str:
    return lab3_label(entry.get("recipe")) if name == "lstm_lab3" else entry["model"]


def _shown(entry: dict, label: str | None = None) -> dict:
    """What a table shows of a recorded row: its label, numbers, and the loss of each seed."""
    shown = {"parameters": None} | entry  # the n-gram rows: no parameters to count
    return shown | {"label": label or entry["model"], "seed_nats": list(seed_nats(entry).values())}


def after_the_lab(
    mode: str,
    device,
    gpt_nats: float | None = None,
    lstm_nats: float | None = None,
    baselines: dict | None = None,
) -> str:
    """Markdown: the recorded table for this mode and device class (or the nearest recorded
    one), and your run beside it."""
    baselines = load_baselines() if baselines is None else baselines
    found = nearest_run(mode, device, has=recorded_rows, baselines=baselines)
    if found is None:
        return render("after_the_lab.md.j2", provenance=None, rows=[], own=[])
    key, run = found
    wanted = run_key(mode, device)
    reason = nearest_reason(key, wanted, "a results table", baselines)
    rows = recorded_rows(run)
    own = [
        {"label": label, "nats": mine, "recorded": _shown(rows[name])}
        for label, mine, name in (("mini-GPT", gpt_nats, "gpt"), ("LSTM", lstm_nats, "lstm"))
        if mine is not None and rows.get(name)
    ]
    return render(
        "after_the_lab.md.j2",
        provenance=provenance_line(key, run, wanted, reason),
        rows=[_shown(entry, _label(name, entry)) for name, entry in rows.items()],
        own=own,
    )


def recorded_distances(run: str | None, baselines: dict | None = None) -> str:
    """The recorded mean attention distance of every head of run `run`, the run whose model the
    notebook loaded (`load_trained_gpt` says which, and why that one), as text.

    run None means the student's own model: nothing recorded was measured on it, so nothing is
    shown beside it."""
    if run is None:
        return render("recorded_distances.md.j2", own=True)
    baselines = load_baselines() if baselines is None else baselines
    recorded = ((baselines or {}).get("runs") or {}).get(run)
    distances = (recorded or {}).get("results", {}).get("mean_attention_distance")
    if not distances:
        return render("recorded_distances.md.j2", own=False, run=run, distances=None)
    p = recorded["provenance"]
    return render(
        "recorded_distances.md.j2",
        own=False,
        run=run,
        distances=distances,
        seed=p.get("model", {}).get("seed", p["seeds"][0]),
        provenance=provenance_line(run, recorded, run),
    )


def recorded_head_costs(run: str | None, baselines: dict | None = None) -> str:
    """What the course recorded for run `run`, the run whose model the notebook loaded
    (`load_trained_gpt` says which), as text, a line a layer with that layer's costliest head;
    None means the student's own model, beside which nothing recorded belongs."""
    if run is None:
        return render("recorded_head_costs.md.j2", own=True)
    baselines = load_baselines() if baselines is None else baselines
    recorded = ((baselines or {}).get("runs") or {}).get(run) or {}
    found = recorded.get("results", {}).get(RECORD_KEY)
    costs = (found or {}).get("costs", [])
    rows = [
        {"costs": "  ".join(f"{cost:+.3f}" for cost in layer), "costliest": head + 1}
        for layer, head in zip(costs, largest_within_layers(costs) if costs else [], strict=True)
    ]
    return render("recorded_head_costs.md.j2", own=False, run=run, recorded=found, rows=rows)
