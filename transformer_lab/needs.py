"""What a student's function needs from the notebook it was written in, as source.

A piece kept in my_transformer.py runs later in a module of its own, where only the module's
header (math, torch, nn, F) is defined. The function may read other names of the notebook: a
helper written in the cell above (its own softmax), a module imported under a name (`np`), a
constant (`NEG = -1e4`), a function imported from a package. `needed(fn)` finds every global name
the function reads (its body, nested functions, default values, decorators and annotations) and
writes each one's definition as source, helpers' own needs included; what cannot be written
safely (a tensor, a model, a lambda, a name the notebook never defined) is listed instead, so
that the notebook can say so before the student leaves it.
"""

from __future__ import annotations

import ast
import builtins
import dis
import importlib
import inspect
import math
import textwrap
import types
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

# The names the kept module's header defines (transformer_lab/student.py, HEADER).
HEADER_NAMES = {"math": math, "torch": torch, "nn": nn, "F": F}
# Plain values written back as their repr, where that repr reads back as the same value.
_PLAIN = (int, float, complex, bool, str, bytes, type(None), torch.dtype, tuple, frozenset)


@dataclass
class Needs:
    """The definitions a function needs, as source lines in the order a module must run them,
    and the names that cannot travel, each with the reason."""

    imports: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # name -> why it did not travel

    def source(self) -> str:
        """The definitions, ready to stand above the function in its section."""
        blocks = ["\n".join(self.imports), "\n".join(self.constants), *self.helpers]
        return "\n\n\n".join(block for block in blocks if block)


def _code_globals(code: types.CodeType) -> set[str]:
    """Global names read by `code` and the code nested in it (functions, comprehensions)."""
    names = {
        ins.argval
        for ins in dis.get_instructions(code)
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_globals(const)
    return names


def _definition_names(source: str) -> set[str]:
    """Names read when the definition itself runs: default values, decorators, annotations."""
    tree = ast.parse(source)
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.ClassDef)):
        return set()
    node = tree.body[0]
    parts: list[ast.AST] = list(node.decorator_list)
    if isinstance(node, ast.FunctionDef):
        args = node.args
        parts += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        parts += [a.annotation for a in every if a is not None and a.annotation is not None]
        parts += [node.returns] if node.returns is not None else []
    else:
        parts += node.bases
    return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}


def _literal(value) -> str | None:
    """Source for a plain value that, run in the kept module, gives the same value back."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"  # repr(-inf) is no Python
    if not isinstance(value, _PLAIN):
        return None
    if isinstance(value, (tuple, frozenset)) and not all(_literal(v) for v in value):
        return None
    try:
        again = eval(repr(value), {"__builtins__": {}}, dict(HEADER_NAMES))  # noqa: S307
    except Exception:
        return None
    return repr(value) if type(again) is type(value) and again == value else None


def _importable(value) -> str | None:
    """'module', 'qualname' of a function or class that an import statement finds again."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:
        return None
    return f"{module}:{qualname}" if found is value else None


def _source(value) -> str | None:
    try:
        return textwrap.dedent(inspect.getsource(value)).strip("\n")
    except (OSError, TypeError):
        return None


class _Finder:
    def __init__(self, home: dict):
        self.home, self.needs, self.seen = home, Needs(), set()

    def visit(self, value, defined: str) -> None:
        """Collect what `value` (a function or class of the notebook) reads, then its source."""
        source = _source(value)
        codes = [value.__code__] if inspect.isfunction(value) else []
        if inspect.isclass(value):
            codes = [f.__code__ for f in vars(value).values() if inspect.isfunction(f)]
        names = set().union(*(_code_globals(c) for c in codes)) | _definition_names(source or "")
        for name in sorted(names - {defined}):
            self.name(name)

    def name(self, name: str) -> None:
        if name in self.seen:
            return
        self.seen.add(name)
        if name not in self.home:
            if not hasattr(builtins, name):
                self.needs.missing[name] = "it is not defined in the notebook"
            return
        value = self.home[name]
        if HEADER_NAMES.get(name) is value or getattr(builtins, name, None) is value:
            return
        self.add(name, value)

    def add(self, name: str, value) -> None:
        needs = self.needs
        if isinstance(value, types.ModuleType):
            module = value.__name__
            needs.imports.append(f"import {module}" + ("" if module == name else f" as {name}"))
        elif (literal := _literal(value)) is not None:
            needs.constants.append(f"{name} = {literal}")
        elif (found := _importable(value)) is not None:
            module, qualname = found.split(":")
            alias = "" if qualname == name else f" as {name}"
            needs.imports.append(f"from {module} import {qualname}{alias}")
        elif inspect.isfunction(value) or inspect.isclass(value):
            self.helper(name, value)
        else:
            needs.missing[name] = f"a {type(value).__name__}, which cannot be written as source"

    def helper(self, name: str, value) -> None:
        source = _source(value)
        if source is None or value.__name__ != name or value.__name__ == "<lambda>":
            self.needs.missing[name] = "its source cannot be copied: write it as a def"
            return
        self.visit(value, name)  # its own needs come first
        self.needs.helpers.append(source)


def needed(fn) -> Needs:
    """What `fn` reads from its notebook, as source to stand above it (see the module's doc)."""
    finder = _Finder(getattr(fn, "__globals__", {}))
    finder.visit(fn, fn.__name__)
    return finder.needs
