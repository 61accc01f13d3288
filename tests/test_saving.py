"""Where notebooks 05 and 06 find a trained mini-GPT: the student's Google Drive (on Colab only,
mounted as the setup cell decided), then beside the notebook, then the course's recorded model;
how notebook 04 puts the student's model in that Drive; and what the setup cell says about the
Drive. Colab is played by a stand-in `google.colab.drive` whose `mount(path)` makes a folder (the
student's Drive) appear at `path`. Nothing here may wait on input: `input()` raises in every test.
"""

import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from transformer_lab import (
    MiniGPT,
    load_trained_gpt,
    save_gpt,
    save_to_drive,
    saving,
    student,
    use_drive,
)
from transformer_lab.attention import scaled_dot_product_attention
from transformer_lab.baselines import ENV
from transformer_lab.model import GPTConfig
from transformer_lab.runtime import BUDGETS
from transformer_lab.saving import DRIVE_ENV, TRAINED_GPT, sha256

TINY = GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16)


def _model(seed: int) -> MiniGPT:
    torch.manual_seed(seed)
    return MiniGPT(TINY)


@pytest.fixture(autouse=True)
def a_fresh_kernel(monkeypatch):
    """Each test starts as a notebook of its own, its setup cell not run yet; nobody types."""
    _next_notebook(monkeypatch)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    def waits(prompt=""):
        raise AssertionError(f"waited on input: {prompt}")

    monkeypatch.setattr("builtins.input", waits)


def _next_notebook(monkeypatch):
    """Another notebook (a kernel of its own), which decides again."""
    monkeypatch.setattr(saving, "_decision", None)


def _record(data: Path, mode: str, seed: int, device_class: str = "cpu") -> None:
    """A run of `mode` recorded in data/baselines.json with its model (seed `seed`) beside it,
    as the pipeline records one."""
    saved = data / f"mini_gpt-{mode}-{device_class}.pt"
    save_gpt(_model(seed), saved, budget=mode, seed=seed)
    budget = BUDGETS[mode]
    provenance = {
        "git_commit": "0123456789abcdef",
        "date": "2026-11-01T10:00:00+00:00",
        "device": "cpu" if device_class == "cpu" else "Tesla T4",
        "precision": "fp32" if device_class == "cpu" else "fp16",
        "mode": mode,
        "seeds": [seed],
        "batch_size": budget.batch_size,
        "steps": budget.steps,
        "model": {"file": saved.name, "sha256": sha256(saved), "seed": seed},
    }
    run = {"mode": mode, "device_class": device_class, "provenance": provenance, "results": {}}
    recorded = data / "baselines.json"
    baselines = json.loads(recorded.read_text()) if recorded.is_file() else {"runs": {}}
    baselines["runs"][f"{mode}/{device_class}"] = run
    recorded.write_text(json.dumps(baselines))


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A runtime with the course's recorded `quick/cpu` model (seed 0) and an empty working
    folder: no model of the student's anywhere yet."""
    data = tmp_path / "data"
    data.mkdir()
    _record(data, "quick", seed=0)
    monkeypatch.setenv(ENV, str(data / "baselines.json"))
    workdir = tmp_path / "notebooks"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    return workdir


@pytest.fixture
def colab(tmp_path, monkeypatch):
    """Colab, played by a stand-in `google.colab.drive` in sys.modules. Its `mount(path)` links
    the student's Drive (a temporary folder, kept across runtimes) at `path`, as Colab does."""
    storage = tmp_path / "google-drive"  # what Google keeps for the student
    (storage / "MyDrive").mkdir(parents=True)
    mountpoint = tmp_path / "content" / "drive"
    mounts = []

    def mount(path, force_remount=False, timeout_ms=120000, readonly=False):
        mounts.append(path)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).symlink_to(storage, target_is_directory=True)

    flushed = []

    def flush_and_unmount(timeout_ms=24 * 3600 * 1000):
        flushed.append(mountpoint)
        mountpoint.unlink()

    drive = types.ModuleType("google.colab.drive")
    drive.mount, drive.flush_and_unmount = mount, flush_and_unmount
    colab = types.ModuleType("google.colab")
    colab.drive = drive
    google = types.ModuleType("google")
    google.colab = colab
    for name, module in (
        ("google", google),
        ("google.colab", colab),
        ("google.colab.drive", drive),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv(DRIVE_ENV, str(mountpoint))
    return SimpleNamespace(
        storage=storage,
        mountpoint=mountpoint,
        mounts=mounts,
        flushed=flushed,
        model=storage / "MyDrive" / "transformer-lab" / "mini_gpt.pt",
        # a fresh runtime: the Drive is not mounted
        unmount=lambda: mountpoint.unlink(missing_ok=True),
    )


@pytest.fixture
def not_colab(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", None)  # `import google.colab` fails


def _setup_cell(capsys, wanted: bool) -> list[str]:
    """What the setup cell prints, as `tl.use_drive(USE_DRIVE)` runs in it."""
    capsys.readouterr()
    use_drive(wanted)
    return capsys.readouterr().out.splitlines()


def test_the_drive_comes_first_then_beside_the_notebook_then_the_recorded_model(runtime, colab):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)  # 04 in another runtime, via Drive
    save_gpt(_model(3), budget="smoke", seed=3)  # 04 in this runtime
    model, info, run, origin = load_trained_gpt("cpu", use_drive=True)
    assert info["seed"] == 7 and run is None  # the Drive's
    assert torch.equal(model.W_o.weight, _model(7).W_o.weight)
    assert colab.mounts == [str(colab.mountpoint)]

    colab.model.unlink()  # the Drive has no model: the one beside the notebook
    _, info, run, origin = load_trained_gpt("cpu", use_drive=True)
    assert info["seed"] == 3 and run is None and "beside this notebook" in origin

    TRAINED_GPT.unlink()  # neither: the course's recorded model, with its run key and why
    _, info, run, origin = load_trained_gpt("cpu", use_drive=True)
    assert info["seed"] == 0 and run == "quick/cpu"
    assert "MyDrive/transformer-lab/mini_gpt.pt" in origin and "beside this notebook" in origin


def test_off_colab_the_drive_is_never_touched_and_the_setup_cell_says_nothing(
    runtime, not_colab, capsys
):
    assert _setup_cell(capsys, True) == []
    save_gpt(_model(3), budget="quick", seed=3)
    _, info, run, origin = load_trained_gpt("cpu", use_drive=True)
    assert info["seed"] == 3 and run is None and "Drive" not in origin
    assert "beside them" in save_to_drive(TRAINED_GPT, use_drive=True)
    TRAINED_GPT.unlink()
    *_, run, origin = load_trained_gpt("cpu")
    assert run == "quick/cpu" and "Drive" not in origin


def test_the_setup_cell_mounts_the_drive_and_says_where_in_one_line(runtime, colab, capsys):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)
    assert _setup_cell(capsys, True) == [
        "Using your Google Drive: your code and your trained model are kept in "
        "MyDrive/transformer-lab/, where every notebook looks for them."
    ]
    assert colab.mounts == [str(colab.mountpoint)]  # Google's consent: here, in the setup cell
    _, info, run, _ = load_trained_gpt("cpu", use_drive=True)
    said = student.keep("attention", scaled_dot_product_attention, use_drive=True)
    assert info["seed"] == 7 and run is None and len(colab.mounts) == 1  # no second mount
    assert "MyDrive/transformer-lab/my_transformer.py" in said


def test_declining_says_how_to_change_it_and_the_notebook_keeps_to_it(runtime, colab, capsys):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)
    assert _setup_cell(capsys, False) == [
        "Not using your Google Drive (USE_DRIVE is False): your code and model from the other "
        "notebooks are not read (the course's stand in for them), and what you do here stays on "
        "this machine. To use it, set USE_DRIVE = True in the cell above and run it, then this "
        "cell."
    ]
    *_, run, origin = load_trained_gpt("cpu", use_drive=None)
    assert run == "quick/cpu" and "USE_DRIVE is False" in origin
    said = student.keep("attention", scaled_dot_product_attention, use_drive=None)
    assert "USE_DRIVE is False" in said and not colab.mounts


def test_a_mount_that_fails_says_why_and_what_to_do_once(runtime, colab, capsys, monkeypatch):
    def refused(path, **kwargs):
        colab.mounts.append(path)
        raise ValueError("mount failed")

    monkeypatch.setattr(sys.modules["google.colab.drive"], "mount", refused)
    [said] = _setup_cell(capsys, True)
    assert said == (
        "Your Google Drive could not be mounted (mount failed): your code and model from the "
        "other notebooks are not read (the course's stand in for them), and what you do here "
        "stays on this machine. Run this cell again and allow the access in Google's window, or "
        "set USE_DRIVE = False in the cell above to go on without it."
    )
    *_, run, origin = load_trained_gpt("cpu", use_drive=True)
    assert run == "quick/cpu" and "(mount failed)" in origin
    assert len(colab.mounts) == 1  # the later uses do not try again: Google's window stays away


def test_while_grading_the_drive_is_never_mounted(runtime, colab, capsys, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    save_gpt(_model(7), colab.model, budget="quick", seed=7)
    assert _setup_cell(capsys, True) == []
    *_, run, _ = load_trained_gpt("cpu", use_drive=True)
    assert run == "quick/cpu" and not colab.mounts


def test_without_a_setup_cell_the_first_use_decides_as_use_drive_says(runtime, colab, monkeypatch):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)
    *_, run, origin = load_trained_gpt("cpu", use_drive=False)
    assert run == "quick/cpu" and "USE_DRIVE is False" in origin and not colab.mounts
    *_, run, _ = load_trained_gpt("cpu", use_drive=True)  # decided: it holds
    assert run == "quick/cpu" and not colab.mounts

    _next_notebook(monkeypatch)
    _, info, run, _ = load_trained_gpt("cpu")  # None: the notebooks' default, yes
    assert info["seed"] == 7 and run is None and colab.mounts


def test_04_copies_the_model_to_the_drive_as_the_setup_cell_decided(
    runtime, colab, capsys, monkeypatch
):
    saved = save_gpt(_model(3), budget="quick", seed=3)
    _setup_cell(capsys, False)
    said = save_to_drive(saved, use_drive=False)
    assert "USE_DRIVE is False" in said
    assert not colab.mounts and not colab.model.exists()

    _next_notebook(monkeypatch)
    _setup_cell(capsys, True)
    said = save_to_drive(saved, use_drive=True)
    assert colab.model.read_bytes() == saved.read_bytes()
    assert "MyDrive/transformer-lab/mini_gpt.pt" in said
    # written through at once: the student may free the T4 now, not a minute later
    assert colab.flushed and not colab.mountpoint.exists() and "free this runtime" in said
    colab.model.unlink()
    save_to_drive(saved, use_drive=True)  # again: mounted again, as decided, without asking
    assert colab.model.exists() and len(colab.mounts) == 2


def test_the_model_travels_from_04_to_a_fresh_runtime_through_the_drive(
    runtime, colab, tmp_path, monkeypatch, capsys
):
    _setup_cell(capsys, True)  # notebook 04
    save_to_drive(save_gpt(_model(5), budget="quick", seed=5), use_drive=True)
    colab.unmount()  # notebook 05, on a machine of its own: nothing beside it, nothing mounted
    _next_notebook(monkeypatch)
    fresh = tmp_path / "another-runtime"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    _setup_cell(capsys, True)
    _, info, run, origin = load_trained_gpt("cpu", use_drive=True)
    assert info["seed"] == 5 and run is None  # the Drive's: nothing is beside the notebook
    assert len(colab.mounts) == 2


# --- Which budget's model 05 and 06 show -------------------------------------------------------


def test_a_cpu_runtime_with_no_model_in_the_drive_is_shown_the_full_budget_model(runtime, colab):
    """05 and 06 run on a CPU runtime, where `auto` would train at the quick budget: a student
    whose Drive holds no model of theirs is shown the course's full-budget model, named with the
    budget its own file gives."""
    _record(runtime.parent / "data", "full", seed=1)
    loaded = load_trained_gpt("cpu", use_drive=True)
    assert loaded.run == "full/cpu" and loaded.budget == "full" and loaded.info["seed"] == 1
    assert torch.equal(loaded.model.W_o.weight, _model(1).W_o.weight)
    assert f"Looking at {loaded.origin}." == (
        "Looking at the course's mini-GPT trained at the full budget (3,000 steps), recorded on "
        "a CPU at commit 0123456789 (run `full/cpu`, seed 1, 2026-11-01), because your Google "
        "Drive has no MyDrive/transformer-lab/mini_gpt.pt; no mini_gpt.pt from notebook 04 is "
        "beside this notebook."
    )


def test_the_quick_model_is_shown_only_where_no_full_one_is_recorded_and_says_so(
    runtime, not_colab
):
    loaded = load_trained_gpt("cpu")
    assert loaded.run == "quick/cpu" and loaded.budget == "quick"
    assert loaded.origin.endswith("the full budget")  # why not the full one


def test_a_full_model_of_another_device_class_comes_before_a_quick_one_and_says_so(
    runtime, not_colab
):
    _record(runtime.parent / "data", "full", seed=2, device_class="cuda-fp16")
    loaded = load_trained_gpt("cpu")
    assert loaded.run == "full/cuda-fp16" and loaded.budget == "full"
    assert loaded.origin == (
        "the course's mini-GPT trained at the full budget (3,000 steps), recorded on Tesla T4 at "
        "commit 0123456789 (run `full/cuda-fp16`, seed 2, 2026-11-01), because no mini_gpt.pt "
        "from notebook 04 is beside this notebook; your device class, cpu, has no recorded model "
        "at this budget"
    )


def test_the_student_s_own_model_is_named_with_the_budget_its_file_gives(runtime, not_colab):
    save_gpt(_model(3), budget="full", seed=3)  # 04 trained on a T4; 05 runs on a CPU runtime
    loaded = load_trained_gpt("cpu")
    assert loaded.run is None and loaded.budget == "full"
    assert loaded.origin == (
        "the mini-GPT you trained in notebook 04 at the full budget (3,000 steps), saved beside "
        "this notebook (mini_gpt.pt)"
    )
    save_gpt(_model(3), seed=3)  # a file that names no budget
    loaded = load_trained_gpt("cpu")
    assert loaded.budget is None and "does not name" in loaded.origin


def test_04_s_run_travels_beside_its_model_and_a_fresh_runtime_reads_it_from_the_drive(
    runtime, colab, tmp_path, monkeypatch, capsys, corpus
):
    """Notebook 04 saves its run (rows, curves, samples) beside the model and copies both to the
    Drive; its "After the lab", on a new runtime with nothing beside it, reads them there."""
    from transformer_lab.reading import saved_run
    from transformer_lab.reading.saved_run import load_run, save_run
    from transformer_lab.report import ResultRow
    from transformer_lab.runtime import BUDGETS
    from transformer_lab.train import Recipe, TrainHistory

    monkeypatch.setattr(saved_run, "SAMPLE_LENGTH", 20)  # the samples' length is not the subject
    _setup_cell(capsys, True)
    history = TrainHistory(
        "quick", 0, "cpu", Recipe.of(BUDGETS["quick"], lr=0.004), [], [(250, 2.5)]
    )
    row = ResultRow("mini-GPT", 5, 1, 1500, 16, 9.0, 2.4, 11.0, 3.5)
    trained = {"gpt": (_model(4), history, row), "lstm": (_model(5), history, row)}
    said = save_run(trained, [], corpus.vocab, "your attention", use_drive=True)
    assert said == (
        "Saved mini_gpt.pt and mini_gpt_run.json. Saved a copy to your Google Drive: "
        "MyDrive/transformer-lab/mini_gpt.pt and MyDrive/transformer-lab/mini_gpt_run.json, "
        "written through (notebooks 05 and 06 look there first): you may free this runtime when "
        "you are done."
    )
    assert colab.model.with_name("mini_gpt_run.json").is_file()
    colab.unmount()  # a new runtime: nothing beside it, nothing mounted
    _next_notebook(monkeypatch)
    fresh = tmp_path / "after-the-lab"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    _setup_cell(capsys, True)
    run = load_run(use_drive=True)
    assert "(MyDrive/transformer-lab/mini_gpt_run.json)" in run.said()
    assert run.nats == {"gpt": 2.4, "lstm": 2.4} and run.curves["mini-GPT"].val_loss == [(250, 2.5)]
    assert torch.equal(run.gpt().W_o.weight, _model(4).W_o.weight)
