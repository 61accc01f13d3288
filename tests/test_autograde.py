"""The engine's autograde (grader/engine/autograde.py) with stand-in jobs: no kernel and no
sandbox, so every step around the job is real (preflight, nbgrader's sanitizing, the scores saved
in the gradebook, job.json, the rerun key) and runs without bubblewrap. A stand-in job hands back
the sanitized notebook with the outputs a real run would have left. Real jobs in the sandbox:
test_grading.py; a job alone: test_job.py; Ctrl-C: test_autograde_interrupt.py."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import executing

from grader.course import Layout
from grader.engine import autograde as grading
from grader.engine.options import EngineOptions
from grader.term.course_open import Course
from grader.term.scores import autograde
from maintainer.fabricated_class import untouched, write

NB = "01_attention"
STUDENTS = ("ann", "bea", "cyd")
WARNING = nbformat.v4.new_output("stream", name="stderr", text="UserWarning: deprecated\n")
FAILED = nbformat.v4.new_output(
    "error", ename="CheckFailed", evalue="[ex1.no_sqrt_dk]", traceback=[]
)


@pytest.fixture
def course(released, tmp_path) -> Path:
    course = Path(shutil.copytree(released, tmp_path / "course"))
    for student in STUDENTS:
        write(course / "submitted" / student / NB / f"{NB}.ipynb", untouched(course, NB))
    return course


def no_job(*_):
    raise AssertionError("a job ran")


def grade(course: Path, students=None, force: bool = False):
    options = EngineOptions(workers=1, progress=False, sandboxed=False, force=force)
    return grading.grade(Layout(course), options, students)


def test_each_check_scores_what_its_cell_left(course, monkeypatch):
    """A check that passed with a warning on stderr keeps its point; one that raised scores 0."""
    job = executing({"ex0_check": [WARNING], "ex1_check": [FAILED]})
    monkeypatch.setattr(grading, "run_job", job)
    outcomes = grade(course, students=["ann"])
    assert [(o.student, o.status, o.score, o.max_score) for o in outcomes] == [
        ("ann", "graded", 1, 4)
    ]
    saved = json.loads((course / "autograded" / "ann" / NB / "job.json").read_text())
    assert saved["seconds"] == 1.5 and saved["reason"] == ""


def test_a_rerun_with_nothing_changed_runs_no_job_and_keeps_every_score(course, monkeypatch):
    monkeypatch.setattr(grading, "run_job", executing({"ex1_check": [FAILED]}))
    first = grade(course)
    monkeypatch.setattr(grading, "run_job", no_job)
    again = grade(course)
    assert [(o.student, o.status, o.score) for o in again] == [
        (student, "unchanged", 1) for student in STUDENTS
    ]
    assert [o.score for o in first] == [1, 1, 1]


def test_a_new_review_pattern_flags_everyone_and_regrades_no_one(course, monkeypatch):
    """Review flags never change a score: they are computed again for every submission at every
    run, kept or regraded, and review.py is out of the rerun key (test_rerun_key.py)."""
    import re

    from grader.engine import review

    for student in STUDENTS:
        nb = untouched(course, NB)
        nb["cells"].append(nbformat.v4.new_code_cell(f"seen = '{student}'"))
        write(course / "submitted" / student / NB / f"{NB}.ipynb", nb)
    monkeypatch.setattr(grading, "run_job", executing({"ex1_check": [FAILED]}))
    assert not any(o.flags for o in grade(course))
    pattern = ("names a variable seen", re.compile(r"\bseen\b"))
    monkeypatch.setattr(review, "TOUCH_PATTERNS", [*review.TOUCH_PATTERNS, pattern])
    monkeypatch.setattr(grading, "run_job", no_job)
    again = grade(course)
    assert [(o.student, o.status, o.score) for o in again] == [
        (student, "unchanged", 1) for student in STUDENTS
    ]
    assert [[f.text() for f in o.flags] for o in again] == [
        [f"cell {len(nb['cells']) - 1} names a variable seen: `seen = '{s}'`"] for s in STUDENTS
    ]


def test_a_changed_submission_and_force_run_the_job_again(course, monkeypatch):
    monkeypatch.setattr(grading, "run_job", executing({"ex1_check": [FAILED]}))
    grade(course)
    monkeypatch.setattr(grading, "run_job", executing({}))
    nb = untouched(course, NB)
    nb["cells"].append(nbformat.v4.new_markdown_cell("my notes"))
    write(course / "submitted" / "bea" / NB / f"{NB}.ipynb", nb)
    assert [(o.student, o.status, o.score) for o in grade(course)] == [
        ("ann", "unchanged", 1),
        ("bea", "graded", 4),
        ("cyd", "unchanged", 1),
    ]
    assert {o.status for o in grade(course, force=True)} == {"graded"}


def test_a_failed_job_says_why_and_saves_nothing(course, monkeypatch):
    monkeypatch.setattr(grading, "run_job", lambda *_: {"error": "the grading job failed: boom"})
    (outcome,) = grade(course, students=["cyd"])
    assert (outcome.status, outcome.reason) == ("failed", "the grading job failed: boom")
    assert not (course / "autograded" / "cyd" / NB / "job.json").exists()


def test_jobs_start_while_later_notebooks_are_still_being_sanitized(course, monkeypatch):
    """The parent's serial work overlaps the jobs: the first job is submitted before the last
    notebook is sanitized (only the order is looked at)."""
    events, prepare = [], grading.prepare

    def recording_prepare(*args):
        events.append("prepare")
        return prepare(*args)

    @contextlib.contextmanager
    def recording_pool(workers, scheduler=None):
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            submit = pool.submit
            pool.submit = lambda *args: events.append("job") or submit(*args)
            yield pool

    monkeypatch.setattr(grading, "prepare", recording_prepare)
    monkeypatch.setattr(grading, "job_pool", recording_pool)
    monkeypatch.setattr(grading, "run_job", lambda *_: {"error": "not run: a stand-in job"})
    outcomes = autograde(
        Course.open(course), EngineOptions(workers=1, sandboxed=False, progress=False)
    )
    assert {o.status for o in outcomes} == {"failed"} and len(outcomes) == 3
    assert events == ["prepare", "job"] * 3
