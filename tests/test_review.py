"""The review flags (grader/review.py): copies of the package's reference and writes to torch's
attributes are quoted for the instructor; honest code, the course's solutions among it, is not.

Each test builds a small release notebook and a submission that differs from it only in the
cells a student writes, as autograde hands them to `review.flags`.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import re
import textwrap

import nbformat
import pytest
from notebook_harness import REGION, cells, inject
from notebook_harness import cell as solution_cell

from grader import review

SETUP = "import math\n\nimport torch\nimport torch.nn as nn\n\nimport transformer_lab as tl"
CHECKPOINT = "from checkpoints import attention as check"
STUB = "def exercise():\n    # YOUR CODE HERE\n    raise NotImplementedError()"
FIGURE = re.compile(r"\((\d+)% after normalizing names and formatting\)")


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


def _flags(source: str, *added: str) -> list[str]:
    return review.flags(_submission(source, *added), _release())


def _reference(module: str, qualname: str) -> str:
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return textwrap.dedent(inspect.getsource(obj))


def _as_student_code(qualname: str, source: str) -> str:
    """A function as a student cell holds it: methods inside a class of the student's own."""
    if "." not in qualname:
        return source
    return "class Mine(nn.Module):\n" + textwrap.indent(source, "    ")


class _Renamer(ast.NodeTransformer):
    """Another name for every argument and local, no annotations, no docstrings."""

    def __init__(self, bound: set[str]):
        self.bound = bound

    def visit_Name(self, node):
        if node.id in self.bound:
            node.id = f"renamed_{node.id.lower()}"
        return node

    def visit_arg(self, node):
        node.arg, node.annotation = f"renamed_{node.arg.lower()}", None
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            node.body = node.body[1:]
        self.generic_visit(node)
        return node


def _renamed_and_reformatted(source: str) -> str:
    tree = ast.parse(source)
    bound = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    text = ast.unparse(_Renamer(bound).visit(tree))  # its own layout, no comments
    assert "renamed_" in text and text.splitlines() != source.splitlines()
    return text


def _copy_flags(flags: list[str]) -> list[str]:
    return [f for f in flags if "matches the package's" in f]


# A student's own copy: other names, other layout, other messages, no docstring or annotations.
HAND_RENAMED_ATTENTION = """
def scaled_dot_product_attention(q, k, v, mask=None, *, on_empty="error"):
    tl.attention._check_inputs(q, k, v, mask, on_empty)
    width = q.shape[-1]
    logits = (q @ k.transpose(-2, -1)) / math.sqrt(width)
    if mask is None:
        weights = torch.softmax(logits, dim=-1)
        return (weights @ v, weights)
    mask = mask.to(logits.device).broadcast_to(logits.shape)
    nothing = ~mask.any(dim=-1, keepdim=True)
    if on_empty == 'error' and nothing.any():
        raise ValueError('this row reads nothing')
    logits = (logits.masked_fill(~mask, float('-inf'))
                    .masked_fill(nothing, 0.0))
    weights = torch.softmax(logits, dim=-1).masked_fill(nothing, 0.0)
    return (weights @ v, weights)
"""
HAND_RENAMED_POSITIONS = """
def embed_with_positions(tokens, token_table, position_table, start=0):
    n = tokens.shape[-1]
    if start + n > position_table.num_embeddings:
        raise ValueError(f"{n} tokens from {start} do not fit in the position table")
    where = torch.arange(start, start + n, device=tokens.device)
    return token_table(tokens) + position_table(where)
"""
HAND_RENAMED_HEADS = """
class MyMultiHeadAttention(nn.Module):
    def forward(self, x, *, cache=None, need_weights=False):
        b, t, width = x.shape
        def heads(y):
            return y.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = heads(self.W_Q(x)), heads(self.W_K(x)), heads(self.W_V(x))
        start = 0
        if cache is not None:
            start = cache.length
            k, v = cache.extend(k, v)
        if self.attention is None and not need_weights:
            if start == 0:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                keep = tl.causal_mask(t, k.shape[-2], start, device=x.device)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            w = None
        else:
            fn = self.attention or tl.scaled_dot_product_attention
            keep = tl.causal_mask(t, k.shape[-2], start, device=x.device)
            out, w = fn(q, k, v, keep)
        out = out.transpose(1, 2).reshape(b, t, width)
        return self.drop(self.proj(out)), w
"""


@pytest.mark.parametrize(("module", "qualname"), review.REFERENCES)
def test_a_verbatim_copy_of_a_reference_is_flagged(module, qualname):
    source = _reference(module, qualname)  # docstring, comments and annotations included
    flags = _copy_flags(_flags(_as_student_code(qualname, source)))
    assert len(flags) == 1, flags
    name = qualname.rpartition(".")[2]
    assert f"cell 2 (ex_student) function {'Mine.' * ('.' in qualname)}{name} " in flags[0]
    assert f"matches the package's {module}.{qualname} (100% " in flags[0]


@pytest.mark.parametrize(("module", "qualname"), review.REFERENCES)
def test_a_renamed_and_reformatted_copy_is_flagged(module, qualname):
    source = _renamed_and_reformatted(_reference(module, qualname))
    flags = _copy_flags(_flags(_as_student_code(qualname, source)))
    assert len(flags) == 1 and f"{module}.{qualname}" in flags[0], flags
    assert int(FIGURE.search(flags[0])[1]) >= 90


@pytest.mark.parametrize(
    ("source", "reference"),
    [
        (HAND_RENAMED_ATTENTION, "transformer_lab.attention.scaled_dot_product_attention"),
        (HAND_RENAMED_POSITIONS, "transformer_lab.model.embed_with_positions"),
        (HAND_RENAMED_HEADS, "transformer_lab.model.MultiHeadAttention.forward"),
    ],
)
def test_a_copy_rewritten_by_hand_is_flagged_with_its_similarity(source, reference):
    flags = _flags(source)
    assert len(flags) == 1 and f"matches the package's {reference} (" in flags[0], flags
    assert int(FIGURE.search(flags[0])[1]) >= 90


def test_a_copy_in_a_cell_the_student_added_is_flagged_too():
    copied = _reference("transformer_lab.model", "embed_with_positions")
    flags = _flags(STUB, copied)
    assert len(flags) == 1 and flags[0].startswith("cell 3 function embed_with_positions "), flags


SOLUTIONS = [
    ("01_attention", "ex1_attention"),
    ("02_causal_mask", "ex2_causal_mask"),
    ("03_positions", "ex3_embed"),
    ("06_stretch", "ex6a_multi_head"),
    ("06_stretch", "ex6b_block"),
]


@pytest.mark.parametrize(("stem", "grade_id"), SOLUTIONS)
def test_the_course_solutions_are_not_flagged(stem, grade_id):
    source = solution_cell(stem, grade_id)
    assert "### BEGIN SOLUTION" in source  # the def lines and the solution's body
    assert _flags(source) == []
    for _, function in review._functions(ast.parse(source)):
        assert review.closest_reference(function)[1] < review.COPY_THRESHOLD


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


HONEST = {
    "einsum": '''
def scaled_dot_product_attention(Q, K, V, allowed=None):
    """Attention with einsum."""
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(Q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kd->...qd", A, V), A
''',
    "torch.where": """
def scaled_dot_product_attention(Q, K, V, allowed=None):
    scores = torch.matmul(Q, K.transpose(-2, -1)) / Q.size(-1) ** 0.5
    if allowed is not None:
        scores = torch.where(allowed, scores, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    V_bar = torch.matmul(A, V)
    return V_bar, A
""",
    "two branches": """
def scaled_dot_product_attention(Q, K, V, allowed=None):
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if allowed is None:
        A = torch.softmax(scores, dim=-1)
        return A @ V, A
    scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    return A @ V, A
""",
    "tril": """
def causal_mask(T):
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
""",
    "a loop": """
def causal_mask(T):
    mask = torch.zeros(T, T, dtype=torch.bool)
    for t in range(T):
        mask[t, : t + 1] = True
    return mask
""",
    "positions from the last axis": """
def embed_with_positions(idx, tok_emb, pos_emb):
    T = idx.shape[-1]
    positions = torch.arange(0, T, device=idx.device)
    return tok_emb(idx) + pos_emb(positions)
""",
    "heads one by one": """
class MyMultiHeadAttention(nn.Module):
    def forward(self, H):
        B, T, C = H.shape
        q = self.W_Q(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        k = self.W_K(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        v = self.W_V(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        out, A = tl.scaled_dot_product_attention(q, k, v, tl.causal_mask(T, device=H.device))
        return self.drop(self.proj(out.transpose(1, 2).reshape(B, T, C))), A
""",
    "a block with a name for each step": """
class MyBlock(nn.Module):
    def forward(self, H):
        attended, A = self.attn(self.ln1(H))
        H = H + attended
        H = H + self.ffn(self.ln2(H))
        return H
""",
}


@pytest.mark.parametrize("source", HONEST.values(), ids=HONEST)
def test_honest_variants_are_not_flagged(source):
    assert _flags(source) == []


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
    assert _flags(source) == [f"cell 2 (ex_student) writes an attribute of torch: `{quoted}`"]


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
    assert _flags(tamper) == [f"cell 2 (ex_student) writes an attribute of checkpoints: `{tamper}`"]
    assert _flags("same = check.exercise_1 == other\nrun = check.exercise_1") == []


def test_writes_to_the_package_are_flagged():
    swap = "tl.causal_mask.__code__ = my_mask.__code__"
    assert _flags(swap) == [f"cell 2 (ex_student) writes an attribute of transformer_lab: `{swap}`"]
    assert _flags("mask = tl.causal_mask(4)\nmodel = tl.MiniGPT()") == []


def test_a_cell_that_does_not_parse_is_skipped():
    broken = _reference("transformer_lab.attention", "causal_mask") + "\ndef (:\ntorch.x = 1\n"
    assert _flags(broken) == []


def test_ipython_magics_do_not_hide_a_copy():
    copied = _reference("transformer_lab.attention", "causal_mask")
    assert len(_copy_flags(_flags("%load_ext autoreload\n!nvidia-smi\n" + copied))) == 1


def test_the_release_cells_are_not_read():
    copied = _reference("transformer_lab.attention", "causal_mask") + "\ntorch.x = 1\n"
    release = _release()
    release.cells.append(_code(copied))
    nb = _submission(STUB)
    nb.cells.append(_code(copied))
    nb.cells.append(_code(copied + "# a locked cell, put back as released\n", "ex_given", True))
    assert review.flags(nb, release) == []


def test_flags_are_strings_and_change_nothing():
    nb = _submission(
        _reference("transformer_lab.model", "embed_with_positions"),
        "torch.allclose = lambda *args, **kwargs: True",
    )
    release = _release()
    before = copy.deepcopy(nb), copy.deepcopy(release)
    flags = review.flags(nb, release)
    assert len(flags) == 2 and all(isinstance(f, str) for f in flags)
    assert (nb, release) == before
