"""The rest of the bug zoo: one case for each code that the cases by notebook do not reach, so
that every code a check can raise fails a test when its diagnosis breaks (see test_codes.py)."""

import pytest
import torch
import torch.nn as nn
from notebook_harness import run_exercise

import transformer_lab as tl
from checkpoints import CheckFailed, positions, stretch, training
from checkpoints import causal_mask as mask_check
from checkpoints import leak as leak_check

EX0 = ("01_attention", "ex0_read_the_model", "ex0_check")
EX1 = ("01_attention", "ex1_attention", "ex1_check")
EX2 = ("02_causal_mask", "ex2_causal_mask", "ex2_check")
EX3 = ("03_positions", "ex3_embed", "ex3_check")
EX4 = ("04_training", "ex4_metrics", "ex4_check")
EX5 = ("05_heads", "ex5_mean_distance", "ex5_check")
EXA = ("06_stretch", "ex6a_multi_head", "ex6a_check")
EXB = ("06_stretch", "ex6b_block", "ex6b_check")
SHAPE = '("B", "n_heads", "T", "d_k")'


def attention(scores="Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])", fill='float("-inf")'):
    return (
        f"scores = {scores}\n"
        f"if allowed is not None:\n    scores = scores.masked_fill(~allowed, {fill})\n"
        "A = torch.softmax(scores, dim=-1)\n"
    )


MHA = """
B, T, d_model = H.shape
Q, K, V = (X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
           for X in (self.W_Q(H), self.W_K(H), self.W_V(H)))
V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T))
out = self.drop(self.proj(V_bar.transpose(1, 2).reshape(B, T, d_model)))
"""
MISCOUNTS = {
    "ex0.count_ffn_width_d_model": -394_752,
    "ex0.count_without_block_layernorms": -2_048,
    "ex0.count_without_embedding": -8_320,
    "ex0.count_without_ffn_biases": -2_560,
    "ex0.count_without_final_layernorm": -256,
    "ex0.count_without_layernorms": -2_304,
    "ex0.count_without_output_bias": -65,
    "ex0.count_without_output_layer": -8_385,
    "ex0.count_without_proj_bias": -512,
}

CASES = {
    "Ex0: a count alone": (EX0, "return 824_897", "ex0.not_a_pair"),
    "Ex0: a float count": (EX0, f"return 824_897.0, {SHAPE}", "ex0.count_not_int"),
    **{
        f"Ex0: {expected}": (EX0, f"return {824_897 + gap}, {SHAPE}", expected)
        for expected, gap in MISCOUNTS.items()
    },
    "Ex1: softmax replaced by exp": (
        EX1,
        attention() + "A = torch.exp(scores)\nreturn A @ V, A",
        "ex1.rows_do_not_sum_to_1",
    ),
    "Ex1: K @ Q^T": (
        EX1,
        attention(scores="K @ Q.transpose(-2, -1) / math.sqrt(Q.shape[-1])") + "return A @ V, A",
        "ex1.wrong_weights",
    ),
    "Ex1: V_bar doubled": (EX1, attention() + "return 2 * (A @ V), A", "ex1.wrong_v_bar"),
    "Ex1: 1 - allowed as the mask": (
        EX1,
        attention().replace("~allowed", "1 - allowed") + "return A @ V, A",
        "ex1.mask_not_bool",
    ),
    "Ex1: T, d_k = Q.shape": (
        EX1,
        "T, d_k = Q.shape\n" + attention() + "return A @ V, A",
        "ex1.shape_unpacked",
    ),
    "Ex2: one entry above the diagonal": (
        EX2,
        "return torch.ones(T, T, dtype=torch.bool).tril(1)",
        "ex2.wrong_entries",
    ),
    "Ex3: positions counted twice": (
        EX3,
        "return tok_emb(idx) + 2 * pos_emb(torch.arange(idx.shape[1]))",
        "ex3.wrong_values",
    ),
    "Ex3: the token table detached": (
        EX3,
        "return tok_emb(idx).detach() + pos_emb(torch.arange(idx.shape[1]))",
        "ex3.token_table_detached",
    ),
    "Ex4: perplexity off by one": (
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())"
        ".item()\nreturn nats, math.exp(nats) + 1, nats / math.log(2)",
        "ex4.wrong_values",
    ),
    "Ex4: a pair": (
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())"
        ".item()\nreturn nats, math.exp(nats)",
        "ex4.not_a_triple",
    ),
    "Ex4: summed over the batch": (
        EX4,
        "log_probs = torch.log_softmax(logits, dim=-1)\n"
        "picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)\n"
        "nats = -picked.sum(0).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.summed_over_batch",
    ),
    "Ex5: an integer result": (
        EX5,
        "T = A.shape[-1]\nt = torch.arange(T)\noffsets = t[:, None] - t[None, :]\n"
        "return (A * offsets).sum(-1).mean(-1).round().long()",
        "ex5.integer_result",
    ),
    "Ex5: distances averaged over the allowed cells, unweighted": (
        EX5,
        "T = A.shape[-1]\nt = torch.arange(T, dtype=A.dtype)\n"
        "offsets = (t[:, None] - t[None, :]).clamp(min=0)\n"
        "return torch.zeros(A.shape[:-2], dtype=A.dtype) + offsets.sum() / (T * (T + 1) / 2)",
        "ex5.unweighted_allowed_cells",
    ),
    "Challenge A: the last position dropped": (
        EXA,
        MHA + "return out[:, :-1], A",
        "exa.wrong_shape",
    ),
    "Challenge A: weights halved": (EXA, MHA + "return out, A / 2", "exa.wrong_weights"),
    "Challenge A: nn.MultiheadAttention consulted": (
        EXA,
        MHA + "torch.nn.MultiheadAttention(d_model, self.n_heads, batch_first=True)(H, H, H)\n"
        "return out, A",
        "exa.uses_nn_multihead_attention",
    ),
    "Challenge B: the last position dropped": (
        EXB,
        "attended, _ = self.attn(self.ln1(H))\nH = H + attended\n"
        "return (H + self.ffn(self.ln2(H)))[:, :-1]",
        "exb.wrong_shape",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_case_fails_with_its_code(name, capsys):
    exercise, body, expected = CASES[name]
    before = (EXA[1],) if exercise is EXB else ()
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*exercise, body, before=before)
    assert failure.value.code == expected, str(failure.value)


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


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (NotAModule, "exa.not_a_module"),
        (ExtraLayer, "exa.wrong_param_count"),
        (RenamedLayer, "exa.wrong_param_names"),
    ],
)
def test_a_layer_that_is_not_built_as_given(cls, expected):
    with pytest.raises(CheckFailed) as failure:
        stretch.challenge_a(cls)
    assert failure.value.code == expected, str(failure.value)


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


def lower_triangle(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


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
    assert failure.value.code == "ex2.leak_nothing_changed"


def test_a_position_beyond_the_table():
    def shifted(idx, tok_emb, pos_emb):
        return tok_emb(idx) + pos_emb(torch.arange(1, idx.shape[1] + 1))

    with pytest.raises(CheckFailed) as failure:
        positions._case(shifted, 0, B=2, T=8, d_model=4, vocab=5, T_max=8)
    assert failure.value.code == "ex3.position_out_of_range"


def test_order_blindness_refuses_wrong_inputs_and_sees_a_changed_package(monkeypatch):
    with pytest.raises(CheckFailed) as failure:
        positions.order_blindness(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3))
    assert failure.value.code == "order.wrong_inputs"
    monkeypatch.setattr(positions, "_reference", lambda idx, tok_emb, pos_emb: tok_emb(idx))
    first = torch.tensor([[1, 2, 3, 4]])
    with pytest.raises(CheckFailed) as failure:
        positions.order_blindness(first, torch.tensor([[2, 1, 3, 4]]))
    assert failure.value.code == "order.package_changed"


def test_untrained_loss_of_a_model_that_gives_nan(corpus):
    model = tl.MiniGPT(tl.GPTConfig(d_model=32, n_heads=2, n_layers=1, T_max=32))
    with torch.no_grad():
        model.W_o.bias.fill_(float("nan"))
    with pytest.raises(CheckFailed) as failure:
        positions.untrained_loss(model, corpus, characters=256)
    assert failure.value.code == "untrained.loss_not_finite"


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
    assert failure.value.code == "check.wrong_logits_shape"
    with pytest.raises(CheckFailed) as failure:
        stretch.whole_model(other, gpt)
    assert failure.value.code == "check.logits_differ"


def test_the_trigram_comparison_at_a_real_budget():
    with pytest.raises(CheckFailed) as failure:
        training.gpt_well_below_trigram(2.0, 2.05, "quick")
    assert failure.value.code == "check.gpt_not_below_trigram"
