"""The baselines pipeline end to end in smoke mode into a temporary file; a failure changes
nothing."""

import json
import math
from pathlib import Path

import jsonschema
import pytest

from transformer_lab import notebook_build
from transformer_lab.pipeline import (
    BASELINES,
    PipelineError,
    run_pipeline,
    summarise_seeds,
    validate,
)

ROOT = Path(__file__).resolve().parents[1]


def test_committed_baselines_follow_the_schema():
    if not BASELINES.is_file():
        pytest.skip("no data/baselines.json recorded yet")
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


def test_smoke_run_end_to_end(tmp_path):
    out = tmp_path / "baselines.json"
    run = run_pipeline("smoke", [0, 1], "cpu", out, workdir=tmp_path / "work")
    written = json.loads(out.read_text())
    validate(written)
    assert list(written["runs"]) == ["smoke/cpu"]
    p = run["provenance"]
    assert p["seeds"] == [0, 1] and p["mode"] == "smoke" and p["device"] == "cpu"
    assert set(p["notebook_seconds"]) == {s.stem for s in notebook_build.sources()}
    rows = run["results"]["rows"]
    assert set(rows["gpt"]["seeds"]) == {"0", "1"} and "spread" in rows["gpt"]
    assert {"trigram", "5gram", "gpt", "lstm"} <= set(rows)
    assert set(run["results"]["score_spread"]) == {"16", "64", "256"}
    assert (tmp_path / "work" / "smoke-cpu" / "executed").is_dir()  # kept for inspection


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
