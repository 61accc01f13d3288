"""The class report (grader/term/class_report.py) on a class fabricated as autograded notebooks:
no sandbox and no grading. Each graded check's outcome is read from what the check left in the
notebook (no error: passed; a failure: its code), counted per check, named only when asked, and
drawn; with names (the roster's beside the id) only in a file of their own, never in the one for
class. That real grading leaves what it reads is test_grading.py's."""

from __future__ import annotations

import csv
import re
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest

from checkpoints.results import MIME, Result
from grader.course import Layout
from grader.term.class_report import NAMED, Check, class_report, markdown
from grader.term.course_open import Course
from grader.term.roster import import_roster
from maintainer.fabricated_class import release

NB = "01_attention"
NO_SQRT = ("ex1.no_sqrt_dk", "Exercise 1: the scores are not divided by sqrt(d_k).")
NOT_DONE = ("ex1.not_done", "Exercise 1 is not done yet.")
# student -> the failures of their ex1_check (ex0_check passes for everyone)
CLASS = {"ann": None, "bob": NO_SQRT, "cyd": NO_SQRT, "dee": NOT_DONE}


def executed(course: Path, failure: tuple[str, str] | None) -> nbformat.NotebookNode:
    """The release as autograde leaves it: each check cell printed a tick, or, in ex1_check,
    left `failure` as data and raised."""
    nb = Layout(course).release_notebook(NB)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if not cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="✅ passed\n")]
        if grade_id == "ex1_check" and failure:
            code, message = failure
            left = asdict(Result("ex1", code, False, message))
            cell.outputs = [
                nbformat.v4.new_output("display_data", data={"text/plain": "", MIME: left}),
                nbformat.v4.new_output(
                    "error", ename="CheckFailed", evalue=f"{message} [{code}]", traceback=[]
                ),
            ]
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    release(course)
    for student, failure in CLASS.items():
        path = course / "autograded" / student / NB / f"{NB}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(executed(course, failure), path)
    return course


def counts(course: Path) -> dict[tuple[str, str], tuple[int, int]]:
    rows = csv.DictReader((course / "reports" / "class.csv").open(encoding="utf-8"))
    return {(r["check"], r["outcome"]): (int(r["students"]), int(r["of"])) for r in rows}


def table_row(text: str, grade_id: str) -> list[str]:
    """The cells of a check's row in the report's table."""
    rows = [line.strip("|").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    return next([cell.strip() for cell in row] for row in rows if row[1].strip() == grade_id)


def mistakes(text: str) -> list[tuple[str, str, str]]:
    """(how many, code, what is said) of each mistake the report lists."""
    return re.findall(r"^- \*\*(\d+)\*\* × `([^`]+)`: (.*)$", text, re.MULTILINE)


def test_each_check_counts_its_outcomes_by_the_code_left(course):
    written = class_report(Course.open(course))
    assert counts(course) == {
        ("ex0_check", "passed"): (4, 4),
        ("ex1_check", "ex1.no_sqrt_dk"): (2, 4),
        ("ex1_check", "passed"): (1, 4),
        ("ex1_check", "ex1.not_done"): (1, 4),
    }
    text = (course / "reports" / "class.md").read_text(encoding="utf-8")
    # students, passed, not done; no gradebook here, so no scores
    assert table_row(text, "ex1_check") == [NB, "ex1_check", "4", "1 (25%)", "1", "–", "–"]
    # the message without its exercise, which the heading above it names
    assert mistakes(text) == [("2", NO_SQRT[0], NO_SQRT[1].removeprefix("Exercise 1: "))]
    assert "`ex1.not_done`" not in text  # not done is a column, not a mistake
    for picture in ("class_pass_rate.png", "class_mistakes.png"):
        path = course / "reports" / picture
        assert path in written and path.read_bytes().startswith(b"\x89PNG")


def test_names_appear_only_when_asked_and_never_in_the_report_for_class(course, tmp_path):
    """`--names` writes its own file, beside the one shown in class: bob by his id, then the
    name and the Canvas login the roster has; cyd, on no roster, by the id alone."""
    reports = course / "reports"
    class_report(Course.open(course))
    text = (reports / "class.md").read_text(encoding="utf-8")
    assert not any(student in text for student in CLASS)
    assert not (reports / NAMED).exists()
    (tmp_path / "canvas.csv").write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n"
        '"Stone, Bob",23456,bob,bstone,Lab B\n"Archer, Ann",12345,ann,ann,Lab A\n'
    )
    import_roster(Course.open(course), tmp_path / "canvas.csv")
    try:
        written = class_report(Course.open(course), names=True)
    finally:
        (course / "roster.csv").unlink()
    assert (reports / "class.md").read_text(encoding="utf-8") == text  # still fit for class
    named = (reports / NAMED).read_text(encoding="utf-8")
    assert reports / NAMED in written and "not for class" in named.splitlines()[0]
    said = "`ex1.no_sqrt_dk`: the scores are not divided by sqrt(d_k)."
    assert f"{said} (bob (Bob Stone, bstone), cyd)\n" in named


def test_a_diagnosis_is_shown_whole_less_the_exercise_s_title():
    """Only the title that opens it ("Exercise 1: ") goes: a diagnosis with colons of its own,
    longer than a line, or titled with the case checked, is shown whole, on one line."""
    raised = (
        "Exercise 1 raised TypeError: unsupported operand type(s) for /: 'Tensor' and "
        "'NoneType' (line 4 of your code).\nCheck d_k: it is None here, so Q @ K^T / sqrt(d_k) "
        "cannot be computed."
    )
    at_one = "Exercise 1 (T = 1): the scores are not divided by sqrt(d_k)."
    check = Check(NB, "ex1_check", {"ann": "ex1.raised", "bob": "ex1.no_sqrt_dk"})
    text = markdown([check], {"ex1.raised": raised, "ex1.no_sqrt_dk": at_one})
    said = {code: (n, what) for n, code, what in mistakes(text)}
    assert said == {"ex1.raised": ("1", raised.replace("\n", " ")), "ex1.no_sqrt_dk": ("1", at_one)}
    assert "…" not in text
