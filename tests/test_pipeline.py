"""The baselines pipeline end to end in smoke mode into a temporary file; a failure changes
nothing; what a maintainer sees while it runs (each notebook's lines and the training bars, no
false alarm from the kernels)."""

import json
import math
import os
import re
import shutil
import signal
import threading
from pathlib import Path

import jsonschema
import nbformat
import pytest
from conftest import checkpoints_without_a_tick
from paths import ROOT

from maintainer import notebook_build, pipeline
from maintainer.kernels import PipelineKernelManager, Relay
from maintainer.pipeline import (
    BASELINES,
    BudgetExceeded,
    BudgetWarning,
    PipelineError,
    budgets_for,
    choose_seeds,
    run_pipeline,
    summarise_seeds,
    validate,
)
from transformer_lab.saving import TRAINED_GPT, sha256

pytestmark = pytest.mark.heavy(order=3)


def test_committed_baselines_follow_the_schema():
    validate(json.loads(BASELINES.read_text()))


def test_schema_rejects_a_typed_in_row():
    bad = {"schema_version": 1, "runs": {"quick/cpu": {"mode": "quick"}}}
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_seeds_are_summarised():
    row = {
        "model": "m",
        "lab": 5,
        "parameters": 1,
        "steps": 1,
        "batch_size": 1,
        "train_seconds": 2.0,
        "perplexity": 1.0,
        "bits": 1.0,
    }
    rows = summarise_seeds({"gpt": {"seeds": {"0": row | {"nats": 1.0}, "1": row | {"nats": 1.5}}}})
    assert rows["gpt"]["nats"] == 1.25 and rows["gpt"]["spread"] == 0.5
    assert rows["gpt"]["perplexity"] == pytest.approx(math.exp(1.25))
    assert set(rows["gpt"]["seeds"]) == {"0", "1"}


# What no run of the pipeline may print: ipykernel's warning about a TCP kernel, and the error
# an idle kernel logs when jupyter_client interrupts it on the way to shutting it down.
FALSE_ALARMS = ("without encryption", "KeyboardInterrupt caught in kernel")


def test_smoke_run_end_to_end(tmp_path, capfd):
    out = tmp_path / "baselines.json"
    run = run_pipeline("smoke", [0, 1], "cpu", out, workdir=tmp_path / "work")
    shown = capfd.readouterr()
    for alarm in FALSE_ALARMS:
        assert alarm not in shown.out + shown.err
    # each model's training bar, as it goes: step, time left, loss; then its seed's result
    for model in ("gpt", "lstm"):
        bar = rf"^\[smoke/cpu 04_training\] {model}, seed \d+: .*\| (\d+)/30 \[.*<.*loss="
        bars = re.findall(bar, shown.out, re.M)
        assert bars, shown.out[-3000:]
        for seed in (0, 1):
            assert f"[smoke/cpu 04_training] {model}, seed {seed}: trained in" in shown.out
    assert "[smoke/cpu 01_attention] ✅" in shown.out  # a checkpoint's line, relayed
    written = json.loads(out.read_text())
    validate(written)
    assert out.stat().st_mode & 0o777 == 0o644  # readable by all, as a checkout's files are
    assert list(written["runs"]) == ["smoke/cpu"]
    p = run["provenance"]
    assert p["seeds"] == [0, 1] and p["mode"] == "smoke" and p["device"] == "cpu"
    assert set(p["notebook_seconds"]) == {s.stem for s in notebook_build.sources()}
    rows = run["results"]["rows"]
    assert set(rows["gpt"]["seeds"]) == {"0", "1"} and "spread" in rows["gpt"]
    assert {"trigram", "5gram", "gpt", "lstm"} <= set(rows)
    for name in ("gpt", "lstm"):  # how each seed trained, as the loop read it
        recipe = rows[name]["seeds"]["1"]["recipe"]
        assert (recipe["steps"], recipe["batch_size"], recipe["schedule"]) == (30, 8, "cosine")
    assert rows["gpt"]["recipe"]["dropout"] == 0.1 and rows["lstm"]["recipe"]["dropout"] == 0.0
    assert rows["trigram"].get("recipe") is None
    assert set(run["results"]["score_spread"]) == {"16", "64", "256"}
    heads, distances = run["results"]["head_costs"], run["results"]["mean_attention_distance"]
    assert heads["windows"] == 16 and len(heads["costs"]) == len(distances)  # 05's heads, off
    executed = tmp_path / "work" / "smoke-cpu" / "executed"  # kept for inspection
    for source in notebook_build.sources():  # every checkpoint, hidden tests included, passed
        nb = nbformat.read(executed / f"{source.stem}.ipynb", 4)
        assert not checkpoints_without_a_tick(nb), source.stem
    model = p["model"]  # the seed-0 mini-GPT travels with the course, checked by its digest
    assert model["seed"] == 0 and model["file"] == "mini_gpt-smoke-cpu.pt"
    assert sha256(tmp_path / model["file"]) == model["sha256"]


def test_a_failing_notebook_leaves_the_file_untouched(tmp_path):
    out = tmp_path / "baselines.json"
    out.write_text('{"schema_version": 1, "runs": {}}\n')
    before = out.read_bytes()
    broken = tmp_path / "99_broken.py"
    broken.write_text(
        '# %% [markdown]\n# # Broken\n\n# %% tags=["parameters"]\nMODE = "auto"\n\n'
        '# %%\nraise RuntimeError("boom")\n'
    )
    with pytest.raises(PipelineError, match="99_broken failed.*RuntimeError: boom"):
        run_pipeline("smoke", [0], "cpu", out, sources=[broken], workdir=tmp_path / "work")
    assert out.read_bytes() == before


NOTEBOOKS = ["01_attention", "04_training", "05_heads"]


def test_budgets():
    assert budgets_for("smoke", "cpu", [0], NOTEBOOKS) == {}
    assert budgets_for("quick", "cpu", [0, 1, 2], NOTEBOOKS) == {
        "01_attention": 30,
        "04_training": 1230,  # 410 s a seed: notebook 04 trains every seed
        "05_heads": 30,
    }
    assert budgets_for("full", "cpu", [0], NOTEBOOKS)["04_training"] == 3600
    assert budgets_for("full", "cuda", [0, 1], NOTEBOOKS)["04_training"] == 240
    assert budgets_for("quick", "cuda", [0], NOTEBOOKS)["04_training"] == 120


def _quick_notebook(tmp_path: Path) -> Path:
    source = tmp_path / "98_quick.py"
    source.write_text('# %% [markdown]\n# # Quick\n\n# %% tags=["parameters"]\nMODE = "auto"\n')
    return source


def test_over_budget_writes_the_file_then_fails(tmp_path):
    out = tmp_path / "baselines.json"
    with pytest.raises(BudgetExceeded, match=r"98_quick: \d+\.\d s, budget 0 s") as raised:
        run_pipeline(
            "smoke",
            [0],
            "cpu",
            out,
            sources=[_quick_notebook(tmp_path)],
            workdir=tmp_path / "work",
            budgets={"98_quick": 0.0},
        )
    written = json.loads(out.read_text())  # the measurements are kept
    validate(written)
    p = written["runs"]["smoke/cpu"]["provenance"]
    assert p["budgets_seconds"] == {"98_quick": 0.0} and p["over_budget"] == ["98_quick"]
    assert raised.value.run["provenance"] == p


def test_ignore_budgets_only_warns(tmp_path):
    out = tmp_path / "baselines.json"
    with pytest.warns(BudgetWarning, match="98_quick"):
        run = run_pipeline(
            "smoke",
            [0],
            "cpu",
            out,
            sources=[_quick_notebook(tmp_path)],
            workdir=tmp_path / "work",
            budgets={"98_quick": 0.0},
            ignore_budgets=True,
        )
    assert run["provenance"]["over_budget"] == ["98_quick"] and out.is_file()


def test_over_budget_exits_with_status_3(monkeypatch, capsys):
    calls = []

    def over(*args, ignore_budgets=False, **kwargs):
        calls.append(ignore_budgets)
        raise BudgetExceeded("OVER BUDGET: 04_training: 999.0 s, budget 900 s", {})

    monkeypatch.setattr(pipeline, "run_pipeline", over)
    with pytest.raises(SystemExit) as exited:
        pipeline.main(["--mode", "quick"])
    assert exited.value.code == pipeline.EXIT_OVER_BUDGET == 3
    assert "04_training: 999.0 s, budget 900 s" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        pipeline.main(["--mode", "quick", "--ignore-budgets"])
    assert calls == [False, True]


def test_records_without_budget_fields_stay_valid():
    run = {
        "mode": "quick",
        "device_class": "cpu",
        "provenance": {
            "git_commit": "x",
            "git_dirty": False,
            "date": "2026-01-01T00:00:00+00:00",
            "device": "cpu",
            "compute_capability": None,
            "torch": "2",
            "python": "3",
            "precision": "fp32",
            "mode": "quick",
            "seeds": [0],
            "batch_size": 16,
            "steps": 1500,
            "notebook_seconds": {},
            "total_seconds": 1.0,
        },
        "results": {},
    }
    validate({"schema_version": 1, "runs": {"quick/cpu": run}})


def test_recorded_seeds_are_kept():
    recorded = {"runs": {"quick/cpu": {"provenance": {"seeds": [0, 1, 2]}}}}
    assert choose_seeds(recorded, "quick/cpu", None, replace=False) == [0, 1, 2]
    assert choose_seeds(recorded, "full/cpu", None, replace=False) == [0]
    assert choose_seeds(recorded, "quick/cpu", [0, 1, 2, 3], replace=False) == [0, 1, 2, 3]
    with pytest.raises(PipelineError, match=r"would drop \[1, 2\].*SEEDS=0,1,2"):
        choose_seeds(recorded, "quick/cpu", [0], replace=False)
    assert choose_seeds(recorded, "quick/cpu", [0], replace=True) == [0]


def _training_notebook(tmp_path: Path) -> Path:
    """A stand-in for notebook 04: it leaves a newly trained model beside itself, no results."""
    source = tmp_path / "97_trains.py"
    source.write_text(
        '# %% [markdown]\n# # Trains\n\n# %% tags=["parameters"]\nMODE = "auto"\n\n'
        f'# %%\nopen("{TRAINED_GPT}", "wb").write(b"weights the old JSON does not vouch for")\n'
    )
    return source


def _data_copy(tmp_path: Path) -> Path:
    """data/ as committed, in tmp_path: it holds a quick/cpu model and the JSON vouching for it."""
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data", data)
    assert (data / "mini_gpt-quick-cpu.pt").is_file()
    return data


def _quick_cpu_run(data: Path, tmp_path: Path) -> dict:
    return run_pipeline(
        "quick",
        None,  # the recorded seeds
        "cpu",
        data / "baselines.json",
        sources=[_training_notebook(tmp_path)],
        workdir=tmp_path / "work",
        budgets={},
    )


def test_a_schema_error_leaves_the_model_and_the_json_untouched(tmp_path, monkeypatch):
    """Notebooks 05 and 06 refuse a model whose digest the JSON beside it does not record: the
    new model must not reach data/ unless the new JSON does."""
    data = _data_copy(tmp_path)
    before = {path.name: sha256(path) for path in data.iterdir()}

    def refuse(baselines):
        raise jsonschema.ValidationError("refused by the test")

    monkeypatch.setattr(pipeline, "validate", refuse)
    with pytest.raises(jsonschema.ValidationError, match="refused by the test"):
        _quick_cpu_run(data, tmp_path)
    # Same files, same bytes: no model replaced, no temporary file left behind.
    assert {path.name: sha256(path) for path in data.iterdir()} == before


def test_ctrl_c_between_the_renames_still_leaves_a_matching_pair(tmp_path, monkeypatch):
    data = _data_copy(tmp_path)
    rename = os.replace

    def rename_then_ctrl_c(source, target):
        rename(source, target)
        if Path(target).suffix == ".pt":  # the model is in place, the JSON not yet
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(pipeline.os, "replace", rename_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):  # held back until both renames are done
        _quick_cpu_run(data, tmp_path)
    run = json.loads((data / "baselines.json").read_text())["runs"]["quick/cpu"]
    model = run["provenance"]["model"]
    assert sha256(data / model["file"]) == model["sha256"]
    assert (data / model["file"]).read_bytes().startswith(b"weights the old JSON")
    assert not list(data.glob("*.tmp"))


def test_a_printed_line_passes_and_a_bar_shows_every_so_often():
    lines, now = [], [0.0]
    prefix, first, last = "[quick/cpu 04_training]", "torch 2 on cpu", "gpt, seed 0: trained"
    relay = Relay(prefix, lines.append, every=20, clock=lambda: now[0])
    relay.write(f"{first}\n")
    for step in range(1, 100):  # a redraw a second for 99 seconds
        now[0] = float(step)
        relay.write(f"\rgpt:  {step}%|  | {step}/100 [00:{step:02d}<01:00, loss=2.{step:02d}]")
    relay.write("\r" + " " * 40 + "\r")  # tqdm clearing its bar (leave=False)
    relay.write(f"{last}\n")
    assert lines[0] == f"{prefix} {first}"  # each line a notebook prints, named by its run
    steps = [line.split("|")[2].split()[0] for line in lines if "%|" in line]
    assert steps == ["1/100", "21/100", "41/100", "61/100", "81/100", "99/100"]  # 99: its end
    assert lines[-1] == f"{prefix} {last}"
    assert len(lines) == 8


def test_a_silent_notebook_says_it_is_still_running():
    lines = []
    with Relay("[full/cpu 04_training]", lines.append, quiet=0.2):
        threading.Event().wait(1.0)
    assert lines and all(
        re.fullmatch(r"\[full/cpu 04_training\] still running, \d s so far", x) for x in lines
    )


def _run_a_tiny_notebook(tmp_path, **kernel) -> list[str]:
    """A notebook that trains nothing but draws tqdm.auto's bar, as train_lm does."""
    import papermill

    source = nbformat.v4.new_notebook()
    code = (
        "import time\nfrom tqdm.auto import tqdm\n"
        "with tqdm(total=4, desc='gpt', leave=False) as bar:\n"
        "    for step in range(4):\n"
        "        time.sleep(0.05)\n"
        "        bar.set_postfix(loss=f'{3 - step:.3f}')\n"
        "        bar.update(1)\n"
        "print('trained')"
    )
    source.cells = [nbformat.v4.new_code_cell(code)]
    nbformat.write(source, tmp_path / "tiny.ipynb")
    lines = []
    with Relay("[tiny]", lines.append, every=0) as shown:
        papermill.execute_notebook(
            tmp_path / "tiny.ipynb",
            tmp_path / "ran.ipynb",
            kernel_name="python3",
            progress_bar=False,
            stdout_file=shown,
            stderr_file=shown,
            **kernel,
        )
    return lines


def test_the_pipeline_s_kernels_show_their_bars_and_raise_no_false_alarm(tmp_path, capfd):
    lines = _run_a_tiny_notebook(tmp_path, kernel_manager_class=PipelineKernelManager)
    said = capfd.readouterr()
    assert [alarm for alarm in FALSE_ALARMS if alarm in said.out + said.err] == []
    assert any(re.match(r"\[tiny\] gpt: .*\| 4/4 .*loss=0.000", line) for line in lines), lines
    assert lines[-1] == "[tiny] trained"
    assert not list(tmp_path.glob("*ipc*"))  # the sockets live in Jupyter's runtime folder


def test_a_default_kernel_would_draw_a_widget_and_warn(tmp_path, capfd):
    """What the checks above tell apart: papermill's own kernel, over TCP, with tqdm's widget."""
    lines = _run_a_tiny_notebook(tmp_path)
    assert "without encryption" in capfd.readouterr().err
    assert lines == ["[tiny] trained"]  # the widget's redraws never reach a stream
