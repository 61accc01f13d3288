"""The ablation ladder (transformer_lab/ablations.py, maintainer/ablations.py): each rung takes
away what its row says and nothing else, trains on the full model's batches, and its record
goes into data/baselines.json only whole and only as the schema allows."""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import pytest
import torch

from maintainer import ablations as recorder
from maintainer.pipeline import validate
from transformer_lab import ablations
from transformer_lab.attention import scaled_dot_product_attention
from transformer_lab.model import GPTConfig, MiniGPT, count_parameters
from transformer_lab.runtime import BUDGETS, Budget

TINY = Budget("smoke", batch_size=2, steps=3, eval_every=3, eval_batches=1, test_characters=512)


def built(name: str) -> MiniGPT:
    torch.manual_seed(0)
    return ablations.LADDER[name].make_model().eval()


def test_without_positions_the_input_step_reads_no_position():
    model = built("no_positions")
    assert model.pos_emb is None
    idx = torch.tensor([[5, 9, 5, 9]])
    H = model.embed(idx, model.tok_emb, model.pos_emb)
    assert torch.equal(H[0, 0], H[0, 2])  # one character, two places: one vector
    full = built("full")
    assert count_parameters(full) - count_parameters(model) == GPTConfig().T_max * 128


def test_without_scaling_the_scores_are_not_divided():
    Q, K, V = torch.randn(3, 2, 4, 5, 8).unbind()
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    V_bar, _ = ablations.unscaled_attention(Q, K, V, allowed)
    scaled, _ = scaled_dot_product_attention(Q * math.sqrt(8), K, V, allowed)
    torch.testing.assert_close(V_bar, scaled)
    course, _ = scaled_dot_product_attention(Q, K, V, allowed)
    assert not torch.allclose(V_bar, course, atol=1e-3)


def test_post_norm_ends_each_block_in_a_layer_norm_and_pre_norm_does_not():
    H = torch.randn(2, 6, 128) * 3 + 1
    post, pre = built("post_norm").blocks[0], built("full").blocks[0]
    out, _ = post(H)
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)
    assert not torch.allclose(pre(H)[0].mean(-1), torch.zeros(2, 6), atol=1e-2)


def test_only_the_warmup_rung_trains_without_warmup():
    quick = BUDGETS["quick"]
    steps = {name: rung.recipe(quick).warmup_steps for name, rung in ablations.LADDER.items()}
    assert steps.pop("no_warmup") == 0
    assert set(steps.values()) == {quick.steps // 20}


def test_one_head_keeps_d_model_and_every_parameter():
    model, full = built("one_head"), built("full")
    assert (model.config.n_heads, model.config.d_model) == (1, 128)
    assert count_parameters(model) == count_parameters(full) == 824_897


def test_without_ffn_no_block_holds_one():
    model = built("no_ffn")
    assert not any("ffn" in name for name, _ in model.named_parameters())
    assert count_parameters(model) == 824_897 - 4 * (2 * 128 * 512 + 512 + 128 + 2 * 128)


def test_every_rung_trains_on_the_full_model_s_batches(corpus, monkeypatch):
    drawn = []
    real = ablations.train_lm

    def spy(model, corpus, recipe, *, seed, **kwargs):
        from transformer_lab.train import run_windows

        drawn.append(run_windows(corpus, recipe.budget, recipe.T, seed)[0].tolist())
        return real(model, corpus, recipe, seed=seed, **kwargs)

    monkeypatch.setattr(ablations, "train_lm", spy)
    rows = {n: ablations.train_rung(r, corpus, TINY, 1)[2] for n, r in ablations.LADDER.items()}
    assert all(d == drawn[0] for d in drawn)
    # Three steps warm up over none: the warm-up rung is then the full model, to the last bit,
    # so its recipe is all that differs; every other rung is a model of its own.
    assert TINY.steps // 20 == 0 and rows.pop("no_warmup")["nats"] == rows["full"]["nats"]
    assert len({row["nats"] for row in rows.values()}) == len(rows)


def _ladder(seeds=(0, 1, 2)) -> dict:
    rungs = {}
    for i, (name, rung) in enumerate(ablations.LADDER.items()):
        recipe = rung.recipe(BUDGETS["quick"]).as_dict() | {"dropout": 0.1, "precision": "fp32"}
        row = {"nats": 1.8 + i / 100, "parameters": 1, "train_seconds": 1.0, "recipe": recipe}
        rungs[name] = {"removes": rung.removes, "claim": rung.claim, "seeds": {}}
        rungs[name]["seeds"] = {str(s): dict(row) for s in seeds}
    provenance = {
        "git_commit": "abc",
        "git_dirty": False,
        "date": "2026-12-04T00:00:00+00:00",
        "device": "cpu",
        "torch": "2",
        "python": "3.11",
        "seeds": list(seeds),
    }
    return {"mode": "quick", "device_class": "cpu", "provenance": provenance, "rungs": rungs}


def test_the_record_passes_the_schema_and_a_broken_one_is_refused(tmp_path, monkeypatch):
    target = tmp_path / "baselines.json"
    before = {"schema_version": 1, "runs": {}}
    target.write_text(json.dumps(before))
    monkeypatch.setattr(recorder, "BASELINES", target)
    recorder.write(_ladder())
    assert json.loads(target.read_text())["ablations"]["quick/cpu"] == _ladder()
    for broken in ("no full rung", "a typed-in row"):
        ladder = copy.deepcopy(_ladder())
        if broken == "no full rung":
            del ladder["rungs"]["full"]
        else:
            ladder["rungs"]["one_head"]["seeds"]["0"]["verdict"] = "holds"
        written = target.read_text()
        with pytest.raises(jsonschema.ValidationError):
            recorder.write(ladder)
        assert target.read_text() == written  # nothing half-written


def test_the_committed_ladder_if_any_follows_the_schema():
    data = json.loads(recorder.BASELINES.read_text())
    validate(data)
    for ladder in data.get("ablations", {}).values():
        assert set(ladder["rungs"]) == set(ablations.LADDER)
        seeds = {tuple(sorted(r["seeds"])) for r in ladder["rungs"].values()}
        assert len(seeds) == 1  # every rung on the same seeds: they pair with the full model


def test_an_interrupted_ladder_resumes_only_with_runs_of_its_own_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder, "WORKDIR", tmp_path)
    here = recorder.kept_runs("quick", "a" * 40, dirty=False)
    assert here == tmp_path / "quick-cpu-aaaaaaaaaaaa"
    assert recorder.kept_runs("quick", "b" * 40, dirty=False) != here  # another commit
    assert recorder.kept_runs("quick", "a" * 40, dirty=True) != here  # edits on top of it
    here.mkdir()
    row = {"nats": 1.8, "parameters": 1, "train_seconds": 1.0, "recipe": {}}
    for name in ablations.LADDER:
        (here / f"{name}-0.json").write_text(json.dumps(row))
    ladder = recorder.record(here, "quick", [0], 60.0, "a" * 40, dirty=False)
    assert (ladder["provenance"]["git_commit"], ladder["provenance"]["git_dirty"]) == (
        "a" * 40,
        False,
    )
    assert set(ladder["rungs"]) == set(ablations.LADDER)


def test_the_committed_ladder_was_trained_at_the_commit_of_its_baselines():
    """Its full rung and the baselines' mini-GPT are one code: the ladder's commit is the run's."""
    data = json.loads(recorder.BASELINES.read_text())
    for key, ladder in data.get("ablations", {}).items():
        run = data["runs"][key]["provenance"]
        assert ladder["provenance"]["git_commit"] == run["git_commit"], key


def test_a_measurement_written_before_the_ladder_does_not_make_its_commit_dirty(
    tmp_path, monkeypatch
):
    import subprocess

    import maintainer

    for folder in ("data", "transformer_lab"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "file").write_text("1")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "c"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *command], cwd=tmp_path)
    monkeypatch.setattr(maintainer, "ROOT", tmp_path)
    assert maintainer.commit_label()[1] is False
    (tmp_path / "data" / "file").write_text("2")  # regenerate-baselines wrote its numbers
    assert maintainer.commit_label()[1] is False
    (tmp_path / "transformer_lab" / "file").write_text("2")  # the code changed
    assert maintainer.commit_label()[1] is True
