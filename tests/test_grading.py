"""End to end: release, fabricated submissions (good, broken, hostile), collect, autograde with
two workers, export; every student's score asserted exactly."""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import checkout_copy
from paths import ROOT

from grader.engine import sandbox
from grader.engine.options import EngineOptions
from grader.outcome import COPY
from grader.term import collect
from grader.term.course_open import Course
from grader.term.scores import autograde
from maintainer.fabricated_class import (
    fabricate,
    release,
)

pytestmark = pytest.mark.heavy(order=1)
if sandbox.why_no_sandbox() and not os.environ.get(
    "CI"
):  # CI installs bubblewrap: there it must work
    pytest.skip(f"bubblewrap {sandbox.why_no_sandbox()}", allow_module_level=True)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    release(course)
    return course


# student -> {notebook: (score, max)} or "quarantined"
EXPECTED = {
    "perfect": {
        "01_attention": (4, 4),
        "02_causal_mask": (2, 2),
        "03_positions": (2, 2),
        "04_training": (2, 3),  # the written prediction (1 point) is graded by hand
        "05_heads": (2, 2),
        "06_stretch": (4, 4),
    },
    "untouched": {"01_attention": (0, 4)},
    "partial": {"01_attention": (1, 4)},
    "colab": {"01_attention": (4, 4)},
    "stripped": {"01_attention": (4, 4)},
    "workshop": {"01_attention": (4, 4)},
    "duplicated": {"01_attention": (4, 4)},
    "deleted": {"01_attention": (1, 4)},
    "edited": {"01_attention": (1, 4)},
    "markdown": {"01_attention": (1, 4)},
    "skiptag": {"01_attention": (1, 4)},
    "badjson": {"01_attention": "quarantined"},
    "looping": {"01_attention": (1, 4)},
    "hog": {"01_attention": (1, 4)},
    "allclose": {"01_attention": (1, 4)},
    "alwayseq": {"01_attention": (1, 4)},
    "delegate": {"01_attention": (1, 4)},
    "copycat": {"01_attention": (4, 4)},
    "erin": {"01_attention": (4, 4)},
}


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    folder = tmp_path_factory.mktemp("downloads")
    fabricate(course, folder)
    found = collect.collect(Course.open(course), folder)
    options = EngineOptions(workers=2, cell_timeout=10, memory_gb=3, progress=False)
    outcomes = autograde(Course.open(course), options)
    return found, outcomes


def test_every_student_gets_exactly_the_expected_score(graded):
    _, outcomes = graded
    got = {}
    for o in outcomes:
        got.setdefault(o.student, {})[o.assignment] = (
            (o.score, o.max_score) if o.status == "graded" else o.status
        )
    assert got == EXPECTED


def test_nothing_is_a_silent_zero(graded):
    """Preflight's reasons and repairs reach the outcome (what each is: test_preflight.py)."""
    _, outcomes = graded
    by = {(o.student, o.assignment): o for o in outcomes}
    assert by["badjson", "01_attention"].reason.startswith("not valid notebook JSON (")
    assert by["deleted", "01_attention"].repairs == [
        "ex1_check: check missing, restored from the release"
    ]


def test_delegation_fails_and_copies_and_torch_writes_are_flagged(graded, course):
    _, outcomes = graded
    by = {o.student: o for o in outcomes if o.assignment == "01_attention"}
    executed = course / "autograded" / "delegate" / "01_attention" / "01_attention.ipynb"
    assert "[ex1.uses_package_attention]" in executed.read_text()
    # an import of the package is no review matter; delegate's Exercise 0 is the solution's
    assert [f for f in by["delegate"].flags if f.kind != COPY] == []
    assert any("matches the package's" in flag.text() for flag in by["copycat"].flags)
    assert any("writes an attribute of torch" in flag.text() for flag in by["allclose"].flags)
    # perfect hands in the course's solution, full marks and no flag: Exercise 1's solution is
    # the lines its hint spells out and Exercise 0's two short lines, which an honest student
    # writes alike (test_copies.py shows a pasted solution that is more than that flagged)
    assert by["perfect"].flags == []


def test_a_loop_or_a_hog_fails_its_own_cells_only(graded, course):
    nb = json.loads((course / "autograded/looping/01_attention/01_attention.ipynb").read_text())
    errors = [
        o["ename"]
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
        if o["output_type"] == "error"
    ]
    assert "CellTimeoutError" in errors  # the job records the timeout, whatever else printed
    assert "CheckFailed" in json.dumps(
        json.loads((course / "autograded/hog/01_attention/01_attention.ipynb").read_text())
    )


def test_the_gradebook_knows_every_student_graded(graded, course):
    with sqlite3.connect(course / "gradebook.db") as db:
        students = {s for (s,) in db.execute("select id from student")}
    assert students == set(EXPECTED) - {"badjson"}


def test_export_and_feedback(graded, course):
    run = [sys.executable, "-m", "grader", "--course", str(course)]
    subprocess.run([*run, "export"], check=True, cwd=ROOT, capture_output=True)
    rows = list(csv.DictReader((course / "reports" / "grades.csv").open()))
    # badjson's one notebook was quarantined before the gradebook knew them, and there is no
    # roster: no row, never a silent 0 (a student on the roster gets a row without a score and
    # its status: test_gradesheet.py).
    by = {(r["student_id"], r["assignment"]): (r["score"], r["status"]) for r in rows}
    assert "badjson" not in {student for student, _ in by}
    assert by["perfect", "01_attention"] == ("4", "graded")
    assert by["partial", "01_attention"] == ("1", "graded")
    subprocess.run([*run, "feedback"], check=True, cwd=ROOT, capture_output=True)
    html = (course / "feedback/deleted/01_attention/01_attention.html").read_text()
    assert "attention_hidden" not in html  # the hidden test's code
    assert "not divided by sqrt(d_k)" in html  # the diagnosis
    source = (course / "source/01_attention/01_attention.ipynb").read_text()
    assert "attention_hidden" in source  # so the assertion above could fail


def test_a_changed_check_regrades(graded, course, tmp_path, monkeypatch):
    copy = checkout_copy(tmp_path, monkeypatch)  # the real checkpoints/ stay as they are
    checks = copy / "checkpoints" / "attention.py"
    original = checks.read_bytes()
    # The message of the mistake these students made, whatever its words: edited, it is new code.
    (old,) = re.findall(rb'"no_sqrt_dk": \("([^"]+)"', original)
    new = old + b" (edited)"
    checks.write_bytes(original.replace(old, new))
    options = EngineOptions(cell_timeout=10, progress=False)
    (again,) = autograde(Course.open(course), options, students=["deleted"])
    assert again.status == "graded" and again.score == 1
    graded_copy = course / "autograded" / "deleted" / "01_attention" / "01_attention.ipynb"
    assert new.decode() in graded_copy.read_text()


def test_class_report_counts_the_codes_the_graded_checks_left(graded, course):
    """What the sandboxed jobs left is what the report reads (how it counts, draws and leaves
    names out: test_class_report.py)."""
    run = [sys.executable, "-m", "grader", "--course", str(course), "class-report"]
    subprocess.run(run, check=True, cwd=ROOT, capture_output=True)
    rows = list(csv.DictReader((course / "reports" / "class.csv").open()))
    count = {(r["check"], r["outcome"]): int(r["students"]) for r in rows}
    # deleted, edited, markdown, skiptag and allclose all hand in attention without 1/sqrt(d_k)
    assert count["ex1_check", "ex1.no_sqrt_dk"] == 5
    assert count["ex1_check", "ex1.not_done"] == 2  # untouched and partial
