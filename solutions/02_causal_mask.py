# %% [markdown]
# # Lab 5 · Notebook 2 — The causal mask
#
# In training, position $t$ predicts $w_{t+1}$ in the same pass that sees it: if it may read it,
# it copies the answer. **Exercise 2** builds the causal mask that stops it (Equation 6).
#
# <details><summary>More about this notebook</summary>
#
# Teacher forcing makes all $T$ predictions in one forward pass, each scored against the next
# token. A model that reads ahead drives the training loss towards zero and is useless for
# generation, where the next token does not exist yet. Exercise 2 opens with the leak test
# failing on a leak that a look at the triangle misses (a mask applied *after* the softmax).
# **After the lab**: what self-attention reads without a mask, that leak position by position,
# and questions to check yourself. The **Optional** section: padding masks, and what
# to do with a query that may read nothing. The first cell says whose attention runs here.
#
# Your attention is the one kept when notebook 01's checkpoint passed (on Colab in your Google
# Drive, `MyDrive/transformer-lab/my_transformer.py`). Where it cannot be found, the course's
# reference `tl.scaled_dot_product_attention` stands in.
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
USE_DRIVE = True  # on Colab, your code travels in your Google Drive; set it to False to decline

# %% cellView="form"
# @title Imports, the device and your Drive (on Colab, Google asks for your consent here)
import math

import matplotlib.pyplot as plt
import torch

import transformer_lab as tl
from checkpoints import causal_mask as check
from checkpoints import yours
from transformer_lab.reading.plots import leak_line, plot_leak, plot_masks

DEVICE, BUDGET = tl.start_notebook(MODE, DEVICE)
tl.use_drive(USE_DRIVE)  # on Colab, Google asks for your consent here
torch.set_printoptions(precision=2, sci_mode=False)
pieces = yours.load(USE_DRIVE, notebook="02")  # your attention of 01, else the course's

# %% [markdown]
# ## Exercise 2 · The causal mask (8 min)
#
# Equation 6 gives every forbidden score the value $-\infty$ before the softmax, because
# $\exp(-\infty) = 0$:
#
# $$M_{t,i} = \begin{cases} 0 & i \le t \\ -\infty & i > t \end{cases}, \qquad
#   A = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) \quad (6)$$
#
# Its checkpoint is the **leak test**: change a later input, and no earlier output may move at
# all. Before you write yours, here is what it catches: the right mask, applied after the softmax.


# %% [markdown]
# **Next, while you work here:** open notebook 03 in a new tab now and run its first two cells
# (the parameters and the setup, where Google asks for your Drive); its runtime starts while you
# finish this one.


# %% cellView="form" nbgrader={"grade": false, "grade_id": "ex2_leak_demo", "locked": true, "solution": false, "schema_version": 3}
# @title The leak test fails, as it should: softmax over every key, then the future zeroed
def softmax_then_zero(Q, K, V, allowed):
    """The bug: softmax over every key, then zero the forbidden weights."""
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1) * allowed
    return A @ V, A


failure = check.leak_demo(softmax_then_zero)  # the leak test, with the right mask
assert failure.code == "ex2.reads_the_future", failure  # the leak, not some other failure
print(failure)

# %% [markdown]
# Now write `causal_mask(T)`: shape `(T, T)`, dtype `torch.bool`, entry `[t, i]` `True` when
# $i \le t$ (query $t$ may read key $i$; rows are queries, columns keys). **Not allowed:**
# `tl.causal_mask` and `nn.Transformer.generate_square_subsequent_mask`. Your mask is then kept
# for 03–06.
#
# <details><summary>Why a bool mask</summary>
#
# The lab's attention takes the mask as a bool tensor and writes the $-\infty$ itself. So
# $\alpha_{t,i} = 0$ exactly for every $i > t$ and each row still sums to 1: $A$ is lower
# triangular, and no row is ever empty, since the diagonal ($i = t$) is always allowed.
# `allowed[t, i]` is `True` exactly where $M_{t,i} = 0$; the function applies it with
# `scores.masked_fill(~allowed, float("-inf"))`. A bool tensor states its meaning ("may read")
# and cannot be added to the scores by accident; in this lab `True` always means *may read*.
# After the leak test the checkpoint compares your mask with the reference for several $T$.
# It watches the calls your code makes: a mask that is not allowed, or an alias of it, fails.
#
# </details>
#
# <details><summary>Hint</summary>
#
# Keep the lower triangle, diagonal included, of `torch.ones(T, T, dtype=torch.bool)` with
# `torch.tril`; or compare `torch.arange(T)[None, :]` (the key $i$, along the columns) with
# `torch.arange(T)[:, None]` (the query $t$, along the rows): `<=` broadcasts to `(T, T)`.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex2_causal_mask", "locked": false, "solution": true, "schema_version": 3}
def causal_mask(T):
    """Bool (T, T): entry [t, i] is True when query t may read key i, that is i <= t."""
    ### BEGIN SOLUTION
    positions = torch.arange(T)
    return positions[None, :] <= positions[:, None]  # key i (columns) <= query t (rows)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex2_check", "locked": true, "points": 2, "solution": false, "schema_version": 3}
largest_leak = check.exercise_2(causal_mask, pieces.attention)  # the leak test first
### BEGIN HIDDEN TESTS
from checkpoints import causal_mask_hidden as hidden

hidden.exercise_2(causal_mask)
### END HIDDEN TESTS

# %% tags=["maintainer"]
record(RESULTS, {"leak": {"one_attention_step": largest_leak}})

# %% [markdown]
# **Next:** notebook 03, positions.

# %% [markdown]
# ## After the lab · for reading afterwards
#
# ### Self-attention reads ahead
#
# Without a mask, every row of $A$ spreads its weight over *all* positions, later ones
# included: five random vectors attend to each other (as queries, keys and values).

# %%
attention = pieces.attention.fn  # Equations 3-4: yours from notebook 01, or the course's

g = torch.Generator().manual_seed(0)
X = torch.randn(5, 8, generator=g)  # 5 positions, d_k = 8
_, A = attention(X, X, X)
print(f"A without a mask (row t = query, column i = key):\n{A}")
print(f"weight that position 0 puts on the four positions after it: {A[0, 1:].sum():.2f}")

# %% [markdown]
# ### Your mask in a picture
#
# The same kind of attention step as above, on eight positions, without a mask and with yours.

# %%
g = torch.Generator().manual_seed(1)
X = torch.randn(8, 8, generator=g)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.6), sharey=True)
for ax, (title, allowed) in zip(
    axes, (("no mask", None), ("your causal mask", causal_mask(8))), strict=True
):
    _, A = attention(X, X, X, allowed)
    ax.imshow(A, cmap="Blues", vmin=0, vmax=1)
    ax.set_title(title)
    ax.set_xlabel("key position i")
axes[0].set_ylabel("query position t")
fig.tight_layout()
plt.show()
print("row sums with your mask:", A.sum(-1))

# %% [markdown]
# ### What the leak test sees that the triangle does not
#
# The mask after the softmax that the leak test caught at the start of Exercise 2 leaves every
# weight above the diagonal at 0: the triangle looks right, but each kept weight was normalised
# over the future keys too. Position by position: one input changes, at `t0`. With your mask
# nothing before `t0` moves; with the mask after the softmax, every earlier output does.

# %%
g = torch.Generator().manual_seed(4)
X_leak, t0 = torch.randn(8, 8, generator=g), 5
X_changed = X_leak.clone()
X_changed[t0] = torch.randn(8, generator=g)
moved = {}
for label, step in (("your mask", attention), ("mask after the softmax", softmax_then_zero)):
    before, _ = step(X_leak, X_leak, X_leak, causal_mask(8))
    after, _ = step(X_changed, X_changed, X_changed, causal_mask(8))
    moved[label] = (before - after).abs().amax(-1)  # the largest change of each v̄_t
plot_leak(moved, t0)
plt.show()
print(leak_line(moved, t0))

# %% [markdown]
# ### Why the mask goes before the softmax
#
# #### Check yourself
#
# **1. Predict first, on paper.** Count positions from 1, as the lecture does. Row $t = 2$ of
# the scaled scores of a four-token sequence is $(1, 1, 5, 3)$. What is row 2 of $A$ under
# Equation 6? A buggy implementation takes the softmax of all four scores first, then sets the
# weights of positions 3 and 4 to zero without renormalising. What does it return? Does it leak
# the future? Then run the cell, which afterwards changes the two future scores from $(5, 3)$
# to $(0, 0)$.

# %%
keep = torch.tensor([True, True, False, False])  # row t = 2 may read positions 1 and 2


def show(row):
    return "(" + ", ".join(f"{w:.3f}" for w in row.tolist()) + ")"


for scores in (torch.tensor([1.0, 1.0, 5.0, 3.0]), torch.tensor([1.0, 1.0, 0.0, 0.0])):
    masked_first = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    zeroed_after = torch.softmax(scores, dim=-1) * keep  # the bug
    renormalised = zeroed_after / zeroed_after.sum()
    print(f"scores {show(scores)}")
    print(f"  mask, then softmax:         {show(masked_first)}")
    print(f"  softmax, then zero:         {show(zeroed_after)}   sums to {zeroed_after.sum():.3f}")
    print(f"  softmax, zero, renormalise: {show(renormalised)}")

# %% [markdown]
# <details><summary>Answer</summary>
#
# With the mask first, the row reads two equal scores, so it is one half each. Softmax-then-zero
# keeps $e^{1} / (2e^{1} + e^{5} + e^{3})$ for each of the two allowed keys: the future scores
# sit in the denominator. The weights above the diagonal are 0, so a look at the triangle
# passes, but the row no longer sums to 1 and, worse, it moves when only the future moves: with
# future scores $(0, 0)$ the denominator shrinks to $2e + 2$ and the kept weights grow, as the
# second block of output shows. Position 2's output depends on positions 3 and 4: a leak.
# Renormalising after zeroing gives back the masked-first row. That is why the leak test changes
# a later input and compares earlier *outputs*, and does not stop at inspecting the triangle:
# the failure at the start of Exercise 2 and the picture of the section "What the leak test
# sees that the triangle does not" are this bug.
#
# </details>

# %% [markdown]
# ### Check yourself
#
# **2.** A colleague passes your `causal_mask(T)` as `attn_mask` to PyTorch's
# `nn.MultiheadAttention`, where a `True` entry means "may **not** attend". What does each query
# read, and what comes out at the last position?
#
# <details><summary>Answer</summary>
#
# The meaning is flipped: each query may read only the keys strictly after it, the future and
# nothing else. Training would look wonderful, because every position can read the character it
# must predict. The last query has no later key, so every entry of its row is forbidden, its
# softmax is taken over nothing but $-\infty$, and its output is NaN. Two conventions for one
# bool tensor are a trap; naming the argument after what `True` means (`allowed`) and keeping
# the leak test guard against it.
#
# </details>
#
# **3.** A new model's training loss falls far below every baseline within a few hundred steps,
# but its samples are gibberish. What do you suspect first, and which test settles it?
#
# <details><summary>Answer</summary>
#
# A leak: the model predicts $w_{t+1}$ by reading it, which works in training and is
# impossible at generation time, when the future is not there. The leak test settles it: change
# the token at one position and check that no logit *before* it moves at all. Notebook 03 runs
# it on the whole untrained model, and notebook 04 again after training.
#
# </details>

# %% [markdown]
# ## Optional · Padding masks and rows with nothing to read
#
# A batch is a rectangle, so shorter sequences are filled up with a padding token `PAD`. Padding
# holds no content: no query may read a `PAD` key. A **key-padding mask** `key_ok = idx != PAD`
# of shape `(B, T)` says which keys are real; as `key_ok[:, None, :]`, shape `(B, 1, T)`, it
# broadcasts over the queries. The causal mask says which keys lie at or before the query. A
# key is readable only when both hold, so the two combine with `&`:
#
# `allowed = causal_mask(T)[None, :, :] & key_ok[:, None, :]`, shape `(B, T, T)`.

# %%
PAD = 0
idx = torch.tensor([[5, 9, 2, 7, 3], [8, 4, 1, PAD, PAD]])  # lengths 5 and 3, padded on the right
B, T = idx.shape
key_ok = idx != PAD  # (B, T): True for real tokens
allowed = causal_mask(T)[None, :, :] & key_ok[:, None, :]  # (1, T, T) & (B, 1, T) -> (B, T, T)
print("allowed for the second sequence (1 = may read):")
print(allowed[1].int())

X = torch.randn(B, T, 8, generator=torch.Generator().manual_seed(2))
attention = tl.scaled_dot_product_attention  # the course's: it has the keyword empty_row below
_, A = attention(X, X, X, allowed)
print("its attention weights:")
print(A[1])

# %% [markdown]
# With padding on the right every row still has its diagonal or an earlier real token, so no row
# is empty; the rows of the padded queries are computed but left out of the loss. Pad on the
# **left** instead, and the first queries are padding with no real token at or before them:
# their rows allow nothing. What should the softmax of a row of $-\infty$ be?

# %%
print("softmax of (-inf, -inf, -inf):", torch.softmax(torch.full((3,), float("-inf")), dim=-1))

idx_left = torch.tensor([[PAD, PAD, 8, 4, 1]])  # the same 3 tokens, padded on the left
allowed_left = causal_mask(5)[None] & (idx_left != PAD)[:, None, :]
X_left = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(3))
try:
    attention(X_left, X_left, X_left, allowed_left)  # empty_row="error", the default
except ValueError as err:
    assert "no allowed key" in str(err), err  # the empty row, not some other refusal
    print(f'empty_row="error": ValueError: {err}')
V_bar, A = attention(X_left, X_left, X_left, allowed_left, empty_row="zero")
print('empty_row="zero": weights')
print(A[0])
print("row sums:", A[0].sum(-1))
print("output rows that are all zero:", (V_bar[0] == 0).all(-1).tolist())

# %%
plot_masks(  # the masks of this section, sequence 2 and the left-padded one
    {
        "causal_mask(5)": causal_mask(T),
        "key_ok[1], over every query": key_ok[1].expand(T, T),
        "allowed[1] = causal & key_ok": allowed[1],
        "padded on the left": allowed_left[0],
    }
)
plt.show()

# %% [markdown]
# A softmax subtracts the row's maximum before exponentiating, to stay in range. In a row of
# nothing but $-\infty$ the maximum is $-\infty$ too, and $-\infty - (-\infty)$ is undefined:
# NaN, which then spreads through every later layer. The package makes the choice explicit:
#
# - `empty_row="error"` (the default) stops, since an empty row is usually a masking bug;
# - `empty_row="zero"` returns zero weights and a zero output for that row, when it is intended,
#   as for padded queries that the loss ignores. Such a row sums to 0, not 1: it means "this
#   query produces nothing", not a probability distribution.
#
# Quietly returning a uniform row, or letting NaN through, would both hide the problem.
#
# ### Check yourself
#
# **4.** Many implementations fill forbidden scores with a large finite number such as $-10^9$
# instead of $-\infty$. For an ordinary causal row that changes nothing you can measure. What
# happens to a row in which every key is forbidden?
#
# <details><summary>Answer</summary>
#
# All its scores equal $-10^9$, and the softmax of equal scores is uniform: the padded query
# quietly reads every forbidden key with the same weight, padding included. There is no NaN
# and no error, just a wrong output that nothing flags. $-\infty$ with an explicit empty-row
# policy turns the same situation into an error, or into a deliberate zero.
#
# </details>
