"""Bug zoo of delegated answers: a grade certifies the student's own work, so an answer that
hands an exercise to a ready-made implementation (the package's, PyTorch's) fails with its own
code however the call is reached, and its message says so and names the line of the call; switching
the watch off is a mistake of its own. Honest answers that resemble the ready-made ones (the
student's own helpers, other courses' idioms) keep full marks."""

from maintainer.zoo import Mistake, Right
from maintainer.zoo.nb01 import EX1, OWN_A
from maintainer.zoo.nb02 import EX2
from maintainer.zoo.nb03 import EX3
from maintainer.zoo.nb06 import EX6A, EX6B, MERGE, SPLIT

# What the message of a delegated answer holds: what it hands the work to, and the line.
HANDED = ("hands the work to", "line")

MISTAKES = {
    "Ex1: the package's attention": Mistake(
        EX1,
        "return tl.scaled_dot_product_attention(Q, K, V, allowed)",
        "ex1.uses_package_attention",
        HANDED,
    ),
    "Ex1: imported under another name in the cell": Mistake(
        EX1,
        "from transformer_lab.attention import scaled_dot_product_attention as mine\n"
        "return mine(Q, K, V, allowed)",
        "ex1.uses_package_attention",
        HANDED,
    ),
    "Ex1: a reference saved on the function, called through getattr": Mistake(
        EX1,
        "import functools\n"
        "f = functools.partial(getattr(tl, 'scaled_dot_' + 'product_attention'))\n"
        "return f(Q, K, V, allowed)",
        "ex1.uses_package_attention",
        HANDED,
    ),
    "Ex1: a copy of the function object": Mistake(
        EX1,
        "import types\n"
        "ref = tl.scaled_dot_product_attention\n"
        "f = types.FunctionType(ref.__code__, ref.__globals__, 'mine', ref.__defaults__)\n"
        "return f(Q, K, V, allowed, **{'empty_row': 'error'})",
        "ex1.uses_package_attention",
        HANDED,
    ),
    "Ex1: V_bar from F.scaled_dot_product_attention, A by hand": Mistake(
        EX1,
        OWN_A + "import torch.nn.functional as F\n"
        "return F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed), A",
        "ex1.uses_torch_attention",
        HANDED,
    ),
    "Ex1: the aten operator, its result thrown away inside a try": Mistake(
        EX1,
        OWN_A + "try:\n    torch.ops.aten.scaled_dot_product_attention.default(Q, K, V)\n"
        "except Exception:\n    pass\nreturn A @ V, A",
        "ex1.uses_torch_attention",
        HANDED,
    ),
    "Ex1: nn.MultiheadAttention's functional form": Mistake(
        EX1,
        OWN_A + "import torch.nn.functional as F\n"
        "try:\n    F.multi_head_attention_forward(Q, K, V, 2, 1, None, None, None, None, False, "
        "0.0, None, None)\nexcept Exception:\n    pass\nreturn A @ V, A",
        "ex1.uses_nn_multihead_attention",
        HANDED,
    ),
    "Ex1: the package's attention in a thread": Mistake(
        EX1,
        "import threading\nbox = []\n"
        "t = threading.Thread(target=lambda: box.append(tl.scaled_dot_product_attention("
        "Q, K, V, allowed)))\nt.start()\nt.join()\nreturn box[0]",
        "ex1.uses_package_attention",
        HANDED,
    ),
    "Ex1: the watch switched off first": Mistake(
        EX1,
        "import sys\nsys.setprofile(None)\n"
        "return tl.scaled_dot_product_attention(Q, K, V, allowed)",
        "ex1.watch_disabled",
    ),
    "Ex1: the watch switched off and put back": Mistake(
        EX1,
        "import sys\nhook = sys.getprofile()\nsys.setprofile(None)\n"
        "out = tl.scaled_dot_product_attention(Q, K, V, allowed)\nsys.setprofile(hook)\n"
        "return out",
        "ex1.watch_disabled",
    ),
    "Ex2: the package's causal_mask": Mistake(
        EX2, "return tl.causal_mask(T)", "ex2.uses_package_mask", HANDED
    ),
    "Ex2: PyTorch's square subsequent mask": Mistake(
        EX2,
        "return torch.nn.Transformer.generate_square_subsequent_mask(T) == 0",
        "ex2.uses_torch_mask",
        HANDED,
    ),
    "Ex3: the package's embed_with_positions": Mistake(
        EX3,
        "return tl.embed_with_positions(idx, tok_emb, pos_emb)",
        "ex3.uses_package_embedding",
        HANDED,
    ),
    "Ex3: through the package's model module": Mistake(
        EX3,
        "from transformer_lab import model\n"
        "return model.embed_with_positions(idx, tok_emb, pos_emb)",
        "ex3.uses_package_embedding",
        HANDED,
    ),
    "Challenge A: the package's forward on the student's layer": Mistake(
        EX6A,
        "return tl.MultiHeadAttention.forward(self, H, need_weights=True)",
        "ex6a.uses_package_layer",
        HANDED,
    ),
    "Challenge A: a package layer built inside, weights copied": Mistake(
        EX6A,
        "ref = tl.MultiHeadAttention(tl.GPTConfig(d_model=H.shape[-1], n_heads=self.n_heads))\n"
        "ref.load_state_dict(self.state_dict())\nref.train(self.training)\n"
        "return ref(H, need_weights=True)",
        "ex6a.uses_package_layer",
        HANDED,
    ),
    "Challenge B: the package's forward on the student's block": Mistake(
        EX6B, "return tl.Block.forward(self, H)[0]", "ex6b.uses_package_block", HANDED
    ),
    "Challenge B: a saved reference to the package's forward": Mistake(
        EX6B,
        "step = vars(tl.Block)['forward']\nreturn step(self, H)[0]",
        "ex6b.uses_package_block",
        HANDED,
    ),
}

RIGHT = {
    "Ex1: the student's own helper functions": Right(
        EX1,
        "def scores_of(Q, K):\n    return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])\n"
        "def weights(s):\n    return torch.softmax(s, dim=-1)\n"
        "s = scores_of(Q, K)\nif allowed is not None:\n"
        "    s = torch.where(allowed, s, torch.tensor(float('-inf')))\n"
        "A = weights(s)\nreturn A @ V, A",
    ),
    # The Annotated Transformer's form; its -1e9 overflows float16 (nb01's table has that one).
    "Ex1: the Annotated Transformer's masked_fill(mask == 0, ...)": Right(
        EX1,
        "d_k = Q.size(-1)\nscores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)\n"
        "if allowed is not None:\n"
        "    scores = scores.masked_fill(allowed == 0, torch.finfo(scores.dtype).min)\n"
        "p_attn = scores.softmax(dim=-1)\nreturn torch.matmul(p_attn, V), p_attn",
    ),
    "Ex1: nanoGPT's scaling, F.softmax": Right(
        EX1,
        "att = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(K.size(-1)))\n"
        "if allowed is not None:\n    att = att.masked_fill(~allowed, float('-inf'))\n"
        "att = torch.nn.functional.softmax(att, dim=-1)\nreturn att @ V, att",
    ),
    "Challenge A: the student's own attention function reused": Right(
        EX6A,
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

EXERCISES = ()  # its exercises are the notebooks'
