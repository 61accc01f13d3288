"""The notebooks' figures. Each function draws one figure from numbers it is given, measured by
the notebook or read from data/baselines.json, and returns it labelled (title, axes, legend) for
the notebook to show with `plt.show()`. They draw with pyplot, so that a notebook's inline
backend renders them."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FormatStrFormatter

from .baselines import recorded_budgets, seed_nats

MODELS = {"gpt": "mini-GPT", "lstm": "LSTM"}
COLOURS = {"gpt": "tab:blue", "lstm": "tab:orange"}


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
        ax.bar(positions, np.asarray(changes, dtype=float), width=width, label=label)
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


MASK_COLOURS = ListedColormap(["#f0f0f0", "tab:blue"])


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
    ax.plot([x] * len(values), values, "o", color=colour, label=label(f"{model}, each seed"))
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
                    "*",
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


def plot_loss_curves(histories: Mapping[str, object], levels: Mapping[str, float]) -> Figure:
    """Notebook 04: training and validation loss of each model (label -> TrainHistory), with
    horizontal lines at the `levels` (label -> nats), such as the n-grams' test losses."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for (label, history), colour in zip(
        histories.items(), ("tab:blue", "tab:orange"), strict=False
    ):
        if history.val_loss:
            steps, losses = zip(*history.val_loss, strict=True)
            ax.plot(steps, losses, "o-", color=colour, label=f"{label}, validation")
        if history.train_loss:
            steps, losses = zip(*history.train_loss, strict=True)
            ax.plot(steps, losses, color=colour, alpha=0.35, label=f"{label}, training")
    for (label, nats), style in zip(levels.items(), ("--", "-.", ":", (0, (1, 3))), strict=False):
        ax.axhline(nats, color="grey", linestyle=style, label=label)
    budget = next(iter(histories.values())).budget
    ax.set_title(f"Training at the {budget} budget, beside the count models")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/char)")
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
    for label, steps in seconds.items():
        lengths = prompt_length + np.arange(1, len(steps) + 1)
        ax.plot(lengths, 1000 * np.asarray(steps), label=label)
    ax.axvline(T_max, color="grey", linestyle="--", label=f"T_max = {T_max}: the window slides")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.set_title(f"Time per generated character, measured on {where}")
    ax.set_xlabel("length of the text after the step (characters)")
    ax.set_ylabel("time of the step (ms)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


__all__ = [
    "StepClock",
    "plot_budgets",
    "plot_leak",
    "plot_loss_curves",
    "plot_masks",
    "plot_score_spread",
    "plot_step_times",
]
