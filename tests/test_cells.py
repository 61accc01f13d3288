"""What a graded cell judged of the student's (grader/cells.answers), on every released notebook
of the course: a check's answer is its exercise's solution cells and the solution cells it
reads, so editing MODE or the setup, adding a cell of one's own, or an errata that removes
another check leaves it as it was; editing a solution cell it judges changes it. Notebooks are
the release as built (conftest.released), filled in with the solutions."""

from __future__ import annotations

import copy

import nbformat
import pytest

from grader.cells import answers
from maintainer.fabricated_class import perfect
from transformer_lab.catalogue import NOTEBOOKS


def _meta(cell) -> dict:
    return cell["metadata"].get("nbgrader", {})


def _checks(nb) -> list[str]:
    return [
        _meta(c)["grade_id"]
        for c in nb["cells"]
        if _meta(c).get("grade") and not _meta(c).get("solution")
    ]


def _edited(nb, find, change) -> dict:
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        if find(cell):
            cell["source"] = change("".join(cell["source"]))
    return nb


def _commented(source: str) -> str:
    return source + "\n# mine"


def _parameters(cell) -> bool:
    return "parameters" in cell["metadata"].get("tags", [])


def _setup(cell) -> bool:
    return cell["cell_type"] == "code" and not _meta(cell) and "import" in "".join(cell["source"])


@pytest.fixture(scope="module", params=NOTEBOOKS)
def solved(request, released) -> dict:
    return perfect(released, request.param)


def test_the_parameters_setup_and_a_students_own_cell_are_no_ones_answer(solved):
    before = answers(solved)
    nb = _edited(solved, _parameters, lambda s: s.replace('MODE = "auto"', 'MODE = "quick"'))
    nb = _edited(nb, _setup, lambda s: s + "\nimport numpy as np  # mine\n")
    for at in (len(nb["cells"]) - 1, 4):  # at the end, and among the setup cells
        nb["cells"].insert(at, nbformat.v4.new_code_cell("x = 1  # a cell of my own"))
    assert answers(nb) == before


def test_removing_a_check_changes_no_other_checks_answer(solved):
    before = answers(solved)
    for removed in _checks(solved):
        nb = copy.deepcopy(solved)
        nb["cells"] = [c for c in nb["cells"] if _meta(c).get("grade_id") != removed]
        assert answers(nb) == {i: d for i, d in before.items() if i != removed}, removed


def test_a_checks_answer_changes_with_each_solution_cell_it_judges_and_no_other(solved):
    """A solution cell changes its own digest and the checks that judge it; a written answer,
    graded by hand, is no check's."""
    before = answers(solved)
    solutions = [_meta(c)["grade_id"] for c in solved["cells"] if _meta(c).get("solution")]
    written = {_meta(c)["grade_id"] for c in solved["cells"] if _meta(c).get("grade")}
    for solution in solutions:
        nb = _edited(solved, lambda c, i=solution: _meta(c).get("grade_id") == i, _commented)
        changed = {i for i, d in answers(nb).items() if before[i] != d}
        exercise = solution.split("_")[0]
        judged = {i for i in _checks(solved) if i.split("_")[0] == exercise}
        if solution in written:  # ex4_prediction: a written answer judges itself alone
            judged = set()
        if solution == "ex6a_multi_head":  # Challenge B's block runs Challenge A's attention
            judged.add("ex6b_check")
        assert changed == {solution} | judged, solution
