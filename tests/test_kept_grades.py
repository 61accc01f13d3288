"""A hand grade lasts as long as the answer it judged (grader/engine/kept_grades.py): a regrade for
any reason (here a check's message edited in a copy of the checkout) keeps every hand grade of
an unchanged answer done and asks again only for the changed ones; an edit that changes no
behaviour regrades no one; an override of a check whose answer changed is set aside, the new
autograde counting, shown with both scores and the command that keeps it (grader/term/
overrides.py); an override's answer is its exercise's solution cells and those its check reads
(grader/cells.py), so editing MODE or the setup keeps it. Notebooks are handed in as Colab saves
them, grades entered as the formgrader enters them (nbgrader's Gradebook API), and the jobs are
stand-ins (conftest.executing)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import checkout_copy, executing, grader_cli
from nbgrader.api import Gradebook

from grader.course import Layout
from grader.engine import autograde as engine
from maintainer.fabricated_class import (
    WRONG_ATTENTION,
    cell_of,
    colab_shaped,
    perfect,
    with_attention,
    write,
)

NB4, NB1, NB6 = "04_training", "01_attention", "06_stretch"
PREDICTION, CHECK, FIRST = "ex4_prediction", "ex1_check", "ex0_check"
ANSWER = "The LSTM: fewer parameters suit this small budget."
FAILED = nbformat.v4.new_output(
    "error", ename="CheckFailed", evalue="[ex1.no_sqrt_dk]", traceback=[]
)


def hand_in(course: Path, student: str, notebook: str, nb: dict) -> None:
    """As Colab saves it (nbformat 4.0, no cell ids), where collect puts the file that counts."""
    write(Layout(course).notebook("submitted", notebook, student), colab_shaped(nb))


def formgrader_saves(course: Path, notebook: str, grade_id: str, score: float, *students):
    """What the formgrader's save does (its REST handler): manual_score, then needs_manual_grade
    False, committed."""
    with Gradebook(Layout(course).db_url) as gb:
        for student in students:
            grade = gb.find_grade(grade_id, notebook, notebook, student)
            grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()


def grades(course: Path, notebook: str, grade_id: str) -> dict[str, tuple]:
    """student -> (manual score, needs a hand grade, the notebook's score)."""
    with Gradebook(Layout(course).db_url) as gb:
        return {
            s.student.id: (g.manual_score, bool(g.needs_manual_grade), s.score)
            for s in gb.notebook_submissions(notebook, notebook)
            for g in s.grades
            if g.name == grade_id
        }


def cli(course: Path, *args: str) -> str:
    done = grader_cli(course, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def autograde(course: Path, *args: str) -> str:
    return cli(course, "autograde", "--no-sandbox", *args)


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory) -> Path:
    """Three students' 04, each prediction graded 1 by hand; dee's 01 with the scaling left
    out (its check failed), overridden to 2 of 3 in the formgrader."""
    course = Path(shutil.copytree(released, tmp_path_factory.mktemp("kept") / "course"))
    for student in ("ada", "ben", "cy"):
        nb = perfect(course, NB4)
        cell_of(nb, PREDICTION)["source"] = ANSWER
        hand_in(course, student, NB4, nb)
    hand_in(course, "dee", NB1, with_attention(course, WRONG_ATTENTION))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing({CHECK: [FAILED]}))
        autograde(course)
    formgrader_saves(course, NB4, PREDICTION, 1, "ada", "ben", "cy")
    formgrader_saves(course, NB1, CHECK, 2, "dee")
    return course


@pytest.fixture
def course(graded, tmp_path) -> Path:
    return Path(shutil.copytree(graded, tmp_path / "course"))


def sheet(course: Path) -> dict[str, dict]:
    with (course / "reports" / "gradesheet.csv").open(encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_check_edited_keeps_every_hand_grade_of_an_unchanged_answer(
    course, tmp_path, monkeypatch
):
    root = checkout_copy(tmp_path / "checkout", monkeypatch)
    monkeypatch.setattr(engine, "run_job", executing({CHECK: [FAILED]}))
    checks = root / "checkpoints" / "training.py"
    edit(
        checks,
        "    # Each mistake's output",
        "    # A comment edited.\n    # Each mistake's output",
    )
    assert "4 notebooks: 0 graded, 4 reused" in autograde(course)  # no behaviour changed
    nb = perfect(course, NB4)
    cell_of(nb, PREDICTION)["source"] = ANSWER + " Unless the GPT trains longer."
    hand_in(course, "ben", NB4, nb)
    edit(checks, "Re-read Equation 15.", "See Equation 15 again.")  # a check's message
    said = autograde(course)
    assert "4 notebooks: 3 graded, 1 reused" in said  # 04 for all three; dee's 01 as it was
    assert (
        "hand grades kept over this grading, their answers unchanged: 2; to grade again, the "
        "answer changed: ben / 04_training ex4_prediction"
    ) in said
    assert grades(course, NB4, PREDICTION) == {
        "ada": (1, False, 3),
        "ben": (1, True, 3),  # kept, for a second look
        "cy": (1, False, 3),
    }
    said = cli(course, "export")
    assert (
        "1 written answer still needs a hand grade, in 1 notebook (grade them in "
        "`make formgrader`, then run this again):\n  04_training: ben\n"
    ) in said
    rows = sheet(course)
    assert (rows["ada"]["04_training_score"], rows["ada"]["04_training_status"]) == ("3", "graded")
    assert (rows["cy"]["04_training_score"], rows["cy"]["04_training_status"]) == ("3", "graded")
    assert (rows["ben"]["04_training_score"], rows["ben"]["04_training_status"]) == (
        "",
        "needs hand grading",
    )
    table = (course / "reports" / "autograde.md").read_text(encoding="utf-8")
    assert "- ben / 04_training: ex4_prediction: the answer changed; grade it again" in table


KEEP = "python -m grader override keep dee 01_attention ex1_check"
SET_ASIDE = (
    "1 override set aside: the answer it judged has changed since, so the new autograde "
    "counts; the override is kept on record (hand_grades.jsonl):\n"
    "  01_attention ex1_check, dee: autograde 3 / 3 counts, override 2 / 3 set aside (to count "
    f"it again: `{KEEP}`)"
)


def test_an_override_lasts_while_its_answer_does_and_is_set_aside_when_it_changes(
    course, monkeypatch
):
    monkeypatch.setattr(engine, "run_job", executing({CHECK: [FAILED]}))
    said = autograde(course, "--force")  # regraded, the answer the same: kept, silently
    assert "hand grades kept over this grading, their answers unchanged: 4" in said
    assert "set aside" not in said
    assert grades(course, NB1, CHECK)["dee"] == (2, False, 3)

    hand_in(course, "dee", NB1, perfect(course, NB1))  # the fix: every check passes
    monkeypatch.setattr(engine, "run_job", executing())
    said = autograde(course)
    assert SET_ASIDE in said
    assert grades(course, NB1, CHECK)["dee"] == (None, False, 4)  # the autograde counts
    table = (course / "reports" / "autograde.md").read_text(encoding="utf-8")
    assert "- dee / 01_attention: ex1_check, dee: autograde 3 / 3 counts, override 2 / 3" in table
    said = cli(course, "export")
    assert SET_ASIDE in said and "written answer" not in said
    assert sheet(course)["dee"]["01_attention_score"] == "4"
    record = [json.loads(line) for line in (course / "hand_grades.jsonl").open()]
    assert [(r["event"], r["student"], r["grade_id"], r["manual_score"]) for r in record] == [
        ("set aside", "dee", CHECK, 2)
    ]

    said = cli(course, "override", "keep", "dee", NB1, CHECK)
    assert said.startswith(
        "dee / 01_attention ex1_check: the override counts again (override 2 / 3, autograde "
        "3 / 3); recorded in "
    )
    assert grades(course, NB1, CHECK)["dee"] == (2, False, 3)
    assert "set aside" not in cli(course, "export")
    said = cli(course, "override", "clear", "dee", NB1, CHECK)
    assert "the autograde counts (override 2 / 3, autograde 3 / 3)" in said
    assert grades(course, NB1, CHECK)["dee"] == (None, False, 4)
    events = [json.loads(line)["event"] for line in (course / "hand_grades.jsonl").open()]
    assert events == ["set aside", "kept", "cleared"]


def test_an_override_command_that_names_nothing_says_what_to_give(course):
    for args, said in (
        (("keep", "dee", NB1, "ex9_check"), "dee has no graded cell ex9_check in 01_attention"),
        (("keep", "dee", NB1, CHECK), "no override of ex1_check for dee / 01_attention is set"),
        (("clear", "ada", NB4, PREDICTION), "ex4_prediction is a written answer, not an override"),
    ):
        done = grader_cli(course, "override", *args)
        assert done.returncode == 1 and said in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_an_override_nbgrader_flagged_is_named_as_one_and_unflagged_by_a_regrade(
    course, monkeypatch
):
    """Before this kit, every regrade left each override flagged, as nbgrader's SaveAutoGrades
    does: export names it as an override (01 has no written answer), and the next regrade of
    its unchanged answer keeps it, done."""
    with Gradebook(Layout(course).db_url) as gb:
        gb.find_grade(CHECK, NB1, NB1, "dee").needs_manual_grade = True
        gb.db.commit()
    said = cli(course, "export")
    assert "1 override still needs a hand grade, in 1 notebook" in said
    assert "01_attention: dee" in said and "written answer" not in said
    monkeypatch.setattr(engine, "run_job", executing({CHECK: [FAILED]}))
    autograde(course, "--force", "--notebook", NB1)
    assert grades(course, NB1, CHECK)["dee"] == (2, False, 3)
    assert "hand grade" not in cli(course, "export")


def parameters_and_setup_edited(nb: dict) -> dict:
    """What the notebook tells the student to do (MODE in the parameters cell), and a line added
    to the setup cell (its imports): no exercise's cell touched."""
    (parameters,) = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    edit_text(parameters, 'MODE = "auto"', 'MODE = "quick"')
    (setup,) = [c for c in nb["cells"] if "# @title Imports" in "".join(c["source"])]
    setup["source"] = "".join(setup["source"]) + "\nimport numpy as np  # mine\n"
    return nb


def edit_text(cell: dict, old: str, new: str) -> None:
    text = "".join(cell["source"])
    assert old in text
    cell["source"] = text.replace(old, new, 1)


def test_an_override_stands_when_only_the_parameters_and_setup_cells_change(course, monkeypatch):
    """The first check's answer is Exercise 0's cell, not every cell above it."""
    formgrader_saves(course, NB1, FIRST, 0.5, "dee")
    nb = parameters_and_setup_edited(with_attention(course, WRONG_ATTENTION))
    hand_in(course, "dee", NB1, nb)
    monkeypatch.setattr(engine, "run_job", executing({CHECK: [FAILED]}))
    said = autograde(course, "--notebook", NB1)
    assert "1 graded" in said and "set aside" not in said
    assert grades(course, NB1, FIRST)["dee"] == (0.5, False, 2.5)
    assert grades(course, NB1, CHECK)["dee"] == (2, False, 2.5)
    assert not (course / "hand_grades.jsonl").exists()


def test_an_override_is_set_aside_when_its_exercise_solution_changes_and_only_that_one(
    course, monkeypatch
):
    formgrader_saves(course, NB1, FIRST, 0.5, "dee")
    nb = parameters_and_setup_edited(with_attention(course, WRONG_ATTENTION))
    edit_text(cell_of(nb, "ex0_read_the_model"), "return embeddings", "return 0 + embeddings")
    hand_in(course, "dee", NB1, nb)
    monkeypatch.setattr(engine, "run_job", executing({CHECK: [FAILED]}))
    said = autograde(course, "--notebook", NB1)
    assert grades(course, NB1, FIRST)["dee"] == (None, False, 3)  # the autograde's 1 counts
    assert grades(course, NB1, CHECK)["dee"] == (2, False, 3)
    record = [json.loads(line) for line in (course / "hand_grades.jsonl").open()]
    assert [(r["event"], r["grade_id"], r["manual_score"]) for r in record] == [
        ("set aside", FIRST, 0.5)
    ]
    assert "1 override set aside" in said


def test_a_check_judges_the_solution_cells_its_exercise_reads_above_another_check(
    course, monkeypatch
):
    """Challenge B's block runs Challenge A's attention: an override of ex6b_check judged both
    cells, though ex6a_check stands between them."""
    monkeypatch.setattr(engine, "run_job", executing())
    hand_in(course, "eve", NB6, perfect(course, NB6))
    autograde(course, "--notebook", NB6)
    formgrader_saves(course, NB6, "ex6a_check", 1, "eve")
    formgrader_saves(course, NB6, "ex6b_check", 1, "eve")
    nb = perfect(course, NB6)
    edit_text(cell_of(nb, "ex6a_multi_head"), "return self.drop(", "return 1 * self.drop(")
    hand_in(course, "eve", NB6, nb)
    autograde(course, "--notebook", NB6)
    record = [json.loads(line) for line in (course / "hand_grades.jsonl").open()]
    assert {(r["event"], r["grade_id"]) for r in record} == {
        ("set aside", "ex6a_check"),
        ("set aside", "ex6b_check"),
    }


OWN = "Good: names the LSTM and a reason."  # what the grader wrote in the formgrader


def comment(course: Path, student: str) -> str | None:
    with Gradebook(Layout(course).db_url) as gb:
        return gb.find_comment(PREDICTION, NB4, NB4, student).manual_comment


def test_a_changed_written_answer_carries_the_answer_graded_until_its_second_look(
    course, monkeypatch
):
    """The answer graded goes into the cell's comment below the grader's own words, and to
    reports/changed_answers.md beside the new one; feedback is written without it; Resolve
    and the next regrade take it out, the grader's words left as they were."""
    with Gradebook(Layout(course).db_url) as gb:
        gb.find_comment(PREDICTION, NB4, NB4, "ben").manual_comment = OWN
        gb.db.commit()
    changed = "The GPT: attention sees the whole window."
    nb = perfect(course, NB4)
    cell_of(nb, PREDICTION)["source"] = changed
    hand_in(course, "ben", NB4, nb)
    monkeypatch.setattr(engine, "run_job", executing())
    autograde(course, "--notebook", NB4)
    assert grades(course, NB4, PREDICTION)["ben"] == (1, True, 3)
    noted = comment(course, "ben")
    assert noted.startswith(OWN + "\n") and f"\n> {ANSWER}\n" in noted
    assert changed not in noted  # the new answer is the cell's own
    assert comment(course, "ada") is None  # unchanged: no note
    record = [json.loads(line) for line in (course / "hand_grades.jsonl").open()]
    assert [(r["event"], r["student"], r["text"], r["new_text"]) for r in record] == [
        ("answer changed", "ben", ANSWER, changed)
    ]
    assert (record[0]["manual_score"], record[0]["max_score"]) == (1, 1)
    page = (course / "reports" / "changed_answers.md").read_text(encoding="utf-8")
    assert "## ben / 04_training / ex4_prediction, " in page
    assert f"\n> {ANSWER}\n" in page and f"\n> {changed}\n" in page

    cli(course, "feedback")
    shown = (course / "feedback" / "ben" / NB4 / f"{NB4}.html").read_text(encoding="utf-8")
    assert OWN in shown and changed in shown and ANSWER not in shown  # the note set aside
    assert comment(course, "ben") == noted  # and put back

    formgrader_saves(course, NB4, PREDICTION, 1, "ben")  # Resolve: the same score saved
    autograde(course, "--force", "--notebook", NB4)
    assert comment(course, "ben") == OWN
    assert grades(course, NB4, PREDICTION)["ben"] == (1, False, 3)


def test_feedback_after_the_second_look_leaves_the_note_out_for_good(course, monkeypatch):
    """Resolve, then feedback with no regrade between: the note is not put back."""
    with Gradebook(Layout(course).db_url) as gb:
        gb.find_comment(PREDICTION, NB4, NB4, "ben").manual_comment = OWN
        gb.db.commit()
    nb = perfect(course, NB4)
    cell_of(nb, PREDICTION)["source"] = "The GPT: attention sees the whole window."
    hand_in(course, "ben", NB4, nb)
    monkeypatch.setattr(engine, "run_job", executing())
    autograde(course, "--notebook", NB4)
    assert f"\n> {ANSWER}\n" in comment(course, "ben")
    formgrader_saves(course, NB4, PREDICTION, 1, "ben")
    cli(course, "feedback")
    assert comment(course, "ben") == OWN
    changed = (course / "reports" / "changed_answers.md").read_text(encoding="utf-8")
    assert f"\n> {ANSWER}\n" in changed  # still there
