"""Before you hand in: the last cell of every graded notebook reads the notebook as the grader will
(on Colab, the copy its editor hands over; elsewhere the saved file), names what the grader would
not read as meant, runs the checks again and says "ready to hand in" or what to fix; the receipt
it leaves in the notebook is read back by collect, which notes a graded cell edited after it.

The notebooks are the graded release as Colab holds it (nbformat 4.0, no cell ids), solved or
damaged as students damage them; Colab is a stand-in that answers get_ipynb as Colab does
({"ipynb": ...}); the kernel is a namespace that ran the notebook's exercise cells. No kernel is
started: the checks run in this process, as the cell runs them in the student's."""

from __future__ import annotations

import ast
import copy
import json
import math
import shutil
import sys
import types
from pathlib import Path

import nbformat
import pytest
import torch

from checkpoints import attention
from checkpoints import hand_in as the_cell
from grader.course import Layout, code_stub, nbgrader_config
from grader.term import collect
from grader.term.course_open import Course
from maintainer import notebook_build
from maintainer.fabricated_class import WRONG_ATTENTION, cell_of, colab_shaped, perfect, untouched
from maintainer.fresh_runtime import solved_workshop
from transformer_lab import hand_in
from transformer_lab.catalogue import NOTEBOOKS

NB = "01_attention"
ANSWERS = ("ex0_read_the_model", "ex1_attention")
READY = (
    "ready to hand in: File → Download → Download .ipynb, then hand in Copy of 01_attention.ipynb"
)
NOT_READY = the_cell.NOT_READY.format(what="Exercise 1")


CHECKS_IMPORT = "import training as check"  # the code of 04's setup cell


def hand_in_cell(nb: dict) -> dict:
    (cell,) = [c for c in nb["cells"] if "before_you_hand_in(" in hand_in.text_of(c)]
    return cell


def expected(nb: dict) -> dict[str, str]:
    """The graded cells the build wrote into the hand-in cell's call, read as Python reads it."""
    (call,) = [
        n for n in ast.walk(ast.parse(hand_in.text_of(hand_in_cell(nb)))) if isinstance(n, ast.Call)
    ]
    return ast.literal_eval(call.args[1])


@pytest.fixture(scope="module")
def solved(released) -> dict:
    """The solved notebook 01 as Colab holds it."""
    return colab_shaped(perfect(released, NB))


def kernel(nb: dict) -> tuple[dict, list[str]]:
    """The namespace of a kernel that ran nb's exercise cells, and the code it ran."""
    ran = [hand_in.text_of(cell_of(nb, graded)) for graded in ANSWERS]
    namespace = {"check": attention, "math": math, "torch": torch}
    for code in ran:
        exec(code, namespace)
    return namespace, ran


@pytest.fixture
def colab(monkeypatch) -> dict:
    """Colab, played by stand-in modules: its editor answers get_ipynb with the notebook it holds
    (`held["nb"]`), as {"ipynb": ...}; `held["asked"]` lists what was asked."""
    held = {"asked": []}

    def blocking_request(request_type, request="", timeout_sec=5, parent=None):
        held["asked"].append(request_type)
        if "nb" not in held:  # Colab's editor never answered
            raise TimeoutError(f"no reply in {timeout_sec} s")
        return {"ipynb": copy.deepcopy(held["nb"])}

    message = types.ModuleType("google.colab._message")
    message.blocking_request = blocking_request
    colab = types.ModuleType("google.colab")
    colab._message = message
    google = types.ModuleType("google")
    google.colab = colab
    for name, module in (("google", google), ("google.colab", colab), (message.__name__, message)):
        monkeypatch.setitem(sys.modules, name, module)
    return held


def check(held: dict, nb: dict, kernel_state: tuple[dict, list[str]]) -> tuple[list[str], dict]:
    held["nb"] = nb
    namespace, ran = kernel_state
    read = hand_in.read_here(NB, namespace)
    return the_cell.verdict(read, NB, expected(nb), namespace, ran)


def _graded_or_answer(cell: dict) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade") or meta.get("solution"))


def test_the_hand_in_cell_expects_each_graded_cell_as_released(released):
    """Before the closing cell, a form whose call lists the release's graded cells: each answer's
    kind and each check's code as the grader runs it (the release's, no hidden tests)."""
    for name in NOTEBOOKS:
        nb = json.loads(Layout(released).notebook("release", name).read_text())
        assert (
            nb["cells"][-2] is hand_in_cell(nb)
            and nb["cells"][-2]["metadata"]["cellView"] == "form"
        )
        heading = notebook_build.HAND_IN_HEADING.splitlines()[0]  # the builder's
        assert hand_in.text_of(nb["cells"][-3]).startswith(heading)
        # the cells a grade rests on: answers and checks, not a locked demonstration (02's)
        graded = [c for c in nb["cells"] if _graded_or_answer(c)]
        said = expected(nb)
        assert list(said) == [hand_in.grade_id(c) for c in graded], name
        for cell in graded:
            meta, what = cell["metadata"]["nbgrader"], said[hand_in.grade_id(cell)]
            if meta["solution"]:
                kind = hand_in.YOUR_CODE if cell["cell_type"] == "code" else hand_in.YOUR_ANSWER
                assert what == kind
            else:
                assert what == hand_in.normal(hand_in.text_of(cell)) and "hidden" not in what
    assert hand_in.CODE_STUB == code_stub().splitlines()[-1].strip()
    assert hand_in.TEXT_STUB == nbgrader_config().ClearSolutions.text_stub


def workshop(name: str, solved: bool = False) -> dict:
    """The workshop (self-study) flavour of notebook `name` as Colab downloads it, its exercise
    cells filled with the solutions where `solved`."""
    path = notebook_build.SOLUTIONS / f"{name}.py"
    if solved:
        nb = solved_workshop(path, notebook_build.settings())
    else:
        nb = notebook_build.workshop_notebook(notebook_build.source_notebook(path), name)
    return colab_shaped(json.loads(nbformat.writes(nb)))


def test_the_workshop_ends_with_the_same_check_without_hidden_tests(released):
    """A student working alone can tell when a notebook is complete: the last cell before the
    closing one checks it as the graded flavour's does, the same cells expected (the release's
    visible checks), and says complete rather than how to hand in."""
    for name in NOTEBOOKS:
        nb = workshop(name)
        graded = json.loads(Layout(released).notebook("release", name).read_text())
        assert nb["cells"][-2] is hand_in_cell(nb), name
        heading = notebook_build.COMPLETE_HEADING.splitlines()[0]  # the builder's
        assert hand_in.text_of(nb["cells"][-3]).startswith(heading)
        assert expected(nb) == expected(graded), name
        assert not any("hidden" in what for what in expected(nb).values())
        (call,) = [
            n
            for n in ast.walk(ast.parse(hand_in.text_of(nb["cells"][-2])))
            if isinstance(n, ast.Call)
        ]
        assert [(k.arg, k.value.value) for k in call.keywords] == [("graded", False)]
    source = notebook_build.source_notebook(notebook_build.SOLUTIONS / f"{NB}.py")
    assert notebook_build.workshop_notebook(source) == notebook_build.workshop_notebook(source, NB)


def test_a_workshop_notebook_is_complete_or_says_what_to_fix(colab):
    solved = workshop(NB, solved=True)
    colab["nb"] = solved
    namespace, ran = kernel(solved)
    read = hand_in.read_here(NB, namespace)
    lines, receipt = the_cell.verdict(read, NB, expected(solved), namespace, ran, graded=False)
    assert lines[0].startswith("Is 01_attention complete?")  # the workshop's, not hand in
    assert lines[1:] == ["✅ Exercise 0", "✅ Exercise 1", the_cell.COMPLETE]
    assert receipt["ready"] and set(receipt["checks"].values()) == {None}
    colab["nb"] = untouched_nb = workshop(NB)
    read = hand_in.read_here(NB, {})
    lines, receipt = the_cell.verdict(read, NB, expected(untouched_nb), {}, [], graded=False)
    assert lines[-1] == the_cell.NOT_COMPLETE.format(what="Exercise 0 and Exercise 1")
    assert not receipt["ready"] and set(receipt["checks"].values()) == {the_cell.NOT_RUN}


def test_a_right_notebook_on_colab_is_ready_and_its_receipt_says_what_was_checked(solved, colab):
    lines, receipt = check(colab, solved, kernel(solved))
    assert colab["asked"] == ["get_ipynb"]
    assert lines == [
        "Before you hand in 01_attention: read from Colab's copy of this notebook",
        "✅ Exercise 0",
        "✅ Exercise 1",
        READY,
    ]
    assert receipt["checks"] == {"ex0_check": None, "ex1_check": None} and receipt["ready"]
    assert receipt["cells"] == hand_in.graded_hashes(solved) and len(receipt["cells"]) == 4
    assert receipt["kit"] == hand_in.kit_version() != "unknown"


def test_a_wrong_answer_is_named_by_its_check(solved, colab):
    nb = copy.deepcopy(solved)
    cell_of(nb, "ex1_attention")["source"] = WRONG_ATTENTION
    lines, receipt = check(colab, nb, kernel(nb))
    assert lines[2].startswith("❌ Exercise 1") and lines[2].endswith("[ex1.no_sqrt_dk]")
    assert lines[1] == "✅ Exercise 0" and lines[-1] == NOT_READY
    assert receipt["checks"] == {"ex0_check": None, "ex1_check": "ex1.no_sqrt_dk"}


def _cells(nb: dict, graded: str) -> list[int]:
    return [i for i, c in enumerate(nb["cells"]) if hand_in.grade_id(c) == graded]


def duplicated(nb):
    (at,) = _cells(nb, "ex1_attention")
    nb["cells"].insert(at + 2, copy.deepcopy(nb["cells"][at]))  # pasted below its check
    return (
        f"❌ the cell of Exercise 1 (ex1_attention) appears twice (cells {at + 1} and {at + 3} "
        "from the top): the grader grades only the first; delete the copy you do not mean to "
        "hand in"
    )


def check_deleted(nb):
    del nb["cells"][_cells(nb, "ex1_check")[0]]
    return (
        "❌ the check cell of Exercise 1 (ex1_check) is missing: add a code cell below the cell "
        "of Exercise 1 holding `check.exercise_1(scaled_dot_product_attention)`, or copy it "
        "back from the course's copy of this notebook"
    )


def turned_to_text(nb):
    cell = cell_of(nb, "ex1_attention")
    cell["cell_type"] = "markdown"
    del cell["outputs"], cell["execution_count"]
    return (
        "❌ the cell of Exercise 1 (ex1_attention) is a text (Markdown) cell now: turn it back "
        "into a code cell (Ctrl+M Y in Colab, Y in Jupyter), then run it"
    )


def check_edited(nb):
    cell_of(nb, "ex1_check")["source"] = ["# check.exercise_1(scaled_dot_product_attention)\n"]
    return (
        "❌ the check cell of Exercise 1 (ex1_check) was changed: the grader runs the course's "
        "own `check.exercise_1(scaled_dot_product_attention)` in its place; put that back"
    )


def edited_since_it_ran(nb):
    cell = cell_of(nb, "ex1_attention")
    cell["source"] = [line.replace("math.sqrt(d_k)", "d_k**0.5") for line in cell["source"]]
    assert "d_k**0.5" in hand_in.text_of(cell)  # a last edit, never run
    return (
        "❌ the cell of Exercise 1 (ex1_attention) has not run as it now stands: run it and its "
        "check again, so that what the checks say is about what you hand in"
    )


@pytest.mark.parametrize(
    "damage", [duplicated, check_deleted, turned_to_text, check_edited, edited_since_it_ran]
)
def test_a_damaged_notebook_is_not_ready_and_the_line_says_what_to_fix(solved, colab, damage):
    """Exercise 1's cells damaged: its line says what to fix and its check is not run (its
    verdict would be about another file); Exercise 0's passes."""
    nb = copy.deepcopy(solved)
    said = damage(nb)
    lines, receipt = check(colab, nb, kernel(solved))
    assert lines[1:] == ["✅ Exercise 0", said, NOT_READY]
    assert receipt["checks"] == {"ex0_check": None, "ex1_check": the_cell.NOT_RUN}
    assert not receipt["ready"]


NB4 = "04_training"


def at(nb: dict, text: str) -> int:
    """The one code cell of nb whose code holds `text`."""
    (i,) = [i for i, c in enumerate(nb["cells"]) if text in hand_in.text_of(c)]
    return i


@pytest.fixture(scope="module")
def solved_04(released) -> dict:
    return colab_shaped(perfect(released, NB4))


def test_a_check_that_raised_names_the_cells_that_make_what_it_reads(solved_04, colab):
    """A restarted runtime where only Exercise 4's cell ran again: its check cannot run (no
    `check`), and the cells to run are those that make what it reads, in order; in 04 never the
    cell that trains (nor the whole notebook, which would train both models again)."""
    nb, release = solved_04, expected(solved_04)
    answer = hand_in.text_of(cell_of(nb, "ex4_metrics"))
    namespace = {}
    exec(answer, namespace)
    parameters = next(
        i for i, c in enumerate(nb["cells"]) if "parameters" in c["metadata"].get("tags", [])
    )
    setup, check_at = at(nb, CHECKS_IMPORT), _cells(nb, "ex4_check")[0]
    again = hand_in.cells_to_run_again(nb, check_at, release["ex4_check"], namespace, release)
    assert again == [parameters, setup]
    assert hand_in.cells_to_run_again(nb, check_at, release["ex4_check"], {}, release) == [
        parameters,
        setup,
        _cells(nb, "ex4_metrics")[0],  # not run either: a kernel that holds nothing
    ]
    colab["nb"] = nb
    read = hand_in.read_here(NB4, namespace)
    lines, receipt = the_cell.verdict(read, NB4, release, namespace, [answer])
    assert receipt["checks"] == {"ex4_check": the_cell.RAISED} and not receipt["ready"]
    assert lines[-1] == the_cell.NOT_READY.format(what="Exercise 4")
    setup_title = hand_in.text_of(nb["cells"][setup]).splitlines()[0].partition("@title ")[2]
    assert lines[1] == (
        "❌ Exercise 4: its check could not run (NameError: name 'check' is not defined); run "
        "again, in this order: the parameters cell (the one that sets MODE); the cell "
        f'"{setup_title}"; then this cell'
    )


def test_what_reads_the_trained_model_is_made_again_from_the_saved_one(solved_04):
    """Code that reads 04's model after a restart: the cells that load the saved run, and what
    they read, never the cell that trains."""
    nb, release = solved_04, expected(solved_04)
    code = "print(lm_metrics(saved_gpt(x), y))"
    again = hand_in.cells_to_run_again(nb, len(nb["cells"]) - 1, code, {}, release)
    trains = at(nb, "tl.train_lm(")
    assert trains not in again
    assert again == [
        next(i for i, c in enumerate(nb["cells"]) if "parameters" in c["metadata"].get("tags", [])),
        at(nb, CHECKS_IMPORT),
        _cells(nb, "ex4_metrics")[0],
        at(nb, "run = load_run("),
        at(nb, "saved_gpt = run.gpt("),
    ]
    assert at(nb, "run = load_run(") > trains  # after the training: the saved model


def test_a_cell_is_named_as_the_student_finds_it(solved_04):
    nb, release = solved_04, expected(solved_04)
    cells = nb["cells"]
    ex4 = _cells(nb, "ex4_metrics")[0]
    assert hand_in.cell_name(cells[ex4], ex4, release) == "the cell of Exercise 4 (ex4_metrics)"
    setup = at(nb, CHECKS_IMPORT)
    assert hand_in.cell_name(cells[setup], setup, release).startswith('the cell "Imports, ')
    plain = at(nb, "print(run.samples())")  # no title, no grade id
    assert hand_in.cell_name(cells[plain], plain, release) == f"cell {plain + 1} from the top"


def test_an_untouched_exercise_is_still_a_stub(released, colab):
    nb = colab_shaped(untouched(released, NB))
    lines, receipt = check(colab, nb, ({"check": attention}, []))
    stub = '`raise NotImplementedError("not done yet")`; write your code in its place, then run'
    assert lines[1:] == [
        f"❌ Exercise 0 is still a stub: the cell of Exercise 0 (ex0_read_the_model) still holds "
        f"{stub} the cell and its check",
        f"❌ Exercise 1 is still a stub: the cell of Exercise 1 (ex1_attention) still holds "
        f"{stub} the cell and its check",
        "not ready to hand in: run this cell again after fixing what ❌ says of Exercise 0 and "
        "Exercise 1",  # it ends with what to fix: the way to hand in comes once nothing is left
    ]
    assert set(receipt["checks"].values()) == {the_cell.NOT_RUN}


def test_a_check_cell_that_lost_its_label_is_a_note_not_a_stop(solved, colab):
    nb = copy.deepcopy(solved)
    del cell_of(nb, "ex1_check")["metadata"]["nbgrader"]
    namespace, ran = kernel(solved)
    namespace["check"] = types.SimpleNamespace(exercise_0=print, exercise_1=print)  # all pass
    lines, receipt = check(colab, nb, (namespace, ran))
    assert lines[1:] == [
        "✅ Exercise 0",
        "⚠️ the check cell of Exercise 1 (ex1_check) has lost its grading label; the grader finds "
        "it again by its code, so leave that code as it is",
        READY,
    ]
    assert receipt["checks"]["ex1_check"] is None  # run all the same


def test_off_colab_the_saved_file_is_read_or_the_student_is_told_to_save_it(
    released, tmp_path, monkeypatch, capsys
):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    release = expected(untouched(released, NB))
    the_cell.before_you_hand_in(NB, release, namespace={})
    assert capsys.readouterr().out == (
        f"❌ This notebook's file was not found: Jupyter did not say where it is, and {tmp_path} "
        f"holds no 01_attention.ipynb. Save the notebook there (File → Save) as "
        "01_attention.ipynb, then run this cell again.\n"
    )
    saved = tmp_path / "elsewhere" / "Copy of 01_attention.ipynb"
    saved.parent.mkdir()
    saved.write_text(json.dumps(colab_shaped(untouched(released, NB))))
    monkeypatch.setenv("JPY_SESSION_NAME", str(saved))  # as jupyter_server tells its kernels
    the_cell.before_you_hand_in(NB, release, namespace={})
    out = capsys.readouterr().out.splitlines()
    assert str(saved) in out[0] and out[1].startswith("❌ Exercise 0")  # read from the saved file
    assert out[-1] == the_cell.NOT_READY.format(what="Exercise 0 and Exercise 1")
    assert hand_in.read_here(NB, {}).hand_in == f"save it (File → Save), then hand in {saved}"
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # the grader reads the file itself
    the_cell.before_you_hand_in(NB, release, namespace={})
    assert capsys.readouterr().out == ""


def test_on_colab_a_notebook_not_handed_over_is_said_with_what_to_do(colab, capsys):
    the_cell.before_you_hand_in(NB, {"ex0_check": "check.exercise_0(read_the_model)"}, {})
    assert capsys.readouterr().out == (
        "❌ Colab did not hand over this notebook (TimeoutError: no reply in 30 s). Run this cell "
        "again; if Colab still does not answer, download the notebook (File → Download → "
        "Download .ipynb) and hand it in as it is.\n"
    )


def with_receipt(nb: dict, receipt: dict, text: str) -> dict:
    """nb as Colab downloads it once the hand-in cell ran: the receipt is the cell's output."""
    nb = copy.deepcopy(nb)
    output = {"output_type": "display_data", "metadata": {}}
    output["data"] = {"text/plain": [text], hand_in.MIME: receipt}
    hand_in_cell(nb)["outputs"] = [output]
    return nb


def test_collect_notes_a_file_whose_graded_cells_changed_after_its_hand_in_check(
    released, solved, colab, tmp_path
):
    course = Path(shutil.copytree(released, tmp_path / "course"))
    lines, receipt = check(colab, solved, ({}, None))  # no kernel here: the checks cannot run
    checked = with_receipt(solved, receipt, lines[-1])
    assert hand_in.receipt_problem(checked) is None
    edited = copy.deepcopy(checked)
    cell_of(edited, "ex0_read_the_model")["source"] = ["def read_the_model():\n", "    return 0\n"]
    assert hand_in.receipt_problem(edited) == "changed after its hand-in check (ex0_read_the_model)"
    downloads = tmp_path / "downloads"
    for student, nb in (("alice", checked), ("bob", edited), ("carol", solved)):
        (downloads / student).mkdir(parents=True)
        (downloads / student / f"{NB}.ipynb").write_text(json.dumps(nb))
    collect.collect(Course.open(course), downloads)
    rows = {
        line.split(" | ")[1]: line
        for line in (course / "reports" / "collect.md").read_text().splitlines()
        if line.startswith("| ") and f"{NB}.ipynb" in line
    }
    assert "(ex0_read_the_model)" in rows["bob"]  # the cell that changed
    assert "hand-in check" not in rows["alice"] and "hand-in check" not in rows["carol"]
