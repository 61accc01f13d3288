"""A notebook cell's code as Python, IPython's magics aside: read by the engine (review flags,
the rerun key) and by the term (copies); and what each graded cell judged of the student's, as
a digest (`answers`): a hand grade lasts as long as its answer's digest stays the same.

An answer is the student's own cells, and only those: nbgrader's solution cells (metadata
"solution": true), never the setup or parameters cells nor any cell a student added, and never
a span of cells that moves when a graded cell is added or removed. A written answer (a cell both
solution and graded) and a solution cell judge their own text. A check (graded, not a solution)
judges the code cells among the solution cells above it that are

  - its exercise's: the grade id's first part, up to its first underscore (`ex1` of
    `ex1_check` and `ex1_attention`, `ex6b` of `ex6b_check` and `ex6b_block`); or
  - read by it: a cell that defines a name the check's code reads, or a name such a cell
    reads, and so on (ex6b_check reads `MyBlock`, whose cell reads `MyMultiHeadAttention`,
    defined in ex6a_multi_head's).

Above it, since grading runs the notebook from the top: a cell below a check has not run when
the check does. The cells a check judges therefore follow from the grade ids and the names, not
from where the other graded cells stand: a check an errata removes or adds changes no other
check's answer, nor does a student's edit of MODE or of the setup.
"""

from __future__ import annotations

import ast
import hashlib
import re


def parse_cell(source: str) -> ast.Module | None:
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


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def _text(cell) -> str:
    """The cell's text with the whitespace at line ends and cell ends set aside: an editor's or
    Colab's trailing spaces and newlines change no answer."""
    lines = _source(cell).strip("\n").splitlines()
    return "\n".join(line.rstrip() for line in lines).rstrip()


def _exercise(grade_id: str) -> str:
    """The exercise a grade id belongs to: its first part, up to the first underscore."""
    return grade_id.split("_", 1)[0]


def answers(nb) -> dict[str, str]:
    """grade id -> SHA-256 of the student's answer that cell judged, for every graded cell and
    every solution cell (whose comment a grader may have written): see the module's docstring."""
    found, above = {}, []
    for cell in nb["cells"]:
        meta = _nbgrader(cell)
        grade_id = meta.get("grade_id")
        if meta.get("solution") and grade_id:
            found[grade_id] = _digest([_text(cell)])
        elif meta.get("grade") and grade_id:
            found[grade_id] = _digest([_text(c) for c in _judged(cell, above)])
        if _code_solution(cell):
            above.append(cell)
    return found


def _code_solution(cell) -> bool:
    """A solution code cell that is no graded cell itself, and no parameters cell."""
    meta = _nbgrader(cell)
    tags = cell.get("metadata", {}).get("tags", [])
    solution = meta.get("solution") and not meta.get("grade") and meta.get("grade_id")
    return bool(solution) and cell["cell_type"] == "code" and "parameters" not in tags


def _judged(check, solutions: list) -> list:
    """Of `solutions` (the solution code cells above `check`, in order), those the check
    judges: its exercise's, and those that define a name it reads, or that they read, and so
    on. In notebook order."""
    names = [_names(cell) for cell in solutions]
    own = _exercise(_nbgrader(check)["grade_id"])
    chosen = {
        n for n, cell in enumerate(solutions) if _exercise(_nbgrader(cell)["grade_id"]) == own
    }
    wanted = _names(check)[1] | {name for n in chosen for name in names[n][1]}
    while True:
        more = {n for n, (defines, _) in enumerate(names) if n not in chosen and defines & wanted}
        if not more:
            return [solutions[n] for n in sorted(chosen)]
        chosen |= more
        wanted |= {name for n in more for name in names[n][1]}


def _names(cell) -> tuple[set[str], set[str]]:
    """(the names the cell binds at its top level, the names its code reads anywhere)."""
    tree = parse_cell(_source(cell))
    if tree is None:
        return set(), set()
    defines: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defines.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            defines |= {(a.asname or a.name).split(".")[0] for a in statement.names}
        else:
            stored = (n for n in ast.walk(statement) if isinstance(n, ast.Name))
            defines |= {n.id for n in stored if isinstance(n.ctx, ast.Store)}
    read = (n for n in ast.walk(tree) if isinstance(n, ast.Name))
    return defines, {n.id for n in read if isinstance(n.ctx, ast.Load)}


def _digest(texts: list[str]) -> str:
    kept = [text for text in texts if text]
    return hashlib.sha256("\0".join(kept).encode()).hexdigest()
