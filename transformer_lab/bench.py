"""`make bench`: training throughput of our loop against a plain eager loop, same model and run.

The reference is the loop most tutorials write: batches built on the CPU from Python indices and
copied to the device, the loss read with .item() every step, attention written out with an
explicit mask tensor, fp32. Ours: the corpus resident on the device, batches sampled there, the
loss read every few steps, PyTorch's fused attention kernel, the device's precision policy.
Figures only; nothing here asserts a speed.
"""

from __future__ import annotations

import math
import random
import time

import torch
import torch.nn.functional as F

from .data import load_corpus
from .evaluate import evaluate_gpt
from .lstm import CharLSTM
from .model import MiniGPT
from .runtime import Budget, device_name, precision_for, set_seed
from .train import T_DEFAULT, train_lm

BATCH_SIZE = 16
LR = 2e-3


def plain_attention(Q, K, V, allowed):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (B, n_heads, T, T)
    A = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return A @ V, A


def reference_tokens_per_s(model, train_ids: torch.Tensor, steps: int, device) -> float:
    """The plain loop. train_ids lives on the CPU, as a freshly loaded dataset would."""
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

    for _ in range(3):  # warm-up: allocator, kernels
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * BATCH_SIZE * T / (time.perf_counter() - start)


def ours_tokens_per_s(model, corpus, steps: int) -> float:
    train_lm(model, corpus, Budget("warm-up", BATCH_SIZE, 3, 3, 1), lr=LR, progress=False)
    history = train_lm(
        model, corpus, Budget("bench", BATCH_SIZE, steps, steps, 1), lr=LR, progress=False
    )
    return history.tokens_per_s


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_memory_mb(device: torch.device) -> str:
    if device.type != "cuda":
        return "-"
    return f"{torch.cuda.max_memory_allocated(device) / 2**20:,.0f}"


def run_bench(steps: int = 20, device: torch.device | str = "cpu") -> None:
    devices = [torch.device("cpu")]
    if torch.device(device).type != "cpu":
        devices.append(torch.device(device))
    print(f"training throughput, batch {BATCH_SIZE} x T {T_DEFAULT}, {steps} timed steps")
    print(
        f"{'device':<22} {'model':<5} {'precision':<9} {'reference tok/s':>15} "
        f"{'ours tok/s':>11} {'ratio':>6} {'eval chars/s':>12} {'peak MiB':>9}"
    )
    for dev in devices:
        corpus = load_corpus(dev)
        cpu_train = corpus.train.cpu()
        for name in ("gpt", "lstm"):
            set_seed(0)
            reference_model = (
                MiniGPT().use_attention(plain_attention) if name == "gpt" else CharLSTM()
            )
            reference = reference_tokens_per_s(reference_model, cpu_train, steps, dev)
            set_seed(0)
            model = MiniGPT() if name == "gpt" else CharLSTM()
            if dev.type == "cuda":
                torch.cuda.reset_peak_memory_stats(dev)
            ours = ours_tokens_per_s(model, corpus, steps)
            peak = _peak_memory_mb(dev)
            eval_rate = "-"
            if name == "gpt":
                _synchronize(dev)
                start = time.perf_counter()
                score = evaluate_gpt(model, corpus)
                eval_rate = f"{score.n_chars / (time.perf_counter() - start):,.0f}"
            print(
                f"{device_name(dev):<22} {name:<5} {precision_for(dev).name:<9} "
                f"{reference:>15,.0f} {ours:>11,.0f} {ours / reference:>5.2f}x "
                f"{eval_rate:>12} {peak:>9}",
                flush=True,
            )
