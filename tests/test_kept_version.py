"""What trains is what the student wrote last, and the notebooks say which version that is: a
passing checkpoint of 01-03 records in the student's module when it kept the piece and in which
cell run (transformer_lab/student.py, `Kept`); a later edit that fails leaves that version kept,
and the failing check says so under its message; 04 names the version it trains."""

import sys
from datetime import datetime
from types import SimpleNamespace

import pytest
from student_pieces import causal_mask, scaled_dot_product_attention, unscaled

from checkpoints import _core, hints, yours
from checkpoints import attention as attention_check
from checkpoints._core import CheckFailed
from transformer_lab import saving, student
from transformer_lab.student import MODULE, Kept


@pytest.fixture
def notebook_folder(tmp_path, monkeypatch):
    """A notebook's folder, off Colab, in a kernel that has answered nothing yet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "google.colab", None)
    monkeypatch.setattr(saving, "_decision", None)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(hints, "STREAKS", hints.Streaks())
    return tmp_path


@pytest.fixture
def kernel(monkeypatch):
    """A notebook's kernel as the checks see it: `run(n)` makes cell [n] the one that runs, and
    `shown` holds the tracebacks it showed."""
    shell = SimpleNamespace(
        user_ns={"USE_DRIVE": None},
        history_manager=SimpleNamespace(input_hist_parsed=[""]),
        shown=[],
    )
    shell.showtraceback = lambda exc, tb_offset=None: shell.shown.append(exc[1].code)
    shell.run = lambda n: setattr(shell.history_manager, "input_hist_parsed", [""] * (n + 1))
    monkeypatch.setattr(_core, "notebook_shell", lambda: shell)
    return shell


def fails_in_a_cell(shell, fn) -> CheckFailed:
    """Exercise 1's checkpoint on `fn`, failing at the top of a cell as in a notebook."""
    with pytest.raises(CheckFailed) as failed:
        attention_check.exercise_1(fn)
    _core._leave_failure(shell, CheckFailed, failed.value, None)
    return failed.value


def now() -> datetime:
    return datetime.now().astimezone().replace(microsecond=0)


def test_a_kept_piece_records_when_and_in_which_cell_run_its_checkpoint_passed(
    notebook_folder, kernel
):
    before = now()
    kernel.run(12)
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    kernel.run(15)
    student.keep("mask", causal_mask, cell=15)  # another piece kept later keeps the first's record
    pieces = student.load()
    assert pieces.attention.kept.cell == 12 and pieces.mask.kept.cell == 15
    assert before <= pieces.attention.kept.when <= now()
    assert pieces.embedding.kept is None  # the course's


def test_04_s_line_names_the_version_it_trains(notebook_folder, kernel, capsys):
    kernel.run(12)
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    capsys.readouterr()
    pieces = yours.load(notebook="04")
    kept = pieces.attention.kept
    line = capsys.readouterr().out.splitlines()[0]
    assert line == (
        f"attention: yours, from notebook 01, passed {kept.when:%Y-%m-%d %H:%M} "
        f"{kept.when.tzname()}, cell [12] (kept in my_transformer.py beside this notebook)"
    )


def test_a_failing_edit_leaves_the_passing_version_kept_and_says_so(
    notebook_folder, kernel, capsys
):
    kernel.run(12)
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    kept = student.load().attention.kept
    capsys.readouterr()
    kernel.run(13)
    failure = fails_in_a_cell(kernel, unscaled)  # the student's edit: no 1/sqrt(d_k)
    said = capsys.readouterr().out.splitlines()
    assert kernel.shown == [failure.code] == ["ex1.no_sqrt_dk"]
    assert said == [
        f"ℹ️ Your passing version ({kept.said}) is still kept in my_transformer.py beside this "
        "notebook: 04 will train it, not this one, until this checkpoint passes again."
    ]
    pieces = yours.load(notebook="04")
    assert pieces.attention.yours and pieces.attention.kept == kept
    assert "einsum" in pieces.attention.fn.__code__.co_names  # the passing version, not unscaled


def test_a_failing_check_with_nothing_kept_adds_nothing(notebook_folder, kernel, capsys):
    kernel.run(3)
    fails_in_a_cell(kernel, unscaled)
    assert capsys.readouterr().out == ""
    assert _core.still_kept("ex1", None) == ""
    student.keep("attention", scaled_dot_product_attention, cell=2)
    assert _core.still_kept("ex4", None) == ""  # an exercise that keeps no piece


def test_nothing_is_added_while_grading(notebook_folder, kernel, capsys, monkeypatch):
    student.keep("attention", scaled_dot_product_attention, cell=2)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    for run in (3, 4):
        kernel.run(run)
        fails_in_a_cell(kernel, unscaled)
    assert capsys.readouterr().out == ""
    assert kernel.shown == ["ex1.no_sqrt_dk"] * 2


def test_a_module_kept_before_versions_were_recorded_still_loads(notebook_folder, kernel):
    student.write_module(
        MODULE, {"attention": student.source_of("attention", scaled_dot_product_attention)}
    )
    assert "# --- attention, from notebook 01 ---" in MODULE.read_text()
    piece = student.load().attention
    assert piece.yours and piece.kept == Kept(None, None) and piece.kept.said == ""
    where = "my_transformer.py beside this notebook"
    assert student.kept_version("attention") == (Kept(None, None), where)


def test_a_record_edited_out_of_shape_is_not_known():
    edited = "yesterday in cell run [12]"  # a date no longer read, a cell still found
    assert Kept.read(edited) == Kept(None, 12)
    assert Kept.read("yesterday at noon") == Kept(None, None)
    assert Kept.read("2025-01-31T14:02:17+00:00").said == "2025-01-31 14:02 UTC"
    text = "# --- attention, from notebook 01, kept yesterday at noon ---\n" + student.source_of(
        "attention", scaled_dot_product_attention
    )
    assert student._records(text) == {"attention": Kept(None, None)}  # the piece still found
