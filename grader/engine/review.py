"""Flags for review: a submission whose own code reaches for the checking machinery or patches
torch.

The sandbox keeps a notebook away from the files of the checker, but not from the checker's
objects in its own kernel: a cell can replace `check.exercise_1` or `torch.allclose`, install a
trace hook or an IPython input transformer, or patch builtins, and a check may then pass. Such
code has no place in a lab exercise, so the report quotes it for the instructor to read. A flag
never changes a score: a false alarm costs a look, not a grade. Copies (of the course's
solutions, the package's references or a classmate) are a matter for the whole class at once:
grader/term/copies/.

Only the student's cells are read: the exercise cells and any cell the student added, as they
ran (after the locked cells and hidden tests were restored), not the release's own cells, nor
those of the earlier release the submission was made from (`made_from`): after an errata, the
setup and hand-in cells of the copy a student downloaded before it are the course's, not the
student's. A release notebook names the releases before it in its metadata (HISTORY), as
grader/term/errata.py keeps them: when, their graded cells' ids, a digest of each code cell.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import nbformat

from ..cells import parse_cell
from ..outcome import REVIEW, Flag
from .preflight import normal_source

# Where a release notebook's metadata names the releases of it before this one.
HISTORY = ("transformer_lab", "releases")

# (what it does, pattern), matched against each line of the student's code.
TOUCHES = (
    ("imports checkpoints", r"\b(?:import\s+checkpoints|from\s+checkpoints\b)"),
    ("uses sys.modules", r"\bsys\.modules\b"),
    ("sets a trace hook", r"\b(?:sys|threading)\.set(?:trace|profile)\b"),
    ("uses IPython input transformers", r"\b(?:input_transformers\w*|ast_transformers)\b"),
    ("touches builtins", r"\b__builtins__\b|\bbuiltins\b"),
    ("uses unittest.mock", r"\bunittest\.mock\b|\bfrom\s+unittest\s+import\s+mock\b|\bmock\."),
)
TOUCH_PATTERNS = [(what, re.compile(pattern)) for what, pattern in TOUCHES]

# Modules whose attributes a student's code has no business assigning or deleting: the checker's,
# torch's (a check that compares with `torch.allclose` trusts it) and the package's (the checks'
# references and the watch's forbidden functions live there: `tl.causal_mask.__code__ = ...`).
GUARDED = ("checkpoints", "torch", "transformer_lab")
# Calls that run a string as code: a literal string given to them is read like a cell.
RUNS_CODE = {"exec", "eval", "compile", "run_cell"}
# What a flag says of a write to one of them (Flag.source), the module named.
WRITES = "writes an attribute of {module}"


def _root(node: ast.AST) -> str | None:
    """The name that an attribute or item chain starts from: `F` for `F.softmax.__doc__`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _aliases(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Names the notebook binds to a guarded module or something in it, and which module:
    `check` (checkpoints), `nn`, `F`, `Tensor` (torch), also `F = torch.nn.functional`."""
    names = {module: module for module in GUARDED}
    for cell in nb.cells:
        tree = parse_cell(cell.source) if cell.cell_type == "code" else None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.partition(".")[0]
                    if top in GUARDED:  # `import torch.nn` binds torch, `... as nn` binds nn
                        names[alias.asname or top] = top
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                top = node.module.partition(".")[0]
                if top in GUARDED:
                    names.update((a.asname or a.name, top) for a in node.names if a.name != "*")
            elif isinstance(node, ast.Assign) and _root(node.value) in names:
                module = names[_root(node.value)]
                names.update((t.id, module) for t in node.targets if isinstance(t, ast.Name))
    return names


def _writes(tree: ast.AST, aliases: dict[str, str]) -> Iterator:
    """(line, what) for every assignment, augmented assignment or deletion of an attribute or
    item reached from a guarded module, and every setattr/delattr on one. Reading and comparing
    are not writes."""
    for node in ast.walk(tree):
        target = None
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                target = node
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in ("setattr", "delattr", "__setattr__", "__delattr__"):
                target = node.args[0] if node.args else None
                if isinstance(func, ast.Attribute) and _root(func.value) in aliases:
                    target = func.value  # torch.__setattr__("x", ...)
            elif name in RUNS_CODE and node.args and isinstance(node.args[0], ast.Constant):
                code = node.args[0].value
                inner = parse_cell(code) if isinstance(code, str) else None
                if inner is not None:
                    for _, what in _writes(inner, aliases):
                        yield node.lineno, what
        module = aliases.get(_root(target)) if target is not None else None
        if module:
            yield node.lineno, WRITES.format(module=module)


@dataclass(frozen=True)
class Release:
    """An earlier release of a notebook, as the release's metadata names it (and as a report
    would keep it: asdict is JSON)."""

    released: str  # when, ISO 8601 with its offset
    grade_ids: tuple[str, ...]  # its graded cells (nbgrader's grade ids), in order
    code: tuple[str, ...]  # a digest of each of its code cells as shipped (`shipped`), sorted

    @property
    def date(self) -> str:
        return self.released[:10]

    @classmethod
    def read(cls, saved: dict) -> Release:
        """One as the metadata (or a report) holds it."""
        return cls(saved["released"], tuple(saved["grade_ids"]), tuple(saved["code"]))


def shipped(source: str) -> str:
    """A code cell's digest as a release ships it; whitespace at line ends and around the cell
    does not count (Colab and editors add and strip it)."""
    return hashlib.sha256(normal_source({"source": source}).encode()).hexdigest()[:16]


def summary(released: str, cells: list[dict]) -> dict:
    """A release as the metadata of the releases after it names it: `cells` as the history
    records them ({"type", "grade_id", "source"} each)."""
    return {
        "released": released,
        "grade_ids": [c["grade_id"] for c in cells if c["grade_id"]],
        "code": sorted({shipped(c["source"]) for c in cells if c["type"] == "code"}),
    }


def earlier(release: nbformat.NotebookNode) -> list[Release]:
    """The releases before this one that its metadata names, oldest first."""
    return [Release.read(r) for r in release.metadata.get(HISTORY[0], {}).get(HISTORY[1], [])]


def made_from(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> Release | None:
    """The earlier release a submission was made from: the one that shipped more of its code
    cells than any other and than this release (the latest, on a tie); None where that is this
    release. Its locked cells are left out: the release's own were put back before grading."""
    mine = {
        shipped(c.source)
        for c in nb.cells
        if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("locked")
    }
    now = len(mine & {shipped(c.source) for c in release.cells if c.cell_type == "code"})
    best = max(reversed(earlier(release)), key=lambda r: len(mine & set(r.code)), default=None)
    return best if best is not None and len(mine & set(best.code)) > now else None


def _student_cells(nb: nbformat.NotebookNode, release: nbformat.NotebookNode):
    given = {c.source for c in release.cells if c.cell_type == "code"}
    old = made_from(nb, release)
    for index, cell in enumerate(nb.cells):
        locked = cell.metadata.get("nbgrader", {}).get("locked")
        if cell.cell_type == "code" and not locked and cell.source not in given:
            if old is None or shipped(cell.source) not in old.code:
                yield index, cell


def flags(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[Flag]:
    """One flag per offending line of the student's code: where, what, the line itself."""
    aliases = _aliases(nb)
    found = []
    for index, cell in _student_cells(nb, release):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        where = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
        lines = cell.source.splitlines()
        what_by_line: dict[int, list[str]] = {}
        for number, line in enumerate(lines, start=1):
            if not line.lstrip().startswith("#"):
                what = [w for w, pattern in TOUCH_PATTERNS if pattern.search(line)]
                what_by_line[number] = what
        tree = parse_cell(cell.source)
        for number, what in _writes(tree, aliases) if tree else ():
            what_by_line.setdefault(number, []).append(what)
        for number, what in sorted(what_by_line.items()):
            if what and number <= len(lines):
                line = lines[number - 1].strip()
                found.append(Flag(REVIEW, where, ", ".join(dict.fromkeys(what)), line))
    return found
