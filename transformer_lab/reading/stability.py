"""§6's stability and §2's premise, read from the ladder `make ablations` records: the claims a
final loss at one rate cannot test.

Stability is read from the window of rates that train, not from one loss: pre-norm and post-norm,
each with and without the warm-up, each swept over the same rates (two seeds a rate). A rate
"trains" when every seed ends below the unigram's loss (transformer_lab/ablations.py `outcome`).
§2's 1/sqrt(d_k) is read where its premise holds: the scores' spread and the softmax's entropy at
initialization, at the lab's std-0.02 and at unit-variance q and k, and the pair trained at the
second. The words are in templates/stability_reading.md.j2; the figure is `plot_stability`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

NORMS = ("pre-norm", "post-norm")
WARMUPS = ("warm-up", "no warm-up")
UNIT_QK = ("unit_qk", "unit_qk_no_scaling")
# A softmax row whose entropy is at least this share of an even row's has not started saturated.
EVEN = 0.9


@dataclass(frozen=True)
class Swept:
    """One variant's sweep: its runs by rate."""

    name: str
    runs: tuple[dict, ...]

    @property
    def rates(self) -> list[float]:
        return sorted({run["lr"] for run in self.runs})

    def at(self, lr: float) -> list[dict]:
        return [run for run in self.runs if run["lr"] == lr]

    @property
    def window(self) -> list[float]:
        """The rates at which every seed trains."""
        return [lr for lr in self.rates if all(r["outcome"] == "trains" for r in self.at(lr))]

    def mean(self, lr: float) -> float | None:
        losses = [run["val_loss"] for run in self.at(lr)]
        return None if None in losses else statistics.fmean(losses)

    @property
    def best(self) -> float | None:
        """The rate of the window with the lowest mean loss (None: nothing trains)."""
        return min(self.window, key=self.mean) if self.window else None

    @property
    def best_losses(self) -> list[float]:
        return [run["val_loss"] for run in self.at(self.best)] if self.best else []


def swept(ladder: dict, name: str) -> Swept | None:
    entry = ladder.get("rungs", {}).get(name) or ladder.get("swept", {}).get(name)
    if not entry or not entry.get("sweep"):
        return None
    return Swept(name, tuple(entry["sweep"]))


def compare_windows(one: list[float], other: list[float]) -> str:
    """'wider', 'narrower', 'same' or 'different' (neither holds the other): `one` against
    `other`, as sets of rates."""
    a, b = set(one), set(other)
    if a == b:
        return "same"
    if a > b:
        return "wider"
    return "narrower" if a < b else "different"


def stability(ladder: dict) -> dict | None:
    """§6's grid and its readings; None where the ladder has no stability grid (an older record)."""
    grid = ladder.get("stability")
    if not grid:
        return None
    corners = {}
    for norm in NORMS:
        for warmup in WARMUPS:
            found = swept(ladder, grid.get(f"{norm}, {warmup}", ""))
            if found is None:
                return None
            corners[norm, warmup] = found
    # Pre-norm against post-norm, at each warm-up setting.
    pre_against_post = {
        w: compare_windows(corners["pre-norm", w].window, corners["post-norm", w].window)
        for w in WARMUPS
    }
    wins = set(pre_against_post.values())
    if "wider" in wins and "narrower" not in wins:
        more_stable = "holds"
    elif "narrower" in wins and "wider" not in wins:
        more_stable = "does not hold"
    else:
        more_stable = "no difference" if wins == {"same"} else "mixed"
    # Each norm without its warm-up against with it.
    without_warmup = {
        n: compare_windows(corners[n, "no warm-up"].window, corners[n, "warm-up"].window)
        for n in NORMS
    }
    pre = without_warmup["pre-norm"]
    warmup_can_go = "holds" if pre in ("same", "wider") else "does not hold"
    return {
        "corners": [
            {
                "norm": norm,
                "warmup": warmup,
                "name": s.name,
                "window": s.window,
                "best": s.best,
                "best_losses": s.best_losses,
                "seeds": len({run["seed"] for run in s.runs}),
            }
            for (norm, warmup), s in corners.items()
        ],
        "rates": corners["pre-norm", "warm-up"].rates,
        "pre_against_post": pre_against_post,
        "more_stable": more_stable,
        "without_warmup": without_warmup,
        "warmup_can_go": warmup_can_go,
    }


def premise(ladder: dict) -> dict | None:
    """§2 at initialization (the recorded first-layer statistics) and the pair trained at
    unit-variance q and k; None where the ladder does not record it."""
    rows = ladder.get("premise")
    pair = [swept(ladder, name) for name in UNIT_QK]
    if not rows or None in pair:
        return None
    at = {(r["init"], r["scaled"]): r for r in rows}
    scaled, unscaled = pair
    saturates = at["unit", False]["entropy_ratio"] < at["unit", True]["entropy_ratio"]
    costs = (
        bool(scaled.best_losses and unscaled.best_losses)
        and min(unscaled.best_losses) > max(scaled.best_losses)
    ) or compare_windows(unscaled.window, scaled.window) == "narrower"
    return {
        "at": at,
        "pair": [
            {"name": s.name, "window": s.window, "best": s.best, "best_losses": s.best_losses}
            for s in pair
        ],
        "lab_even": at["lab", False]["entropy_ratio"] >= EVEN,
        "saturates": saturates,
        "costs": costs,
        "holds": saturates and costs,
    }


STYLES = {
    ("pre-norm", "warm-up"): ("C0", "-", "o"),
    ("pre-norm", "no warm-up"): ("C0", "--", "s"),
    ("post-norm", "warm-up"): ("C3", "-", "^"),
    ("post-norm", "no warm-up"): ("C3", "--", "v"),
}


def plot_stability(ladder: dict) -> Figure | None:
    """§6's grid: the validation loss after the sweep's steps against the rate (log axis), a
    line a corner (the mean over seeds, each seed a small marker); a rate at which a seed did
    not train is drawn hollow, at the top where its loss is not finite. None where the ladder
    has no grid."""
    grid = ladder.get("stability")
    if not grid or stability(ladder) is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2))
    finite = [
        run["val_loss"]
        for key in grid.values()
        for run in swept(ladder, key).runs
        if run["val_loss"] is not None
    ]
    top = max(finite) if finite else 4.2
    for (norm, warmup), (colour, line, marker) in STYLES.items():
        s = swept(ladder, grid[f"{norm}, {warmup}"])
        means = [s.mean(lr) for lr in s.rates]
        ax.plot(
            s.rates,
            [top if m is None else m for m in means],
            line,
            color=colour,
            marker=marker,
            label=f"{norm}, {warmup}",
        )
        for run in s.runs:
            trained = run["outcome"] == "trains"
            ax.plot(
                run["lr"],
                top if run["val_loss"] is None else run["val_loss"],
                marker,
                color=colour,
                markersize=4,
                fillstyle="full" if trained else "none",
                alpha=0.6,
            )
    ax.set_xscale("log")
    ax.set_xlabel("peak learning rate (log scale)")
    ax.set_ylabel(f"validation loss after {ladder['sweep']['steps']} steps (nats/char)")
    ax.set_title(
        f"§6: which rates train ({ladder['mode']}/{ladder['device_class']}, "
        f"{ladder['sweep']['steps']} steps, hollow: did not train)"
    )
    ax.axhline(ladder["sweep"]["unigram_nats"], color="0.6", lw=0.8, ls=":", label="unigram")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
