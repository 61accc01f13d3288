"""`make gpu-check`: one run, on a GPU lent for minutes, of what only a GPU can do, planned first.

    python -m maintainer.gpu_check --dry-run                 # the plan, on any machine
    python -m maintainer.gpu_check --budget-seconds 540      # on the GPU: plan, run, record

A GPU is lent to maintainers now and then, at most 10 minutes a command. This command plans the
work from the per-step costs already recorded (data/baselines.json, docs/bench/), runs it in
order of value and records each result as the existing tools do. Its four parts, lettered as the
plan prints them, in the order they run:

    (d) Exercises 1-3's checks on the solutions' pieces, kept as a student's module is kept
        (transformer_lab/student.py), where the checks train them in the GPU's own float16
    (a) the full-budget baselines: `pipeline.run_pipeline` at MODE full on the GPU, the
        pipeline's seeds (`pipeline.choose_seeds`), into data/baselines.json with provenance
    (b) the disputed rungs of the ablation ladder, `post_norm` and `no_warmup` against the
        complete model `full`, at the full budget, each at its best rate where a ladder records
        one (else the course's), seed by seed as long as seeds fit, into data/baselines.json
        under ablations/full/<device class> (`ablations.write`)
    (c) the bench (`bench.run_bench` on the GPU) into docs/bench/<device class>.md

Why the checks come first, not last: they cost seconds, they are the only item whose failure is
a defect students meet (a checkpoint that refuses a right piece on every GPU), not a number left
unrefreshed, and they show that CUDA works before minutes go into training. Then the baselines
every notebook shows, the disputed rungs seed by seed (a rung's seed only with the complete
model's same seed: a rung is read against it seed by seed), the bench last. An item that does not
fit is skipped and the next one tried.

Estimates: training and scoring at the recorded 2-core CPU's seconds divided by the GPU's speed-up
over it, measured where a full run or a bench of this device class is recorded, else assumed: the
pipeline's CUDA budget for a seed of notebook 04 (`pipeline.budgets_for`) is the slowest GPU it
accepts, so the speed-up is what that budget asks of the recorded CPU seed. Everything else
(kernels starting, the notebooks' other cells, the checks) counts at its recorded CPU seconds,
with CUDA_START_S for each process that starts CUDA. The run plans again before each item, with
the time left and what it has recorded by then (after the baselines, their GPU seconds), so an
item skipped by the first plan may still run, and none starts that its estimate says will not end
within the budget. At the end it prints what it could not fit. A failing item is reported and
the next one runs; exit status 1: an item failed, 3: the pipeline ran over its time budget
(`pipeline.EXIT_OVER_BUDGET`; recorded all the same). Without CUDA only `--dry-run` runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

import torch

from transformer_lab.baselines import device_class, nearest_run
from transformer_lab.catalogue import BY_NAME, TRAINING_NOTEBOOK, resolve
from transformer_lab.data import TEST_CHARS

from . import ROOT, ablations, bench, commit_label, notebook_build, pipeline

DEFAULT_BUDGET_S = 540  # of the lent machine's 600 s a command: a minute for its own start
STARTUP_S = 10  # this process: imports, the corpus, CUDA
CUDA_START_S = 5  # each process that starts CUDA (the pipeline's kernels)
PROCESS_S = 1  # each of the bench's measurement processes: a fork and the corpus
DRY_RUN_CLASS = "cuda-bf16"  # planned for without a GPU: the lent H100s' class (a T4: cuda-fp16)
CHECKED = ("ex1", "ex2", "ex3")  # the exercises whose pieces train inside the model
DISPUTED = ("full", "post_norm", "no_warmup")  # the complete model first: the rungs read against it
# Three seeds settle a rung's reading (reading/verdict.py); two more narrow it.
RUNG_SEEDS = (0, 1, 2, 3, 4)
# The bench as this run calls it: the GPU's figures at `make bench`'s steps, notebook 04's
# CPU-only table at a tenth of its rounds and steps (its figures are the CPU's, recorded apart).
BENCH_OPTIONS = {"steps": 20, "quick_steps": 10, "rounds": 1, "validation_batches": 2}
CPU_PRECISIONS = 3  # the lent machine's CPU is not known ahead: fp32, bf16 and fp16 at most
WORKDIR = ROOT / "build" / "gpu_check"
REFUSAL = "no GPU here: run `make gpu-check DRY_RUN=1` to see the plan"


class PlanError(RuntimeError):
    """What the plan needs is not recorded."""


class OverBudget(RuntimeError):
    """The pipeline ran past its time budget (what it measured is recorded all the same)."""


# --- What is recorded --------------------------------------------------------------------------


def bench_rows(text: str, heading: str) -> list[dict[str, str]]:
    """The rows of the table under the docs/bench heading that starts `heading`, by column."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"## {heading}")), None)
    if start is None:
        return []
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("|---"):
            table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return [dict(zip(table[0], row, strict=True)) for row in table[1:]]


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


@dataclass(frozen=True)
class CpuFigures:
    """The recorded CPU's per-step seconds, from its bench (docs/bench/cpu.md): a training step
    at the quick budget's batch, a validation batch, and scoring the test split, per model."""

    step: dict[str, float]
    validation: dict[str, float]
    scoring: dict[str, float]
    tokens_per_s: float  # the GPT in our loop, at the bench's batch

    @classmethod
    def read(cls, text: str) -> CpuFigures:
        steps = {
            r["model"]: r
            for r in bench_rows(text, "Notebook 04's training step")
            if r["model"] == "lstm" or r["attention"] == bench.ATTENTION_LABELS["sdpa"]
        }
        scored = {r["model"]: r for r in bench_rows(text, "Evaluation") if r["device"] == "cpu"}
        trained = [r for r in bench_rows(text, "Training") if r["device"] == "cpu"]
        if set(steps) != {"gpt", "lstm"} or set(scored) != {"gpt", "lstm"} or not trained:
            raise PlanError("docs/bench/cpu.md lacks its tables: run `make bench` on the CPU")
        return cls(
            step={m: _number(r["ms/step"]) / 1000 for m, r in steps.items()},
            validation={m: _number(r["validation ms/batch"]) / 1000 for m, r in steps.items()},
            scoring={m: TEST_CHARS / _number(r["ours chars/s"]) for m, r in scored.items()},
            tokens_per_s=next(_number(r["ours tok/s"]) for r in trained if r["model"] == "gpt"),
        )


def _gpu_bench_tokens_per_s(text: str | None) -> float | None:
    """The GPT's training tokens/s in our loop on the GPU, from a bench of its class."""
    rows = bench_rows(text or "", "Training")
    found = [r for r in rows if r["device"] != "cpu" and r["model"] == "gpt"]
    return _number(found[0]["ours tok/s"]) if found else None


def _seed_seconds(run: dict) -> dict[str, float]:
    """Training seconds of one seed of each model a full run trains (lstm_lab3: once a run)."""
    rows = run["results"]["rows"]
    return {m: rows[m]["train_seconds"] for m in ("gpt", "lstm", "lstm_lab3") if m in rows}


def _this_commit(provenance: dict, commit: str, dirty: bool) -> bool:
    return provenance.get("git_commit") == commit and provenance.get("git_dirty") == dirty


@dataclass(frozen=True)
class Costs:
    """What the plan knows, read once from the records: seconds on the recorded CPU, the GPU's
    speed-up over it and where that comes from, and what this commit has already recorded."""

    device_class: str
    cpu_seed: dict[str, float]  # full/cpu: training seconds a seed (gpt, lstm), lstm_lab3 once
    cpu_notebooks: dict[str, float]  # full/cpu: each notebook's seconds, 04's without training
    cpu: CpuFigures
    speedup: float
    speedup_from: str
    baseline_seeds: tuple[int, ...]
    baselines_recorded: bool  # full/<class> recorded at this commit, from a clean tree
    rung_lr: dict[str, float | None]
    rungs_recorded: dict[str, frozenset[int]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"full/{self.device_class}"


def _cpu_full(baselines: dict) -> tuple[dict[str, float], dict[str, float]]:
    run = baselines.get("runs", {}).get("full/cpu")
    if run is None:
        raise PlanError("no full/cpu run in data/baselines.json: the plan prices work by it")
    seed = _seed_seconds(run)
    seeds = len(run["provenance"]["seeds"])
    notebooks = dict(run["provenance"]["notebook_seconds"])
    trained = seeds * (seed["gpt"] + seed["lstm"]) + seed.get("lstm_lab3", 0.0)
    notebooks[TRAINING_NOTEBOOK] -= trained
    return seed, notebooks


def _speedup(baselines: dict, key: str, cpu_seed: dict, cpu: CpuFigures, gpu_bench) -> tuple:
    """(the GPU's speed-up in training over the recorded CPU, where it comes from)."""
    cpu_pair = cpu_seed["gpt"] + cpu_seed["lstm"]
    run = baselines.get("runs", {}).get(key)
    if run is not None:
        gpu = _seed_seconds(run)
        when = run["provenance"]["date"][:10]
        return cpu_pair / (gpu["gpt"] + gpu["lstm"]), f"measured: the {key} run of {when}"
    tokens = _gpu_bench_tokens_per_s(gpu_bench)
    if tokens is not None:
        return tokens / cpu.tokens_per_s, f"measured: docs/bench/{key.split('/')[1]}.md"
    budget = pipeline.budgets_for("full", "cuda", [0], [TRAINING_NOTEBOOK])[TRAINING_NOTEBOOK]
    return cpu_pair / budget, (
        f"assumed: no GPU figure recorded for {key.split('/')[1]}; the pipeline's CUDA budget "
        f"of {budget:g} s a seed of 04 over the {cpu_pair:,.0f} s a full/cpu seed trains"
    )


def _rung_lr(baselines: dict, cls: str) -> dict[str, float | None]:
    """Each disputed rung's best rate where a recorded ladder has one (None: the course's)."""
    rates = {}
    for name in DISPUTED:

        def has(ladder, name=name):
            return ladder["rungs"].get(name, {}).get("lr") is not None

        found = nearest_run("full", cls, has=has, baselines=baselines, section="ablations")
        rates[name] = found[1]["rungs"][name]["lr"] if found else None
    return rates


def _rungs_recorded(baselines: dict, key: str, commit: str, dirty: bool) -> dict:
    ladder = baselines.get("ablations", {}).get(key)
    if ladder is None or not _this_commit(ladder["provenance"], commit, dirty):
        return {}
    return {name: frozenset(map(int, r["seeds"])) for name, r in ladder["rungs"].items()}


def costs_from(
    baselines: dict, cpu_bench: str, gpu_bench: str | None, cls: str, commit: str, dirty: bool
) -> Costs:
    """The plan's knowledge from the records' contents (a function of them alone)."""
    key = f"full/{cls}"
    cpu_seed, cpu_notebooks = _cpu_full(baselines)
    cpu = CpuFigures.read(cpu_bench)
    speedup, speedup_from = _speedup(baselines, key, cpu_seed, cpu, gpu_bench)
    run = baselines.get("runs", {}).get(key)
    recorded = run is not None and not dirty and _this_commit(run["provenance"], commit, False)
    return Costs(
        device_class=cls,
        cpu_seed=cpu_seed,
        cpu_notebooks=cpu_notebooks,
        cpu=cpu,
        speedup=speedup,
        speedup_from=speedup_from,
        baseline_seeds=tuple(pipeline.choose_seeds(baselines, key, None, False)),
        baselines_recorded=recorded,
        rung_lr=_rung_lr(baselines, cls),
        rungs_recorded=_rungs_recorded(baselines, key, commit, dirty),
    )


def read_costs(cls: str) -> Costs:
    """The plan's knowledge from data/baselines.json and docs/bench/, as they are now."""
    gpu_doc = bench.DOCS / f"{cls}.md"
    commit, dirty = commit_label()
    return costs_from(
        json.loads(pipeline.BASELINES.read_text(encoding="utf-8")),
        (bench.DOCS / "cpu.md").read_text(encoding="utf-8"),
        gpu_doc.read_text(encoding="utf-8") if gpu_doc.is_file() else None,
        cls,
        commit,
        dirty,
    )


# --- The plan ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One piece of work: `key` names it ("fp16-checks", "baselines", "post_norm/0", "bench"),
    `part` is the brief's letter, `seconds` its estimate and `how` where that comes from."""

    key: str
    part: str
    label: str
    seconds: float
    how: str
    seeds: tuple[int, ...] = ()
    rung: str | None = None
    lr: float | None = None


class Skip(NamedTuple):
    item: Item
    why: str


@dataclass(frozen=True)
class Plan:
    budget_s: float
    startup_s: float
    items: tuple[Item, ...]
    skipped: tuple[Skip, ...]
    costs: Costs

    @property
    def total_s(self) -> float:
        return self.startup_s + sum(item.seconds for item in self.items)


def checks_item(costs: Costs) -> Item:
    notebooks = sorted({BY_NAME[name].notebook for name in CHECKED})
    seconds = sum(costs.cpu_notebooks[n] for n in notebooks)
    return Item(
        "fp16-checks",
        "d",
        "Exercises 1-3's checks on the solutions' pieces, float16 autocast on the GPU",
        seconds,
        f"notebooks {notebooks[0][:2]}-{notebooks[-1][:2]}'s full/cpu seconds, whole",
    )


def baselines_item(costs: Costs) -> Item:
    """The pipeline at the full budget: every notebook, 04 training each seed (and Lab 3's LSTM
    once); the notebooks' other cells at their CPU seconds, each kernel starting CUDA."""
    seeds = costs.baseline_seeds
    seed = costs.cpu_seed
    trained = len(seeds) * (seed["gpt"] + seed["lstm"]) + seed.get("lstm_lab3", 0.0)
    rest = sum(costs.cpu_notebooks.values()) + CUDA_START_S * len(costs.cpu_notebooks)
    return Item(
        "baselines",
        "a",
        f"make regenerate-baselines MODE=full: {costs.key}, seeds {','.join(map(str, seeds))}",
        rest + trained / costs.speedup,
        "full/cpu: training / speed-up, other cells as recorded, CUDA a kernel",
        seeds=seeds,
    )


def rung_item(costs: Costs, name: str, seed: int) -> Item:
    """A seed of a rung: 04's GPT at the full budget, trained and scored."""
    lr = costs.rung_lr[name]
    rate = f"lr {lr:g}, its best by a recorded sweep" if lr else "the course's lr"
    work = costs.cpu_seed["gpt"] + costs.cpu.scoring["gpt"]
    return Item(
        f"{name}/{seed}",
        "b",
        f"rung {name}, seed {seed}, full budget, {rate}",
        work / costs.speedup,
        "full/cpu GPT seed + bench scoring, / speed-up",
        seeds=(seed,),
        rung=name,
        lr=lr,
    )


def bench_seconds(costs: Costs, gpu_precisions: int) -> float:
    """`bench.run_bench` at BENCH_OPTIONS, figure by figure at the recorded CPU's step costs:
    the CPU's as they are, the GPU's over the speed-up, and a process for each CPU figure."""
    o, cpu = BENCH_OPTIONS, costs.cpu
    gpt, lstm = cpu.step["gpt"], cpu.step["lstm"]
    steps = o["steps"] + min(bench.WARMUP_STEPS, o["steps"])
    quick = o["quick_steps"] + min(bench.WARMUP_STEPS, o["quick_steps"])
    training = 2 * steps * (gpt + lstm)  # ours and the reference loop, each model
    scoring = 2 * (cpu.scoring["gpt"] + cpu.scoring["lstm"])
    attention = 2 * steps * gpt  # explicit and fused, at one precision
    validation = o["validation_batches"] * (3 * cpu.validation["gpt"] + cpu.validation["lstm"])
    rows_04 = o["rounds"] * (quick * (3 * gpt + lstm) + validation)
    on_cpu = training + scoring + CPU_PRECISIONS * attention + rows_04
    on_gpu = (training + scoring + gpu_precisions * attention) / costs.speedup
    processes = 2 + 4 + 4 + 2 * CPU_PRECISIONS  # idle, 04's rows; training; scoring; attention
    return on_cpu + on_gpu + processes * PROCESS_S


def bench_item(costs: Costs) -> Item:
    gpu_precisions = 3 if costs.device_class == "cuda-bf16" else 2  # fp32 and the native ones
    options = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in BENCH_OPTIONS.items())
    return Item(
        "bench",
        "c",
        f"python -m maintainer.bench --device cuda {options}: docs/bench/{costs.device_class}.md",
        bench_seconds(costs, gpu_precisions),
        "docs/bench/cpu.md's steps and scoring: the CPU's as they are, the GPU's / speed-up",
    )


def candidates(costs: Costs, done: Mapping[str, bool]) -> list[Item]:
    """Every item not yet run (`done`: key -> whether it succeeded) nor recorded at this commit,
    in order of value."""
    found = [checks_item(costs)]
    if not costs.baselines_recorded:
        found.append(baselines_item(costs))
    found += [
        rung_item(costs, name, seed)
        for seed in RUNG_SEEDS
        for name in DISPUTED
        if seed not in costs.rungs_recorded.get(name, ())
    ]
    found.append(bench_item(costs))
    return [item for item in found if item.key not in done]


def plan_work(
    costs: Costs, budget_s: float, done: Mapping[str, bool] | None = None, startup_s=STARTUP_S
) -> Plan:
    """The candidates in order of value, each taken where it fits in what is left of the budget
    and skipped where it does not (the next one is tried); a rung's seed only with the complete
    model's same seed recorded, run or taken. `done`: key -> whether it succeeded."""
    done = done or {}
    left = budget_s - startup_s
    items, skipped = [], []
    complete = set(costs.rungs_recorded.get("full", ()))
    complete |= {int(key.split("/")[1]) for key, ok in done.items() if ok and key[:5] == "full/"}
    for item in candidates(costs, done):
        if item.rung not in (None, "full") and item.seeds[0] not in complete:
            skipped.append(Skip(item, f"needs full/{item.seeds[0]}"))
        elif item.seconds > left:
            skipped.append(Skip(item, "does not fit"))
        else:
            items.append(item)
            left -= item.seconds
            if item.rung == "full":
                complete.add(item.seeds[0])
    return Plan(budget_s, startup_s, tuple(items), tuple(skipped), costs)


def render(plan: Plan, where: str) -> str:
    """The plan as the command prints it: each item's estimate, the total, what would not fit."""
    costs = plan.costs
    lines = [
        f"gpu-check plan: {plan.budget_s:g} s on {where}",
        f"GPU speed-up in training over the recorded CPU: {costs.speedup:.1f}x "
        f"({costs.speedup_from})",
        f"{'est. s':>8}  part  item   [estimated from]",
    ]
    if plan.startup_s:
        lines.append(f"{plan.startup_s:>8.0f}        start-up: imports, the corpus, CUDA")
    lines += [f"{i.seconds:>8.0f}  ({i.part})  {i.key}: {i.label}   [{i.how}]" for i in plan.items]
    lines.append(f"total: {plan.total_s:.0f} s of {plan.budget_s:g} s")
    if costs.baselines_recorded:
        lines.append(f"(a) not planned: {costs.key} is recorded at this commit")
    if plan.skipped:
        lines.append("would not fit (est. s):")
        lines += skipped_lines(plan.skipped)
        lines.append(
            "The run plans again before each item from the time left and what it has measured "
            "by then: an item that does not fit here may still run."
        )
    return "\n".join(lines)


def skipped_lines(skipped: tuple[Skip, ...]) -> list[str]:
    """A line a skipped item; the rungs that need a skipped complete model's seed on its line."""
    keys = {s.item.key for s in skipped}
    riders: dict[str, list[str]] = {}
    for s in skipped:
        if s.why.startswith("needs ") and s.why.removeprefix("needs ") in keys:
            riders.setdefault(s.why.removeprefix("needs "), []).append(s.item.key)
    lines = []
    for s in skipped:
        if any(s.item.key in riding for riding in riders.values()):
            continue
        also = (
            f" (and {', '.join(riders[s.item.key])}, read against it)"
            if s.item.key in riders
            else ""
        )
        lines.append(f"{s.item.seconds:>8.0f}  ({s.item.part})  {s.item.key}{also}: {s.why}")
    return lines


# --- The run -----------------------------------------------------------------------------------


@dataclass
class Session:
    """What every item runs with, made once at the top of a run: the GPU, its class and name,
    its corpus (loaded by the first item that needs it) and the budget's clock."""

    device: torch.device
    device_class: str
    device_name: str
    budget_s: float
    started: float = field(default_factory=time.perf_counter)
    _corpus: object = None

    @classmethod
    def on_this_gpu(cls, budget_s: float) -> Session:
        from transformer_lab.runtime import device_name

        device = torch.device("cuda")
        return cls(device, device_class(device), device_name(device), budget_s)

    @property
    def key(self) -> str:
        return f"full/{self.device_class}"

    @property
    def left_s(self) -> float:
        return self.budget_s - (time.perf_counter() - self.started)

    @property
    def corpus(self):
        from transformer_lab import load_corpus

        if self._corpus is None:
            self._corpus = load_corpus(self.device)
        return self._corpus


class Done(NamedTuple):
    item: Item
    seconds: float
    outcome: str
    ok: bool


def solution_pieces() -> dict[str, object]:
    """Exercises 1-3's solutions as a student's kept module holds them (student.write_module,
    under its header), imported from its own file: {exercise name: function}."""
    import jupytext

    from transformer_lab import student

    sources = {path.stem: path for path in notebook_build.sources()}
    sections = {}
    for name in CHECKED:
        exercise = BY_NAME[name]
        cells = jupytext.read(sources[exercise.notebook]).cells
        (cell,) = [
            c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == exercise.cell
        ]
        sections[exercise.piece] = cell.source
    path = WORKDIR / student.MODULE.name
    student.write_module(path, sections)
    spec = importlib.util.spec_from_file_location(student.MODULE.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: getattr(module, BY_NAME[name].function) for name in CHECKED}


def run_checks(item: Item, session: Session) -> str:
    """Each checkpoint called as its solution notebook calls it, on the student's pieces: on a
    GPU the checks train each piece inside the model in float16 (checkpoints/in_the_model.py)."""
    from transformer_lab.student import course_pieces

    fn = solution_pieces()
    pieces = course_pieces("").using("attention", fn["ex1"], "notebook 01's solution")
    pieces = pieces.using("mask", fn["ex2"], "notebook 02's solution")
    also = {"ex1": (), "ex2": (pieces.attention,), "ex3": (pieces,)}
    for name in CHECKED:
        resolve("checkpoints", BY_NAME[name].checkpoint)(fn[name], *also[name])
    return f"{', '.join(CHECKED)} passed on {session.device_name}"


def run_baselines(item: Item, session: Session) -> str:
    """The pipeline at the full budget on the GPU; over its time budget it has still recorded."""
    try:
        run = pipeline.run_pipeline("full", list(item.seeds), str(session.device))
    except pipeline.BudgetExceeded as over:
        raise OverBudget(str(over).splitlines()[0]) from None
    seconds = run["provenance"]["total_seconds"]
    return f"recorded full/{run['device_class']} in data/baselines.json ({seconds:.0f} s)"


def _ladder(session: Session, commit: str, dirty: bool) -> dict:
    """A ladder of the full budget on this GPU, as `ablations.record` keeps one, without rungs."""
    import platform

    return {
        "mode": "full",
        "device_class": session.device_class,
        "provenance": {
            "git_commit": commit,
            "git_dirty": dirty,
            "date": "",
            "device": session.device_name,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "seeds": [],
            "wall_seconds": 0.0,
        },
        "rungs": {},
    }


def record_rung(item: Item, row: dict, session: Session) -> None:
    """Add a rung's seed to the ladder recorded for this GPU's class at this commit (a ladder of
    another commit is replaced), and write it (`ablations.write`: checked, atomic)."""
    from transformer_lab.ablations import LADDER

    commit, dirty = commit_label()
    recorded = json.loads(pipeline.BASELINES.read_text(encoding="utf-8"))
    ladder = recorded.get("ablations", {}).get(session.key)
    if ladder is None or not _this_commit(ladder["provenance"], commit, dirty):
        ladder = _ladder(session, commit, dirty)
    rung = LADDER[item.rung]
    entry = ladder["rungs"].setdefault(
        item.rung,
        {"removes": rung.removes, "claim": rung.claim, "seeds": {}}
        | ({"lr": item.lr} if item.lr else {})
        | {"warmup": "none" if rung.warmup == 0 else "the course's"},
    )
    entry["seeds"][str(item.seeds[0])] = row
    ladder["rungs"] = {name: ladder["rungs"][name] for name in LADDER if name in ladder["rungs"]}
    provenance = ladder["provenance"]
    provenance["seeds"] = sorted({int(s) for r in ladder["rungs"].values() for s in r["seeds"]})
    provenance["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    provenance["wall_seconds"] = round(provenance["wall_seconds"] + row["train_seconds"], 1)
    ablations.write(ladder)


def run_rung(item: Item, session: Session) -> str:
    from transformer_lab import BUDGETS
    from transformer_lab.ablations import LADDER, train_rung

    rung = LADDER[item.rung]
    _, _, row = train_rung(rung, session.corpus, BUDGETS["full"], item.seeds[0], lr=item.lr)
    record_rung(item, row, session)
    return f"{row['nats']:.4f} nats, trained in {row['train_seconds']:.0f} s"


def run_bench(item: Item, session: Session) -> str:
    from transformer_lab.runtime import configure_cpu_threads

    configure_cpu_threads()
    bench.run_bench(device=session.device, **BENCH_OPTIONS)
    return f"wrote docs/bench/{session.device_class}.md"


RUNNERS = {"d": run_checks, "a": run_baselines, "b": run_rung, "c": run_bench}


def run_item(item: Item, session: Session) -> Done:
    """Run one item; its failure is reported and the run goes on."""
    print(f"\n=== ({item.part}) {item.label}: about {item.seconds:.0f} s", flush=True)
    start = time.perf_counter()
    try:
        outcome, ok = RUNNERS[item.part](item, session), True
    except OverBudget as over:
        outcome, ok = f"OVER BUDGET: {over}", False
    except Exception as err:  # a lent GPU's minutes are scarce: the items after it still run
        outcome, ok = f"FAILED: {type(err).__name__}: {str(err).splitlines()[0]}", False
    seconds = time.perf_counter() - start
    print(f"=== {item.key}: {outcome} ({seconds:.0f} s)", flush=True)
    return Done(item, seconds, outcome, ok)


def run(session: Session) -> tuple[list[Done], Plan]:
    """Plan again before each item with the time left and what is recorded by then; run the
    first item of each plan. Returns what ran and the last plan (what could not fit)."""
    done: list[Done] = []
    while True:
        ran = {d.item.key: d.ok for d in done}
        plan = plan_work(read_costs(session.device_class), session.left_s, ran, startup_s=0)
        if not plan.items:
            return done, plan
        done.append(run_item(plan.items[0], session))


def report(done: list[Done], last: Plan) -> str:
    lines = ["", "gpu-check: what ran (estimated s, actual s)"]
    lines += [f"{d.item.seconds:>8.0f} {d.seconds:>8.0f}  {d.item.key}: {d.outcome}" for d in done]
    if last.skipped:
        lines.append(f"could not fit in the {last.budget_s:.0f} s left (estimated s):")
        lines += [f"{s.item.seconds:>8.0f}  {s.item.key}: {s.why}" for s in last.skipped]
    else:
        lines.append("everything planned ran")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan; run nothing")
    parser.add_argument(
        "--budget-seconds",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"wall time for the whole run (default {DEFAULT_BUDGET_S}: the lent machine allows "
        "600 s a command)",
    )
    args = parser.parse_args(argv)
    here = torch.cuda.is_available()
    if not here and not args.dry_run:
        cpu_build = "" if torch.version.cuda else f" (torch {torch.__version__} has no CUDA)"
        sys.exit(REFUSAL + cpu_build)
    cls = device_class("cuda") if here else DRY_RUN_CLASS
    where = f"a {cls} GPU (none here: the lent H100s' class; a T4 is cuda-fp16)"
    if here:
        where = f"{torch.cuda.get_device_name()} ({cls})"
    try:
        plan = plan_work(read_costs(cls), args.budget_seconds)
    except PlanError as err:
        sys.exit(f"gpu-check: {err}")
    print(render(plan, where), flush=True)
    if args.dry_run:
        return
    done, last = run(Session.on_this_gpu(args.budget_seconds - STARTUP_S))
    print(report(done, last))
    if any(not d.ok and not d.outcome.startswith("OVER") for d in done):
        sys.exit(1)
    if not all(d.ok for d in done):
        sys.exit(pipeline.EXIT_OVER_BUDGET)


if __name__ == "__main__":
    main()
