"""The notebooks' figures, drawn from fabricated numbers and read back from their Axes: the
labels a student reads, and that each series and marked point sits where its number says."""

import math
import re

import matplotlib
import numpy as np
import pytest
import torch
from paths import ROOT

from transformer_lab import causal_mask
from transformer_lab.reading.plots import (
    CVD_SAFE,
    StepClock,
    budgets_line,
    leak_line,
    loss_curves_line,
    plot_budgets,
    plot_leak,
    plot_loss_curves,
    plot_masks,
    plot_score_spread,
    plot_step_times,
    step_times_line,
)
from transformer_lab.train import Recipe, TrainHistory

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def labelled(ax) -> dict:
    """label -> artist, for every artist with a legend entry."""
    handles, labels = ax.get_legend_handles_labels()
    return dict(zip(labels, handles, strict=True))


def legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def assert_labelled(ax, title: str, x: str, y: str) -> None:
    assert title in ax.get_title()
    assert ax.get_xlabel() == x and ax.get_ylabel() == y


def test_score_spread_draws_each_d_k_beside_sqrt_d_k():
    spread = {16: {"raw": 4.1, "scaled": 1.02}, 64: {"raw": 7.9, "scaled": 0.99}}
    ax = plot_score_spread(spread).axes[0]
    assert_labelled(ax, "Spread of the attention scores", "d_k", "standard deviation of the scores")
    series = labelled(ax)
    assert legend_texts(ax) == list(series)
    raw, scaled = series["std of q·k, measured"], series["std of q·k / √d_k, measured"]
    assert list(raw.get_xdata()) == [16, 64] and list(raw.get_ydata()) == [4.1, 7.9]
    assert list(scaled.get_ydata()) == [1.02, 0.99]
    curve = series["√d_k (Equation 5, raw)"]
    assert np.allclose(curve.get_ydata(), np.sqrt(curve.get_xdata()))
    assert curve.get_xdata()[0] == 16 and curve.get_xdata()[-1] == 64
    assert list(series["1 (Equation 5, scaled)"].get_ydata()) == [1.0, 1.0]


def test_leak_draws_every_position_of_every_step_and_shades_the_earlier_ones():
    moved = {"your mask": [0.0, 0.0, 0.4, 0.2], "mask after the softmax": [0.1, 0.3, 0.4, 0.2]}
    ax = plot_leak(moved, t0=2).axes[0]
    assert_labelled(ax, "position 2", "position t", "largest change of v̄_t")
    series = labelled(ax)
    for label, changes in moved.items():
        bars = series[label]
        assert [b.get_height() for b in bars] == changes
        assert [round(b.get_x() + b.get_width() / 2) for b in bars] == [0, 1, 2, 3]
    span = series["before position 2: must be 0"]
    assert (span.get_x(), span.get_x() + span.get_width()) == (-0.5, 1.5)  # 0 and 1, not 2
    assert leak_line(moved, t0=2) == (
        "Largest change of an output: your mask: 0 before position 2, 0.4 from it on; mask after "
        "the softmax: 0.3 before position 2, 0.4 from it on."
    )


def test_masks_are_drawn_as_given_one_panel_each():
    allowed = causal_mask(4) & torch.tensor([True, True, True, False])
    fig = plot_masks({"causal mask": causal_mask(4), "allowed": allowed})
    assert [ax.get_title() for ax in fig.axes] == ["causal mask", "allowed"]
    for ax, mask in zip(fig.axes, (causal_mask(4), allowed), strict=True):
        assert np.array_equal(ax.images[0].get_array(), mask.numpy())
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("key position i", "query position t")
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["may read", "may not read"]
    assert fig.get_suptitle() == "Which keys each query may read"


def _run(mode: str, batch: int, steps: int, gpt: dict, lstm: dict) -> dict:
    def row(seeds: dict) -> dict:
        return {
            "nats": sum(seeds.values()) / len(seeds),
            "seeds": {str(s): {"nats": n} for s, n in seeds.items()},
        }

    return {
        "mode": mode,
        "device_class": "cpu",
        "provenance": {"seeds": sorted(gpt), "batch_size": batch, "steps": steps},
        "results": {"rows": {"gpt": row(gpt), "lstm": row(lstm)}},
    }


BASELINES = {
    "runs": {
        "full/cpu": _run("full", 64, 3000, {0: 1.52}, {0: 1.50}),
        "quick/cpu": _run("quick", 16, 1500, {0: 1.79, 1: 1.77, 2: 1.78}, {0: 1.56, 1: 1.55}),
    }
}


def _points(ax, colour: str, marker: str) -> list[tuple[float, float]]:
    return sorted(
        (round(float(x), 2), float(y))
        for line in ax.get_lines()
        if line.get_marker() == marker and matplotlib.colors.same_color(line.get_color(), colour)
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
    )


def test_budgets_draw_each_seed_its_range_and_the_student_s_run():
    ax = plot_budgets(BASELINES, "cpu", own=("quick", {"gpt": 1.81, "lstm": 1.54})).axes[0]
    assert_labelled(
        ax, "quick/cpu, full/cpu", "budget (batch × steps, device class)", "test loss (nats/char)"
    )
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["quick\n16 × 1,500 steps\n(cpu)", "full\n64 × 3,000 steps\n(cpu)"]
    # every seed at its budget: quick at x = 0, full at x = 1; the GPT left, the LSTM right
    assert _points(ax, "tab:blue", "o") == [
        (-0.12, 1.77),
        (-0.12, 1.78),
        (-0.12, 1.79),
        (0.88, 1.52),
    ]
    assert _points(ax, "tab:orange", "s") == [(0.12, 1.55), (0.12, 1.56), (1.12, 1.50)]
    ranges = {label: artist for label, artist in labelled(ax).items() if "range" in label}
    [gpt_range] = ranges["mini-GPT, range of the seeds"].get_segments()
    assert np.allclose(gpt_range, [[-0.12, 1.77], [-0.12, 1.79]])
    assert "LSTM, range of the seeds" in ranges  # the full budget has one seed: no range there
    assert _points(ax, "tab:blue", "*") == [(-0.12, 1.81)]  # the student's, at their budget
    assert _points(ax, "tab:orange", "X") == [(0.12, 1.54)]
    texts = legend_texts(ax)
    assert len(texts) == len(set(texts)) and {"your mini-GPT", "your LSTM"} <= set(texts)
    said = budgets_line(BASELINES, "cpu", own=("quick", {"gpt": 1.81, "lstm": 1.54}))
    assert said == (
        "Test nats/char, the mean of the recorded seeds: full (`full/cpu`): mini-GPT 1.5200, "
        "LSTM 1.5000; quick (`quick/cpu`): mini-GPT 1.7800, LSTM 1.5550; yours, quick: "
        "mini-GPT 1.8100, LSTM 1.5400."
    )


def test_a_run_at_another_budget_gets_a_place_of_its_own():
    ax = plot_budgets(BASELINES, "cpu", own=("smoke", {"gpt": 3.0, "lstm": 2.9})).axes[0]
    assert ax.get_xticklabels()[-1].get_text() == "your budget\nsmoke"
    assert _points(ax, "tab:blue", "*") == [(1.88, 3.0)]
    with pytest.raises(ValueError, match="nothing to draw"):
        plot_budgets({"runs": {}}, "cpu")


def _history(val: list, train: list) -> TrainHistory:
    recipe = Recipe(
        "adamw", 1e-3, (0.9, 0.99), 0.1, "cosine", 10, 0.1, 1.0, 0.1, 16, 200, 128, "fp32"
    )
    return TrainHistory("quick", 0, "cpu", recipe, train, val)


def test_loss_curves_draw_each_model_and_the_count_levels():
    histories = {
        "mini-GPT": _history([(0, 4.2), (200, 2.4)], [(100, 3.0), (200, 2.5)]),
        "LSTM": _history([(0, 4.1), (200, 2.2)], [(100, 2.8), (200, 2.3)]),
    }
    levels = {"uniform": math.log(65), "character trigram, test": 2.09, "5-gram, test": 1.83}
    ax = plot_loss_curves(histories, levels).axes[0]
    assert_labelled(ax, "quick budget", "step", "loss (nats/char)")
    series = labelled(ax)
    assert list(series["LSTM, validation"].get_ydata()) == [4.1, 2.2]
    assert list(series["mini-GPT, training"].get_xdata()) == [100, 200]
    for label, nats in levels.items():
        assert list(series[label].get_ydata()) == [nats, nats]
    assert legend_texts(ax) == list(series)
    assert loss_curves_line(histories, levels) == (
        "Last validation loss: mini-GPT 2.4000 (step 200), LSTM 2.2000 (step 200); lines: "
        "uniform 4.1744, character trigram, test 2.0900, 5-gram, test 1.8300 (nats/char)."
    )


def test_step_times_draw_each_step_against_the_text_length():
    seconds = {"recomputed": [0.004, 0.005, 0.006], "KV cache": [0.004, 0.001, 0.001]}
    ax = plot_step_times(seconds, prompt_length=7, T_max=8, where="cpu (this runtime)").axes[0]
    assert_labelled(
        ax,
        "measured on cpu (this runtime)",
        "length of the text after the step (characters)",
        "time of the step (ms)",
    )
    series = labelled(ax)
    assert list(series["KV cache"].get_xdata()) == [8, 9, 10]
    assert np.allclose(series["recomputed"].get_ydata(), [4, 5, 6])
    assert list(series["T_max = 8: the window slides"].get_xdata()) == [8, 8]
    assert step_times_line(seconds, prompt_length=7, T_max=8) == (
        "Median time of a step, within T_max = 8 and past it: recomputed 4.0 ms within, 5.5 ms "
        "past; KV cache 4.0 ms within, 1.0 ms past."
    )


def test_the_step_clock_times_one_step_per_forward_pass():
    model = torch.nn.Linear(2, 2)
    with StepClock(model) as clock:
        for _ in range(3):
            model(torch.zeros(1, 2))
    assert len(clock.seconds) == 3 and all(s > 0 for s in clock.seconds)
    model(torch.zeros(1, 2))  # after the `with`, nothing more is timed
    assert len(clock.seconds) == 3


def _lightness(colour) -> float:
    """CIE L* of an sRGB colour: what is left of it in grey."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in colour[:3]]
    y = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 116 * y ** (1 / 3) - 16 if y > 216 / 24389 else y * 24389 / 27


def _reads_in_grey(name: str) -> bool:
    """A colormap whose lightness rises or falls all the way: two values apart stay apart."""
    cmap = matplotlib.colormaps[name]
    steps = np.diff([_lightness(cmap(x)) for x in np.linspace(0, 1, 64)])
    return bool((steps > 0).all() or (steps < 0).all())


def test_every_colormap_the_notebooks_and_figures_use_reads_without_colour():
    """Each `cmap=` of the solutions and of the package's figures is one of CVD_SAFE, and each
    of those reads in grey; a red-blue or rainbow map does not, so the rule can tell."""
    assert all(_reads_in_grey(name) for name in CVD_SAFE)
    assert not any(_reads_in_grey(name) for name in ("RdBu", "jet", "RdYlGn", "coolwarm"))
    sources = [
        *sorted((ROOT / "solutions").glob("*.py")),
        *sorted((ROOT / "transformer_lab").glob("*.py")),
    ]
    used = {
        (path.name, name)
        for path in sources
        for name in re.findall(r"cmap=[\"']([\w_]+)[\"']", path.read_text(encoding="utf-8"))
    }
    assert used, "no colormap found: the scan has gone blind"
    assert [(f, name) for f, name in used if name not in CVD_SAFE] == []
    fig = plot_masks({"causal mask": causal_mask(3)})  # the masks' two colours, light and dark
    mask_colours = fig.axes[0].images[0].get_cmap()
    assert abs(_lightness(mask_colours(0)) - _lightness(mask_colours(1))) > 40


def test_series_differ_by_more_than_colour():
    """Each figure's series are told apart by marker, line style or hatching too."""
    histories = {
        "mini-GPT": _history([(0, 4.2), (200, 2.4)], [(100, 3.0), (200, 2.5)]),
        "LSTM": _history([(0, 4.1), (200, 2.2)], [(100, 2.8), (200, 2.3)]),
    }
    series = labelled(plot_loss_curves(histories, {}).axes[0])
    shapes = {
        (s.get_marker(), s.get_linestyle()) for label, s in series.items() if "validation" in label
    }
    assert len(shapes) == 2
    assert len({series[f"{m}, training"].get_linestyle() for m in histories}) == 2
    bars = labelled(plot_leak({"a": [0.0, 1.0], "b": [1.0, 1.0], "c": [0.5, 0.2]}, t0=1).axes[0])
    assert len({bars[label][0].get_hatch() for label in "abc"}) == 3
    times = labelled(plot_step_times({"a": [0.1, 0.2], "b": [0.1, 0.1]}, 1, 2, "cpu").axes[0])
    assert times["a"].get_linestyle() != times["b"].get_linestyle()
    budgets = plot_budgets(BASELINES, "cpu").axes[0]
    assert _points(budgets, "tab:blue", "o") and _points(budgets, "tab:orange", "s")
