"""Before you hand in: a graded notebook read as the grader will read it, where the student works.

The last cell of every graded notebook (maintainer/notebook_build.py) calls
checkpoints/hand_in.py with the release's graded cells written into the call: each grade id, and
what its cell holds (YOUR_CODE, YOUR_ANSWER, or a check's visible code). The build writes them
there from the same source, in the same step, as the release itself, so the expectations and the
notebook a student opens cannot disagree, whichever wheel the runtime installed. This module is
the part that runs no check: reading the notebook where it runs (on Colab the copy its editor
holds, what File → Download gives; elsewhere the saved file), what is wrong with its graded
cells, which cells to run again for a check's code to run (`cells_to_run_again`), and the receipt
the check leaves, which the grader reads back (`receipt_problem`). The workshop's notebooks end
with the same call, which says whether the notebook is complete.

The receipt is an output of the hand-in cell, not the notebook's metadata: on Colab a kernel
cannot write the notebook (the browser holds it; get_ipynb only reads), and elsewhere a kernel
that wrote the file would race the editor's autosave. An output whose MIME type is our own is
saved by the editor with the cell and downloaded with it, as the checks' results are
(checkpoints/results.py). It records what the check saw, for the instructor; it proves nothing (a
student can edit it) and never changes a score.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import re
import symtable
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from .catalogue import of_cell

MIME = "application/vnd.transformer-lab.hand-in+json"
YOUR_CODE, YOUR_ANSWER = "your code", "your answer"  # a check's entry is its code instead
# The release's stubs (grader/nbgrader_config.py's ClearSolutions, which the package cannot read
# on a runtime; tests/test_hand_in.py holds the two equal): the line a code stub raises from,
# and a written answer's placeholder.
CODE_STUB = 'raise NotImplementedError("not done yet")'
TEXT_STUB = "_Your answer here._"
COLAB_SECONDS = 30  # how long Colab's editor may take to hand over the notebook
DOWNLOAD = "File → Download → Download .ipynb"
# A cell's type as Colab's menus and Jupyter's name it, and the keys that set it.
KINDS = {"code": "code", "markdown": "text (Markdown)"}
KEYS = {"code": "Ctrl+M Y in Colab, Y in Jupyter", "markdown": "Ctrl+M M in Colab, M in Jupyter"}


class NotRead(Exception):
    """The notebook could not be read where it runs; the message says why and what to do."""


@dataclass(frozen=True)
class Read:
    """A notebook as the check read it, and where from."""

    nb: dict
    where: str  # "Colab's copy of this notebook", or the file and when it was saved
    hand_in: str  # what to do to hand in what was read


@dataclass(frozen=True)
class Problem:
    """Something the grader would not read as the student means it, and what to do."""

    grade_id: str
    text: str
    blocks: bool = True  # False: a note; the file may go as it is


def read_here(name: str, namespace: dict) -> Read:
    """Notebook `name` as the grader will read it: Colab's copy where this runs on Colab, else
    the saved file. NotRead where neither can be had."""
    if "google.colab" in sys.modules:
        return _from_colab(name)
    return _from_file(_saved_file(name, namespace))


def _from_colab(name: str) -> Read:
    """What File → Download would give: Colab's editor answers a kernel's get_ipynb request
    with {"ipynb": the notebook}, the request notebook exporters on Colab make."""
    try:
        from google.colab import _message

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=COLAB_SECONDS)
        nb = _notebook(reply["ipynb"])
    except Exception as err:  # no answer in time, or not a notebook: each is told the same way
        raise NotRead(
            f"Colab did not hand over this notebook ({type(err).__name__}: {err}). Run this cell "
            f"again; if Colab still does not answer, download the notebook ({DOWNLOAD}) and hand "
            "it in as it is."
        ) from None
    title = nb.get("metadata", {}).get("colab", {}).get("name") or f"{name}.ipynb"
    return Read(nb, "Colab's copy of this notebook", f"{DOWNLOAD}, then hand in {title}")


def _saved_file(name: str, namespace: dict) -> Path:
    """The notebook's file: where Jupyter (JPY_SESSION_NAME) or VS Code (__vsc_ipynb_file__)
    says it is, else the newest NAME.ipynb or copy of it ("Copy of NAME", "NAME (1)") in the
    working folder, which is the notebook's own in Jupyter."""
    here = Path.cwd()
    for told in (os.environ.get("JPY_SESSION_NAME"), namespace.get("__vsc_ipynb_file__")):
        if told and told.endswith(".ipynb"):
            for path in (Path(told), here / Path(told).name):
                if path.is_file():
                    return path
    copies = sorted(here.glob(f"*{name}*.ipynb"), key=lambda p: p.stat().st_mtime)
    if copies:
        return copies[-1]
    raise NotRead(
        f"This notebook's file was not found: Jupyter did not say where it is, and {here} holds "
        f"no {name}.ipynb. Save the notebook there (File → Save) as {name}.ipynb, then run this "
        "cell again."
    )


def _from_file(path: Path) -> Read:
    try:
        nb = _notebook(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, LookupError, TypeError) as err:
        raise NotRead(
            f"{path} could not be read as a notebook ({type(err).__name__}: {err}). Save it again "
            "(File → Save), then run this cell again."
        ) from None
    saved = datetime.fromtimestamp(path.stat().st_mtime).strftime("%H:%M")
    where = f"{path} as saved at {saved} (save first: this reads the file)"
    return Read(nb, where, f"save it (File → Save), then hand in {path}")


def _notebook(data) -> dict:
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("it holds no list of cells")
    return data


def text_of(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def normal(text: str) -> str:
    """Text as the comparisons read it: lines without trailing spaces, no blank ends."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def exercise_title(grade_id: str) -> str:
    """What a student calls the exercise a graded cell belongs to: "Exercise 2"."""
    try:
        return of_cell(grade_id).title
    except KeyError:  # a cell the course added to its own release
        return grade_id.partition("_")[0]


def _called(grade_id: str, what: str) -> str:
    title = exercise_title(grade_id)
    if what == YOUR_CODE:
        return f"the cell of {title} ({grade_id})"
    if what == YOUR_ANSWER:
        return f"the written answer of {title} ({grade_id})"
    return f"the check cell of {title} ({grade_id})"


def cells_to_run_again(
    nb: dict, at: int, code: str, namespace: dict, release: dict[str, str]
) -> list[int]:
    """The cells above cell `at` to run again, in order, for `code` to run in `namespace`: each
    cell that last set a name the code reads and the namespace lacks, then likewise for what
    those cells read; never the whole notebook. So in 04 the cell that trains is never among
    them unless what the code reads comes from training alone: what reads the saved model comes
    from the cells that load it. Where nothing is missing (a name the kernel holds went wrong),
    the exercise's own cells above `at`."""
    cells = nb["cells"]
    names = {
        i: _names(text_of(c)) for i, c in enumerate(cells[:at]) if c.get("cell_type") == "code"
    }
    chosen: set[int] = set()
    wanted = [(name, at) for name in _names(code)[1]]
    while wanted:
        name, before = wanted.pop()
        setting = [i for i in range(before) if i in names and name in names[i][0]]
        if name in namespace or not setting or setting[-1] in chosen:
            continue
        chosen.add(setting[-1])
        wanted += [(read, setting[-1]) for read in names[setting[-1]][1]]
    if not chosen:
        title = exercise_title(grade_id(cells[at]) or "")
        chosen = {i for i in names if release.get(grade_id(cells[i]) or "") == YOUR_CODE}
        chosen = {i for i in chosen if exercise_title(grade_id(cells[i])) == title}
    return sorted(chosen)


def _names(code: str) -> tuple[set[str], set[str]]:
    """(the names a cell's code sets, those it reads from the namespace), as Python's own
    symbol table scopes them; a magic line (`%pip`, `!ls`) is read as `pass`."""
    lines = [re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in code.splitlines()]
    try:
        table = symtable.symtable("\n".join(lines), "<cell>", "exec")
    except SyntaxError:
        return set(), set()
    symbols = table.get_symbols()
    sets = {s.get_name() for s in symbols if s.is_assigned() or s.is_imported()}
    reads = {s.get_name() for s in symbols if s.is_referenced()} - sets
    inner = table.get_children()
    while inner:
        scope = inner.pop()
        reads |= {s.get_name() for s in scope.get_symbols() if s.is_referenced() and s.is_global()}
        inner += scope.get_children()
    return sets, reads - set(vars(builtins))


def cell_name(cell: dict, at: int, release: dict[str, str]) -> str:
    """How a student finds a code cell: the exercise's cell it is, the parameters cell, its
    form's title, else its place."""
    graded, text = grade_id(cell), text_of(cell)
    if graded in release:
        return _called(graded, release[graded])
    if "parameters" in cell.get("metadata", {}).get("tags", []):
        first = re.search(r"^(\w+)\s*=", text, re.MULTILINE)
        return "the parameters cell" + (f" (the one that sets {first[1]})" if first else "")
    title = re.search(r"^\s*#\s*@title\s+(.+?)\s*$", text, re.MULTILINE)
    return f'the cell "{title[1]}"' if title else f"cell {at + 1} from the top"


def problems(nb: dict, release: dict[str, str], ran: list[str] | None = None) -> list[Problem]:
    """What the grader would not read as meant, cell by cell of the release (grade id -> what
    it holds): a graded cell missing, there twice, of another type, still a stub, a check
    changed. `ran`: the code the kernel ran, where known; an answer not among it has not run as
    it stands, so the checks run again here would not speak for it."""
    cells = nb["cells"]
    places: dict[str, list[int]] = {}
    for i, cell in enumerate(cells):
        if grade_id(cell):
            places.setdefault(grade_id(cell), []).append(i)
    ran_as = None if ran is None else {normal(code) for code in ran}
    found = []
    for graded, what in release.items():
        at = places.get(graded, [])
        if not at:
            found.append(_missing(graded, what, cells))
            continue
        if len(at) > 1:
            times = "twice" if len(at) == 2 else f"{len(at)} times"
            numbers = ", ".join(str(i + 1) for i in at[:-1]) + f" and {at[-1] + 1}"
            found.append(
                Problem(
                    graded,
                    f"{_called(graded, what)} appears {times} (cells {numbers} from the top): "
                    "the grader grades only the first; delete the copy you do not mean to hand in",
                )
            )
        found += _as_released(graded, what, cells[at[0]], ran_as)
    return found


def _missing(graded: str, what: str, cells: list[dict]) -> Problem:
    called, title = _called(graded, what), exercise_title(graded)
    if what not in (YOUR_CODE, YOUR_ANSWER):
        if any(not grade_id(c) and normal(text_of(c)) == normal(what) for c in cells):
            return Problem(
                graded,
                f"{called} has lost its grading label; the grader finds it again by its code, "
                "so leave that code as it is",
                blocks=False,
            )
        return Problem(
            graded,
            f"{called} is missing: add a code cell below the cell of {title} holding `{what}`, "
            "or copy it back from the course's copy of this notebook",
        )
    return Problem(
        graded,
        f"{called} is missing, or has lost its grading label: the grader would grade {title} as "
        f"not done. Open the course's copy of this notebook, paste your work into its {title} "
        "cell, and run this check there",
    )


def _as_released(graded: str, what: str, cell: dict, ran_as: set[str] | None) -> list[Problem]:
    """What is wrong with the cell the grader grades for `graded`."""
    called, text = _called(graded, what), text_of(cell)
    want, kind = "markdown" if what == YOUR_ANSWER else "code", cell.get("cell_type")
    if kind != want:
        return [
            Problem(
                graded,
                f"{called} is a {KINDS.get(kind, kind)} cell now: turn it back into a "
                f"{KINDS[want]} cell ({KEYS[want]}), then run it",
            )
        ]
    title = exercise_title(graded)
    if what == YOUR_CODE and any(line.strip() == CODE_STUB for line in text.splitlines()):
        return [
            Problem(
                graded,
                f"{title} is still a stub: {called} still holds `{CODE_STUB}`; write your code "
                "in its place, then run the cell and its check",
            )
        ]
    if what == YOUR_CODE and ran_as is not None and normal(text) not in ran_as:
        return [
            Problem(
                graded,
                f"{called} has not run as it now stands: run it and its check again, so that "
                "what the checks say is about what you hand in",
            )
        ]
    if what == YOUR_ANSWER and TEXT_STUB in text:
        return [Problem(graded, f"{called} is still empty: write it in place of {TEXT_STUB}")]
    if what not in (YOUR_CODE, YOUR_ANSWER) and normal(text) != normal(what):
        return [
            Problem(
                graded,
                f"{called} was changed: the grader runs the course's own `{what}` in its place; "
                "put that back",
            )
        ]
    return []


def graded_hashes(nb: dict) -> dict[str, str]:
    """grade id -> a hash of the cell the grader grades for it (the first carrying it): its
    type and its text."""
    found: dict[str, str] = {}
    for cell in nb.get("cells", []):
        graded = grade_id(cell)
        if graded and graded not in found:
            body = f"{cell.get('cell_type')}\n{normal(text_of(cell))}"
            found[graded] = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    return found


def kit_version() -> str:
    """The installed package's version (the wheel's, on a graded runtime)."""
    try:
        return metadata.version("transformer_lab")
    except metadata.PackageNotFoundError:
        return "unknown"


def receipt(nb: dict, name: str, checks: dict[str, str | None], ready: bool) -> dict:
    """What the hand-in check saw: the graded cells' hashes, each check's code (None: passed),
    whether it said ready, when, with which kit."""
    return {
        "notebook": name,
        "checked": datetime.now(UTC).isoformat(timespec="seconds"),
        "kit": kit_version(),
        "cells": graded_hashes(nb),
        "checks": checks,
        "ready": ready,
    }


def receipts(nb: dict) -> list[dict]:
    """The receipts the hand-in check left in a notebook's outputs, as saved."""
    found = []
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {}).get(MIME) if isinstance(output, dict) else None
            if isinstance(data, dict) and isinstance(data.get("cells"), dict):
                found.append(data)
    return found


def receipt_problem(nb: dict) -> str | None:
    """What the grader should know of a notebook's last hand-in check: which graded cells
    changed after it (edited, added or gone). None without a receipt, or with nothing changed."""
    found = receipts(nb)
    if not found:
        return None
    seen = max(found, key=lambda r: str(r.get("checked", "")))["cells"]
    now = graded_hashes(nb)
    changed = sorted(g for g in {*seen, *now} if seen.get(g) != now.get(g))
    return f"changed after its hand-in check ({', '.join(changed)})" if changed else None
