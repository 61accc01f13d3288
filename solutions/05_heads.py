# %% [markdown]
# # Lab 5 · Notebook 5 — Looking at the heads
#
# **Exercise 5** measures how far back each head reads.
#
# <details><summary>More</summary>
#
# After the exercise: the weights of every head of the first and the last layer, your prediction
# of which head of each layer the model needs most, and then each head switched off in turn, to
# test what a map of its weights would suggest. **After the lab**, at the end: one head reading
# `To be,`, and what such pictures say. As before, the exercise is a
# `# TODO` stub with a folded **hint** above it, and the **checkpoint** under it passes with a ✅
# line or names the likely mistake.
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
USE_DRIVE = True  # on Colab, find your model in your Google Drive; set it to False to decline

# %% cellView="form"
# @title Imports, the device and your Drive (on Colab, Google asks for your consent here)
import matplotlib.pyplot as plt
import torch

import transformer_lab as tl
from checkpoints import heads as check
from checkpoints import yours
from transformer_lab.reading.plots import plot_head_costs

DEVICE, BUDGET = tl.start_notebook(MODE, DEVICE)
tl.use_drive(USE_DRIVE)  # on Colab, Google asks for your consent here

# %% cellView="form"
# @title The model you trained in 04 (else the course's), on your pieces of 01-03
corpus = tl.load_corpus(DEVICE)
model, info, run, origin = tl.load_trained_gpt(DEVICE, use_drive=USE_DRIVE)
model = yours.load(USE_DRIVE).plug(model)  # on your pieces of 01-03: A is what yours returns
print(f"Looking at {origin}.")  # its budget, from its own file: a few steps leave heads random

# %% [markdown]
# ## Exercise 5 · Looking at the heads (7 min)
#
# A head's **mean attention distance**, in characters, is how far back its queries read:
#
# $$D = \frac{1}{T}\sum_{t=0}^{T-1}\;\sum_{i=0}^{t} \alpha_{t,i}\,(t-i).$$
#
# Write `mean_attention_distance(A)` for `A` of shape `(..., T, T)` (queries down the rows): one
# $D$ per leading index, shape `(...)`, in `A`'s dtype, with no Python loop.

# %% [markdown]
# <details><summary>Hint</summary>
#
# Build the $T \times T$ offsets $t - i$ from `torch.arange(T, device=A.device)` (on $A$'s
# device, so that it runs on a GPU too), `[:, None]` for the queries and `[None, :]` for the
# keys; above the diagonal $A$ is 0. Multiply, **sum** over the keys, **average** over the
# queries.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex5_mean_distance", "locked": false, "solution": true, "schema_version": 3}
def mean_attention_distance(A):
    """A: (..., T, T) causal attention weights -> (...): mean over t of sum_i A[t, i] (t - i)."""
    ### BEGIN SOLUTION
    positions = torch.arange(A.shape[-1], device=A.device)
    offsets = (positions[:, None] - positions[None, :]).to(A.dtype)  # (T, T): entry t - i
    return (A * offsets).sum(dim=-1).mean(dim=-1)  # sum over keys i, mean over queries t
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex5_check", "locked": true, "points": 2, "solution": false, "schema_version": 3}
check.exercise_5(mean_attention_distance)
### BEGIN HIDDEN TESTS
from checkpoints import heads_hidden as hidden

hidden.exercise_5(mean_attention_distance)
### END HIDDEN TESTS

# %% [markdown]
# ## The weights of the first and the last layer
#
# Every head of the first and the last layer on one 64-character window (brighter: more weight).
# Look for weight on the diagonal (the last few characters), vertical stripes (one position read
# by many queries) and weight smeared over the whole past.

# %% cellView="form"
# @title Every head of the first and the last layer on one window, and its D there
n_layers, n_heads = model.config.n_layers, model.config.n_heads
val_start = len(corpus.train)  # the validation split follows the training split
start = corpus.text.index("\n", val_start + 2_000) + 1 - val_start  # a line start
shown = corpus.val[start : start + 64][None]  # (1, 64) character ids
with torch.no_grad():
    _, A_window = model(shown, return_attention=True)  # (n_layers, 1, n_heads, 64, 64)
A_window = A_window[:, 0].float().cpu()  # (n_layers, n_heads, 64, 64)
D_window = mean_attention_distance(A_window)  # (n_layers, n_heads): D of this window

fig, axes = plt.subplots(2, n_heads, figsize=(2.4 * n_heads, 5.0), layout="constrained")
for row, layer in enumerate((0, n_layers - 1)):
    for r in range(n_heads):
        axes[row, r].imshow(A_window[layer, r], cmap="viridis", vmin=0, vmax=1)
        axes[row, r].set_title(f"layer {layer + 1} · head {r + 1}, D {D_window[layer, r]:.1f}")
fig.supxlabel("key i")
fig.supylabel("query t")
# the text of the window, and the D of a head that spreads its weight evenly over it
fig.suptitle(f"{corpus.vocab.decode(shown[0])!r}\n(a uniform head: D = {(shown.shape[1] - 1) / 4})")
plt.show()

# %% [markdown]
# ## Each head switched off
#
# Each head in turn is switched off, its slice of $\bar V$ replaced by its mean over 16
# validation windows (so later layers still get the inputs they were trained on), and the loss
# measured again. **Predict first**, in `PREDICTION` (not graded): in the first layer and in the
# last, which head will cost most, and is it the one of its layer that reads furthest back?

# %%
PREDICTION = "..."  # e.g. "layer 1: head 2, since ...; layer 4: the furthest reader, since ..."

# %% cellView="form"
# @title Each head's mean distance D (your function), and the loss with that head switched off
WINDOWS, T = 16, model.config.T_max
# (B, T) windows and their next characters, from a CPU generator: the same on every device
windows, targets = tl.sample_batch(corpus.val, WINDOWS, T, torch.Generator().manual_seed(0))
with torch.no_grad():
    _, A = model(windows, return_attention=True)  # (n_layers, B, n_heads, T, T)
distances = mean_attention_distance(A).mean(dim=1).float().cpu()  # (n_layers, n_heads)
# each head switched off in turn (its slice of V_bar set to its mean), loss measured again
ablation = tl.head_ablation(model, windows, targets)
plot_head_costs(distances, ablation.costs, T)
plt.show()
print(ablation.summary(distances))

# %% tags=["maintainer"]
record(RESULTS, {"mean_attention_distance": distances.tolist()} | ablation.record())

# %% [markdown]
# <details><summary>In each layer, which head costs most, and how far back does it read? Is it
# the one of its layer that reads furthest back? Was your prediction right?</summary>
#
# "An attention map explains the prediction" is one of the lecture's gotchas: there are
# $n_h \times n_\ell$ maps, and the vectors read at layer $\ell$ are already mixtures of many
# characters. The plot puts the claim to a test, one layer at a time. A head that reads far back
# draws a wide, striking map; if switching it off barely moves the loss, the prediction did not
# need what it read. A head that reads only the last character or two can be the one the model
# cannot do without. A map says where a head reads; switching the head off says whether the
# model needs it. Set the printed lines against your `PREDICTION`, layer by layer, and look back
# at the maps of the heads they name: what would the maps alone have told you?
#
# Compare heads within a layer, not across layers: each panel has its own cost axis. A head of
# the first layer changes what every later layer reads, a head of the last layer only what the
# output reads, so the costs of two layers are on scales of their own: the costliest head of
# one layer set against the furthest reader of another says more about the layers than about
# the heads. The test has limits of its own: the layers after a head were trained with it on,
# two heads may each be cheap alone and costly together, and the costs are those of these 16
# windows.
#
# </details>
#
# **End of the core path.**

# %% [markdown]
# ## After the lab · for reading afterwards
#
# ### Where the model comes from
#
# The cell that prints "Looking at …", under the setup, looks for the model you trained in
# notebook 04, in this order:
#
# 1. on Colab, in your Google Drive (`MyDrive/transformer-lab/mini_gpt.pt`, where 04 copies
#    it), mounted by the setup cell unless `USE_DRIVE = False`;
# 2. beside this notebook (`mini_gpt.pt`), where 04 saves it: a local Jupyter, or 04 run in
#    this same runtime;
# 3. otherwise the mini-GPT the course trained at the full budget, the lecture's, and recorded
#    with its baselines (the quick one only where no full one is recorded), from your device
#    class where one is recorded.
#
# It prints which model you are looking at, the budget it was trained at (read from the model's
# own file, not from this runtime's device) and, for a recorded one, which run and why: every
# number below belongs to that model and its budget, not to "the transformer" in general.
#
# ### How far back a head can read
#
# Row $t$ of a head's matrix $A$ holds the weights $\alpha_{t,i}$ with which query $t$ reads key
# $i$. Under the causal mask they are zero for $i > t$ and sum to 1 over $i \le t$. Reading key
# $i$ from position $t$ means looking $t - i$ characters back, so $\sum_{i \le t}\alpha_{t,i}\,(t-i)$
# is the expected look-back of query $t$. Averaged over the $T$ queries of a window, it gives the
# **mean attention distance** of the head, in characters, $D$ of Exercise 5.
#
# In the cell that switches each head off, under "Each head switched off",
# `return_attention=True` gives $A$ as `(n_layers, B, n_heads, T, T)`.
#
# Two reference values for a 128-character window: a head that reads only the current character
# scores 0, and a head that spreads its weight evenly over everything it may read scores
# $(T-1)/4 = 31.75$. No head can score more than $(T-1)/2 = 63.5$, because early queries have
# little to look back on.
#
# **Look back.** Which layer holds the heads that read furthest back in your map of distances
# (the left of the head-cost figure): the first, or the last? Is that what you expected?
#
# Layers and heads are numbered from 1 in the map above, as in the lecture; in code, layer 1
# is index 0.
#
# The checkpoint of Exercise 5 starts with three matrices whose answer you can work out in your
# head, for $T = 6$: every query reads only itself ($D = 0$); every query reads only the first
# character (row $t$ looks back $t$, so $D = 2.5$); row $t$ spreads its weight evenly over keys
# $0..t$ (row $t$ looks back $t/2$ on average, so $D = 1.25$).

# %% [markdown]
# ### Recorded distances and head costs
#
# Distances and head costs belong to one model: they change with the budget, the seed and the
# machine. So the next cell shows recorded ones only when you are looking at a recorded model,
# and then those of that model's own run (from `data/baselines.json`). For your own model
# nothing recorded belongs beside it: the plots above are its measurement.

# %%
from transformer_lab.reading.recorded import recorded_distances, recorded_head_costs

print(recorded_distances(run))
print(recorded_head_costs(run))

# %% [markdown]
# ### One head reading `To be,`
#
# The lecture's Figure 2 shows one head of a trained mini-GPT on the six characters `To be,`.
# The next cell draws the same picture for **your** model. It picks the head of the **last
# layer with the largest mean attention distance** in the map above: a head that spreads its
# weight fills the triangle, where a head that reads only the current character would show a
# diagonal and little else. The cells above the diagonal are hatched: their weight is 0.

# %%
from matplotlib.patches import Rectangle

TEXT = "To be,"
head = int(distances[-1].argmax())
ids = torch.tensor([corpus.vocab.encode(TEXT)], device=DEVICE)
with torch.no_grad():
    _, A_text = model(ids, return_attention=True)
weights = A_text[-1, 0, head].float().cpu()  # (6, 6): the last layer, the chosen head
n = len(TEXT)
labels = [repr(c)[1:-1] if c != " " else "␣" for c in TEXT]

fig, ax = plt.subplots(figsize=(4.4, 4.0))
upper = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
ax.imshow(weights.masked_fill(upper, float("nan")), cmap="Blues", vmin=0, vmax=1)
for t in range(n):
    for i in range(n):
        if i > t:
            ax.add_patch(Rectangle((i - 0.5, t - 0.5), 1, 1, fill=False, hatch="///", color="0.7"))
        else:
            w = weights[t, i].item()
            ink = "white" if w > 0.6 else "black"
            ax.text(i, t, f"{w:.2f}", ha="center", va="center", fontsize=9, color=ink)
ax.set_xticks(range(n), labels)
ax.set_yticks(range(n), labels)
ax.set_xlabel("key i (the character read)")
ax.set_ylabel("query t (the character reading)")
ax.set_title(f"layer {n_layers} · head {head + 1} (largest D of its layer)")
fig.tight_layout()
plt.show()
print(
    f"layer {n_layers}, head {head + 1}: each row sums to",
    [round(x, 3) for x in weights.sum(-1).tolist()],
)

# %% [markdown]
# ### What these pictures do and do not say
#
# $A$ is a **routing weight**: it says how much of each value vector a head copies into a
# position, not why the model predicts what it predicts. Reasons to be careful:
#
# - there are 16 maps, and the output mixes all of them through $W_{\mathrm{proj}}$ and the
#   feed-forward layers;
# - in layer 4 the vectors being read are no longer single characters: each is already a mixture
#   of the whole prefix, built by layers 1–3, so "head 2 reads the comma" is a statement about
#   positions, not about what flowed through them;
# - a large weight on a value vector that is small, or that $W_{\mathrm{proj}}$ mostly ignores,
#   changes little;
# - the pattern changes with the text and with the seed of the run.
#
# A claim such as "this head tracks the speaker" needs an intervention, as in the core path:
# switch the head off and measure what the loss loses, and then on which characters, which the
# plot's one number per head does not say. The maps are where you get the idea for that test,
# not the test itself.
#
# ### Check yourself
#
# **1.** The lab's model has $d_{\text{model}} = 128$ and $n_h = 4$. How many weights do
# $W_Q$, $W_K$ and $W_V$ hold across all heads of one layer? Redo the count with $n_h = 16$. What
# changed, and what did you trade? (The cell after the answer counts for you.)
#
# <details><summary>Answer</summary>
#
# With 4 heads each head has $d_k = 32$, so the three projections hold
# $3 \times 4 \times 128 \times 32 = 49{,}152$ weights, which is $3 d_{\text{model}}^2$. With 16
# heads $d_k = 8$ and the count is $3 \times 16 \times 128 \times 8 = 49{,}152$ again. Nothing
# was added; the same weights are cut into more, narrower pieces. Each position now computes 16
# weight rows instead of 4, but each score compares 8-dimensional vectors instead of
# 32-dimensional ones: more separate lookups, each less precise. At $d_k = 1$ a score would
# compare two single numbers.
#
# </details>

# %%
for n_h in (4, 16):
    layer = tl.MultiHeadAttention(tl.GPTConfig(n_heads=n_h))
    qkv = sum(p.numel() for name, p in layer.named_parameters() if name.startswith("W_"))
    print(f"n_heads = {n_h:>2}: d_k = {128 // n_h:>2}, W_Q + W_K + W_V hold {qkv:,} weights")

# %% [markdown]
# **2.** A head scores $D = 0$ on every window. What does its $A$ look like, and what does the
# head contribute to position $t$? Another head scores $D = 31.75$ on 128-character windows: can
# you conclude that it spreads its weight evenly?
#
# <details><summary>Answer</summary>
#
# $D = 0$ means every row puts all its weight on the diagonal: $A$ is the identity, and the head
# returns $v_t$, a linear function of position $t$ alone. It mixes nothing between positions,
# like one more linear layer per position. $D = 31.75$ is what uniform rows give, but not only
# them: a head that puts half its weight on the current character and half on the first
# character of the window also looks back $t/2$ on average at row $t$, and scores the same. $D$
# is a one-number summary; the maps show which pattern produced it.
#
# </details>
#
# **3.** $D$ depends on the window length as well as on the head. Give a head whose $D$ roughly
# doubles when the windows go from $T = 64$ to $T = 128$, and one whose $D$ barely moves.
#
# <details><summary>Answer</summary>
#
# A head with uniform rows scores $(T-1)/4$: 15.75 on 64-character windows, 31.75 on 128. A head
# that always reads the previous character scores $(T-1)/T$ (only query 0 has nothing to look
# back to): about 1 for both. Query $t$ cannot look back more than $t$ characters and $D$
# averages over every query, so the window caps what a far-reading head can score. Compare
# heads only on windows of the same length, or average over late queries only (say $t \ge 64$).
#
# </details>
