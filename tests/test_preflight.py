"""Preflight (grader/engine/preflight.py), called directly on the fabricated class's files: no
sandbox and no grading. A damaged file comes back repaired, every graded cell of the release
where the release has it, with one line per repair; a file that is not a notebook, or not this
one, is quarantined with the reason. That the repairs and reasons reach what the instructor
reads is test_grading.py's."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grader.course import Layout
from grader.engine import preflight
from maintainer.fabricated_class import colab_shaped, fabricate, perfect, release

NB = "01_attention"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    release(course)
    return course


@pytest.fixture(scope="module")
def downloads(course, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("downloads")
    fabricate(course, folder)
    return folder


def graded_cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(grade id, cell type) of each cell with nbgrader metadata, in order."""
    return [
        (c.metadata.nbgrader.grade_id, c.cell_type)
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade_id")
    ]


def checked(course: Path, raw: bytes) -> preflight.Preflight:
    return preflight.preflight(raw, Layout(course).release_notebook(NB))


@pytest.mark.parametrize("student", ["perfect", "untouched", "workshop", "edited"])
def test_a_notebook_with_every_graded_cell_in_place_needs_no_repair(course, downloads, student):
    """edited: a check cell whose code was changed keeps its metadata; nbgrader puts the
    release's source back when it sanitizes, and preflight records it for the instructor."""
    result = checked(course, (downloads / student / f"{NB}.ipynb").read_bytes())
    restored = [r for r in result.repairs if r.endswith("check edited, restored from the release")]
    assert (len(restored), result.quarantined) == (student == "edited", None)
    assert [r for r in result.repairs if r not in restored] == []
    assert graded_cells(result.notebook) == graded_cells(Layout(course).release_notebook(NB))


def test_colabs_download_needs_no_repair(course):
    result = checked(course, json.dumps(colab_shaped(perfect(course, NB))).encode())
    assert (result.repairs, result.quarantined) == ([], None)
    assert graded_cells(result.notebook) == graded_cells(Layout(course).release_notebook(NB))


def repairs(course) -> dict[str, list[str]]:
    """What preflight says of each damaged notebook, its cells numbered from 1 as the release
    places them (the duplicate sits right after the check it copies)."""
    release = Layout(course).release_notebook(NB).cells
    at = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(release, 1)}
    graded = ("ex0_read_the_model", "ex0_check", "ex1_attention", "ex1_check")
    restored = [f"{g}: grading metadata restored (cell {at[g]})" for g in graded]
    duplicate = at["ex1_check"] + 1
    return {
        "stripped": restored,
        "duplicated": [f"cell {duplicate}: duplicate of graded cell 'ex1_check', not graded twice"],
        "deleted": ["ex1_check: check missing, restored from the release"],
        "markdown": [*restored, "ex1_check: was a markdown cell, restored to code"],
        "skiptag": ["ex1_check: tag that would skip it removed"],
    }


REPAIRS = ("stripped", "duplicated", "deleted", "markdown", "skiptag")


@pytest.mark.parametrize("student", REPAIRS)
def test_each_damaged_notebook_is_repaired_and_says_how(course, downloads, student):
    result = checked(course, (downloads / student / f"{NB}.ipynb").read_bytes())
    assert result.quarantined is None
    assert result.repairs == repairs(course)[student]
    # Every graded cell once, in the release's order, as code where the release has code.
    assert graded_cells(result.notebook) == graded_cells(Layout(course).release_notebook(NB))
    tags = {t for c in result.notebook.cells for t in c.metadata.get("tags", [])}
    assert not tags & preflight.SKIP_TAGS


def test_a_file_that_is_not_a_notebook_is_quarantined_with_the_reason(course, downloads):
    result = checked(course, (downloads / "badjson" / f"{NB}.ipynb").read_bytes())
    assert result.notebook is None
    assert result.quarantined.startswith("not valid notebook JSON (")


def test_another_notebook_is_quarantined(course):
    result = checked(course, json.dumps(perfect(course, "02_causal_mask")).encode())
    assert result.notebook is None and "does not look like this notebook" in result.quarantined


@pytest.mark.parametrize("raw", [b"", b"  \n"])
def test_an_empty_upload_is_quarantined_as_empty(raw):
    notebook, reason = preflight.read_notebook(raw)
    assert notebook is None and reason.endswith("[empty]")
