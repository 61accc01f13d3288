"""`make head-costs`: what each head of a recorded mini-GPT costs when switched off, measured on
the model file a run recorded, as notebook 05 measures it, for the runs whose pipeline did not.

05 records head costs when the pipeline runs it on the model 04 just trained; a run recorded
before 05 switched heads off (the full budget's, whose training takes hours on a CPU) keeps its
model, so its head costs are measured here on that model instead of training it again. They go
into the run's results with where and at which commit they were measured, since that is not the
run's own commit, and how a head was switched off ("ablation": "mean", transformer_lab/heads.py);
`--again` measures a run's recorded costs anew, as after a change to how heads are switched off.

    python -m maintainer.head_costs              # every recorded run with a model and no costs
    python -m maintainer.head_costs --run full/cpu --again
"""

from __future__ import annotations

import argparse
import json
import platform
from datetime import UTC, datetime
from pathlib import Path

import torch

import transformer_lab as tl
from transformer_lab.heads import RECORD_KEY
from transformer_lab.saving import load_gpt, sha256

from . import commit_label, corpus_or_exit
from .pipeline import BASELINES, validate, write_atomically

WINDOWS = 16  # notebook 05's validation windows: WINDOWS of T_max, a CPU generator seeded 0


def measure(run: dict, folder: Path) -> dict:
    """The head costs of `run`'s recorded model (its file in `folder`), as 05 measures them."""
    recorded = run["provenance"]["model"]
    path = folder / recorded["file"]
    if not path.is_file() or sha256(path) != recorded["sha256"]:
        raise SystemExit(f"{path} is missing or not the model the run recorded (SHA-256 differs)")
    model, _ = load_gpt(path, "cpu")
    corpus = tl.load_corpus(device="cpu")
    T = model.config.T_max
    windows, targets = tl.sample_batch(corpus.val, WINDOWS, T, torch.Generator().manual_seed(0))
    measured = tl.head_ablation(model, windows, targets).record()[RECORD_KEY]
    commit, dirty = commit_label()
    measured["measured"] = {
        "git_commit": commit,
        "git_dirty": dirty,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": "cpu",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "on": f"the run's recorded model {recorded['file']}, by maintainer/head_costs.py",
    }
    return measured


def main(argv: list[str] | None = None, out: Path = BASELINES) -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="one run key, e.g. full/cpu (default: every one)")
    parser.add_argument("--again", action="store_true", help="measure costs already recorded")
    args = parser.parse_args(argv)
    corpus_or_exit("python -m maintainer.head_costs")  # the validation windows are read from it
    baselines = json.loads(out.read_text(encoding="utf-8"))
    runs = baselines["runs"]
    if args.run and args.run not in runs:
        raise SystemExit(f"no run {args.run!r} in {out}; recorded: {', '.join(runs)}")
    chosen = [
        key
        for key, run in runs.items()
        if (args.run in (None, key))
        and "model" in run["provenance"]
        and (args.again or RECORD_KEY not in run["results"])
    ]
    for key in chosen:
        runs[key]["results"][RECORD_KEY] = measured = measure(runs[key], out.parent)
        costliest = ", ".join(f"{max(layer):+.3f}" for layer in measured["costs"])
        print(f"{key}: {measured['nats']:.3f} nats/char, costliest head off by layer {costliest}")
    if chosen:
        validate(baselines)
        write_atomically(baselines, out)
    else:
        print(f"every run with a model in {out} has its head costs (--again to measure them anew)")
    return chosen


if __name__ == "__main__":
    main()
