"""Where a run happens and at what budget: device, precision, MODE -> Budget, seeds."""

from __future__ import annotations

import contextlib
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

MODES = ("auto", "full", "quick", "smoke", "grade")


@dataclass(frozen=True)
class Budget:
    """Training budget: batch size and steps, how often validation loss is estimated, and how
    many test characters are scored (None: the whole test split)."""

    name: str
    batch_size: int
    steps: int
    eval_every: int
    eval_batches: int
    test_characters: int | None = None


BUDGETS = {
    "full": Budget("full", batch_size=64, steps=3000, eval_every=250, eval_batches=20),
    "quick": Budget("quick", batch_size=16, steps=1500, eval_every=250, eval_batches=20),
    # Seconds of training, so a few thousand test characters: enough to check a score is sane.
    "smoke": Budget("smoke", 8, steps=30, eval_every=15, eval_batches=2, test_characters=4096),
    "grade": Budget("grade", 8, steps=20, eval_every=10, eval_batches=2, test_characters=4096),
}


def pick_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """ "auto" -> the best available (CUDA, then MPS, then CPU); otherwise that device."""
    return pick_device() if device == "auto" else torch.device(device)


def resolve_mode(mode: str = "auto", device: torch.device | str | None = None) -> str:
    """auto -> full on a GPU, quick on a CPU; autograding (NBGRADER_EXECUTION) -> grade."""
    if mode not in MODES:
        raise ValueError(f"MODE must be one of {MODES}, got {mode!r}")
    if mode != "auto":
        return mode
    if os.environ.get("NBGRADER_EXECUTION"):
        return "grade"
    device = torch.device(device) if device is not None else pick_device()
    return "full" if device.type in ("cuda", "mps") else "quick"


def budget_for(mode: str = "auto", device: torch.device | str | None = None) -> Budget:
    return BUDGETS[resolve_mode(mode, device)]


@dataclass(frozen=True)
class Precision:
    name: str  # "fp32", "bf16" or "fp16"
    device_type: str

    @property
    def dtype(self) -> torch.dtype | None:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.name)

    @property
    def needs_scaler(self) -> bool:
        return self.name == "fp16"

    def autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)


def precision_for(device: torch.device | str) -> Precision:
    """fp16 + gradient scaler below compute capability 8, bf16 from 8 up, fp32 elsewhere.

    The capability is read directly because a T4 (7.5) reports is_bf16_supported() == True
    while only emulating bf16, which is slower than fp16.
    """
    device = torch.device(device)
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        return Precision("bf16" if major >= 8 else "fp16", "cuda")
    return Precision("fp32", device.type)


def device_name(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type


THREADS_ENV = "OMP_NUM_THREADS"


def physical_cores() -> int:
    """Physical cores among the CPUs this process may run on (hyperthread siblings count once).

    Linux: the process's CPU affinity and each CPU's (package, core) ids in /sys. Elsewhere, or
    where /sys is not readable: psutil's physical count where psutil is installed, else the
    logical CPU count.
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
        cores = set()
        for cpu in cpus:
            topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
            package = (topology / "physical_package_id").read_text().strip()
            cores.add((package, (topology / "core_id").read_text().strip()))
        return max(1, len(cores))
    except (AttributeError, OSError):
        pass
    try:
        import psutil

        return max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1)
    except ImportError:
        return max(1, os.cpu_count() or 1)


def configure_cpu_threads() -> int:
    """torch's CPU threads = physical cores, unless the user set OMP_NUM_THREADS; returns them.

    A thread on a hyperthread sibling shares its core's FMA units with the first, so
    matmul-bound training gains little from it and pays for the extra synchronisation.
    """
    if not os.environ.get(THREADS_ENV):
        torch.set_num_threads(physical_cores())
    return torch.get_num_threads()


def start_notebook(mode: str = "auto", device: str = "auto") -> tuple[torch.device, Budget]:
    """A notebook's first lines: resolve the device and the budget, seed torch, say what runs."""
    device = resolve_device(device)
    budget = budget_for(mode, device)
    configure_cpu_threads()
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__} on {device_name(device)} ({precision_for(device).name}); "
        f"budget {budget.name}: batch {budget.batch_size} x {budget.steps:,} steps"
    )
    return device, budget


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices), so a run repeats."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
