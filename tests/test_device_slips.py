"""A device slip in a student's piece fails its check with one message: the device asked for, the
student's line (its number in the cell and its text) and what to write instead, under the shared
code `device_mismatch`, with no error chained above it (checkpoints/_core.py, device_failure).

Two kinds. A device named by hand that the runtime lacks: "cuda" copied from a tutorial onto a
CPU runtime, "mps" off a Mac, "cuda:1" beside one GPU (here, a CPU-only machine, each is absent).
And a tensor made on the CPU while the model is on the GPU, shown on the stand-in GPU of
checkpoints/_devices.py as in test_devices.py."""

import pytest
import torch
from notebook_harness import _cell_file, cell, inject, run

from checkpoints import CheckFailed
from checkpoints._core import call
from checkpoints._devices import DEVICE, other_device
from checkpoints.codes import EX1
from transformer_lab.catalogue import BY_NAME
from transformer_lab.model import GPTConfig, MiniGPT

ATTENTION_WITH_ITS_OWN_MASK = """
d_k = Q.shape[-1]
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
T = scores.shape[-1]
keep = torch.ones(T, T, dtype=torch.bool{device}).tril()
scores = scores.masked_fill(~keep, float("-inf"))
A = torch.softmax(scores, dim=-1)
return A @ V, A
"""
# (exercise, the body written in its cell, the line that asks, the device it asks for, the fix)
ABSENT = {
    "02's mask on cuda": (
        "ex2",
        "return torch.ones(T, T, dtype=torch.bool, device='cuda').tril()",
        "return torch.ones(T, T, dtype=torch.bool, device='cuda').tril()",
        "cuda",
        "leave device= out",
    ),
    "02's mask moved to cuda:1": (
        "ex2",
        "return torch.ones(T, T, dtype=torch.bool).tril().to('cuda:1')",
        "return torch.ones(T, T, dtype=torch.bool).tril().to('cuda:1')",
        "cuda:1",
        "leave device= out",
    ),
    "01's attention with a mask on mps": (
        "ex1",
        ATTENTION_WITH_ITS_OWN_MASK.format(device=', device="mps"'),
        'keep = torch.ones(T, T, dtype=torch.bool, device="mps").tril()',
        "mps",
        "device=Q.device",
    ),
    "03's positions on cuda": (
        "ex3",
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1], device='cuda'))",
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1], device='cuda'))",
        "cuda",
        "torch.arange(T, device=idx.device)",
    ),
}


def cell_line(name: str, body: str, line: str) -> int:
    """The number of `line` in the exercise's cell once `body` is written in it."""
    source = inject(cell(BY_NAME[name].notebook, BY_NAME[name].cell), body)
    return source.splitlines().index(next(s for s in source.splitlines() if s.strip() == line)) + 1


def assert_one_message(failure: CheckFailed, name: str, number: int, line: str) -> None:
    """The shared code, the student's line by its number and text, and no error chained above."""
    assert failure.code == f"{name}.device_mismatch", str(failure)
    assert f"line {number} (`{line}`)" in failure.message, str(failure)
    assert failure.__cause__ is None and failure.__suppress_context__, "a traceback above it"


@pytest.mark.parametrize("case", ABSENT)
def test_a_device_the_runtime_lacks_is_named_with_the_line_and_the_fix(case, capsys):
    name, body, line, asked, fix = ABSENT[case]
    if torch.cuda.device_count() > int(asked.partition(":")[2] or 0):
        pytest.skip(f"this machine has {asked}")
    if asked == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has mps")
    with pytest.raises(CheckFailed) as failure:
        run(BY_NAME[name], body)
    assert_one_message(failure.value, name, cell_line(name, body, line), line)
    assert repr(asked) in failure.value.message, str(failure.value)  # the device it asks for
    assert fix in failure.value.message, str(failure.value)


def define(name: str, body: str):
    """The student's function, `body` written in its exercise's cell, run as a cell runs."""
    exercise = BY_NAME[name]
    source = inject(cell(exercise.notebook, exercise.cell), body)
    namespace = {"torch": torch, "math": __import__("math")}
    exec(compile(source, _cell_file(exercise.notebook, 99, source), "exec"), namespace)
    return namespace[exercise.function]


def test_a_mask_made_on_the_cpu_inside_a_model_on_the_gpu_names_where_it_was_made():
    """Notebook 04 on Colab's GPU: the model and its inputs there, the student's attention makes
    its mask without device=, on the CPU, and the next line mixes the two."""
    body = ATTENTION_WITH_ITS_OWN_MASK.format(device="")
    attention = define("ex1", body)
    made = "keep = torch.ones(T, T, dtype=torch.bool).tril()"
    mixed = 'scores = scores.masked_fill(~keep, float("-inf"))'
    with other_device(), pytest.raises(CheckFailed) as failure:
        model = MiniGPT(GPTConfig(n_layers=1), attention=attention).to(DEVICE)
        call(EX1, model, torch.zeros(2, 8, dtype=torch.long).to(DEVICE))
    assert_one_message(failure.value, "ex1", cell_line("ex1", body, mixed), mixed)
    made_at = f"made without device= at line {cell_line('ex1', body, made)} (`{made}`)"
    assert made_at in failure.value.message, str(failure.value)
    assert "Q is on cuda:0" in failure.value.message, str(failure.value)
    assert "torch.ones(T, T, device=Q.device)" in failure.value.message, str(failure.value)


def test_positions_made_on_the_cpu_fail_exercise_3_on_the_simulated_gpu_naming_the_line(capsys):
    """Exercise 3 runs one case as on a GPU: torch.arange(T) without device= is on the CPU."""
    line = "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1]))"
    with pytest.raises(CheckFailed) as failure:
        run(BY_NAME["ex3"], line)
    assert_one_message(failure.value, "ex3", cell_line("ex3", line, line), line)
    assert "idx is on cuda:0" in failure.value.message, str(failure.value)
    assert "device=idx.device" in failure.value.message, str(failure.value)
