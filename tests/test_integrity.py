"""A grade certifies the student's own work: answers that hand an exercise to a ready-made
implementation fail with their own code however the call is reached, honest answers keep full
marks, and the mistakes students bring from other courses get a diagnosis of their own."""

import pytest
from notebook_harness import run_exercise

from checkpoints import CheckFailed

EX0 = ("01_attention", "ex0_read_the_model", "ex0_check")
EX1 = ("01_attention", "ex1_attention", "ex1_check")
EX2 = ("02_causal_mask", "ex2_causal_mask", "ex2_check")
EX3 = ("03_positions", "ex3_embed", "ex3_check")
EX4 = ("04_training", "ex4_metrics", "ex4_check")
EXA = ("06_stretch", "ex6a_multi_head", "ex6a_check")
EXB = ("06_stretch", "ex6b_block", "ex6b_check")

OWN_A = """
d_k = Q.shape[-1]
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
if allowed is not None:
    scores = scores.masked_fill(~allowed, float("-inf"))
A = torch.softmax(scores, dim=-1)
"""
SPLIT = """
B, T, d_model = H.shape
Q, K, V = (X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
           for X in (self.W_Q(H), self.W_K(H), self.W_V(H)))
"""
MERGE = "V_bar = V_bar.transpose(1, 2).reshape(B, T, d_model)\n"


def run(exercise, body):
    before = (EXA[1],) if exercise is EXB else ()
    return run_exercise(*exercise, body, before=before)


DELEGATED = {
    "Ex1: the package's attention": (
        EX1,
        "return tl.scaled_dot_product_attention(Q, K, V, allowed)",
        "ex1.uses_package_attention",
    ),
    "Ex1: imported under another name in the cell": (
        EX1,
        "from transformer_lab.attention import scaled_dot_product_attention as mine\n"
        "return mine(Q, K, V, allowed)",
        "ex1.uses_package_attention",
    ),
    "Ex1: a reference saved on the function, called through getattr": (
        EX1,
        "import functools\n"
        "f = functools.partial(getattr(tl, 'scaled_dot_' + 'product_attention'))\n"
        "return f(Q, K, V, allowed)",
        "ex1.uses_package_attention",
    ),
    "Ex1: a copy of the function object": (
        EX1,
        "import types\n"
        "ref = tl.scaled_dot_product_attention\n"
        "f = types.FunctionType(ref.__code__, ref.__globals__, 'mine', ref.__defaults__)\n"
        "return f(Q, K, V, allowed, **{'empty_row': 'error'})",
        "ex1.uses_package_attention",
    ),
    "Ex1: V_bar from F.scaled_dot_product_attention, A by hand": (
        EX1,
        OWN_A + "import torch.nn.functional as F\n"
        "return F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed), A",
        "ex1.uses_torch_attention",
    ),
    "Ex1: the aten operator, its result thrown away inside a try": (
        EX1,
        OWN_A + "try:\n    torch.ops.aten.scaled_dot_product_attention.default(Q, K, V)\n"
        "except Exception:\n    pass\nreturn A @ V, A",
        "ex1.uses_torch_attention",
    ),
    "Ex1: nn.MultiheadAttention's functional form": (
        EX1,
        OWN_A + "import torch.nn.functional as F\n"
        "try:\n    F.multi_head_attention_forward(Q, K, V, 2, 1, None, None, None, None, False, "
        "0.0, None, None)\nexcept Exception:\n    pass\nreturn A @ V, A",
        "ex1.uses_nn_multihead_attention",
    ),
    "Ex1: the package's attention in a thread": (
        EX1,
        "import threading\nbox = []\n"
        "t = threading.Thread(target=lambda: box.append(tl.scaled_dot_product_attention("
        "Q, K, V, allowed)))\nt.start()\nt.join()\nreturn box[0]",
        "ex1.uses_package_attention",
    ),
    "Ex1: the watch switched off first": (
        EX1,
        "import sys\nsys.setprofile(None)\n"
        "return tl.scaled_dot_product_attention(Q, K, V, allowed)",
        "ex1.watch_disabled",
    ),
    "Ex1: the watch switched off and put back": (
        EX1,
        "import sys\nhook = sys.getprofile()\nsys.setprofile(None)\n"
        "out = tl.scaled_dot_product_attention(Q, K, V, allowed)\nsys.setprofile(hook)\n"
        "return out",
        "ex1.watch_disabled",
    ),
    "Ex2: the package's causal_mask": (EX2, "return tl.causal_mask(T)", "ex2.uses_package_mask"),
    "Ex2: PyTorch's square subsequent mask": (
        EX2,
        "return torch.nn.Transformer.generate_square_subsequent_mask(T) == 0",
        "ex2.uses_torch_mask",
    ),
    "Ex3: the package's embed_with_positions": (
        EX3,
        "return tl.embed_with_positions(idx, tok_emb, pos_emb)",
        "ex3.uses_package_embedding",
    ),
    "Ex3: through the package's model module": (
        EX3,
        "from transformer_lab import model\n"
        "return model.embed_with_positions(idx, tok_emb, pos_emb)",
        "ex3.uses_package_embedding",
    ),
    "Challenge A: the package's forward on the student's layer": (
        EXA,
        "return tl.MultiHeadAttention.forward(self, H, need_weights=True)",
        "exa.uses_package_layer",
    ),
    "Challenge A: a package layer built inside, weights copied": (
        EXA,
        "ref = tl.MultiHeadAttention(tl.GPTConfig(d_model=H.shape[-1], n_heads=self.n_heads))\n"
        "ref.load_state_dict(self.state_dict())\nref.train(self.training)\n"
        "return ref(H, need_weights=True)",
        "exa.uses_package_layer",
    ),
    "Challenge B: the package's forward on the student's block": (
        EXB,
        "return tl.Block.forward(self, H)[0]",
        "exb.uses_package_block",
    ),
    "Challenge B: a saved reference to the package's forward": (
        EXB,
        "step = vars(tl.Block)['forward']\nreturn step(self, H)[0]",
        "exb.uses_package_block",
    ),
}


@pytest.mark.parametrize("name", DELEGATED)
def test_delegated_answer_fails_with_its_code(name, capsys):
    exercise, body, expected = DELEGATED[name]
    with pytest.raises(CheckFailed) as failure:
        run(exercise, body)
    assert failure.value.code == expected, str(failure.value)
    if not expected.endswith("watch_disabled"):
        assert "hands the work to" in failure.value.message
        assert "line" in failure.value.message  # where the call was made


HONEST = {
    "Ex1: the student's own helper functions": (
        EX1,
        "def scores_of(Q, K):\n    return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])\n"
        "def weights(s):\n    return torch.softmax(s, dim=-1)\n"
        "s = scores_of(Q, K)\nif allowed is not None:\n"
        "    s = torch.where(allowed, s, torch.tensor(float('-inf')))\n"
        "A = weights(s)\nreturn A @ V, A",
    ),
    "Ex1: the Annotated Transformer's masked_fill(mask == 0, -1e9)": (
        EX1,
        "d_k = Q.size(-1)\nscores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)\n"
        "if allowed is not None:\n    scores = scores.masked_fill(allowed == 0, -1e9)\n"
        "p_attn = scores.softmax(dim=-1)\nreturn torch.matmul(p_attn, V), p_attn",
    ),
    "Ex1: nanoGPT's scaling, F.softmax": (
        EX1,
        "att = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(K.size(-1)))\n"
        "if allowed is not None:\n    att = att.masked_fill(~allowed, float('-inf'))\n"
        "att = torch.nn.functional.softmax(att, dim=-1)\nreturn att @ V, att",
    ),
    "Challenge A: the student's own attention function reused": (
        EXA,
        "import math\n"
        + SPLIT
        + "def attend(Q, K, V, allowed):\n"
        + "\n".join("    " + line for line in OWN_A.strip().splitlines())
        + "\n    return A @ V, A\n"
        + "V_bar, A = attend(Q, K, V, tl.causal_mask(T, device=H.device))\n"
        + MERGE
        + "return self.drop(self.proj(V_bar)), A",
    ),
}


@pytest.mark.parametrize("name", HONEST)
def test_honest_answer_keeps_full_marks(name, capsys):
    exercise, body = HONEST[name]
    run(exercise, body)
    assert capsys.readouterr().out.count("✅") >= 2  # visible checks and hidden tests


DIAGNOSED = {
    "Ex1: scores multiplied by the mask": (
        EX1,
        OWN_A.replace('scores.masked_fill(~allowed, float("-inf"))', "scores * allowed")
        + "return A @ V, A",
        "ex1.mask_zeroes_scores",
    ),
    "Ex1: forbidden scores set to 0": (
        EX1,
        OWN_A.replace('float("-inf")', "0.0") + "return A @ V, A",
        "ex1.mask_zeroes_scores",
    ),
    "Ex1: d_k read from axis 1": (
        EX1,
        OWN_A.replace("Q.shape[-1]", "Q.shape[1]") + "return A @ V, A",
        "ex1.d_k_wrong_axis",
    ),
    "Ex1: d_k read as the number of positions": (
        EX1,
        OWN_A.replace("Q.shape[-1]", "Q.size(-2)") + "return A @ V, A",
        "ex1.d_k_wrong_axis",
    ),
    "Ex1: the pair in the wrong order": (EX1, OWN_A + "return A, A @ V", "ex1.pair_swapped"),
    "Ex0: full-width projections for every head": (
        EX0,
        'return 824_897 + 589_824, ("B", "n_heads", "T", "d_k")',
        "ex0.count_full_width_heads",
    ),
    "Ex4: F.cross_entropy on unflattened logits": (
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits, targets).item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.cross_entropy_not_flattened",
    ),
    "Ex4: reduction='sum'": (
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), "
        "reduction='sum').item()\nreturn nats, math.exp(min(nats, 700)), nats / math.log(2)",
        "ex4.summed_over_everything",
    ),
    "Ex3: sinusoidal positions (the Annotated Transformer's)": (
        EX3,
        "import math\nT, d = idx.shape[1], tok_emb.embedding_dim\n"
        "pos = torch.arange(T).unsqueeze(1)\n"
        "div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))\n"
        "pe = torch.zeros(T, d)\npe[:, 0::2] = torch.sin(pos * div)\n"
        "pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]\n"
        "return tok_emb(idx) + pe.to(tok_emb.weight.dtype)",
        "ex3.sinusoidal_positions",
    ),
    "Challenge A: F.dropout that ignores eval()": (
        EXA,
        SPLIT
        + "V_bar, A = tl.scaled_dot_product_attention(Q, K, V, tl.causal_mask(T))\n"
        + MERGE
        + "return torch.nn.functional.dropout(self.proj(V_bar), 0.1), A",
        "exa.dropout_in_eval",
    ),
    "Challenge A: PyTorch's mask convention (True = masked out)": (
        EXA,
        SPLIT
        + "mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)\n"
        + "V_bar, A = tl.scaled_dot_product_attention(Q, K, V, mask)\n"
        + MERGE
        + "return self.drop(self.proj(V_bar)), A",
        "exa.mask_inverted",
    ),
    "Challenge A: PyTorch's mask convention, empty rows zeroed": (
        EXA,
        SPLIT
        + "mask = ~tl.causal_mask(T)\n"
        + "V_bar, A = tl.scaled_dot_product_attention(Q, K, V, mask, empty_row='zero')\n"
        + MERGE
        + "return self.drop(self.proj(V_bar)), A",
        "exa.mask_inverted",
    ),
    "Challenge B: F.dropout that ignores eval()": (
        EXB,
        "attended, _ = self.attn(self.ln1(H))\nH = H + attended\n"
        "return H + torch.nn.functional.dropout(self.ffn(self.ln2(H)), 0.1)",
        "exb.dropout_in_eval",
    ),
}


@pytest.mark.parametrize("name", DIAGNOSED)
def test_mistake_gets_its_own_code(name, capsys):
    exercise, body, expected = DIAGNOSED[name]
    with pytest.raises(CheckFailed) as failure:
        run(exercise, body)
    assert failure.value.code == expected, str(failure.value)


def test_the_empty_row_error_names_the_inverted_mask():
    import torch

    import transformer_lab as tl

    Q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="inverted mask") as failure:
        tl.scaled_dot_product_attention(Q, Q, Q, ~tl.causal_mask(3))
    assert "padding" in str(failure.value)


def test_the_watch_leaves_no_hook_behind():
    import sys
    import threading

    before = (sys.getprofile(), threading.getprofile())
    with pytest.raises(CheckFailed):
        run(EX1, "return tl.scaled_dot_product_attention(Q, K, V, allowed)")
    assert (sys.getprofile(), threading.getprofile()) == before
