"""A check's result as data in the executed notebook, for machines to read.

A student reads a check's printed tick or its error; the class report reads this: each check
that passes or fails in a notebook's kernel also leaves a `display_data` output of the MIME type
below holding {"exercise", "code", "passed", "message"} (code is null for a pass), as
otter-grader leaves a result per test. nbclient stores it in the executed notebook with the
other outputs, and `read` gives it back, so no one parses a code out of a message. Front ends
do not know the type and show its empty text/plain instead. Outside a notebook nothing is left.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass

from .codes import declared

MIME = "application/vnd.transformer-lab.check+json"


@dataclass(frozen=True)
class Result:
    exercise: str  # "ex1", as in its grade id "ex1_check"
    code: str | None  # "ex1.no_sqrt_dk"; None when it passed
    passed: bool
    message: str


def notebook_shell():
    """The IPython shell this runs in, or None (a script, a test): IPython is imported only
    where it already was."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def leave(result: Result) -> None:
    """Leave the result as data in the notebook this runs in."""
    if notebook_shell() is not None:
        from IPython.display import publish_display_data

        publish_display_data({"text/plain": "", MIME: asdict(result)})


def _result(data) -> Result | None:
    """The Result a display's data holds, or None when it is not one a check could leave."""
    if not isinstance(data, dict) or set(data) != {"exercise", "code", "passed", "message"}:
        return None
    code, passed = data["code"], data["passed"]
    if passed is not (code is None) or (code is not None and not declared(code)):
        return None
    if not isinstance(data["exercise"], str) or not isinstance(data["message"], str):
        return None
    return Result(**data)


def of_cell(cell) -> list[Result]:
    """The results the checks of one executed cell left, in order."""
    found = (
        _result(output.get("data", {}).get(MIME))
        for output in cell.get("outputs", [])
        if output.get("output_type") == "display_data"
    )
    return [result for result in found if result is not None]


def read(notebook) -> list[Result]:
    """The results every check of an executed notebook left, in order."""
    return [result for cell in notebook.cells for result in of_cell(cell)]
