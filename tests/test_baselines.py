"""Reading data/baselines.json: the nearest recorded run when the student's own is missing, and
the recorded mini-GPT that notebooks 05 and 06 fall back on."""

import json

import pytest
import torch

from transformer_lab import MiniGPT, load_trained_gpt, save_gpt
from transformer_lab.baselines import ENV, after_the_lab, nearest_run, recorded_distances
from transformer_lab.model import GPTConfig
from transformer_lab.saving import sha256


def _run(mode: str, device: str, **provenance) -> dict:
    return {
        "mode": mode,
        "device_class": device,
        "provenance": {
            "git_commit": "0123456789abcdef",
            "date": "2026-11-01T10:00:00+00:00",
            "device": "Tesla T4" if device.startswith("cuda") else "cpu",
            "precision": "fp16" if device == "cuda-fp16" else "fp32",
            "mode": mode,
            "seeds": [0],
            "batch_size": 16,
            "steps": 1500,
            **provenance,
        },
        "results": {
            "rows": {
                "gpt": {
                    "model": "mini-GPT",
                    "parameters": 1,
                    "nats": 1.5,
                    "perplexity": 4.5,
                    "bits": 2.2,
                }
            },
            "mean_attention_distance": [[1.0, 2.0]],
        },
    }


@pytest.fixture
def t4(monkeypatch):
    """A T4's device class (compute capability 7.5), without a GPU."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    return "cuda"


def test_nearest_run_prefers_the_same_mode_then_the_other(t4):
    runs = {"runs": {"full/cpu": _run("full", "cpu"), "quick/cpu": _run("quick", "cpu")}}
    assert nearest_run("full", t4, baselines=runs)[0] == "full/cpu"
    runs["runs"]["full/cuda-fp16"] = _run("full", "cuda-fp16")
    assert nearest_run("full", t4, baselines=runs)[0] == "full/cuda-fp16"
    assert nearest_run("quick", "cpu", baselines=runs)[0] == "quick/cpu"
    only_quick = {"runs": {"quick/cpu": _run("quick", "cpu")}}
    assert nearest_run("full", t4, baselines=only_quick)[0] == "quick/cpu"
    assert nearest_run("full", t4, has=lambda run: False, baselines=runs) is None
    assert nearest_run("full", t4, baselines={"runs": {}}) is None


def test_a_t4_student_sees_the_nearest_table_labelled(t4, tmp_path, monkeypatch):
    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"runs": {"full/cpu": _run("full", "cpu")}}))
    monkeypatch.setenv(ENV, str(path))
    table = after_the_lab("full", t4, gpt_nats=1.4)
    assert "| mini-GPT |" in table and "No measurements" not in table
    assert "your `full/cuda-fp16`" in table and "`full/cpu`" in table
    assert "on cpu (fp32), mode `full`" in table and "2026-11-01" in table
    distances = recorded_distances("full", t4)
    assert "layer 1:" in distances and "nearest recorded run" in distances
    own = after_the_lab("full", "cpu")
    assert "nearest" not in own  # the student's own class: no caveat


def test_nothing_recorded_says_so(tmp_path, monkeypatch):
    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"runs": {}}))
    monkeypatch.setenv(ENV, str(path))
    assert "No measurements are recorded yet" in after_the_lab("quick", "cpu")


def _recorded(tmp_path, monkeypatch) -> tuple:
    config = GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16)
    torch.manual_seed(0)
    model = MiniGPT(config)
    save_gpt(model, tmp_path / "mini_gpt-quick-cpu.pt", budget="quick", seed=0)
    model_file = tmp_path / "mini_gpt-quick-cpu.pt"
    record = {"file": model_file.name, "sha256": sha256(model_file), "seed": 0}
    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"runs": {"quick/cpu": _run("quick", "cpu", model=record)}}))
    monkeypatch.setenv(ENV, str(path))
    workdir = tmp_path / "runtime"
    workdir.mkdir()
    monkeypatch.chdir(workdir)  # a fresh runtime: no mini_gpt.pt from notebook 04
    return model, model_file


def test_a_fresh_runtime_uses_the_recorded_model(tmp_path, monkeypatch, t4):
    model, _ = _recorded(tmp_path, monkeypatch)
    loaded, info, origin = load_trained_gpt("full", "cpu")
    assert torch.equal(loaded.W_o.weight, model.W_o.weight) and info["seed"] == 0
    assert "recorded mini-GPT (`quick/cpu`" in origin and "your `full/cpu`" in origin


def test_the_runtime_s_own_model_comes_first(tmp_path, monkeypatch):
    _recorded(tmp_path, monkeypatch)
    mine = MiniGPT(GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16))
    save_gpt(mine, budget="smoke", seed=3)  # what notebook 04 leaves beside itself
    loaded, info, origin = load_trained_gpt("quick", "cpu")
    assert info["seed"] == 3 and "you trained in notebook 04" in origin
    assert torch.equal(loaded.W_o.weight, mine.W_o.weight)


def test_a_recorded_model_that_does_not_match_its_digest_is_refused(tmp_path, monkeypatch):
    _, model_file = _recorded(tmp_path, monkeypatch)
    model_file.write_bytes(model_file.read_bytes()[:-10])
    with pytest.raises(FileNotFoundError, match="SHA-256"):
        load_trained_gpt("quick", "cpu")
