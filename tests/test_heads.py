"""Notebook 05's test of the heads: each head switched off in turn (transformer_lab/heads.py), on
a fabricated mini-GPT in which one head does all the work. A head is switched off by
mean-ablation (its slice of V_bar set to its mean over the windows), so a head whose output never
changes costs nothing; the table names the working head and what it costs, the others cost
nothing; the lines and the figure 05 shows compare heads within their layer; the cell that shows
them, and what the pipeline records and 05 reads back."""

import contextlib
import io
import json
import re
from pathlib import Path

import jsonschema
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
from transformer_lab.heads import (
    HeadCosts,
    V_bar_means,
    head_ablation,
    head_switched_off,
    largest_within_layers,
)
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


def reads_itself(Q, K, V, allowed):
    """Every head reads only its own position (A the identity): V_bar = V."""
    T = Q.shape[-2]
    return V, torch.eye(T, dtype=Q.dtype).expand(*Q.shape[:-2], T, T)


def one_head_works(
    corpus, layer: int = WORKING[0], head: int = WORKING[1], constant: tuple | None = None
) -> tl.MiniGPT:
    """Every head reads its own position only (`reads_itself`), and every head but one reads
    zeros (its slice of W_V is zero, so its slice of V_bar is); that one writes the current
    character strongly into the residual stream, and W_o is fitted to predict the next character
    of training text from the stream it fills. `constant` (layer, head), in another layer: that
    head writes strongly too, but the same vector at every position of every window (its
    layer's ln1 gives a constant, its gain zero), and W_o is fitted with it there."""
    torch.manual_seed(0)
    model = tl.MiniGPT(TINY).eval().use_attention(reads_itself)
    d_k = TINY.d_k
    with torch.no_grad():
        for index, block in enumerate(model.blocks):
            for r in range(TINY.n_heads):
                rows = slice(r * d_k, (r + 1) * d_k)
                if (index, r) in ((layer, head), constant):
                    block.attn.W_V.weight[rows] = torch.randn(d_k, TINY.d_model)
                    block.attn.proj.weight[:, rows] = torch.randn(TINY.d_model, d_k)
                else:
                    block.attn.W_V.weight[rows] = 0
        if constant is not None:
            ln1 = model.blocks[constant[0]].ln1
            ln1.weight.zero_()
            ln1.bias.copy_(2 * torch.randn(TINY.d_model))
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


def flat_argmax(costs: HeadCosts) -> tuple[int, int]:
    return divmod(int(costs.costs.argmax()), TINY.n_heads)


def test_the_one_working_head_costs_what_removing_it_costs_and_the_others_nothing(corpus):
    model = one_head_works(corpus)
    inputs, targets = windows(corpus)
    costs = head_ablation(model, inputs, targets)
    assert flat_argmax(costs) == WORKING
    # what the head costs, measured another way: in a copy of the model its W_V slice is zeroed
    # and its mean over the windows, read off W_proj's input, folded into W_proj's bias
    without, (layer, head) = one_head_works(corpus), WORKING
    columns = slice(head * TINY.d_k, (head + 1) * TINY.d_k)
    proj = without.blocks[layer].attn.proj
    seen = []
    hook = proj.register_forward_hook(lambda _, inputs, out: seen.append(inputs[0]))
    loss(without, inputs, targets)
    hook.remove()
    with torch.no_grad():
        mean = seen[0][..., columns].mean(dim=(0, 1))  # (d_k,)
        without.blocks[layer].attn.W_V.weight[columns] = 0
        proj.bias += proj.weight[:, columns] @ mean
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
    assert flat_argmax(costs) == (1, 0) and costs.costs[WORKING].item() == 0.0


def test_switching_a_head_off_sets_its_slice_of_v_bar_to_its_mean_and_nothing_else():
    attention = tl.MultiHeadAttention(TINY)
    seen = []  # what W_proj reads: a forward hook sees its input after the pre-hooks
    attention.proj.register_forward_hook(lambda _, inputs, out: seen.append(inputs[0]))
    H = torch.randn(3, 5, TINY.d_model)
    attention(H)
    mean = seen[0].mean(dim=(0, 1))  # (d_model,): over the windows and the positions
    with head_switched_off(attention, 1, mean):
        attention(H)
    attention(H)
    on, off, again = seen
    d_k = TINY.d_k
    assert torch.equal(off[..., :d_k], on[..., :d_k])
    assert torch.equal(off[..., d_k:], mean[d_k:].expand(3, 5, d_k))  # the mean, not zero
    assert off[..., d_k:].abs().min() > 0 and not torch.equal(off[..., d_k:], on[..., d_k:])
    assert torch.equal(again, on)  # the hook is gone


def test_the_means_are_those_of_v_bar_over_the_windows_and_positions(corpus):
    model = one_head_works(corpus)
    inputs, _ = windows(corpus)
    seen = []
    hooks = [
        b.attn.proj.register_forward_hook(lambda _, i, out: seen.append(i[0])) for b in model.blocks
    ]
    model(inputs)
    for hook in hooks:
        hook.remove()
    expected = torch.stack([V_bar.mean(dim=(0, 1)) for V_bar in seen])  # (n_layers, d_model)
    assert torch.allclose(V_bar_means(model, inputs), expected, atol=1e-6)


def test_a_head_whose_output_never_changes_costs_nothing_switched_off(corpus):
    """Layer 2 · head 1 writes the same large vector at every position: the layers after it and
    W_o were fitted with it there. Mean-ablation leaves it in place and finds the head costs
    nothing, as it carries nothing about the text; zeroing its slice would charge the head for
    removing a constant the model relies on."""
    constant = (1, 0)
    model = one_head_works(corpus, constant=constant)
    inputs, targets = windows(corpus)
    costs = head_ablation(model, inputs, targets)
    assert costs.costs[constant].item() == pytest.approx(0.0, abs=1e-4)
    assert costs.costs[WORKING].item() > 0.01  # the head that reads the text still costs
    # zeroed instead (its W_V slice zeroed in a copy), the same head costs much more
    zeroed = one_head_works(corpus, constant=constant)
    with torch.no_grad():
        zeroed.blocks[constant[0]].attn.W_V.weight[: TINY.d_k] = 0
    assert loss(zeroed, inputs, targets) - loss(model, inputs, targets) > 1.0


def test_it_runs_the_student_s_attention_in_eval_mode_and_leaves_the_model_as_it_was(corpus):
    # PyTorch's fused kernel, then the student's; dropout on: scored in eval mode all the same
    model = one_head_works(corpus).use_attention(None).train()
    inputs, targets = windows(corpus)
    calls = []

    def students(Q, K, V, allowed):
        calls.append(Q.shape)
        return tl.scaled_dot_product_attention(Q, K, V, allowed)

    reference = head_ablation(model, inputs, targets)
    plugged = head_ablation(model.use_attention(students), inputs, targets)
    # every head on, the pass for the means, each head off: each pass a call a layer
    assert len(calls) == (1 + 1 + TINY.n_layers * TINY.n_heads) * TINY.n_layers
    assert torch.allclose(plugged.costs, reference.costs, atol=1e-5)
    assert model.training and not any(b.attn.proj._forward_pre_hooks for b in model.blocks)


def fabricated() -> tuple[HeadCosts, torch.Tensor]:
    costs = torch.tensor([[0.0, 1.25], [0.002, -0.001]])
    return HeadCosts(1.5, costs, 16, 2048), torch.tensor([[3.0, 0.9], [20.5, 7.0]])


def test_the_printed_lines_compare_each_head_with_its_own_layer_only():
    """Read across layers, the fabricated heads say "the costliest head (layer 1 · head 2)
    reads close, the furthest reader (layer 2 · head 1) costs nothing"; read within each layer,
    layer 2's furthest reader is that layer's costliest head. The lines read them within."""
    costs, distances = fabricated()
    assert largest_within_layers(costs.costs) == [1, 0]
    assert largest_within_layers(distances) == [0, 0]
    first, *layers = costs.summary(distances).splitlines()
    named = [re.findall(r"layer (\d)|head (\d)", line) for line in layers]
    assert named == [  # each line names its own layer, and heads of that layer only
        [("1", ""), ("", "2"), ("", "1")],
        [("2", ""), ("", "1")],
    ]
    assert re.findall(r"[+-]\d\.\d{3}|D \d+\.\d", layers[0]) == [
        "+1.250",
        "D 0.9",
        "D 3.0",
        "+0.000",
    ]
    assert re.findall(r"[+-]\d\.\d{3}|D \d+\.\d", layers[1]) == ["+0.002", "D 20.5"]
    # the words, tested here once
    assert costs.summary(distances) == (
        "Every head on: 1.500 nats/char on 16 validation windows (2,048 characters); a head off: "
        "its slice of V_bar set to its mean.\n"
        "  layer 1: costliest head 2, +1.250 nats/char, D 0.9; furthest reader head 1, D 3.0, "
        "+0.000 nats/char\n"
        "  layer 2: costliest head 1, +0.002 nats/char, D 20.5; also its furthest reader"
    )


def panels(fig) -> list:
    """The head-cost panels of `plot_head_costs`, a layer each, in the order of the layers."""
    return [ax for ax in fig.axes if ax.get_lines() and ax.get_lines()[0].get_label()[0] != "_"]


def test_the_figure_shows_each_head_s_distance_and_its_cost_one_panel_a_layer():
    costs, distances = fabricated()
    fig = plot_head_costs(distances, costs.costs, T=16)
    left = fig.axes[0]
    assert np.array_equal(np.asarray(left.get_images()[0].get_array()), distances.numpy())
    assert [t.get_text() for t in left.texts] == ["3.0", "0.9", "20.5", "7.0"]
    assert left.get_title().startswith("How far back")
    layers = panels(fig)
    assert [ax.get_lines()[0].get_label() for ax in layers] == ["layer 1", "layer 2"]
    for layer, ax in enumerate(layers):
        line = ax.get_lines()[0]
        assert list(line.get_xdata()) == distances[layer].tolist()
        assert list(line.get_ydata()) == costs.costs[layer].tolist()
        colour, marker = LAYER_STYLES[layer]
        assert (to_hex(line.get_color()), line.get_marker()) == (colour.lower(), marker)
        assert line.get_linestyle() == "None"
        assert [a.get_text() for a in ax.texts] == ["1", "2"]  # each head, numbered from 1
    # each layer on a cost axis of its own: layer 2's +0.002 is not flattened by layer 1's +1.25
    assert layers[1].get_ylim()[1] < 0.01 < 1.25 < layers[0].get_ylim()[1]
    # each panel names its own layer's costliest head and furthest reader
    assert [ax.get_title() for ax in layers] == [
        "layer 1: head 2 costliest, head 1 reads furthest",
        "layer 2: head 1 costliest, reads furthest",
    ]
    flipped = panels(plot_head_costs(distances.flip(1), costs.costs.flip(1), T=16))
    assert [_heads_named(ax) for ax in flipped] == [["1", "2"], ["2"]]
    fig = plot_head_costs(torch.rand(3, 2), torch.rand(3, 2), T=16)
    assert len(panels(fig)) == 3  # an odd number of layers: no empty panel left


def _heads_named(ax) -> list[str]:
    """The heads a panel's title names: its layer's costliest, then its furthest reader."""
    return re.findall(r"head (\d)", ax.get_title())


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
    assert ablation.windows == 16 and flat_argmax(ablation) == WORKING
    assert out.getvalue() == ablation.summary(distances) + "\n"
    assert largest_within_layers(ablation.costs)[0] == WORKING[1]  # layer 1's: head 2
    # every head reads itself: D 0; every head of layer 2 costs 0: the first is named
    assert [_heads_named(ax) for ax in panels(plt.gcf())] == [["2", "1"], ["1"]]


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
    assert shown[0].startswith("Recorded for run `full/cpu`, the same model, on the same 16 ")
    assert "1.500 nats/char" in shown[0]
    assert [re.findall(r"[+-]\d\.\d{3}|head \d", line) for line in shown[-2:]] == [
        ["+0.000", "+1.250", "head 2"],
        ["+0.002", "-0.001", "head 1"],  # within its layer, not across
    ]
    assert "your own model" in recorded_head_costs(None, baselines)
    assert "+1.250" not in recorded_head_costs(None, baselines)
    del run["results"]["head_costs"]
    assert recorded_head_costs("full/cpu", baselines) == (
        "No head costs are recorded for run `full/cpu` yet: the course measures them on its saved "
        "model with `make head-costs`. Your measurement above is of the same model."
    )
    assert "No head costs" in recorded_head_costs("quick/cpu", baselines)  # no such run


def test_what_the_pipeline_records_fits_the_schema_and_says_how_heads_were_switched_off(tmp_path):
    run = _recorded_run(tmp_path)
    assert run["results"]["head_costs"]["ablation"] == "mean"
    validate({"schema_version": 1, "runs": {"full/cpu": run}})
    for ablation in ("zero", None):  # costs that do not say they were mean-ablated: refused
        if ablation is None:
            del run["results"]["head_costs"]["ablation"]
        else:
            run["results"]["head_costs"]["ablation"] = ablation
        with pytest.raises(jsonschema.ValidationError):
            validate({"schema_version": 1, "runs": {"full/cpu": run}})
