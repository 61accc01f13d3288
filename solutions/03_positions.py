# %% [markdown]
# # Lab 5 · Notebook 3 — Positions
#
# Nothing in Equations 3-4 says *where* a token stands: **Exercise 3** adds positions
# (Equation 8), which completes your model.
#
# <details><summary>More about this notebook</summary>
#
# First a provided checkpoint shows that, without positions, an attention layer cannot tell two
# orders of the same characters apart. After Exercise 3 the model is built from your attention
# (notebook 01), your mask (02) and your input step (here), and meets the leak test on its logits
# and its loss before any training. At the end, **after the lab**: why attention is blind to
# order, the sinusoidal encodings of Equation 9 and questions to check yourself.
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
import matplotlib.pyplot as plt
import torch

import transformer_lab as tl
from checkpoints import leak, yours
from checkpoints import positions as check

DEVICE, BUDGET = tl.start_notebook(MODE, DEVICE)
tl.use_drive(USE_DRIVE)  # on Colab, Google asks for your consent here
pieces = yours.load(USE_DRIVE, notebook="03")  # your attention and mask, else the course's

# %% [markdown]
# ## Attention is blind to order
#
# A causal attention layer reads `dog bites man` and `bites dog man` (the same characters, the
# same last one) without positions, then with them.

# %%
corpus = tl.load_corpus()
first = torch.tensor([corpus.vocab.encode("dog bites man")])  # (1, 13) character ids
second = torch.tensor([corpus.vocab.encode("bites dog man")])
check.order_blindness(first, second)

# %% [markdown]
# ## Exercise 3 · Positions (6 min)
#
# The fix adds to each token's embedding $e_{w_t}$ a learned vector $p_t$ of its position:
#
# $$h_t^{(0)} = e_{w_t} + p_t \quad (8)$$
#
# Write `embed_with_positions(idx, tok_emb, pos_emb)`: `idx` holds token ids, `(B, T)`;
# `tok_emb` and `pos_emb` are `nn.Embedding`s, the second with one row per position
# $t = 0, \dots, T_\text{max} - 1$; return $h^{(0)}$, `(B, T, d_model)`. **Not allowed:**
# `tl.embed_with_positions`.
#
# <details><summary>What the checkpoint tries</summary>
#
# It watches the calls your code makes: `tl.embed_with_positions`, or an alias of it, fails.
# First the leak test on the model built from your pieces with your input step; then Equation 8
# on small tables, on a simulated GPU, and one training step of the lab's model on it.
#
# </details>
#
# <details><summary>Hint</summary>
#
# `tok_emb(idx)` is `(B, T, d_model)`. The positions are `torch.arange(T, device=idx.device)`
# (on the device of `idx`, so that the same code runs on a GPU), and `pos_emb` of them is
# `(T, d_model)`; adding the two broadcasts over the batch.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex3_embed", "locked": false, "solution": true, "schema_version": 3}
def embed_with_positions(idx, tok_emb, pos_emb):
    """idx: (B, T) token ids -> h^(0): (B, T, d_model), token embedding plus position vector."""
    ### BEGIN SOLUTION
    positions = torch.arange(idx.shape[1], device=idx.device)  # (T,): 0 .. T-1
    return tok_emb(idx) + pos_emb(positions)  # (B, T, d_model) + (T, d_model)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex3_check", "locked": true, "points": 2, "solution": false, "schema_version": 3}
check.exercise_3(embed_with_positions, pieces)  # the leak test on your pieces first
### BEGIN HIDDEN TESTS
from checkpoints import positions_hidden as hidden

hidden.exercise_3(embed_with_positions)
### END HIDDEN TESTS

# %% [markdown]
# **Next, while you work here:** open notebook 04 in a new tab now and run its first two cells
# (the parameters and the setup, where Google asks for your Drive); its runtime starts while you
# finish this one.

# %% [markdown]
# ## The model is complete
#
# Your three pieces make the model of Equation 14. Before training: the **leak test on its
# logits**, and its **loss**, near $\ln 65$.
#
# <details><summary>What the cell runs</summary>
#
# Every attention step is your attention function under your mask, computed as written
# (Equations 3-4, never PyTorch's fused kernel). Where a piece of notebook 01 or 02 was not
# found, the course's stands in, as the lines printed under the imports said. The leak test changes the token at one
# position; no logit before it may move at all. The model runs in evaluation mode, so dropout
# cannot blur the comparison. Untrained, it spreads its guesses almost evenly over the 65
# characters, so its loss is near $\ln 65$; notebook 04 trains it.
#
# </details>

# %%
pieces = pieces.using("embedding", embed_with_positions, "this notebook")
model = pieces.model(explicit=True).eval()  # Equations 3-4 as written, in every layer
largest_leak = leak.model_leak_test(model, "the untrained model", pieces=pieces)
untrained_nats = check.untrained_loss(model, corpus, characters=BUDGET.test_characters)

# %% tags=["maintainer"]
record(RESULTS, {"leak": {"untrained_model": largest_leak}, "untrained_gpt_nats": untrained_nats})

# %% [markdown]
# ## After the lab · for reading afterwards
#
# ### Why attention is blind to order
#
# The output at position $t$ is a weighted sum over the positions it reads,
# $\bar v_t = \sum_{i \le t} \alpha_{t,i} v_i$, and each weight $\alpha_{t,i}$ and value $v_i$ is
# computed from the *contents* $h_t$ and $h_i$ alone. The index $i$ only labels the terms of the
# sum. Reorder the positions before $t$ and the same terms are added in another order: for a
# self-attention layer, what it reads is an unordered collection.
#
# That is the question the order checkpoint answered, before your Exercise 3: is the output at
# the last position the same for the two orders, without positions? With them?
#
# The lab *learns* the $p_t$ of Equation 8, as GPT models do: a second embedding table with one
# row per position, $T_\text{max}$ rows, trained with everything else. The same character at two
# positions now enters the first layer as two different vectors.
#
# <details><summary>What the positions are worth after training</summary>
#
# Measured in notebook 04's "After the lab", section "The ablation ladder", row `no_positions`:
# the mini-GPT trained without its position table, on the full model's seeds.
#
# </details>
#
# ### The loss before training
#
# What is the cross-entropy, in nats per character, of a model that gives each of the 65
# characters the probability $1/65$?
#
# <details><summary>Answer</summary>
#
# $-\ln(1/65) = \ln 65$. A loss well above it would mean that the untrained
# model is confidently wrong, because its logits start too large; that costs the first part of
# training just undoing the initialisation.
#
# </details>
#
# ### Sinusoidal encodings (not used in the lab)
#
# The original transformer does not learn $p_t$: it fixes it by a formula, with no parameters.
# For the coordinate pairs $j = 0, \dots, d_\text{model}/2 - 1$,
#
# $$p_{t,2j} = \sin(\omega_j t), \qquad p_{t,2j+1} = \cos(\omega_j t), \qquad
#   \omega_j = 10000^{-2j/d_\text{model}} \quad (9)$$
#
# Each pair of coordinates is a point going round a circle at its own speed: fast for the first
# pairs, very slow for the last ones, like a clock with $d_\text{model}/2$ hands. The cell draws
# $p_t$ for $d_\text{model} = 128$ and $T_\text{max} = 128$: on the left every coordinate over
# $t$, the sines and the cosines grouped; on the right a few sines. It also checks one
# consequence of the angle-addition formulas: moving $\Delta$ positions turns every pair by the
# same angle $\omega_j \Delta$, whatever $t$ is, so $p_t^\top p_{t+\Delta}$ depends on $\Delta$
# only.

# %%
T_MAX, D_MODEL = 128, 128
t = torch.arange(T_MAX, dtype=torch.float64)[:, None]  # (T_max, 1)
omega = 10000.0 ** (-2 * torch.arange(D_MODEL // 2, dtype=torch.float64) / D_MODEL)  # (d/2,)
P = torch.empty(T_MAX, D_MODEL, dtype=torch.float64)
P[:, 0::2] = torch.sin(omega * t)  # (T_max, d/2)
P[:, 1::2] = torch.cos(omega * t)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
by_kind = torch.cat([P[:, 0::2], P[:, 1::2]], dim=1)  # the 64 sines, then the 64 cosines
image = left.imshow(by_kind.T, aspect="auto", cmap="cividis", vmin=-1, vmax=1, origin="lower")
left.axhline(D_MODEL // 2 - 0.5, color="black", linewidth=0.8)
left.set_xlabel("position t")
left.set_yticks([0, 32, 64, 96], ["sin, j = 0", "sin, j = 32", "cos, j = 0", "cos, j = 32"])
left.set_title("p_t, one column per position")
fig.colorbar(image, ax=left)
for coordinate, line in zip((10, 20, 40, 60), ("-", "--", ":", "-."), strict=True):
    label = f"coordinate {coordinate}, ω = {omega[coordinate // 2]:.3g}"
    right.plot(P[:, coordinate], linestyle=line, label=label)
right.set_xlabel("position t")
right.set_title("a few coordinates (sines) over t")
right.legend(fontsize=8, loc="lower left")
fig.tight_layout()
plt.show()

for delta in (1, 5, 20):
    dots = ", ".join(f"{(P[s] @ P[s + delta]).item():.4f}" for s in (0, 30, 90))
    print(f"p_t · p_(t+{delta:>2}) for t = 0, 30, 90: {dots}")

# %% [markdown]
# The lab uses the learned table instead. Vaswani et al. found the two about equally good; the
# learned one is simpler to write and has a plain limit: there is no $p_t$ for
# $t \ge T_\text{max}$. Both are *absolute* encodings: they mark where a token is and leave the
# layers to work out how far apart two tokens are.
#
# ### Check yourself
#
# **1.** Leave out the positional encodings but keep the causal mask. Feed a single attention
# layer *dog bites man* (three word tokens) and then *bites dog man*. Is the output at position 3
# the same? Stack a second attention layer on top: is the output at position 3 still the same?
#
# <details><summary>Answer</summary>
#
# One layer: the same, as "Attention is blind to order" at the top showed with characters. Position 3 holds *man*
# in both orders and reads the set {dog, bites, man}; nothing in the sum depends on where each
# element came from. Two layers: in general not. The first layer's outputs at positions 1 and 2
# differ between the orders: in *dog bites man*, position 1 is *dog* having read itself alone
# and position 2 is *bites* having read {dog, bites}; in *bites dog man*, position 1 is *bites*
# alone and position 2 is *dog* having read both. The second layer at position 3 therefore reads
# a different set of vectors. The causal mask lets a little order in, because how much a
# position may read depends on where it stands; that signal is weak and indirect, which is why
# the model still gets Equation 8.
#
# </details>
#
# **2.** The lab's model has $T_\text{max} = 128$ learned positions. What happens if you hand
# it a 200-character text, and how does the lab's sampler deal with long texts? Would
# sinusoidal encodings remove the limit?
#
# <details><summary>Answer</summary>
#
# The position table has no rows for positions 128 to 199, so the lookup fails (the package's
# `embed_with_positions` says so and asks you to crop). The sampler feeds the model only the
# last 128 characters, so each prediction sees at most 128 characters of context. Sinusoidal
# vectors exist for every $t$, so the lookup would no longer fail, but the model has never been
# trained on positions beyond its training length and nothing promises that it handles them
# well.
#
# </details>
