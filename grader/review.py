"""Flags for review: a submission whose own code reaches for the checking machinery, patches
torch, or copies the package's reference.

The sandbox keeps a notebook away from the files of the checker, but not from the checker's
objects in its own kernel: a cell can replace `check.exercise_1` or `torch.allclose`, install a
trace hook or an IPython input transformer, or patch builtins, and a check may then pass. Such
code has no place in a lab exercise, so the report quotes it for the instructor to read. The
package `transformer_lab` also holds a working answer to several exercises; a student function
that is that answer with other names and another layout is reported with its similarity. A flag
never changes a score: a false alarm costs a look, not a grade.

Only the student's cells are read: the exercise cells and any cell the student added, as they
ran (after the locked cells and hidden tests were restored), not the release's own cells.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import inspect
import re
import textwrap
from collections.abc import Iterator

import nbformat

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

# The package's own answers, (module, qualified name), and how close a student's function must
# come to one of them to be flagged. Measured (tests/test_review.py holds the cases): the course's
# solutions score at most 0.76 (Block.forward), honest variants at most 0.82, copies that only
# rename and reformat 0.99 or more.
REFERENCES = (
    ("transformer_lab.attention", "scaled_dot_product_attention"),
    ("transformer_lab.attention", "causal_mask"),
    ("transformer_lab.model", "embed_with_positions"),
    ("transformer_lab.model", "MultiHeadAttention.forward"),
    ("transformer_lab.model", "Block.forward"),
)
COPY_THRESHOLD = 0.9
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _parse(source: str) -> ast.Module | None:
    """The cell's syntax tree; IPython's `%magic` and `!shell` lines read as `pass`. None where
    the cell is not Python: it raised a SyntaxError when it ran, so it did nothing."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        pass
    magic = re.compile(r"^([ \t]*)[%!].*$", re.MULTILINE)
    try:
        return ast.parse(magic.sub(r"\1pass", source))
    except (SyntaxError, ValueError):
        return None


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
        tree = _parse(cell.source) if cell.cell_type == "code" else None
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
                inner = _parse(code) if isinstance(code, str) else None
                if inner is not None:
                    for _, what in _writes(inner, aliases):
                        yield node.lineno, what
        module = aliases.get(_root(target)) if target is not None else None
        if module:
            yield node.lineno, f"writes an attribute of {module}"


def _shape(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """A function as a sequence of tokens that naming and layout do not change.

    Preorder over the syntax tree (comments are already gone): node types, operators, numbers,
    attribute and keyword names, and the names the code does not bind (torch, math, float).
    Names it binds (its own arguments and locals, nested functions) become _0, _1, ... in order
    of first appearance; every string is one token, so a reworded message changes nothing;
    docstrings, other bare strings, type annotations and decorators are left out. A renamed,
    reformatted copy gives the same tokens as its original."""
    bound = {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, FUNCTIONS) and node is not function:
            bound.add(node.name)
    canonical: dict[str, str] = {}
    tokens: list[str] = []

    def rename(name: str) -> str:
        return canonical.setdefault(name, f"_{len(canonical)}")

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.expr_context):
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                return  # a docstring, or a string used as a comment
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
        ):
            tokens.append("<str>")
            return
        tokens.append(type(node).__name__)
        if isinstance(node, FUNCTIONS):
            tokens.append(rename(node.name) if node is not function else "<self>")
            visit(node.args)
            for statement in node.body:
                visit(statement)
            tokens.append("<end>")
            return
        for field, value in ast.iter_fields(node):
            if field in ("annotation", "returns", "type_comment"):
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, ast.AST):
                    visit(item)
                elif item is None:
                    continue
                elif (isinstance(node, ast.Name) and item in bound) or isinstance(node, ast.arg):
                    tokens.append(rename(item))
                else:
                    tokens.append(repr(item))

    visit(function)
    return tuple(tokens)


@functools.cache
def _references() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(dotted name, tokens) of each reference, read from the installed package once."""
    found = []
    for module, qualname in REFERENCES:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        found.append((f"{module}.{qualname}", _shape(tree.body[0])))
    return tuple(found)


def closest_reference(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, float]:
    """The reference most like `function`, and how alike they are, from 0 to 1: difflib's ratio
    of the two token sequences (2 x the tokens in common / the tokens of both)."""
    mine = _shape(function)
    matcher = difflib.SequenceMatcher(None, autojunk=False)  # every token counts
    matcher.set_seq2(mine)
    best, score = "", 0.0
    for name, tokens in _references():
        matcher.set_seq1(tokens)
        # The cheap upper bounds skip most pairs before the quadratic comparison.
        if matcher.real_quick_ratio() > score and matcher.quick_ratio() > score:
            ratio = matcher.ratio()
            if ratio > score:
                best, score = name, ratio
    return best, score


def _functions(tree: ast.AST, prefix: str = "") -> Iterator:
    """(qualified name, node) of every def, methods and nested functions included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            name = prefix + node.name
            if isinstance(node, FUNCTIONS):
                yield name, node
            yield from _functions(node, name + ".")
        else:
            yield from _functions(node, prefix)


def _student_cells(nb: nbformat.NotebookNode, release: nbformat.NotebookNode):
    given = {c.source for c in release.cells if c.cell_type == "code"}
    for index, cell in enumerate(nb.cells):
        locked = cell.metadata.get("nbgrader", {}).get("locked")
        if cell.cell_type == "code" and not locked and cell.source not in given:
            yield index, cell


def flags(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[str]:
    """One line per offending line of the student's code (where, what, the line itself), then
    one per function that copies a reference (where, which, how close)."""
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
        tree = _parse(cell.source)
        for number, what in _writes(tree, aliases) if tree else ():
            what_by_line.setdefault(number, []).append(what)
        for number, what in sorted(what_by_line.items()):
            if what and number <= len(lines):
                line = lines[number - 1].strip()
                found.append(f"{where} {', '.join(dict.fromkeys(what))}: `{line}`")
        for name, function in _functions(tree) if tree else ():
            reference, ratio = closest_reference(function)
            if ratio >= COPY_THRESHOLD:
                found.append(
                    f"{where} function {name} matches the package's {reference} "
                    f"({ratio:.0%} after normalizing names and formatting)"
                )
    return found
