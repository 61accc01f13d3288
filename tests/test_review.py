"""The review flags (grader/engine/review.py): code that reaches for the checking machinery or
writes torch's attributes is quoted for the instructor; honest code, the course's solutions among
it, is not. Copies are tests/test_copies.py's.

Each test builds a small release notebook and a submission that differs from it only in the
cells a student writes, as autograde hands them to `review.flags`.
"""

from __future__ import annotations

import copy
import inspect

import nbformat
import pytest
from notebook_harness import REGION, cells, inject

from grader.engine import review
from grader.outcome import REVIEW, Flag
from transformer_lab import attention as tl_attention

SETUP = "import math\n\nimport torch\nimport torch.nn as nn\n\nimport transformer_lab as tl"
CHECKPOINT = "from checkpoints import attention as check"
STUB = "def exercise():\n    # YOUR CODE HERE\n    raise NotImplementedError()"
# Code a student might paste: it neither touches the checks nor writes torch's attributes.
PASTED = inspect.getsource(tl_attention.causal_mask)


def _code(source: str, grade_id: str | None = None, locked: bool = False):
    cell = nbformat.v4.new_code_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "locked": locked, "solution": True}
    return cell


def _release() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _code(SETUP),
        _code(CHECKPOINT),
        _code(STUB, "ex_student"),
        _code("check.exercise_1(exercise)", "ex_check", locked=True),
    ]
    return nb


def _submission(source: str, *added: str) -> nbformat.NotebookNode:
    """The release with the exercise cell written by the student, and cells they added."""
    nb = _release()
    nb.cells[2].source = source
    nb.cells[3:3] = [_code(extra) for extra in added]
    return nb


def _flags(source: str, *added: str) -> list[tuple[str, str, str]]:
    """The flags: the cell, what its line does, the line."""
    found = review.flags(_submission(source, *added), _release())
    return [(flag.part, flag.source, flag.quoted) for flag in found]


def _writes(module: str, line: str) -> list[tuple[str, str, str]]:
    """The one flag of a write to `module` in the exercise cell."""
    return [("cell 2 (ex_student)", review.WRITES.format(module=module), line)]


@pytest.mark.parametrize(
    "stem",
    ["01_attention", "02_causal_mask", "03_positions", "04_training", "05_heads", "06_stretch"],
)
def test_a_solution_notebook_submitted_whole_has_no_flag(stem):
    submitted = nbformat.v4.new_notebook(cells=copy.deepcopy(cells(stem)))
    release = copy.deepcopy(submitted)
    for given in release.cells:
        if given.cell_type == "code" and REGION.search(given.source):
            given.source = inject(given.source, "# YOUR CODE HERE\nraise NotImplementedError()")
    assert release.cells != submitted.cells  # so the exercise cells are the student's
    assert review.flags(submitted, release) == []


# id: the code; the line a flag quotes is the last one, or the one marked "<-".
TORCH_WRITES = {
    "a function": "torch.allclose = lambda *args, **kwargs: True",
    "a method of Tensor": "torch.Tensor.x = 1",
    "through the full path": "torch.nn.functional.softmax = my_softmax",
    "through F": "import torch.nn.functional as F\nF.softmax = my_softmax",
    "through F from torch.nn": "from torch.nn import functional as F\nF.softmax = my_softmax",
    "through the release's nn": "nn.Module.__call__ = my_call",
    "through a name taken from torch": "from torch import Tensor\nTensor.__eq__ = my_eq",
    "through an assigned alias": "functional = torch.nn.functional\nfunctional.softmax = f",
    "with setattr": 'setattr(torch, "allclose", my_allclose)',
    "with setattr on Tensor": 'setattr(torch.Tensor, "__eq__", my_eq)',
    "with setattr on two lines": 'setattr(  # <-\n    torch.Tensor, "__eq__", my_eq\n)',
    "with delattr": 'delattr(torch.Tensor, "allclose")',
    "with del": "del torch.allclose",
    "augmented": "torch.x += 1",
    "into an attribute's item": 'torch.__dict__["allclose"] = my_allclose',
    "in a string run by exec": 'exec("torch.allclose = my_allclose")',
}


@pytest.mark.parametrize("source", TORCH_WRITES.values(), ids=TORCH_WRITES)
def test_a_write_to_torch_is_flagged_with_its_line(source):
    lines = source.splitlines()
    quoted = next((line for line in lines if "# <-" in line), lines[-1])
    assert _flags(source) == _writes("torch", quoted)


TORCH_READS = {
    "reading": "x = torch.allclose",
    "comparing": "same = torch.x == y",
    "comparing in a call": "print(torch.float32 != y, torch.x <= 3)",
    "calling": "torch.manual_seed(0)\nif torch.cuda.is_available():\n    y = x.cuda()",
    "an annotated default": "def f(H: torch.Tensor = None):\n    return H",
    "an annotated assignment": "x: torch.Tensor = torch.zeros(3)",
    "an item of a new tensor": "torch.zeros(3)[0] = 1",
    "an own layer": "self.W = nn.Linear(2, 2)\nself.W.weight = nn.Parameter(w)",
    "in a string": 'print("torch.allclose = my_allclose")',
    "in a comment": "x = 1  # torch.allclose = my_allclose",
}


@pytest.mark.parametrize("source", TORCH_READS.values(), ids=TORCH_READS)
def test_reading_or_comparing_torch_is_not_flagged(source):
    assert _flags(source) == []


def test_writes_to_checkpoints_are_still_flagged_and_reads_are_not():
    tamper = "check.exercise_1 = lambda *args, **kwargs: None"
    reads = "same = check.exercise_1 == other\nrun = check.exercise_1"
    assert _flags(tamper) == _writes("checkpoints", tamper) and _flags(reads) == []


def test_writes_to_the_package_are_flagged():
    swap = "tl.causal_mask.__code__ = my_mask.__code__"
    calls = "mask = tl.causal_mask(4)\nmodel = tl.MiniGPT()"
    assert _flags(swap) == _writes("transformer_lab", swap) and _flags(calls) == []


def test_a_cell_that_does_not_parse_is_skipped():
    broken = PASTED + "\ndef (:\ntorch.x = 1\n"
    assert _flags(broken) == []


def test_the_release_cells_are_not_read():
    copied = PASTED + "\ntorch.x = 1\n"
    release = _release()
    release.cells.append(_code(copied))
    nb = _submission(STUB)
    nb.cells.append(_code(copied))
    nb.cells.append(_code(copied + "# a locked cell, put back as released\n", "ex_given", True))
    assert review.flags(nb, release) == []


def test_flags_are_data_quoted_as_text_and_change_nothing():
    nb = _submission(PASTED, "torch.allclose = lambda *args, **kwargs: True")
    release = _release()
    before = copy.deepcopy(nb), copy.deepcopy(release)
    flags = review.flags(nb, release)
    line = "torch.allclose = lambda *args, **kwargs: True"
    assert flags == [Flag(REVIEW, "cell 3", "writes an attribute of torch", line)]
    assert [f.text() for f in flags] == [f"cell 3 {review.WRITES.format(module='torch')}: `{line}`"]
    assert (nb, release) == before
