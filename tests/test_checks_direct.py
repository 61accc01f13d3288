"""The checks a notebook calls directly, not through an exercise's checkpoint: the leak tests (of
an attention function and of a whole model), order blindness, the untrained loss, the layer and
model checks of the challenge, the trigram comparison; and what the checks leave behind (the watch
on delegated answers leaves no hook) and the package's own error for an inverted mask. Each passes
on good inputs and fails with its code on bad ones. Also the notebooks' provided cells that
demonstrate a failure: each asserts which one it shows, and shows it; 02's core path shows its
leak test failing, in a locked cell, before the student writes the mask. The checkpoints of the
exercises are run through their cells by the bug zoo (test_bugzoo.py)."""

import math
import re
import sys
import threading

import pytest
import torch
import torch.nn as nn
from notebook_harness import cell, cells, code_cells, inject, prelude, run
from paths import ROOT

import transformer_lab as tl
from checkpoints import CheckFailed, NotDoneYet, attention, positions, stretch, training
from checkpoints import causal_mask as mask_check
from checkpoints import leak as leak_check
from maintainer.core_minutes import core_code_cells
from maintainer.zoo.nb01 import EX1
from maintainer.zoo.nb06 import EX6A, EX6B, STEM, mha

# --- Exercise 0's count (notebook 01) ----------------------------------------------------------


def test_the_count_check_leaves_the_students_draws_alone(capsys):
    """The check builds the lab's model to count it: the draws a student makes after it are the
    ones the same seed gives without it."""

    def read_the_model(d_model, n_layers, T_max, vocab):
        d_ff, layer_norm = 4 * d_model, 2 * d_model
        block = 2 * layer_norm + 4 * d_model * d_model + d_model + 2 * d_model * d_ff + d_ff
        n = (vocab + T_max) * d_model + n_layers * (block + d_model) + layer_norm
        return n + d_model * vocab + vocab

    torch.manual_seed(0)
    attention.exercise_0(read_the_model)
    after_the_check = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(after_the_check, torch.rand(3))
    assert capsys.readouterr().out.startswith("✅")


# --- The leak test of an attention function (notebook 02) -------------------------------------


def lower_triangle(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def softmax_then_zero(Q, K, V, allowed):
    A = (Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5).softmax(-1) * allowed
    return A @ V, A


def unmasked(Q, K, V, allowed):
    return tl.scaled_dot_product_attention(Q, K, V)


@pytest.mark.parametrize(
    ("attention", "diagnosis", "expected_code"),
    [
        (softmax_then_zero, "after the softmax", "ex2.reads_the_future"),
        (unmasked, "above the diagonal", "ex2.leak_above_diagonal"),
    ],
)
def test_leak_test_catches_leaky_attention(attention, diagnosis, expected_code):
    with pytest.raises(CheckFailed, match=diagnosis) as failure:
        mask_check.attention_leak_test(lower_triangle, attention=attention)
    assert failure.value.code == expected_code, str(failure.value)


def test_the_leak_demo_shows_the_leak_not_the_package_mask():
    """The course's demonstration uses the package's mask: the demo is not the student's answer,
    so it shows the leak; a student's alias of that mask still fails as delegated."""
    assert mask_check.leak_demo(softmax_then_zero).code == "ex2.reads_the_future"
    assert mask_check.leak_demo(unmasked).code == "ex2.leak_above_diagonal"
    with pytest.raises(AssertionError, match="demonstrates nothing"):
        mask_check.leak_demo(tl.scaled_dot_product_attention)
    causal_mask = tl.causal_mask  # the student's alias
    with pytest.raises(CheckFailed) as failure:
        mask_check.attention_leak_test(causal_mask, attention=softmax_then_zero)
    assert failure.value.code == "ex2.uses_package_mask", str(failure.value)


def test_leak_test_passes_on_the_reference(capsys):
    assert mask_check.attention_leak_test(lower_triangle) == 0.0
    assert capsys.readouterr().out.startswith("✅")


def test_leak_test_on_an_attention_that_refuses_the_mask():
    def refuses(Q, K, V, allowed):
        raise ValueError("no mask wanted")

    with pytest.raises(CheckFailed) as failure:
        mask_check.attention_leak_test(lower_triangle, attention=refuses)
    assert failure.value.code == "ex2.leak_mask_refused"


def test_leak_test_on_an_attention_that_ignores_its_input():
    def constant(Q, K, V, allowed):
        return torch.zeros_like(V), torch.zeros(Q.shape[-2], K.shape[-2])

    with pytest.raises(CheckFailed) as failure:
        mask_check.attention_leak_test(lower_triangle, attention=constant)
    assert failure.value.code == "ex2.ignores_input"


# --- Order blindness and the untrained loss (notebook 03) -------------------------------------


def test_order_blindness_passes_and_leaves_the_global_seed_alone(corpus, capsys):
    first = torch.tensor([corpus.vocab.encode("dog bites man")])
    second = torch.tensor([corpus.vocab.encode("bites dog man")])
    state = torch.get_rng_state()
    assert positions.order_blindness(first, second) < 1e-5
    assert torch.equal(state, torch.get_rng_state())
    assert capsys.readouterr().out.startswith("✅")
    with pytest.raises(CheckFailed, match="same tokens in two orders") as failure:
        positions.order_blindness(first, torch.tensor([corpus.vocab.encode("man bites dog")]))
    assert failure.value.code == "order.not_a_reordering"


def test_order_blindness_refuses_wrong_inputs_and_sees_a_changed_package(monkeypatch):
    with pytest.raises(CheckFailed) as failure:
        positions.order_blindness(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3))
    assert failure.value.code == "order.wrong_inputs"
    monkeypatch.setattr(positions, "_reference", lambda idx, tok_emb, pos_emb: tok_emb(idx))
    first = torch.tensor([[1, 2, 3, 4]])
    with pytest.raises(CheckFailed) as failure:
        positions.order_blindness(first, torch.tensor([[2, 1, 3, 4]]))
    assert failure.value.code == "order.package_changed"


def test_a_position_beyond_the_table():
    def shifted(idx, tok_emb, pos_emb):
        return tok_emb(idx) + pos_emb(torch.arange(1, idx.shape[1] + 1))

    with pytest.raises(CheckFailed) as failure:
        positions._case(shifted, 0, B=2, T=8, d_model=4, vocab=5, T_max=8)
    assert failure.value.code == "ex3.position_out_of_range"


SMALL = tl.GPTConfig(d_model=32, n_heads=2, n_layers=1, T_max=32)


def test_untrained_loss_near_ln_65(corpus, capsys):
    nats = positions.untrained_loss(tl.MiniGPT(SMALL), corpus)
    assert abs(nats - math.log(65)) < 0.1
    assert capsys.readouterr().out.startswith("✅")


def test_untrained_loss_catches_large_logits(corpus):
    model = tl.MiniGPT(SMALL)
    with torch.no_grad():
        model.W_o.weight.mul_(100)
    with pytest.raises(CheckFailed, match="initialisation or the scale of the logits") as failure:
        positions.untrained_loss(model, corpus)
    assert failure.value.code == "untrained.loss_far_from_ln_65"


def test_untrained_loss_reports_a_stub_as_not_done(corpus):
    def stub(idx, tok_emb, pos_emb):
        raise NotImplementedError("not done yet")

    with pytest.raises(NotDoneYet, match="not done yet"):
        positions.untrained_loss(tl.MiniGPT(SMALL, embed=stub), corpus)


def test_untrained_loss_of_a_model_that_gives_nan(corpus):
    model = tl.MiniGPT(tl.GPTConfig(d_model=32, n_heads=2, n_layers=1, T_max=32))
    with torch.no_grad():
        model.W_o.bias.fill_(float("nan"))
    with pytest.raises(CheckFailed) as failure:
        positions.untrained_loss(model, corpus, characters=256)
    assert failure.value.code == "untrained.loss_not_finite"


# --- The leak test of a whole model and the trigram comparison (notebook 04) ------------------


class Lookahead(nn.Module):
    """Logits that read the next token: the leak test must see it."""

    def __init__(self, ignore_input=False):
        super().__init__()
        self.config = tl.GPTConfig(n_layers=1, T_max=16)
        self.table = nn.Embedding(65, 65)
        self.ignore_input = ignore_input

    def forward(self, idx):
        if self.ignore_input:
            return self.table.weight[None, : idx.shape[1]].expand(idx.shape[0], -1, -1)
        return self.table(idx.roll(-1, dims=1))


@pytest.mark.parametrize(
    ("model", "expected"),
    [(Lookahead(), "leak.reads_the_future"), (Lookahead(True), "leak.ignores_input")],
)
def test_model_leak_test(model, expected):
    with pytest.raises(CheckFailed) as failure:
        leak_check.model_leak_test(model)
    assert failure.value.code == expected, str(failure.value)


def test_the_trigram_comparison_at_a_real_budget():
    with pytest.raises(CheckFailed) as failure:
        training.gpt_well_below_trigram(2.0, 2.05, "quick")
    assert failure.value.code == "trigram.not_well_below"


# --- The challenge's layer, block and whole model (notebook 06) -------------------------------


class NotAModule:
    def __init__(self, config):
        pass


class ExtraLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = tl.MultiHeadAttention(config)
        self.extra = nn.Linear(1, 1)


class RenamedLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.inner = tl.MultiHeadAttention(config)


class RenamedBlock(nn.Module):
    """The block's layers, its feed-forward layer under another name."""

    def __init__(self, config):
        super().__init__()
        given = tl.Block(config)
        self.ln1, self.attn, self.ln2, self.mlp = given.ln1, given.attn, given.ln2, given.ffn


@pytest.mark.parametrize(
    ("check", "cls", "expected"),
    [
        (stretch.challenge_a, NotAModule, "ex6a.not_a_module"),
        (stretch.challenge_a, ExtraLayer, "ex6a.wrong_param_count"),
        (stretch.challenge_a, RenamedLayer, "ex6a.wrong_param_names"),
        (stretch.challenge_b, NotAModule, "ex6b.not_a_module"),
        (stretch.challenge_b, ExtraLayer, "ex6b.wrong_param_count"),
        (stretch.challenge_b, RenamedBlock, "ex6b.wrong_param_names"),
    ],
)
def test_a_layer_that_is_not_built_as_given(check, cls, expected):
    with pytest.raises(CheckFailed) as failure:
        check(cls)
    assert failure.value.code == expected, str(failure.value)


def test_block_is_graded_without_counting_a_wrong_attention_layer(capsys):
    """A broken Challenge A (no causal mask) does not fail Challenge B's checkpoint."""
    namespace: dict = {"__name__": "__notebook__"}
    leaky = inject(
        cell(STEM, EX6A.cell), mha(attention="V_bar, A = tl.scaled_dot_product_attention(Q, K, V)")
    )
    for source in (prelude(STEM), leaky, cell(STEM, EX6B.cell), cell(STEM, EX6B.check)):
        exec(compile(source, f"<{STEM}>", "exec"), namespace)
    assert capsys.readouterr().out.count("✅") == 2


def test_block_check_names_the_missing_attention_cell():
    namespace: dict = {"__name__": "__notebook__"}
    with pytest.raises(CheckFailed, match="run the cell of Challenge A first") as failure:
        for source in (prelude(STEM), cell(STEM, EX6B.cell), cell(STEM, EX6B.check)):
            exec(compile(source, f"<{STEM}>", "exec"), namespace)
    assert failure.value.code == "ex6b.attention_cell_not_run"


class Cropped(nn.Module):
    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, idx):
        return self.gpt(idx)[:, :-1]


def test_whole_model_sees_wrong_shapes_and_other_logits():
    config = tl.GPTConfig(d_model=32, n_heads=2, n_layers=1, T_max=16)
    torch.manual_seed(0)
    gpt, other = tl.MiniGPT(config), tl.MiniGPT(config)
    with pytest.raises(CheckFailed) as failure:
        stretch.whole_model(Cropped(gpt), gpt)
    assert failure.value.code == "whole.wrong_logits_shape"
    with pytest.raises(CheckFailed) as failure:
        stretch.whole_model(other, gpt)
    assert failure.value.code == "whole.logits_differ"


# --- The watch on delegated answers, and the package's inverted-mask error --------------------


def test_the_empty_row_error_names_the_inverted_mask():
    Q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="inverted mask") as failure:
        tl.scaled_dot_product_attention(Q, Q, Q, ~tl.causal_mask(3))
    assert "padding" in str(failure.value)


def test_the_watch_leaves_no_hook_behind():
    before = (sys.getprofile(), threading.getprofile())
    with pytest.raises(CheckFailed):
        run(EX1, "return tl.scaled_dot_product_attention(Q, K, V, allowed)")
    assert (sys.getprofile(), threading.getprofile()) == before


# --- The course's own demonstrations of a failure (every notebook) ---------------------------

# A provided cell that shows a failure catches it or asks a check for it.
DEMO = re.compile(r"^\s*(try:|except\b)|\bcheck\.\w*demo\(", re.M)
# ... and asserts which failure it shows: a check's code, or the words of a library's error.
ASSERTS_WHICH = re.compile(r"^\s*assert .*(\.code == \"[a-z0-9]+\.[a-z0-9_]+\"|\" in str\()", re.M)


def provided(c) -> bool:
    """A code cell of the course's own: neither a student's answer nor a check (a locked cell
    that grades nothing is provided too)."""
    meta = c.metadata.get("nbgrader", {})
    return c.cell_type == "code" and not (meta.get("solution") or meta.get("grade"))


def demonstrations() -> list[tuple[str, int]]:
    """(notebook, index of its cell) of each provided code cell that demonstrates a failure."""
    return [
        (path.stem, i)
        for path in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.py"))
        for i, c in enumerate(cells(path.stem))
        if provided(c) and DEMO.search(c.source)
    ]


def test_the_scan_finds_the_demonstrations():
    found = [cells(stem)[i].source for stem, i in demonstrations()]
    assert any("check.leak_demo(" in source for source in found)
    assert any("except ValueError" in source for source in found)


@pytest.mark.parametrize(("stem", "index"), demonstrations())
def test_each_demonstration_asserts_the_failure_it_shows(stem, index):
    """The cell names its failure, and running the notebook up to it shows that one: a demo
    that came to show another failure (or none) stops the notebook instead of teaching it."""
    source = cells(stem)[index].source
    assert ASSERTS_WHICH.search(source), f"a cell of {stem} shows a failure without saying which"
    namespace: dict = {"__name__": "__notebook__"}
    for c in code_cells(stem, MODE='"smoke"'):
        exec(compile(c.source, f"<{stem}>", "exec"), namespace)
        if c.source == source:
            return
    raise AssertionError(f"the cell of {stem} never ran: is it one of the pipeline's own?")


LOCKED_DEMO = {"grade": False, "locked": True, "solution": False}  # nbgrader's read-only cell


def test_notebook_02_shows_the_leak_test_failing_before_the_student_writes_the_mask(capsys):
    """The lecture's most useful test is seen failing once on the core path, not only ✅: before
    Exercise 2's stub, outside "After the lab", a cell runs it on a leak and prints the failure
    with its code. The cell is the course's: locked in the release, graded for nothing."""
    core = core_code_cells(cells("02_causal_mask"))
    stub = next(i for i, c in enumerate(core) if c.metadata.get("nbgrader", {}).get("solution"))
    shown = [c for c in core[:stub] if "check.leak_demo(" in c.source]
    assert len(shown) == 1, "02's core path shows no leak test failing before the stub"
    meta = shown[0].metadata.get("nbgrader", {})
    assert {key: meta.get(key) for key in LOCKED_DEMO} == LOCKED_DEMO
    namespace: dict = {"__name__": "__notebook__"}
    exec(compile(prelude("02_causal_mask"), "<02>", "exec"), namespace)
    capsys.readouterr()
    exec(compile(shown[0].source, "<02>", "exec"), namespace)
    failure = namespace["failure"]
    assert failure.code == "ex2.reads_the_future"
    assert str(failure) in capsys.readouterr().out  # the message and its code, as printed
