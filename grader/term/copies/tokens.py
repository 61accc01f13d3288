"""Tokens: a syntax tree in preorder as Dolos reads code (node types, operators, numbers, the
API's names, every other name `<name>`), and a written answer's words."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable

BUILTINS = frozenset(dir(builtins))


def imports(trees: Iterable[ast.AST]) -> dict[str, str]:
    """The names the code binds to modules, and which: `F` -> torch.nn.functional."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name if alias.asname else alias.name.partition(".")[0]
                    found[alias.asname or top] = top
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


Span = tuple[int, int]  # the tokens [start, end) of one node of the tree


def code_tokens(tree: ast.AST, modules: dict[str, str]) -> tuple[list[str], list[int], list[Span]]:
    """(tokens, the line of each, the span of every node) of a syntax tree in preorder; see the
    module docstring."""
    tokens: list[str] = []
    lines: list[int] = []
    spans: list[Span] = []

    def emit(token: str, line: int) -> None:
        tokens.append(token)
        lines.append(line)

    def name(identifier: str) -> str:
        if identifier in modules:
            return modules[identifier]
        return identifier if identifier in BUILTINS else "<name>"

    def visit(node: ast.AST, line: int) -> None:
        start = len(tokens)
        line = getattr(node, "lineno", line)
        if isinstance(node, (ast.expr_context, ast.Import, ast.ImportFrom)):
            return  # what an import binds shows where the name is used
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring, or a string standing for a comment
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
        ):
            emit("<str>", line)
        elif (dotted := _dotted(node)) and dotted.partition(".")[0] in modules:
            root, _, rest = dotted.partition(".")  # F.softmax: torch.nn.functional.softmax
            emit("Name", line)
            emit(f"{modules[root]}.{rest}", line)
        else:
            emit(type(node).__name__, line)
            _visit_fields(node, line, visit, emit, name)
        spans.append((start, len(tokens)))

    for statement in getattr(tree, "body", [tree]):
        visit(statement, 1)
    return tokens, lines, spans


def _visit_fields(node: ast.AST, line: int, visit, emit, name) -> None:
    for key, value in ast.iter_fields(node):
        if key in ("annotation", "returns", "type_comment", "decorator_list", "type_params"):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                visit(item, line)
            elif item is None:
                continue
            elif isinstance(node, ast.Name):
                emit(name(item), line)
            elif key in ("attr", "arg") and isinstance(node, (ast.Attribute, ast.keyword)):
                emit(item, line)  # an API's name and its keywords: what the code calls
            elif isinstance(item, str):
                emit("<name>", line)  # arguments, functions, classes, globals
            else:
                emit(repr(item), line)


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an attribute chain that starts from a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not parts or not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def text_tokens(text: str) -> tuple[list[str], list[int]]:
    """Lowercased words and numbers, with their lines; Markdown and punctuation dropped."""
    tokens, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        for word in re.findall(r"[^\W_]+", line.lower()):
            tokens.append(word)
            lines.append(number)
    return tokens, lines
