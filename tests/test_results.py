"""A check leaves its result as data in the executed notebook (checkpoints/results.py): a pass
and a failure, each with its exercise and code, read back by `results.read`; the failing cell
still fails with the same error a student reads. Results a check could not have left are
ignored."""

import os

import nbformat
import pytest
from paths import ROOT

from checkpoints import results
from checkpoints.results import MIME, Result

CELLS = (
    "from checkpoints import training as check",
    "check.gpt_well_below_trigram(1.5, 2.5, 'quick')",
    "check.gpt_well_below_trigram(2.5, 2.5, 'quick')",
    "def lm_metrics(logits, targets):\n    raise NotImplementedError\ncheck.exercise_4(lm_metrics)",
)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    folder = tmp_path_factory.mktemp("results")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    ).execute(env=env)
    return nb


def test_a_pass_and_failures_are_left_as_data(executed):
    passed, failed, not_done = results.read(executed)
    assert (passed.exercise, passed.code, passed.passed) == ("trigram", None, True)
    assert "(1.5000 nats)" in passed.message and "(2.5000)" in passed.message  # as it was said
    assert (failed.exercise, failed.code, failed.passed) == (
        "trigram",
        "trigram.not_well_below",
        False,
    )
    assert "2.5000 nats" in failed.message
    assert (not_done.exercise, not_done.code, not_done.passed) == ("ex4", "ex4.not_done", False)


def test_each_result_sits_in_the_cell_of_its_check(executed):
    codes = [[r.code for r in results.of_cell(cell)] for cell in executed.cells]
    assert codes == [[], [None], ["trigram.not_well_below"], ["ex4.not_done"]]


def test_the_student_still_reads_the_tick_and_the_error(executed):
    passed, failed, not_done = executed.cells[1:]
    assert "✅ The mini-GPT" in "".join(o.get("text", "") for o in passed.outputs)
    (error,) = [o for o in failed.outputs if o.output_type == "error"]
    assert error.ename == "CheckFailed"
    assert error.evalue.endswith("[trigram.not_well_below]") and "2.5000 nats" in error.evalue
    (error,) = [o for o in not_done.outputs if o.output_type == "error"]
    assert error.ename == "NotDoneYet" and "not done yet" in error.evalue
    left = [o for o in failed.outputs if o.output_type == "display_data"]
    assert left[0].data["text/plain"] == ""  # shows nothing beside the error


def _cell_with(*data) -> nbformat.NotebookNode:
    outputs = [nbformat.v4.new_output("display_data", data={MIME: d}) for d in data]
    return nbformat.v4.new_code_cell("", outputs=outputs)


def test_only_results_a_check_could_leave_are_read():
    good = {"exercise": "ex1", "code": "ex1.no_sqrt_dk", "passed": False, "message": "m"}
    cell = _cell_with(
        good,
        {**good, "code": "ex1.made_up"},  # undeclared
        {**good, "passed": True},  # a pass with a mistake
        {**good, "code": None},  # a failure without one
        {**good, "passed": "yes"},
        {**good, "extra": 1},
        "ex1.no_sqrt_dk",
    )
    assert results.of_cell(cell) == [Result("ex1", "ex1.no_sqrt_dk", False, "m")]


def test_the_class_report_counts_the_code_the_check_left():
    from grader.term.class_report import PASSED, outcome

    error = nbformat.v4.new_output(
        "error", ename="CheckFailed", evalue="Exercise 1: wrong. [ex1.no_sqrt_dk]", traceback=[]
    )
    left = {"exercise": "ex1", "code": "ex1.no_sqrt_dk", "passed": False, "message": "wrong."}
    failed = _cell_with(left)
    failed.outputs.append(error)
    assert outcome(failed) == ("ex1.no_sqrt_dk", "wrong.")
    # The same text without the data is some other error: no code is parsed out of a message.
    assert outcome(nbformat.v4.new_code_cell("", outputs=[error])) == (
        "other.CheckFailed",
        error.evalue,
    )
    assert outcome(_cell_with({**left, "code": None, "passed": True})) == (PASSED, "")
