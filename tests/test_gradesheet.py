"""The LMS's side of grading: the grade sheet and Canvas import written by `export`, the feedback
bundles written by `feedback`, and a run for one student that leaves the class's report whole.

A small class graded for real (notebook 01 only): alice solved it, bob handed in the release
untouched, carol handed in broken JSON, dave was graded and then his regrade failed, eve (on the
roster) handed in nothing. alice, bob, carol and eve come from a roster with names and emails;
dave only handed something in."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import autograde as grading
from grader import gradesheet
from grader.bundles import bundle_feedback
from grader.course import db_url
from maintainer.fabricated_class import ROOT, perfect, release, untouched, write

NB = "01_attention"
ROSTER = {
    "alice": ("Alice", "Liddell", "alice@example.edu"),
    "bob": ("Bob", "Jones", "bob@example.edu"),
    "carol": ("Carol", "Ng", "carol@example.edu"),
    "eve": ("Eve", "Smith", "eve@example.edu"),
}
LIMITS = {"workers": 2, "cell_timeout": 10, "memory_gb": 3.0, "progress": False}
CLI = [sys.executable, "-m", "grader", "--course"]


def enrol(course: Path) -> None:
    """The roster, as nbgrader keeps it: Student records with names and emails."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(course)) as gb:
        for student, (first, last, email) in ROSTER.items():
            gb.update_or_create_student(student, first_name=first, last_name=last, email=email)
        gb.update_or_create_student("alice", lms_user_id="12345")  # Canvas's id, where known


def hand_in(course: Path, student: str, nb) -> None:
    write(course / "submitted" / student / NB / f"{NB}.ipynb", nb)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    release(course)
    enrol(course)
    hand_in(course, "alice", perfect(course, NB))
    hand_in(course, "bob", untouched(course, NB))
    hand_in(course, "carol", json.dumps(perfect(course, NB))[:3000])
    hand_in(course, "dave", perfect(course, NB))
    first = grading.autograde(course, **LIMITS)
    assert {(o.student, o.status) for o in first} == {
        ("alice", "graded"),
        ("bob", "graded"),
        ("carol", "quarantined"),
        ("dave", "graded"),
    }
    # dave's regrade fails (a stand-in job): the gradebook still holds his first run's 4 points.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grading, "run_job", lambda *args: {"error": "the job could not run"})
        (again,) = grading.autograde(course, students=["dave"], force=True, **LIMITS)
    assert again.status == "failed"
    subprocess.run([*CLI, str(course), "export"], check=True, cwd=ROOT, capture_output=True)
    return course


def sheet(course: Path) -> dict[str, dict]:
    rows = csv.DictReader((course / "reports" / "gradesheet.csv").open(encoding="utf-8"))
    return {row["id"]: row for row in rows}


def test_one_row_per_student_with_roster_names_statuses_and_totals(course):
    rows = sheet(course)
    assert list(rows) == ["alice", "bob", "carol", "dave", "eve"]
    alice, bob, carol, dave, eve = (rows[s] for s in rows)
    assert (alice["first_name"], alice["last_name"], alice["email"]) == ROSTER["alice"]
    assert (dave["first_name"], dave["last_name"], dave["email"]) == ("", "", "")
    assert (alice[f"{NB}_score"], alice[f"{NB}_status"]) == ("4", "graded")
    assert (alice["02_causal_mask_score"], alice["02_causal_mask_status"]) == ("0", "missing")
    assert (bob[f"{NB}_score"], bob[f"{NB}_status"]) == ("0", "graded")
    # Never the stale 4 behind dave's failure, nor a 0 for carol's broken file.
    assert (carol[f"{NB}_score"], carol[f"{NB}_status"]) == ("", "quarantined")
    assert (dave[f"{NB}_score"], dave[f"{NB}_status"]) == ("", "failed")
    assert {eve[f"{name}_status"] for name in gradesheet.assignments(course)} == {"missing"}
    out_of = sum(
        m for m in gradesheet.gradebook(course, gradesheet.assignments(course))[2].values()
    )
    assert {r["out_of"] for r in rows.values()} == {f"{out_of:g}"}
    assert (alice["total"], bob["total"], eve["total"]) == ("4", "0", "0")
    assert carol["total"] == dave["total"] == ""  # unsettled: no total to upload yet
    header = next(csv.reader((course / "reports" / "gradesheet.csv").open()))
    assert header[:6] == ["id", "first_name", "last_name", "email", f"{NB}_score", f"{NB}_status"]
    assert header[-2:] == ["total", "out_of"]


def test_canvas_import_shape(course):
    lines = list(csv.reader((course / "reports" / "canvas_import.csv").open(encoding="utf-8")))
    names = gradesheet.assignments(course)
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *names]
    assert lines[1][0].strip() == "Points Possible" and lines[1][1:5] == [""] * 4
    assert lines[1][5] == "4"
    by_sis = {line[2]: line for line in lines[2:]}
    assert list(by_sis) == ["alice", "bob", "carol", "dave", "eve"]
    assert by_sis["alice"][:6] == ["Liddell, Alice", "12345", "alice", "", "", "4"]
    assert by_sis["bob"][:3] == ["Jones, Bob", "", "bob"]
    assert by_sis["dave"][0] == "dave"  # no name on the roster: the id stands in
    assert [by_sis[s][5] for s in ("bob", "carol", "dave", "eve")] == ["0", "", "", ""]
    assert all(len(line) == 5 + len(names) for line in lines)


def test_canvas_assignment_ids_name_the_columns(course, tmp_path):
    (course / gradesheet.CANVAS_IDS).write_text(json.dumps({NB: 9001}))
    try:
        gradesheet.write(course)
        header = next(csv.reader((course / "reports" / "canvas_import.csv").open()))
    finally:
        (course / gradesheet.CANVAS_IDS).unlink()
        gradesheet.write(course)
    assert header[5:7] == [f"{NB} (9001)", "02_causal_mask"]


def test_a_late_notebook_says_so_and_loses_its_penalty_points(course, monkeypatch):
    monkeypatch.setattr(
        gradesheet.deadlines,
        "lateness",
        lambda course, student, assignment: (
            (3600, 1.0) if (student, assignment) == ("alice", NB) else (0, 0)
        ),
    )
    table, _ = gradesheet.rows(course)
    alice = {row.id: row for row in table}["alice"]
    assert (alice.marks[NB].score, alice.marks[NB].status) == (3.0, "late")
    assert alice.total() == 3.0


def test_a_handed_in_notebook_not_yet_graded_is_pending(course):
    hand_in(course, "eve", perfect(course, NB))
    try:
        eve = {row.id: row for row in gradesheet.rows(course)[0]}["eve"]
    finally:
        (course / "submitted" / "eve" / NB / f"{NB}.ipynb").unlink()
    assert (eve.marks[NB].score, eve.marks[NB].status, eve.total()) == (None, "pending", None)


def test_feedback_bundles_one_zip_per_student_with_only_their_files(course):
    subprocess.run([*CLI, str(course), "feedback"], check=True, cwd=ROOT, capture_output=True)
    folder = course / "reports" / "feedback_bundles"
    zips = sorted(p.name for p in folder.iterdir())
    # dave's feedback is his first run's, the graded notebook on disk; carol and eve have none.
    assert zips == ["alice_feedback.zip", "bob_feedback.zip", "dave_feedback.zip"]
    for student in ("alice", "bob", "dave"):
        with zipfile.ZipFile(folder / f"{student}_feedback.zip") as archive:
            assert archive.namelist() == [f"{NB}.html"]
            page = course / "feedback" / student / NB / f"{NB}.html"
            assert archive.read(f"{NB}.html") == page.read_bytes()
    # Rebuilt each time: a student whose feedback is gone keeps no zip.
    (folder / "mallory_feedback.zip").write_bytes(b"stale")
    assert [p.name for p in bundle_feedback(course)] == zips
    assert not (folder / "mallory_feedback.zip").exists()


def test_grading_one_student_keeps_the_others_in_the_report(course):
    # dave's failed regrade was already a one-student run: everyone else is still there.
    report = json.loads((course / "reports" / "autograde.json").read_text())
    before = {(o["student"], o["status"]) for o in report["outcomes"]}
    assert before == {
        ("alice", "graded"),
        ("bob", "graded"),
        ("carol", "quarantined"),
        ("dave", "failed"),
    }
    args = ["autograde", "--student", "bob", "--assignment", NB, "--workers", "1"]
    args += ["--cell-timeout", "10", "--memory-gb", "3"]  # the first run's limits: bob is unchanged
    done = subprocess.run([*CLI, str(course), *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads((course / "reports" / "autograde.json").read_text())
    after = {(o["student"], o["status"]) for o in report["outcomes"]}
    # bob's notebook is unchanged, unless grader/ changed meanwhile (then it is graded again).
    assert after - {("bob", "unchanged"), ("bob", "graded")} == before - {("bob", "graded")}
    assert len(after) == len(before)
    table = (course / "reports" / "autograde.md").read_text()
    assert all(f"| {s} |" in table for s in ("alice", "bob", "carol", "dave"))
