"""A whole graded term on a fabricated class, through the commands an instructor types: roster,
release, Canvas's zip built as Canvas builds it (every entry the moment the zip was built, ten
days after the due date) with a LATE-marked copy, a resubmission and a corrupt file, autograde in
the sandbox, the corrupt file's fix emailed and collected with the time it was due, the zip
collected again (which changes nothing), a hand grade, a rerun that leaves it done, export for
the LMS, feedback bundles, and the term's log of every step."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from paths import ROOT

from grader.course import Layout
from grader.engine import preflight, sandbox
from grader.term.canvas import NO_PENALTIES
from grader.term.collect import FileStatus
from grader.term.collected import Store
from grader.term.course_open import Course
from maintainer.fabricated_class import canvas_name, canvas_zip, perfect, release, untouched

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
BUILT = datetime(2027, 1, 25, 9, 0)  # when Canvas built its zip: after both due dates


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
    with Gradebook(Layout(course).db_url) as gb:
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

    # Canvas's bulk download: sortable name, LATE where Canvas deems it late, user id, the
    # attachment's id (one per upload) and name; a second upload of a name gets "-1". Alice's
    # later upload comes first in the zip, Canvas's query having no order.
    files = [
        ("Archer, Alice", 111, 9002, "01_attention-1", perfect, False),
        ("Archer, Alice", 111, 9001, "01_attention", untouched, False),
        ("Stone, Bob", 222, 9003, "01_attention", perfect, True),
        ("Archer, Alice", 111, 9004, "04_training", perfect, False),
        ("Mallory, Eve", 99, 9005, "01_attention", perfect, False),
    ]
    entries = [
        (canvas_name(who, user, at, f"{file}.ipynb", late), json.dumps(nb(course, file[:12])))
        for who, user, at, file, nb, late in files
    ]
    # Carol's Canvas login is her last and first name; her file was cut short.
    entries.append((canvas_name("Reed, Carol", 333, 9006, "01_attention.ipynb"), CORRUPT))
    canvas = canvas_zip(home / "canvas.zip", entries, BUILT)
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


def log_sections(course: Path) -> list[str]:
    """The term's log: its head, then a section a step."""
    return (course / "reports" / "term_log.md").read_text().split("\n## ")


def table(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in `text` (a collect's report, a listing)."""
    table = [line for line in text.splitlines() if line.startswith("| ")]
    head, *body = ([cell.strip() for cell in line.strip("|").split(" | ")] for line in table)
    return [dict(zip(head, row, strict=True)) for row in body]


def statuses(text: str) -> dict[str, str]:
    """file -> what a collect did with it, from its table (reports/collect.md, the log)."""
    return {row["file"]: row["status"] for row in table(text)}


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
    assert not (course / "submitted" / "malloryeve").exists()
    # What the first collect did with each file, from its table in the term's log (its words:
    # test_collect.py); the printed lines say the same, one a file it did not simply count.
    first = log_sections(course)[1]
    assert statuses(first) == {
        "archeralice_111_9002_01_attention-1.ipynb": FileStatus.COUNTS,
        "archeralice_111_9001_01_attention.ipynb": FileStatus.REFUSED,  # an earlier upload
        "archeralice_111_9004_04_training.ipynb": FileStatus.COUNTS,
        "stonebob_LATE_222_9003_01_attention.ipynb": FileStatus.COUNTS,
        "reedcarol_333_9006_01_attention.ipynb": FileStatus.BROKEN,
        "malloryeve_99_9005_01_attention.ipynb": FileStatus.SKIPPED,  # not on the roster
    }
    printed = said["collect"].splitlines()
    assert [line.split(": ")[1].split(" ")[0] for line in printed[2:5]] == [
        "reedcarol_333_9006_01_attention.ipynb",
        "archeralice_111_9001_01_attention.ipynb",
        "malloryeve_99_9005_01_attention.ipynb",
    ]
    # No hand-in time comes from Canvas's zip; its LATE mark is kept, and the time given.
    kept = [k for files in Store(Course.open(course)).files.values() for k in files.values()]
    assert sorted((k.student, k.time_from, k.lms_late) for k in kept) == [
        ("alice", "none", False),
        ("alice", "none", False),
        ("alice", "none", False),
        ("bob", "none", True),
        ("carol", "given", None),
        ("carol", "none", False),
    ]
    malloryeve = table((course / "reports" / "collect.md").read_text())[-1]
    assert (malloryeve["student"], malloryeve["notebook"]) == ("–", "01_attention")


def test_an_emailed_fix_survives_the_zip_collected_again(term):
    course, said = term
    assert said["quarantined"]["status"] == "quarantined"
    assert said["quarantined"]["reason"].startswith(preflight.read_notebook(CORRUPT)[1])
    assert statuses(log_sections(course)[3]) == {"attachment.ipynb": FileStatus.COUNTS}
    again = set(statuses(log_sections(course)[5]).values())
    assert "nothing changed" in said["again"] and again == {
        FileStatus.UNCHANGED,
        FileStatus.SKIPPED,
    }
    carol = course / "submitted" / "carol" / "01_attention"
    assert json.loads((carol / "01_attention.ipynb").read_text()) == perfect(course, "01_attention")
    assert (carol / "timestamp.txt").read_text() == "2027-01-15 20:00:00.000000 UTC\n"
    mine = outcome(course, "carol", "01_attention")
    assert (mine["status"], mine["score"], mine["seconds_late"]) == ("unchanged", 4, 0)
    # Both of her files are kept; the listing says which counts, and why.
    corrupt, fix = table(grader(course, "collect-pin", "carol", "01_attention"))
    assert (fix["time from"], fix["came from"], fix["can be graded"]) == (
        "given",
        "attachment.ipynb",
        "yes",
    )
    assert fix["counts"].startswith("yes") and not corrupt["counts"]  # its words: test_collected
    assert corrupt["can be graded"] == f"no: {preflight.read_notebook(CORRUPT)[1]}"


def test_the_terms_log_has_every_step(term):
    course, said = term
    log = (course / "reports" / "term_log.md").read_text()
    steps = [line.split(" · ", 1)[1] for line in log.splitlines() if line.startswith("## ")]
    canvas = str(course.parent / "canvas.zip")
    fix = str(course.parent / "attachment.ipynb")
    collects = [f"collect {canvas}", f"collect {fix}", f"collect {canvas}"]
    assert steps[:6] == [step for c in collects for step in (c, "autograde")]
    sections = log.split("\n## ")
    assert sections[5].count("| unchanged |") == 5 and "nothing changed" in sections[5]
    (carol,) = [row for row in table(sections[5]) if row["student"] == "carol"]
    assert carol["file"] == "reedcarol_333_9006_01_attention.ipynb"
    quarantined, who = said["quarantined"], "carol / 01_attention"
    assert f"\n- {who}: {quarantined['status']}: {quarantined['reason']}" in sections[2]
    # After the fix: carol's notebook graded, the other three reused (notebooks, graded, reused).
    assert re.findall(r"\d+", sections[4].split("\n\n")[1].splitlines()[0])[:3] == ["4", "1", "3"]
    reused = "4 notebooks: 0 graded, 4 reused from their last run (unchanged), 0 quarantined"
    assert reused in sections[6] and said["rerun"].startswith(reused)


def test_a_hand_grade_survives_a_rerun_and_the_sheet_has_every_student(term):
    course, _ = term
    assert needs_manual(course, "alice") == ["ex4_prediction"]
    with Gradebook(Layout(course).db_url) as gb:
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
    # Bob's LATE is Canvas's to price: no penalty here, none taken twice.
    assert (bob["01_attention_status"], bob["01_attention_score"]) == ("graded", "4")
    assert (carol["01_attention_status"], carol["01_attention_score"]) == ("graded", "4")  # fixed
    canvas = (course / "reports" / "canvas_import.csv").read_text().splitlines()
    assert canvas[0].startswith("Student,ID,SIS User ID") and "Points Possible" in canvas[1]
    assert NO_PENALTIES in canvas[1]
    (logged,) = [r for r in table(log_sections(course)[1]) if r["student"] == "bob"]
    assert logged["handed in"].endswith("(Canvas: LATE)")


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
            "stonebob_LATE_222_9003_01_attention.html",
        ]
