"""A notebook cell's code as Python, IPython's magics aside: read by the engine (review flags,
the rerun key) and by the term (copies); and what each graded cell judged of the student's, as
a digest (`answers`): a hand grade lasts as long as its answer's digest stays the same."""

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


def _text(cell) -> str:
    """The cell's text with the whitespace at line ends and cell ends set aside: an editor's or
    Colab's trailing spaces and newlines change no answer."""
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    return "\n".join(line.rstrip() for line in source.strip("\n").splitlines()).rstrip()


def answers(nb) -> dict[str, str]:
    """grade id -> SHA-256 of the student's answer that cell judged, for every graded cell (and
    every solution cell, whose comment a grader may have written). A written answer (a cell that
    is both solution and grade) and a solution cell judge their own text; a check judges the
    student's code above it since the previous graded cell: the solution cells and any code
    cell the student added there (a locked cell is the release's, put back at grading)."""
    found, above = {}, []
    for cell in nb["cells"]:
        meta = _nbgrader(cell)
        grade_id = meta.get("grade_id")
        if meta.get("solution") and grade_id:
            found[grade_id] = _digest([_text(cell)])
        if meta.get("grade"):
            if not meta.get("solution"):
                found[grade_id] = _digest(above)
            above = []
        elif cell["cell_type"] == "code" and not meta.get("locked"):
            above.append(_text(cell))
    return found


def _digest(texts: list[str]) -> str:
    kept = [text for text in texts if text]
    return hashlib.sha256("\0".join(kept).encode()).hexdigest()
