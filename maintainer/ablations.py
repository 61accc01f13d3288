"""`make ablations`: the ablation ladder (transformer_lab/ablations.py) swept, trained and recorded.

First every variant's sweep of rates (each rung, the complete model, and the variants only swept:
§6's fourth corner and §2's pair at unit-variance q and k), then every rung, the complete model
included, trained on each seed at the budget at its own best rate, on this machine's CPU. Each
run is kept as it finishes in build/ablations/<budget>-cpu-<commit>/ (sweep/NAME-LR-SEED.json,
RUNG-SEED.json), so an interrupted ladder continues where it stopped, and only with runs of the
same commit. When every run is in, the ladder is written into data/baselines.json under
"ablations" (atomically, checked against the schema) with each rung's sweep and rate, §6's
stability grid, §2's premise measured at initialization, where it was measured and the commit it
was trained at.

    python -m maintainer.ablations                      # quick, seeds 0,1,2, two processes
    python -m maintainer.ablations --seeds 0,1,2,3 --workers 1

Runs go to `--workers` processes with one torch thread each: on two cores two processes of one
thread train faster together than one of two threads.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from . import ROOT, commit_label, corpus_or_exit

BASELINES = ROOT / "data" / "baselines.json"
WORKDIR = ROOT / "build" / "ablations"
VOCAB_SIZE = 65  # the corpus's distinct characters (the lecture's protocol)


def _sweep_name(name: str, lr: float, seed: int) -> str:
    return f"sweep/{name}-{lr:g}-{seed}.json"


def _one(job: tuple, budget: str, out: str) -> str:
    """One run in a worker process: ("sweep", variant, rate, seed) or ("rung", rung, seed,
    rate); trains, scores, writes its file, returns its path."""
    import torch

    torch.set_num_threads(1)
    from transformer_lab import BUDGETS, load_corpus
    from transformer_lab.ablations import SWEPT, sweep_run, train_rung

    corpus = load_corpus(device="cpu")
    kind, name, *rest = job
    if kind == "sweep":
        lr, seed = rest
        row = sweep_run(SWEPT[name], corpus, BUDGETS[budget], lr, seed)
        path = Path(out) / _sweep_name(name, lr, seed)
    else:
        seed, lr = rest
        _, _, row = train_rung(SWEPT[name], corpus, BUDGETS[budget], seed, lr=lr)
        path = Path(out) / f"{name}-{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row, indent=1), encoding="utf-8")
    return str(path)


def kept_runs(budget: str, commit: str, dirty: bool) -> Path:
    """Where the runs of this commit are kept; a dirty tree's apart from its commit's."""
    return WORKDIR / f"{budget}-cpu-{commit[:12]}{'-dirty' if dirty else ''}"


def sweep_jobs() -> list[tuple]:
    """Every (variant, rate, seed) of the sweep."""
    from transformer_lab.ablations import SWEEP_RATES, SWEPT, sweep_seeds

    return [
        ("sweep", name, lr, seed)
        for name in SWEPT
        for seed in sweep_seeds(name)
        for lr in SWEEP_RATES
    ]


def swept(folder: Path, name: str, unigram: float | None = None) -> list[dict]:
    """A variant's kept sweep runs; with the unigram's loss, each run's outcome judged again by
    the rule of this commit (the rule that reads the record)."""
    from transformer_lab.ablations import SWEEP_RATES, outcome, sweep_seeds

    runs = [
        json.loads((folder / _sweep_name(name, lr, seed)).read_text())
        for seed in sweep_seeds(name)
        for lr in SWEEP_RATES
    ]
    if unigram is None:
        return runs
    return [run | {"outcome": outcome(run["val_loss"], unigram, VOCAB_SIZE)} for run in runs]


def chosen_rate(folder: Path, name: str, unigram: float) -> float | None:
    """The variant's best rate by its sweep, each run judged by this commit's rule (None: no
    rate trained): the one rate the ladder trains at and the record names."""
    from transformer_lab.ablations import best_rate

    return best_rate(swept(folder, name, unigram))


def unigram_of_corpus() -> float:
    from transformer_lab import load_corpus
    from transformer_lab.ablations import unigram_nats

    return unigram_nats(load_corpus(device="cpu"))


def _train(jobs: list[tuple], budget: str, workers: int, folder: Path, what: str) -> None:
    print(f"{len(jobs)} {what} to train, {workers} at a time", flush=True)
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(_one, job, budget, str(folder)): job for job in jobs}
        for done in concurrent.futures.as_completed(futures):
            job = futures[done]
            row = json.loads(Path(done.result()).read_text())
            loss = row.get("nats", row.get("val_loss"))
            minutes = (time.perf_counter() - started) / 60
            print(f"{job}: {loss} ({minutes:.1f} min)", flush=True)


def run(budget: str, seeds: list[int], workers: int, folder: Path) -> None:
    """Every sweep run, then every (rung, seed) at the rung's best rate, not yet kept in
    `folder`, trained there."""
    from transformer_lab.ablations import LADDER

    folder.mkdir(parents=True, exist_ok=True)
    sweeps = [j for j in sweep_jobs() if not (folder / _sweep_name(*j[1:])).is_file()]
    _train(sweeps, budget, workers, folder, "sweep runs")
    unigram = unigram_of_corpus()
    rungs = [
        ("rung", name, seed, chosen_rate(folder, name, unigram))
        for seed in seeds
        for name in LADDER
        if not (folder / f"{name}-{seed}.json").is_file()
    ]
    _train(
        rungs, budget, workers, folder, f"ladder runs ({len(LADDER)} rungs x {len(seeds)} seeds)"
    )


def _entry(folder: Path, name: str, unigram: float) -> dict:
    """A variant as the record keeps it: what it changes, its sweep and the rate it chose, the
    rate its seeds trained at (`chosen_rate`)."""
    from transformer_lab.ablations import SWEPT

    rung = SWEPT[name]
    return {
        "removes": rung.removes,
        "claim": rung.claim,
        "lr": chosen_rate(folder, name, unigram),
        "warmup": "none" if rung.warmup == 0 else "the course's",
        "sweep": swept(folder, name, unigram),
    }


def _provenance(seeds: list[int], wall_s: float, commit: str, dirty: bool) -> dict:
    import torch

    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": "cpu",
        "cpu": f"{platform.machine()}, {os.cpu_count()} cores, one torch thread a run",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "seeds": seeds,
        "wall_seconds": round(wall_s, 1),
    }


def _premise_and_sweep() -> dict:
    """The sweep's settings with the unigram's loss (a rate that does not beat it stalled), and
    §2's first-layer statistics at initialization, measured now (seconds)."""
    from transformer_lab import load_corpus
    from transformer_lab.ablations import (
        SWEEP_EVAL_EVERY,
        SWEEP_RATES,
        SWEEP_STEPS,
        premise,
        unigram_nats,
    )

    corpus = load_corpus(device="cpu")
    return {
        "sweep": {
            "rates": list(SWEEP_RATES),
            "steps": SWEEP_STEPS,
            "eval_every": SWEEP_EVAL_EVERY,
            "unigram_nats": unigram_nats(corpus),
        },
        "premise": [
            premise(corpus, init, scaled) for init in ("lab", "unit") for scaled in (True, False)
        ],
    }


def record(
    folder: Path, budget: str, seeds: list[int], wall_s: float, commit: str, dirty: bool
) -> dict:
    """The ladder as data/baselines.json keeps it: each rung's sweep, rate and seeds, the
    variants only swept, §6's grid, §2's premise, and where and at which commit (`commit`,
    `dirty`: the tree's when training started) it was measured."""
    from transformer_lab.ablations import LADDER, STABILITY, SWEPT

    def seed_runs(name: str) -> dict:
        return {str(s): json.loads((folder / f"{name}-{s}.json").read_text()) for s in seeds}

    measured = _premise_and_sweep()
    unigram = measured["sweep"]["unigram_nats"]
    return {
        "mode": budget,
        "device_class": "cpu",
        "provenance": _provenance(seeds, wall_s, commit, dirty),
        "sweep": measured["sweep"],
        "rungs": {
            name: _entry(folder, name, unigram) | {"seeds": seed_runs(name)} for name in LADDER
        },
        "swept": {name: _entry(folder, name, unigram) for name in SWEPT if name not in LADDER},
        "stability": {f"{norm}, {warmup}": name for (norm, warmup), name in STABILITY.items()},
        "premise": measured["premise"],
    }


def write(ladder: dict) -> None:
    """Into data/baselines.json, atomically, once it passes the schema."""
    from .pipeline import validate, write_atomically

    data = json.loads(BASELINES.read_text(encoding="utf-8"))
    data.setdefault("ablations", {})[f"{ladder['mode']}/{ladder['device_class']}"] = ladder
    validate(data)
    write_atomically(data, BASELINES)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="quick", choices=("quick", "full", "smoke"))
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated (default 0,1,2)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    corpus_or_exit("python -m maintainer.ablations")  # every run trains on it
    started, (commit, dirty) = time.perf_counter(), commit_label()
    folder = kept_runs(args.budget, commit, dirty)
    run(args.budget, seeds, args.workers, folder)
    write(record(folder, args.budget, seeds, time.perf_counter() - started, commit, dirty))
    print(f"the ladder is in {BASELINES.relative_to(ROOT)} (ablations/{args.budget}/cpu)")


if __name__ == "__main__":
    sys.exit(main())
