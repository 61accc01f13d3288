"""The rerun key (grader/engine/rerun_key.py): an edit regrades exactly the notebooks whose score it
can change. Each edit is made in a copy of the checkout (conftest.checkout_copy) and of a
released course; autograde regrades a submission when its notebook's digest differs from the one
in its last job.json, so a notebook whose digest is unchanged is not executed again. An edit that
changes no behaviour (a comment, a docstring, the layout; a release's markdown) changes no
digest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import checkout_copy
from paths import ROOT
from test_no_import_cycle import imported, modules

from grader.course import Layout
from grader.engine import rerun_key
from transformer_lab.catalogue import NOTEBOOKS

# The notebooks that load the course's recorded mini-GPT (tl.load_trained_gpt): measured by
# executing each release in grade mode with an audit hook on open(), they are the only ones
# that read data/*.pt, and 04 reads data/baselines.json only to show its figures.
LOAD_THE_MODEL = {"05_heads", "06_stretch"}


def _append(path: Path, text: str = "\nEDITED = 1\n") -> None:
    """A statement at the end: an edit that changes behaviour (a comment would not)."""
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _baselines(root: Path, change) -> None:
    path = root / "data" / "baselines.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data["runs"][next(iter(data["runs"]))])
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _refresh_a_figure(run: dict) -> None:
    rows = run["results"]["rows"]
    row = rows[next(iter(rows))]
    key = next(k for k, v in row.items() if isinstance(v, float))
    row[key] += 0.01


def _rewrite_the_model(root: Path) -> None:
    path = root / "data" / "mini_gpt-full-cpu.pt"
    path.write_bytes(path.read_bytes() + b"\0")


_UNUSED = '\n\ndef _unused() -> str:\n    return "A sentence reworded."\n'

# what is edited -> (the edit, the notebooks it regrades)
EDITS = {
    "the term's code (a grade sheet column, a class report title)": (
        lambda root: [
            _append(root / "grader" / "term" / f) for f in ("gradesheet.py", "class_report.py")
        ],
        set(),
    ),
    "the export, the release and nbgrader's apps (grader/term/export.py, nbgrader_apps.py)": (
        lambda root: [
            _append(root / "grader" / "term" / f)
            for f in ("export.py", "nbgrader_apps.py", "canvas.py")
        ],
        set(),
    ),
    "a review pattern (grader/engine/review.py): its flags are computed again at every run": (
        lambda root: _append(
            root / "grader" / "engine" / "review.py", '\nTOUCHES += (("x", "y"),)\n'
        ),
        set(),
    ),
    "the options' words (grader/engine/options.py): their values are in every key": (
        lambda root: _append(root / "grader" / "engine" / "options.py"),
        set(),
    ),
    "the term's plugins in grader/nbgrader_config.py (export, formgrader, feedback)": (
        lambda root: _append(root / "grader" / "nbgrader_config.py"),
        set(),
    ),
    "a figure in baselines.json (a refreshed run's results)": (
        lambda root: _baselines(root, _refresh_a_figure),
        set(),
    ),
    "the check of notebook 01 (checkpoints/attention.py)": (
        lambda root: _append(root / "checkpoints" / "attention.py"),
        {"01_attention"},
    ),
    "the hidden cases of notebook 02 (checkpoints/causal_mask_hidden.py)": (
        lambda root: _append(root / "checkpoints" / "causal_mask_hidden.py"),
        {"02_causal_mask"},
    ),
    "a check three notebooks import (checkpoints/leak.py)": (
        lambda root: _append(root / "checkpoints" / "leak.py"),
        {"03_positions", "04_training", "06_stretch"},
    ),
    "the checks' core (checkpoints/_core.py)": (
        lambda root: _append(root / "checkpoints" / "_core.py"),
        set(NOTEBOOKS),
    ),
    "the package (transformer_lab/model.py)": (
        lambda root: _append(root / "transformer_lab" / "model.py"),
        set(NOTEBOOKS),
    ),
    "the engine (grader/engine/preflight.py)": (
        lambda root: _append(root / "grader" / "engine" / "preflight.py"),
        set(NOTEBOOKS),
    ),
    "the after-the-lab reading: a reworded template, an unused function in reading/ladder.py": (
        lambda root: [
            _append(root / "transformer_lab" / "reading" / "ladder.py", _UNUSED),
            _append(root / "transformer_lab" / "reading" / "templates" / "ladder_reading.md.j2"),
        ],
        set(),
    ),
    "the recorded model's file (data/mini_gpt-full-cpu.pt)": (
        _rewrite_the_model,
        LOAD_THE_MODEL,
    ),
    "which run holds the recorded model (a run's provenance)": (
        lambda root: _baselines(root, lambda run: run["provenance"].update(date="2027-01-01")),
        LOAD_THE_MODEL,
    ),
}


def _digests(course: Path, root: Path) -> dict[str, str]:
    layout = Layout(course)
    releases = {name: layout.release_notebook(name) for name in layout.assignments()}
    return rerun_key.digests(releases, root)


def _regraded(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before if before[name] != after[name]}


def test_the_course_has_the_notebooks_named_here(released):
    assert tuple(Layout(released).assignments()) == NOTEBOOKS


@pytest.mark.parametrize("what", EDITS)
def test_an_edit_regrades_the_notebooks_it_can_change_and_no_other(
    what, released, tmp_path, monkeypatch
):
    root = checkout_copy(tmp_path / "checkout", monkeypatch)
    before = _digests(released, root)
    edit, regraded = EDITS[what]
    edit(root)
    assert _regraded(before, _digests(released, root)) == regraded, what


def test_no_file_of_the_term_is_in_the_key(released, tmp_path, monkeypatch):
    """Every file of grader/term/ edited at once (reports, exports, the release's and the
    feedback's calls to nbgrader, course.toml's reading): no notebook's key changes."""
    root = checkout_copy(tmp_path / "checkout", monkeypatch)
    before = _digests(released, root)
    edited = sorted((root / "grader" / "term").rglob("*.py"))
    assert {"export.py", "nbgrader_apps.py", "settings.py"} <= {p.name for p in edited}
    for path in edited:
        _append(path)
    assert _regraded(before, _digests(released, root)) == set()


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# In a copy of the checkout: file, what is replaced, by what. None changes behaviour.
NO_BEHAVIOUR = {
    "a comment": (
        "checkpoints/training.py",
        "    # Each mistake's output",
        "    # Edited.\n    # Each mistake's output",
    ),
    "a docstring": (
        "checkpoints/training.py",
        "Checks of notebook 04:",
        "The checks of notebook 04:",
    ),
    "a function's docstring": ("grader/engine/preflight.py", '"""', '"""Edited. '),
    "the layout": ("transformer_lab/model.py", "\nimport math\n", "\n\n\nimport   math\n"),
}
BEHAVIOUR = {
    "a check's message": ("checkpoints/training.py", "Re-read Equation 15.", "See Equation 15."),
    "a tolerance": (
        "checkpoints/training.py",
        "rel_tol=1e-4, abs_tol=1e-5)\n    ]",
        "rel_tol=1e-3, abs_tol=1e-5)\n    ]",
    ),
}


def test_an_edit_that_changes_no_behaviour_regrades_no_one(released, tmp_path, monkeypatch):
    """A kit update mid-term that touches only comments, docstrings or the layout of the
    engine, the checks or the package leaves every key as it was; a message or a number
    changed regrades the notebooks that read it."""
    root = checkout_copy(tmp_path / "checkout", monkeypatch)
    before = _digests(released, root)
    for what, (name, old, new) in NO_BEHAVIOUR.items():
        _replace(root / name, old, new)
        assert _digests(released, root) == before, what
    for what, (name, old, new) in BEHAVIOUR.items():
        _replace(root / name, old, new)
        after = _digests(released, root)
        assert _regraded(before, after) == {"04_training"}, what
        before = after


def test_a_release_s_markdown_regrades_no_one_and_its_points_regrade_its_notebook(
    released, tmp_path
):
    course = Path(shutil.copytree(released, tmp_path / "course"))
    before = _digests(course, ROOT)
    path = course / "release" / "02_causal_mask" / "02_causal_mask.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    markdown["source"] = "# A title edited, a typo fixed\n"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")  # reformatted, too
    assert _regraded(before, _digests(course, ROOT)) == set()
    check = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("points"))
    check["metadata"]["nbgrader"]["points"] += 1
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    assert _regraded(before, _digests(course, ROOT)) == {"02_causal_mask"}


def test_each_notebook_keys_on_its_own_checks_and_the_shared_ones(released):
    # hand_in.py: every graded notebook's last cell, the hand-in check (grading skips it).
    # _devices.py: _core names a device slip (a piece asking for a device the runtime lacks).
    shared = {"__init__.py", "_core.py", "_watch.py", "_devices.py", "codes.py", "results.py"}
    shared |= {"hand_in.py"}
    # yours.py (02-06) finds the student's earlier pieces; grading never runs their checks.
    # in_the_model.py (01-03) trains one step of the model on the exercise's piece.
    own = {
        "01_attention": {"attention.py", "attention_hidden.py", "in_the_model.py"},
        "02_causal_mask": {
            "causal_mask.py",
            "causal_mask_hidden.py",
            "in_the_model.py",
            "yours.py",
        },
        "03_positions": {
            "positions.py",
            "positions_hidden.py",
            "in_the_model.py",
            "leak.py",
            "yours.py",
        },
        "04_training": {"training.py", "training_hidden.py", "leak.py", "yours.py"},
        "05_heads": {"heads.py", "heads_hidden.py", "yours.py"},
        "06_stretch": {"stretch.py", "stretch_hidden.py", "leak.py", "yours.py"},
    }
    for name in NOTEBOOKS:
        code = rerun_key._code(Layout(released).release_notebook(name))
        read = {path.name for path in rerun_key.checks_read(code, ROOT)}
        assert read == shared | own[name], name


def _imports(path: Path) -> set[str]:
    """The modules of grader/ that a file of grader/ imports (grader.term.deadlines)."""
    known = modules([ROOT / "grader"])
    name = next(name for name, file in known.items() if file == path)
    return imported(name, path, known)


def test_the_engine_never_imports_the_term():
    # Else term code could change a score while the rerun key, which leaves it out, stays put.
    for path in sorted((ROOT / "grader" / "engine").glob("*.py")):
        reached = {m for m in _imports(path) if m.startswith("grader.term")}
        assert not reached, f"{path.relative_to(ROOT)} imports {sorted(reached)}"


def test_what_the_engine_imports_of_grader_is_in_the_key():
    keyed = {p for pattern in rerun_key.ENGINE for p in ROOT.glob(pattern)}
    for path in sorted((ROOT / "grader" / "engine").glob("*.py")):
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] != "grader":
                continue
            file = ROOT.joinpath(*parts).with_suffix(".py")
            harmless = {"ctrl_c.py", "outcome.py", "cells.py"}  # no say in a score
            if file.is_file() and file.name not in harmless:
                assert file in keyed, f"{path.name} imports {module}, not in the rerun key"
