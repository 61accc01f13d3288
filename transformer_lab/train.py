"""train_lm: one training loop for the mini-GPT and the LSTM, and a learning-rate sweep.

The step never waits for the GPU: the loss is summed on the device and read only every
`log_every` steps, a run's batch starts are drawn before its first step and moved to the device
in one copy (each step gathers its windows there), and the learning rate is a Python float set
before each step. The step calls the model as it was given: a plugged-in attention, mask or
embedding (the student's) is what every step runs, never swapped for a faster kernel.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from .data import Corpus, draw_starts, windows_at
from .model import MiniGPT, MultiHeadAttention
from .runtime import Budget, Precision, precision_for

T_DEFAULT = 128
# The rates `choose_lr` picked at the quick budget on a CPU (300-step sweeps, seed 0):
# `python -m transformer_lab train --model gpt --lr auto` repeats the sweep.
DEFAULT_LR = {"gpt": 4e-3, "lstm": 3.2e-2}
# Lab 3's own LSTM run, recorded beside the retrained LSTM: Adam at a constant rate, batch 64,
# 2,000 steps, the forget-gate bias set to 1.
VAL_SEED = 1234  # the validation windows: the same at every estimate of every run
# Adam's (beta1, beta2). AdamW's beta2 is 0.99, not PyTorch's 0.999 (nanoGPT's choice for
# character-level Shakespeare): the second-moment average then spans about 100 steps instead of
# 1,000, so it keeps up with gradients that change quickly in runs of a few thousand small batches.
BETAS = {"adamw": (0.9, 0.99), "adam": (0.9, 0.999)}
FINAL_LR_RATIO = 0.1  # cosine decay ends at a tenth of the peak rate


def training_summary(recipe: dict) -> str:
    """A recipe's optimizer and schedule in the words a results table's row label uses:
    "Adam, constant rate" or "AdamW, warm-up and cosine decay"."""
    name = {"adam": "Adam", "adamw": "AdamW"}[recipe["optimizer"]]
    rate = "constant rate" if recipe["schedule"] == "constant" else "warm-up and cosine decay"
    return f"{name}, {rate}"


@dataclass(frozen=True)
class Recipe:
    """How a run trains: every setting the training loop reads, in one object, handed to
    `train_lm`. The loop completes it with what the model and the device decide (the dropout
    rate, the precision), reads each setting from it and keeps it in the history, so the record
    of a run says how it was trained (data/baselines.schema.json, `recipe`). `Recipe.of(budget,
    lr=...)` is the course's recipe at a budget; Lab 3's is LAB3_RECIPE."""

    optimizer: str  # "adamw" (decay on matrices and embeddings) or "adam" (no decay)
    lr: float  # the peak learning rate
    betas: tuple[float, float]
    weight_decay: float  # 0 for Adam
    schedule: str  # "cosine" (linear warm-up, cosine decay) or "constant"
    warmup_steps: int  # 0 for a constant rate
    final_lr_ratio: float | None  # the decay's last rate over the peak; None for a constant rate
    grad_clip: float | None  # the gradients' largest global norm; None: not clipped
    dropout: float | None  # the model's dropout rate while training (None: read from the model)
    batch_size: int
    steps: int
    T: int  # characters of context a window holds
    precision: str | None  # "fp32", "bf16" or "fp16" (None: the device's, `precision_for`)
    # The budget it was made for: its name and validation cadence. Not recorded.
    budget: Budget | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        budget: Budget,
        *,
        lr: float,
        T: int = T_DEFAULT,
        optimizer: str = "adamw",
        schedule: str = "cosine",
        weight_decay: float = 0.1,
        warmup: int | None = None,
        grad_clip: float | None = 1.0,
        precision: str | None = None,
    ) -> Recipe:
        """The recipe of a run at `budget`: AdamW with a linear warm-up over a twentieth of the
        steps, cosine decay and clipping at 1.0, unless told otherwise."""
        if optimizer not in BETAS:
            raise ValueError(f"optimizer must be 'adamw' or 'adam', got {optimizer!r}")
        if schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule must be 'cosine' or 'constant', got {schedule!r}")
        cosine = schedule == "cosine"
        return cls(
            optimizer=optimizer,
            lr=lr,
            betas=BETAS[optimizer],
            weight_decay=weight_decay if optimizer == "adamw" else 0.0,
            schedule=schedule,
            warmup_steps=(budget.steps // 20 if warmup is None else warmup) if cosine else 0,
            final_lr_ratio=FINAL_LR_RATIO if cosine else None,
            grad_clip=grad_clip,
            dropout=None,
            batch_size=budget.batch_size,
            steps=budget.steps,
            T=T,
            precision=precision,
            budget=budget,
        )

    def on(self, model: nn.Module, device) -> Recipe:
        """This recipe as it runs `model` on `device`: its dropout rate, the device's precision
        (where the recipe names none)."""
        dropout = max((m.p for m in model.modules() if isinstance(m, nn.Dropout)), default=0.0)
        precision = self.precision or precision_for(device).name
        return replace(self, dropout=dropout, precision=precision)

    def lr_at(self, step: int) -> float:
        if self.schedule == "constant":
            return self.lr
        return lr_at(step, self.steps, self.lr, self.warmup_steps, self.final_lr_ratio)

    def summary(self) -> str:
        return training_summary(self.as_dict())

    def as_dict(self) -> dict:
        """What a run's record keeps: every setting, not the budget it was made for."""
        recorded = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "budget"}
        return recorded | {"betas": list(self.betas)}

    @classmethod
    def from_dict(cls, recorded: dict) -> Recipe:
        return cls(**(recorded | {"betas": tuple(recorded["betas"])}))


# Lab 3's own LSTM run, recorded beside the retrained LSTM: Adam at a constant rate, batch 64,
# 2,000 steps, a validation estimate every 500, the forget-gate bias set to 1.
LAB3_RECIPE = Recipe.of(
    Budget("lab3", 64, 2000, 500, 20), lr=2e-3, optimizer="adam", schedule="constant"
)
LAB3_FORGET_GATE_BIAS = 1.0


@dataclass
class TrainHistory:
    budget: str
    seed: int
    device: str
    recipe: Recipe  # how the run trained, as the loop read it
    train_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, mean since last)
    val_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, estimate)
    wall_time_s: float = 0.0
    compiled: bool = False  # True when torch.compile ran the training steps
    loss_scale: float | None = None  # the GradScaler's final scale (fp16 only)
    # The steps taken when Stop (■) ended the run in a notebook; None: it took the recipe's.
    stopped_at: int | None = None

    @property
    def planned_steps(self) -> int:
        return self.recipe.steps

    @property
    def steps(self) -> int:
        """The steps it trained: the recipe's, or fewer where Stop ended it."""
        return self.recipe.steps if self.stopped_at is None else self.stopped_at

    @property
    def stopped(self) -> str | None:
        """'stopped at step 412 of 1,500' where Stop ended the run; None where it ran them all."""
        if self.stopped_at is None:
            return None
        return stopped_words(self.stopped_at, self.recipe.steps)

    @property
    def precision(self) -> str:
        return self.recipe.precision

    @property
    def tokens_per_s(self) -> float:
        return self.steps * self.recipe.batch_size * self.recipe.T / self.wall_time_s


def stopped_words(stopped_at: int, steps: int) -> str:
    """How a run that Stop ended is named wherever it is shown: 'stopped at step 412 of 1,500'."""
    return f"stopped at step {stopped_at:,} of {steps:,}"


def lr_at(
    step: int, steps: int, lr: float, warmup: int, final_ratio: float = FINAL_LR_RATIO
) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to final_ratio * lr."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (final_ratio + (1 - final_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def _loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = model(x)  # (B, T, vocab)
    # fp32 even for fp16/bf16 logits: a half-precision log-softmax and mean over B*T tokens
    # would round the loss and the gradient it starts. Autocast already does this for
    # cross_entropy; the cast keeps it so for a model whose weights are themselves half.
    return F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())


def validation_starts(split: torch.Tensor, batch_size: int, T: int, batches: int) -> torch.Tensor:
    """The starts (batches, B) of the windows every validation estimate scores, on the split's
    device. A CPU generator: every device scores the same windows (CUDA's draws other numbers)."""
    return draw_starts(split, batch_size, T, batches, torch.Generator().manual_seed(VAL_SEED))


@torch.no_grad()
def estimate_loss(
    model: nn.Module, split: torch.Tensor, starts: torch.Tensor, T: int, precision: Precision
) -> float:
    """Mean loss over the windows of `split` at `starts` (batches, B), read once at the end."""
    was_training = model.training
    model.eval()
    total = torch.zeros((), device=split.device)
    for batch_starts in starts:
        x, y = windows_at(split, batch_starts, T)
        with precision.autocast():
            total += _loss(model, x, y)
    model.train(was_training)
    return total.item() / len(starts)


def _optimizer(model: nn.Module, recipe: Recipe, device) -> torch.optim:
    # CUDA: the fused kernel updates every parameter in one launch. CPU: PyTorch's default (the
    # per-parameter loop); foreach=True was not measured on an idle CPU, so it is not switched on.
    fused = torch.device(device).type == "cuda" or None
    if recipe.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=recipe.lr, betas=recipe.betas, fused=fused)
    # Decay matrices and embeddings; leave biases and LayerNorm gains alone.
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    groups = [
        {"params": decay, "weight_decay": recipe.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=recipe.lr, betas=recipe.betas, fused=fused)


def _compile_failed(err: BaseException) -> None:
    reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
    print(f"torch.compile failed ({type(err).__name__}: {reason[:160]}); training eagerly")


def plugged_in(model: nn.Module) -> list[str]:
    """The pieces of `model` that run a plugged-in function (the student's): "attention",
    "mask", "embedding"."""
    pieces = set()
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            pieces |= {name for name in ("attention", "mask") if getattr(module, name) is not None}
        if isinstance(module, MiniGPT) and module.embed is not None:
            pieces.add("embedding")
    return [name for name in ("attention", "mask", "embedding") if name in pieces]


def _try_compile(model: nn.Module):
    """torch.compile(model), or model itself (with a printed reason) where that raises or where
    the model runs plugged-in functions: compiled steps trace such a function once and then run
    the graph, so the function the student wrote would not be what each step calls."""
    pieces = plugged_in(model)
    if pieces:
        print(
            f"torch.compile not used: the model runs a plugged-in {', '.join(pieces)}, which "
            "every step must call itself; training eagerly"
        )
        return model
    try:
        return torch.compile(model)
    except Exception as err:
        _compile_failed(err)
        return model


def _rng_state(device: torch.device):
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return torch.get_rng_state(), cuda


def _set_rng_state(device: torch.device, state) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


def train_lm(
    model: nn.Module,
    corpus: Corpus,
    recipe: Recipe,
    *,
    seed: int = 0,
    log_every: int | None = None,
    progress: bool = True,
    desc: str = "training",
    compile: bool = False,
) -> TrainHistory:
    """Train `model` (MiniGPT or CharLSTM) on the training split, on the corpus's device, as
    `recipe` says (made with `Recipe.of(budget, lr=...)`: its budget sets the validation cadence).

    compile: run the training steps through torch.compile(model); where compiling fails (no
    compiler, an unsupported platform) or the model runs a plugged-in attention, mask or
    embedding (`plugged_in`), print a one-line reason and train eagerly. Validation always runs
    eagerly. `history.compiled` says which ran. The batches: `run_windows`. Returns the history:
    the `Recipe` the loop read, training loss every `log_every` steps, validation loss every
    `budget.eval_every` steps and at the end. In a notebook, Stop (■) ends the loop at the step
    it reached: the model keeps it, and the history says so (`stopped_at`, `_close_stopped`).
    """
    budget = recipe.budget
    if budget is None:
        raise ValueError("a recorded recipe cannot train: make one with Recipe.of(budget, lr=...)")
    device = corpus.device
    recipe = recipe.on(model, device)
    precision = Precision(recipe.precision, device.type)
    log_every = log_every or max(1, min(50, budget.steps // 20))
    torch.manual_seed(seed)  # dropout
    starts, val_starts = run_windows(corpus, budget, recipe.T, seed)
    model.to(device).train()
    opt = _optimizer(model, recipe, device)
    scaler = torch.amp.GradScaler(device.type, enabled=precision.needs_scaler)
    history = TrainHistory(budget.name, seed, str(device), recipe)
    step_module = _try_compile(model) if compile else model
    stepper = _TrainingStep(model, step_module, opt, scaler, precision)
    running, done = torch.zeros((), device=device), 0
    with tqdm(total=budget.steps, desc=desc, disable=not progress, leave=False) as bar:
        start = time.perf_counter()
        try:
            for step in range(recipe.steps):
                _set_lr(opt, recipe.lr_at(step))
                x, y = windows_at(corpus.train, starts[step], recipe.T)
                running += stepper.take(x, y, recipe.grad_clip, first=step == 0).detach()
                done = step + 1
                if done % log_every == 0 or done == recipe.steps:
                    _log_training_loss(history, running, done, time.perf_counter() - start, bar)
                if done % budget.eval_every == 0 or done == recipe.steps:
                    loss = estimate_loss(model, corpus.val, val_starts, recipe.T, precision)
                    history.val_loss.append((done, loss))
        except _stop_in_a_notebook():  # Stop (■) pressed on the cell: the steps taken are kept
            history.stopped_at = done
        if history.stopped_at is not None:  # past the except: a second Stop ends it at once
            validate = partial(estimate_loss, model, corpus.val, val_starts, recipe.T, precision)
            _close_stopped(history, running, time.perf_counter() - start, bar, desc, validate)
        history.wall_time_s = time.perf_counter() - start
    history.compiled, history.loss_scale = stepper.compiled, _final_scale(scaler)
    model.eval()
    return history


GRADING_ENV = "NBGRADER_EXECUTION"  # set in the kernels nbgrader grades in
STOPPED = "the model keeps what it learned; run the cell again to start over"


def _stop_in_a_notebook() -> type[KeyboardInterrupt] | tuple:
    """What `train_lm` catches: KeyboardInterrupt in an IPython shell (a notebook's kernel),
    where it is Stop (■) pressed on a cell whose later cells want the model. Nothing in a
    script, where Ctrl-C ends the program as ever (a sweep's or a ladder's run is never kept
    half-trained), nor while nbgrader grades, where the interrupt is a cell's timeout: the
    cell ends there, and the kernel is free for the next."""
    ipython = sys.modules.get("IPython")
    in_a_notebook = ipython is not None and ipython.get_ipython() is not None
    return KeyboardInterrupt if in_a_notebook and not os.environ.get(GRADING_ENV) else ()


def _close_stopped(
    history: TrainHistory, running, elapsed: float, bar, desc: str, validate: Callable[[], float]
) -> None:
    """A run Stop ended: one line that says so, the training loss since the last log, and a
    validation estimate at the step reached, so that the cells below have a number."""
    done = history.stopped_at
    print(f"{history.stopped.capitalize()} ({desc}): {STOPPED}")
    if done > (history.train_loss[-1][0] if history.train_loss else 0):
        _log_training_loss(history, running, done, elapsed, bar)
    if not history.val_loss or history.val_loss[-1][0] != done:
        history.val_loss.append((done, validate()))


def run_windows(
    corpus: Corpus, budget: Budget, T: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A run's `budget.steps` batches of training starts and its validation windows' starts,
    drawn before the first step on a CPU generator seeded with `seed` (the same on every device)
    and moved to the corpus's device once: a copy per step would wait for the GPU's queued work."""
    generator = torch.Generator().manual_seed(seed)
    starts = draw_starts(corpus.train, budget.batch_size, T, budget.steps, generator)
    return starts, validation_starts(corpus.val, budget.batch_size, T, budget.eval_batches)


def _final_scale(scaler: torch.amp.GradScaler) -> float | None:
    """The GradScaler's last scale (fp16 only), None where it did not run."""
    return scaler.get_scale() if scaler.is_enabled() else None


def _set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for group in opt.param_groups:
        group["lr"] = lr


@dataclass
class _TrainingStep:
    """One training step. The forward pass calls `step_module`, the compiled model or `model`
    itself; either way the optimizer updates `model`'s parameters, which both share."""

    model: nn.Module
    step_module: nn.Module
    opt: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    precision: Precision

    @property
    def compiled(self) -> bool:
        return self.step_module is not self.model

    def take(self, x, y, grad_clip: float | None, first: bool = False) -> torch.Tensor:
        """Forward, backward and update on one batch; returns the loss (not synced)."""
        if first and self.compiled:
            loss = self._first_compiled(x, y)
        else:
            loss = self.forward_backward(self.step_module, x, y)
        _update(self.model, self.opt, self.scaler, grad_clip)
        return loss

    def forward_backward(self, module: nn.Module, x, y) -> torch.Tensor:
        with self.precision.autocast():
            loss = _loss(module, x, y)
        self.scaler.scale(loss).backward()
        return loss

    def _first_compiled(self, x, y) -> torch.Tensor:
        """torch.compile compiles at the first call, so that is where it can fail: then print
        why, and take the step eagerly with the same dropout masks, and every step after it."""
        rng = _rng_state(x.device)
        try:
            return self.forward_backward(self.step_module, x, y)
        except Exception as err:
            _compile_failed(err)
            _set_rng_state(x.device, rng)
            self.opt.zero_grad(set_to_none=True)
            self.step_module = self.model
            return self.forward_backward(self.model, x, y)


def _update(model: nn.Module, opt, scaler, grad_clip: float | None) -> None:
    """Clip (on unscaled gradients), step through the scaler, clear the gradients."""
    if grad_clip is not None:
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)


def _log_training_loss(history: TrainHistory, running, done: int, elapsed: float, bar) -> None:
    """The mean training loss since the last log: the loop's one host sync."""
    seen = done - (history.train_loss[-1][0] if history.train_loss else 0)
    mean = running.item() / seen
    running.zero_()
    history.train_loss.append((done, mean))
    tokens_per_s = done * history.recipe.batch_size * history.recipe.T / elapsed
    bar.set_postfix(loss=f"{mean:.3f}", tok_s=f"{tokens_per_s:,.0f}")
    bar.update(done - bar.n)


WARM_UP_STEPS = 2


def seconds_a_step(
    model: nn.Module, corpus: Corpus, budget: Budget, *, lr: float, steps: int = 3
) -> tuple[float, float]:
    """(one training step, one validation batch) of `model` in seconds, at `budget`'s batch size
    on the corpus's device, taken as train_lm takes them (its precision, optimizer and clipping):
    two steps first to warm up (a GPU's first steps pick their kernels), then the median of
    `steps`. `model` trains meanwhile: pass one made for the measurement."""
    device, T = corpus.device, T_DEFAULT
    recipe = Recipe.of(budget, lr=lr).on(model, device)
    precision = Precision(recipe.precision, device.type)
    model.to(device).train()
    scaler = torch.amp.GradScaler(device.type, enabled=precision.needs_scaler)
    stepper = _TrainingStep(model, model, _optimizer(model, recipe, device), scaler, precision)
    generator = torch.Generator().manual_seed(0)
    starts = draw_starts(corpus.train, budget.batch_size, T, steps + WARM_UP_STEPS, generator)

    def seconds(run) -> float:
        begin = time.perf_counter()
        run()  # each returns a number read from the device: its work is done
        return time.perf_counter() - begin

    def step(at):
        return lambda: stepper.take(*windows_at(corpus.train, at, T), recipe.grad_clip).item()

    def validate(at):  # a batch costs the same on any split: the training windows serve
        return lambda: estimate_loss(model, corpus.train, at[None], T, precision)

    def median(run) -> float:
        """The median over the timed starts, after the first ones warm `run`'s kernels up."""
        times = [seconds(run(at)) for at in starts]
        return statistics.median(times[WARM_UP_STEPS:])

    return median(step), median(validate)


def choose_lr(
    make_model: Callable[[], nn.Module],
    corpus: Corpus,
    budget: Budget,
    candidates: Sequence[float] = (1e-3, 2e-3, 4e-3, 8e-3),
    *,
    steps: int = 200,
    seed: int = 0,
    progress: bool = True,
) -> tuple[float, dict[float, float]]:
    """Train a fresh model for `steps` at each candidate rate, with the course's recipe at the
    budget's batch size; pick the lowest validation loss.

    Returns the chosen rate and the validation loss of every candidate.
    """
    short = Budget(f"{budget.name}-sweep", budget.batch_size, steps, steps, budget.eval_batches)
    losses = {}
    for lr in candidates:
        torch.manual_seed(seed)
        recipe = Recipe.of(short, lr=lr)
        history = train_lm(
            make_model(), corpus, recipe, seed=seed, progress=progress, desc=f"lr {lr:g}"
        )
        if history.stopped_at is not None:  # Stop in a notebook: the whole sweep stops
            raise KeyboardInterrupt
        losses[lr] = history.val_loss[-1][1]
    return min(losses, key=losses.get), losses
