"""What is the student's own: the code the course hands out (the release's cells, the code its
Markdown spells out, the lecture's listings) set aside, the release's lines taken out of each
exercise cell."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import nbformat

from ...cells import parse_cell
from .fingerprints import Passage
from .kinds import ADDED, CODE, TEXT
from .lecture_listings import LISTINGS
from .tokens import Span, code_tokens, imports, text_tokens

# Code a Markdown cell spells out: a fenced block or an inline span.
MARKDOWN_CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)


def handed_code(trees: Iterable[ast.AST], modules: dict[str, str]) -> set[int]:
    """Every statement and expression of handed-out code, `CODE.handout` tokens or more, as the
    hash of its tokens (in this process: they are never stored)."""
    found = set()
    for tree in trees:
        tokens, _, spans = code_tokens(tree, modules)
        found |= {hash(tuple(tokens[a:b])) for a, b in spans if b - a >= CODE.handout}
    return found


def handed_text(texts: Iterable[str]) -> set[int]:
    """Every run of `TEXT.handout` words of handed-out text."""
    found = set()
    for text in texts:
        words = text_tokens(text)[0]
        n = TEXT.handout
        found |= {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}
    return found


def markdown_code(text: str) -> list[ast.Module]:
    """The code a Markdown cell spells out, where it parses: `.gather(-1, i)` and `[:, None]`
    as the method and the index of a name."""
    found = []
    for match in MARKDOWN_CODE.finditer(text):
        code = (match.group(1) or match.group(2)).strip()
        tree = parse_cell("x" + code if code.startswith((".", "[")) else code)
        if tree is not None:
            found.append(tree)
    return found


@cache
def _listings() -> tuple[ast.Module, ...]:
    return tuple(ast.parse(listing.code) for listing in LISTINGS)


def lecture_code(modules: dict[str, str]) -> set[int]:
    """The lecture's listings as handed-out code, each with its own imports besides the
    notebook's (`import torch.nn as nn`)."""
    found = set()
    for tree in _listings():
        found |= handed_code([tree], {**modules, **imports([tree])})
    return found


def given_code(tokens: list[str], spans: list[Span], handed: frozenset[int]) -> list[bool]:
    """Which tokens lie in a statement or expression that is handed-out code."""
    given = [False] * len(tokens)
    for a, b in spans:
        if b - a >= CODE.handout and hash(tuple(tokens[a:b])) in handed:
            given[a:b] = [True] * (b - a)
    return given


def given_text(words: list[str], handed: frozenset[int]) -> list[bool]:
    given = [False] * len(words)
    n = TEXT.handout
    for i in range(len(words) - n + 1):
        if hash(tuple(words[i : i + n])) in handed:
            given[i : i + n] = [True] * n
    return given


def code_piece(
    label: str,
    source: str,
    own: set[int] | None,
    modules: dict[str, str],
    handed: frozenset[int] = frozenset(),
) -> Passage:
    """The tokens of `source`, its own those on the lines in `own` (every line when None) that
    are not handed-out code."""
    tree = parse_cell(source)
    tokens, lines, spans = code_tokens(tree, modules) if tree else ([], [], [])
    given = given_code(tokens, spans, handed)
    mine = [(own is None or line in own) and not g for line, g in zip(lines, given, strict=True)]
    return Passage(label, source, tokens, lines, mine)


def text_piece(
    label: str, text: str, own: set[int] | None, handed: frozenset[int] = frozenset()
) -> Passage:
    tokens, lines = text_tokens(text)
    given = given_text(tokens, handed)
    mine = [(own is None or line in own) and not g for line, g in zip(lines, given, strict=True)]
    return Passage(label, text, tokens, lines, mine, TEXT)


def own_lines(source: str, given: str) -> set[int]:
    """Lines of `source` (from 1) that are not lines of `given`, compared without indentation."""
    mine = [line.strip() for line in source.splitlines()]
    theirs = [line.strip() for line in given.splitlines()]
    matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
    kept = set(range(1, len(mine) + 1))
    for block in matcher.get_matching_blocks():
        kept -= set(range(block.a + 1, block.a + block.size + 1))
    return {n for n in kept if mine[n - 1] and not mine[n - 1].startswith("#")}


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


@dataclass
class Given:
    """What the course hands out for one notebook: the stubs by grade id, every code cell of
    both flavours, the code of the release's cells, its Markdown and the lecture, and the runs
    of its text."""

    stubs: dict[str, str]
    cells: set[str]
    modules: dict[str, str]
    code: frozenset[int]
    text: frozenset[int]


def given(release: nbformat.NotebookNode, workshop: nbformat.NotebookNode | None) -> Given:
    """The workshop's Markdown folds the solutions: only its code cells are handed-out code."""
    notebooks = [release] + ([workshop] if workshop is not None else [])
    cells = [c for nb in notebooks for c in nb.cells]
    code = [c.source for c in cells if c.cell_type == "code"]
    trees = [t for t in map(parse_cell, code) if t is not None]
    modules = imports(trees)
    spelled = [
        t for c in release.cells if c.cell_type == "markdown" for t in markdown_code(c.source)
    ]
    handed = handed_code(trees + spelled, modules) | lecture_code(modules)
    text = handed_text(c.source for c in cells if c.cell_type == "markdown")
    stubs = {_grade_id(c): c.source for c in release.cells if _grade_id(c)}
    return Given(stubs, set(code), modules, frozenset(handed), frozenset(text))


def own_parts(nb: nbformat.NotebookNode, handed: Given) -> dict[str, Passage]:
    """The student's own code by part: each exercise (grade id), the cells they added, and
    each written answer; fingerprinted, what the course hands out left out."""
    mine = [c.source for c in nb.cells if c.cell_type == "code" and c.source not in handed.cells]
    modules = {**handed.modules, **imports(t for t in map(parse_cell, mine) if t is not None)}
    parts: dict[str, Passage] = {}
    added = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if meta.get("solution") and grade_id in handed.stubs:
            own = own_lines(cell.source, handed.stubs[grade_id])
            if cell.cell_type == "markdown":
                parts[grade_id] = text_piece(grade_id, cell.source, own, handed.text)
            else:
                parts[grade_id] = code_piece(grade_id, cell.source, own, modules, handed.code)
        elif cell.cell_type == "code" and not meta.get("locked"):
            if cell.source.strip() and cell.source not in handed.cells:
                added.append(cell.source)
    if added:
        parts[ADDED] = code_piece(ADDED, "\n\n".join(added), None, modules, handed.code)
    return {label: piece.fingerprint() for label, piece in parts.items() if any(piece.mine)}
