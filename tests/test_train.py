import signal

import pytest
import torch

from transformer_lab import (
    BUDGETS,
    CharLSTM,
    GPTConfig,
    MiniGPT,
    budget_for,
    choose_lr,
    train_lm,
)
from transformer_lab.runtime import (
    Budget,
    configure_cpu_threads,
    physical_cores,
    precision_for,
    resolve_mode,
)
from transformer_lab.train import Recipe, lr_at

pytestmark = pytest.mark.heavy(order=12)


def test_schedule_warms_up_then_decays():
    lrs = [lr_at(s, 100, 1.0, warmup=10) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] == pytest.approx(0.1, abs=0.01)


@pytest.mark.parametrize("make, lr", [(MiniGPT, 3e-3), (CharLSTM, 1e-2)])
def test_a_short_real_training_run_lowers_the_loss(corpus, make, lr):
    model = make()
    history = train_lm(model, corpus, Recipe.of(BUDGETS["smoke"], lr=lr), progress=False)
    first_train, last_train = history.train_loss[0][1], history.train_loss[-1][1]
    assert last_train < first_train - 0.3
    assert history.val_loss[-1][1] < 3.6  # from about ln 65 = 4.17
    assert history.wall_time_s > 0 and not model.training


def test_training_repeats_with_a_seed(corpus):
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        recipe = Recipe.of(BUDGETS["grade"], lr=2e-3)
        runs.append(train_lm(MiniGPT(), corpus, recipe, progress=False))
    assert runs[0].train_loss == runs[1].train_loss


def test_choose_lr_picks_the_lowest_validation_loss(corpus):
    tiny = Budget("tiny", 8, 10, 10, 1)
    best, losses = choose_lr(CharLSTM, corpus, tiny, (1e-5, 1e-2), steps=10, progress=False)
    assert set(losses) == {1e-5, 1e-2}
    assert best == min(losses, key=losses.get) == 1e-2


def test_modes(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert resolve_mode("auto", "cpu") == "quick"
    assert resolve_mode("auto", "cuda") == "full"
    assert budget_for("full").batch_size == 64 and budget_for("full").steps == 3000
    assert budget_for("quick").batch_size == 16 and budget_for("quick").steps == 1500
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert resolve_mode("auto", "cuda") == "grade"
    with pytest.raises(ValueError, match="MODE"):
        resolve_mode("fast")


def test_cpu_trains_in_fp32():
    assert precision_for("cpu").name == "fp32"
    assert precision_for("cpu").autocast().__class__.__name__ == "nullcontext"


def test_bad_schedule(corpus):
    with pytest.raises(ValueError, match="schedule"):
        Recipe.of(BUDGETS["grade"], lr=1e-3, schedule="step")


TINY = Budget("tiny", 4, 3, 3, 1)


def _train_lstm(corpus, make=CharLSTM, **kwargs):
    torch.manual_seed(0)
    return train_lm(make(), corpus, Recipe.of(TINY, lr=1e-2), progress=False, **kwargs)


def test_compile_that_raises_falls_back_to_eager(corpus, monkeypatch, capsys):
    eager = _train_lstm(corpus)

    def no_compiler(model):
        raise RuntimeError("no C++ compiler found\nmore detail")

    monkeypatch.setattr(torch, "compile", no_compiler)
    history = _train_lstm(corpus, compile=True)
    assert "torch.compile failed (RuntimeError: no C++ compiler found); training eagerly" in (
        capsys.readouterr().out
    )
    assert not history.compiled and history.train_loss == eager.train_loss


def test_compile_that_fails_at_the_first_step_falls_back_to_eager(corpus, monkeypatch, capsys):
    eager = _train_lstm(corpus, MiniGPT)

    def fails_when_called(model):
        def compiled(x):
            torch.rand(100)  # draws from the generator, as a half-run step would
            raise RuntimeError("backend compiler failed")

        return compiled

    monkeypatch.setattr(torch, "compile", fails_when_called)
    history = _train_lstm(corpus, MiniGPT, compile=True)  # dropout: the same masks as eager
    assert "backend compiler failed" in capsys.readouterr().out
    assert not history.compiled and history.train_loss == eager.train_loss


def test_compile_that_works_is_used(corpus, monkeypatch):
    calls = []

    def traced(model):
        def compiled(x):
            calls.append(x.shape)
            return model(x)

        return compiled

    monkeypatch.setattr(torch, "compile", traced)
    history = _train_lstm(corpus, compile=True)
    assert history.compiled and len(calls) == TINY.steps  # validation runs eagerly


def test_cpu_threads_follow_physical_cores_unless_set(monkeypatch):
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        torch.set_num_threads(1)
        assert configure_cpu_threads() == 1
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert configure_cpu_threads() == physical_cores() >= 1
    finally:
        torch.set_num_threads(before)


def test_the_t4_precision_policy_runs_on_a_cpu(corpus):
    """fp16 autocast with a GradScaler, as on a T4 (compute capability 7.5), forced on a CPU:
    training steps through the scaler, and the model then evaluates and samples."""
    from transformer_lab import evaluate_gpt, generate
    from transformer_lab.runtime import Precision

    fp16 = Precision("fp16", "cpu")
    model = MiniGPT(GPTConfig(d_model=32, n_heads=2, n_layers=2))  # fp16 on a CPU is slow
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    recipe = Recipe.of(BUDGETS["grade"], lr=3e-3, precision=fp16.name)
    history = train_lm(model, corpus, recipe, progress=False)
    losses = [loss for _, loss in history.train_loss + history.val_loss]
    assert history.precision == "fp16" and all(torch.isfinite(torch.tensor(losses)))
    assert history.loss_scale is not None and history.loss_scale > 0  # the scaler ran
    # every parameter moved: optimizer steps went through the scaler, not all skipped as inf
    assert all(not torch.equal(start[k], v) for k, v in model.named_parameters())
    assert history.train_loss[-1][1] < history.train_loss[0][1]
    assert torch.isfinite(torch.tensor(evaluate_gpt(model, corpus, characters=4096).nats))
    with fp16.autocast():
        out = generate(model, corpus.vocab.encode("ROMEO:\n"), 20, seed=0)
    assert len(out.ids) == 20


def test_no_scaler_outside_fp16(corpus):
    history = train_lm(MiniGPT(), corpus, Recipe.of(BUDGETS["grade"], lr=2e-3), progress=False)
    assert history.precision == "fp32" and history.loss_scale is None


def test_cuda_device_classes_follow_the_compute_capability(monkeypatch):
    from transformer_lab.baselines import device_class

    for capability, expected in (((7, 5), "cuda-fp16"), ((8, 0), "cuda-bf16")):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, c=capability: c)
        assert precision_for("cuda").needs_scaler == (expected == "cuda-fp16")
        assert device_class("cuda") == expected


class _Recorder(torch.nn.Module):
    """A bigram model that records the windows each training step feeds it."""

    def __init__(self):
        super().__init__()
        self.logits = torch.nn.Embedding(65, 65)
        self.fed: list[torch.Tensor] = []

    def forward(self, x):
        if self.training:
            self.fed.append(x.clone())
        return self.logits(x)


def test_a_seed_feeds_the_windows_it_fed_when_each_step_drew_its_own(corpus):
    """The run's starts are drawn before its first step now; the batches are those of one draw
    of B starts a step from the CPU generator seeded with the run's seed, as before."""
    budget, T = Budget("tiny", batch_size=4, steps=6, eval_every=3, eval_batches=2), 32
    model = _Recorder()
    train_lm(model, corpus, Recipe.of(budget, lr=1e-2, T=T), seed=7, progress=False)
    generator = torch.Generator().manual_seed(7)
    before = []
    for _ in range(budget.steps):
        starts = torch.randint(len(corpus.train) - T, (budget.batch_size,), generator=generator)
        before.append(corpus.train[starts[:, None] + torch.arange(T)])
    assert len(model.fed) == budget.steps
    assert all(torch.equal(fed, old) for fed, old in zip(model.fed, before, strict=True))
    other_seed = _Recorder()
    train_lm(other_seed, corpus, Recipe.of(budget, lr=1e-2, T=T), seed=8, progress=False)
    assert not torch.equal(other_seed.fed[0], model.fed[0])


def _spied(calls: list):
    def einsum_attention(Q, K, V, allowed):
        """A student's Exercise 1 written with einsum."""
        calls.append(tuple(Q.shape))
        scores = torch.einsum("...qd,...kd->...qk", Q, K) / Q.shape[-1] ** 0.5
        A = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        return torch.einsum("...qk,...kd->...qd", A, V), A

    return einsum_attention


@pytest.mark.parametrize("compile", [False, True])
def test_every_step_calls_the_plugged_in_attention(corpus, monkeypatch, capsys, compile):
    """The student's attention is what each layer of each training step (and each validation
    batch) calls, even when compiling was asked for: a compiled model would trace it once and
    run its graph, here a stand-in that swaps it for PyTorch's fused kernel."""

    def fused_instead(model):
        swapped = MiniGPT(model.config)
        swapped.load_state_dict(model.state_dict())
        return swapped.use_attention(None)

    monkeypatch.setattr(torch, "compile", fused_instead)
    calls: list = []
    config = GPTConfig(d_model=24, n_heads=2, n_layers=3, T_max=16)
    model = MiniGPT(config, attention=_spied(calls))
    budget = Budget("tiny", batch_size=2, steps=5, eval_every=5, eval_batches=2)
    recipe = Recipe.of(budget, lr=1e-3, T=16)
    history = train_lm(model, corpus, recipe, progress=False, compile=compile)
    assert len(calls) == config.n_layers * (budget.steps + budget.eval_batches)
    assert set(calls) == {(2, 2, 16, 12)}  # (B, n_heads, T, d_k), the heads as a batch dimension
    assert not history.compiled
    printed = capsys.readouterr().out
    message = "torch.compile not used: the model runs a plugged-in attention"
    assert (message in printed) == compile


def test_the_recipe_is_what_the_loop_ran(corpus, monkeypatch):
    """Every rate set, every clip and the optimizer's settings are the recipe's: the record of a
    run cannot say one thing while the loop does another."""
    import transformer_lab.train as train

    rates, clips = [], []
    set_lr = train._set_lr
    monkeypatch.setattr(train, "_set_lr", lambda opt, lr: (rates.append(lr), set_lr(opt, lr)))
    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(
        torch.nn.utils, "clip_grad_norm_", lambda ps, norm: (clips.append(norm), clip(ps, norm))[1]
    )
    made = []
    adamw = torch.optim.AdamW
    monkeypatch.setattr(
        torch.optim, "AdamW", lambda *a, **k: made.append(adamw(*a, **k)) or made[-1]
    )
    budget = Budget("tiny", 4, 40, 40, 1)
    recipe = Recipe.of(budget, lr=3e-3, warmup=5, grad_clip=0.5)
    history = train_lm(MiniGPT(), corpus, recipe, progress=False)
    recipe = history.recipe
    assert rates == [recipe.lr_at(step) for step in range(40)]
    assert rates[0] == pytest.approx(3e-3 / 5) and max(rates) == pytest.approx(3e-3)
    assert rates[-1] == pytest.approx(3e-3 * recipe.final_lr_ratio, rel=0.05)
    assert clips == [0.5] * 40 == [recipe.grad_clip] * 40
    group = made[0].param_groups[0]
    assert group["betas"] == recipe.betas == (0.9, 0.99)
    assert group["weight_decay"] == recipe.weight_decay == 0.1
    assert (recipe.steps, recipe.batch_size, recipe.T) == (40, 4, 128)
    assert (recipe.dropout, recipe.precision, recipe.warmup_steps) == (0.1, "fp32", 5)
    assert recipe.summary() == "AdamW, warm-up and cosine decay"
    assert type(recipe).from_dict(recipe.as_dict()) == recipe


def test_lab3_s_recipe_records_a_constant_rate_without_decay(corpus):
    recipe = Recipe.of(TINY, lr=2e-3, optimizer="adam", schedule="constant")
    history = train_lm(CharLSTM(), corpus, recipe, progress=False)
    recipe = history.recipe
    assert recipe.summary() == "Adam, constant rate"
    assert (recipe.warmup_steps, recipe.weight_decay, recipe.final_lr_ratio) == (0, 0.0, None)
    assert (recipe.dropout, recipe.betas) == (0.0, (0.9, 0.999))


STOP_BUDGET = Budget("stop", 4, 12, 4, 1)  # a validation estimate every 4 steps


def _stop_at(model, *training_calls: int, eval_after_stop: bool = False):
    """SIGINT, as Stop (■) sends it, from inside the model's forward: at each of its
    `training_calls` (counted from 1), and at its first validation call after the first stop."""
    calls, stops = {"train": 0, "stopped": False}, set(training_calls)

    def hook(module, args):
        if module.training:
            calls["train"] += 1
            if calls["train"] in stops:
                calls["stopped"] = True
                signal.raise_signal(signal.SIGINT)
        elif eval_after_stop and calls["stopped"]:
            signal.raise_signal(signal.SIGINT)

    model.register_forward_pre_hook(hook)
    return model


def _stop_run(corpus, model, **kwargs):
    torch.manual_seed(0)
    return train_lm(model, corpus, Recipe.of(STOP_BUDGET, lr=1e-2), progress=False, **kwargs)


@pytest.fixture
def in_a_notebook(monkeypatch):
    """This process as a notebook's kernel sees itself: an IPython shell is running."""
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)


def test_stop_in_a_notebook_keeps_the_steps_taken_and_says_so(corpus, in_a_notebook, capsys):
    torch.manual_seed(0)
    whole = _stop_run(corpus, CharLSTM())
    torch.manual_seed(0)
    model = _stop_at(CharLSTM(), 7)  # Stop comes in the 7th step: 6 were taken
    history = _stop_run(corpus, model, desc="lstm, seed 0")
    assert capsys.readouterr().out == (
        "Stopped at step 6 of 12 (lstm, seed 0): the model keeps what it learned; run the cell "
        "again to start over\n"
    )
    assert (history.stopped_at, history.planned_steps, history.steps) == (6, 12, 6)
    assert history.stopped == "stopped at step 6 of 12"
    assert history.train_loss == whole.train_loss[:6]  # the same run, up to the stop
    assert history.val_loss[0] == whole.val_loss[0] and [s for s, _ in history.val_loss] == [4, 6]
    assert history.wall_time_s > 0 and not model.training
    assert whole.stopped_at is None and whole.stopped is None and whole.steps == 12


def test_stop_before_the_first_step_is_done_keeps_an_untrained_model(corpus, in_a_notebook):
    history = _stop_run(corpus, _stop_at(CharLSTM(), 1))
    assert (history.stopped_at, history.train_loss, [s for s, _ in history.val_loss]) == (
        0,
        [],
        [0],
    )


def test_a_second_stop_while_the_first_is_handled_ends_the_cell_at_once(corpus, in_a_notebook):
    model = _stop_at(CharLSTM(), 7, eval_after_stop=True)  # again, in the estimate at the stop
    with pytest.raises(KeyboardInterrupt):
        _stop_run(corpus, model)


@pytest.mark.parametrize("where", ["script", "grading"])
def test_outside_a_notebook_ctrl_c_ends_the_run_as_ever(corpus, monkeypatch, where):
    """A script (a sweep, a ladder's worker) and a graded notebook's timeout keep no stopped
    run: the interrupt ends the run."""
    if where == "grading":
        import IPython

        monkeypatch.setattr(IPython, "get_ipython", lambda: object())
        monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(KeyboardInterrupt):
        _stop_run(corpus, _stop_at(CharLSTM(), 7))


def test_stop_in_a_sweep_stops_the_sweep(corpus, in_a_notebook):
    made = []

    def make():
        made.append(_stop_at(CharLSTM(), 3))
        return made[-1]

    with pytest.raises(KeyboardInterrupt):
        choose_lr(make, corpus, STOP_BUDGET, (1e-3, 1e-2), steps=5, progress=False)
    assert len(made) == 1  # no rate trained after the stopped one
