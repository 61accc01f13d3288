"""Reading data/baselines.json: the nearest recorded run when the student's own is missing, and
the recorded mini-GPT that notebooks 05 and 06 fall back on."""

import json
import math
import re
import shutil

import jinja2
import pytest
import torch
from paths import ROOT

from transformer_lab import MiniGPT, load_trained_gpt, save_gpt
from transformer_lab.baselines import (
    ENV,
    lab3_label,
    lab3_lstm_row,
    nearest_run,
    recorded_budgets,
)
from transformer_lab.model import GPTConfig
from transformer_lab.reading import text as rendering
from transformer_lab.reading.lecture_reading import lecture_comparison
from transformer_lab.reading.recorded import after_the_lab, recorded_distances
from transformer_lab.reading.verdict import Gap, t_quantile
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


def test_a_fresh_runtime_uses_the_recorded_model(tmp_path, monkeypatch):
    model, _ = _recorded(tmp_path, monkeypatch)
    loaded, info, run, origin = load_trained_gpt("cpu")
    assert torch.equal(loaded.W_o.weight, model.W_o.weight) and info["seed"] == 0
    assert run == "quick/cpu"  # the run key travels with the model
    assert "the course's mini-GPT trained at the quick budget (1,500 steps)" in origin
    assert "(run `quick/cpu`, seed 0, 2026-11-01)" in origin
    assert origin.endswith("; no model is recorded at the full budget")  # why not the full one


def test_the_runtime_s_own_model_comes_first(tmp_path, monkeypatch):
    _recorded(tmp_path, monkeypatch)
    mine = MiniGPT(GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16))
    save_gpt(mine, budget="smoke", seed=3)  # what notebook 04 leaves beside itself
    loaded, info, run, origin = load_trained_gpt("cpu")
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
    *_, run, origin = load_trained_gpt("cpu")
    assert run == "quick/cpu" and "no model is recorded at the full budget" in origin
    shown = recorded_distances(run)
    assert "1.0    2.0" in shown and "7.0" not in shown  # quick/cpu's, not full/cpu's
    assert "Recorded for run `quick/cpu`, the run whose model (seed 0) is loaded above." in shown


def test_recorded_distances_name_their_run_and_stay_silent_for_the_student_s_model():
    runs = {"runs": {"full/cpu": _run("full", "cpu")}}
    shown = recorded_distances("full/cpu", baselines=runs)
    assert "layer 1:" in shown and "run `full/cpu`" in shown
    assert "mode `full`" in shown and "This is not your own run" not in shown
    own = recorded_distances(None, baselines=runs)
    assert "your own model" in own and "layer 1:" not in own
    missing = recorded_distances("quick/cpu", baselines=runs)
    assert "No mean attention distances are recorded for run `quick/cpu`" in missing


def test_a_recorded_model_that_does_not_match_its_digest_is_refused(tmp_path, monkeypatch):
    _, model_file = _recorded(tmp_path, monkeypatch)
    model_file.write_bytes(model_file.read_bytes()[:-10])
    with pytest.raises(FileNotFoundError, match="SHA-256"):
        load_trained_gpt("cpu")


def _compared(
    mode: str, gpt: tuple, lstm: tuple, lab3=None, device: str = "cpu", **provenance
) -> dict:
    """A run with n-gram, GPT and LSTM rows: per-seed nats and the training seconds of each."""
    run = _run(mode, device, **provenance)

    def row(seeds: dict, seconds: float, parameters: int) -> dict:
        nats = sum(seeds.values()) / len(seeds)
        per_seed = {str(s): {"nats": n, "train_seconds": seconds} for s, n in seeds.items()}
        return {"model": "m", "nats": nats, "perplexity": 1, "bits": 1, "seeds": per_seed} | {
            "train_seconds": seconds,
            "parameters": parameters,
        }

    run["results"]["rows"] = {
        "trigram": {"model": "m", "nats": 2.09, "perplexity": 1, "bits": 1},
        "5gram": {"model": "m", "nats": 1.83, "perplexity": 1, "bits": 1},
        "gpt": row(*gpt, 824_897),
        "lstm": row(*lstm, 350_593),
    }
    if lab3 is not None:
        run["results"]["rows"]["lstm_lab3"] = {
            "model": "LSTM, d_h 256, Lab 3's own run",
            "lab": 3,
            "parameters": 350_593,
            "steps": 2000,
            "batch_size": 64,
            "train_seconds": 1.0,
            "nats": lab3,
            "perplexity": 1,
            "bits": 1,
        }
    return run


def _bullet(text: str, start: str) -> str:
    [bullet] = [line for line in text.splitlines() if line.startswith(f"- **{start}")]
    return bullet


def _fabricated(tmp_path, monkeypatch, **runs) -> None:
    """A baselines file holding `runs` ({"full/cpu": run}), where the notebooks look for one."""
    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"schema_version": 1, "runs": runs}, indent=1))
    monkeypatch.setenv(ENV, str(path))


def _ours(text: str, budget: str) -> str:
    """A budget's verdict bullet up to the lecture's: what this course's numbers read."""
    return _bullet(text, f"GPT against the retrained LSTM, {budget}").split("The lecture's:")[0]


# Student's t, 0.975 quantile, from a printed table: the 95% intervals the tests expect.
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 30: 2.042}
OUTCOME = re.compile(r"the GPT is ahead|the LSTM is ahead|a tie|not settled")


def _paired_interval(gpt: dict, lstm: dict) -> tuple[float, float]:
    """(mean gap LSTM - GPT, half-width of its 95% interval), seed by seed, worked out here."""
    d = [lstm[s] - gpt[s] for s in gpt]
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
    return mean, T_975[len(d) - 1] * sd / math.sqrt(len(d))


def _welch_interval(gpt: dict, lstm: dict) -> tuple[float, float]:
    """The same, as a difference of two means (Welch's), worked out here."""
    n_g, n_l = len(gpt), len(lstm)
    m_g, m_l = sum(gpt.values()) / n_g, sum(lstm.values()) / n_l
    a = sum((x - m_g) ** 2 for x in gpt.values()) / (n_g - 1) / n_g
    b = sum((x - m_l) ** 2 for x in lstm.values()) / (n_l - 1) / n_l
    df = (a + b) ** 2 / (a**2 / (n_g - 1) + b**2 / (n_l - 1))
    return m_l - m_g, t_quantile(0.975, df) * math.sqrt(a + b)


def _interval(gpt: dict, lstm: dict) -> tuple[float, float, bool]:
    """(mean gap, half-width, paired): seed by seed where that interval is the narrower."""
    paired, welch = _paired_interval(gpt, lstm), _welch_interval(gpt, lstm)
    return (*paired, True) if paired[1] <= welch[1] else (*welch, False)


# The lecture's evidence at the full budget: one seed each, the GPT lower by 0.025 nats, about
# the spread of the quick budget's three seeds, where the LSTM is clearly ahead.
LECTURE_FULL = _compared("full", ({0: 1.475}, 1000.0), ({0: 1.50}, 100.0), lab3=1.54)
LECTURE_QUICK = _compared(
    "quick", ({0: 1.70, 1: 1.725, 2: 1.71}, 200.0), ({0: 1.60, 1: 1.61, 2: 1.59}, 50.0)
)


def test_the_lecture_s_own_evidence_reads_not_settled(tmp_path, monkeypatch):
    _fabricated(tmp_path, monkeypatch, **{"full/cpu": LECTURE_FULL, "quick/cpu": LECTURE_QUICK})
    text = lecture_comparison("cpu")
    full = _ours(text, "full")
    assert "Here (`full/cpu`, seed 0 alone of each model): GPT 1.4750, LSTM 1.5000 nats" in full
    assert "the GPT lower by 0.025 nats" in full and "Verdict: not settled." in full
    assert "With one seed of each model, nothing here measures how far another seed" in full
    assert "quick" not in full  # no spread borrowed from the other budget
    assert "Unlike the lecture" not in _bullet(text, "GPT against the retrained LSTM, full")
    gap, half = _paired_interval({0: 1.70, 1: 1.725, 2: 1.71}, {0: 1.60, 1: 1.61, 2: 1.59})
    quick = _ours(text, "quick")
    assert f"the LSTM lower by {-gap:.3f} nats, and lower in 3 of 3 seeds" in quick
    assert f"95% interval is {-gap:.3f} ± {half:.3f} nats: Student's t = 4.30 (for 2" in quick
    assert "per-seed differences" in quick and "Verdict: the LSTM is ahead at this budget." in quick
    assert "Unlike the lecture" not in text and "agrees with the lecture" in text
    rows = _bullet(text, "The two LSTM rows")
    assert "not Lab 3's own run. This course's pipeline trained Lab 3's recipe again" in rows
    assert "2,000 steps × batch 64), to 1.5400" in rows and "lower by 0.040 nats" in rows
    counts = _bullet(text, "Both neural models against the counts, full budget")
    assert "the character 5-gram, scores 1.8300" in counts and "the LSTM, 1.5000" in counts
    assert "a margin of 0.330 nats, wide" in counts
    budget = _bullet(text, "The budget is stated")
    assert "The lecture: the GPT has 2.4 times the parameters (824,897 against 350,593)" in budget
    assert "Here: 2.4 times the parameters (824,897 against 350,593, from `full/cpu`)" in budget
    assert "10.0 times the training time at the full budget" in budget
    assert (
        "1,000 s against 100 s" in budget and "4.0 times the training time at the quick" in budget
    )
    context = _bullet(text, "Same characters")
    assert "the same 60,394 test characters" in context and "65 to 128 characters" in context


# Seeds 0, 1, 2 of the GPT at the quick budget, and the LSTM's gap over it seed by seed.
GPT_SEEDS = {0: 1.50, 1: 1.60, 2: 1.55}
QUICK_CASES = {
    "one seed each": ({0: 1.50}, {0: 0.03}, "not settled", "not settled"),
    "a consistent gap far outside its spread": (
        GPT_SEEDS,
        {0: 0.029, 1: 0.030, 2: 0.031},
        "the GPT is ahead at this budget",
        "GPT ahead",
    ),
    "the same gap inside a wide spread": (
        GPT_SEEDS,
        {0: 0.005, 1: 0.030, 2: 0.055},
        "a tie at this budget",
        "a tie",
    ),
    "mixed signs": (GPT_SEEDS, {0: 0.08, 1: -0.03, 2: 0.04}, "a tie at this budget", "a tie"),
}


@pytest.mark.parametrize("case", QUICK_CASES)
def test_a_verdict_from_the_gap_and_its_own_spread(case, tmp_path, monkeypatch):
    gpt, gap, verdict, short = QUICK_CASES[case]
    lstm = {s: gpt[s] + gap[s] for s in gpt}
    quick = _compared("quick", (gpt, 20.0), (lstm, 5.0), seeds=list(gpt))
    _fabricated(tmp_path, monkeypatch, **{"full/cpu": LECTURE_FULL, "quick/cpu": quick})
    text = lecture_comparison("cpu")
    ours = _ours(text, "quick")
    assert set(OUTCOME.findall(ours)) == {verdict.removesuffix(" at this budget")}, ours
    assert f"Verdict: {verdict}." in ours and ours.count("Verdict:") == 1
    mean_gpt, mean_lstm = sum(gpt.values()) / len(gpt), sum(lstm.values()) / len(lstm)
    assert f"GPT {mean_gpt:.4f}, LSTM {mean_lstm:.4f} nats" in ours
    assert f"the GPT lower by {mean_lstm - mean_gpt:.3f} nats" in ours
    if len(gpt) > 1:
        mean, half, _ = _interval(gpt, lstm)
        assert f"interval is {mean:.3f} ± {half:.3f} nats" in ours
        lower = sum(d > 0 for d in gap.values())
        assert f"lower in {lower} of 3 seeds" in ours
    # the closing summary: the lecture has the LSTM ahead at quick, so every other reading differs
    assert re.findall(r"at the quick budget: ([^;.]*) here", text) == [short]
    assert "at the full budget:" not in text  # full reads not settled: no ranking, as the lecture


def test_seeds_not_shared_are_compared_as_two_means(tmp_path, monkeypatch):
    """The consistent gap again, but the LSTM measured on other seeds: its batches are not the
    GPT's, the gap cannot be taken seed by seed, and the seeds' own spread decides."""
    lstm = {s + 3: n + 0.030 for s, n in GPT_SEEDS.items()}
    quick = _compared("quick", (GPT_SEEDS, 20.0), (lstm, 5.0), seeds=[0, 1, 2])
    _fabricated(tmp_path, monkeypatch, **{"quick/cpu": quick})
    ours = _ours(lecture_comparison("cpu"), "quick")
    assert "GPT seeds 0, 1, 2, LSTM seeds 3, 4, 5" in ours and "Welch" in ours
    sd = 0.05  # of 1.50, 1.60, 1.55, and of the LSTM's, 0.03 above each
    se = math.sqrt(2 * sd**2 / 3)
    assert f"interval is 0.030 ± {T_975[4] * se:.3f} nats" in ours and "(for 4.0 degrees" in ours
    assert "Verdict: a tie at this budget." in ours


def test_two_seeds_show_their_interval_and_settle_nothing(tmp_path, monkeypatch):
    gpt, lstm = {0: 1.50, 1: 1.60}, {0: 1.60, 1: 1.71}
    _fabricated(tmp_path, monkeypatch, **{"quick/cpu": _compared("quick", (gpt, 1.0), (lstm, 1.0))})
    ours = _ours(lecture_comparison("cpu"), "quick")
    mean, half = _paired_interval(gpt, lstm)
    assert f"From 2 seeds, the gap's 95% interval is {mean:.3f} ± {half:.3f} nats" in ours
    assert "t = 12.71" in ours and "Verdict: not settled." in ours


def test_a_ranking_at_the_full_budget_differs_from_the_lecture_s_tie(tmp_path, monkeypatch):
    gpt, lstm = {0: 1.53, 1: 1.54, 2: 1.52}, {0: 1.50, 1: 1.51, 2: 1.49}
    full = _compared("full", (gpt, 300.0), (lstm, 30.0), lab3=1.54, seeds=[0, 1, 2])
    _fabricated(tmp_path, monkeypatch, **{"full/cpu": full, "quick/cpu": LECTURE_QUICK})
    text = lecture_comparison("cpu")
    assert "Verdict: the LSTM is ahead at this budget." in _ours(text, "full")
    assert "at the full budget: LSTM ahead here, a tie in the lecture" in text


def test_where_the_course_differs_from_the_lecture_it_says_so():
    baselines = {
        "runs": {
            # the LSTM lower from one seed, retraining moved it by a tenth and more, only three
            # times longer
            "full/cpu": _compared("full", ({0: 1.53}, 300.0), ({0: 1.50}, 100.0), lab3=1.62),
            # the GPT lower at the quick budget, one seed each
            "quick/cpu": _compared("quick", ({0: 1.78}, 20.0), ({0: 1.80}, 10.0)),
        }
    }
    text = lecture_comparison("cpu", baselines=baselines)
    differences = text.split("differs from the lecture's:**")[1]
    # the lecture reads the counts' margin at the full budget only: at quick, nothing to differ
    counts = _bullet(text, "Both neural models against the counts, quick budget")
    assert "The lecture reads this of its own table, at the full budget, and of no other." in counts
    assert "a margin of 0.030 nats, not wide" in counts and "Unlike" not in counts
    assert "counts" not in differences
    assert "moved the LSTM by more than a few hundredths of a nat (0.120)" in differences
    assert "at the quick budget: not settled here, LSTM ahead in the lecture" in differences
    assert "at the full budget:" not in differences  # not settled: no ranking, as the lecture
    assert "the GPT took 3.0 times as long to train as the LSTM, well under" in differences
    # the GPT 0.020 lower at quick, 0.030 higher at full: it loses ground, unlike "catches up"
    assert (
        "from the quick budget to the full the GPT loses 0.050 nats to the LSTM: it" in differences
    )
    assert text.count("**Unlike the lecture.**") == 4


def test_gap_statistics_against_worked_values():
    for df, t in T_975.items():
        assert t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.960, abs=5e-4)
    paired = Gap({"0": 1.50, "1": 1.60, "2": 1.55}, {"0": 1.53, "1": 1.63, "2": 1.58})
    assert paired.paired and paired.standard_error == pytest.approx(0, abs=1e-12)
    assert paired.outcome == "GPT" and paired.degrees_of_freedom == 2
    # Welch's degrees of freedom, by hand: variances 0.0025 and 0.0001, three seeds each
    welch = Gap({"0": 1.50, "1": 1.60, "2": 1.55}, {"3": 1.60, "4": 1.62, "5": 1.61})
    a, b = 0.0025 / 3, 0.0001 / 3
    assert welch.standard_error == pytest.approx(math.sqrt(a + b))
    assert welch.degrees_of_freedom == pytest.approx((a + b) ** 2 / (a**2 / 2 + b**2 / 2))
    # differences 0.1 apart: a half-width of 4.303 * 0.1 / sqrt(3) = 0.248 nats
    inside = Gap({"0": 1.0, "1": 1.0, "2": 1.0}, {"0": 1.1, "1": 1.2, "2": 1.3})  # gap 0.2
    assert inside.half_width == pytest.approx(T_975[2] * 0.1 / math.sqrt(3), rel=1e-3)
    assert inside.outcome == "tie" and inside.lower_in == 3
    outside = Gap({"0": 1.0, "1": 1.0, "2": 1.0}, {"0": 1.2, "1": 1.3, "2": 1.4})  # gap 0.3
    assert outside.outcome == "GPT"
    assert Gap({"0": 1.2, "1": 1.3, "2": 1.4}, {"0": 1.0, "1": 1.0, "2": 1.0}).outcome == "LSTM"
    assert Gap({"0": 1.0, "1": 1.0}, {"0": 1.5, "1": 1.6}).outcome == "unsettled"  # two seeds


def test_the_committed_baselines_read_as_they_are_recorded():
    """Every number of the lecture comparison, recomputed here from data/baselines.json."""
    baselines = json.loads((ROOT / "data" / "baselines.json").read_text())  # committed
    text = lecture_comparison("cpu", baselines=baselines)
    found = recorded_budgets("cpu", baselines)
    for budget, (key, run) in found.items():
        rows = run["results"]["rows"]
        gpt, lstm = _seed_losses(rows["gpt"]), _seed_losses(rows["lstm"])
        mean_gpt, mean_lstm = sum(gpt.values()) / len(gpt), sum(lstm.values()) / len(lstm)
        counts = min(rows["trigram"]["nats"], rows["5gram"]["nats"])
        margin = _bullet(text, f"Both neural models against the counts, {budget}")
        assert f"a margin of {counts - max(mean_gpt, mean_lstm):.3f} nats" in margin
        ours = _ours(text, budget)
        assert f"GPT {mean_gpt:.4f}, LSTM {mean_lstm:.4f} nats" in ours and f"(`{key}`" in ours
        assert f"lower by {abs(mean_lstm - mean_gpt):.3f} nats" in ours
        if min(len(gpt), len(lstm)) < 3:
            expected = "not settled"
        else:
            assert set(gpt) == set(lstm)  # the pipeline trains both models on every seed
            mean, half, paired = _interval(gpt, lstm)
            assert f"interval is {abs(mean):.3f} ± {half:.3f} nats" in ours
            assert ("per-seed differences" in ours) == paired
            ahead = "the GPT is ahead" if mean > 0 else "the LSTM is ahead"
            expected = ahead if abs(mean) > half else "a tie"
        assert set(OUTCOME.findall(ours)) == {expected}
    full = found["full"][1]["results"]["rows"]
    lab3, lstm = full["lstm_lab3"]["nats"], full["lstm"]["nats"]
    assert f"{lab3:.4f} nats" in _bullet(text, "The two LSTM rows")
    assert f"by {abs(lab3 - lstm):.3f} nats" in _bullet(text, "The two LSTM rows")
    budget = _bullet(text, "The budget is stated")
    ratio = full["gpt"]["parameters"] / full["lstm"]["parameters"]
    assert f"Here: {ratio:.1f} times the parameters" in budget
    seconds = full["gpt"]["train_seconds"] / full["lstm"]["train_seconds"]
    assert f"{seconds:.1f} times the training time at the full budget" in budget


def _seed_losses(entry: dict) -> dict[str, float]:
    return {seed: s["nats"] for seed, s in entry.get("seeds", {}).items()} or {"0": entry["nats"]}


def test_the_words_live_in_the_templates(tmp_path, monkeypatch):
    """Course text is edited in templates/: a changed word there is what the notebook shows,
    and a template that names a number the code does not give fails loudly."""
    edited = tmp_path / "templates"
    shutil.copytree(rendering.TEMPLATES, edited)
    reading = edited / "lecture_reading.md.j2"
    reading.write_text(reading.read_text().replace("Verdict:", "Reading:"))
    monkeypatch.setattr(rendering, "_TEMPLATES", rendering._environment(edited))
    text = lecture_comparison("cpu", {"runs": {"full/cpu": LECTURE_FULL}})
    assert "Reading: not settled." in text and "Verdict:" not in text
    with pytest.raises(jinja2.UndefinedError, match="'p' is undefined"):
        rendering.render("provenance.md.j2", key="full/cpu", wanted="full/cpu")


def test_the_lab3_row_says_who_trained_it():
    run = _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0), lab3=1.54)
    baselines = {"runs": {"full/cpu": run}}
    label = lab3_label()
    assert lab3_lstm_row(baselines).model == label
    assert label == (
        "LSTM, d_h 256, Lab 3's recipe (Adam, constant rate), re-run by this course's pipeline"
    )
    table = after_the_lab("full", "cpu", baselines=baselines)
    assert f"| {label} |" in table and "Lab 3's own run" not in table


def test_the_lab3_label_and_reading_say_what_the_file_records():
    """The words about how the Lab 3 row trained come from its recorded recipe: a row recorded
    with AdamW and a cosine schedule is not shown as "Adam, constant rate"."""
    run = _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0), lab3=1.54)
    run["results"]["rows"]["lstm_lab3"]["recipe"] = {"optimizer": "adamw", "schedule": "cosine"}
    baselines = {"runs": {"full/cpu": run}}
    shown = lab3_lstm_row(baselines).model
    assert "(AdamW, warm-up and cosine decay)" in shown and "constant" not in shown
    assert "| LSTM, d_h 256, Lab 3's recipe (AdamW, warm-up and cosine decay)" in after_the_lab(
        "full", "cpu", baselines=baselines
    )
    reading = lecture_comparison("cpu", baselines=baselines)
    assert "trained Lab 3's recipe again (AdamW, warm-up and cosine decay, 2,000 steps" in reading


def test_a_budget_or_row_not_recorded_is_not_checked(t4):
    only_full = {"runs": {"full/cpu": _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0))}}
    text = lecture_comparison(t4, baselines=only_full)
    assert "Nothing is recorded at the quick budget" in text
    assert "`full/cpu` has no row trained with Lab 3's recipe" in text
    assert "`full/cpu`" in text  # the nearest device class stands in for the T4's
    assert "these are not" not in text  # CPU times, as the lecture's
    t4_run = _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0), device="cuda-fp16")
    on_a_t4 = {"runs": {"full/cuda-fp16": t4_run}}
    assert "The lecture's times are CPU times; these are not" in lecture_comparison(t4, on_a_t4)
    empty = lecture_comparison("cpu", baselines={"runs": {}})
    assert "Nothing is recorded at the full budget" in empty


# The recorded shape at the full budget: the seeds' losses run against each other (r < 0), and
# the gap's sign flips with the seed; at quick they move together and the LSTM leads clearly.
CROSSED_FULL = ({0: 1.531, 1: 1.512, 2: 1.522}, {0: 1.499, 1: 1.521, 2: 1.493})
TOGETHER_QUICK = ({0: 1.786, 1: 1.776, 2: 1.782}, {0: 1.563, 1: 1.553, 2: 1.567})


def _two_budgets(full=CROSSED_FULL, quick=TOGETHER_QUICK) -> dict:
    return {
        "runs": {
            "full/cpu": _compared(
                "full",
                (full[0], 300.0),
                (full[1], 60.0),
                seeds=[0, 1, 2],
                batch_size=64,
                steps=3000,
            ),
            "quick/cpu": _compared("quick", (quick[0], 30.0), (quick[1], 6.0), seeds=[0, 1, 2]),
        }
    }


def test_pairing_is_used_where_it_narrows_the_interval_and_said_where_it_does_not():
    text = lecture_comparison("cpu", _two_budgets())
    quick = _ours(text, "quick")
    mean, half, paired = _interval(*TOGETHER_QUICK)
    assert paired and f"interval is {-mean:.3f} ± {half:.3f} nats" in quick
    r = Gap(*({str(s): n for s, n in m.items()} for m in TOGETHER_QUICK)).correlation
    assert r > 0 and f"their losses move together across the seeds, r = {r:.2f}" in quick
    full = _ours(text, "full")
    mean, half, paired = _interval(*CROSSED_FULL)
    _, paired_half = _paired_interval(*CROSSED_FULL)
    assert not paired and paired_half > half
    assert f"interval is {-mean:.3f} ± {half:.3f} nats" in full and "(Welch's)" in full
    r = Gap(*({str(s): n for s, n in m.items()} for m in CROSSED_FULL)).correlation
    assert r < 0 and f"but their losses do not move together across the seeds (r = {r:.2f})" in full
    assert f"seed by seed would widen the interval to ± {paired_half:.3f} nats" in full
    assert "per-seed differences" not in full


def test_a_gap_whose_sign_flips_with_the_seed_says_so_and_one_that_keeps_it_does_not():
    text = lecture_comparison("cpu", _two_budgets())
    assert (
        "Seed by seed the sign flips: the GPT is lower in seed 1, the LSTM in seeds 0 and 2, so a "
        "single seed could have ranked them either way (the lecture's single seed had the GPT "
        "lower)." in _ours(text, "full")
    )
    assert "lower in 2 of 3 seeds" in _ours(text, "full")
    assert "sign flips" not in _ours(text, "quick")  # the LSTM lower in every seed


def test_the_trend_from_quick_to_full_is_read_against_catching_up():
    text = lecture_comparison("cpu", _two_budgets())
    trend = _bullet(text, "From the quick budget to the full")
    before = _interval(*TOGETHER_QUICK)
    after = _interval(*CROSSED_FULL)
    assert f"{before[0]:+.3f} ± {before[1]:.3f} nats at the quick budget" in trend
    assert f"{after[0]:+.3f} ± {after[1]:.3f} at the full" in trend
    assert "on 8.0 times the characters (batch 64 × 3,000 steps against 16 × 1,500)" in trend
    gained = after[0] - before[0]
    share = round(100 * gained / -before[0])
    assert f"The GPT gains {gained:.3f} nats on the LSTM between the two, {share}% of the" in trend
    assert "it catches up, as that reading has it, without passing the LSTM." in trend
    assert "Unlike" not in trend
    # the GPT ahead at full: it passes the LSTM
    passed = lecture_comparison("cpu", _two_budgets(full=(CROSSED_FULL[1], CROSSED_FULL[0])))
    assert "enough to pass it: it catches up" in _bullet(passed, "From the quick budget")
    # the gap widens: not what the lecture's reading has, and said so at the end
    wider = ({0: 1.90, 1: 1.89, 2: 1.91}, {0: 1.50, 1: 1.49, 2: 1.51})
    lost = lecture_comparison("cpu", _two_budgets(full=wider))
    assert "it does not catch up." in _bullet(lost, "From the quick budget")
    assert "**Unlike the lecture.**" in _bullet(lost, "From the quick budget")
    assert "from the quick budget to the full the GPT loses" in lost.split("lecture's:**")[1]
    only_full = lecture_comparison(
        "cpu", {"runs": {"full/cpu": _two_budgets()["runs"]["full/cpu"]}}
    )
    assert "From the quick budget" not in only_full  # one budget: no trend to read


def test_the_lab3_row_s_gap_is_told_by_the_recipes_that_differ():
    from transformer_lab.runtime import BUDGETS
    from transformer_lab.train import LAB3_RECIPE, Recipe

    run = _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0), lab3=1.62)
    rows = run["results"]["rows"]
    rows["lstm_lab3"]["recipe"] = LAB3_RECIPE.as_dict()
    rows["lstm"]["recipe"] = Recipe.of(BUDGETS["full"], lr=0.032).as_dict()
    text = _bullet(lecture_comparison("cpu", {"runs": {"full/cpu": run}}), "The two LSTM rows")
    assert "The two recorded recipes differ (Lab 3's first) in 2,000 steps against 3,000; " in text
    assert (
        "Adam against AdamW; a learning rate (at its highest) of 0.002 against 0.032, 16.0" in text
    )
    warmup = Recipe.of(BUDGETS["full"], lr=0.032).warmup_steps
    assert f"a constant rate against a warm-up of {warmup} steps, then cosine decay" in text
    assert "weight decay 0.0 against 0.1" in text and "batch" not in text.split("differ")[1][:200]
    assert "Lab 3 sets the forget-gate bias to 1.0 where the retrained LSTM keeps PyTorch's" in text
    assert "**Unlike the lecture.**" in text  # 0.120: more than a few hundredths
    del rows["lstm"]["recipe"]  # a run recorded before recipes were: nothing to contrast
    plain = lecture_comparison("cpu", {"runs": {"full/cpu": run}})
    assert "recipes differ" not in plain


def test_the_counts_margin_is_contrasted_with_the_lecture_at_the_full_budget_only():
    narrow_full = _compared("full", ({0: 1.80}, 10.0), ({0: 1.78}, 1.0))  # 5-gram 1.83: 0.030
    text = lecture_comparison("cpu", {"runs": {"full/cpu": narrow_full}})
    counts = _bullet(text, "Both neural models against the counts, full budget")
    assert "The lecture: both beat the counts by a wide margin." in counts
    assert "a margin of 0.030 nats, not wide" in counts and "**Unlike the lecture.**" in counts
    assert "beyond the few hundredths a seed or a retraining moves" not in text  # not in the data
    assert "at most 0.000 nats" in counts  # one seed each: no spread measured


def test_the_results_table_says_where_each_training_time_was_measured():
    from transformer_lab.report import ResultRow, results_markdown

    run = _compared("full", ({0: 1.47}, 10.0), ({0: 1.50}, 1.0), lab3=1.62)
    lab3 = lab3_lstm_row({"runs": {"full/cpu": run}})
    assert lab3.trained_on == "cpu"  # its run's device, where the row names none
    yours = ResultRow("mini-GPT", 5, 824_897, 3000, 64, 95.2, 1.5, 4.5, 2.2, None, "Tesla T4")
    table = results_markdown([lab3, yours])
    assert "| 1 s (cpu) |" in table and "| 95 s (Tesla T4) |" in table
    counts = ResultRow("trigram", 1, None, None, None, None, 2.09, 8.0, 3.0)
    assert "| counts | – |" in results_markdown([counts])
