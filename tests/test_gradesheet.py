"""The LMS's side of grading: the grade sheet, the Canvas import and nbgrader's CSV written by
`export`, and a run for one student that leaves the class's report whole (the feedback bundles:
test_bundles.py).

A small class graded for real (notebook 01 only): alice solved it, bob handed in the release
untouched, carol handed in broken JSON, dave was graded and then his regrade failed, eve (on the
roster) handed in nothing. alice, bob, carol and eve come from a roster with names and emails;
dave only handed something in. Our own solutions are graded without the sandbox: it is not the
point here."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import executing
from paths import ROOT

from grader.course import db_url, points
from grader.engine import autograde as engine
from grader.term import deadlines, gradesheet
from grader.term import scores as grading
from grader.term.roster import import_roster
from maintainer.fabricated_class import perfect, release, untouched, write

pytestmark = pytest.mark.heavy(order=8)
NB = "01_attention"
ROSTER = {
    "alice": ("Alice", "Liddell", "alice@example.edu"),
    "bob": ("Bob", "Jones", "bob@example.edu"),
    "carol": ("Carol", "Ng", "carol@example.edu"),
    "eve": ("Eve", "Smith", "eve@example.edu"),
}
LIMITS = {"workers": 2, "cell_timeout": 10, "memory_gb": 3.0, "progress": False}
LIMITS |= {"sandboxed": False}
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
        patch.setattr(engine, "run_job", lambda *args: {"error": "the job could not run"})
        (again,) = grading.autograde(course, students=["dave"], force=True, **LIMITS)
    assert again.status == "failed"
    subprocess.run([*CLI, str(course), "export"], check=True, cwd=ROOT, capture_output=True)
    return course


def sheet(course: Path, name: str = "gradesheet.csv") -> dict[str, dict]:
    rows = csv.DictReader((course / "reports" / name).open(encoding="utf-8"))
    return {row["id"]: row for row in rows}


def core_points(course: Path) -> float:
    """The maximum of a total: every released notebook but the optional challenge, 06."""
    names = [p.name for p in sorted((course / "release").iterdir())]
    return sum(points(course, name) for name in names if name != "06_stretch")


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
    core = [n for n in deadlines.assigned(course) if n != "06_stretch"]
    assert {eve[f"{name}_status"] for name in core} == {"missing"}
    assert {r["out_of"] for r in rows.values()} == {f"{core_points(course):g}"}
    assert (alice["total"], bob["total"], eve["total"]) == ("4", "0", "0")
    assert carol["total"] == dave["total"] == ""  # unsettled: no total to upload yet
    header = next(csv.reader((course / "reports" / "gradesheet.csv").open()))
    assert header[:6] == ["id", "first_name", "last_name", "email", f"{NB}_score", f"{NB}_status"]
    assert header[-4:] == ["06_stretch_extra_credit", "06_stretch_status", "total", "out_of"]


def test_the_optional_challenge_is_extra_credit(course, tmp_path, monkeypatch):
    """Issue 25: skipping 06 keeps 100 % of the core; doing it adds to the total."""
    rows = sheet(course)
    eve = rows["eve"]
    assert (eve["06_stretch_extra_credit"], eve["06_stretch_status"]) == ("", "skipped")
    every = sum(points(course, n) for n in deadlines.assigned(course))
    assert float(rows["alice"]["out_of"]) == core_points(course) < every
    copy = Path(shutil.copytree(course, tmp_path / "course"))
    write(
        copy / "submitted" / "eve" / "06_stretch" / "06_stretch.ipynb", perfect(copy, "06_stretch")
    )
    monkeypatch.setattr(engine, "run_job", executing())  # the solution's run: every check passes
    (graded,) = grading.autograde(copy, students=["eve"], notebooks=["06_stretch"], **LIMITS)
    assert graded.score == points(copy, "06_stretch") == 4
    eve = {row.id: row for row in gradesheet.rows(copy)[0]}["eve"]
    assert (eve.marks["06_stretch"].score, eve.marks["06_stretch"].status) == (4, "graded")
    assert eve.total() == 4  # 4 over a maximum of the core's points: extra


def test_canvas_import_shape(course):
    lines = list(csv.reader((course / "reports" / "canvas_import.csv").open(encoding="utf-8")))
    names = deadlines.assigned(course)
    columns = [n + " (extra credit)" * (n == "06_stretch") for n in names]
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *columns]
    assert lines[1][0].strip() == "Points Possible" and lines[1][1:4] == [""] * 3
    assert lines[1][4] == gradesheet.NO_PENALTIES  # nobody was late
    assert lines[1][5:] == [f"{points(course, n) * (n != '06_stretch'):g}" for n in names]
    assert lines[1][-1] == "0"  # Canvas's way of saying extra credit
    by_sis = {line[2]: line for line in lines[2:]}
    assert list(by_sis) == ["alice", "bob", "carol", "dave", "eve"]
    assert by_sis["alice"][:6] == ["Liddell, Alice", "12345", "alice", "", "", "4"]
    assert by_sis["bob"][:3] == ["Jones, Bob", "", "bob"]
    assert by_sis["dave"][0] == "dave"  # no name on the roster: the id stands in
    assert [by_sis[s][5] for s in ("bob", "carol", "dave", "eve")] == ["0", "", "", ""]
    assert all(len(line) == 5 + len(names) for line in lines)


def test_only_the_assigned_notebooks_count_and_none_is_missing_before_its_due_date(
    course, tmp_path
):
    """Issue 26: three notebooks assigned, 04 due next millennium: three columns and nothing of
    the other three in the sheet, the Canvas file or nbgrader's CSV, the maximum theirs, and
    eve's 04 not yet a 0."""
    copy = Path(shutil.copytree(course, tmp_path / "course"))
    (copy / "course.toml").write_text(
        'assigned = ["01_attention", "02_causal_mask", "04_training"]\n\n'
        "[due]\n04_training = 2999-01-01T00:00:00+00:00\n"
    )
    done = subprocess.run([*CLI, str(copy), "export"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "not due yet, nothing handed in is 'not due', not 0: 04_training" in done.stdout
    assigned = ["01_attention", "02_causal_mask", "04_training"]
    header = next(csv.reader((copy / "reports" / "gradesheet.csv").open()))
    assert [h.removesuffix("_score") for h in header if h.endswith("_score")] == assigned
    rows = sheet(copy)
    out_of = sum(points(copy, n) for n in assigned)
    assert {r["out_of"] for r in rows.values()} == {f"{out_of:g}"} != {f"{core_points(copy):g}"}
    eve = rows["eve"]
    assert [eve[f"{n}_status"] for n in assigned] == ["missing", "missing", "not due"]
    assert [eve[f"{n}_score"] for n in assigned] == ["0", "0", ""]
    canvas = list(csv.reader((copy / "reports" / "canvas_import.csv").open()))
    assert canvas[0][5:] == assigned
    assert canvas[1][5:] == [f"{points(copy, n):g}" for n in assigned]
    grades = list(csv.DictReader((copy / "reports" / "grades.csv").open()))
    assert sorted({g["assignment"] for g in grades}) == assigned
    (eve_04,) = [g for g in grades if (g["student_id"], g["assignment"]) == ("eve", "04_training")]
    assert (eve_04["score"], eve_04["status"]) == ("", "not due")
    (copy / "course.toml").write_text('assigned = ["01_attention", "07_rnn"]\n')
    done = subprocess.run([*CLI, str(copy), "export"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1
    released = ", ".join(deadlines.assignments(copy))
    assert done.stderr.strip().endswith(
        f"course.toml: assigned names 07_rnn, not released (released: {released})"
    )


def test_nbgrader_csv_never_shows_a_silent_zero(course):
    grades = list(csv.DictReader((course / "reports" / "grades.csv").open(encoding="utf-8")))
    mine = {(g["student_id"], g["assignment"]): g for g in grades}
    assert list(grades[0])[-1] == "status"
    assert [(mine["carol", NB][k], mine["dave", NB][k]) for k in ("score", "status")] == [
        ("", ""),
        ("quarantined", "failed"),
    ]
    assert (mine["alice", NB]["score"], mine["alice", NB]["max_score"]) == ("4", "4")
    assert (mine["eve", NB]["score"], mine["eve", NB]["status"]) == ("0", "missing")
    assert (mine["eve", "06_stretch"]["score"], mine["eve", "06_stretch"]["max_score"]) == ("", "0")
    assert {g["assignment"] for g in grades} == set(deadlines.assigned(course))


def test_canvas_ids_come_back_as_canvas_exported_them(course, tmp_path):
    """A roster read from Canvas's own export: its ID, SIS ids and section go back unchanged,
    and course.toml's [roster] id says which is ours."""
    copy = Path(shutil.copytree(course, tmp_path / "course"))
    (copy / "course.toml").write_text('[roster]\nid = "SIS Login ID"\n')
    export = tmp_path / "canvas_export.csv"
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n"
        "    Points Possible,,,,\n"
        '"Liddell, Alice",12345,S-1,alice,Lab A\n"Jones, Bob",23456,S-2,bob,Lab B\n'
    )
    import_roster(copy, export)
    gradesheet.write(copy)
    lines = list(csv.reader((copy / "reports" / "canvas_import.csv").open()))
    rows = {line[3]: line for line in lines[2:]}
    assert rows["alice"][:6] == ["Liddell, Alice", "12345", "S-1", "alice", "Lab A", "4"]
    assert rows["bob"][:5] == ["Jones, Bob", "23456", "S-2", "bob", "Lab B"]
    assert rows["dave"][:5] == ["dave", "", "", "dave", ""]  # not on it: our id, where chosen


def test_canvas_assignment_ids_name_the_columns(course, tmp_path):
    (course / gradesheet.CANVAS_IDS).write_text(json.dumps({NB: 9001}))
    try:
        gradesheet.write(course)
        header = next(csv.reader((course / "reports" / "canvas_import.csv").open()))
    finally:
        (course / gradesheet.CANVAS_IDS).unlink()
        gradesheet.write(course)
    assert header[5:7] == [f"{NB} (9001)", "02_causal_mask"]


def test_a_late_notebook_says_so_and_loses_its_penalty_points(course, monkeypatch, tmp_path):
    monkeypatch.setattr(
        gradesheet.deadlines,
        "lateness",
        lambda course, student, assignment: (
            (3600, 1.0) if (student, assignment) == ("alice", NB) else (0, 0)
        ),
    )
    table, notebooks = gradesheet.rows(course)
    alice = {row.id: row for row in table}["alice"]
    assert (alice.marks[NB].score, alice.marks[NB].status) == (3.0, "late")
    assert alice.total() == 3.0
    # The Canvas file says its scores are net of the penalty, so Canvas must take none.
    said = gradesheet.write_canvas(tmp_path / "canvas.csv", course, table, notebooks)
    lines = list(csv.reader((tmp_path / "canvas.csv").open()))
    assert said == lines[1][4] == gradesheet.PENALTIES_TAKEN
    assert "turn off Canvas's automatic late deduction" in said
    assert {line[2]: line[5] for line in lines[2:]}["alice"] == "3"


def test_a_handed_in_notebook_not_yet_graded_is_pending(course):
    hand_in(course, "eve", perfect(course, NB))
    try:
        eve = {row.id: row for row in gradesheet.rows(course)[0]}["eve"]
    finally:
        (course / "submitted" / "eve" / NB / f"{NB}.ipynb").unlink()
    assert (eve.marks[NB].score, eve.marks[NB].status, eve.total()) == (None, "pending", None)


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
    args = ["autograde", "--student", "bob", "--notebook", NB, "--workers", "1"]
    args += ["--cell-timeout", "10", "--memory-gb", "3"]  # the first run's limits: bob is unchanged
    args += ["--no-sandbox"]
    done = subprocess.run([*CLI, str(course), *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads((course / "reports" / "autograde.json").read_text())
    after = {(o["student"], o["status"]) for o in report["outcomes"]}
    assert after == before - {("bob", "graded")} | {("bob", "unchanged")}  # nothing ran again
    assert len(after) == len(before)
    table = (course / "reports" / "autograde.md").read_text()
    assert all(f"| {s} |" in table for s in ("alice", "bob", "carol", "dave"))
