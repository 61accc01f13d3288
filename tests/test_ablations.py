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
from transformer_lab.train import DEFAULT_LR

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
    recipe = ablations.FULL.recipe(BUDGETS["quick"], 0.002).as_dict()
    recipe |= {"dropout": 0.1, "precision": "fp32"}
    row = {"nats": 1.8, "parameters": 1, "train_seconds": 1.0, "recipe": recipe}
    for name in ablations.LADDER:
        (here / f"{name}-0.json").write_text(json.dumps(row))
    _kept_sweeps(here)
    ladder = recorder.record(here, "quick", [0], 60.0, "a" * 40, dirty=False)
    assert (ladder["provenance"]["git_commit"], ladder["provenance"]["git_dirty"]) == (
        "a" * 40,
        False,
    )
    assert set(ladder["rungs"]) == set(ablations.LADDER)
    assert ladder["rungs"]["full"]["lr"] == 0.002  # the best of its sweep, as kept
    validate({"schema_version": 1, "runs": {}, "ablations": {"quick/cpu": ladder}})


def _kept_sweeps(folder, best=0.002) -> None:
    """Every sweep run of every variant, as `_one` keeps them: `best` the lowest loss."""
    for _, name, lr, seed in recorder.sweep_jobs():
        run = {"lr": lr, "seed": seed, "steps": 3, "val_loss": 2.5 - (lr == best) / 10}
        run |= {"curve": [], "outcome": "trains", "train_seconds": 1.0}
        path = folder / recorder._sweep_name(name, lr, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run))


def test_every_variant_is_swept_first_and_each_rung_trains_at_its_own_best_rate(
    tmp_path, monkeypatch
):
    jobs = recorder.sweep_jobs()
    assert {j[1] for j in jobs} == set(ablations.SWEPT)
    assert {j[2] for j in jobs} == set(ablations.SWEEP_RATES)
    assert (
        max(ablations.SWEEP_RATES) / DEFAULT_LR["gpt"]
        >= 4
        <= DEFAULT_LR["gpt"] / min(ablations.SWEEP_RATES)
    )  # a factor of 4 or more on each side of the course's rate
    for name in ablations.STABILITY.values():  # §6's grid: two seeds a rate
        assert {j[3] for j in jobs if j[1] == name} == {0, 1}
    trained = []
    monkeypatch.setattr(recorder, "_train", lambda jobs, *a: trained.append(jobs))
    _kept_sweeps(tmp_path, best=0.008)
    recorder.run("quick", [0, 1], 2, tmp_path)
    swept_again, ladder = trained
    assert swept_again == []  # every sweep run kept
    assert {(j[1], j[2]) for j in ladder} == {(n, s) for n in ablations.LADDER for s in (0, 1)}
    assert {j[3] for j in ladder} == {0.008}


def test_the_best_rate_is_the_lowest_mean_among_rates_where_every_seed_trains():
    def run(lr, seed, loss, outcome="trains"):
        return {"lr": lr, "seed": seed, "val_loss": loss, "outcome": outcome}

    runs = [run(1e-3, 0, 2.4), run(1e-3, 1, 2.4), run(4e-3, 0, 2.2), run(4e-3, 1, 2.3)]
    assert ablations.best_rate(runs) == 4e-3
    runs[3] = run(4e-3, 1, 3.5, "stalled")  # one seed that does not train leaves its rate out
    assert ablations.best_rate(runs) == 1e-3
    assert ablations.best_rate([run(1e-3, 0, None, "diverged")]) is None


def test_a_sweep_run_says_whether_it_trained(corpus, monkeypatch):
    monkeypatch.setattr(ablations, "SWEEP_STEPS", 3)
    monkeypatch.setattr(ablations, "SWEEP_EVAL_EVERY", 3)
    run = ablations.sweep_run(ablations.LADDER["full"], corpus, TINY, 4e-3, 0)
    assert (run["steps"], run["lr"], run["seed"]) == (3, 4e-3, 0)
    assert run["outcome"] == "stalled"  # three steps: no better than the unigram yet
    unigram = ablations.unigram_nats(corpus)
    assert ablations.outcome(float("nan"), unigram, 65) == "diverged"
    assert ablations.outcome(None, unigram, 65) == "diverged"
    assert ablations.outcome(4.2, unigram, 65) == "diverged"  # no better than a uniform guess
    assert ablations.outcome(unigram - 0.005, unigram, 65) == "stalled"  # on the plateau
    assert ablations.outcome(2.0, unigram, 65) == "trains"
    assert 3.0 < ablations.unigram_nats(corpus) < math.log(65)


def test_the_scale_s_premise_is_measured_at_both_initializations(corpus):
    at = {
        (init, scaled): ablations.premise(corpus, init, scaled)
        for init in ("lab", "unit")
        for scaled in (True, False)
    }
    d_k, d_model = 32, 128
    # q.k of two vectors of d_k coordinates each of variance v has a spread of sqrt(d_k) * v
    lab_var = d_model * 0.02**2
    assert at["lab", False]["score_std"] == pytest.approx(math.sqrt(d_k) * lab_var, rel=0.2)
    assert at["unit", False]["score_std"] == pytest.approx(math.sqrt(d_k), rel=0.2)
    assert at["unit", True]["score_std"] == pytest.approx(1.0, rel=0.2)
    # the unscaled rows saturate only where the premise holds
    assert at["lab", False]["entropy_ratio"] > 0.9 > at["unit", True]["entropy_ratio"]
    assert at["unit", False]["entropy_ratio"] < 0.5


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
