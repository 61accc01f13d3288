"""The notebooks' figures. Each function draws one figure from numbers it is given, measured by
the notebook or read from data/baselines.json, and returns it labelled (title, axes, legend) for
the notebook to show with `plt.show()`. They draw with pyplot, so that a notebook's inline
backend renders them.

Every figure reads without colour: series differ by marker, line style or hatching as well as
by colour, and maps use a colormap whose lightness rises monotonically (CVD_SAFE), so that it
reads in grey and to a colour-blind eye. Beside a figure, a `..._line` function gives what it
shows in numbers, as one printed line."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FormatStrFormatter

from ..baselines import recorded_budgets, seed_nats
from ..heads import largest_within_layers

MODELS = {"gpt": "mini-GPT", "lstm": "LSTM"}
COLOURS = {"gpt": "tab:blue", "lstm": "tab:orange"}  # blue and orange: apart to every eye
MARKERS = {"gpt": "o", "lstm": "s"}  # and apart without colour
YOUR_MARKERS = {"gpt": "*", "lstm": "X"}
LINESTYLES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx")
SEED_MARKERS = ("o", "s", "^", "v", "P", "X", "D")
# Colormaps whose lightness rises (or falls) monotonically, perceptually uniform or of one hue:
# a map in any of them reads in grey and to a colour-blind eye. Diverging red-blue or red-green
# maps and rainbows (RdBu, RdYlGn, jet) do not: tests/test_plots.py holds every map to it.
CVD_SAFE = ("viridis", "cividis", "magma", "inferno", "plasma", "Blues", "Greys")


def plot_score_spread(spread: Mapping[int, Mapping[str, float]]) -> Figure:
    """Notebook 01: the measured standard deviation of q·k and of q·k/√d_k at each d_k, beside
    the √d_k that Equation 5 predicts for the raw scores and the 1 it predicts for the scaled."""
    d_k = sorted(spread)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    grid = np.geomspace(d_k[0], d_k[-1], 100)
    ax.plot(grid, np.sqrt(grid), color="grey", label="√d_k (Equation 5, raw)")
    ax.axhline(1.0, color="grey", linestyle=":", label="1 (Equation 5, scaled)")
    ax.plot(d_k, [spread[d]["raw"] for d in d_k], "o", label="std of q·k, measured")
    ax.plot(d_k, [spread[d]["scaled"] for d in d_k], "s", label="std of q·k / √d_k, measured")
    ax.set_xscale("log", base=2)
    ax.set_xticks(d_k, [str(d) for d in d_k])
    ax.set_title("Spread of the attention scores at initialization")
    ax.set_xlabel("d_k")
    ax.set_ylabel("standard deviation of the scores")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_leak(moved: Mapping[str, Sequence[float]], t0: int) -> Figure:
    """Notebook 02: for each attention step (`moved`: label -> the largest change of the output
    v̄_t at every position t), how far each output moved when only the input at t0 changed."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(moved)
    for n, (label, changes) in enumerate(moved.items()):
        positions = np.arange(len(changes)) + (n - (len(moved) - 1) / 2) * width
        hatch = HATCHES[n % len(HATCHES)]
        changes = np.asarray(changes, dtype=float)
        ax.bar(positions, changes, width=width, hatch=hatch, edgecolor="black", label=label)
    ax.axvspan(-0.5, t0 - 0.5, color="grey", alpha=0.15, label=f"before position {t0}: must be 0")
    ax.set_title(f"Leak test: the input at position {t0} changed, every output measured")
    ax.set_xlabel("position t")
    ax.set_ylabel("largest change of v̄_t")
    T = len(next(iter(moved.values())))
    ax.set_xticks(range(T))
    ax.set_xlim(-0.5, T - 0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def leak_line(moved: Mapping[str, Sequence[float]], t0: int) -> str:
    """What `plot_leak` draws, in numbers: for each attention step, the largest change of an
    output before t0 (0 where nothing leaks) and from t0 on."""
    parts = []
    for label, changes in moved.items():
        changes = np.asarray(changes, dtype=float)
        before, after = changes[:t0].max(initial=0.0), changes[t0:].max(initial=0.0)
        parts.append(f"{label}: {before:.3g} before position {t0}, {after:.3g} from it on")
    return f"Largest change of an output: {'; '.join(parts)}."


MASK_COLOURS = ListedColormap(["#f0f0f0", "tab:blue"])  # light and dark: apart in grey too


def plot_masks(masks: Mapping[str, object]) -> Figure:
    """Notebook 02: bool masks (title -> (T_q, T_k), True where query t may read key i) side by
    side, as heat maps."""
    fig, axes = plt.subplots(1, len(masks), figsize=(3.2 * len(masks), 3.4), squeeze=False)
    for ax, (title, mask) in zip(axes[0], masks.items(), strict=True):
        grid = np.asarray(mask, dtype=bool)
        ax.imshow(grid, cmap=MASK_COLOURS, vmin=0, vmax=1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key position i")
        ax.set_ylabel("query position t")
        ax.set_xticks(range(grid.shape[1]))
        ax.set_yticks(range(grid.shape[0]))
    legend = [
        Patch(color=MASK_COLOURS(1), label="may read"),
        Patch(color=MASK_COLOURS(0), label="may not read"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=2, fontsize=8)
    fig.suptitle("Which keys each query may read")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def _budget_label(budget: str, run: dict) -> str:
    p = run["provenance"]
    return f"{budget}\n{p['batch_size']} × {p['steps']:,} steps\n({run.get('device_class')})"


def _seeds_at(ax, x: float, name: str, entry: dict, labelled: set[str]) -> None:
    """Each seed as a dot and their range as a bar, at x; each legend entry named once."""
    values = list(seed_nats(entry).values()) or [entry["nats"]]

    def label(text: str) -> str:
        first = text not in labelled
        labelled.add(text)
        return text if first else "_nolegend_"

    colour, model = COLOURS[name], MODELS[name]
    each = label(f"{model}, each seed")
    ax.plot([x] * len(values), values, MARKERS[name], color=colour, label=each)
    if len(values) > 1:
        label_ = label(f"{model}, range of the seeds")
        ax.vlines(x, min(values), max(values), color=colour, linewidth=6, alpha=0.3, label=label_)


def plot_budgets(
    baselines: dict, device="cpu", own: tuple[str, Mapping[str, float]] | None = None
) -> Figure:
    """Notebook 04: mini-GPT against LSTM at the quick and the full budget, each recorded seed
    and the range of the seeds, from the recorded runs of the student's device class (or the
    nearest recorded one); `own`: (budget, {"gpt": nats, "lstm": nats}), the student's run,
    drawn as stars at its budget (a budget of its own on the right when it is neither)."""
    found = dict(sorted(recorded_budgets(device, baselines).items(), key=lambda b: b[0] != "quick"))
    if not found and own is None:
        raise ValueError("nothing to draw: no run with GPT and LSTM rows is recorded, no own run")
    fig, ax = plt.subplots(figsize=(7, 4))
    labels, labelled = [], set()
    for x, (budget, (_, run)) in enumerate(found.items()):
        for name, offset in (("gpt", -0.12), ("lstm", 0.12)):
            _seeds_at(ax, x + offset, name, run["results"]["rows"][name], labelled)
        labels.append(_budget_label(budget, run))
    if own is not None:
        budget, nats = own
        x = list(found).index(budget) if budget in found else len(found)
        if budget not in found:
            labels.append(f"your budget\n{budget}")
        for name, offset in (("gpt", -0.12), ("lstm", 0.12)):
            if nats.get(name) is not None:
                ax.plot(
                    x + offset,
                    nats[name],
                    YOUR_MARKERS[name],
                    markersize=14,
                    color=COLOURS[name],
                    markeredgecolor="black",
                    label=f"your {MODELS[name]}",
                )
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    keys = ", ".join(key for key, _ in found.values()) or "none recorded"
    ax.set_title(f"Test loss of mini-GPT and LSTM at two budgets (recorded: {keys})", fontsize=10)
    ax.set_xlabel("budget (batch × steps, device class)")
    ax.set_ylabel("test loss (nats/char)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def budgets_line(
    baselines: dict, device="cpu", own: tuple[str, Mapping[str, float]] | None = None
) -> str:
    """What `plot_budgets` draws, in numbers: each recorded budget's mean loss of each model,
    and the student's run."""
    parts = [
        f"{budget} (`{key}`): "
        + ", ".join(f"{MODELS[n]} {run['results']['rows'][n]['nats']:.4f}" for n in MODELS)
        for budget, (key, run) in recorded_budgets(device, baselines).items()
    ]
    if own is not None:
        budget, nats = own
        mine = ", ".join(f"{MODELS[n]} {nats[n]:.4f}" for n in MODELS if nats.get(n) is not None)
        parts.append(f"yours, {budget}: {mine}")
    return "Test nats/char, the mean of the recorded seeds: " + "; ".join(parts) + "."


def plot_loss_curves(histories: Mapping[str, object], levels: Mapping[str, float]) -> Figure:
    """Notebook 04: training and validation loss of each model (label -> TrainHistory), with
    horizontal lines at the `levels` (label -> nats), such as the n-grams' test losses."""
    fig, ax = plt.subplots(figsize=(9, 4))
    styles = zip(COLOURS.values(), MARKERS.values(), LINESTYLES, strict=False)
    for (label, history), (colour, marker, line) in zip(histories.items(), styles, strict=False):
        if history.val_loss:
            steps, losses = zip(*history.val_loss, strict=True)
            style = {"color": colour, "marker": marker, "linestyle": line}
            ax.plot(steps, losses, **style, label=f"{label}, validation")
        if history.train_loss:
            steps, losses = zip(*history.train_loss, strict=True)
            style = {"color": colour, "linestyle": line, "alpha": 0.35}
            ax.plot(steps, losses, **style, label=f"{label}, training")
    for (label, nats), style in zip(levels.items(), ("--", "-.", ":", (0, (1, 3))), strict=False):
        ax.axhline(nats, color="grey", linestyle=style, label=label)
    budget = next(iter(histories.values())).budget
    ax.set_title(f"Training at the {budget} budget, beside the count models")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/char)")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


# Okabe and Ito's colour-blind-safe palette, a colour and a marker a layer: either tells them apart.
LAYER_STYLES = (("#0072B2", "o"), ("#E69F00", "s"), ("#009E73", "^"), ("#CC79A7", "D"))


def plot_head_costs(distances, costs, T: int) -> Figure:
    """Notebook 05: left, how far back each head reads (Exercise 5's D, layers down, heads
    across); right, one panel a layer, what each head costs the loss when it alone is switched
    off, against its D. Each panel has its own cost axis and names its own costliest and
    furthest-reading head: heads are compared within their layer, never across layers."""
    D, cost = np.asarray(distances, dtype=float), np.asarray(costs, dtype=float)
    fig = plt.figure(figsize=(12, 4.8), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=(1, 1.5))
    _distance_map(left.subplots(), D, T)
    rows = 2 if len(D) > 2 else 1
    panels = right.subplots(rows, -(-len(D) // rows), sharex=True, squeeze=False).flatten()
    within = list(zip(largest_within_layers(cost), largest_within_layers(D), strict=True))
    for layer, ax in enumerate(panels):
        if layer < len(D):
            _layer_costs(ax, layer, D[layer], cost[layer], *within[layer])
        else:
            ax.remove()  # an odd number of layers: the last cell of the grid stays empty
    right.suptitle("What each head costs when it alone is switched off, within its layer")
    right.supxlabel("mean distance D of the head (characters)")
    right.supylabel("loss, head off − every head on (nats/char)")
    return fig


def _distance_map(ax, D: np.ndarray, T: int) -> None:
    n_layers, n_heads = D.shape
    image = ax.imshow(D, cmap="magma", vmin=0, vmax=(T - 1) / 4)
    for layer, r in np.ndindex(D.shape):
        ax.text(r, layer, f"{D[layer, r]:.1f}", ha="center", va="center", color="0.5")
    ax.set_xticks(range(n_heads), [f"head {r + 1}" for r in range(n_heads)])
    ax.set_yticks(range(n_layers), [f"layer {layer + 1}" for layer in range(n_layers)])
    ax.set_title(f"How far back each head reads\n(characters, T = {T})")
    ax.figure.colorbar(image, ax=ax, label=f"mean distance D ({(T - 1) / 4} = uniform)")


def _layer_costs(ax, layer: int, D: np.ndarray, cost: np.ndarray, costly: int, far: int) -> None:
    """One layer's heads, cost against D, each labelled with its number; the title names the
    layer's costliest head and its furthest reader (`costly`, `far`, from 0)."""
    colour, marker = LAYER_STYLES[layer % len(LAYER_STYLES)]
    ax.plot(D, cost, marker, color=colour, label=f"layer {layer + 1}")
    ax.axhline(0, color="grey", linewidth=0.8)
    for r, (x, y) in enumerate(zip(D, cost, strict=True)):
        ax.annotate(f"{r + 1}", (x, y), xytext=(4, 3), textcoords="offset points", fontsize=8)
    ax.margins(x=0.15, y=0.2)
    named = (
        f"head {costly + 1} costliest, reads furthest"
        if costly == far
        else f"head {costly + 1} costliest, head {far + 1} reads furthest"
    )
    ax.set_title(f"layer {layer + 1}: {named}", fontsize=9)


def loss_curves_line(histories: Mapping[str, object], levels: Mapping[str, float]) -> str:
    """What `plot_loss_curves` draws, in numbers: each model's last validation estimate (and its
    step), then the levels drawn beside them."""
    last = [
        f"{label} {history.val_loss[-1][1]:.4f} (step {history.val_loss[-1][0]:,})"
        for label, history in histories.items()
        if history.val_loss
    ]
    drawn = [f"{label} {nats:.4f}" for label, nats in levels.items()]
    return f"Last validation loss: {', '.join(last)}; lines: {', '.join(drawn)} (nats/char)."


def plot_ladder(baselines: dict, mode: str, device) -> Figure | None:
    """Notebook 04: the ablation ladder recorded for this budget and device class (or the
    nearest, `ladder.recorded_ladder`): each rung's Δ test loss against the full model with its
    95% interval, and each seed's difference, a marker shape per seed. None where no ladder is
    recorded (the reading beside it says how to record one)."""
    from .ladder import readings, recorded_ladder

    found = recorded_ladder(mode, device, baselines)
    if found is None:
        return None
    key, ladder = found
    rungs = readings(ladder)
    fig, ax = plt.subplots(figsize=(7.5, 0.7 * len(rungs) + 1.8))
    y = np.arange(len(rungs))[::-1]  # the first rung on top
    seeds = sorted({s for r in rungs for s in r.per_seed}, key=int)
    for n, seed in enumerate(seeds):
        points = [
            (r.per_seed[seed], yi) for r, yi in zip(rungs, y, strict=True) if seed in r.per_seed
        ]
        shift = 0.25 * (n + 1) / len(seeds)  # the seeds below their rung's mean, apart
        xs, ys = zip(*((x, yi - shift) for x, yi in points), strict=True)
        marker = SEED_MARKERS[n % len(SEED_MARKERS)]
        ax.plot(xs, ys, marker, color="0.4", fillstyle="none", label=f"seed {seed}")
    for r, yi in zip(rungs, y, strict=True):
        label = "mean Δ, 95% interval" if yi == y[0] else "_nolegend_"
        ax.errorbar(
            r.delta, yi, xerr=r.gap.half_width, fmt="D", color="black", capsize=4, label=label
        )
    ax.axvline(0, color="grey", linestyle="--", label="the full model (Δ = 0)")
    ax.set_yticks(y, [r.name for r in rungs])
    ax.set_ylim(-0.6, len(rungs) - 0.4)
    ax.set_title(f"The ablation ladder ({key}): each rung against the full model", fontsize=10)
    ax.set_xlabel("Δ test loss (nats/char): the rung's minus the full model's")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


class StepClock:
    """Times each step of a generation loop: the seconds from the start of one forward pass of
    `model` to the start of the next (the last to the end of the `with`), so sampling is
    counted, and on a GPU the wait for its result too."""

    def __init__(self, model):
        self.model, self.starts = model, []

    def __enter__(self) -> StepClock:
        self.hook = self.model.register_forward_pre_hook(
            lambda *_: self.starts.append(time.perf_counter())
        )
        return self

    def __exit__(self, *exc) -> None:
        self.hook.remove()
        self.starts.append(time.perf_counter())

    @property
    def seconds(self) -> list[float]:
        return [b - a for a, b in zip(self.starts, self.starts[1:], strict=False)]


def plot_step_times(
    seconds: Mapping[str, Sequence[float]], prompt_length: int, T_max: int, where: str
) -> Figure:
    """Notebook 06: the time of each generated character (label -> seconds per step), against
    the length of the text it completes, with the line where the text outgrows T_max."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for (label, steps), line in zip(seconds.items(), LINESTYLES, strict=False):
        lengths = prompt_length + np.arange(1, len(steps) + 1)
        ax.plot(lengths, 1000 * np.asarray(steps), linestyle=line, label=label)
    ax.axvline(T_max, color="grey", linestyle="--", label=f"T_max = {T_max}: the window slides")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.set_title(f"Time per generated character, measured on {where}")
    ax.set_xlabel("length of the text after the step (characters)")
    ax.set_ylabel("time of the step (ms)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def step_times_line(seconds: Mapping[str, Sequence[float]], prompt_length: int, T_max: int) -> str:
    """What `plot_step_times` draws, in numbers: each loop's median step while the text fits in
    T_max, and after."""
    parts = []
    for label, steps in seconds.items():
        lengths = prompt_length + np.arange(1, len(steps) + 1)
        steps = 1000 * np.asarray(steps)
        within, past = steps[lengths <= T_max], steps[lengths > T_max]
        medians = [
            f"{np.median(part):.1f} ms {where}"
            for part, where in ((within, "within"), (past, "past"))
            if len(part)
        ]
        parts.append(f"{label} {', '.join(medians)}")
    return f"Median time of a step, within T_max = {T_max} and past it: {'; '.join(parts)}."


__all__ = [
    "CVD_SAFE",
    "StepClock",
    "budgets_line",
    "leak_line",
    "loss_curves_line",
    "plot_budgets",
    "plot_ladder",
    "plot_head_costs",
    "plot_leak",
    "plot_loss_curves",
    "plot_masks",
    "plot_score_spread",
    "plot_step_times",
    "step_times_line",
]
