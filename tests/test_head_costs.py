"""`make head-costs` (maintainer/head_costs.py): a recorded run's head costs measured on its saved
model as notebook 05 measures them (each head mean-ablated), written with where they were
measured and how heads were switched off; and the committed record agrees with its own model
files, measured so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from paths import ROOT

import transformer_lab as tl
from maintainer import head_costs
from transformer_lab.reading.recorded import recorded_head_costs
from transformer_lab.saving import save_gpt, sha256

TINY = tl.GPTConfig(d_model=16, n_heads=2, n_layers=2, T_max=32, dropout=0.1)


def _course(tmp_path: Path) -> Path:
    """A baselines file with one run whose saved model is a tiny mini-GPT and no head costs."""
    torch.manual_seed(0)
    model = tl.MiniGPT(TINY)
    save_gpt(model, tmp_path / "mini_gpt-full-cpu.pt", budget="full")
    committed = json.loads((ROOT / "data" / "baselines.json").read_text())
    run = committed["runs"]["full/cpu"]
    run["results"].pop("head_costs", None)
    run["provenance"]["model"] = {
        "file": "mini_gpt-full-cpu.pt",
        "sha256": sha256(tmp_path / "mini_gpt-full-cpu.pt"),
        "seed": 0,
    }
    out = tmp_path / "baselines.json"
    out.write_text(json.dumps({"schema_version": 1, "runs": {"full/cpu": run}}))
    return out


def test_the_costs_are_those_05_measures_on_the_saved_model(tmp_path, corpus, capsys):
    out = _course(tmp_path)
    assert head_costs.main([], out=out) == ["full/cpu"]
    recorded = json.loads(out.read_text())["runs"]["full/cpu"]["results"]["head_costs"]
    # 05's cell: 16 validation windows of T_max, a CPU generator seeded 0, each head off in turn
    model, _ = tl.load_gpt(tmp_path / "mini_gpt-full-cpu.pt")
    windows, targets = tl.sample_batch(corpus.val, 16, TINY.T_max, torch.Generator().manual_seed(0))
    expected = tl.head_ablation(model, windows, targets)
    assert recorded["nats"] == pytest.approx(expected.nats)
    assert torch.allclose(torch.tensor(recorded["costs"]), expected.costs)
    assert (recorded["windows"], recorded["characters"]) == (16, 16 * TINY.T_max)
    assert recorded["ablation"] == "mean"
    assert "mini_gpt-full-cpu.pt" in recorded["measured"]["on"]  # the run's recorded model
    said = capsys.readouterr().out
    by_layer = ", ".join(f"{layer.max():+.3f}" for layer in expected.costs)
    assert (
        said == f"full/cpu: {expected.nats:.3f} nats/char, costliest head off by layer {by_layer}\n"
    )
    # 05 shows them, saying they were measured apart from the run
    shown = recorded_head_costs("full/cpu", json.loads(out.read_text()))
    commit = recorded["measured"]["git_commit"][:10]
    assert "(Measured on" in shown and f"commit {commit}" in shown and "on a CPU" in shown
    # measured once: a second call leaves the file as it is
    written = out.read_text()
    assert head_costs.main([], out=out) == []
    assert out.read_text() == written


def test_a_model_file_that_is_not_the_recorded_one_is_refused_and_nothing_written(tmp_path):
    out = _course(tmp_path)
    torch.manual_seed(1)
    save_gpt(tl.MiniGPT(TINY), tmp_path / "mini_gpt-full-cpu.pt")  # another model, same name
    written = out.read_text()
    with pytest.raises(SystemExit, match="not the model the run recorded"):
        head_costs.main(["--run", "full/cpu"], out=out)
    assert out.read_text() == written
    with pytest.raises(SystemExit, match="no run 'full/gpu'"):
        head_costs.main(["--run", "full/gpu"], out=out)


@pytest.mark.parametrize("key", ["full/cpu", "quick/cpu"])
def test_the_committed_head_costs_are_those_of_the_committed_model(key, tmp_path):
    """Whoever measured them, the pipeline's 05 or `make head-costs`: the model file gives them
    again, each head mean-ablated as 05 switches it off now (zero-ablated costs differ by up to
    0.05 nats/char), so 05 can say they "should match yours above apart from rounding"."""
    committed = json.loads((ROOT / "data" / "baselines.json").read_text())
    run = committed["runs"][key]
    if "head_costs" not in run["results"]:
        pytest.skip(f"{key} has no head costs recorded yet")
    shutil.copy(ROOT / "data" / run["provenance"]["model"]["file"], tmp_path)
    again = head_costs.measure(run, tmp_path)
    recorded = run["results"]["head_costs"]
    assert recorded["ablation"] == again["ablation"] == "mean"
    assert again["nats"] == pytest.approx(recorded["nats"], abs=1e-4)
    assert torch.allclose(torch.tensor(again["costs"]), torch.tensor(recorded["costs"]), atol=1e-4)
