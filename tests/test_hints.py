"""Hints that open when needed (checkpoints/hints.py): the same mistake of an exercise twice in a
row shows the next step of its Hint fold under the check's message; the steps are the folds of
solutions/*.py, word for word."""

import re
from types import SimpleNamespace

import pytest
from notebook_harness import cells

from checkpoints import _core, hints
from checkpoints._core import CheckFailed
from checkpoints.codes import EX4
from checkpoints.hints import HINTS, Streaks
from transformer_lab.catalogue import NOTEBOOKS, of_cell

FOLD = re.compile(r"<details><summary>Hint</summary>(.*?)</details>", re.S)


def folds() -> dict[str, str]:
    """exercise -> the text of the Hint fold above its cell, whitespace made single spaces."""
    found = {}
    for stem in NOTEBOOKS:
        notebook = cells(stem)
        for at, cell in enumerate(notebook):
            fold = FOLD.search(cell.source) if cell.cell_type == "markdown" else None
            if fold is None:
                continue
            graded = next(c for c in notebook[at + 1 :] if "nbgrader" in c.metadata)
            found[of_cell(graded.metadata["nbgrader"]["grade_id"]).name] = " ".join(
                fold.group(1).split()
            )
    return found


def steps(streaks: Streaks, *codes: str, run: int = 1) -> list:
    """(step number, again) shown for each failure of `codes`, each in a cell run of its own."""
    shown = []
    for n, code in enumerate(codes, start=run):
        step = streaks.failed(code, n)
        shown.append(step and (step.number, step.again))
    return shown


def test_the_steps_are_the_solutions_hint_folds_word_for_word():
    assert {exercise: " ".join(said) for exercise, said in HINTS.items()} == folds()


def test_the_same_mistake_again_shows_each_step_in_turn_then_the_last_once_more():
    code = "ex1.no_sqrt_dk"  # a hint of two steps
    assert steps(Streaks(), *[code] * 6) == [None, (1, False), (2, False), (2, True), None, None]
    assert steps(Streaks(), *["ex0.wrong_count"] * 4) == [None, (1, False), (1, True), None]
    assert steps(Streaks(), *["leak.reads_the_future"] * 3) == [None] * 3  # no exercise's


def test_a_different_mistake_starts_again():
    shown = steps(Streaks(), "ex1.no_sqrt_dk", "ex1.no_sqrt_dk", "ex1.softmax_wrong_axis")
    assert shown == [None, (1, False), None]
    shown = steps(Streaks(), "ex1.no_sqrt_dk", "ex1.softmax_wrong_axis", "ex1.no_sqrt_dk")
    assert shown == [None, None, None]


def test_another_exercise_s_mistake_between_keeps_the_count():
    shown = steps(Streaks(), "ex1.no_sqrt_dk", "ex2.diagonal_excluded", "ex1.no_sqrt_dk")
    assert shown == [None, None, (1, False)]


def test_a_pass_starts_again_but_not_a_pass_in_the_run_that_fails():
    streaks = Streaks()
    assert steps(streaks, "ex2.diagonal_excluded") == [None]
    streaks.passed("ex2", 2)  # Exercise 2's leak test passes, then a case of run 2 fails
    assert steps(streaks, "ex2.diagonal_excluded", run=2) == [(1, False)]
    streaks.passed("ex2", 3)  # the whole checkpoint passes in run 3
    assert steps(streaks, "ex2.diagonal_excluded", "ex2.diagonal_excluded", run=4) == [
        None,
        (1, False),
    ]


def test_the_step_is_shown_under_a_failing_check_s_message(monkeypatch, capsys):
    monkeypatch.setattr(hints, "STREAKS", Streaks())
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    shell = SimpleNamespace(user_ns={"USE_DRIVE": False}, showtraceback=lambda *a, **k: None)
    failure = CheckFailed("Exercise 5: the offsets are reversed.", "ex5.wrong_values")
    for run in (1, 2):
        shell.history_manager = SimpleNamespace(input_hist_parsed=[""] * (run + 1))
        _core._leave_failure(shell, CheckFailed, failure, None)
    assert capsys.readouterr().out.splitlines() == [f"💡 Hint, step 1 of 2: {HINTS['ex5'][0]}"]


def test_a_pass_in_a_kernel_starts_the_count_again(monkeypatch):
    monkeypatch.setattr(hints, "STREAKS", Streaks())
    shell = SimpleNamespace(history_manager=SimpleNamespace(input_hist_parsed=[""] * 5))
    monkeypatch.setattr(_core, "notebook_shell", lambda: shell)
    hints.STREAKS.failed("ex4.wrong_values", 3)
    _core.passed(EX4, "Exercise 4: right.")
    assert hints.STREAKS.failed("ex4.wrong_values", 5) is None  # a first mistake again


@pytest.mark.parametrize("exercise", sorted(HINTS))
def test_every_step_ends_a_sentence(exercise):
    assert all(step.endswith(".") for step in HINTS[exercise])
