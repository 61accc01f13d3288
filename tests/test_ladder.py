"""Notebook 04's ablation ladder (transformer_lab/reading/ladder.py, templates/ladder_reading.md.j2,
plots.plot_ladder), read from fabricated records as `make ablations` writes them: a clear cost,
a gain, a tie, fewer than three seeds, a ladder of another device class, none recorded; each rung
read by the rule of GPT against the LSTM, every number recomputed here; a verdict only where the
row's Δ tests its claim and each side trained at its own best rate; and the optional cell
that trains one rung, on a GPU, or says what it would cost on a CPU."""

from __future__ import annotations

import math
import statistics
from types import SimpleNamespace

import matplotlib
import pytest

from transformer_lab.reading import ladder
from transformer_lab.reading.ladder import ladder_reading, try_rung
from transformer_lab.reading.plots import plot_ladder

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RECIPE = {
    "optimizer": "adamw",
    "lr": 0.004,
    "betas": [0.9, 0.99],
    "weight_decay": 0.1,
    "schedule": "cosine",
    "warmup_steps": 75,
    "final_lr_ratio": 0.1,
    "grad_clip": 1.0,
    "dropout": 0.1,
    "batch_size": 16,
    "steps": 1500,
    "T": 128,
    "precision": "fp32",
}
FULL = {0: 1.78, 1: 1.77, 2: 1.79}
# Each rung's test loss by seed: the cases of the reading.
RUNGS = {
    "no_positions": {0: 1.99, 1: 1.985, 2: 2.00},  # a clear cost, in every seed
    "no_scaling": {0: 1.80, 1: 1.76, 2: 1.79},  # a tie: the seeds disagree
    "no_warmup": {0: 1.781, 1: 1.772, 2: 1.788},  # a tie, as its claim has it
    "one_head": {0: 1.80, 1: 1.79},  # two seeds: not settled
    "no_ffn": {0: 1.70, 1: 1.69, 2: 1.71},  # lower without the part: the claim does not hold
}
T_975 = {2: 4.303}  # Student's t, 0.975 quantile, 2 degrees of freedom, from a printed table


def ladder_record(
    rungs=RUNGS, device_class="cpu", mode="quick", seconds=250.0, swept_at=0.004
) -> dict:
    """A ladder as maintainer/ablations.py `record` writes it; each rung's sweep chose
    `swept_at` (None: an older record, with no sweep)."""

    def rung(name: str, seeds: dict) -> dict:
        parameters = 808_513 if name == "no_positions" else 824_897
        runs = {
            str(s): {
                "nats": n,
                "parameters": parameters,
                "train_seconds": seconds,
                "recipe": RECIPE,
            }
            for s, n in seeds.items()
        }
        claim = "" if name == "full" else f"§9: what {name} tests"
        swept = {} if swept_at is None else {"lr": swept_at, "warmup": "the course's", "sweep": []}
        return {"removes": f"part {name}", "claim": claim, "seeds": runs} | swept

    return {
        "mode": mode,
        "device_class": device_class,
        "provenance": {
            "git_commit": "abcdef0123456789",
            "git_dirty": False,
            "date": "2026-12-05T10:00:00+00:00",
            "device": "cpu" if device_class == "cpu" else "Tesla T4",
            "cpu": "x86_64, 2 cores, one torch thread a run",
            "torch": "2.13.0",
            "python": "3.11.7",
            "seeds": [0, 1, 2],
            "wall_seconds": 3600.0,
        },
        "rungs": {name: rung(name, seeds) for name, seeds in {"full": FULL, **rungs}.items()},
    }


def _baselines(**ladders) -> dict:
    return {"schema_version": 1, "runs": {}, "ablations": ladders}


COLUMNS = ("tests", "name", "removes", "claim", "rate", "parameters", "delta", "here")


def _row(text: str, rung: str) -> list[str]:
    """The rung's row, from its second cell on (the first, what it tests, is `_tests`)."""
    [line] = [line for line in text.splitlines() if f"| `{rung}` |" in line]
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    assert len(cells) == len(COLUMNS), cells
    return [cells[1], cells[2], cells[3], cells[5], cells[6], cells[7]]


def _cell(text: str, rung: str, column: str) -> str:
    [line] = [line for line in text.splitlines() if f"| `{rung}` |" in line]
    return [cell.strip() for cell in line.strip().strip("|").split("|")][COLUMNS.index(column)]


def _paired(rung: dict) -> tuple[float, float]:
    d = [rung[s] - FULL[s] for s in FULL]
    return statistics.fmean(d), T_975[2] * statistics.stdev(d) / math.sqrt(3)


def test_each_rung_reads_against_the_full_model_by_the_verdict_rule():
    record = ladder_record()
    read = {r.name: r for r in ladder.readings(record)}
    positions = read["no_positions"]
    rung = record["rungs"]["no_positions"]
    assert (positions.removes, positions.claim) == (rung["removes"], rung["claim"])
    assert positions.parameters == 808_513
    mean, half = _paired(RUNGS["no_positions"])
    assert positions.gap.paired and positions.delta == pytest.approx(mean)
    assert positions.gap.half_width == pytest.approx(half, rel=1e-3)
    assert positions.outcome == "cost" and positions.gap.lower_in == 3 and positions.holds
    mean, half = _paired(RUNGS["no_scaling"])
    assert half > abs(mean) and read["no_scaling"].outcome == "tie"
    # rows whose Δ tests something else than their claim say what they measured, no verdict
    assert read["no_ffn"].outcome == "gain" and read["no_ffn"].withheld == "other-test"
    assert [r.name for r in read.values() if r.holds is not None] == ["no_positions"]
    # two seeds: an interval (two means, since the seeds are not the full model's), no verdict
    assert read["one_head"].outcome == "unsettled" and not read["one_head"].gap.same_seeds
    # the words, tested here once: the table as the notebook shows it
    text = ladder_reading("quick", "cpu", _baselines(**{"quick/cpu": record}))
    assert text == (
        "**The ablation ladder** (`quick/cpu`): the mini-GPT trained again with one part taken "
        "away at a time, each rung on the complete model's seeds 0, 1, 2 (hence its batches), at "
        "the quick budget (batch 16 × 1,500 steps, 4 layers, warm-up 75 steps). Recorded by `make "
        "ablations` on cpu (x86_64, 2 cores, one torch thread a run), torch 2.13.0, commit "
        "`abcdef0123`, 2026-12-05. Every rung trained at the rate chosen for the complete model, "
        "not at its own best: a Δ here may be the rate's as much as the part's, so no row is read "
        "as a verdict.\n"
        "\n"
        "The complete model: 1.7800 (seeds 1.7700 – 1.7900, n = 3) nats, 824,897 parameters. Δ is "
        "a rung's test loss minus the complete model's (above 0: the part earns its place), with "
        "its 95% interval over the seeds, read by the rule that reads GPT against the LSTM above: "
        "three seeds at least for a verdict, and only where the row tests the claim as stated.\n"
        "\n"
        "| what this row tests | rung | takes away | the lecture's claim | rate | parameters | Δ "
        "nats (95% interval) | here |\n"
        "|---|---|---|---|---:|---:|---|---|\n"
        "| whether order matters: the model with no position information at all | `no_positions` "
        "| part no_positions | §9: what no_positions tests | 0.004 | 808,513 | +0.212 ± 0.007 | "
        "costs 0.212 nats, clear of its interval, a cost in all 3 seeds: the claim holds here |\n"
        "| dropping the 1/√d_k at the lab's std-0.02 initialization, where the unscaled scores "
        "start with a spread of about 0.3, not √d_k: the softmax starts unsaturated either way | "
        "`no_scaling` | part no_scaling | §9: what no_scaling tests | 0.004 | 824,897 | +0.003 ± "
        "0.038 | a tie: its interval holds 0; this does not test §2; the pair at unit-variance q "
        "and k below does |\n"
        "| pre-norm's final loss without the warm-up, at one rate and one budget: a loss, not a "
        "measure of stability | `no_warmup` | part no_warmup | §9: what no_warmup tests | 0.004 | "
        "824,897 | +0.000 ± 0.005 | a tie: its interval holds 0; this does not test §6's "
        "stability; the rates that train, below, do |\n"
        "| one 128-wide lookup against four 32-wide ones, the parameters the same: whether a "
        "position gains from reading several things at once | `one_head` | part one_head | §9: "
        "what one_head tests | 0.004 | 824,897 | +0.015 ± 0.025 † | not settled: 2 seeds |\n"
        "| taking away the FFN: its role and the model's capacity at once | `no_ffn` | part "
        "no_ffn | §9: what no_ffn tests | 0.004 | 824,897 | -0.080 ± 0.000 | lower by 0.080 nats "
        "without it, clear of its interval, lower in all 3 seeds; this does not separate the "
        "FFN's role from the capacity it takes away |\n"
        "\n"
        "† Taken as a difference of two means (Welch's): `one_head` was not measured on the "
        "complete model's seeds."
    )


def test_a_rung_whose_losses_do_not_move_with_the_full_model_s_is_read_as_two_means():
    # the rung's seeds run against the full model's: seed by seed the interval would widen
    crossed = {"no_scaling": {0: 1.82, 1: 1.83, 2: 1.81}}
    text = ladder_reading("quick", "cpu", _baselines(**{"quick/cpu": ladder_record(crossed)}))
    delta = _row(text, "no_scaling")[-2]
    assert delta.endswith("†")
    [rung] = ladder.readings(ladder_record(crossed))
    assert rung.gap.correlation < 0 and not rung.gap.paired
    assert delta == f"{rung.delta:+.3f} ± {rung.gap.half_width:.3f} †"
    assert f"`no_scaling` ± {rung.gap.paired_half_width:.3f}" in text  # what pairing would give
    assert rung.gap.paired_half_width > rung.gap.half_width


def test_a_ladder_of_another_device_class_says_where_it_was_measured():
    baselines = _baselines(**{"quick/cpu": ladder_record()})
    assert ladder.recorded_ladder("full", "cuda-fp16", baselines)[0] == "quick/cpu"
    text = ladder_reading("full", "cuda-fp16", baselines)
    assert (
        "It was not measured at your run's budget and device class: nothing is recorded for "
        "your `full/cuda-fp16`"
        in text
        and "Compare the signs and sizes of the Δ" in text
    )
    on_a_t4 = _baselines(
        **{"quick/cpu": ladder_record(), "quick/cuda-fp16": ladder_record(device_class="cuda-fp16")}
    )
    assert ladder.recorded_ladder("quick", "cuda-fp16", on_a_t4)[0] == "quick/cuda-fp16"


def test_no_ladder_recorded_says_how_to_record_it_and_draws_nothing():
    assert ladder.recorded_ladder("quick", "cpu", {"runs": {}}) is None
    # what it would take away, from the rungs; no empty table
    assert ladder_reading("quick", "cpu", {"runs": {}}) == (
        "**The ablation ladder is not recorded yet.** It is the mini-GPT trained again with one "
        "part taken away at a time (the position table; the 1/√d_k; pre-norm (post-norm instead); "
        "the warm-up (pre-norm); three of the four heads (one head, same d_model); the "
        "feed-forward layers), each on the complete model's seeds and at its own best rate, to "
        "measure what the lecture's claims about each part are worth. A maintainer records it "
        "with `make ablations`, which writes it into data/baselines.json; this section then shows "
        "it."
    )
    assert plot_ladder({"runs": {}}, "quick", "cpu") is None


def test_the_figure_draws_each_rung_its_interval_and_each_seed():
    fig = plot_ladder(_baselines(**{"quick/cpu": ladder_record()}), "quick", "cpu")
    ax = fig.axes[0]
    assert "(quick/cpu)" in ax.get_title() and ax.get_xlabel().startswith("Δ test loss")
    ticks = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}
    assert sorted(ticks, key=ticks.get, reverse=True) == list(RUNGS)  # the first on top
    handles, labels = ax.get_legend_handles_labels()
    assert labels[:3] == ["seed 0", "seed 1", "seed 2"]
    seeds = dict(zip(labels, handles, strict=True))
    # a marker shape per seed: told apart without colour
    assert len({seeds[f"seed {s}"].get_marker() for s in (0, 1, 2)}) == 3
    seed_1 = seeds["seed 1"]
    # seed by seed where the rung has the full model's seeds; else against its mean
    full_mean = statistics.fmean(FULL.values())
    expected = [RUNGS[r][1] - (FULL[1] if r != "one_head" else full_mean) for r in RUNGS]
    assert list(seed_1.get_xdata()) == pytest.approx(expected)
    means = [line for line in ax.lines if line.get_marker() == "D"]
    assert [m.get_xdata()[0] for m in means] == pytest.approx(
        [statistics.fmean(r.values()) - statistics.fmean(FULL.values()) for r in RUNGS.values()]
    )
    zero = [line for line in ax.lines if list(line.get_xdata()) == [0, 0]]  # the full model
    assert ax.get_legend() is not None and len(zero) == 1 and zero[0].get_label() in labels
    plt.close(fig)


def test_on_a_cpu_the_optional_rung_says_its_cost_and_trains_nothing(corpus, monkeypatch):
    from transformer_lab import ablations

    def trains(*args, **kwargs):
        raise AssertionError("trained on a CPU without TRAIN_ON_CPU")

    monkeypatch.setattr(ablations, "train_rung", trains)
    baselines = _baselines(**{"quick/cpu": ladder_record(seconds=300.0)})
    said = try_rung("no_positions", corpus, "cpu", baselines=baselines)
    assert said == (
        "Nothing was trained: this runtime has no GPU. On a CPU `no_positions` takes what the "
        "course's recorded runs of it took, 300 s a seed on cpu (x86_64, 2 cores, one torch "
        "thread a run). To train it here anyway, set `TRAIN_ON_CPU = True` and run the cell "
        "again; on a T4 runtime it trains without asking."
    )
    unrecorded = try_rung("no_positions", corpus, "cpu", baselines={"runs": {}})
    assert "No CPU time" in unrecorded and " s a seed" not in unrecorded
    with pytest.raises(
        ValueError,
        match="RUNG = 'no_position' is not a rung of the ladder: one of full, no_positions",
    ):
        try_rung("no_position", corpus, "cpu", baselines=baselines)


def test_a_trained_rung_is_set_beside_the_recorded_seeds(corpus, monkeypatch):
    from transformer_lab import ablations
    from transformer_lab.runtime import BUDGETS

    trained = []

    def stand_in(rung, corpus, budget, seed, progress=False, lr=None):
        trained.append((rung.name, budget.name, seed))
        assert lr == 0.004  # the rung's own best rate, as recorded
        return None, SimpleNamespace(stopped=None), {"nats": 2.05}

    monkeypatch.setattr(ablations, "train_rung", stand_in)
    baselines = _baselines(**{"quick/cpu": ladder_record()})
    said = try_rung("no_positions", corpus, "cpu", True, most=BUDGETS["full"], baselines=baselines)
    assert trained == [("no_positions", "quick", 0)]  # the quick budget, even from a full run
    assert said == (
        "Your `no_positions`, seed 0, quick budget, trained on cpu: 2.0500 nats. Recorded "
        "(`quick/cpu`): `no_positions` 1.9917 (seeds 1.9850 – 2.0000, n = 3); the full model "
        "1.7800 (seeds 1.7700 – 1.7900, n = 3). Yours is +0.270 nats against the recorded full "
        "model's mean, one seed on another device: the ladder's row above is the measurement; "
        "this is one more point beside it."
    )
    try_rung("no_ffn", corpus, "cpu", True, most=BUDGETS["smoke"], baselines=baselines)
    assert trained[-1] == ("no_ffn", "smoke", 0)  # a smaller budget (tests, grading) is kept
