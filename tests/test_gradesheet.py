"""The LMS's side of grading: the grade sheet, the Canvas import and nbgrader's CSV written by
`export`, and a run for one student that leaves the class's report whole (the feedback bundles:
test_bundles.py).

A small class graded for real (notebook 01 only): alice solved it, bob handed in the release
untouched, carol handed in broken JSON, dave was graded and then his regrade failed, eve (on the
roster) handed in nothing. alice, bob, carol and eve come from a roster with names and emails;
dave only handed something in. Our own solutions are graded without the sandbox: it is not the
point here.

Then notebook 04 with its written prediction, graded by a stand-in job (conftest.executing):
while the prediction waits for its hand grade, export and feedback leave the notebook without a
score in every file and name whose it is; with --partial they write the partial score, marked;
once graded by hand (nbgrader's gradebook API, as the formgrader saves it), the number. Also
grades.csv's times in the course's zone, and the Canvas columns as Canvas's export heads them."""

from __future__ import annotations

import csv
import json
import re
import shutil
import zipfile
from copy import deepcopy
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import executing, grader_cli

from grader.course import Layout
from grader.engine import autograde as engine
from grader.engine.options import EngineOptions
from grader.outcome import SheetStatus
from grader.term import canvas, deadlines, gradesheet, nbgrader_apps
from grader.term import scores as grading
from grader.term.course_open import Course
from grader.term.export import export
from grader.term.nbgrader_apps import gradebook
from grader.term.roster import import_roster
from maintainer.fabricated_class import cell_of, perfect, release, untouched, write

pytestmark = pytest.mark.heavy(order=8)
NB = "01_attention"
ROSTER = {
    "alice": ("Alice", "Liddell", "alice@example.edu"),
    "bob": ("Bob", "Jones", "bob@example.edu"),
    "carol": ("Carol", "Ng", "carol@example.edu"),
    "eve": ("Eve", "Smith", "eve@example.edu"),
}
OPTIONS = EngineOptions(workers=2, cell_timeout=10, memory_gb=3.0, sandboxed=False, progress=False)


def enrol(course: Path) -> None:
    """The roster, as nbgrader keeps it: Student records with names and emails."""
    from nbgrader.api import Gradebook

    with Gradebook(Layout(course).db_url) as gb:
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
    first = grading.autograde(Course.open(course), OPTIONS)
    assert {(o.student, o.status) for o in first} == {
        ("alice", "graded"),
        ("bob", "graded"),
        ("carol", "quarantined"),
        ("dave", "graded"),
    }
    # dave's regrade fails (a stand-in job): the gradebook still holds his first run's 4 points.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", lambda *args: {"error": "the job could not run"})
        (again,) = grading.autograde(Course.open(course), replace(OPTIONS, force=True), ["dave"])
    assert again.status == "failed"
    assert grader_cli(course, "export").returncode == 0
    return course


def read_sheet(course: Path) -> gradesheet.Sheet:
    """The Sheet `make export` writes its files from, read in a gradebook session of its own."""
    opened = Course.open(course)
    with gradebook(opened) as gb:
        return gradesheet.read(opened, gb)


def write_files(course: Path) -> list[str]:
    """`make export` into the course's reports/, called directly."""
    opened = Course.open(course)
    return export(opened, opened.layout.report("grades.csv"))


def sheet(course: Path, name: str = "gradesheet.csv") -> dict[str, dict]:
    rows = csv.DictReader((course / "reports" / name).open(encoding="utf-8"))
    return {row["id"]: row for row in rows}


def core_points(course: Path) -> float:
    """The maximum of a total: every released notebook but the optional challenge, 06."""
    names = [p.name for p in sorted((course / "release").iterdir())]
    return sum(Course.open(course).term.points[name] for name in names if name != "06_stretch")


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
    core = [n for n in list(Course.open(course).term.assigned) if n != "06_stretch"]
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
    every = sum(Course.open(course).term.points[n] for n in list(Course.open(course).term.assigned))
    assert float(rows["alice"]["out_of"]) == core_points(course) < every
    copy = Path(shutil.copytree(course, tmp_path / "course"))
    write(
        copy / "submitted" / "eve" / "06_stretch" / "06_stretch.ipynb", perfect(copy, "06_stretch")
    )
    monkeypatch.setattr(engine, "run_job", executing())  # the solution's run: every check passes
    (graded,) = grading.autograde(
        Course.open(copy), OPTIONS, students=["eve"], notebooks=["06_stretch"]
    )
    assert graded.score == Course.open(copy).term.points["06_stretch"] == 4
    eve = {row.id: row for row in read_sheet(copy).rows}["eve"]
    assert (eve.marks["06_stretch"].score, eve.marks["06_stretch"].status) == (4, "graded")
    assert eve.total() == 4  # 4 over a maximum of the core's points: extra


def test_canvas_import_shape(course):
    lines = list(csv.reader((course / "reports" / "canvas_import.csv").open(encoding="utf-8")))
    names = list(Course.open(course).term.assigned)
    columns = [n + " (extra credit)" * (n == "06_stretch") for n in names]
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *columns]
    assert lines[1][0].strip() == "Points Possible" and lines[1][1:4] == [""] * 3
    assert lines[1][4] == canvas.NO_PENALTIES  # nobody was late
    points = Course.open(course).term.points
    assert lines[1][5:] == [f"{points[n] * (n != '06_stretch'):g}" for n in names]
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
    done = grader_cli(copy, "export")
    assert done.returncode == 0, done.stderr
    assert "not due yet, nothing handed in is 'not due', not 0: 04_training" in done.stdout
    assigned = ["01_attention", "02_causal_mask", "04_training"]
    header = next(csv.reader((copy / "reports" / "gradesheet.csv").open()))
    assert [h.removesuffix("_score") for h in header if h.endswith("_score")] == assigned
    rows = sheet(copy)
    out_of = sum(Course.open(copy).term.points[n] for n in assigned)
    assert {r["out_of"] for r in rows.values()} == {f"{out_of:g}"} != {f"{core_points(copy):g}"}
    eve = rows["eve"]
    assert [eve[f"{n}_status"] for n in assigned] == ["missing", "missing", "not due"]
    assert [eve[f"{n}_score"] for n in assigned] == ["0", "0", ""]
    canvas = list(csv.reader((copy / "reports" / "canvas_import.csv").open()))
    assert canvas[0][5:] == assigned
    assert canvas[1][5:] == [f"{Course.open(copy).term.points[n]:g}" for n in assigned]
    grades = list(csv.DictReader((copy / "reports" / "grades.csv").open()))
    assert sorted({g["assignment"] for g in grades}) == assigned
    (eve_04,) = [g for g in grades if (g["student_id"], g["assignment"]) == ("eve", "04_training")]
    assert (eve_04["score"], eve_04["status"]) == ("", "not due")
    (copy / "course.toml").write_text('assigned = ["01_attention", "07_rnn"]\n')
    done = grader_cli(copy, "export")
    assert done.returncode == 1
    released = ", ".join(Layout(copy).assignments())  # the words: test_settings.py
    assert "07_rnn" in done.stderr and done.stderr.strip().endswith(f"(released: {released})")


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
    assert {g["assignment"] for g in grades} == set(list(Course.open(course).term.assigned))


def test_nbgrader_s_own_export_writes_what_make_export_writes(course, tmp_path):
    """`nbgrader export` with the course's nbgrader_config.py: NbgraderCsv reads the sheet from
    the gradebook nbgrader opened, and writes grades.csv as `make export` does."""
    from nbgrader.apps import ExportApp

    write_files(course)
    nbgrader = nbgrader_apps.api(Layout(course))
    config = deepcopy(nbgrader.config)
    config.ExportPlugin.to, config.ExportApp.log_level = str(tmp_path / "grades.csv"), "WARN"
    app = ExportApp(config=config)
    app.coursedir = nbgrader.coursedir
    app.start()
    made = (course / "reports" / "grades.csv").read_text(encoding="utf-8")
    assert (tmp_path / "grades.csv").read_text(encoding="utf-8") == made


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
    import_roster(Course.open(copy), export)
    write_files(copy)
    lines = list(csv.reader((copy / "reports" / "canvas_import.csv").open()))
    rows = {line[3]: line for line in lines[2:]}
    assert rows["alice"][:6] == ["Liddell, Alice", "12345", "S-1", "alice", "Lab A", "4"]
    assert rows["bob"][:5] == ["Jones, Bob", "23456", "S-2", "bob", "Lab B"]
    assert rows["dave"][:5] == ["dave", "", "", "dave", ""]  # not on it: our id, where chosen


def test_canvas_assignment_ids_name_the_columns(course, tmp_path):
    ids = Layout(course).lms_ids
    ids.write_text(json.dumps({NB: 9001}))
    try:
        write_files(course)
        header = next(csv.reader((course / "reports" / "canvas_import.csv").open()))
    finally:
        ids.unlink()
        write_files(course)
    assert header[5:7] == [f"{NB} (9001)", "02_causal_mask"]


def test_a_late_notebook_says_so_and_loses_its_penalty_points(course, monkeypatch, tmp_path):
    late = deadlines.Lateness({("alice", NB): (3600.0, 1.0)})
    monkeypatch.setattr(gradesheet.deadlines, "lateness", lambda gb: late)
    found = read_sheet(course)
    alice = {row.id: row for row in found.rows}["alice"]
    assert (alice.marks[NB].score, alice.marks[NB].status) == (3.0, "late")
    assert alice.total() == 3.0
    # The Canvas file says its scores are net of the penalty, so Canvas must take none.
    _, said = canvas.write_import(Course.open(course), found, tmp_path / "canvas.csv")
    lines = list(csv.reader((tmp_path / "canvas.csv").open()))
    assert said == lines[1][4] == canvas.PENALTIES_TAKEN
    assert "turn off Canvas's automatic late deduction" in said
    assert {line[2]: line[5] for line in lines[2:]}["alice"] == "3"


def test_a_handed_in_notebook_not_yet_graded_is_pending(course):
    hand_in(course, "eve", perfect(course, NB))
    try:
        eve = {row.id: row for row in read_sheet(course).rows}["eve"]
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
    done = grader_cli(course, *args)
    assert done.returncode == 0, done.stderr
    report = json.loads((course / "reports" / "autograde.json").read_text())
    after = {(o["student"], o["status"]) for o in report["outcomes"]}
    assert after == before - {("bob", "graded")} | {("bob", "unchanged")}  # nothing ran again
    assert len(after) == len(before)
    table = (course / "reports" / "autograde.md").read_text()
    # Each by the id, and the roster's name beside it where it has one (dave is on none).
    named = ("alice (Alice Liddell)", "bob (Bob Jones)", "carol (Carol Ng)", "dave")
    assert all(f"| {who} |" in table for who in named)


# Notebook 04 handed in by three: its checks pass (a stand-in job, as a run of the solution
# leaves them), its written prediction (1 of its 3 points) waits for a hand grade. ada and ben
# are on the roster with their names; cy is not.
WRITTEN, PREDICTION = "04_training", "ex4_prediction"
WAITING_ROSTER = "id,first_name,last_name,email\nada,Ada,Lovelace,\nben,Ben,Okri,\n"
NEW_YORK = 'timezone = "America/New_York"\n\n[due]\n04_training = 2026-11-20T23:59:00+00:00\n'


@pytest.fixture(scope="module")
def waiting(released, tmp_path_factory) -> Path:
    """The class autograded: every written answer still "Needs Manual Grade". ada handed in on
    15 November 2026 at 13:00 UTC; the course's zone is New York's."""
    course = Path(shutil.copytree(released, tmp_path_factory.mktemp("waiting") / "course"))
    (course / "course.toml").write_text(NEW_YORK)
    (course.parent / "students.csv").write_text(WAITING_ROSTER)
    import_roster(Course.open(course), course.parent / "students.csv")
    for student in ("ada", "ben", "cy"):
        nb = perfect(course, WRITTEN)
        cell_of(nb, PREDICTION)["source"] = "The LSTM: fewer parameters suit this small budget."
        write(course / "submitted" / student / WRITTEN / f"{WRITTEN}.ipynb", nb)
    handed_in = datetime(2026, 11, 15, 13, 0, tzinfo=UTC)
    deadlines.write_timestamp(Course.open(course), "ada", WRITTEN, handed_in)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        done = grading.autograde(Course.open(course), OPTIONS)
    assert {(o.student, o.score, o.needs_manual) for o in done} == {
        ("ada", 2, 1),
        ("ben", 2, 1),
        ("cy", 2, 1),
    }
    return course


def grade_by_hand(course: Path, *students: str) -> None:
    """The formgrader's save of a point for the prediction, through nbgrader's gradebook API."""
    from nbgrader.api import Gradebook

    with Gradebook(Layout(course).db_url) as gb:
        for student in students:
            grade = gb.find_grade(PREDICTION, WRITTEN, WRITTEN, student)
            grade.manual_score, grade.needs_manual_grade = 1, False
        gb.db.commit()


def cli(course: Path, *args: str) -> str:
    done = grader_cli(course, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def written_column(course: Path) -> tuple[str, dict[str, str]]:
    """The Canvas file's note (the Points Possible row's Section cell) and 04's cell per student."""
    lines = list(csv.reader((course / "reports" / "canvas_import.csv").open(encoding="utf-8")))
    column = lines[0].index(WRITTEN)
    return lines[1][4], {line[2]: line[column] for line in lines[2:]}


def grades_csv(course: Path) -> dict[str, dict]:
    rows = csv.DictReader((course / "reports" / "grades.csv").open(encoding="utf-8"))
    return {r["student_id"]: r for r in rows if r["assignment"] == WRITTEN}


def waiting_for(said: str) -> list[list[str]]:
    """Whose notebook 04 waits for a hand grade, as the terminal names them (a line of it)."""
    lines = [line for line in said.splitlines() if line.startswith(f"  {WRITTEN}: ")]
    return [line.partition(": ")[2].split(", ") for line in lines]


def scores(page: str) -> list[str]:
    """Every score a feedback page shows ('2.0 / 3.0'): the notebook's first, then its cells'."""
    return re.findall(r"\(Score: ([^)]*)\)", page)


def test_an_answer_still_to_grade_by_hand_leaves_as_no_number_and_its_students_named(waiting):
    said = cli(waiting, "export")
    assert (
        "3 written answers still need a hand grade, in 3 notebooks (grade them in "
        "`make formgrader`, then run this again):\n"
        "  04_training: ada (Ada Lovelace), ben (Ben Okri), cy\n"
    ) in said
    assert said.count("still need") == 1  # one summary, not one per file
    note, cells = written_column(waiting)
    assert cells == {"ada": "", "ben": "", "cy": ""}  # never the partial 2 of 3
    assert note == f"{canvas.NO_PENALTIES}; needs hand grading: 3 notebooks left empty"
    rows = sheet(waiting)
    assert {(r[f"{WRITTEN}_score"], r[f"{WRITTEN}_status"], r["total"]) for r in rows.values()} == {
        ("", "needs hand grading", "")
    }
    nbgrader_rows = grades_csv(waiting)
    assert {(r["raw_score"], r["score"], r["status"]) for r in nbgrader_rows.values()} == {
        ("", "", "needs hand grading")
    }
    # The autograde report names them too, beside the roster's names.
    table = (waiting / "reports" / "autograde.md").read_text(encoding="utf-8")
    assert all(f"| {who} | " in table for who in ("ada (Ada Lovelace)", "cy"))


def test_partial_writes_the_partial_score_and_says_so(waiting):
    said = cli(waiting, "export", "--partial")
    assert "3 written answers" in said and len(waiting_for(said)[0]) == 3
    assert (
        f"--partial: their scores are written as they stand, marked '{SheetStatus.PARTIAL}'" in said
    )
    note, cells = written_column(waiting)
    assert cells == {"ada": "2", "ben": "2", "cy": "2"}
    assert note.endswith("partial scores: 3 notebooks with written answers not graded by hand")
    ada = sheet(waiting)["ada"]
    assert (ada[f"{WRITTEN}_score"], ada[f"{WRITTEN}_status"], ada["total"]) == (
        "2",
        SheetStatus.PARTIAL,
        "2",
    )
    row = grades_csv(waiting)["ada"]
    assert (row["score"], row["status"]) == ("2", SheetStatus.PARTIAL)
    cli(waiting, "export")  # back as the other tests expect it
    assert written_column(waiting)[1]["ada"] == ""


def test_a_hand_grade_entered_makes_the_number(waiting, tmp_path):
    course = Path(shutil.copytree(waiting, tmp_path / "course"))
    grade_by_hand(course, "ada", "ben")
    said = cli(course, "export")
    assert said.count("still needs") == 1 and waiting_for(said) == [["cy"]]
    note, cells = written_column(course)
    assert cells == {"ada": "3", "ben": "3", "cy": ""}
    assert f"{SheetStatus.NEEDS}: 1 notebook " in note
    rows = sheet(course)
    assert (rows["ada"][f"{WRITTEN}_score"], rows["ada"][f"{WRITTEN}_status"]) == ("3", "graded")
    grade_by_hand(course, "cy")
    said = cli(course, "export")
    assert "hand grade" not in said
    assert written_column(course) == (canvas.NO_PENALTIES, {"ada": "3", "ben": "3", "cy": "3"})
    # ada hands in a changed answer: nbgrader keeps her point and asks for a second look.
    from nbgrader.api import Gradebook

    with Gradebook(Layout(course).db_url) as gb:
        gb.find_grade(PREDICTION, WRITTEN, WRITTEN, "ada").needs_manual_grade = True
        gb.db.commit()
    assert waiting_for(cli(course, "export")) == [["ada (Ada Lovelace)"]]
    assert written_column(course)[1] == {"ada": "", "ben": "3", "cy": "3"}


def feedback_pages(course: Path) -> dict[str, str]:
    bundle = course / "reports" / "feedback_bundles" / f"{WRITTEN}.zip"
    with zipfile.ZipFile(bundle) as archive:
        return {name.split("_")[0]: archive.read(name).decode() for name in archive.namelist()}


def test_feedback_shows_no_score_until_the_answer_is_graded_by_hand(waiting, tmp_path):
    course = Path(shutil.copytree(waiting, tmp_path / "course"))
    grade_by_hand(course, "ada")
    said = cli(course, "feedback")
    assert "2 written answers" in said and waiting_for(said) == [["ben (Ben Okri)", "cy"]]
    pages = feedback_pages(course)
    assert scores(pages["ada"])[0] == "3.0 / 3.0" and 'id="hand-grading"' not in pages["ada"]
    ben = pages["ben"]
    assert "Not graded yet.</strong> Your written answer (ex4_prediction) has not been" in ben
    assert f"<h4>{WRITTEN} (Score: {SheetStatus.NEEDS} / 3.0)</h4>" in ben
    assert "Written response</a> (Score: " + f"{SheetStatus.NEEDS} / 1.0)" in ben
    assert "2.0 / 3.0" not in scores(ben) and "0.0 / 1.0" not in scores(ben)
    assert "2.0 / 2.0" in scores(ben)  # the checks' own scores are final
    said = cli(course, "feedback", "--partial")
    assert f"marked '{SheetStatus.PARTIAL}'" in said
    ben = feedback_pages(course)["ben"]
    assert "Partial score.</strong>" in ben and "the score below is partial" in ben
    assert scores(ben)[0] == "2.0 / 3.0"


def test_grades_csv_times_are_in_the_course_zone_with_their_offset(waiting):
    cli(waiting, "export")
    ada = grades_csv(waiting)["ada"]
    assert ada["timestamp"] == "2026-11-15T08:00:00-05:00"  # 13:00 UTC, in New York
    assert ada["duedate"] == "2026-11-20T18:59:00-05:00"  # course.toml's 23:59 UTC
    assert grades_csv(waiting)["ben"]["timestamp"] == ""  # no time handed in was recorded


STRETCH = "06_stretch (extra credit) (7006)"  # Canvas's head of a column of ours: its name kept


def test_the_canvas_import_heads_its_columns_as_canvas_exported_them(waiting, tmp_path):
    """Canvas's export after a first import: our columns with Canvas's ids ("01_attention
    (7001)"), one of Canvas's own assignments and its score columns, which are not ours."""
    course = Path(shutil.copytree(waiting, tmp_path / "course"))
    export = tmp_path / "canvas_export.csv"
    export.write_text(
        f"Student,ID,SIS User ID,SIS Login ID,Section,01_attention (7001),Quiz 1 (8000),{STRETCH},"
        "Current Score,Final Score\n"
        "    Points Possible,,,,,4,10,0,(read only),(read only)\n"
        '"Lovelace, Ada",12345,ada,ada,Lab A,4,9,,90,90\n'
    )
    said = cli(course, "export", "--canvas-export", str(export))
    assert (
        "Canvas's columns, kept for canvas_import.csv: 01_attention (7001), "
        "06_stretch (extra credit) (7006)\n"
    ) in said
    header = next(csv.reader((course / "reports" / "canvas_import.csv").open()))
    kept = ["01_attention (7001)", "02_causal_mask", "03_positions", "04_training", "05_heads"]
    assert header[5:] == [*kept, STRETCH]
    cli(course, "export")  # kept for the exports after it
    assert next(csv.reader((course / "reports" / "canvas_import.csv").open())) == header
    export.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (8000)\n")
    done = grader_cli(course, "export", "--canvas-export", str(export))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "no column of Canvas's export is one of our notebooks" in done.stderr
