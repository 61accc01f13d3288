"""`make ablations`: the ablation ladder (transformer_lab/ablations.py) trained and recorded.

Every rung, the full model included, trains each seed at the budget on this machine's CPU; each
run is kept as it finishes in build/ablations/<budget>-cpu-<commit>/RUNG-SEED.json, so an
interrupted ladder continues where it stopped, and only with runs of the same commit. When every
run is in, the ladder is written into data/baselines.json under "ablations" (atomically, checked
against the schema), with where it was measured and the commit it was trained at, the one the
quick baselines are to share.

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

from . import ROOT, commit_label

BASELINES = ROOT / "data" / "baselines.json"
WORKDIR = ROOT / "build" / "ablations"


def _one(rung: str, seed: int, budget: str, out: str) -> str:
    """One run in a worker process: trains, scores, writes its file, returns its path."""
    import torch

    torch.set_num_threads(1)
    from transformer_lab import BUDGETS, load_corpus
    from transformer_lab.ablations import LADDER, train_rung

    corpus = load_corpus(device="cpu")
    _, _, row = train_rung(LADDER[rung], corpus, BUDGETS[budget], seed)
    path = Path(out) / f"{rung}-{seed}.json"
    path.write_text(json.dumps(row, indent=1), encoding="utf-8")
    return str(path)


def kept_runs(budget: str, commit: str, dirty: bool) -> Path:
    """Where the runs of this commit are kept; a dirty tree's apart from its commit's."""
    return WORKDIR / f"{budget}-cpu-{commit[:12]}{'-dirty' if dirty else ''}"


def run(budget: str, seeds: list[int], workers: int, folder: Path) -> None:
    """Every (rung, seed) not yet kept in `folder`, trained there."""
    from transformer_lab.ablations import LADDER

    folder.mkdir(parents=True, exist_ok=True)
    todo = [
        (rung, seed)
        for seed in seeds
        for rung in LADDER
        if not (folder / f"{rung}-{seed}.json").is_file()
    ]
    print(
        f"{len(todo)} runs to train ({len(LADDER)} rungs x {len(seeds)} seeds, kept: "
        f"{len(LADDER) * len(seeds) - len(todo)}), {workers} at a time",
        flush=True,
    )
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(_one, r, s, budget, str(folder)): (r, s) for r, s in todo}
        for done in concurrent.futures.as_completed(futures):
            rung, seed = futures[done]
            row = json.loads(Path(done.result()).read_text())
            minutes = (time.perf_counter() - started) / 60
            print(f"{rung}, seed {seed}: {row['nats']:.4f} nats ({minutes:.1f} min)", flush=True)


def record(
    folder: Path, budget: str, seeds: list[int], wall_s: float, commit: str, dirty: bool
) -> dict:
    """The ladder as data/baselines.json keeps it: each rung's seeds, and where and at which
    commit (`commit`, `dirty`: the tree's when training started) it was measured."""
    from transformer_lab.ablations import LADDER

    rungs = {}
    for name, rung in LADDER.items():
        runs = {str(s): json.loads((folder / f"{name}-{s}.json").read_text()) for s in seeds}
        rungs[name] = {"removes": rung.removes, "claim": rung.claim, "seeds": runs}
    import torch

    return {
        "mode": budget,
        "device_class": "cpu",
        "provenance": {
            "git_commit": commit,
            "git_dirty": dirty,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "device": "cpu",
            "cpu": f"{platform.machine()}, {os.cpu_count()} cores, one torch thread a run",
            "torch": torch.__version__,
            "python": platform.python_version(),
            "seeds": seeds,
            "wall_seconds": round(wall_s, 1),
        },
        "rungs": rungs,
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
    started, (commit, dirty) = time.perf_counter(), commit_label()
    folder = kept_runs(args.budget, commit, dirty)
    run(args.budget, seeds, args.workers, folder)
    write(record(folder, args.budget, seeds, time.perf_counter() - started, commit, dirty))
    print(f"the ladder is in {BASELINES.relative_to(ROOT)} (ablations/{args.budget}/cpu)")


if __name__ == "__main__":
    sys.exit(main())
