"""`make bench`: training and evaluation throughput of our loop against a plain eager loop.

The reference is the loop most tutorials write: batches built on the CPU from Python indices and
copied to the device, the loss read with .item() every step, attention written out with an
explicit mask tensor, fp32. Ours: `train_lm` and `evaluate_gpt`/`evaluate_lstm` as the
notebooks run them (the corpus resident on the device, batches sampled there, the loss read
every few steps, PyTorch's fused attention kernel, the device's precision policy).

Per device (the CPU always, and the GPU when there is one) and per model it measures training
tokens/s, evaluation characters/s and peak memory of both loops, and the attention kernel
against the explicit form at every precision the device runs natively. Then notebook 04's cost
at the quick budget: the time of a training step of the mini-GPT on the fused kernel and on a
student's attention plugged in (`MiniGPT(attention=...)`, the explicit path), and of the LSTM,
taken in turns in one process, and the notebook's wall time at three seeds projected from them
against the pipeline's budget. The tables are printed and written to
docs/bench/<device class>.md with the machine, its load, torch version, date and commit, so that
no figure is typed into the docs by hand. Figures only; nothing here asserts a speed.

    python -m maintainer.bench                      # 20 timed steps per figure (`make bench`)
    python -m maintainer.bench --steps 2 --eval-chars 500 --quick-steps 2 --rounds 1 \
        --validation-batches 2 --out -
    python -m maintainer.bench --compile            # also our loop under torch.compile
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_lab.baselines import device_class
from transformer_lab.catalogue import TRAINING_NOTEBOOK
from transformer_lab.data import TEST_CHARS, VAL_END, Corpus, load_corpus
from transformer_lab.evaluate import evaluate_gpt, evaluate_lstm, gpt_windows
from transformer_lab.lstm import CharLSTM
from transformer_lab.model import MiniGPT
from transformer_lab.runtime import (
    BUDGETS,
    Budget,
    Precision,
    configure_cpu_threads,
    device_name,
    physical_cores,
    precision_for,
    resolve_device,
    set_seed,
)
from transformer_lab.train import (
    DEFAULT_LR,
    T_DEFAULT,
    Recipe,
    estimate_loss,
    train_lm,
    validation_starts,
)

from . import ROOT, commit_label, corpus_or_exit

DOCS = ROOT / "docs" / "bench"
BASELINES = ROOT / "data" / "baselines.json"
BATCH_SIZE = 16
EVAL_BATCH_SIZE = 64  # evaluate_gpt's default
LSTM_CHUNK = 4096  # evaluate_lstm's default
LR = 2e-3
WARMUP_STEPS = 3  # untimed steps first (fewer when fewer are timed): allocator, kernels, caches


def _warmup(steps: int) -> int:
    return max(1, min(WARMUP_STEPS, steps))


def plain_attention(Q, K, V, allowed):
    """The explicit form as the solution of notebook 01's Exercise 1 writes it."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (B, n_heads, T, T)
    A = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return A @ V, A


def einsum_attention(Q, K, V, allowed):
    """The same, as a student who writes Exercise 1 with einsum does."""
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(Q.shape[-1])
    A = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return torch.einsum("...qk,...kd->...qd", A, V), A


# The GPT's attention in our loop: None is PyTorch's fused kernel (the model's own path).
ATTENTIONS = {"sdpa": None, "explicit": plain_attention, "einsum": einsum_attention}


# ---------------------------------------------------------------------------------------------
# The two loops


def reference_tokens_per_s(model, train_ids: torch.Tensor, steps: int, device) -> float:
    """The plain training loop. train_ids lives on the CPU, as a freshly loaded dataset would."""
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    rng = random.Random(0)
    T = T_DEFAULT

    def step() -> float:
        starts = [rng.randrange(len(train_ids) - T) for _ in range(BATCH_SIZE)]
        x = torch.stack([train_ids[s : s + T] for s in starts]).to(device)
        y = torch.stack([train_ids[s + 1 : s + T + 1] for s in starts]).to(device)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(_warmup(steps)):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * BATCH_SIZE * T / (time.perf_counter() - start)


def ours_tokens_per_s(
    model, corpus: Corpus, steps: int, precision: Precision | None = None, compile: bool = False
) -> tuple[float, bool]:
    """`train_lm` itself, timed over `steps` after a warm-up run; and whether it compiled.

    The timed run includes one validation batch at its end, as every run of ours does.
    """
    name = precision.name if precision else None
    warmup = _warmup(steps)
    for budget in (
        Budget("warm-up", BATCH_SIZE, warmup, warmup, 1),
        Budget("bench", BATCH_SIZE, steps, steps, 1),
    ):
        recipe = Recipe.of(budget, lr=LR, precision=name)
        history = train_lm(model, corpus, recipe, progress=False, compile=compile)
    return history.tokens_per_s, history.compiled


@torch.no_grad()
def reference_eval(model, ids: torch.Tensor, end: int, device) -> float:
    """The plain scoring loop over [VAL_END, end) of the CPU tensor `ids`, the same windows (GPT)
    or chunks with the state carried (LSTM) as ours: each batch copied from the CPU, its loss
    read with .item(). Returns the mean nats."""
    model.to(device).eval()
    total = 0.0
    if isinstance(model, CharLSTM):
        state = None
        for s in range(VAL_END, end, LSTM_CHUNK):
            e = min(s + LSTM_CHUNK, end)
            logits, state = model.step(ids[None, s - 1 : e - 1].to(device), state)
            total += F.cross_entropy(logits[0], ids[s:e].to(device), reduction="sum").item()
        return total / (end - VAL_END)
    T = model.config.T_max
    windows = gpt_windows(VAL_END, end, T)
    for i in range(0, len(windows), EVAL_BATCH_SIZE):
        batch = windows[i : i + EVAL_BATCH_SIZE]
        x = torch.stack([ids[a : a + T] for a, _ in batch]).to(device)
        y = torch.stack([ids[a + 1 : a + T + 1] for a, _ in batch]).to(device)
        j0 = torch.tensor([j0 for _, j0 in batch])  # the first scored offset of each window
        scored = (torch.arange(T)[None, :] >= j0[:, None]).to(device)  # (B, T)
        nll = F.cross_entropy(model(x).transpose(1, 2), y, reduction="none")  # (B, T)
        total += (nll * scored).sum().item()
    return total / (end - VAL_END)


def _model(name: str, attention: str = "sdpa"):
    """A fresh mini-GPT on one of ATTENTIONS, plugged in as the notebooks plug the student's,
    or the LSTM."""
    return MiniGPT(attention=ATTENTIONS[attention]) if name == "gpt" else CharLSTM()


# Notebook 04's rows at the quick budget: (model, attention), the GPT on each of ATTENTIONS.
QUICK_ROWS = (("gpt", "sdpa"), ("gpt", "explicit"), ("gpt", "einsum"), ("lstm", "sdpa"))
QUICK_VALIDATION = BUDGETS["quick"].eval_batches  # validation batches timed per row and round


@dataclass(frozen=True)
class StepTimes:
    """Milliseconds of one training step (each round's) and of one validation batch, per row."""

    step_ms: dict[tuple[str, str], list[float]]
    validation_ms: dict[tuple[str, str], list[float]]


def step_times(
    corpus: Corpus, steps: int, rounds: int, validation_batches: int = QUICK_VALIDATION
) -> StepTimes:
    """Each row of QUICK_ROWS trained for `steps` steps by `train_lm` at the quick budget's
    batch and T, the rows in turn, `rounds` times: a machine that gets busier slows every row
    alike. A step's time is the run's wall time less its one validation batch, timed apart
    (the mean of `validation_batches`)."""
    quick = BUDGETS["quick"]
    step_ms = {row: [] for row in QUICK_ROWS}
    validation_ms = {row: [] for row in QUICK_ROWS}
    precision = precision_for("cpu")
    for _ in range(rounds):
        for name, attention in QUICK_ROWS:
            set_seed(0)
            model = _model(name, attention)
            lr = DEFAULT_LR[name]
            warm = Budget("warm-up", quick.batch_size, _warmup(steps), steps, 1)
            train_lm(model, corpus, Recipe.of(warm, lr=lr), progress=False)
            starts = validation_starts(corpus.val, quick.batch_size, T_DEFAULT, validation_batches)
            start = time.perf_counter()
            estimate_loss(model, corpus.val, starts, T_DEFAULT, precision)
            batch = (time.perf_counter() - start) / validation_batches
            timed = Budget("bench", quick.batch_size, steps, steps, 1)
            history = train_lm(model, corpus, Recipe.of(timed, lr=lr), progress=False)
            step_ms[name, attention].append((history.wall_time_s - batch) / steps * 1000)
            validation_ms[name, attention].append(batch * 1000)
    return StepTimes(step_ms, validation_ms)


def _test_prefix(corpus: Corpus, chars: int) -> Corpus:
    """The corpus cut after `chars` test characters: evaluate_* then score only those."""
    return Corpus(corpus.text, corpus.vocab, corpus.ids[: VAL_END + chars])


# ---------------------------------------------------------------------------------------------
# One measurement, and where it runs


@dataclass(frozen=True)
class Job:
    what: str  # "train", "eval", or "idle" (the process with the corpus loaded, nothing else)
    model: str = "gpt"  # "gpt" or "lstm"
    loop: str = "ours"  # "ours" or "reference"
    device: str = "cpu"
    steps: int = 20
    eval_chars: int = TEST_CHARS
    precision: str | None = None  # ours: None = the device's policy, else "fp32", "bf16", "fp16"
    attention: str = "sdpa"  # the GPT in our loop: a key of ATTENTIONS
    compile: bool = False
    threads: int = 1
    rounds: int = 1  # "steps": how many times each row is timed, in turns
    validation_batches: int = QUICK_VALIDATION  # "steps": batches its validation figure averages


@dataclass(frozen=True)
class Figure:
    rate: float  # tokens/s (train) or characters/s (eval)
    peak_mib: float | None  # CPU: peak RSS of the process; CUDA: max_memory_allocated
    compiled: bool = False


@functools.lru_cache(maxsize=2)
def _corpus(device: str) -> Corpus:
    return load_corpus(device)


def _peak_rss_mib() -> float | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes there, KiB here


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_job(job: Job) -> Figure:
    """Run one measurement in this process."""
    dev = torch.device(job.device)
    if dev.type == "cpu":
        torch.set_num_threads(job.threads)
    corpus = _corpus(job.device)
    if job.what == "idle":
        return Figure(0.0, _peak_rss_mib() if dev.type == "cpu" else None)
    if job.what == "steps":
        return step_times(corpus, job.steps, job.rounds, job.validation_batches)
    set_seed(0)
    model = _model(job.model, "explicit" if job.loop == "reference" else job.attention)
    if dev.type == "cuda":
        _synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
    rate, compiled = 0.0, False
    if job.what == "train" and job.loop == "reference":
        rate = reference_tokens_per_s(model, corpus.train.cpu(), job.steps, dev)
    elif job.what == "train":
        precision = Precision(job.precision, dev.type) if job.precision else None
        rate, compiled = ours_tokens_per_s(model, corpus, job.steps, precision, job.compile)
    elif job.what == "eval":
        model.to(dev)
        if job.loop == "reference":
            ids = corpus.ids.cpu()
            reference_eval(model, ids, VAL_END + min(200, job.eval_chars), dev)  # warm-up
            start = time.perf_counter()
            reference_eval(model, ids, VAL_END + job.eval_chars, dev)
        else:
            evaluate = evaluate_gpt if job.model == "gpt" else evaluate_lstm
            evaluate(model, _test_prefix(corpus, min(200, job.eval_chars)))  # warm-up
            start = time.perf_counter()
            evaluate(model, _test_prefix(corpus, job.eval_chars))  # ends with .item(): synced
        rate = job.eval_chars / (time.perf_counter() - start)
    if dev.type == "cuda":
        peak = torch.cuda.max_memory_allocated(dev) / 2**20
    elif dev.type == "cpu":
        peak = _peak_rss_mib()
    else:
        peak = None
    return Figure(rate, peak, compiled)


@functools.cache
def _isolation_context():
    # A forkserver that has imported torch and this module forks each measurement's process:
    # every process starts from the same imports and nothing else, and no re-import per job.
    # torch._dynamo too: the optimizer's first step imports it (and sympy), about 2 s.
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["maintainer.bench", "torch._dynamo"])
        return context
    return multiprocessing.get_context("spawn")


def measure(job: Job) -> Figure:
    """CPU: in a fresh process of its own; elsewhere in this one.

    CPU memory has no per-measurement peak counter, so each CPU measurement runs alone in a
    child process and reports that process's own high-water resident set (getrusage
    RUSAGE_SELF ru_maxrss, read in the child at its end). The alternatives are worse: sampling
    RSS misses short peaks between samples, and RUSAGE_CHILDREN in this process is the maximum
    over every child waited for so far, so later figures could not be told apart. CUDA has
    such a counter (max_memory_allocated after a reset), so GPU jobs run here and skip a CUDA
    start-up per figure.
    """
    if torch.device(job.device).type != "cpu":
        return run_job(job)
    context = _isolation_context()
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_run_and_send, args=(job, send), daemon=True)
    child.start()
    send.close()
    try:
        outcome = receive.recv()
    except EOFError:
        outcome = RuntimeError(f"the measurement process died (exit code {child.exitcode})")
    finally:
        child.join()
        receive.close()
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def _run_and_send(job: Job, send) -> None:
    try:
        outcome = run_job(job)
    except Exception:
        outcome = RuntimeError(f"{job} failed:\n{traceback.format_exc()}")
    send.send(outcome)
    send.close()


# ---------------------------------------------------------------------------------------------
# The report


def native_low_precisions(device: torch.device) -> list[str]:
    """The reduced precisions the device computes natively, not by emulation."""
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        return ["bf16", "fp16"] if major >= 8 else ["fp16"]  # a T4 (7.5) emulates bf16
    if device.type == "cpu":
        flags = _cpu_flags()
        found = []
        if flags & {"avx512_bf16", "amx_bf16"}:
            found.append("bf16")
        if flags & {"avx512_fp16", "amx_fp16"}:
            found.append("fp16")
        return found
    return []


def _cpu_info() -> dict[str, str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    return info


def _cpu_flags() -> set[str]:
    return set(_cpu_info().get("flags", "").split())


def _machine(devices: list[torch.device], threads: int) -> str:
    cpu = _cpu_info().get("model name") or platform.processor() or platform.machine()
    line = (
        f"{cpu}, {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} "
        f"CPUs available ({physical_cores()} physical cores); torch threads: {threads}"
    )
    for dev in devices:
        if dev.type == "cuda":
            major, minor = torch.cuda.get_device_capability(dev)
            line += f"; GPU {device_name(dev)} (compute capability {major}.{minor})"
        elif dev.type != "cpu":
            line += f"; {dev.type}"
    return line


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not available here
        return "unknown"


def _mib(figure: Figure) -> str:
    return "-" if figure.peak_mib is None else f"{figure.peak_mib:,.0f}"


def _figures(a: Figure, b: Figure) -> list[str]:
    """The common columns of a comparison: both rates, their ratio, both peaks."""
    return [f"{a.rate:,.0f}", f"{b.rate:,.0f}", f"{b.rate / a.rate:.2f}x", _mib(a), _mib(b)]


def _table(title: str, header: list[str], rows, left: int = 2) -> list[str]:
    """A section: its heading and a markdown table whose first `left` columns are text."""
    align = ["---"] * left + ["---:"] * (len(header) - left)
    lines = ["", f"## {title}", "", _row(header), "|" + "|".join(align) + "|"]
    return lines + [_row(cells) for cells in rows]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _preamble(options: str, steps: int, devices, threads, idle) -> list[str]:
    commit, dirty = commit_label(10)
    return [
        "# Throughput: our loop against a plain eager loop",
        "",
        f"Written by `python -m maintainer.bench{options}`; rerun it rather than edit these "
        "figures.",
        "",
        f"- date: {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"- machine: {_machine(devices, threads)}",
        f"- load average (1, 5, 15 min) at the start: {_load()}; a machine shared with other "
        "work slows every figure",
        f"- torch {torch.__version__}, Python {platform.python_version()}, commit {commit}"
        + (" (with uncommitted changes)" if dirty else ""),
        f"- training: batch {BATCH_SIZE} x T {T_DEFAULT}, lr {LR:g}, {steps} timed steps after "
        f"{_warmup(steps)} warm-up steps, a fresh model each (mini-GPT 824,897 parameters, "
        "LSTM 350,593)",
        "- reference: batches built on the CPU and copied, loss `.item()` every step, explicit "
        "mask attention, fp32. Ours: `train_lm`, `evaluate_gpt`, `evaluate_lstm`.",
        "- peak MiB: on the CPU, the peak resident memory of a fresh process that ran that "
        f"measurement alone (Python, torch and the corpus alone: {_mib(idle)} MiB); on a GPU, "
        "`torch.cuda.max_memory_allocated` (device memory).",
    ]


# Each option's default: the file's command line names only the options a run changed.
DEFAULT_OPTIONS = {"steps": 20, "eval_chars": TEST_CHARS, "compile": False, "quick_steps": 50}
DEFAULT_OPTIONS |= {"rounds": 3, "validation_batches": QUICK_VALIDATION}


def _options(given: dict) -> str:
    """The flags of `python -m maintainer.bench` that ask for `given`, in the order given."""
    flags = []
    for name, value in given.items():
        if value != DEFAULT_OPTIONS[name]:
            flag = "--" + name.replace("_", "-")
            flags.append(flag if value is True else f"{flag} {value}")
    return "".join(f" {flag}" for flag in flags)


def run_bench(
    steps: int = DEFAULT_OPTIONS["steps"],
    device: torch.device | str = "cpu",
    eval_chars: int | None = None,
    out: str | Path | None = None,
    compile: bool = False,
    quick_steps: int = DEFAULT_OPTIONS["quick_steps"],
    rounds: int = DEFAULT_OPTIONS["rounds"],
    validation_batches: int = QUICK_VALIDATION,
) -> str:
    """Measure, print each section as it is done, write them to `out`; return the markdown.

    out: None -> docs/bench/<device class of `device`>.md; "-" -> no file.
    quick_steps, rounds: notebook 04's rows, each timed over that many steps, that many times;
    validation_batches: the batches each of those rows' validation figure is the mean of.
    """
    requested = torch.device(device)
    devices = [torch.device("cpu")] + ([requested] if requested.type != "cpu" else [])
    eval_chars = TEST_CHARS if eval_chars is None else max(1, min(eval_chars, TEST_CHARS))
    threads = torch.get_num_threads()
    lines: list[str] = []

    def emit(new: list[str]) -> None:
        lines.extend(new)
        print("\n".join(new), flush=True)

    def job(what: str, dev: torch.device, **kw) -> Figure:
        return measure(
            Job(what, device=str(dev), steps=steps, eval_chars=eval_chars, threads=threads, **kw)
        )

    models = [(dev, name) for dev in devices for name in ("gpt", "lstm")]
    given = {"steps": steps, "eval_chars": eval_chars, "compile": compile}
    given |= {
        "quick_steps": quick_steps,
        "rounds": rounds,
        "validation_batches": validation_batches,
    }
    emit(_preamble(_options(given), steps, devices, threads, job("idle", devices[0])))
    ours_train = {(dev, name): job("train", dev, model=name) for dev, name in models}
    emit(_training_table(models, ours_train, job))
    emit(_evaluation_table(models, eval_chars, job))
    emit(_attention_table(devices, job))
    cpu_steps = Job(
        "steps",
        steps=quick_steps,
        threads=threads,
        rounds=rounds,
        validation_batches=validation_batches,
    )
    emit(_notebook_04_tables(measure(cpu_steps), quick_steps, rounds))
    if compile:
        emit(_compile_table(models, ours_train, job))
    text = "\n".join(lines) + "\n"
    if out != "-":
        _write(text, Path(out) if out is not None else DOCS / f"{device_class(requested)}.md")
    return text


def _write(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"\nwrote {path}")


def _training_table(models, ours_train: dict, job) -> list[str]:
    """Training tokens/s of both loops; the reference is measured here, model by model."""
    return _table(
        "Training (tokens/s)",
        ["device", "model", "ours: precision", "reference tok/s", "ours tok/s"]
        + ["ours / reference", "reference peak MiB", "ours peak MiB"],
        (
            [device_name(dev), name, precision_for(dev).name]
            + _figures(job("train", dev, model=name, loop="reference"), ours_train[dev, name])
            for dev, name in models
        ),
        left=3,
    )


def _evaluation_table(models, eval_chars: int, job) -> list[str]:
    return _table(
        f"Evaluation (characters/s, the first {eval_chars:,} test characters, fp32)",
        ["device", "model", "reference chars/s", "ours chars/s", "ours / reference"]
        + ["reference peak MiB", "ours peak MiB"],
        (
            [device_name(dev), name]
            + _figures(job("eval", dev, model=name, loop="reference"), job("eval", dev, model=name))
            for dev, name in models
        ),
    )


def _attention_table(devices, job) -> list[str]:
    precisions = [(dev, p) for dev in devices for p in ["fp32", *native_low_precisions(dev)]]
    return _table(
        "Attention: `F.scaled_dot_product_attention` against the explicit form "
        "(mini-GPT training in our loop, tokens/s; every precision the device computes "
        "natively, emulated ones left out)",
        ["device", "precision", "explicit tok/s", "SDPA tok/s", "SDPA / explicit"]
        + ["explicit peak MiB", "SDPA peak MiB"],
        (
            [device_name(dev), p]
            + _figures(
                job("train", dev, precision=p, attention="explicit"),
                job("train", dev, precision=p),
            )
            for dev, p in precisions
        ),
    )


ATTENTION_LABELS = {
    "sdpa": "fused: `F.scaled_dot_product_attention`",
    "explicit": "explicit: a student's, `@` (01's solution), plugged in",
    "einsum": "explicit: a student's, `einsum`, plugged in",
}


def _notebook_04_tables(times: StepTimes, steps: int, rounds: int) -> list[str]:
    """Per-step figures of notebook 04's rows, and its wall time projected from them."""
    quick = BUDGETS["quick"]
    median = {row: statistics.median(ms) for row, ms in times.step_ms.items()}
    validation = {row: statistics.median(ms) for row, ms in times.validation_ms.items()}
    rows = [
        [name, ATTENTION_LABELS[attention] if name == "gpt" else "-"]
        + [f"{median[name, attention]:,.1f}", f"{min(times.step_ms[name, attention]):,.1f}"]
        + [f"{quick.batch_size * T_DEFAULT / median[name, attention] * 1000:,.0f}"]
        + [f"{validation[name, attention]:,.1f}"]
        for name, attention in QUICK_ROWS
    ]
    lines = _table(
        f"Notebook 04's training step at the quick budget (batch {quick.batch_size} x T "
        f"{T_DEFAULT}, fp32, CPU; the median of {rounds} round(s) of {steps} steps, the rows "
        "in turn in one process)",
        ["model", "attention", "ms/step", "fastest round ms/step", "tok/s", "validation ms/batch"],
        rows,
    )
    return lines + _projection(median, validation)


def _seconds_a_seed(step_ms: float, validation_ms: float) -> float:
    """One train_lm run at the quick budget: its steps and its validation batches."""
    quick = BUDGETS["quick"]
    estimates = sum(
        1
        for done in range(1, quick.steps + 1)
        if done % quick.eval_every == 0 or done == quick.steps
    )
    return (quick.steps * step_ms + estimates * quick.eval_batches * validation_ms) / 1000


def recorded_rest(baselines: Path = BASELINES) -> tuple[float, int, str] | None:
    """From the recorded quick/cpu run: notebook 04's seconds outside training (scoring,
    n-grams, samples, plots, the kernel's start), its seeds, and when and where it ran."""
    try:
        run = json.loads(baselines.read_text(encoding="utf-8"))["runs"]["quick/cpu"]
        provenance, rows = run["provenance"], run["results"]["rows"]
        seeds = [seed for name in ("gpt", "lstm") for seed in rows[name]["seeds"].values()]
        training = sum(seed["train_seconds"] for seed in seeds)
        rest = provenance["notebook_seconds"][TRAINING_NOTEBOOK] - training
    except (OSError, KeyError, TypeError, ValueError):
        return None
    where = f"{provenance['date'][:10]}, commit {provenance['git_commit'][:10]}"
    return rest, len(provenance["seeds"]), where


def _projection(step_ms: dict, validation_ms: dict) -> list[str]:
    from .pipeline import budgets_for

    recorded = recorded_rest()
    rest, seeds, where = recorded or (0.0, 3, "")
    budget = budgets_for("quick", "cpu", list(range(seeds)), [TRAINING_NOTEBOOK])
    budget = budget[TRAINING_NOTEBOOK]
    lstm = _seconds_a_seed(step_ms["lstm", "sdpa"], validation_ms["lstm", "sdpa"])
    rows = []
    for name, attention in QUICK_ROWS:
        if name != "gpt":
            continue
        gpt = _seconds_a_seed(step_ms[name, attention], validation_ms[name, attention])
        wall = seeds * (gpt + lstm) + rest
        rows.append(
            [ATTENTION_LABELS[attention], f"{gpt:,.0f}", f"{lstm:,.0f}", f"{rest:,.0f}"]
            + [f"{wall:,.0f}", f"{budget:,.0f}", f"{wall / budget:.0%}"]
        )
    quick = BUDGETS["quick"]
    note = (
        f"the rest: notebook 04's seconds outside training in the recorded quick/cpu run ({where})"
        if recorded
        else "the rest: no quick/cpu run recorded in data/baselines.json, counted as 0"
    )
    return _table(
        f"Notebook 04 at the quick budget, {seeds} seeds, projected from the medians above (not "
        f"run): each seed trains the GPT and the LSTM for {quick.steps:,} steps with their "
        f"validation batches; {note}; the budget is `maintainer.pipeline.budgets_for`'s",
        ["GPT attention", "GPT s a seed", "LSTM s a seed", "the rest s", "projected s"]
        + ["budget s", "of the budget"],
        rows,
        left=1,
    ) + ["", f"Load average (1, 5, 15 min) at the end: {_load()}."]


def _compile_table(models, ours_train: dict, job) -> list[str]:
    rows = []
    for dev, name in models:
        eager, compiled = ours_train[dev, name], job("train", dev, model=name, compile=True)
        ran = compiled.compiled
        rows.append(
            [device_name(dev), name, f"{eager.rate:,.0f}"]
            + ([f"{compiled.rate:,.0f}", f"{compiled.rate / eager.rate:.2f}x"] if ran else [])
            + ([] if ran else ["failed: eager", "-"])
        )
    return _table(
        "torch.compile (our loop, tokens/s after the warm-up, which includes compiling)",
        ["device", "model", "eager tok/s", "compiled tok/s", "compiled / eager"],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps",
        type=int,
        default=DEFAULT_OPTIONS["steps"],
        help="timed training steps per figure",
    )
    parser.add_argument("--device", default="auto", help="the CPU always, and this device")
    parser.add_argument(
        "--eval-chars",
        type=int,
        default=None,
        help="test characters scored per evaluation figure (default: the whole test split)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="markdown file to write (default docs/bench/<device class>.md; '-' writes none)",
    )
    parser.add_argument(
        "--compile", action="store_true", help="also time our loop under torch.compile"
    )
    parser.add_argument(
        "--quick-steps",
        type=int,
        default=DEFAULT_OPTIONS["quick_steps"],
        help="timed steps of each of notebook 04's rows",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_OPTIONS["rounds"],
        help="times each of 04's rows is timed",
    )
    parser.add_argument(
        "--validation-batches",
        type=int,
        default=QUICK_VALIDATION,
        help="validation batches timed per row of 04's and round (default: the quick budget's)",
    )
    args = parser.parse_args(argv)
    corpus_or_exit("python -m maintainer.bench")
    configure_cpu_threads()
    run_bench(
        steps=args.steps,
        device=resolve_device(args.device),
        eval_chars=args.eval_chars,
        out=args.out,
        compile=args.compile,
        quick_steps=args.quick_steps,
        rounds=args.rounds,
        validation_batches=args.validation_batches,
    )


if __name__ == "__main__":
    # Run as maintainer.bench, not __main__: the measurement processes import it by that name.
    from maintainer import bench

    bench.main()
