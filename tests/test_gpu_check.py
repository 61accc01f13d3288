"""`make gpu-check`: the plan of a lent GPU's ten minutes, made from what is recorded, and the run
that follows it. The planner is read as values (the items it takes, in order, and those it skips)
on records of round numbers, so that each estimate can be worked out by hand; the dry run and the
refusal on the checkout's own records, on this CPU. The run itself needs a GPU: here its loop
runs with stand-in items, and the two pieces that record (the checks on the solutions' pieces, a
rung's seed into the ladder) run on the CPU."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch
from paths import ROOT

from maintainer import ablations, gpu_check, pipeline
from transformer_lab.ablations import LADDER

COMMIT = "c" * 40
NOTEBOOKS = ("01_attention", "02_causal_mask", "03_positions", "05_heads", "06_stretch")
# A CPU's bench of round numbers: a GPT step 0.1 s, scoring the test split 1 s (GPT) or 0.5 s.
CPU_BENCH = """
## Training (tokens/s)

| device | model | ours: precision | reference tok/s | ours tok/s |
|---|---|---|---:|---:|
| cpu | gpt | fp32 | 10,000 | 10,000 |
| cpu | lstm | fp32 | 50,000 | 50,000 |

## Evaluation (characters/s, the first 60,394 test characters, fp32)

| device | model | reference chars/s | ours chars/s |
|---|---|---:|---:|
| cpu | gpt | 60,394 | 60,394 |
| cpu | lstm | 120,788 | 120,788 |

## Notebook 04's training step at the quick budget

| model | attention | ms/step | validation ms/batch |
|---|---|---:|---:|
| gpt | fused: `F.scaled_dot_product_attention` | 100.0 | 30.0 |
| gpt | explicit: a student's, `@` (01's solution), plugged in | 120.0 | 40.0 |
| lstm | - | 20.0 | 5.0 |
"""
GPU_BENCH = """
## Training (tokens/s)

| device | model | ours: precision | reference tok/s | ours tok/s |
|---|---|---|---:|---:|
| cpu | gpt | fp32 | 30,000 | 30,000 |
| NVIDIA H100 80GB HBM3 | gpt | bf16 | 150,000 | 200,000 |
"""


def full_run(gpt: float, lstm: float, lab3: float = 100.0, dirty=False, commit="a" * 40) -> dict:
    """A full run whose seeds train `gpt` and `lstm` seconds; every other notebook 5 or 10 s, 04
    30 s beside its training."""
    seeds = [0, 1, 2]
    notebooks = dict.fromkeys(NOTEBOOKS, 5.0) | {"03_positions": 10.0}
    notebooks["04_training"] = len(seeds) * (gpt + lstm) + lab3 + 30
    rows = {"gpt": gpt, "lstm": lstm, "lstm_lab3": lab3}
    provenance = {"git_commit": commit, "git_dirty": dirty, "date": "2026-12-08T10:00:00+00:00"}
    return {
        "provenance": provenance | {"seeds": seeds, "notebook_seconds": notebooks},
        "results": {"rows": {name: {"train_seconds": s} for name, s in rows.items()}},
    }


def records(**more) -> dict:
    """A CPU's full run: a seed trains the GPT in 1,000 s and the LSTM in 200 s, so the pipeline's
    CUDA budget of 120 s a seed assumes a GPU 10 times the CPU."""
    return {"schema_version": 1, "runs": {"full/cpu": full_run(1000.0, 200.0)}} | more


def ladder(commit: str, dirty: bool = False, **seeds) -> dict:
    provenance = {"git_commit": commit, "git_dirty": dirty}
    return {"provenance": provenance, "rungs": {n: {"seeds": s} for n, s in seeds.items()}}


def costs(baselines=None, gpu_bench=None, dirty=False) -> gpu_check.Costs:
    baselines = records() if baselines is None else baselines
    return gpu_check.costs_from(baselines, CPU_BENCH, gpu_bench, "cuda-bf16", COMMIT, dirty)


def keys(found) -> list[str]:
    return [getattr(x, "item", x).key for x in found]


RUNGS_AFTER_0 = [f"{n}/{s}" for s in (1, 2, 3, 4) for n in ("full", "post_norm", "no_warmup")]


# --- What is recorded, and what each item costs ------------------------------------------------


def test_the_gpus_speed_is_assumed_from_the_pipelines_budget_until_one_is_measured():
    assumed = costs()
    assert (assumed.speedup, assumed.speedup_from.split(":")[0]) == (10.0, "assumed")
    bench = costs(gpu_bench=GPU_BENCH)  # the GPU's GPT against the recorded CPU's 10,000 tok/s
    assert (bench.speedup, bench.speedup_from.split(":")[0]) == (20.0, "measured")
    run = costs(records(runs={"full/cpu": full_run(1000, 200), "full/cuda-bf16": full_run(20, 4)}))
    assert (run.speedup, run.speedup_from.split(":")[0]) == (50.0, "measured")


def test_each_item_is_priced_from_the_records():
    c = costs()
    # Notebooks 01-03 as recorded; the pipeline: every notebook's other cells (60 s), CUDA in
    # each of its six kernels (30 s), one seed of GPT and LSTM and Lab 3's LSTM over the speed-up.
    assert gpu_check.checks_item(c).seconds == 20
    assert gpu_check.baselines_item(c).seconds == 60 + 30 + (1000 + 200 + 100) / 10
    assert gpu_check.rung_item(c, "post_norm", 3).seconds == pytest.approx((1000 + 1) / 10)
    assert 0 < gpu_check.bench_item(c).seconds < gpu_check.rung_item(c, "full", 0).seconds


def test_each_rung_trains_at_the_best_rate_a_ladder_records_else_the_courses():
    swept = ladder("b" * 40, post_norm={"0": {}}, full={"0": {}})
    swept["rungs"]["post_norm"]["lr"] = 0.002
    swept["rungs"]["full"]["lr"] = None  # no rate trained in its sweep
    c = costs(records(ablations={"quick/cpu": swept}))
    assert c.rung_lr == {"full": None, "post_norm": 0.002, "no_warmup": None}
    assert gpu_check.rung_item(c, "post_norm", 0).lr == 0.002


# --- The plan ----------------------------------------------------------------------------------


def test_the_plan_takes_the_items_by_value_and_skips_what_does_not_fit():
    """Checks 20 s, baselines 220 s, a rung's seed 100.1 s: with room for one rung's seed and the
    bench, post_norm/0 does not fit, the bench after it still does, and no rung runs at a seed
    whose complete model does not."""
    c = costs()
    budget = gpu_check.STARTUP_S + 20 + 220 + 100.1 + gpu_check.bench_item(c).seconds + 1
    plan = gpu_check.plan_work(c, budget)
    assert keys(plan.items) == ["fp16-checks", "baselines", "full/0", "bench"]
    assert keys(plan.skipped) == ["post_norm/0", "no_warmup/0", *RUNGS_AFTER_0]
    whys = {s.item.key: s.why for s in plan.skipped}
    assert (whys["no_warmup/0"], whys["full/1"], whys["post_norm/1"]) == (
        "does not fit",
        "does not fit",
        "needs full/1",
    )
    assert plan.total_s <= budget


def test_a_large_budget_takes_every_seed_of_every_disputed_rung_before_the_bench():
    plan = gpu_check.plan_work(costs(), 10_000)
    rungs = [f"{n}/{s}" for s in range(5) for n in ("full", "post_norm", "no_warmup")]
    assert keys(plan.items) == ["fp16-checks", "baselines", *rungs, "bench"]
    assert plan.skipped == ()


def test_a_small_budget_takes_only_the_checks():
    plan = gpu_check.plan_work(costs(), 60)
    assert keys(plan.items) == ["fp16-checks"]
    assert keys(plan.skipped)[:4] == ["baselines", "full/0", "post_norm/0", "no_warmup/0"]
    assert keys(plan.skipped)[-1] == "bench"


def test_a_rung_waits_for_the_complete_models_seed_done_or_recorded():
    failed = gpu_check.plan_work(costs(), 10_000, {"full/0": False})
    assert [(s.item.key, s.why) for s in failed.skipped] == [
        ("post_norm/0", "needs full/0"),
        ("no_warmup/0", "needs full/0"),
    ]
    ran = gpu_check.plan_work(costs(), 10_000, {"full/0": True})
    assert keys(ran.items)[2:4] == ["post_norm/0", "no_warmup/0"]
    recorded = costs(records(ablations={"full/cuda-bf16": ladder(COMMIT, full={"0": {}})}))
    assert keys(gpu_check.plan_work(recorded, 10_000).items)[2:4] == ["post_norm/0", "no_warmup/0"]


def test_what_this_commit_recorded_is_not_measured_again():
    here = records(
        runs={"full/cpu": full_run(1000, 200), "full/cuda-bf16": full_run(20, 4, commit=COMMIT)},
        ablations={"full/cuda-bf16": ladder(COMMIT, full={"0": {}, "1": {}}, post_norm={"0": {}})},
    )
    plan = gpu_check.plan_work(costs(here), 10_000)
    assert "baselines" not in keys(plan.items)
    assert keys(plan.items)[1:4] == ["no_warmup/0", "post_norm/1", "no_warmup/1"]
    assert "baselines" in keys(gpu_check.plan_work(costs(here, dirty=True), 10_000).items)
    other = records(ablations={"full/cuda-bf16": ladder("d" * 40, full={"0": {}})})
    assert keys(gpu_check.plan_work(costs(other), 10_000).items)[2] == "full/0"


# --- The command on this CPU -------------------------------------------------------------------


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_the_dry_run_plans_every_part_within_the_budget(no_cuda, capsys):
    """On the checkout's records: the checks, the baselines, the disputed rungs and the bench."""
    gpu_check.main(["--dry-run"])
    said = capsys.readouterr().out
    total, budget = map(float, re.search(r"^total: (\d+) s of (\d+) s$", said, re.M).groups())
    assert (budget, total <= budget) == (gpu_check.DEFAULT_BUDGET_S, True)
    plan = gpu_check.plan_work(gpu_check.read_costs("cuda-bf16"), gpu_check.DEFAULT_BUDGET_S)
    assert [i.part for i in plan.items][:3] == ["d", "a", "b"]
    assert {i.part for i in plan.items} == {"a", "b", "c", "d"}
    assert all(f"  {i.key}: " in said for i in plan.items)


def test_the_dry_run_names_what_a_small_budget_skips(no_cuda, capsys):
    gpu_check.main(["--dry-run", "--budget-seconds", "60"])
    said = capsys.readouterr().out
    plan = gpu_check.plan_work(gpu_check.read_costs("cuda-bf16"), 60)
    assert {"baselines", "full/0", "bench"} <= set(keys(plan.skipped))
    shown = re.findall(r"^ +\d+  \([abcd]\)  ([\w/-]+)", said.split("would not fit")[1], re.M)
    assert {"baselines", "full/0", "bench"} <= set(shown)
    assert float(re.search(r"^total: (\d+) s", said, re.M).group(1)) <= 60


def test_without_a_gpu_the_run_refuses_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "maintainer.gpu_check", "--budget-seconds", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode != 0
    assert (done.stdout, len(done.stderr.splitlines())) == ("", 1)
    assert done.stderr.startswith(gpu_check.REFUSAL)


# --- The run, with stand-ins where it needs a GPU ----------------------------------------------

H100 = "NVIDIA H100 80GB HBM3"  # the device a session names


def test_the_run_plans_again_after_each_item_and_goes_on_after_a_failure(monkeypatch):
    """Before the baselines only they fit; once they recorded a GPU 100 times the CPU, every
    rung's seed does, but not those read against the complete model's seed that failed."""
    state = records()

    def read_costs(cls):
        return gpu_check.costs_from(state, CPU_BENCH, None, cls, COMMIT, False)

    monkeypatch.setattr(gpu_check, "read_costs", read_costs)

    def baselines(item, session):
        state["runs"]["full/cuda-bf16"] = full_run(10, 2)
        return "recorded"

    def rung(item, session):
        if item.key == "full/1":
            raise RuntimeError("CUDA out of memory\nand more")
        return "trained"

    for part, runner in {"d": lambda i, s: "passed", "a": baselines, "b": rung}.items():
        monkeypatch.setitem(gpu_check.RUNNERS, part, runner)
    monkeypatch.setitem(gpu_check.RUNNERS, "c", lambda i, s: "benched")
    session = gpu_check.Session(torch.device("cpu"), "cuda-bf16", "a stand-in", 10 + 20 + 220 + 1)
    done, last = gpu_check.run(session)
    ran = [(d.item.key, d.ok) for d in done]
    assert ran[:3] == [("fp16-checks", True), ("baselines", True), ("full/0", True)]
    assert ("full/1", False) in ran and done[ran.index(("full/1", False))].outcome == (
        "FAILED: RuntimeError: CUDA out of memory"
    )
    assert not {"post_norm/1", "no_warmup/1"} & {key for key, _ in ran}
    assert ran[-1] == ("bench", True) and len(ran) == 3 + 12 + 1
    assert [(s.item.key, s.why) for s in last.skipped] == [
        ("post_norm/1", "needs full/1"),
        ("no_warmup/1", "needs full/1"),
    ]


def test_a_rungs_seed_joins_the_ladder_of_this_commit(tmp_path, monkeypatch):
    out = tmp_path / "baselines.json"
    out.write_text(json.dumps({"schema_version": 1, "runs": {}}))
    monkeypatch.setattr(pipeline, "BASELINES", out)
    monkeypatch.setattr(ablations, "BASELINES", out)
    session = gpu_check.Session(torch.device("cpu"), "cuda-bf16", H100, 60)
    recipe = {"optimizer": "adamw", "lr": 0.002, "betas": [0.9, 0.99], "weight_decay": 0.1}
    recipe |= {"schedule": "cosine", "warmup_steps": 150, "final_lr_ratio": 0.1, "grad_clip": 1.0}
    recipe |= {"dropout": 0.1, "batch_size": 64, "steps": 3000, "T": 128, "precision": "bf16"}
    row = {"nats": 1.5, "parameters": 824_897, "train_seconds": 20.0, "recipe": recipe}

    def record(key: str, lr=None, commit=COMMIT):
        monkeypatch.setattr(gpu_check, "commit_label", lambda: (commit, False))
        name, seed = key.split("/")
        item = gpu_check.Item(key, "b", "", 0, "", seeds=(int(seed),), rung=name, lr=lr)
        gpu_check.record_rung(item, row, session)
        return json.loads(out.read_text())["ablations"]["full/cuda-bf16"]

    record("full/0")
    record("no_warmup/0")
    kept = record("post_norm/0", lr=0.002)
    assert list(kept["rungs"]) == ["full", "post_norm", "no_warmup"]  # the ladder's order
    assert (kept["rungs"]["post_norm"]["lr"], "lr" in kept["rungs"]["full"]) == (0.002, False)
    assert kept["rungs"]["full"]["warmup"] == "the course's"
    provenance = kept["provenance"]
    assert (provenance["seeds"], provenance["wall_seconds"]) == ([0], 60.0)
    assert (provenance["git_commit"], provenance["device"]) == (COMMIT, H100)
    again = record("full/1", commit="d" * 40)  # another commit starts a ladder of its own
    assert {n: list(r["seeds"]) for n, r in again["rungs"].items()} == {"full": ["1"]}
    assert set(LADDER) >= set(again["rungs"])


def test_the_checks_train_the_solutions_pieces_kept_as_a_students(tmp_path, monkeypatch, capsys):
    """On this CPU the checks' float16 step is CPU autocast's, their stand-in for the GPU's."""
    monkeypatch.setattr(gpu_check, "WORKDIR", tmp_path)
    session = gpu_check.Session(torch.device("cpu"), "cuda-bf16", "a stand-in", 60)
    item = gpu_check.checks_item(costs())
    done = gpu_check.run_item(item, session)
    assert done.ok and done.outcome.endswith(f"passed on {session.device_name}")
    assert all(name in done.outcome for name in gpu_check.CHECKED)  # each check, named
    assert capsys.readouterr().out.count("✅") == 4  # 02's leak test, and each exercise's
    kept = (tmp_path / "my_transformer.py").read_text()
    assert all(f"def {name}(" in kept for name in ("scaled_dot_product_attention", "causal_mask"))
