"""A whole graded term on a fabricated class, through the commands an instructor types: roster,
release, LMS-named downloads with a late copy and a resubmission, autograde in the sandbox, a
hand grade, a rerun that leaves it done, export for the LMS, feedback bundles."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from grader import sandbox
from grader.course import db_url
from maintainer.fabricated_class import ROOT, perfect, release, untouched

if sandbox.problem():
    pytest.skip(f"bubblewrap {sandbox.problem()}", allow_module_level=True)

ROSTER = """id,first_name,last_name,email,lms_user_id
alice,Alice,Archer,alice@example.edu,111
bob,Bob,Stone,bob@example.edu,
carol,Carol,Reed,carol@example.edu,
"""
COURSE_TOML = """timezone = "UTC"

[due]
01_attention = 2027-01-15T23:59:00+00:00
04_training = 2027-01-22T23:59:00+00:00

[late]
penalty = "percent_per_day"
percent_per_day = 25
"""
EARLIER, ON_TIME, A_DAY_LATE = (
    (2027, 1, 15, 18, 0, 0),
    (2027, 1, 15, 20, 0, 0),
    (2027, 1, 16, 12, 0, 0),
)


def grader(course: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "grader", "--course", str(course), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def needs_manual(course: Path, student: str) -> list[str]:
    with Gradebook(db_url(course)) as gb:
        notebook = gb.find_submission_notebook("04_training", "04_training", student)
        return [g.name for g in notebook.grades if g.needs_manual_grade]


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    home = tmp_path_factory.mktemp("term")
    course = home / "course"
    release(course)
    (course / "course.toml").write_text(COURSE_TOML)
    (home / "students.csv").write_text(ROSTER)
    grader(course, "roster", str(home / "students.csv"))

    # Canvas's bulk download: user name, user id, submission id, the file's own name; a
    # resubmission gets "-1". Bob's copy is a day late.
    canvas = home / "canvas.zip"
    with zipfile.ZipFile(canvas, "w") as archive:
        entries = [
            ("archeralice_111_9001_01_attention.ipynb", EARLIER, untouched(course, "01_attention")),
            ("archeralice_111_9002_01_attention-1.ipynb", ON_TIME, perfect(course, "01_attention")),
            ("stonebob_LATE_9003_01_attention.ipynb", A_DAY_LATE, perfect(course, "01_attention")),
            ("archeralice_111_9004_04_training.ipynb", ON_TIME, perfect(course, "04_training")),
            ("mallory_99_9005_01_attention.ipynb", ON_TIME, perfect(course, "01_attention")),
        ]
        for name, when, nb in entries:
            archive.writestr(zipfile.ZipInfo(name, date_time=when), json.dumps(nb))
    collected = grader(course, "collect", str(canvas))
    grader(course, "autograde", "--workers", "2")
    return course, collected


def test_collect_files_the_roster_and_reports_the_rest(term):
    course, collected = term
    submitted = sorted(
        p.relative_to(course / "submitted").parts[:2] for p in (course / "submitted").glob("*/*")
    )
    assert submitted == [
        ("alice", "01_attention"),
        ("alice", "04_training"),
        ("bob", "01_attention"),
    ]
    assert not (course / "submitted" / "mallory").exists()
    report = (course / "reports" / "collect.md").read_text()
    assert "mallory" in report and "carol" in report  # unmatched file; handed in nothing


def test_a_hand_grade_survives_a_rerun_and_the_sheet_has_every_student(term):
    course, _ = term
    assert needs_manual(course, "alice") == ["ex4_prediction"]
    with Gradebook(db_url(course)) as gb:
        grade = gb.find_grade("ex4_prediction", "04_training", "04_training", "alice")
        grade.manual_score, grade.needs_manual_grade = 1, False
        gb.db.commit()
    grader(course, "autograde", "--workers", "2")  # nothing changed: nothing to do again
    assert needs_manual(course, "alice") == []

    grader(course, "export")
    with (course / "reports" / "gradesheet.csv").open() as f:
        rows = {row["id"]: row for row in csv.DictReader(f)}
    assert set(rows) == {"alice", "bob", "carol"}
    alice, bob, carol = rows["alice"], rows["bob"], rows["carol"]
    assert (alice["email"], alice["01_attention_status"], alice["01_attention_score"]) == (
        "alice@example.edu",
        "graded",
        "4",
    )
    assert (alice["04_training_status"], alice["04_training_score"]) == ("graded", "3")
    assert (bob["01_attention_status"], bob["01_attention_score"]) == ("late", "3")  # 25 % of 4
    assert (carol["01_attention_status"], carol["01_attention_score"]) == ("missing", "0")
    canvas = (course / "reports" / "canvas_import.csv").read_text().splitlines()
    assert canvas[0].startswith("Student,ID,SIS User ID") and "Points Possible" in canvas[1]


def test_feedback_comes_back_one_bundle_per_student(term):
    course, _ = term
    grader(course, "feedback")
    bundles = sorted(p.name for p in (course / "reports" / "feedback_bundles").glob("*.zip"))
    assert bundles == ["alice_feedback.zip", "bob_feedback.zip"]
    with zipfile.ZipFile(course / "reports" / "feedback_bundles" / "bob_feedback.zip") as z:
        assert [Path(n).name for n in z.namelist()] == ["01_attention.html"]
