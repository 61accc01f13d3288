# %% [markdown]
# # Lab 5 · Notebook 1 — Scaled dot-product attention
#
# Part A builds a small GPT piece by piece: read the model (Exercise 0), then write its
# attention (Exercise 1).
#
# <details><summary>How this notebook works</summary>
#
# Each exercise is a `# TODO` stub. Where people tend to stall, a folded **hint** sits above the
# stub. The **checkpoint** cell under it passes with a ✅ line or fails with a message that names
# the likely mistake. Once Exercise 1's checkpoint passes, your function is kept (in
# `my_transformer.py`), and notebooks 02–06 run the model on it: its leak tests, its training,
# its heads. Then a provided measurement shows *why* the scores are divided by $\sqrt{d_k}$; at
# the end, **after the lab**: your function inside the whole model, one row of attention at
# initialization, and questions to check yourself.
#
# </details>

# %% tags=["maintainer"]
# For the course's pipeline only (`make regenerate-baselines`); left out of student notebooks.
from transformer_lab.baselines import record

SEEDS = [0]  # the pipeline passes its training seeds here
RESULTS = None  # and a JSON path that collects the measurements

# %% tags=["parameters"]
MODE = "auto"  # auto | full | quick | smoke | grade: how much compute the notebook spends
DEVICE = "auto"  # auto | cpu | cuda | mps
USE_DRIVE = True  # on Colab, keep your code in your Google Drive; set it to False to decline

# %% cellView="form"
# @title Imports, the device and your Drive (on Colab, Google asks for your consent here)
import math

import torch

import transformer_lab as tl
from checkpoints import attention as check

DEVICE, BUDGET = tl.start_notebook(MODE, DEVICE)
tl.use_drive(USE_DRIVE)  # on Colab, Google asks for your consent here

# %% [markdown]
# ## Exercise 0 · Read the model (3 min)
#
# The next cell prints the provided model, the decoder-only transformer of Equation 14:
#
# $$h_t^{(0)} = e_{w_t} + p_t, \qquad H^{(\ell)} = \mathrm{Block}_\ell(H^{(\ell-1)}), \qquad
#   z_t = W_o\,\mathrm{LN}(h_t^{(n_\ell)}) + b_o .$$
#
# <details><summary>Reading the print</summary>
#
# Every layer comes in the order the data meets it, with its shape and whether it has a bias
# (`bias=True`): `MultiHeadAttention` (Equation 7), `FeedForward` (Equation 10), `Block`
# (Equation 12) and `MiniGPT` (Equation 14). PyTorch prints the four identical blocks once, as
# `4 x Block`.
#
# </details>

# %%
model = tl.MiniGPT()
print(model)

# %% [markdown]
# In `read_the_model`, write `attention`: the parameters of one attention layer (its four
# `Linear` lines above), in terms of `d_model`; the stub counts the rest.
#
# <details><summary>Hint</summary>
#
# A `Linear(in_features=a, out_features=b, bias=True)` holds $a \times b$ weights and $b$
# biases; with `bias=False`, only the weights.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex0_read_the_model", "locked": false, "solution": true, "schema_version": 3}
def read_the_model(d_model=128, n_layers=4, T_max=128, vocab=65):
    """Return the number of parameters of a MiniGPT of these sizes."""
    d_ff = 4 * d_model
    layer_norm = 2 * d_model  # a gain and a bias; each block has two
    feed_forward = (d_model * d_ff + d_ff) + (d_ff * d_model + d_model)  # W_1, W_2, with bias
    embeddings = vocab * d_model + T_max * d_model  # tok_emb and pos_emb
    output = layer_norm + d_model * vocab + vocab  # ln_f, then W_o with its bias
    ### BEGIN SOLUTION
    attention = 3 * d_model * d_model + (d_model * d_model + d_model)
    ### END SOLUTION
    block = 2 * layer_norm + attention + feed_forward  # a block: two LayerNorms and two layers
    return embeddings + n_layers * block + output


# %% nbgrader={"grade": true, "grade_id": "ex0_check", "locked": true, "points": 1, "solution": false, "schema_version": 3}
check.exercise_0(read_the_model)

# %% [markdown]
# ## Exercise 1 · Scaled dot-product attention (12 min)
#
# With the queries, keys and values stacked as rows ($Q$: $T_q \times d_k$, $K$:
# $T_k \times d_k$, $V$: $T_k \times d_v$), Equations 3-4 read
#
# $$A = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right), \qquad \bar V = A V ,$$
#
# the softmax over each row (the keys). Write `scaled_dot_product_attention(Q, K, V,
# allowed=None)`, returning `(V_bar, A)`:
#
# - `Q`, `K`, `V` may have **leading batch dimensions**, `(..., T, d_k)`: the model passes its
#   heads as one.
# - `allowed`, if given, is a **bool** tensor that broadcasts to `(..., T_q, T_k)`, `True` where
#   query $t$ may read key $i$: forbidden scores become $-\infty$ *before* the softmax.
#
# **Not allowed:** `tl.scaled_dot_product_attention`, PyTorch's `F.scaled_dot_product_attention`
# and `nn.MultiheadAttention`.
#
# <details><summary>What else the checkpoint tries</summary>
#
# It fails a function that changes the caller's tensors. It watches the calls your code makes:
# an alias of a function that is not allowed, or a reference saved before, fails as the
# function itself does. After its cases it trains one step of the lab's model on your
# function, as notebook 04 will, in float32 and in the float16 a T4 trains in: a copy that cuts
# the gradient, or a fill too large for float16, fails there, named. From notebook 03 on, the
# model the lab builds and trains calls your function; notebook 02 builds the causal mask that
# `allowed` takes.
#
# </details>

# %% [markdown]
# <details><summary>Hint</summary>
#
# Three lines do it: `Q @ K.transpose(-2, -1)` (transpose only the last two axes, so leading
# dimensions pass through), `scores.masked_fill(~allowed, float("-inf"))` when a mask is given,
# and `torch.softmax(scores, dim=-1)`. `math.sqrt(Q.shape[-1])` is $\sqrt{d_k}$.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex1_attention", "locked": false, "solution": true, "schema_version": 3}
def scaled_dot_product_attention(Q, K, V, allowed=None):
    """Q: (..., T_q, d_k), K: (..., T_k, d_k), V: (..., T_k, d_v) -> (V_bar, A)."""
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)  # each row sums to 1 over the keys
    return A @ V, A  # V_bar: (..., T_q, d_v)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex1_check", "locked": true, "points": 3, "solution": false, "schema_version": 3}
check.exercise_1(scaled_dot_product_attention)
### BEGIN HIDDEN TESTS
from checkpoints import attention_hidden as hidden

hidden.exercise_1(scaled_dot_product_attention)
### END HIDDEN TESTS

# %% [markdown]
# **Next, while you work here:** open notebook 02 in a new tab now and run its first two cells
# (the parameters and the setup, where Google asks for your Drive); its runtime starts while you
# finish this one.

# %% [markdown]
# ## Why divide by $\sqrt{d_k}$?
#
# **Predict first.** For $q$ and $k$ with independent coordinates of mean 0 and variance 1,
# what standard deviation do you expect for $q^\top k$, and for $q^\top k / \sqrt{d_k}$, at
# $d_k$ = 16, 64 and 256? Write your guesses down, then run the cell.

# %% cellView="form"
# @title Measure: the spread of 2,000 scores q·k, raw and divided by √d_k, at d_k = 16, 64, 256
g = torch.Generator().manual_seed(0)
spread = {}
for d_k in (16, 64, 256):
    q, k = torch.randn(2000, d_k, generator=g), torch.randn(2000, d_k, generator=g)
    raw = (q * k).sum(-1)  # 2,000 independent scores q^T k
    spread[d_k] = {"raw": raw.std().item(), "scaled": (raw / math.sqrt(d_k)).std().item()}
    print(
        f"d_k = {d_k:>3}:  std of q·k = {spread[d_k]['raw']:6.2f} "
        f"(sqrt(d_k) = {math.sqrt(d_k):5.2f}),  "
        f"std of q·k / sqrt(d_k) = {spread[d_k]['scaled']:.3f}"
    )

# %% [markdown]
# Each product $q_j k_j$ has variance 1 and the $d_k$ terms add up:
# $\mathrm{Var}(q^\top k) = d_k$, while $\mathrm{Var}(q^\top k / \sqrt{d_k}) = 1$ (Equation 5).

# %% tags=["maintainer"]
record(RESULTS, {"score_spread": {str(d_k): s for d_k, s in spread.items()}})

# %% [markdown]
# **Next:** notebook 02, the causal mask.

# %% [markdown]
# ## After the lab · for reading afterwards
#
# ### The spreads in a figure
#
# The spreads measured under "Why divide by $\sqrt{d_k}$?", beside the $\sqrt{d_k}$ of
# Equation 5.

# %%
import matplotlib.pyplot as plt

from transformer_lab.reading.plots import plot_score_spread

plot_score_spread(spread)
plt.show()

# %% [markdown]
# ### Your function inside the whole model
#
# The provided multi-head layer takes an attention function as a parameter, so your function
# runs inside the whole model: the provided `MiniGPT` accepts any attention function with this
# signature. The next cell runs the untrained model on yours and, with the same weights, on
# PyTorch's fused kernel (what `MiniGPT()` runs when given no function), and compares the
# logits. Notebook 04 trains the model on yours, the function written above, at every step.

# %%
yours = tl.MiniGPT(attention=scaled_dot_product_attention).eval()
ours = tl.MiniGPT().eval()
ours.load_state_dict(yours.state_dict())
idx = torch.randint(0, 65, (2, 32))
with torch.no_grad():
    gap = (yours(idx) - ours(idx)).abs().max().item()
print(f"largest difference between the logits: {gap:.2e}")

# %% [markdown]
# ### Check yourself: the projections and the lookup
#
# **1.** To save parameters, someone ties two projections, $W_K = W_Q$. With the score
# $q_t^\top k_i$, compare position $t$ reading $i$ with $i$ reading $t$. What relation between
# two tokens can such a layer no longer express?
#
# <details><summary>Answer</summary>
#
# The two scores become equal: $q_t^\top k_i = h_t^\top W W^\top h_i$ and $W W^\top$ is
# symmetric. Only mutual relevance is left; a one-way relation ("this verb looks for its
# subject, the subject does not look for the verb") cannot be written. The score of a position
# with itself, $\lVert W^\top h_t\rVert^2$, is also never negative, which pulls every position
# towards reading itself. Separate $W_Q$ and $W_K$ lift both limits.
#
# </details>
#
# **2.** A captioning model encodes a photo into 49 patch vectors; its transformer decoder has a
# masked self-attention layer and a cross-attention layer in each block. Where do queries, keys
# and values come from in each layer, and what shape is $A$ when the caption has $T$ tokens?
#
# <details><summary>Answer</summary>
#
# Self-attention: all three from the caption's own vectors; $A$ is $T \times T$ and lower
# triangular under the causal mask. Cross-attention: queries from the decoder, keys and values
# from the 49 patches; $A$ is $T \times 49$ with no causal mask, because the whole image is
# known. In training every position of both layers is computed at once; at generation the
# decoder runs once per new token, while the encoder runs once per image.
#
# </details>

# %% [markdown]
# ### One row of attention at initialization
#
# Below, one random query reads ten random keys, for several $d_k$. Each panel shows the same
# scores turned into weights twice: $\mathrm{softmax}(q^\top k_i)$ and
# $\mathrm{softmax}(q^\top k_i / \sqrt{d_k})$, the second with your function. One draw can
# mislead, so the cell also prints the largest weight of a row averaged over 1,000 draws.
#
# **Predict first.** As $d_k$ grows from 4 to 256, what happens to the largest weight of each row?

# %%
ROW_D_K = (4, 16, 64, 256)
fig, axes = plt.subplots(1, len(ROW_D_K), figsize=(3.2 * len(ROW_D_K), 2.8), sharey=True)
g = torch.Generator().manual_seed(3)
for ax, d_k in zip(axes, ROW_D_K, strict=True):
    q, keys = torch.randn(1, d_k, generator=g), torch.randn(10, d_k, generator=g)
    unscaled = torch.softmax(q @ keys.T, dim=-1)[0]
    _, A = scaled_dot_product_attention(q, keys, torch.eye(10))
    positions = torch.arange(1, 11)
    ax.bar(positions - 0.2, unscaled, width=0.4, hatch="//", label="without scaling")
    ax.bar(positions + 0.2, A[0], width=0.4, label="with 1/√d_k")
    ax.set_title(f"d_k = {d_k}")
    ax.set_xlabel("key position i")
axes[0].set_ylabel("attention weight α")
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()
for d_k in ROW_D_K:
    q, keys = torch.randn(1000, 1, d_k, generator=g), torch.randn(1000, 10, d_k, generator=g)
    scores = q @ keys.transpose(-2, -1)  # (1000, 1, 10): one row of scores per draw
    _, A = scaled_dot_product_attention(q, keys, torch.eye(10))
    print(
        f"d_k = {d_k:>3}: largest weight of a row, mean of 1,000 draws: "
        f"{torch.softmax(scores, -1).amax(-1).mean():.2f} without scaling, "
        f"{A.amax(-1).mean():.2f} with 1/√d_k"
    )

# %% [markdown]
# Without the scaling the spread of the scores grows as $\sqrt{d_k}$ and the row tends to
# collapse onto one key as $d_k$ grows. The numbers above measure how peaked a row is on
# average: the mean of its largest weight, which is 1 for a one-hot row and 0.1 for an even
# spread over the 10 keys. They do not count how many rows collapse. A one-hot softmax passes
# almost no gradient, since
# $\partial\alpha_{t,i}/\partial\,\mathrm{score}_j = \alpha_{t,i}(\mathbb 1[i=j]-\alpha_{t,j})$
# is near 0 when every weight is near 0 or 1. With the scaling the row keeps the same moderate
# shape at every $d_k$. These are random vectors: a picture of the first training step only.
#
# <details><summary>And after training?</summary>
#
# Notebook 04's "After the lab" measures it where §2's premise holds: the lab's mini-GPT starts
# with small weights (std 0.02), so its unscaled scores start with a spread far below
# $\sqrt{d_k}$ and its softmax starts even with or without the scale; the ladder's row
# `no_scaling` therefore cannot show the saturation. The pair trained from q and k with
# unit-variance coordinates, under the ladder, can: it records the spread, the entropy of the
# rows and the gradient reaching $W_Q$ at initialization, and the loss each trains to.
#
# </details>
#
# ### Check yourself
#
# **3.** One query $q = (1,1,1,1)$ and two keys $k_1 = (1,1,1,1)$, $k_2 = (1,-1,1,-1)$. Compute
# the weights with and without the scaling, and $\partial\alpha_1/\partial\,\mathrm{score}_1$.
#
# <details><summary>Answer</summary>
#
# The dot products are 4 and 0. Unscaled: softmax(4, 0) = (0.982, 0.018), derivative
# $\alpha_1(1-\alpha_1) = 0.018$. Scaled by $1/\sqrt 4$: softmax(2, 0) = (0.881, 0.119),
# derivative 0.105, about six times larger.
#
# </details>
#
# **4.** A colleague divides the scores by $d_k$ instead of $\sqrt{d_k}$. What is the standard
# deviation of the scores at $d_k = 64$, what does a row of $A$ look like at initialization, and
# is that a problem?
#
# <details><summary>Answer</summary>
#
# The variance becomes $d_k / d_k^2 = 1/d_k$, so the standard deviation is
# $1/\sqrt{64} = 0.125$. The scores are nearly equal and every row of $A$ is nearly uniform:
# each $\bar v_t$ starts as a plain average of what it may read. Gradients flow, but the layer
# starts by barely telling positions apart, and more so as $d_k$ grows. Only the exponent 1/2
# makes the starting spread independent of $d_k$.
#
# </details>
