"""The published sources: the course's solution regions (solutions/*.py) and each function of
the package's references, each less what the course hands out."""

from __future__ import annotations

import ast
import re
from functools import cache

from ...cells import parse_cell
from ...course import ROOT
from .fingerprints import Passage
from .kinds import CODE, Kind
from .own_code import code_piece, handed_code, lecture_code, markdown_code, text_piece
from .tokens import imports

REFERENCES = ("transformer_lab/attention.py", "transformer_lab/model.py")
SOLUTIONS = "solutions"
REGION = re.compile(r"^[ \t]*#* ?### (BEGIN|END) SOLUTION[ \t]*$", re.M)
HIDDEN = re.compile(r"^[ \t]*#* ?### (BEGIN|END) (SOLUTION|HIDDEN TESTS)[ \t]*$", re.M)


def _regions(source: str) -> tuple[str, set[int]]:
    """A solution cell without its markers, and the lines between them."""
    kept, inside, lines = [], False, set()
    for line in source.splitlines():
        marker = REGION.match(line)
        if marker:
            inside = marker.group(1) == "BEGIN"
            continue
        kept.append(line)
        if inside:
            lines.add(len(kept))
    return "\n".join(kept), lines


def _handed_part(source: str) -> str:
    """A cell of solutions/ as the release hands it: no solution, no hidden tests."""
    kept, inside = [], False
    for line in source.splitlines():
        marker = HIDDEN.match(line)
        if marker:
            inside = marker.group(1) == "BEGIN"
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def _handed_in(cells) -> tuple[dict[str, str], set[int]]:
    """The modules a solutions/ file imports, and the code it hands out as its release does."""
    handed = [_handed_part(c.source) for c in cells]
    kinds = [c.cell_type for c in cells]
    code = [t for s, k in zip(handed, kinds, strict=True) if k == "code" for t in [parse_cell(s)]]
    trees = [t for t in code if t is not None]
    modules = imports(trees)
    spelled = [
        t for s, k in zip(handed, kinds, strict=True) if k == "markdown" for t in markdown_code(s)
    ]
    return modules, handed_code(trees + spelled, modules) | lecture_code(modules)


def _solution_files() -> list:
    import jupytext

    return [
        (path, jupytext.read(path).cells) for path in sorted((ROOT / SOLUTIONS).glob("[0-9]*.py"))
    ]


@cache
def solutions() -> dict[str, Passage]:
    """grade id -> the course's solution region of that exercise, from solutions/*.py, less what
    its notebook hands out."""
    found = {}
    for path, cells in _solution_files():
        modules, handed = _handed_in(cells)
        label = f"the course's solution ({SOLUTIONS}/{path.name})"
        for cell in cells:
            meta = cell.metadata.get("nbgrader", {})
            if not meta.get("solution"):
                continue
            text, lines = _regions(cell.source)
            if cell.cell_type == "markdown":
                piece = text_piece(label, text, lines)
            else:
                piece = code_piece(label, text, lines, modules, frozenset(handed))
            found[meta["grade_id"]] = piece.fingerprint()
    return found


def _functions(tree: ast.Module) -> dict[int, str]:
    """line -> the function (or method, `Class.method`) whose body it lies in, as a student
    pastes it: the signature is the stub's; a nested def belongs to the function around it,
    a class's own lines to the class."""
    where: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                for line in range(child.body[0].lineno, child.end_lineno + 1):
                    where[line] = name
                if isinstance(child, ast.ClassDef):
                    visit(child, name + ".")

    visit(tree, "")
    return where


@cache
def references() -> dict[str, Passage]:
    """Each function of the package's modules that hold answers to the exercises, whole, less
    what any notebook hands out: a student's code that holds most of one is seen as its copy,
    however much else it holds."""
    handed: set[int] = set()
    for _, cells in _solution_files():
        handed |= _handed_in(cells)[1]
    found = {}
    for relative in REFERENCES:
        source = (ROOT / relative).read_text(encoding="utf-8")
        tree = ast.parse(source)
        whole = code_piece("", source, None, imports([tree]), frozenset(handed))
        where = _functions(tree)
        for name in dict.fromkeys(where.values()):
            mine = [
                m and where.get(line) == name
                for m, line in zip(whole.mine, whole.lines, strict=True)
            ]
            label = f"the package's {relative} ({name})"
            piece = Passage(label, source, whole.tokens, whole.lines, mine).fingerprint()
            if piece.prints:
                found[f"{relative}:{name}"] = piece
    return found


def published(part: str, kind: Kind) -> list[tuple[str, Passage]]:
    """(kind of source, piece) of each published source a part is compared with."""
    if part in solutions():
        sources = [("solution", solutions()[part])]
    else:  # the added cells, and the notebook: any exercise's solution
        sources = [("solution", p) for p in solutions().values() if p.kind is kind]
    if kind is CODE:
        sources += [("reference", p) for p in references().values()]
    return sources
