"""Reading data/baselines.json: the nearest recorded run when the student's own is missing, and
the recorded mini-GPT that notebooks 05 and 06 fall back on."""

import json

import pytest
import torch

from transformer_lab import MiniGPT, load_trained_gpt, save_gpt
from transformer_lab.baselines import (
    ENV,
    after_the_lab,
    lecture_comparison,
    nearest_run,
    recorded_distances,
)
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
    loaded, info, run, origin = load_trained_gpt("full", "cpu")
    assert torch.equal(loaded.W_o.weight, model.W_o.weight) and info["seed"] == 0
    assert run == "quick/cpu"  # the run key travels with the model
    assert "recorded mini-GPT of run `quick/cpu`" in origin and "your `full/cpu`" in origin
    assert "the same device class at the other budget" in origin  # why it is the nearest


def test_the_runtime_s_own_model_comes_first(tmp_path, monkeypatch):
    _recorded(tmp_path, monkeypatch)
    mine = MiniGPT(GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16))
    save_gpt(mine, budget="smoke", seed=3)  # what notebook 04 leaves beside itself
    loaded, info, run, origin = load_trained_gpt("quick", "cpu")
    assert info["seed"] == 3 and "you trained in notebook 04" in origin and run is None
    assert torch.equal(loaded.W_o.weight, mine.W_o.weight)


def test_a_run_recorded_without_a_model_lends_neither_model_nor_distances(tmp_path, monkeypatch):
    """The issue's case: `full/cpu` has distances but no model, so the `quick/cpu` model is
    loaded, and the distances printed beside it are `quick/cpu`'s, with the reason."""
    _recorded(tmp_path, monkeypatch)
    baselines = json.loads((tmp_path / "baselines.json").read_text())
    full = _run("full", "cpu")
    full["results"]["mean_attention_distance"] = [[7.0, 8.0]]
    baselines["runs"]["full/cpu"] = full
    (tmp_path / "baselines.json").write_text(json.dumps(baselines))
    *_, run, origin = load_trained_gpt("full", "cpu")
    assert run == "quick/cpu" and "`full/cpu` is recorded without a saved model" in origin
    shown = recorded_distances(run, "full/cpu")
    assert "1.0    2.0" in shown and "7.0" not in shown  # quick/cpu's, not full/cpu's
    assert "run `quick/cpu`" in shown and "`full/cpu` is recorded without a saved model" in shown
    assert "nearest recorded run with a saved model" in shown


def test_recorded_distances_name_their_run_and_stay_silent_for_the_student_s_model(t4):
    runs = {"runs": {"full/cpu": _run("full", "cpu")}}
    shown = recorded_distances("full/cpu", "full/cuda-fp16", baselines=runs)
    assert "layer 1:" in shown and "run `full/cpu`" in shown
    assert "nothing is recorded for your `full/cuda-fp16`" in shown
    assert "the same budget on another device class" in shown
    own = recorded_distances(None, "full/cpu", baselines=runs)
    assert "your own model" in own and "layer 1:" not in own
    missing = recorded_distances("quick/cpu", "quick/cpu", baselines=runs)
    assert "No mean attention distances are recorded for run `quick/cpu`" in missing


def test_a_recorded_model_that_does_not_match_its_digest_is_refused(tmp_path, monkeypatch):
    _, model_file = _recorded(tmp_path, monkeypatch)
    model_file.write_bytes(model_file.read_bytes()[:-10])
    with pytest.raises(FileNotFoundError, match="SHA-256"):
        load_trained_gpt("quick", "cpu")


def _compared(
    mode: str, gpt: tuple, lstm: tuple, lab3=None, device: str = "cpu", **provenance
) -> dict:
    """A run with GPT and LSTM rows: per-seed nats and the training seconds of each model."""
    run = _run(mode, device, **provenance)

    def row(seeds: dict, seconds: float) -> dict:
        nats = sum(seeds.values()) / len(seeds)
        per_seed = {str(s): {"nats": n, "train_seconds": seconds} for s, n in seeds.items()}
        return {"model": "m", "nats": nats, "perplexity": 1, "bits": 1, "seeds": per_seed} | {
            "train_seconds": seconds
        }

    run["results"]["rows"] = {"gpt": row(*gpt), "lstm": row(*lstm)}
    if lab3 is not None:
        run["results"]["rows"]["lstm_lab3"] = {"model": "m", "nats": lab3, "perplexity": 1}
    return run


def test_the_lecture_s_reading_holds_where_the_numbers_agree():
    baselines = {
        "runs": {
            # GPT ahead by three hundredths, retraining moved the LSTM by four, ten times longer
            "full/cpu": _compared("full", ({0: 1.47}, 1000.0), ({0: 1.50}, 100.0), lab3=1.54),
            # the LSTM ahead by far more than its seeds spread
            "quick/cpu": _compared(
                "quick",
                ({0: 1.80, 1: 1.81, 2: 1.79}, 200.0),
                ({0: 1.60, 1: 1.61, 2: 1.59}, 50.0),
                seeds=[0, 1, 2],
            ),
        }
    }
    text = lecture_comparison("cpu", baselines=baselines)
    assert "Unlike the lecture" not in text and "agrees with the lecture" in text
    assert "the GPT is ahead by 0.030 nats" in text and "seed 0 alone" in text
    assert "from 1.5400 (Lab 3's own run, one run) to 1.5000" in text and "lower by 0.040" in text
    assert "10.0 times as long (1,000 s against 100 s)" in text
    assert "the LSTM is ahead by 0.200 nats" in text and "the mean of seeds 0, 1, 2" in text
    assert "spread over 0.020 nats at most, so the gap is larger" in text


def test_where_the_course_differs_from_the_lecture_it_says_so():
    baselines = {
        "runs": {
            # the LSTM ahead, retraining moved it by a tenth and more, only three times longer
            "full/cpu": _compared("full", ({0: 1.53}, 300.0), ({0: 1.50}, 100.0), lab3=1.62),
            # the GPT ahead at the quick budget
            "quick/cpu": _compared("quick", ({0: 1.50}, 20.0), ({0: 1.60}, 10.0)),
        }
    }
    text = lecture_comparison("cpu", baselines=baselines)
    differences = text.split("differs from the lecture's:**")[1]
    assert "at the full budget the LSTM, not the GPT, is ahead" in differences
    assert "moved the LSTM by more than a few hundredths" in differences
    assert "well under an order of magnitude" in differences
    assert "at the quick budget the GPT, not the LSTM, is ahead" in differences
    assert "still a tie" in text  # a small gap from one seed: only the direction differs
    assert "3.0 times as long" in text


def test_a_budget_or_row_not_recorded_is_not_checked(t4):
    only_full = {"runs": {"full/cpu": _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0))}}
    text = lecture_comparison(t4, baselines=only_full)
    assert "Nothing is recorded at the quick budget" in text
    assert "Lab 3's own run is not recorded in `full/cpu`" in text
    assert "`full/cpu`" in text  # the nearest device class stands in for the T4's
    assert "these are not" not in text  # CPU times, as the lecture's
    t4_run = _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0), device="cuda-fp16")
    on_a_t4 = {"runs": {"full/cuda-fp16": t4_run}}
    assert "The lecture's times are CPU times; these are not" in lecture_comparison(t4, on_a_t4)
    empty = lecture_comparison("cpu", baselines={"runs": {}})
    assert "Nothing is recorded at the full budget" in empty
