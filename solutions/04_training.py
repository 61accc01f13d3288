# %% [markdown]
# # Lab 5 · Notebook 4 — Train the mini-GPT and compare it with the LSTM
#
# Part B: your model of 01–03 learns. **Exercise 4** writes its loss; then you predict, train
# and compare.
#
# <details><summary>More</summary>
#
# Your pieces were kept when their checkpoints passed: your attention (01), your mask (02) and
# your input step (03); where one is missing, the course's stands in. Every row of the results
# table is scored on the **same 60,394 test characters**. On a Colab T4 the `auto` mode trains
# at the lab's full budget (batch 64 × 3,000 steps); on a CPU it picks the shorter `quick`
# budget (batch 16 × 1,500 steps). The table states the budget of every row: the comparison is
# at a stated budget, never an absolute ranking.
#
# </details>

# %% tags=["maintainer"]
# For the course's pipeline only (`make regenerate-baselines`); left out of student notebooks.
from transformer_lab.baselines import lab3_label, record

SEEDS = [0]  # the pipeline passes its training seeds here
RESULTS = None  # and a JSON path that collects the measurements

# %% tags=["parameters"]
MODE = "auto"  # auto | full | quick | smoke | grade: how much compute the notebook spends
DEVICE = "auto"  # auto | cpu | cuda | mps
SEED = 0  # the training seed: change it to see how much one run differs from another
USE_DRIVE = True  # on Colab, copy your model to your Google Drive; set it to False to decline
PIECES = "yours"  # yours | course: the pieces the mini-GPT trains on ("course": faster)

# %% cellView="form"
# @title Imports, the device, your Drive (on Colab, Google asks for your consent here) and pieces
import math

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display

import transformer_lab as tl
from checkpoints import training as check
from checkpoints import yours
from checkpoints.leak import model_leak_test
from transformer_lab.baselines import lab3_lstm_row
from transformer_lab.reading.saved_run import save_run
from transformer_lab.report import ResultRow, results_markdown

DEVICE, BUDGET = tl.start_notebook(MODE, DEVICE)
tl.use_drive(USE_DRIVE)  # on Colab, Google asks for your consent here
corpus = tl.load_corpus(DEVICE)
pieces = yours.load(USE_DRIVE, use=PIECES)  # the mini-GPT below is built from these

# %% [markdown]
# ## Exercise 4 · The loss, perplexity and bits per character (14 min, with the training)
#
# The loss is the mean negative log-probability of the character that came next, with
# $\hat y_t = \mathrm{softmax}(z_t)$ of the logits (Equation 15):
#
# $$\mathcal L = -\frac{1}{T}\sum_{t=1}^{T}\log \hat y_t[w_{t+1}] \ \text{(nats)}, \qquad
#   \mathrm{PPL} = \exp(\mathcal L), \qquad \text{bits per character} = \mathcal L / \ln 2 .$$
#
# Write `lm_metrics(logits, targets)` for logits `(B, T, vocab)` and targets `(B, T)`: average
# over **every position** and return three floats, `(nats, perplexity, bits)`.

# %% [markdown]
# <details><summary>Hint</summary>
#
# `torch.log_softmax(logits, dim=-1)` gives $\log \hat y_t$ for every character;
# `.gather(-1, targets.unsqueeze(-1))` picks the one that came next. Or use
# `torch.nn.functional.cross_entropy`, which wants the classes on axis 1 (or flattened inputs).
# `.item()` turns a 0-d tensor into a float.
#
# </details>


# %% nbgrader={"grade": false, "grade_id": "ex4_metrics", "locked": false, "solution": true, "schema_version": 3}
def lm_metrics(logits, targets):
    """logits (B, T, vocab), targets (B, T) -> (nats, perplexity, bits) as Python floats."""
    ### BEGIN SOLUTION
    log_probs = torch.log_softmax(logits, dim=-1)  # (B, T, vocab)
    nats = -log_probs.gather(-1, targets.unsqueeze(-1)).mean().item()  # picked: (B, T, 1)
    return nats, math.exp(nats), nats / math.log(2)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ex4_check", "locked": true, "points": 2, "solution": false, "schema_version": 3}
check.exercise_4(lm_metrics)
### BEGIN HIDDEN TESTS
from checkpoints import training_hidden as hidden

hidden.exercise_4(lm_metrics)
### END HIDDEN TESTS

# %% [markdown]
# ### Your prediction (before you train)
#
# The mini-GPT (824,897 parameters) reads at most 128 characters; the LSTM (350,593) carries its
# state through the whole test split; same loop, same budget. **Which will reach the lower test
# loss here, and why?** Two or three sentences: reasons count, not the outcome.

# %% [markdown] nbgrader={"grade": true, "grade_id": "ex4_prediction", "locked": false, "points": 1, "solution": true, "schema_version": 3}
# ### BEGIN SOLUTION
# A reasoned prediction, e.g.: at a small budget the LSTM may well win — it is smaller, its
# recurrence is a strong prior for character sequences, and it sees unlimited context at test
# time — while the transformer's advantages (parallel training, short paths between positions)
# pay off with more data and compute. At a larger budget the GPT may catch up.
#
# **Rubric (1 point, graded by hand).** The point goes to an answer that (a) names which model
# will end lower, or says they will tie, and (b) gives at least one reason that rests on how
# the two runs differ: the parameter counts, the 128-character window against the carried
# state, the bias recurrence brings to character sequences, or what this budget lets each one
# learn. No point for an answer with no prediction, a prediction with no reason, or a reason
# that gets the setup wrong (for instance "the LSTM only sees 128 characters"). The result of
# the run does not matter: a well-argued prediction that turns out wrong earns the point.
# ### END SOLUTION

# %% cellView="form"
# @title The baselines: Lab 1's character n-grams, scored on the test split
rows = []  # the baselines: Lab 1's character n-grams, add-k smoothed; rows of the table below
for name, order, k in (("trigram, add-k 0.1", 3, 0.1), ("5-gram, add-k 0.01", 5, 0.01)):
    score = tl.evaluate_ngram(corpus, order, k, characters=BUDGET.test_characters)
    rows.append(ResultRow.from_score(f"character {name}", 1, score))
trigram_nats = rows[0].nats

# %% tags=["maintainer"]
record(RESULTS, {"rows": {"trigram": rows[0].as_dict(), "5gram": rows[1].as_dict()}})

# %% [markdown]
# ## Train the mini-GPT and the LSTM
#
# Stop (■) keeps what was trained so far; running the cell again starts over.
#
# **Next, while it trains:** open notebook 05 in a new tab and run its first two cells only (your
# Drive is asked there); 05 reads the model saved below.
#
# <details><summary>The loop</summary>
#
# Before the first step a few steps on your pieces and on the course's are timed; if yours are
# much slower, `PIECES = "course"` in the parameters cell (the one that sets `MODE`) trains on
# the course's this time. What your pieces print while the model runs is held back and counted
# in one line.
#
# AdamW, a linear warm-up, cosine decay, gradient clipping at 1.0, and a validation estimate
# every few hundred steps. Its learning rate was picked by a short sweep on the validation split
# (`tl.choose_lr`: 300 steps a rate, seed 0) at the quick budget on a CPU, and is used at every
# budget and device: a good rate there, not necessarily the best one here. Where your pieces
# were found, every training step calls your attention function and your mask in each of the 4
# layers, and your input step once. Only where the attention and the mask are both the course's
# does PyTorch's fused kernel compute the same equations, faster. The LSTM has Lab 3's
# architecture (embedding 64, one LSTM layer of 256). The other LSTM row of the table is Lab 3's
# recipe (Adam, a constant rate, 2,000 steps, the forget-gate bias set to 1), trained again by
# this course's pipeline and read from the recorded baselines: not Lab 3's own run.
#
# </details>


# %% cellView="form"
# @title The provided loop, train_lm: the mini-GPT on your pieces, then Lab 3's LSTM the same way
def train_and_score(name, make_model, evaluate, seed, label):
    """Train one model with the provided loop at this notebook's budget; score it on test."""
    torch.manual_seed(seed)
    model = make_model()
    recipe = tl.Recipe.of(BUDGET, lr=tl.DEFAULT_LR[name])  # AdamW, warm-up, cosine decay
    history = tl.train_lm(model, corpus, recipe, seed=seed, desc=f"{name}, seed {seed}")
    score = evaluate(model, corpus, characters=BUDGET.test_characters)
    row = ResultRow.from_training(label, 5, score, history, tl.count_parameters(model))
    how = history.stopped or "trained"  # "stopped at step k of n" where Stop ended it
    trained = f"{name}, seed {seed}: {how} in {history.wall_time_s:.0f} s; test {row.nats:.4f} nats"
    print("\n".join(filter(None, [trained, tl.printed(model)])))  # your pieces' prints: one line
    return model, history, row


del rows[2:]  # run again, the cell starts over: an earlier run's rows go
# What the cell will take and how to stop it, shown before the first progress bar.
print(tl.step_cost.measure(pieces, corpus, BUDGET).said(), flush=True)
GPT_LABEL = "mini-GPT, d_model 128, 4 heads, 4 layers"
gpt, gpt_history, gpt_row = train_and_score("gpt", pieces.model, tl.evaluate_gpt, SEED, GPT_LABEL)
rows.append(gpt_row)
LSTM_LABEL = "LSTM, d_h 256, retrained with the GPT's loop and budget"
lstm, lstm_history, lstm_row = train_and_score(
    "lstm", tl.CharLSTM, tl.evaluate_lstm, SEED, LSTM_LABEL
)
rows.append(lstm_row)

# %% tags=["maintainer"]
record(RESULTS, {"rows": {"gpt": {"seeds": {str(SEED): gpt_row.as_dict()}}}})
record(RESULTS, {"rows": {"lstm": {"seeds": {str(SEED): lstm_row.as_dict()}}}})

# %% [markdown]
# ## The results table
#
# Nats per character, every row on the same 60,394 test characters.
#
# <details><summary>How each model reads</summary>
#
# The GPT reads windows of 128 moved by 64 and is scored on the second half of each (65 to 128
# characters of context); the LSTM carries its state across the whole split.
#
# </details>

# %% cellView="form"
# @title The results table: the n-grams, both LSTM rows and your mini-GPT
lab3 = lab3_lstm_row()
table = rows[:2] + ([lab3] if lab3 else []) + rows[2:][::-1]
display(Markdown(results_markdown(table)))
notes = [f"The mini-GPT of this table is built from {pieces.names()}."]
if BUDGET.test_characters:
    notes.append(f"(budget {BUDGET.name}: the first {BUDGET.test_characters:,} test characters)")
if lab3 is None:
    notes.append("Lab 3's LSTM row is not recorded yet (data/baselines.json).")
print("\n".join(notes))

# %% [markdown]
# ### Checkpoint 4b · The trained model still does not read the future
#
# The leak test on the trained weights; and the GPT must land well below the trigram.

# %%
trained_leak = model_leak_test(gpt, "the trained mini-GPT", pieces=pieces)
if gpt_row.stopped:  # fewer steps than the budget's: what it is held to does not apply
    print(f"(the mini-GPT was {gpt_row.stopped}: the comparison is not checked)")
else:
    check.gpt_well_below_trigram(gpt_row.nats, trigram_nats, BUDGET.name)

# %% tags=["maintainer"]
record(RESULTS, {"leak": {"trained_model": trained_leak}})

# %% tags=["maintainer"]
# The pipeline trains every further seed, and for full runs Lab 3's own LSTM recipe.
for seed in SEEDS:
    if seed == SEED:
        continue
    for name, make, evaluate, label in (
        ("gpt", pieces.model, tl.evaluate_gpt, GPT_LABEL),
        ("lstm", tl.CharLSTM, tl.evaluate_lstm, LSTM_LABEL),
    ):
        *_, row = train_and_score(name, make, evaluate, seed, label)
        record(RESULTS, {"rows": {name: {"seeds": {str(seed): row.as_dict()}}}})
if RESULTS is not None and BUDGET.name == "full":
    torch.manual_seed(0)
    lab3 = tl.CharLSTM(forget_gate_bias=tl.LAB3_FORGET_GATE_BIAS)
    lab3_history = tl.train_lm(lab3, corpus, tl.LAB3_RECIPE, desc="Lab 3 LSTM")
    label, score = lab3_label(lab3_history.recipe.as_dict()), tl.evaluate_lstm(lab3, corpus)
    lab3_row = ResultRow.from_training(label, 3, score, lab3_history, tl.count_parameters(lab3))
    record(RESULTS, {"rows": {"lstm_lab3": lab3_row.as_dict()}})

# %% [markdown]
# The next cell saves the model and this run (on Colab, to your Drive) for 05, 06 and "After
# the lab".
#
# <details><summary>Where it goes</summary>
#
# The files land beside this notebook, which is enough where the notebooks share a folder (a
# local Jupyter). On Colab every notebook runs on a machine of its own and these files are gone
# with this runtime, so the copies go to `MyDrive/transformer-lab/`, where 05, 06 and "After the
# lab" look first (the Drive is used as `USE_DRIVE` says). `mini_gpt.pt` says which pieces the
# model is built from; `mini_gpt_run.json` holds both results rows, the loss curves, samples of
# both models, the budget and the device. Without your model, 05 and 06 use the mini-GPT the
# course recorded, and say so.
#
# </details>

# %%
trained = {"gpt": (gpt, gpt_history, gpt_row), "lstm": (lstm, lstm_history, lstm_row)}
print(save_run(trained, rows[:2], corpus.vocab, pieces.names(), USE_DRIVE))

# %% [markdown]
# <details><summary><b>Was your prediction right?</b></summary>
#
# Set the results table's mini-GPT and LSTM rows against what you wrote under "Your prediction":
# which model is lower, by how much, and does your reason still hold? One seed at one budget is one measurement: "After the
# lab" sets it beside the course's seeds at both budgets, and says how far a seed moves the gap.
#
# </details>

# %% [markdown]
# ## After the lab: what the course measured
#
# Read it once you have written your prediction: now, or later on a new runtime (a CPU one will
# do; run the cells above Exercise 4, then this section). It reads nothing of this session's:
# your run comes from the file the saving cell wrote, the one that printed "Saved mini_gpt.pt
# and mini_gpt_run.json" (in your Drive, or beside this notebook), and the course's numbers from `data/baselines.json`, measured by the course's pipeline at the
# stated budget, device and seeds. First your run, its loss curves and the recorded table of its
# budget (or the nearest one recorded); then both budgets side by side, each recorded seed a
# marker and your run a larger one, edged in black.

# %%
from transformer_lab.baselines import load_baselines
from transformer_lab.reading.ladder import ladder_reading, recorded_ladder, try_rung
from transformer_lab.reading.lecture_reading import lecture_comparison
from transformer_lab.reading.plots import (
    budgets_line,
    loss_curves_line,
    plot_budgets,
    plot_ladder,
    plot_loss_curves,
)
from transformer_lab.reading.recorded import after_the_lab
from transformer_lab.reading.saved_run import load_run
from transformer_lab.reading.stability import plot_stability

run = load_run(USE_DRIVE)  # your saved run: where none is, it says what to run
print(run.said())
plot_loss_curves(run.curves, run.levels)
plt.show()
print(loss_curves_line(run.curves, run.levels))
gpt_nats, lstm_nats = run.budget_nats["gpt"], run.budget_nats["lstm"]  # None: a stopped model
display(Markdown(after_the_lab(run.budget, run.device_class, gpt_nats, lstm_nats)))

# %%
baselines, own = load_baselines() or {}, run.own  # a stopped run: a place of its own
plot_budgets(baselines, run.device_class, own=own)
plt.show()
print(budgets_line(baselines, run.device_class, own=own))

# %% [markdown]
# ### Samples
#
# Each model of your run after the same prompt, as the saving cell sampled them.

# %%
print(run.samples())

# %% [markdown]
# ### Your `lm_metrics` beside PyTorch's
#
# Your `lm_metrics` on one batch of test windows of your saved mini-GPT, beside PyTorch's
# `F.cross_entropy` on the same logits: the two must agree. (On a new runtime, first run the cell
# of Exercise 4 where you wrote `lm_metrics`.)

# %%
saved_gpt = run.gpt(DEVICE)
x, y = tl.sample_batch(corpus.test, 8, saved_gpt.config.T_max, torch.Generator().manual_seed(0))
with torch.no_grad():
    logits = saved_gpt(x).float()
nats, perplexity, bits = lm_metrics(logits, y)
reference = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten()).item()
print(
    f"yours: {nats:.4f} nats, perplexity {perplexity:.3f}, {bits:.4f} bits;  "
    f"reference: {reference:.4f} nats"
)

# %% [markdown]
# The lecture's "After the Lab" reads a table of its own run. Below, each of its points is set
# against this course's recorded runs, computed from the same file: the margin over the counts,
# the two LSTM rows, GPT against the retrained LSTM at each budget (one verdict per budget: the
# gap between the mean losses against its own 95 % interval over the seeds, seed by seed where
# that narrows it; fewer than three seeds of each model settle nothing), the trend from one
# budget to the other, the budget in parameters and training time, and the context each model
# reads. Where this course's numbers differ from the lecture's, it says so.

# %%
display(Markdown(lecture_comparison(run.device_class)))

# %% [markdown]
# ### The ablation ladder
#
# The lecture says why each part of the model is there: positions, because attention is blind
# to order (§5); the 1/√d_k, to keep the softmax out of saturation (§2); several narrow heads
# rather than one wide one (§4); pre-norm, which trains stably and without warm-up (§6); the
# feed-forward layer (§6). The ladder trains the mini-GPT again without one part, on the
# complete model's seeds, each rung and the complete model at its own best rate, and reads it
# by the rule of "GPT against the retrained LSTM" above. The figure shows each rung's Δ test
# loss with its 95% interval and each seed's difference. The table says first what each row's Δ
# tests: only where that is the claim as stated does it say whether the claim holds; the other
# rows say what they measured. Under it, the two claims a final loss cannot test: §6's
# stability, read from the rates at which each arrangement trains (the second figure), and §2's
# scale, where its premise holds.

# %%
plot_ladder(baselines, run.budget, run.device_class)  # nothing drawn where none is recorded
plt.show()
ladder = recorded_ladder(run.budget, run.device_class, baselines)
if ladder and plot_stability(ladder[1]):  # a ladder recorded with its stability grid
    plt.show()
display(Markdown(ladder_reading(run.budget, run.device_class)))

# %% [markdown]
# <details><summary>Optional: train one rung yourself</summary>
#
# On a T4 the next cell trains the rung `RUNG` names, one seed at the quick budget, and sets its
# test loss beside the recorded seeds. On a CPU it says what the training would take and trains
# only if you set `TRAIN_ON_CPU = True`. Stop (■) ends the training where it is: the cell says
# so, and does not set the stopped rung beside the recorded seeds; running it again starts over.
#
# </details>

# %%
RUNG = "no_positions"  # or no_scaling, post_norm, no_warmup, one_head, no_ffn
TRAIN_ON_CPU = False
print(try_rung(RUNG, corpus, DEVICE, TRAIN_ON_CPU, most=BUDGET))

# %% [markdown]
# ### Check yourself
#
# **1.** The model has $d_{\text{model}} = 128$, 4 layers and $T_{\max} = 128$ with learned
# positions. You double $T_{\max}$ to 256. Which parameters grow and by how many? What happens to
# the attention cost of a full window? With $T_{\max} = 128$, which characters of a
# 300-character text can influence the prediction of character 301?
#
# <details><summary>Answer</summary>
#
# Only the position table grows: 128 new rows of 128, that is 16,384 parameters on top of
# 824,897. Nothing in a block depends on the sequence length. The attention step costs
# $O(T^2 d)$ per layer, so a full window of 256 costs four times one of 128 and stores four times
# as many weights. Character 301 depends on characters 173 to 300 and on nothing before them: a
# hard cutoff, unlike the LSTM's fading memory.
#
# </details>
#
# **2.** At $T = d = 128$, compare $T^2 d$ with $T d^2$; then keep $d = 128$ and set
# $T = 1{,}024$. How many forward passes does sampling 300 characters take?
#
# <details><summary>Answer</summary>
#
# At $T = d$ both are $128^3 = 2{,}097{,}152$. Their ratio is $T/d$, so at $T = 1{,}024$
# self-attention costs 8 times the recurrent layer. Sampling 300 characters takes 300 forward
# passes, one after another: each needs the character sampled before it. Within a pass the
# positions are computed in parallel but only the last one is used; the parallelism that
# matters is in training, where every target is known.
#
# </details>
