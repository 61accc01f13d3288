"""A whole graded term on a fabricated class, through the commands an instructor types: roster,
release, LMS-named downloads with a late copy, a resubmission and a corrupt file, autograde in
the sandbox, the corrupt file's fix emailed and collected with the time it was due, the zip
collected again (which changes nothing), a hand grade, a rerun that leaves it done, export for
the LMS, feedback bundles, and the term's log of every step."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from paths import ROOT

from grader.course import db_url
from grader.engine import sandbox
from maintainer.fabricated_class import perfect, release, untouched

pytestmark = pytest.mark.heavy(order=4)
if sandbox.why_no_sandbox():
    pytest.skip(f"bubblewrap {sandbox.why_no_sandbox()}", allow_module_level=True)

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
CORRUPT = b'{"cells": [{"cell_type": "code", "source": "'  # a download cut short
EARLIER, ON_TIME, A_DAY_LATE = (
    (2027, 1, 15, 18, 0, 0),
    (2027, 1, 15, 20, 0, 0),
    (2027, 1, 16, 12, 0, 0),
)


def grader(course: Path, *args: str) -> str:
    """A command as the instructor types it; what it prints."""
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
        # Carol's Canvas login is her last and first name; her file was cut short.
        archive.writestr(zipfile.ZipInfo("reedcarol_333_9006_01_attention.ipynb", ON_TIME), CORRUPT)
    said = {"collect": grader(course, "collect", str(canvas))}
    said["autograde"] = grader(course, "autograde", "--workers", "2")
    said["quarantined"] = outcome(course, "carol", "01_attention")
    # She emails a good copy; it counts from when her corrupt one was handed in, on time.
    fix = home / "attachment.ipynb"
    fix.write_text(json.dumps(perfect(course, "01_attention")))
    args = ["--student", "carol", "--submitted-at", "2027-01-15T20:00"]
    said["fix"] = grader(course, "collect", str(fix), *args)
    grader(course, "autograde", "--workers", "2")
    # A roster change later, the instructor collects the term's zip again.
    said["again"] = grader(course, "collect", str(canvas))
    said["rerun"] = grader(course, "autograde", "--workers", "2")
    return course, said


def outcome(course: Path, student: str, notebook: str) -> dict:
    """The student's row of the last autograde report."""
    rows = json.loads((course / "reports" / "autograde.json").read_text())["outcomes"]
    return next(o for o in rows if (o["student"], o["assignment"]) == (student, notebook))


def test_collect_files_the_roster_and_reports_the_rest(term):
    course, said = term
    submitted = sorted(
        p.relative_to(course / "submitted").parts[:2] for p in (course / "submitted").glob("*/*")
    )
    assert submitted == [
        ("alice", "01_attention"),
        ("alice", "04_training"),
        ("bob", "01_attention"),
        ("carol", "01_attention"),
    ]
    assert not (course / "submitted" / "mallory").exists()
    first = said["collect"].splitlines()
    assert first[0] == "collect canvas.zip: 6 files: counts 4, refused 1, skipped 1"
    assert first[1] == (
        "refused: archeralice_111_9001_01_attention.ipynb (alice / 01_attention): "
        "'archeralice_111_9002_01_attention-1.ipynb' is a newer copy of the same notebook; "
        "renamed from 'archeralice_111_9001_01_attention.ipynb'"
    )
    assert first[2].startswith("skipped: mallory_99_9005_01_attention.ipynb: Canvas name")
    report = (course / "reports" / "collect.md").read_text()
    assert "| mallory_99_9005_01_attention.ipynb | – | 01_attention |" in report


def test_an_emailed_fix_survives_the_zip_collected_again(term):
    course, said = term
    assert said["quarantined"]["status"] == "quarantined"
    assert "not valid notebook JSON" in said["quarantined"]["reason"]
    assert said["fix"].splitlines()[0] == "collect attachment.ipynb: 1 file: counts 1"
    assert said["again"].splitlines()[0] == (
        "collect canvas.zip: 6 files, nothing changed: unchanged 5, skipped 1"
    )
    carol = course / "submitted" / "carol" / "01_attention"
    assert json.loads((carol / "01_attention.ipynb").read_text()) == perfect(course, "01_attention")
    assert (carol / "timestamp.txt").read_text() == "2027-01-15 20:00:00.000000 UTC\n"
    mine = outcome(course, "carol", "01_attention")
    assert (mine["status"], mine["score"], mine["seconds_late"]) == ("unchanged", 4, 0)
    # Both of her files are kept; the listing says which counts, and why.
    listing = grader(course, "collect-pin", "carol", "01_attention")
    assert "| given | attachment.ipynb |" in listing
    assert "| yes (the newest that can be graded) |" in listing
    assert "| no: not valid notebook JSON" in listing


def test_the_terms_log_has_every_step(term):
    course, said = term
    log = (course / "reports" / "term_log.md").read_text()
    steps = [line.split(" · ", 1)[1] for line in log.splitlines() if line.startswith("## ")]
    canvas = str(course.parent / "canvas.zip")
    fix = str(course.parent / "attachment.ipynb")
    collects = [f"collect {canvas}", f"collect {fix}", f"collect {canvas}"]
    assert steps[:6] == [step for c in collects for step in (c, "autograde")]
    sections = log.split("\n## ")
    assert "6 files, nothing changed: unchanged 5, skipped 1" in sections[5]
    assert "| reedcarol_333_9006_01_attention.ipynb | carol | 01_attention |" in sections[5]
    assert "- carol / 01_attention: quarantined: not valid notebook JSON" in sections[2]
    reused = "4 notebooks: 0 graded, 4 reused from their last run (unchanged), 0 quarantined"
    assert reused in sections[6] and said["rerun"].startswith(reused)
    assert "4 notebooks: 1 graded, 3 reused" in sections[4]


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
    assert (carol["01_attention_status"], carol["01_attention_score"]) == ("graded", "4")  # fixed
    canvas = (course / "reports" / "canvas_import.csv").read_text().splitlines()
    assert canvas[0].startswith("Student,ID,SIS User ID") and "Points Possible" in canvas[1]


def test_feedback_comes_back_one_bundle_per_notebook(term):
    course, _ = term
    grader(course, "feedback")
    folder = course / "reports" / "feedback_bundles"
    assert sorted(p.name for p in folder.glob("*.zip")) == ["01_attention.zip", "04_training.zip"]
    with zipfile.ZipFile(folder / "01_attention.zip") as z:
        # Canvas's names for Canvas's files; carol's emailed fix has none, so her id leads.
        assert sorted(z.namelist()) == [
            "archeralice_111_9002_01_attention-1.html",
            "carol_01_attention.html",
            "stonebob_LATE_9003_01_attention.html",
        ]
