"""A number a notebook shows as a measurement must come from data/baselines.json or from the run
itself. This scans what the notebooks *say* (their markdown as written; code literals are inputs
and outputs are computed): every decimal number there must be a fact or worked example of the
lecture texts, a value recorded in data/baselines.json, or one of the few derived constants and
settings listed here with the reason."""

import json
import re

import nbformat
import pytest
from paths import ROOT, SHARED

LECTURE = SHARED / "lecture"
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?!\d|\.\d|[A-Za-z_])")

# Arithmetic consequences of the lab's sizes, and settings, shown in the notebooks' text.
DERIVED = {
    "31.75": "(T - 1) / 4: mean distance of uniform causal rows over T = 128",
    "15.75": "(T - 1) / 4 over T = 64",
    "63.5": "(T - 1) / 2: the largest possible mean distance over T = 128",
    "1.25": "uniform causal rows over T = 6: the mean of t / 2",
    "2.5": "all weight on the first key over T = 6: the mean of t",
    "0.1": "a tolerance or a smoothing constant k",
    "0.01": "a smoothing constant k",
    "0.8": "the sampling temperature",
    "1.0": "the gradient-clipping norm",
}


def _numbers_in(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def _recorded() -> set[str]:
    path = ROOT / "data" / "baselines.json"
    if not path.is_file():
        return set()
    found: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, float):
            found.update(f"{value:.{d}f}" for d in range(1, 5))

    walk(json.loads(path.read_text()))
    return found


@pytest.mark.skipif(not LECTURE.is_dir(), reason="the lecture texts are not beside the checkout")
def test_every_number_a_notebook_states_has_a_source():
    allowed = set(DERIVED) | _recorded()
    for text in LECTURE.glob("*.txt"):
        allowed |= _numbers_in(text.read_text(encoding="utf-8"))
    unexplained = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in (c for c in nb.cells if c.cell_type == "markdown"):
            for number in _numbers_in(cell.source) - allowed:
                unexplained.setdefault(path.stem, set()).add(number)
    assert not unexplained, (
        f"numbers typed into notebooks with no source: {unexplained}. Compute them in the "
        "notebook, read them from data/baselines.json, or (for arithmetic facts) list them in "
        "DERIVED with the reason."
    )
