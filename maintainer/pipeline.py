"""`make regenerate-baselines`: papermill runs the solution notebooks end to end, each records its
measurements in one results file, and the merge writes data/baselines.json atomically.

    python -m maintainer.pipeline --mode quick            # the recorded run's seeds again
    python -m maintainer.pipeline --mode quick --seeds 0,1,2
    python -m maintainer.pipeline --mode full --seeds 0 --device cuda

Seeds: by default a run measures the seeds recorded for its mode and device class (seed 0 where
nothing is recorded). Seeds that leave out recorded ones are refused unless --replace is given,
so a recorded seed is never dropped silently.

While a notebook runs, what it prints is shown as it comes, prefixed with the run and the
notebook: its lines, the training bars (model, step, loss, time left; a line every 20 s or so),
and, after a minute of silence, how long it has run. Its kernel listens on IPC sockets, so
ipykernel has no unencrypted TCP port to warn about (`maintainer/kernels.py`).

A failing notebook stops the run with its name and cell, and leaves data/baselines.json as it
was. The seed's mini-GPT joins data/ only together with the JSON that vouches for its digest: a
run that fails or is interrupted before then leaves the old pair. Executed notebooks are kept
in build/pipeline/<mode>-<device class>/ for inspection.

Time budgets (`budgets_for`): each notebook's wall time is checked against its budget after the
run. A run over budget still writes data/baselines.json (its measurements are kept, and its
provenance lists `over_budget`), then stops with a message naming each notebook, its time and
its budget: `run_pipeline` raises BudgetExceeded, and the command line exits with status 3.
`--ignore-budgets` turns that failure into a warning. Exit status 1: a notebook failed.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import shutil
import stat
import statistics
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import torch

from grader.ctrl_c import ctrl_c_waits
from transformer_lab.baselines import device_class, run_key
from transformer_lab.catalogue import TRAINING_NOTEBOOK
from transformer_lab.runtime import (
    BUDGETS,
    device_name,
    precision_for,
    resolve_device,
    resolve_mode,
)
from transformer_lab.saving import TRAINED_GPT, sha256

from . import ROOT, commit_label, corpus_or_exit, notebook_build
from .kernels import PipelineKernelManager, Relay

BASELINES = ROOT / "data" / "baselines.json"
SCHEMA = ROOT / "data" / "baselines.schema.json"
WORKDIR = ROOT / "build" / "pipeline"
EMPTY = {"schema_version": 1, "runs": {}}


# Wall-time budgets in seconds. Notebook 04 trains every seed inside one execution, so its
# budget is per seed; every other notebook gets NOTEBOOK_SECONDS on any device. Smoke runs have
# none. MPS is held to the CPU's budgets.
# quick on a CPU: an idle 2-core run of 04 on the student's explicit attention path took 915 s
# for 3 seeds (305 s a seed, data/baselines.json at 63f25ac): a seed's budget leaves that run at
# 75 % of it, so only a slower step or a busy machine crosses it (docs/performance.md).
TRAINING_SECONDS_PER_SEED = {("quick", "cpu"): 410, ("full", "cpu"): 3600, "cuda": 120}
NOTEBOOK_SECONDS = 30
EXIT_OVER_BUDGET = 3


class PipelineError(RuntimeError):
    pass


class BudgetExceeded(PipelineError):
    """A notebook ran past its time budget. Raised after data/baselines.json was written."""

    def __init__(self, message: str, run: dict):
        super().__init__(message)
        self.run = run


class BudgetWarning(UserWarning):
    """A notebook ran past its time budget, and the run was told to ignore budgets."""


def budgets_for(mode: str, device, seeds: list[int], notebooks: list[str]) -> dict[str, float]:
    """{notebook: seconds}: 04_training 410 s a seed (quick) or 3,600 s (full) on a CPU, 120 s a
    seed on a CUDA GPU in any mode; every other notebook 30 s; smoke mode: no budgets."""
    if mode == "smoke":
        return {}
    device = torch.device(device)
    per_seed = TRAINING_SECONDS_PER_SEED["cuda" if device.type == "cuda" else (mode, "cpu")]
    return {
        name: per_seed * len(seeds) if name == TRAINING_NOTEBOOK else NOTEBOOK_SECONDS
        for name in notebooks
    }


def over_budget_message(run: dict, out: Path) -> str:
    provenance = run["provenance"]
    over = provenance["over_budget"]
    lines = [f"OVER BUDGET: {len(over)} notebook(s) ran past their time budget"]
    for name in over:
        seconds, budget = provenance["notebook_seconds"][name], provenance["budgets_seconds"][name]
        lines.append(
            f"  {name}: {seconds:.1f} s, budget {budget:g} s "
            f"({run['mode']} on {provenance['device']}, {len(provenance['seeds'])} seed(s))"
        )
    lines.append(f"The measurements were written to {out} all the same.")
    return "\n".join(lines)


def validate(baselines: dict) -> None:
    """Raise jsonschema.ValidationError where `baselines` breaks data/baselines.schema.json."""
    import jsonschema

    jsonschema.validate(baselines, json.loads(SCHEMA.read_text(encoding="utf-8")))


def new_provenance(mode: str, seeds: list[int], device: torch.device) -> dict:
    """Where, with what and how a run is measured; the run fills in its times."""
    budget = BUDGETS[mode]
    capability = None
    if device.type == "cuda":
        capability = "{}.{}".format(*torch.cuda.get_device_capability(device))
    commit, dirty = commit_label()
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": device_name(device),
        "compute_capability": capability,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "precision": precision_for(device).name,
        "mode": mode,
        "seeds": seeds,
        "batch_size": budget.batch_size,
        "steps": budget.steps,
        "notebook_seconds": {},
        "total_seconds": 0.0,
        "budgets_seconds": {},
        "over_budget": [],
    }


def summarise_seeds(rows: dict) -> dict:
    """Rows measured per seed get the mean nats over seeds (perplexity and bits follow from it)
    and the spread (max - min) of nats."""
    for name, row in rows.items():
        seeds = row.get("seeds")
        if not seeds:
            continue
        runs = list(seeds.values())
        summary = {key: value for key, value in runs[0].items() if key != "seeds"}
        nats = [r["nats"] for r in runs]
        summary["nats"] = statistics.fmean(nats)
        summary["perplexity"] = math.exp(summary["nats"])
        summary["bits"] = summary["nats"] / math.log(2)
        summary["train_seconds"] = statistics.fmean(r["train_seconds"] for r in runs)
        rows[name] = summary | {"spread": max(nats) - min(nats), "seeds": seeds}
    return rows


def _known_parameters(record: logging.LogRecord) -> bool:
    # SEEDS and RESULTS live in the maintainer cell, not the parameters cell; that is by design.
    return not record.getMessage().startswith("Passed unknown parameter")


logging.getLogger("papermill").addFilter(_known_parameters)


def _execute(source: Path, workdir: Path, parameters: dict, key: str) -> float:
    """Run one notebook with papermill, what it prints shown as it comes (`kernels.Relay`)."""
    import papermill

    notebook = workdir / f"{source.stem}.ipynb"
    notebook_build.write(notebook_build.source_notebook(source, maintainer=True), notebook)
    executed = workdir / "executed" / notebook.name
    executed.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        with Relay(f"[{key} {source.stem}]") as shown:
            papermill.execute_notebook(
                notebook,
                executed,
                parameters=parameters,
                kernel_name="python3",
                cwd=workdir,
                progress_bar=False,
                stdout_file=shown,
                stderr_file=shown,
                kernel_manager_class=PipelineKernelManager,
            )
    except papermill.PapermillExecutionError as err:
        raise PipelineError(
            f"{source.stem} failed in cell {err.exec_count} with {err.ename}: {err.evalue}. "
            f"Nothing was written; the executed notebook is at {executed}."
        ) from None
    return time.perf_counter() - start


def choose_seeds(baselines: dict, key: str, seeds: list[int] | None, replace: bool) -> list[int]:
    """The seeds to measure: the recorded run's by default; refuse to drop recorded seeds."""
    recorded = baselines["runs"].get(key, {}).get("provenance", {}).get("seeds", [])
    if seeds is None:
        return recorded or [0]
    dropped = [s for s in recorded if s not in seeds]
    if dropped and not replace:
        every = ",".join(map(str, sorted({*recorded, *seeds})))
        raise PipelineError(
            f"`{key}` is recorded with seeds {recorded}; seeds {list(seeds)} would drop "
            f"{dropped}. Measure them all (SEEDS={every}), or pass --replace (REPLACE=1) to "
            f"record only {list(seeds)}."
        )
    return list(seeds)


def _run_notebooks(
    sources: list[Path], workdir: Path, parameters: dict, key: str, provenance: dict
):
    """Execute each notebook, recording its wall time and whether it kept to its budget."""
    start = time.perf_counter()
    for source in sources:
        print(f"[{key}] running {source.stem} ...", flush=True)
        seconds = _execute(source, workdir, parameters, key)
        provenance["notebook_seconds"][source.stem] = round(seconds, 1)
        budget = provenance["budgets_seconds"].get(source.stem)
        limit = ""
        if budget is not None:
            limit = f" (budget {budget:g} s{', OVER' if seconds > budget else ''})"
        print(f"[{key}] {source.stem} done in {seconds:.0f} s{limit}", flush=True)
        if budget is not None and seconds > budget:
            provenance["over_budget"].append(source.stem)
    provenance["total_seconds"] = round(time.perf_counter() - start, 1)


def _model_record(trained: Path, key: str, seed: int, provenance: dict) -> str | None:
    """Record the seed's mini-GPT, which travels with the course beside `out` for notebooks 05
    and 06; return its file name there. Nothing is written yet."""
    if not trained.is_file():
        return None
    name = f"mini_gpt-{key.replace('/', '-')}.pt"
    provenance["model"] = {"file": name, "sha256": sha256(trained), "seed": seed}
    return name


def write_atomically(baselines: dict, out: Path, files: dict[Path, Path] | None = None) -> None:
    """Write `out` and copy `files` ({source: destination}) beside it, so that a reader sees the
    old set or the new one, never half a file nor a new model with the old JSON. Everything is
    staged in temporary files in the destination folder, then renamed into place, `out` last,
    with Ctrl-C held back between the renames."""
    staged = []
    try:
        for source, target in (files or {}).items():
            with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".tmp", delete=False) as tmp:
                staged.append((Path(tmp.name), target))
                with source.open("rb") as data:
                    shutil.copyfileobj(data, tmp)
            shutil.copymode(source, tmp.name)  # not the temporary file's owner-only mode
        with tempfile.NamedTemporaryFile("w", dir=out.parent, suffix=".tmp", delete=False) as tmp:
            staged.append((Path(tmp.name), out))
            json.dump(baselines, tmp, indent=2)
            tmp.write("\n")
        # The file everyone reads keeps its mode (a new one: 0644), not the temporary's 0600.
        os.chmod(tmp.name, stat.S_IMODE(out.stat().st_mode) if out.is_file() else 0o644)
        with ctrl_c_waits():
            for tmp_path, target in staged:
                os.replace(tmp_path, target)
    finally:
        for tmp_path, _ in staged:  # gone once renamed; left over only after a failure
            tmp_path.unlink(missing_ok=True)


def _read(out: Path) -> dict:
    return json.loads(out.read_text(encoding="utf-8")) if out.is_file() else dict(EMPTY)


def run_pipeline(
    mode: str = "auto",
    seeds: list[int] | None = None,
    device: str = "auto",
    out: Path = BASELINES,
    sources: list[Path] | None = None,
    workdir: Path = WORKDIR,
    budgets: dict[str, float] | None = None,
    ignore_budgets: bool = False,
    replace: bool = False,
) -> dict:
    """Execute the notebooks, merge their measurements into `out`, return the new run.

    seeds: None measures the recorded run's seeds again (`choose_seeds`).
    budgets: {notebook: seconds}, default `budgets_for(mode, device, seeds, notebooks)`; a
    notebook not in it has no budget. Over budget, the file is written and then BudgetExceeded
    is raised, or with ignore_budgets a BudgetWarning is issued and the run returned.
    """
    device = resolve_device(device)
    mode = resolve_mode(mode, device)
    if mode == "grade":
        raise PipelineError("MODE grade is for autograding; record full, quick or smoke")
    out, key = Path(out), run_key(mode, device)
    seeds = choose_seeds(_read(out), key, seeds, replace)
    workdir = Path(workdir) / key.replace("/", "-")
    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.json"
    trained = workdir / TRAINED_GPT  # what 04 saves beside itself, with SEED
    for stale in (results_path, trained):
        stale.unlink(missing_ok=True)
    run = {"mode": mode, "device_class": device_class(device)}
    provenance = run["provenance"] = new_provenance(mode, seeds, device)
    sources = list(sources or notebook_build.sources())
    if budgets is None:
        budgets = budgets_for(mode, device, seeds, [s.stem for s in sources])
    provenance["budgets_seconds"] = {s.stem: budgets[s.stem] for s in sources if s.stem in budgets}
    # SEED: the seed a student's run trains (04); SEEDS and RESULTS go to the maintainer cells.
    # USE_DRIVE False: nobody is there to sign in to Google; on Colab the mount would wait.
    parameters = {
        "MODE": mode,
        "DEVICE": str(device),
        "SEED": seeds[0],
        "SEEDS": seeds,
        "USE_DRIVE": False,
    }
    _run_notebooks(sources, workdir, parameters | {"RESULTS": str(results_path)}, key, provenance)
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    run["results"] = results | {"rows": summarise_seeds(results.get("rows", {}))}
    model = _model_record(trained, key, seeds[0], provenance)
    baselines = _read(out)
    baselines["runs"] = dict(sorted({**baselines["runs"], key: run}.items()))
    validate(baselines)  # before anything in out's folder changes
    write_atomically(baselines, out, {trained: out.parent / model} if model else None)
    if provenance["over_budget"]:
        message = over_budget_message(run, out)
        if not ignore_budgets:
            raise BudgetExceeded(message, run)
        warnings.warn(message, BudgetWarning, stacklevel=2)
    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode", default="auto", help="auto (full on a GPU, quick on a CPU), full, quick or smoke"
    )
    parser.add_argument(
        "--seeds",
        default=None,
        help="comma-separated training seeds, e.g. 0,1,2 (default: the recorded run's seeds)",
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    parser.add_argument("--out", type=Path, default=BASELINES)
    parser.add_argument(
        "--ignore-budgets",
        action="store_true",
        help="a notebook over its time budget warns instead of failing the run (exit status 3)",
    )
    parser.add_argument(
        "--replace", action="store_true", help="record these seeds even if that drops recorded ones"
    )
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    corpus_or_exit("regenerate-baselines stopped")
    try:
        run = run_pipeline(
            args.mode,
            seeds,
            args.device,
            args.out,
            ignore_budgets=args.ignore_budgets,
            replace=args.replace,
        )
    except BudgetExceeded as err:
        print(f"regenerate-baselines: {err}", file=sys.stderr)
        print("Pass --ignore-budgets to record such a run without failing.", file=sys.stderr)
        sys.exit(EXIT_OVER_BUDGET)
    except PipelineError as err:
        sys.exit(f"regenerate-baselines stopped: {err}")
    provenance = run["provenance"]
    total = provenance["total_seconds"]
    print(f"wrote {args.out}: {run['mode']}/{run['device_class']} in {total:.0f} s")
    for name, seconds in provenance["notebook_seconds"].items():
        budget = provenance["budgets_seconds"].get(name)
        limit = f"   budget {budget:g} s" if budget is not None else ""
        over = "  OVER BUDGET" if name in provenance["over_budget"] else ""
        print(f"  {name:<16} {seconds:>7.1f} s{limit}{over}")


if __name__ == "__main__":
    main()
