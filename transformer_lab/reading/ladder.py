"""The ablation ladder as notebook 04's "After the lab" shows it: the mini-GPT trained again with
one part taken away at a time (transformer_lab/ablations.py defines the rungs, `make ablations`
records them in data/baselines.json under "ablations"), each rung read against the complete model
by the rule that reads GPT against the LSTM (verdict.Gap: seed by seed where that narrows the
interval, the 95% interval, not settled under three seeds).

A row says first what its Δ tests. "Holds" or "does not hold" is read only where the Δ tests the
lecture's claim as stated (`DELTA_TESTS_CLAIM`) and both the rung and the complete model were
trained at their own best rate by the sweep; every other row says what it measured, and the
claims a final loss cannot test (§6's stability, §2's saturation) are read in stability.py. The
words are in templates/ladder_reading.md.j2, the figure is plots.plot_ladder; `try_rung` trains
one rung for a student on a GPU, to set beside the recorded seeds.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..ablations import STALL_MARGIN
from ..baselines import load_baselines, nearest_run, recorded_rows, run_key
from ..model import GPTConfig
from .recorded import nearest_reason
from .stability import premise, stability
from .text import render
from .verdict import Gap

SECTION = "ablations"  # of data/baselines.json
FULL = "full"  # the rung that takes nothing away: every other is read against it
# What a rung's claim predicts of taking its part away. Every claim but one says the part earns
# its place, so that without it the loss rises; "pre-norm trains without warm-up" says that
# without the warm-up nothing is lost.
NO_COST_CLAIMED = frozenset({"no_warmup"})
# The rungs whose Δ tests the claim beside them as the lecture states it. The others measure
# something else: no_scaling at an initialization where §2's premise fails, post_norm and
# no_warmup one final loss (not stability), no_ffn the FFN's role mixed with capacity.
DELTA_TESTS_CLAIM = frozenset({"no_positions", "one_head"})
OUTCOMES = {"GPT": "cost", "LSTM": "gain", "tie": "tie", "unsettled": "unsettled"}


def seed_nats(rung: dict) -> dict[str, float]:
    return {seed: run["nats"] for seed, run in rung["seeds"].items()}


@dataclass(frozen=True)
class RungReading:
    """One rung against the full model. `gap` holds the full model as its "gpt" and the rung as
    its "lstm", so its gap is the rung's loss minus the full model's: above 0, taking the part
    away cost that much."""

    name: str
    removes: str
    claim: str
    parameters: int | None
    gap: Gap
    lr: float | None = None  # the rung's best rate by its sweep (None: not swept)
    trained_at: float | None = None  # the rate its seeds trained at
    complete_at_own_best: bool = False  # the complete model trained at its sweep's best

    @property
    def at_own_best(self) -> bool:
        return (
            self.lr is not None and self.trained_at is not None and _same(self.lr, self.trained_at)
        )

    @property
    def tests_claim(self) -> bool:
        return self.name in DELTA_TESTS_CLAIM

    @property
    def withheld(self) -> str | None:
        """Why no verdict is read: "other-test" (the Δ tests something else than the claim),
        "rate" (the rung or the complete model was not trained at its own best rate); None
        where one is."""
        if not self.tests_claim:
            return "other-test"
        if not (self.at_own_best and self.complete_at_own_best):
            return "rate"
        return None

    @property
    def delta(self) -> float:
        return self.gap.gap

    @property
    def per_seed(self) -> dict[str, float]:
        """The rung's loss minus the full model's, seed by seed; where the seeds differ, each of
        the rung's seeds against the full model's mean."""
        if self.gap.same_seeds:
            return self.gap.differences
        return {s: nats - self.gap.gpt_mean for s, nats in sorted(self.gap.lstm.items())}

    @property
    def outcome(self) -> str:
        """ "cost" (the full model lower, clear of the interval), "gain" (the rung lower),
        "tie" or "unsettled"."""
        return OUTCOMES[self.gap.outcome]

    @property
    def expects_cost(self) -> bool:
        return self.name not in NO_COST_CLAIMED

    @property
    def holds(self) -> bool | None:
        """Whether the lecture's claim holds at this budget; None where the seeds settle nothing
        or the row does not test the claim at the rates it needs (`withheld`)."""
        if self.outcome == "unsettled" or self.withheld:
            return None
        return (self.outcome == "cost") == self.expects_cost


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _parameters(rung: dict) -> int | None:
    counts = {run.get("parameters") for run in rung["seeds"].values()}
    return counts.pop() if len(counts) == 1 else None


def _trained_at(rung: dict) -> float | None:
    rates = {run["recipe"]["lr"] for run in rung["seeds"].values()}
    return rates.pop() if len(rates) == 1 else None


def readings(ladder: dict) -> list[RungReading]:
    """Every rung of a recorded ladder but the complete model, in the recorded order."""
    complete = ladder["rungs"][FULL]
    full = seed_nats(complete)
    complete_lr, complete_at = complete.get("lr"), _trained_at(complete)
    complete_at_own_best = bool(complete_lr and complete_at and _same(complete_lr, complete_at))
    return [
        RungReading(
            name,
            rung["removes"],
            rung["claim"],
            _parameters(rung),
            Gap(full, seed_nats(rung)),
            rung.get("lr"),
            _trained_at(rung),
            complete_at_own_best,
        )
        for name, rung in ladder["rungs"].items()
        if name != FULL
    ]


def recorded_ladder(mode: str, device, baselines: dict | None = None):
    """(key, ladder) recorded for this budget and device class, else the nearest recorded one
    (the order of `baselines.nearest_run`); None where no ladder is recorded."""
    return nearest_run(mode, device, baselines=baselines, section=SECTION)


def _full(ladder: dict) -> dict:
    rung = ladder["rungs"][FULL]
    nats = seed_nats(rung)
    recipe = next(iter(rung["seeds"].values()))["recipe"]
    return {
        "nats": statistics.fmean(nats.values()),
        "seed_nats": list(nats.values()),
        "parameters": _parameters(rung),
        "batch_size": recipe["batch_size"],
        "steps": recipe["steps"],
        "warmup_steps": recipe.get("warmup_steps"),
        "lr": rung.get("lr"),
        "trained_at": _trained_at(rung),
        "optimizer": recipe["optimizer"],
        "grad_clip": recipe.get("grad_clip"),
        "layers": GPTConfig().n_layers,  # every rung keeps the lab's depth
    }


def budget_note(ladder: dict, baselines: dict) -> dict | None:
    """Why a sign read at the quick budget may not carry to the full one, from the recorded runs
    of the ladder's device class: the complete model's distance to the 5-gram at quick, and how
    many times the GPT-LSTM gap shrank from quick to full, with each run's commit. None where
    the ladder is not the quick budget's or the runs are not both recorded."""
    if ladder["mode"] != "quick":
        return None
    runs = (baselines or {}).get("runs", {})
    quick, full = (runs.get(f"{m}/{ladder['device_class']}") for m in ("quick", "full"))
    if not quick or not full:
        return None
    rows = {m: recorded_rows(run) for m, run in (("quick", quick), ("full", full))}
    if not all({"gpt", "lstm"} <= set(r) for r in rows.values()) or "5gram" not in rows["quick"]:
        return None
    gap = {m: abs(r["gpt"]["nats"] - r["lstm"]["nats"]) for m, r in rows.items()}
    return {
        "to_5gram": rows["quick"]["5gram"]["nats"] - rows["quick"]["gpt"]["nats"],
        "shrank": gap["quick"] / gap["full"] if gap["full"] else None,
        "quick_commit": quick["provenance"]["git_commit"][:7],
        "full_commit": full["provenance"]["git_commit"][:7],
    }


def ladder_reading(mode: str, device, baselines: dict | None = None) -> str:
    """Markdown: the ladder recorded for this budget and device class (or the nearest one, with
    where it was measured), a row a rung; how to record it where none is."""
    baselines = load_baselines() if baselines is None else baselines
    found = recorded_ladder(mode, device, baselines)
    if found is None:
        from ..ablations import RUNGS

        return render("ladder_reading.md.j2", key=None, parts=[rung.removes for rung in RUNGS])
    key, ladder = found
    wanted = run_key(mode, device)
    reason = nearest_reason(key, wanted, "an ablation ladder", baselines, SECTION)
    rungs = readings(ladder)
    complete = _parameters(ladder["rungs"][FULL])
    return render(
        "ladder_reading.md.j2",
        key=key,
        wanted=wanted,
        reason=reason,
        p=ladder["provenance"],
        mode=ladder["mode"],
        full=_full(ladder),
        rungs=rungs,
        share={r.name: 1 - r.parameters / complete for r in rungs if r.parameters and complete},
        budget=budget_note(ladder, baselines),
        sweep=ladder.get("sweep"),
        stability=stability(ladder),
        stall_margin=STALL_MARGIN,
        premise=premise(ladder),
    )


def _rung_seconds(name: str, baselines: dict | None) -> tuple[float, dict] | None:
    """(the mean seconds a seed of rung `name` took, the ladder's provenance) from a ladder
    recorded on a CPU at the quick budget, the nearest one to a student's CPU runtime."""
    found = recorded_ladder("quick", "cpu", baselines)
    if found is None or not found[0].endswith("/cpu") or name not in found[1]["rungs"]:
        return None
    runs = found[1]["rungs"][name]["seeds"].values()
    return statistics.fmean(run["train_seconds"] for run in runs), found[1]["provenance"]


def try_rung(
    name: str,
    corpus,
    device,
    train_on_cpu: bool = False,
    most=None,
    seed: int = 0,
    baselines: dict | None = None,
) -> str:
    """Notebook 04's optional cell: rung `name` trained once (seed `seed`) at the quick budget,
    or at the notebook's budget `most` where that is smaller (smoke, grade: tests and grading),
    and its test loss set beside the recorded seeds. On a CPU it trains only if `train_on_cpu`,
    and otherwise says what it would cost, from the recorded ladder's times."""
    import torch

    from ..ablations import LADDER, train_rung
    from ..runtime import BUDGETS, device_name

    quick = BUDGETS["quick"]
    chosen = most if most is not None and most.steps < quick.steps else quick

    if name not in LADDER:
        raise ValueError(f"RUNG = {name!r} is not a rung of the ladder: one of {', '.join(LADDER)}")
    baselines = load_baselines() if baselines is None else baselines
    on_cpu = torch.device(device).type == "cpu"
    if on_cpu and not train_on_cpu:
        return render(
            "try_rung.md.j2", trained=False, name=name, cost=_rung_seconds(name, baselines)
        )
    found = recorded_ladder(chosen.name, device, baselines)
    lr = found[1]["rungs"].get(name, {}).get("lr") if found else None  # the rung's own best
    _, history, row = train_rung(LADDER[name], corpus, chosen, seed, progress=True, lr=lr)
    if history.stopped:  # Stop (■) ended it: fewer steps than the recorded seeds took
        return (
            f"Your `{name}`, seed {seed}, {history.stopped} of the {chosen.name} budget on "
            f"{device_name(device)}: {row['nats']:.4f} nats. Not a run of the budget, so it is "
            "not set beside the recorded seeds; run the cell again to start over."
        )
    recorded = None
    if found is not None and name in found[1]["rungs"]:
        key, ladder = found
        recorded = {"key": key} | {
            which: {"nats": statistics.fmean(nats), "seed_nats": nats}
            for which, nats in (
                ("rung", list(seed_nats(ladder["rungs"][name]).values())),
                ("full", list(seed_nats(ladder["rungs"][FULL]).values())),
            )
        }
    return render(
        "try_rung.md.j2",
        trained=True,
        name=name,
        seed=seed,
        budget=chosen.name,
        where=device_name(device),
        nats=row["nats"],
        recorded=recorded,
    )
