# %% [markdown]
# # Lab 5 · Notebook 6 — Challenge: the multi-head layer and the block, written by you
#
# **Optional**, for anyone who finished the core path early. Until now the package provided
# `MultiHeadAttention` (Equation 7) and `Block` (Equation 12) and called your attention function
# from inside them. Here you write both:
#
# - **Challenge A · `MyMultiHeadAttention`** (10 min): the split into heads, attention, the
#   concatenation and $W_{\mathrm{proj}}$.
# - **Challenge B · `MyBlock`** (5 min): the pre-norm block, with its two residual connections.
#
# Then a provided cell runs the whole model on **your** blocks with the weights of the package's
# model, and an optional section checks that generating with a KV cache gives the same text as
# recomputing every step.
#
# Nothing here trains: the notebook runs in seconds on a CPU. Each checkpoint copies the
# weights of the package's layer into yours and compares the outputs.

# %% tags=["parameters"]
MODE = "auto"  # auto | full | quick | smoke | grade: how much compute the notebook spends
DEVICE = "auto"  # auto | cpu | cuda | mps
USE_DRIVE = True  # on Colab, find your model in your Google Drive; set it to False to decline

# %%
import time

import matplotlib.pyplot as plt
import torch
import torch.nn as nn

import transformer_lab as tl
from checkpoints import stretch as check
from checkpoints import yours
from transformer_lab.reading.plots import StepClock, plot_step_times, step_times_line
from transformer_lab.runtime import device_name

DEVICE, BUDGET = tl.start_notebook(MODE, DEVICE)
tl.use_drive(USE_DRIVE)  # on Colab, Google asks for your consent here

# %% [markdown]
# ## Challenge A · The multi-head layer (10 min)
#
# Each of the $n_h$ heads runs masked scaled dot-product attention with its own slices of the
# projections, and the head outputs are concatenated and mixed (Equation 7):
#
# $$\mathrm{MHA}(H) = \big[\,\bar V^{(1)} ; \dots ; \bar V^{(n_h)}\big]\, W_{\mathrm{proj}} +
#   b_{\mathrm{proj}}, \qquad \bar V^{(r)} = A^{(r)}\, H W_V^{(r)}, \qquad
#   d_k = d_{\text{model}} / n_h .$$
#
# Nobody loops over the heads. One $d_{\text{model}} \times d_{\text{model}}$ matrix computes all
# the queries at once, and head $r$ (numbered from 1, as in the equation) owns the consecutive
# columns $(r-1)\,d_k$ to $r\,d_k - 1$ of the result (numbered from 0, as in code). Cut the last axis into `(n_heads, d_k)` and move the head axis in front of the
# positions, so that it becomes one more batch dimension for the attention function:
#
# | step | shape |
# |---|---|
# | `H` | `(B, T, d_model)` |
# | `self.W_Q(H)`, then `.view(B, T, n_heads, d_k)` | `(B, T, n_heads, d_k)` |
# | `.transpose(1, 2)`: `Q`, `K`, `V` | `(B, n_heads, T, d_k)` |
# | attention with the causal mask: `V_bar`, `A` | `(B, n_heads, T, d_k)`, `(B, n_heads, T, T)` |
# | `V_bar.transpose(1, 2).reshape(B, T, d_model)`: the heads side by side | `(B, T, d_model)` |
# | `self.proj`, then `self.drop` | `(B, T, d_model)` |
#
# Write `forward(self, H)` and return the pair `(output, A)`, as the package's layer does. Use
# the package's `tl.scaled_dot_product_attention` and `tl.causal_mask`: they do what your
# functions of notebooks 01 and 02 do. Yours are kept in `my_transformer.py`: to use them,
# `pieces = yours.load(USE_DRIVE)` and call `pieces.attention.fn` and `pieces.mask.fn`.
# `__init__` is given: keep it as it is, so that the checkpoint can copy the package's weights
# into your layer by name.
#
# **Not allowed here:** the package's `tl.MultiHeadAttention` (its class or its `forward` called
# on your layer) and PyTorch's `nn.MultiheadAttention`; the attention functions above stay
# allowed.
# The checkpoint watches the calls your code makes, so an alias or a saved reference fails too.

# %% [markdown]
# <details><summary>Hint</summary>
#
# `.view(B, n_heads, T, d_k)` straight away has the right shape and the wrong content: the
# memory of a `(B, T, d_model)` tensor is laid out position by position, so that view puts pieces
# of several positions into one head. View as `(B, T, n_heads, d_k)` first, then transpose. On
# the way back, `.view` fails after a transpose (the tensor is no longer contiguous): use
# `.reshape`.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex6a_multi_head", "locked": false, "solution": true, "schema_version": 3}
class MyMultiHeadAttention(nn.Module):
    """Causal multi-head self-attention (Equation 7), the same parameters as tl.MultiHeadAttention."""

    def __init__(self, config: tl.GPTConfig):
        super().__init__()
        self.n_heads, self.d_k = config.n_heads, config.d_k
        self.W_Q = nn.Linear(config.d_model, config.d_model, bias=False)
        self.W_K = nn.Linear(config.d_model, config.d_model, bias=False)
        self.W_V = nn.Linear(config.d_model, config.d_model, bias=False)
        self.proj = nn.Linear(config.d_model, config.d_model)  # W_proj and b_proj
        self.drop = nn.Dropout(config.dropout)

    def forward(self, H):
        """H: (B, T, d_model) -> (output (B, T, d_model), A (B, n_heads, T, T))."""
        ### BEGIN SOLUTION
        B, T, d_model = H.shape

        def split(X):  # (B, T, d_model) -> (B, n_heads, T, d_k)
            return X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

        Q, K, V = split(self.W_Q(H)), split(self.W_K(H)), split(self.W_V(H))
        allowed = tl.causal_mask(T, device=H.device)  # (T, T), True where key i <= query t
        V_bar, A = tl.scaled_dot_product_attention(Q, K, V, allowed)
        V_bar = V_bar.transpose(1, 2).reshape(B, T, d_model)  # the heads side by side
        return self.drop(self.proj(V_bar)), A
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex6a_check", "locked": true, "points": 2, "solution": false, "schema_version": 3}
check.challenge_a(MyMultiHeadAttention)
### BEGIN HIDDEN TESTS
from checkpoints import stretch_hidden as hidden

hidden.challenge_a(MyMultiHeadAttention)
### END HIDDEN TESTS

# %% [markdown]
# ## Challenge B · The block (5 min)
#
# A pre-norm block (Equation 12) normalizes the *input* of each sublayer and adds the sublayer's
# output back to the stream it read from:
#
# $$H' = H + \mathrm{MHA}\big(\mathrm{LN}_1(H)\big), \qquad
#   H_{\text{out}} = H' + \mathrm{FFN}\big(\mathrm{LN}_2(H')\big).$$
#
# The residual stream $H$ itself is never normalized on its way through. The original
# transformer was post-norm (Equation 13), with the normalization on the main path, after each
# addition: $H' = \mathrm{LN}(H + \mathrm{MHA}(H))$. That is not the block of this lab.
#
# Write `forward(self, H)` of `MyBlock`, returning the new `H` only, shape `(B, T, d_model)`.
# `__init__` is given: `self.attn` is your `MyMultiHeadAttention` (it returns a pair), and
# `self.ffn` is the package's `FeedForward` (Equation 10, dropout included). The checkpoint runs
# your block on the **package's** attention layer, with the same weights, so that only the block
# is graded here; the cell after it runs both of yours together.
#
# **Not allowed here:** the package's `tl.Block` (its class or its `forward` called on your
# block).
# The checkpoint watches the calls your code makes, so an alias or a saved reference fails too.

# %% [markdown]
# <details><summary>Hint</summary>
#
# Two lines, one per sublayer, each of the form `H = H + sublayer(norm(H))`. Unpack the pair
# that `self.attn` returns. Write `H = H + ...`, not `H += ...`: the in-place form changes the
# caller's tensor.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex6b_block", "locked": false, "solution": true, "schema_version": 3}
class MyBlock(nn.Module):
    """Pre-norm transformer block (Equation 12), the same parameters as tl.Block."""

    def __init__(self, config: tl.GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = MyMultiHeadAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.ffn = tl.FeedForward(config)

    def forward(self, H):
        """H: (B, T, d_model) -> (B, T, d_model)."""
        ### BEGIN SOLUTION
        attended, _ = self.attn(self.ln1(H))
        H = H + attended  # H' = H + MHA(LN1(H))
        return H + self.ffn(self.ln2(H))  # H_out = H' + FFN(LN2(H'))
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex6b_check", "locked": true, "points": 2, "solution": false, "schema_version": 3}
check.challenge_b(MyBlock)
### BEGIN HIDDEN TESTS
from checkpoints import stretch_hidden as hidden

hidden.challenge_b(MyBlock)
### END HIDDEN TESTS

# %% [markdown]
# ## Your blocks inside the model
#
# The class below is Equation 14 around **your** blocks: it borrows the embeddings, the final
# LayerNorm and the output layer $W_o$ of a `MiniGPT` and replaces its four blocks with
# `MyBlock`s, each holding your attention layer, with the weights copied over. The weights are
# those of a trained mini-GPT: yours from notebook 04 if it can be found (on Colab in your Google
# Drive, `MyDrive/transformer-lab/`, mounted by the setup cell unless `USE_DRIVE = False`;
# else beside this notebook), otherwise the course's, trained at the full budget. The cell says
# which, at what budget (as the model's own file says), and for a recorded model which run.
#
# The check compares the logits with the package's model and runs the leak test of notebook 03
# on yours.

# %%
gpt, info, run, origin = tl.load_trained_gpt(DEVICE, use_drive=USE_DRIVE)
print(f"Using {origin}.")
pieces = yours.load(USE_DRIVE)  # your pieces from 01-03 where found, else the course's
gpt = pieces.plug(gpt)


class GPTWithMyBlocks(nn.Module):
    """The embeddings, final LayerNorm and W_o of `gpt`, around your blocks (Equation 14)."""

    def __init__(self, gpt):
        super().__init__()
        self.config, self.gpt = gpt.config, gpt
        self.my_blocks = nn.ModuleList(MyBlock(gpt.config) for _ in gpt.blocks)
        for mine, theirs in zip(self.my_blocks, gpt.blocks, strict=True):
            mine.load_state_dict(theirs.state_dict())  # same names, same shapes

    def forward(self, idx):
        H = self.gpt.drop(tl.embed_with_positions(idx, self.gpt.tok_emb, self.gpt.pos_emb))
        for block in self.my_blocks:
            H = block(H)
        return self.gpt.W_o(self.gpt.ln_f(H))  # (B, T, vocab_size)


mine = GPTWithMyBlocks(gpt).to(DEVICE).eval()
check.whole_model(mine, gpt)

# %% [markdown]
# Same weights, same logits, so the same text: both models below sample with the same seed.

# %%
N_CHARS = 200 if BUDGET.name in ("full", "quick") else 40
corpus_vocab = tl.load_corpus().vocab
prompt = corpus_vocab.encode("ROMEO:\n")
for label, model in (("package's blocks", gpt), ("your blocks", mine)):
    out = tl.generate(model, prompt, N_CHARS, temperature=0.8, seed=0, use_cache=False)
    print(f"--- {label} ---\n{corpus_vocab.decode(prompt + out.ids)}\n")

# %% [markdown]
# ## Optional · Why a KV cache gives the same text
#
# Generating one character at a time, the plain loop reruns the model on the whole prefix at
# every step, although only the last position's logits are used. With a **KV cache** each
# layer keeps the keys and values it already computed; the new character brings one query, one
# key and one value per head, and attends to the stored keys plus its own
# (`tl.generate(..., use_cache=True)`).
#
# This is exact, not an approximation, because of the causal mask: the vector of an earlier
# position $i$, in every layer, depends only on characters $1..i$. Appending a character cannot
# change it, so its keys and values stay what they were. That holds as long as the weights and
# the positions stay fixed and dropout is off. When the text outgrows $T_{\max}$ and the window
# slides, every position gets a new index and a new $p_t$ (the positions are learned and
# absolute): the stored keys are stale, and `tl.generate` starts the cache afresh, at every
# step from then on.
#
# **Predict first.** With the same seed, will the two texts be identical? The cell times both
# loops for a text that fits in $T_{\max} = 128$ characters and for one of 300. For which
# length does the cache save more time, and why?

# %%
LENGTHS = (120, 300) if BUDGET.name in ("full", "quick") else (40, 140)
texts, seconds = {}, {}
for n_chars in LENGTHS:
    for use_cache in (False, True):
        start = time.perf_counter()
        out = tl.generate(gpt, prompt, n_chars, temperature=0.8, seed=1, use_cache=use_cache)
        seconds[n_chars, use_cache] = time.perf_counter() - start
        texts[n_chars, use_cache] = corpus_vocab.decode(out.ids)
    same = texts[n_chars, True] == texts[n_chars, False]
    print(
        f"{n_chars} characters: same text {same}; without cache "
        f"{seconds[n_chars, False]:.2f} s, with cache {seconds[n_chars, True]:.2f} s "
        f"({seconds[n_chars, False] / seconds[n_chars, True]:.1f}x)"
    )

# the same check on the logits: one pass over a whole window, then one position at a time
idx = torch.tensor([prompt + out.ids[: gpt.config.T_max - len(prompt)]], device=DEVICE)
with torch.no_grad():
    full = gpt(idx)  # (1, T, vocab): every position in one pass
    cache = gpt.new_cache()
    stepwise = torch.cat([gpt(idx[:, t : t + 1], cache=cache) for t in range(idx.shape[1])], 1)
print(f"largest logit difference, cached vs recomputed: {(full - stepwise).abs().max():.1e}")

# %% [markdown]
# The longer text again, step by step: the time of each generated character, recomputed and
# with the cache, measured here, in this runtime.

# %%
step_seconds = {}
for label, use_cache in (("recomputed", False), ("KV cache", True)):
    with StepClock(gpt) as clock:  # times each forward pass of the model
        tl.generate(gpt, prompt, LENGTHS[-1], temperature=0.8, seed=1, use_cache=use_cache)
    step_seconds[label] = clock.seconds
where = f"{device_name(DEVICE)}, in this runtime"
plot_step_times(step_seconds, len(prompt), gpt.config.T_max, where)
plt.show()
print(step_times_line(step_seconds, len(prompt), gpt.config.T_max))

# %% [markdown]
# The logits agree up to rounding (the sums are done in a different order), which is why the
# sampled texts agree. While the text fits in $T_{\max}$, each cached step computes one position
# where the plain loop recomputes the whole prefix, and the cache wins clearly. Past $T_{\max}$
# the window slides at every step and the learned positions shift with it, so `tl.generate`
# restarts the cache at every step: each step recomputes a full window again, and the gain
# over the whole text shrinks to what the first $T_{\max}$ characters saved. Models that
# generate long texts with a cache use positions that do not shift (relative or rotary
# encodings) or simply stop at their context length.
#
# ### Check yourself
#
# **1.** Let $h = (1, 2, 3, 6)$, with $\gamma$ all ones, $\beta$ all zeros and $\epsilon$
# negligible. Compute $\mathrm{LN}(h)$ with Equation 11. Without computing again, what is
# $\mathrm{LN}(10h + 5)$? What does that mean for a sublayer of a pre-norm block, as the
# residual stream grows from layer to layer? Work it out on paper, then run the cell.

# %%
h = torch.tensor([1.0, 2.0, 3.0, 6.0])
mean, var = h.mean(), h.var(unbiased=False)  # Equation 11 divides by d, not d - 1
by_hand = (h - mean) / torch.sqrt(var)
layer_norm = nn.LayerNorm(4, eps=1e-12)  # gamma = 1, beta = 0 at initialization
print(f"mean {mean:.3f}, variance {var:.3f}, standard deviation {var.sqrt():.3f}")
print(f"LN(h) by hand:      {[round(x, 3) for x in by_hand.tolist()]}")
with torch.no_grad():
    print(f"nn.LayerNorm(h):    {[round(x, 3) for x in layer_norm(h).tolist()]}")
    print(f"nn.LayerNorm(10h+5): {[round(x, 3) for x in layer_norm(10 * h + 5).tolist()]}")

# %% [markdown]
# <details><summary>Answer</summary>
#
# The mean is 3 and the variance is $(4 + 1 + 0 + 9)/4 = 3.5$, so each coordinate is its
# distance from 3 divided by $\sqrt{3.5}$; the cell prints the four values. $\mathrm{LN}(10h+5)$
# is the same vector: subtracting the mean removes the $+5$, and dividing by the standard
# deviation removes the factor 10. LayerNorm keeps the pattern across the coordinates and
# throws away the overall offset and scale. In a pre-norm block each sublayer reads
# $\mathrm{LN}$ of the stream, so its input looks the same whether the stream carries one
# correction or twenty. The stream itself is never rescaled, which is why the model applies one
# final $\mathrm{LN}$ before $W_o$.
#
# </details>
#
# **2.** Challenge B's checkpoint diagnoses a post-norm block. Trace a gradient from the output
# of a 4-block stack back to its input in both arrangements: which one offers a path that passes
# through no LayerNorm and no sublayer?
#
# <details><summary>Answer</summary>
#
# Pre-norm. Unrolled, its output is $H^{(0)}$ plus the outputs of all eight sublayers, so
# $\partial H^{(4)} / \partial H^{(0)}$ contains the identity, untouched by any layer. In
# post-norm both LayerNorms of each block sit on the main path (Equation 13), so every route
# from input to output goes through eight normalizations, whose Jacobians rescale the gradient.
# Xiong et al. (2020) found that this is why the original post-norm recipe needs a careful
# learning-rate warm-up, and that pre-norm trains without one, in deeper models than ours. The
# lab's loop keeps a short one (the first 5 % of the steps); both arrangements can be trained
# well with the right schedule.
#
# Whether that holds for the mini-GPT is measured in notebook 04's "After the lab", under the
# ladder: pre-norm and post-norm, each with and without the warm-up, swept over rates, and read
# from the rates at which each trains, not from one final loss.
#
# </details>
#
# **3.** You build `MyMultiHeadAttention` with `n_heads = 1`. Does the wrong split
# `.view(B, n_heads, T, d_k)` still give wrong results?
#
# <details><summary>Answer</summary>
#
# No: with one head $d_k = d_{\text{model}}$, and `(B, 1, T, d_model)` has the same memory
# order as `(B, T, 1, d_model)`, so both views agree. The bug only shows with several heads,
# which is why the visible checkpoint tests 4 heads, and the hidden tests 8 heads and 1.
#
# </details>
