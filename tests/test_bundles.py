"""The feedback bundles (grader/term/bundles.py), built directly from a collected course with
feedback pages and a last autograde report written here: no sandbox and no grading. One zip per
notebook with feedback, a page per student named after the file they handed in (Canvas's and
Moodle's names, the student's id first otherwise); a notebook quarantined or failed gets a page
that says why and what to do, never an old score; the zips are rebuilt each time. That a term
graded for real comes back bundled is test_whole_term.py's."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import zipfile
from dataclasses import asdict
from pathlib import Path

import pytest
from paths import ROOT

from grader.outcome import Outcome, Status
from grader.term import collect
from grader.term.bundles import WHAT_TO_DO, bundle_feedback
from grader.term.course_open import Course
from grader.term.roster import import_roster
from maintainer.fabricated_class import perfect, write

NB = "01_attention"
ROSTER = (
    "id,first_name,last_name,email,lms_user_id\nalice,Alice,Archer,,111\nbob,Bob,Stone,,\n"
    "carol,Carol,Reed,,\ndave,Dave,Doe,,\neve,Eve,Smith,,\nfrank,Frank,Hall,,\n"
)
# student -> the name of the file they handed in
HANDED_IN = {
    "alice": "archeralice_111_9002_01_attention-1.ipynb",  # Canvas: a resubmission
    "bob": "stonebob_LATE_9003_01_attention.ipynb",  # Canvas: late
    "carol": "Carol Reed_5551_assignsubmission_file_01_attention.ipynb",  # Moodle
    "dave": "dave/01_attention.ipynb",  # a folder per student
    "eve": "eve/01_attention.ipynb",
    "frank": "frank/01_attention.ipynb",
}
NOT_GRADED = {
    "eve": Outcome("eve", NB, "quarantined", reason="not valid notebook JSON (cut short)"),
    "frank": Outcome("frank", NB, "failed", reason="the job could not run: out of memory"),
}


@pytest.fixture
def course(released, tmp_path) -> Path:
    """The class collected, each graded student's feedback page written, and the last
    autograde's report: eve's notebook quarantined, frank's job failed (an old page of his
    with a score still there)."""
    course = Path(shutil.copytree(released, tmp_path / "course"))
    (tmp_path / "students.csv").write_text(ROSTER)
    import_roster(Course.open(course), tmp_path / "students.csv")
    for student, name in HANDED_IN.items():
        nb = perfect(course, NB)
        nb["metadata"]["student"] = student  # a file of their own (another hash)
        write(tmp_path / "downloads" / name, nb)
    collect.collect(Course.open(course), tmp_path / "downloads")
    for student in HANDED_IN:
        page = course / "feedback" / student / NB / f"{NB}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>{student}: 4 / 4</p>")
    report = {"sandbox": "", "outcomes": [asdict(o) for o in NOT_GRADED.values()]}
    (course / "reports" / "autograde.json").write_text(json.dumps(report))
    return course


def pages(zip_path: Path) -> dict[str, str]:
    with zipfile.ZipFile(zip_path) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


def test_one_zip_a_notebook_with_a_page_named_as_each_file_came(course):
    written = bundle_feedback(Course.open(course), {})  # no written answer waits: test_gradesheet
    folder = course / "reports" / "feedback_bundles"
    assert written == [folder / f"{NB}.zip"]  # only 01 has feedback
    inside = pages(folder / f"{NB}.zip")
    assert sorted(inside) == [
        "Carol Reed_5551_assignsubmission_file_01_attention.html",  # Moodle: participant id
        "archeralice_111_9002_01_attention-1.html",  # Canvas: user id, attachment id
        "dave_01_attention.html",  # any other name: the student's id first
        "eve_01_attention.html",
        "frank_01_attention.html",
        "stonebob_LATE_9003_01_attention.html",
    ]
    alice = (course / "feedback" / "alice" / NB / f"{NB}.html").read_text()
    assert inside["archeralice_111_9002_01_attention-1.html"] == alice  # her page, as graded


def test_a_notebook_not_graded_gets_a_page_that_says_why_never_an_old_score(course):
    inside = pages(bundle_feedback(Course.open(course), {})[0])
    eve, frank = inside["eve_01_attention.html"], inside["frank_01_attention.html"]
    for page, student in ((eve, "eve"), (frank, "frank")):
        outcome = NOT_GRADED[student]
        assert f"<h1>{NB}: not graded</h1>" in page
        assert f"<strong>Why:</strong> {html.escape(outcome.reason)}</p>" in page
        assert html.escape(WHAT_TO_DO[outcome.status]) in page  # what to do, by what happened
    assert WHAT_TO_DO[Status.QUARANTINED] != WHAT_TO_DO[Status.FAILED]
    assert (
        "4 / 4" not in frank
        and "Nothing was scored for this notebook yet: it is not a zero" in frank
    )
    # The page is in feedback/ too, over the old one, as the student's feedback now.
    assert (course / "feedback" / "frank" / NB / f"{NB}.html").read_text() == frank


def test_the_zips_are_rebuilt_and_a_stale_one_is_gone(course):
    folder = course / "reports" / "feedback_bundles"
    folder.mkdir(parents=True)
    (folder / "03_positions.zip").write_bytes(b"stale")
    assert [p.name for p in bundle_feedback(Course.open(course), {})] == [f"{NB}.zip"]
    assert sorted(p.name for p in folder.iterdir()) == [f"{NB}.zip"]


def test_make_help_says_what_feedback_writes():
    """One zip per notebook, as bundle_feedback writes them, not one per student."""
    listed = subprocess.run(["make", "help"], cwd=ROOT, capture_output=True, text=True, check=True)
    (line,) = [x for x in listed.stdout.splitlines() if x.split()[:2] == ["make", "feedback"]]
    assert "zip per notebook" in line and "reports/feedback_bundles/" in line
    assert "zip per student" not in line
