"""Run one exercise of a solution notebook with its solution region replaced, and its checkpoint.

Convention of every solutions/NN_topic.py (see solutions/README.md): the parameters cell, then
one cell of imports, then the notebook; the pipeline's own cells (tagged maintainer) are
skipped. An exercise cell holds `### BEGIN SOLUTION` .. `### END SOLUTION`; its checkpoint
cell (visible checks, then hidden tests) follows it.
"""

from __future__ import annotations

import linecache
import re
import textwrap
from functools import cache

from paths import ROOT

REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$", re.M | re.S)


@cache
def cells(stem: str):
    import jupytext

    return jupytext.read(ROOT / "solutions" / f"{stem}.py").cells


def cell(stem: str, grade_id: str) -> str:
    for c in cells(stem):
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return c.source
    raise KeyError(f"{stem} has no cell with grade_id {grade_id!r}")


def inject(source: str, body: str) -> str:
    """Put `body` where the solution region is, at the region's indentation."""
    match = REGION.search(source)
    if match is None:
        raise ValueError("no solution region in this cell")
    indented = textwrap.indent(textwrap.dedent(body).strip("\n"), match.group(1))
    return source[: match.start()] + indented + source[match.end() :]


def prelude(stem: str) -> str:
    code = [c for c in cells(stem) if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    parameters, imports = code[at].source, code[at + 1].source
    return parameters.replace('MODE = "auto"', 'MODE = "smoke"') + "\n" + imports


def run_exercise(
    stem: str, exercise_id: str, check_id: str, body: str | None = None, before: tuple = ()
) -> dict:
    """Execute prelude, the cells named in `before` (as written), the exercise (with `body`
    injected if given) and its checkpoint."""
    namespace: dict = {"__name__": "__notebook__"}
    exercise = cell(stem, exercise_id)
    if body is not None:
        exercise = inject(exercise, body)
    earlier = [cell(stem, grade_id) for grade_id in before]
    for number, source in enumerate((prelude(stem), *earlier, exercise, cell(stem, check_id))):
        exec(compile(source, _cell_file(stem, number, source), "exec"), namespace)
    return namespace


def _cell_file(stem: str, number: int, source: str) -> str:
    """A cell's file name, its source kept in linecache as IPython keeps each cell's, so that
    inspect and tracebacks read the student's lines as they do in a notebook."""
    filename = f"<{stem} cell {number}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    return filename


def code_cells(stem: str, **parameters: str) -> list:
    """The code cells of a solution notebook as they run: solutions in place, the pipeline's own
    cells (tagged maintainer) left out, and each of `parameters` (NAME="python expression") set
    in the parameters cell."""
    out = []
    for c in cells(stem):
        tags = c.metadata.get("tags", [])
        if c.cell_type != "code" or "maintainer" in tags:
            continue
        source = c.source
        if "parameters" in tags:
            for name, value in parameters.items():
                source, found = re.subn(rf"^{name} = .*$", f"{name} = {value}", source, flags=re.M)
                assert found == 1, f"{stem}'s parameters cell has no {name}"
        copy = c.copy()
        copy.source = source
        out.append(copy)
    return out


def run(exercise, body: str | None = None) -> dict:
    """Run a bug-zoo exercise (maintainer/zoo/: its solution when body is None) and its
    checkpoint."""
    return run_exercise(
        exercise.notebook, exercise.cell, exercise.check, body, before=exercise.runs_after
    )
