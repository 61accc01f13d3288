"""Notebook 04's "After the lab" read later, as the lecture files it: on a new runtime, from the
files 04's saving cell wrote, never from the session that trained. A run is saved as 04 saves it
(transformer_lab/reading/saved_run.py), then the section's code cells run in a fresh Python process
after only the cells a student runs first on a new runtime (those above Exercise 4, and the one
that defines `lm_metrics`), on a CPU, with the saved files and the recorded baselines beside it:
what it prints is the saved run's, figure and numbers alike. Without a saved run it says what to
run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import jupytext
import pytest
import torch
from paths import ROOT
from test_ladder import ladder_record

from transformer_lab import CharLSTM, GPTConfig, MiniGPT
from transformer_lab.baselines import ENV
from transformer_lab.reading import saved_run
from transformer_lab.reading.saved_run import RUN_FILE, load_run, save_run
from transformer_lab.report import ResultRow
from transformer_lab.runtime import BUDGETS
from transformer_lab.train import Recipe, TrainHistory

pytestmark = pytest.mark.heavy(order=18)

NOTEBOOK = ROOT / "solutions" / "04_training.py"


def _history(nats: float) -> TrainHistory:
    recipe = Recipe.of(BUDGETS["smoke"], lr=0.004)
    train = [(15, nats + 0.4), (30, nats + 0.1)]
    return TrainHistory("smoke", 0, "cpu", recipe, train, [(15, nats + 0.3), (30, nats + 0.05)])


def _row(label: str, nats: float) -> ResultRow:
    return ResultRow(label, 5, 1000, 30, 8, 2.0, nats, math.exp(nats), nats / math.log(2))


PIECES = "the course's attention, mask and input"  # what the saved mini-GPT was built from


@pytest.fixture(scope="module")
def saved(tmp_path_factory, corpus):
    """A folder as 04's saving cell leaves it, off Colab: mini_gpt.pt and mini_gpt_run.json."""
    folder = tmp_path_factory.mktemp("runtime")
    torch.manual_seed(0)
    gpt = MiniGPT(GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16)).eval()
    lstm = CharLSTM().eval()
    trained = {
        "gpt": (gpt, _history(2.9), _row("mini-GPT", 2.95)),
        "lstm": (lstm, _history(2.7), _row("LSTM", 2.75)),
    }
    counts = [ResultRow("character 5-gram, add-k 0.01", 1, None, None, None, None, 3.1, 22.2, 4.5)]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setattr(saved_run, "SAMPLE_LENGTH", 40)  # shown as saved, whatever their length
        said = save_run(trained, counts, corpus.vocab, PIECES)
    return folder, said


def _cells() -> str:
    """The code a student runs on a new runtime: the cells above Exercise 4 (not the pipeline's),
    the cell that defines `lm_metrics`, and every cell of "After the lab"."""
    chosen, part = [], "before"
    for cell in jupytext.read(NOTEBOOK).cells:
        if cell.cell_type == "markdown":
            part = (
                "exercise"
                if "## Exercise 4" in cell.source
                else "after"
                if "## After the lab" in cell.source
                else part
            )
        elif "maintainer" in cell.metadata.get("tags", []):
            continue
        elif part in ("before", "after") or "def lm_metrics" in cell.source:
            chosen.append(cell.source)
    return "\n\n".join(chosen)


# A fresh Python process stands in for the new runtime: `display` prints the Markdown it is
# given, and at the end every figure is written out as its title and lines.
PREAMBLE = """
import IPython.display
IPython.display.display = lambda *shown: print(*(getattr(s, "data", s) for s in shown))
"""
EPILOGUE = """
import json
import matplotlib.pyplot as plt

def drawn(ax):
    return {
        "title": ax.get_title(),
        "lines": {l.get_label(): [list(l.get_xdata()), list(l.get_ydata())] for l in ax.lines},
    }

figures = [drawn(plt.figure(n).axes[0]) for n in plt.get_fignums()]
print("FIGURES " + json.dumps(figures, default=float))
"""


def _new_runtime(folder, baselines) -> subprocess.CompletedProcess:
    env = os.environ | {
        ENV: str(baselines),
        "PYTHONPATH": str(ROOT),
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
    }
    env.pop("TRANSFORMER_LAB_DRIVE", None)
    script = PREAMBLE + _cells() + EPILOGUE  # off Colab: USE_DRIVE mounts nothing
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_after_the_lab_renders_the_saved_run_on_a_new_cpu_runtime(saved, tmp_path, corpus):
    folder, said = saved
    assert said.startswith("Saved mini_gpt.pt") and (folder / RUN_FILE.name).is_file()
    record = json.loads((folder / RUN_FILE).read_text())
    # the run trained on a T4, read on this CPU: nothing of it may need the GPU
    record |= {"device": "Tesla T4", "device_class": "cuda-fp16"}
    (folder / RUN_FILE).write_text(json.dumps(record))
    baselines = json.loads((ROOT / "data" / "baselines.json").read_text())
    baselines["ablations"] = {"quick/cpu": ladder_record()}
    (tmp_path / "baselines.json").write_text(json.dumps(baselines))

    shown = _new_runtime(folder, tmp_path / "baselines.json")
    assert shown.returncode == 0, shown.stderr[-3000:]
    out = shown.stdout
    assert (
        "Your run of notebook 04, read from beside this notebook (mini_gpt_run.json): the smoke "
        "budget on Tesla T4, seed 0, saved " in out
    )
    assert f"built from {PIECES}." in out
    # the saved curves' last validation losses, and the lines drawn beside them
    assert "2.9500 (step 30)" in out and "2.7500 (step 30)" in out and "3.1000" in out
    assert "Your mini-GPT: 2.9500" in out and "Your LSTM: 2.7500" in out
    assert "your `smoke/cuda-fp16`" in out  # the run's device class, not this CPU's
    assert "yours, smoke:" in out
    for text in record["samples"].values():
        assert text in out  # as saved, not sampled again
    yours, reference = out.split("yours: ")[1].split(" nats")[0], out.split("reference: ")[1][:6]
    assert yours == reference  # lm_metrics on the saved model's logits
    assert "**The lecture's reading" in out
    removes = ladder_record()["rungs"]["no_positions"]["removes"]
    assert f"| `no_positions` | {removes} |" in out  # the ladder, recorded
    assert "Nothing was trained" in out  # the optional rung, on a runtime without a GPU
    [figures] = [json.loads(line[8:]) for line in out.splitlines() if line.startswith("FIGURES ")]
    curves = next(f for f in figures if "mini-GPT, validation" in f["lines"])
    assert "smoke" in curves["title"]
    saved_validation = [loss for _, loss in record["curves"]["gpt"]["val"]]
    assert curves["lines"]["mini-GPT, validation"] == [[15, 30], saved_validation]
    assert curves["lines"]["LSTM, training"] == [[15, 30], pytest.approx([3.1, 2.8])]
    assert any("(quick/cpu)" in f["title"] for f in figures)  # the ladder's figure


def test_without_a_saved_run_it_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", None)  # off Colab
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as missing:
        load_run(use_drive=False)
    assert str(missing.value) == (
        "No saved run of notebook 04 to show: no mini_gpt.pt from notebook 04 is beside this "
        "notebook. Run the notebook from the top down to its saving cell (it trains both "
        "models), then this section."
    )


def test_a_model_saved_again_since_is_not_shown_as_this_run_s(saved, tmp_path, monkeypatch):
    folder, _ = saved
    monkeypatch.setitem(sys.modules, "google.colab", None)
    for name in ("mini_gpt.pt", RUN_FILE.name):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    run = load_run(use_drive=False)
    assert run.gpt().config.d_model == 16
    torch.save({"other": 1}, tmp_path / "mini_gpt.pt")  # 04 saved another model since
    with pytest.raises(FileNotFoundError, match="is not the model of this run"):
        run.gpt()
