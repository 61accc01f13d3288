"""Our two nbgrader preprocessors (grader/engine/preprocessors.py), called directly on hand-made
cells: StderrIsNotFailure keeps nbgrader from scoring 0 a check that passed with a warning on
stderr, and only such a check; HideHiddenTests leaves the hidden tests' code out of a graded
cell's source and its error's traceback. That a warning reaches the graded notebook as a stream
is test_job.py's; that the hidden code is absent from a feedback page, test_grading.py's."""

from __future__ import annotations

import copy

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output
from nbgrader.utils import determine_grade

from grader.engine.preprocessors import HideHiddenTests, StderrIsNotFailure

GRADED = {"nbgrader": {"grade": True, "grade_id": "ex1_check", "points": 1, "locked": True}}
WARNING = "UserWarning: deprecated style\n  warnings.warn('deprecated style')\n"
# A check's failure as IPython sends it: coloured, the traceback quoting the cell's lines.
HIDDEN_SOURCE = (
    "check.exercise_1(attention)\n"
    "### BEGIN HIDDEN TESTS\n"
    "hidden.exercise_1(attention)\n"
    "### END HIDDEN TESTS\n"
)
SAID = "not divided by sqrt(d_k)"  # the check's message, coloured as IPython colours it
FAILURE = new_output(
    "error",
    ename="CheckFailed",
    evalue=f"\x1b[31m{SAID}\x1b[0m",
    traceback=[
        "\x1b[31m----> 3\x1b[0m hidden.exercise_1(attention)",
        f"\x1b[31mCheckFailed\x1b[0m: \x1b[31m{SAID}\x1b[0m",
    ],
)


def stderr_outputs(*more) -> list[nbformat.NotebookNode]:
    return [new_output("stream", name="stderr", text=WARNING), *more]


def preprocessed(preprocessor, *cells) -> list[nbformat.NotebookNode]:
    nb, _ = preprocessor.preprocess(new_notebook(cells=list(cells)), {})
    return nb.cells


def test_a_check_that_passed_with_a_warning_on_stderr_keeps_its_points():
    cell = new_code_cell("check.exercise_1(attention)", metadata=GRADED, outputs=stderr_outputs())
    assert determine_grade(cell) == (0, 1)  # nbgrader's own verdict on stderr
    (cell,) = preprocessed(StderrIsNotFailure(), cell)
    prefixed = (
        "[stderr] UserWarning: deprecated style\n[stderr]   warnings.warn('deprecated style')\n"
    )
    assert [(o.name, o.text) for o in cell.outputs] == [("stdout", prefixed)]
    assert determine_grade(cell) == (1, 1)


def test_a_check_that_raised_keeps_its_stderr_and_scores_0():
    cell = new_code_cell(
        "check.exercise_1(attention)", metadata=GRADED, outputs=stderr_outputs(FAILURE)
    )
    (done,) = preprocessed(StderrIsNotFailure(), copy.deepcopy(cell))
    assert done.outputs == cell.outputs
    assert determine_grade(done) == (0, 1)


def test_a_cell_that_is_not_graded_keeps_its_stderr():
    cell = new_code_cell("import warnings", outputs=stderr_outputs())
    (done,) = preprocessed(StderrIsNotFailure(), copy.deepcopy(cell))
    assert done.outputs == cell.outputs


def test_the_hidden_tests_leave_a_graded_cells_source():
    cell = new_code_cell(HIDDEN_SOURCE, metadata=GRADED)
    (cell,) = preprocessed(HideHiddenTests(), cell)
    assert cell.source == "check.exercise_1(attention)\n"


def test_a_checks_error_keeps_its_name_and_message_only():
    cell = new_code_cell(HIDDEN_SOURCE, metadata=GRADED, outputs=[copy.deepcopy(FAILURE)])
    (cell,) = preprocessed(HideHiddenTests(), cell)
    assert cell.outputs[0].traceback == [f"CheckFailed: {SAID}"]  # the hidden line gone


def test_an_error_in_a_cell_that_is_not_graded_keeps_its_traceback():
    """The student's own code: its traceback quotes nothing hidden, and it helps them."""
    cell = new_code_cell("attention(q, k, v)", outputs=[copy.deepcopy(FAILURE)])
    (cell,) = preprocessed(HideHiddenTests(), cell)
    assert cell.outputs[0].traceback == FAILURE.traceback
