"""The notebooks as students and CI meet them: built from solutions/, no drift, no outputs;
student notebooks stop at each checkpoint with "not done yet". The solved notebooks run in
test_fresh_runtime.py (as students open them) and test_pipeline.py (with the hidden tests)."""

import json
import os
from pathlib import Path

import nbformat
import pytest
from paths import ROOT

from grader.course import code_stub
from maintainer import notebook_build
from maintainer.fabricated_class import release

pytestmark = pytest.mark.heavy(order=5)
NAMES = [p.stem for p in notebook_build.sources()]


def committed(name: str):
    return nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)


def graded(cell, key: str) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get(key))


def test_no_drift_between_solutions_and_notebooks():
    changed = notebook_build.drift()
    assert not changed, f"run `make notebooks` and commit: {changed}"


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_shape(name):
    nb = committed(name)
    text = json.dumps(nb)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "colab-badge.svg" in nb.cells[1].source
    for plumbing in ("SEEDS", "RESULTS", "record(", notebook_build.MAINTAINER_TAG):
        assert plumbing not in text, f"maintainer plumbing in the student notebook: {plumbing}"
    assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "outputs committed"
        if graded(cell, "solution") and cell.cell_type == "code":
            assert 'raise NotImplementedError("not done yet")' in cell.source
            check = nb.cells[i + 1]
            assert graded(check, "grade"), "a checkpoint cell must follow each exercise"
            assert "<details><summary>Solution</summary>" in nb.cells[i + 2].source


def execute_in_smoke_mode(nb, cwd: Path):
    from nbclient import NotebookClient

    for cell in nb.cells:  # what papermill does with the parameters cell
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace('MODE = "auto"', 'MODE = "smoke"')
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,  # a student who has done nothing yet sees every check stop
        resources={"metadata": {"path": str(cwd)}},
    ).execute(env={**os.environ, "MPLBACKEND": "Agg"})
    return nb


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_stops_at_each_checkpoint(name, tmp_path):
    nb = execute_in_smoke_mode(committed(name), tmp_path)
    for cell in nb.cells:
        if cell.cell_type == "code" and graded(cell, "grade"):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert errors, f"{cell.metadata.nbgrader.grade_id} passed with nothing done"
            assert errors[0].ename == "NotDoneYet" and "not done yet" in errors[0].evalue
    if name != "01_attention":  # the later ones say whose pieces their model runs on
        printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
        for piece, notebook in (("attention", "01"), ("mask", "02"), ("embedding", "03")):
            line = f"{piece}: the course's: no notebook {notebook} of yours was found beside"
            assert (line in printed) == (notebook < name[:2]), (name, piece)
    assert not (tmp_path / "my_transformer.py").exists()  # nothing passed, nothing kept


@pytest.mark.parametrize("name", NAMES)
def test_the_pipeline_runs_the_maintainer_cells_students_do_not_get(name):
    path = ROOT / "solutions" / f"{name}.py"
    pipeline_nb = notebook_build.source_notebook(path, maintainer=True)
    tagged = [
        c for c in pipeline_nb.cells if notebook_build.MAINTAINER_TAG in c.metadata.get("tags", [])
    ]
    records = path.read_text().count("record(RESULTS")  # every measurement the pipeline keeps
    assert sum(c.source.count("record(RESULTS") for c in tagged) == records
    student = notebook_build.source_notebook(path)
    assert len(student.cells) == len(pipeline_nb.cells) - len(tagged)


def test_folds_render_as_html_details_with_code_inside():
    """nbconvert's Markdown renderer (as JupyterLab's) keeps <details> and renders the fenced
    code inside it, because the fold leaves a blank line after <summary> and before </details>."""
    import re

    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_notebook_node(committed(NAMES[0]))
    folds = re.findall(r"<details>(.*?)</details>", html, flags=re.S)
    solutions = [f for f in folds if "Solution" in f]
    assert solutions and all("<pre" in f or "<code" in f for f in solutions)
    assert all("```" not in f for f in folds), "a fenced block was left unrendered"


def grade_ids(nb) -> list[str]:
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]


def test_graded_release_has_no_solutions_or_hidden_tests_and_keeps_grade_ids(tmp_path):
    """`nbgrader generate_assignment` on the built source gives what instructors hand out."""
    release(tmp_path / "course")
    for name in NAMES:
        released = nbformat.read(tmp_path / "course" / "release" / name / f"{name}.ipynb", 4)
        text = json.dumps(released)
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        assert "RESULTS" not in text and "record(" not in text  # no maintainer cells
        stub = code_stub().splitlines()[-1]  # nbgrader indents it
        assert any(stub in c.source for c in released.cells)
        assert grade_ids(released) == grade_ids(committed(name))


def test_the_release_s_gradebook_is_stamped_as_nbgrader_stamps_a_new_one(tmp_path):
    """release stamps a new gradebook in-process; nbgrader's own new one (by `alembic heads` in a
    second interpreter) must hold the same tables and the same migration head."""
    import sqlite3

    import nbgrader.api
    from nbgrader.api import Gradebook

    from grader.term.nbgrader_apps import scripts_on_path, stamp_new_gradebook

    def contents(path: Path) -> tuple:
        with sqlite3.connect(path) as db:
            tables = db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
            return sorted(tables), db.execute("SELECT * FROM alembic_version").fetchall()

    def no_second_interpreter():
        raise AssertionError("nbgrader asked alembic for the head of a stamped gradebook")

    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    stamp_new_gradebook(ours)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbgrader.api, "get_alembic_version", no_second_interpreter)
        Gradebook(f"sqlite:///{ours}").close()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", scripts_on_path(dict(os.environ))["PATH"])
        Gradebook(f"sqlite:///{theirs}").close()
    assert contents(ours) == contents(theirs)
    assert len(contents(ours)[0]) > 5 and contents(ours)[1][0][0]  # nbgrader's tables, a head
