"""Notebook 05's test of the heads: each head switched off in turn (transformer_lab/heads.py), on
a fabricated mini-GPT in which one head does all the work. The table names that head and what it
costs, the others cost nothing; the line and the figure 05 shows, the cell that shows them, and
what the pipeline records and 05 reads back."""

import contextlib
import io
import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from matplotlib.colors import to_hex
from notebook_harness import cell, code_cells
from paths import ROOT

import transformer_lab as tl
from maintainer.pipeline import validate
from transformer_lab.baselines import record
from transformer_lab.heads import HeadCosts, head_ablation, head_switched_off
from transformer_lab.reading.plots import LAYER_STYLES, plot_head_costs
from transformer_lab.reading.recorded import recorded_head_costs

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TINY = tl.GPTConfig(d_model=16, n_heads=2, n_layers=2, T_max=16, dropout=0.1)
WORKING = (0, 1)  # layer 1 · head 2, counted from 0


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def one_head_works(corpus, layer: int = WORKING[0], head: int = WORKING[1]) -> tl.MiniGPT:
    """Every head but one reads zeros (its slice of W_V is zero, so its slice of V_bar is); that
    one writes strongly into the residual stream, and W_o is fitted to predict the next
    character of training text from the stream it fills."""
    torch.manual_seed(0)
    model = tl.MiniGPT(TINY).eval()
    d_k = TINY.d_k
    with torch.no_grad():
        for index, block in enumerate(model.blocks):
            for r in range(TINY.n_heads):
                rows = slice(r * d_k, (r + 1) * d_k)
                if (index, r) == (layer, head):
                    block.attn.W_V.weight[rows] = torch.randn(d_k, TINY.d_model)
                    block.attn.proj.weight[:, rows] = torch.randn(TINY.d_model, d_k)
                else:
                    block.attn.W_V.weight[rows] = 0
        inputs, targets = tl.sample_batch(
            corpus.train, 64, TINY.T_max, torch.Generator().manual_seed(1)
        )
        streams = []
        hook = model.ln_f.register_forward_hook(lambda *args: streams.append(args[-1]))
        model(inputs)
        hook.remove()
    optimizer = torch.optim.Adam(model.W_o.parameters(), lr=0.05)
    for _ in range(150):
        fitted = F.cross_entropy(model.W_o(streams[0]).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        fitted.backward()
        optimizer.step()
    return model


def windows(corpus, n: int = 8):
    return tl.sample_batch(corpus.val, n, TINY.T_max, torch.Generator().manual_seed(0))


def loss(model, inputs, targets) -> float:
    with torch.no_grad():
        logits = model.eval()(inputs)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()


def test_the_one_working_head_costs_what_removing_it_costs_and_the_others_nothing(corpus):
    model = one_head_works(corpus)
    inputs, targets = windows(corpus)
    costs = head_ablation(model, inputs, targets)
    assert costs.costliest() == WORKING
    # what the head costs, measured another way: its W_V slice zeroed in a copy of the model
    without, (layer, head) = one_head_works(corpus), WORKING
    with torch.no_grad():
        without.blocks[layer].attn.W_V.weight[head * TINY.d_k : (head + 1) * TINY.d_k] = 0
    expected = loss(without, inputs, targets) - loss(model, inputs, targets)
    assert expected > 0.05  # the fabricated head matters
    assert costs.costs[WORKING].item() == pytest.approx(expected, abs=1e-5)
    assert costs.nats == pytest.approx(loss(model, inputs, targets), abs=1e-6)
    others = costs.costs.flatten().tolist()
    others.pop(WORKING[0] * TINY.n_heads + WORKING[1])
    assert others == [0.0, 0.0, 0.0]
    assert (costs.windows, costs.characters) == (8, 8 * TINY.T_max)


def test_another_head_at_work_is_named_instead(corpus):
    """The wrong case: the table follows the head that works, not a fixed place."""
    costs = head_ablation(one_head_works(corpus, layer=1, head=0), *windows(corpus))
    assert costs.costliest() == (1, 0) and costs.costs[WORKING].item() == 0.0


def test_switching_a_head_off_zeroes_its_slice_of_v_bar_and_nothing_else():
    attention = tl.MultiHeadAttention(TINY)
    seen = []  # what W_proj reads: a forward hook sees its input after the pre-hooks
    attention.proj.register_forward_hook(lambda _, inputs, out: seen.append(inputs[0]))
    H = torch.randn(3, 5, TINY.d_model)
    attention(H)
    with head_switched_off(attention, 1):
        attention(H)
    attention(H)
    on, off, again = seen
    d_k = TINY.d_k
    assert torch.equal(off[..., :d_k], on[..., :d_k]) and not off[..., d_k:].any()
    assert on[..., d_k:].abs().sum() > 0 and torch.equal(again, on)  # the hook is gone


def test_it_runs_the_student_s_attention_in_eval_mode_and_leaves_the_model_as_it_was(corpus):
    model = one_head_works(corpus).train()  # dropout on: scored in eval mode all the same
    inputs, targets = windows(corpus)
    calls = []

    def students(Q, K, V, allowed):
        calls.append(Q.shape)
        return tl.scaled_dot_product_attention(Q, K, V, allowed)

    reference = head_ablation(model, inputs, targets)
    plugged = head_ablation(model.use_attention(students), inputs, targets)
    assert len(calls) == (TINY.n_layers * TINY.n_heads + 1) * TINY.n_layers
    assert torch.allclose(plugged.costs, reference.costs, atol=1e-5)
    assert model.training and not any(b.attn.proj._forward_pre_hooks for b in model.blocks)


def fabricated() -> tuple[HeadCosts, torch.Tensor]:
    costs = torch.tensor([[0.0, 1.25], [0.002, -0.001]])
    return HeadCosts(1.5, costs, 16, 2048), torch.tensor([[3.0, 0.9], [20.5, 7.0]])


def test_the_printed_line_names_the_costliest_and_the_furthest_reading_head():
    costs, distances = fabricated()
    assert costs.summary(distances) == (
        "Every head on: 1.500 nats/char on 16 validation windows (2,048 characters). Costliest "
        "head off: layer 1 · head 2, +1.250 nats/char, D 0.9. Furthest-reading head: layer 2 · "
        "head 1, D 20.5, +0.002 nats/char."
    )


def test_the_figure_shows_each_head_s_distance_and_its_cost_a_colour_and_a_marker_a_layer():
    costs, distances = fabricated()
    fig = plot_head_costs(distances, costs.costs, T=16)
    left, right = fig.axes[:2]
    assert np.array_equal(np.asarray(left.get_images()[0].get_array()), distances.numpy())
    assert [t.get_text() for t in left.texts] == ["3.0", "0.9", "20.5", "7.0"]
    assert "How far back each head reads" in left.get_title()
    assert right.get_xlabel() == "mean distance D of the head (characters)"
    assert right.get_ylabel() == "loss, head off − every head on (nats/char)"
    lines = {line.get_label(): line for line in right.get_lines() if line.get_label()[0] != "_"}
    assert list(lines) == ["layer 1", "layer 2"]
    for layer, line in enumerate(lines.values()):
        assert list(line.get_xdata()) == distances[layer].tolist()
        assert list(line.get_ydata()) == costs.costs[layer].tolist()
        colour, marker = LAYER_STYLES[layer]
        assert (to_hex(line.get_color()), line.get_marker()) == (colour.lower(), marker)
        assert line.get_linestyle() == "None"
    assert [a.get_text() for a in right.texts] == [
        "layer 1 · head 2: costliest",
        "layer 2 · head 1: reads furthest back",
    ]
    flipped = plot_head_costs(distances.flip(0), costs.costs.flip(0), T=16).axes[1]
    assert [a.get_text() for a in flipped.texts] == [
        "layer 2 · head 2: costliest",
        "layer 1 · head 1: reads furthest back",
    ]
    one = plot_head_costs(torch.tensor([[1.0, 9.0]]), torch.tensor([[0.1, 0.5]]), T=16).axes[1]
    assert [a.get_text() for a in one.texts] == ["layer 1 · head 2: costliest, reads furthest back"]


def test_notebook_05_s_cell_shows_the_figure_and_the_line_for_the_head_that_works(corpus):
    """The cell of 05 that switches the heads off, run as the notebook runs it on a model whose
    one working head is layer 1 · head 2."""
    (source,) = [c.source for c in code_cells("05_heads") if "head_ablation" in c.source]
    namespace = {"tl": tl, "torch": torch, "plt": plt, "plot_head_costs": plot_head_costs}
    exec(cell("05_heads", "ex5_mean_distance"), namespace)  # the solution of Exercise 5
    namespace |= {"model": one_head_works(corpus).eval(), "corpus": corpus}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(source, namespace)
    ablation, distances = namespace["ablation"], namespace["distances"]
    assert ablation.windows == 16 and ablation.costliest() == WORKING
    assert out.getvalue() == ablation.summary(distances) + "\n"
    assert "Costliest head off: layer 1 · head 2, +" in out.getvalue()
    assert plt.gcf().axes[1].get_title() == "What each head costs when it alone is switched off"


def _recorded_run(tmp_path: Path) -> dict:
    """The committed `full/cpu` run, its results those 05's maintainer cell records."""
    costs, distances = fabricated()
    results = tmp_path / "results.json"
    record(results, {"mean_attention_distance": distances.tolist()} | costs.record())
    run = json.loads((ROOT / "data" / "baselines.json").read_text())["runs"]["full/cpu"]
    return run | {"results": json.loads(results.read_text())}


def test_the_recorded_costs_are_shown_beside_their_own_model_only(tmp_path):
    run = _recorded_run(tmp_path)
    baselines = {"schema_version": 1, "runs": {"full/cpu": run}}
    shown = recorded_head_costs("full/cpu", baselines).splitlines()
    assert shown[0] == (
        "Recorded for run `full/cpu`, the same model, on the same 16 validation windows: the loss "
        "with every head on, 1.500 nats/char, and what each head costs when it alone is switched "
        "off. They should match yours above apart from rounding."
    )
    assert shown[-2:] == ["  layer 1   +0.000  +1.250", "  layer 2   +0.002  -0.001"]
    assert "your own model" in recorded_head_costs(None, baselines)
    assert "+1.250" not in recorded_head_costs(None, baselines)
    del run["results"]["head_costs"]
    assert recorded_head_costs("full/cpu", baselines) == (
        "No head costs are recorded for run `full/cpu` yet: the course measures them on its saved "
        "model with `make head-costs`. Your measurement above is of the same model."
    )
    assert "No head costs" in recorded_head_costs("quick/cpu", baselines)  # no such run


def test_what_the_pipeline_records_fits_the_schema(tmp_path):
    validate({"schema_version": 1, "runs": {"full/cpu": _recorded_run(tmp_path)}})
