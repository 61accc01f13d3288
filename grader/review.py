"""Flags for review: a submission whose own code reaches for the checking machinery.

The sandbox keeps a notebook away from the files of the checker, but not from the checker's
objects in its own kernel: a cell can replace `check.exercise_1`, install a trace hook or an
IPython input transformer, or patch builtins, and a check may then pass. Such code has no
place in a lab exercise, so the report quotes it for the instructor to read. A flag never
changes a score: a false alarm costs a look, not a grade.

Only the student's cells are read: the exercise cells and any cell the student added, as they
ran (after the locked cells and hidden tests were restored), not the release's own cells.
"""

from __future__ import annotations

import re

import nbformat

ALIAS = re.compile(
    r"^\s*(?:from\s+checkpoints(?:\.\w+)*\s+import[ \t]+(?P<names>[\w \t,]+)"
    r"|import\s+checkpoints(?:\.\w+)*(?:\s+as\s+(?P<alias>\w+))?)",
    re.MULTILINE,
)
# (what it does, pattern); `{checkpoints}` stands for the names the notebook binds to it.
TOUCHES = (
    ("imports checkpoints", r"\b(?:import\s+checkpoints|from\s+checkpoints\b)"),
    ("writes an attribute of checkpoints", r"\b(?:{checkpoints})(?:\.\w+)+\s*(?:=[^=]|[-+*/|&]=)"),
    ("writes an attribute of checkpoints", r"\b(?:setattr|delattr)\(\s*(?:{checkpoints})\b"),
    ("uses sys.modules", r"\bsys\.modules\b"),
    ("sets a trace hook", r"\b(?:sys|threading)\.set(?:trace|profile)\b"),
    ("uses IPython input transformers", r"\b(?:input_transformers\w*|ast_transformers)\b"),
    ("touches builtins", r"\b__builtins__\b|\bbuiltins\b"),
    ("uses unittest.mock", r"\bunittest\.mock\b|\bfrom\s+unittest\s+import\s+mock\b|\bmock\."),
)


def _aliases(nb: nbformat.NotebookNode) -> list[str]:
    """Names the notebook binds to checkpoints or its modules (`check`, `leak`, ...)."""
    names = {"checkpoints"}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for found in ALIAS.finditer(cell.source):
            if found["alias"]:
                names.add(found["alias"])
            for part in (found["names"] or "").split(","):
                if part.strip():
                    names.add(part.split()[-1])  # `x as y` binds y
    return sorted(names)


def _student_cells(nb: nbformat.NotebookNode, release: nbformat.NotebookNode):
    given = {c.source for c in release.cells if c.cell_type == "code"}
    for index, cell in enumerate(nb.cells):
        locked = cell.metadata.get("nbgrader", {}).get("locked")
        if cell.cell_type == "code" and not locked and cell.source not in given:
            yield index, cell


def flags(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[str]:
    """One line per offending line of the student's code: where, what, and the line itself."""
    aliases = "|".join(map(re.escape, _aliases(nb)))
    patterns = [(what, re.compile(p.replace("{checkpoints}", aliases))) for what, p in TOUCHES]
    found = []
    for index, cell in _student_cells(nb, release):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        where = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
        for line in cell.source.splitlines():
            if line.lstrip().startswith("#"):
                continue
            what = [w for w, pattern in patterns if pattern.search(line)]
            if what:
                found.append(f"{where} {', '.join(dict.fromkeys(what))}: `{line.strip()}`")
    return found
