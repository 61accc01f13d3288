"""Where notebooks 05 and 06 find a trained mini-GPT: the student's Google Drive (on Colab only,
mounted with their consent), then beside the notebook, then the course's recorded model; and how
notebook 04 puts the student's model in that Drive. Colab is played by a stand-in
`google.colab.drive` whose `mount(path)` makes a folder (the student's Drive) appear at `path`."""

import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from IPython.core.error import StdinNotImplementedError

from transformer_lab import MiniGPT, load_trained_gpt, save_gpt, save_to_drive, saving
from transformer_lab.baselines import ENV
from transformer_lab.model import GPTConfig
from transformer_lab.saving import DRIVE_ENV, TRAINED_GPT, sha256

TINY = GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16)


def _model(seed: int) -> MiniGPT:
    torch.manual_seed(seed)
    return MiniGPT(TINY)


@pytest.fixture(autouse=True)
def a_fresh_kernel(monkeypatch):
    """Each test starts as a notebook of its own: the student has answered nothing yet."""
    monkeypatch.setattr(saving, "_answers", {})


def _next_notebook(monkeypatch):
    """Another notebook (a kernel of its own), which asks again."""
    monkeypatch.setattr(saving, "_answers", {})


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A runtime with the course's recorded `quick/cpu` model (seed 0) and an empty working
    folder: no model of the student's anywhere yet."""
    data = tmp_path / "data"
    data.mkdir()
    recorded = save_gpt(_model(0), data / "mini_gpt-quick-cpu.pt", budget="quick", seed=0)
    provenance = {
        "git_commit": "0123456789",
        "date": "2026-11-01T10:00:00+00:00",
        "device": "cpu",
        "precision": "fp32",
        "mode": "quick",
        "seeds": [0],
        "batch_size": 16,
        "steps": 1500,
        "model": {"file": recorded.name, "sha256": sha256(recorded), "seed": 0},
    }
    run = {"mode": "quick", "device_class": "cpu", "provenance": provenance, "results": {}}
    (data / "baselines.json").write_text(json.dumps({"runs": {"quick/cpu": run}}))
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


def _answers(monkeypatch, answer):
    """What the student types at input(); an exception class: nobody can answer."""
    asked = []

    def reply(prompt=""):
        asked.append(prompt)
        if isinstance(answer, type) and issubclass(answer, BaseException):
            raise answer("no stdin")
        return answer

    monkeypatch.setattr("builtins.input", reply)
    return asked


def test_the_drive_comes_first_then_beside_the_notebook_then_the_recorded_model(runtime, colab):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)  # 04 in another runtime, via Drive
    save_gpt(_model(3), budget="smoke", seed=3)  # 04 in this runtime
    model, info, run, origin = load_trained_gpt("quick", "cpu", use_drive=True)
    assert info["seed"] == 7 and run is None and "from your Google Drive" in origin
    assert torch.equal(model.W_o.weight, _model(7).W_o.weight)
    assert colab.mounts == [str(colab.mountpoint)]

    colab.model.unlink()  # the Drive has no model: the one beside the notebook
    _, info, run, origin = load_trained_gpt("quick", "cpu", use_drive=True)
    assert info["seed"] == 3 and run is None and "beside this notebook" in origin

    TRAINED_GPT.unlink()  # neither: the course's recorded model, with its run key and why
    _, info, run, origin = load_trained_gpt("quick", "cpu", use_drive=True)
    assert info["seed"] == 0 and run == "quick/cpu"
    assert "your Google Drive has no" in origin and "beside this notebook" in origin
    assert "the run recorded for your budget and device class" in origin


def test_off_colab_the_drive_is_never_touched(runtime, not_colab, monkeypatch):
    asked = _answers(monkeypatch, "y")
    save_gpt(_model(3), budget="quick", seed=3)
    _, info, run, origin = load_trained_gpt("quick", "cpu", use_drive=True)
    assert info["seed"] == 3 and run is None and "Drive" not in origin
    said = save_to_drive(TRAINED_GPT, use_drive=True)
    assert "beside them" in said and not asked
    TRAINED_GPT.unlink()
    *_, run, origin = load_trained_gpt("quick", "cpu")
    assert run == "quick/cpu" and "Drive" not in origin


def test_the_drive_is_mounted_only_with_the_student_s_yes(runtime, colab, monkeypatch):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)
    asked = _answers(monkeypatch, "n")
    *_, run, origin = load_trained_gpt("quick", "cpu")
    assert run == "quick/cpu" and "you answered no" in origin and not colab.mounts
    assert len(asked) == 1 and "Google Drive" in asked[0]
    *_, run, origin = load_trained_gpt("quick", "cpu")  # the same notebook: asked once
    assert run == "quick/cpu" and len(asked) == 1

    # papermill, nbgrader and the pipeline's runs on Colab: the kernel refuses input
    _next_notebook(monkeypatch)
    _answers(monkeypatch, StdinNotImplementedError)
    *_, run, origin = load_trained_gpt("quick", "cpu")
    assert run == "quick/cpu" and "nobody was there" in origin and not colab.mounts

    _next_notebook(monkeypatch)
    _answers(monkeypatch, "y")
    _, info, run, _ = load_trained_gpt("quick", "cpu")
    assert info["seed"] == 7 and run is None and colab.mounts


def test_a_drive_mounted_already_is_read_without_asking_and_false_means_never(
    runtime, colab, monkeypatch
):
    save_gpt(_model(7), colab.model, budget="quick", seed=7)
    colab.mountpoint.parent.mkdir(parents=True)
    colab.mountpoint.symlink_to(colab.storage)  # the student mounted it from Colab's sidebar
    asked = _answers(monkeypatch, AssertionError)
    _, info, run, _ = load_trained_gpt("quick", "cpu")
    assert info["seed"] == 7 and run is None and not asked and not colab.mounts
    *_, run, origin = load_trained_gpt("quick", "cpu", use_drive=False)
    assert run == "quick/cpu" and "USE_DRIVE is False" in origin


def test_a_mount_that_fails_falls_back_and_says_why(runtime, colab, monkeypatch):
    def refused(path, **kwargs):
        raise ValueError("mount failed")

    monkeypatch.setattr(sys.modules["google.colab.drive"], "mount", refused)
    *_, run, origin = load_trained_gpt("quick", "cpu", use_drive=True)
    assert run == "quick/cpu" and "could not be mounted (mount failed)" in origin


def test_04_copies_the_model_to_the_drive_only_when_the_student_agrees(runtime, colab, monkeypatch):
    saved = save_gpt(_model(3), budget="quick", seed=3)
    asked = _answers(monkeypatch, StdinNotImplementedError)
    said = save_to_drive(saved)
    assert "Not saved to your Google Drive" in said and not colab.mounts
    assert not colab.model.exists() and len(asked) == 1

    _next_notebook(monkeypatch)
    asked = _answers(monkeypatch, "yes")
    said = save_to_drive(saved)
    assert colab.model.read_bytes() == saved.read_bytes() and colab.mounts
    assert "MyDrive/transformer-lab/mini_gpt.pt" in said and len(asked) == 1
    # written through at once: the student may free the T4 now, not a minute later
    assert colab.flushed and not colab.mountpoint.exists() and "free this runtime" in said
    save_to_drive(saved)  # the same notebook: its one question was answered
    assert len(asked) == 1

    _next_notebook(monkeypatch)
    asked = _answers(monkeypatch, "n")  # writing to the Drive asks first, every notebook
    colab.model.unlink()
    save_to_drive(saved)
    assert len(asked) == 1 and not colab.model.exists()


def test_the_model_travels_from_04_to_a_fresh_runtime_through_the_drive(
    runtime, colab, tmp_path, monkeypatch
):
    save_to_drive(save_gpt(_model(5), budget="quick", seed=5), use_drive=True)  # notebook 04
    colab.unmount()  # notebook 05, on a machine of its own: nothing beside it, nothing mounted
    fresh = tmp_path / "another-runtime"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    _answers(monkeypatch, "y")
    _, info, run, origin = load_trained_gpt("quick", "cpu")
    assert info["seed"] == 5 and run is None and "from your Google Drive" in origin
    assert len(colab.mounts) == 2
