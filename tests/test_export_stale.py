"""Nothing exports stale: after a release that changes a check's points, a collect that brings a
newer file, or a course.toml that moves lateness, `export` refuses (gradesheet.Stale, one line,
a non-zero exit, nothing written) until `make autograde` has run, and then exports what it
graded. A class of two handed in notebook 01 through collect, each with a time (ann on the 16th,
bea on the 14th of January 2027); jobs are stand-ins (conftest.executing: every check passes);
the errata is a release from a copy of solutions/ with Exercise 0's check worth 2 points, not 1.
"""

from __future__ import annotations

import csv
import json
import shutil
from copy import deepcopy
from pathlib import Path

import pytest
from conftest import executing, grader_cli
from paths import ROOT

from grader.course import Layout
from grader.engine import autograde as engine
from grader.engine.options import EngineOptions
from grader.term import gradesheet, nbgrader_apps
from grader.term.course_open import Course
from grader.term.export import export
from grader.term.nbgrader_apps import gradebook
from grader.term.scores import autograde
from maintainer import notebook_build
from maintainer.fabricated_class import WRONG_ATTENTION, perfect, with_attention, write
from maintainer.student_package import wheel_name

NB = "01_attention"
HANDED_IN = {"ann": "2027-01-16T10:00", "bea": "2027-01-14T10:00"}
TOML = 'timezone = "UTC"\n'
LATE = '[due]\n01_attention = 2027-01-15T23:59:00+00:00\n\n[late]\npenalty = "percent_per_day"\n'
LATE += "percent_per_day = 25\n"


def collect(course: Path, student: str, nb: dict, at: str) -> None:
    path = course.parent / f"{student}_{NB}.ipynb"
    write(path, nb)
    done = grader_cli(course, "collect", str(path), "--student", student, "--submitted-at", at)
    assert done.returncode == 0, done.stderr


def grade(course: Path) -> list:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        return autograde(Course.open(course), EngineOptions(sandboxed=False, progress=False))


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory) -> Path:
    course = Path(shutil.copytree(released, tmp_path_factory.mktemp("stale") / "course"))
    Layout(course).settings.write_text(TOML, encoding="utf-8")
    for student, at in HANDED_IN.items():
        collect(course, student, perfect(course, NB), at)
    assert {(o.student, o.status, o.score) for o in grade(course)} == {
        ("ann", "graded", 4),
        ("bea", "graded", 4),
    }
    return course


@pytest.fixture
def course(graded, tmp_path) -> Path:
    return Path(shutil.copytree(graded, tmp_path / "class" / "course"))


def changed(course: Path) -> list[gradesheet.Changed]:
    """What export refuses for, as the exception carries it."""
    opened = Course.open(course)
    with pytest.raises(gradesheet.Stale) as refused:
        export(opened, opened.layout.report("grades.csv"))
    assert refused.value.code == gradesheet.Stale.code == "export.stale"
    return refused.value.changed


def reports(course: Path) -> dict[str, bytes]:
    folder = Layout(course).step("reports")
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def refused_by_the_command(course: Path) -> str:
    """`python -m grader export`: a non-zero exit, one line, nothing written; the line."""
    before = reports(course)
    canvas = course.parent / "canvas_export.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section,01_attention (7001)\n")
    done = grader_cli(course, "export", "--canvas-export", str(canvas))
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert reports(course) == before
    assert not Layout(course).lms_ids.exists()
    return done.stderr


def sheet(course: Path) -> dict[str, dict]:
    with Layout(course).report("gradesheet.csv").open(encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def exported(course: Path) -> None:
    done = grader_cli(course, "export")
    assert done.returncode == 0, done.stderr


@pytest.fixture
def points_errata(tmp_path, monkeypatch) -> None:
    """solutions/ as the checkout has it, Exercise 0's check of 01 worth 2 points, not 1."""
    solutions = Path(shutil.copytree(ROOT / "solutions", tmp_path / "solutions"))
    path = solutions / f"{NB}.py"
    text = path.read_text(encoding="utf-8")
    old = '"grade_id": "ex0_check", "locked": true, "points": 1,'
    assert text.count(old) == 1
    path.write_text(text.replace(old, old.replace('"points": 1', '"points": 2')), "utf-8")
    monkeypatch.setattr(notebook_build, "SOLUTIONS", solutions)
    # The student wheel published beside the notebooks is not what these tests are about.
    monkeypatch.setattr(notebook_build, "build_wheel", _wheel)


def _wheel(folder: Path) -> Path:
    wheel = folder / wheel_name()
    wheel.write_bytes(b"a stand-in")
    return wheel


def test_a_points_errata_is_refused_until_autograde_then_exports_the_new_maximum(
    course, points_errata
):
    exported(course)  # as graded: 4 of 4 each
    notebook_build.build(
        None, course, only=[NB], options=EngineOptions(progress=False, sandboxed=False)
    )
    assert Course.open(course).term.points[NB] == 5
    assert changed(course) == [
        gradesheet.Changed("ann", NB, gradesheet.REGRADE),
        gradesheet.Changed("bea", NB, gradesheet.REGRADE),
    ]
    said = refused_by_the_command(course)
    assert said.startswith("grader export: run autograde first: 2 submissions changed since it ")
    assert {(o.student, o.status, o.score) for o in grade(course)} == {
        ("ann", "graded", 5),
        ("bea", "graded", 5),
    }
    exported(course)
    rows = sheet(course)
    assert [(row[f"{NB}_score"], row[f"{NB}_status"]) for row in rows.values()] == [
        ("5", "graded")
    ] * 2
    lines = list(csv.reader(Layout(course).report("canvas_import.csv").open(encoding="utf-8")))
    column = lines[0].index(NB)
    assert (lines[1][column], lines[2][column], lines[3][column]) == ("5", "5", "5")
    grades = csv.DictReader(Layout(course).report("grades.csv").open(encoding="utf-8"))
    mine = [(g["score"], g["max_score"], g["status"]) for g in grades if g["assignment"] == NB]
    assert mine == [("5", "5", "graded")] * 2


def test_a_resubmission_collected_is_refused_until_autograde(course):
    collect(course, "ann", with_attention(course, WRONG_ATTENTION), "2027-01-17T12:00")
    assert changed(course) == [gradesheet.Changed("ann", NB, gradesheet.REGRADE)]
    refused_by_the_command(course)
    graded = {o.student: o.status for o in grade(course)}
    assert graded == {"ann": "graded", "bea": "unchanged"}
    exported(course)
    assert sheet(course)["ann"][f"{NB}_status"] == "graded"


def test_nbgrader_s_own_export_refuses_as_make_export_does(course, tmp_path):
    """`nbgrader export` with the course's nbgrader_config.py (gradesheet.NbgraderCsv)."""
    from nbgrader.apps import ExportApp

    collect(course, "bea", with_attention(course, WRONG_ATTENTION), "2027-01-17T12:00")
    nbgrader = nbgrader_apps.api(Layout(course))
    config = deepcopy(nbgrader.config)
    config.ExportPlugin.to, config.ExportApp.log_level = str(tmp_path / "grades.csv"), "WARN"
    app = ExportApp(config=config)
    app.coursedir = nbgrader.coursedir
    with pytest.raises(gradesheet.Stale) as refused:
        app.start()
    assert refused.value.changed == [gradesheet.Changed("bea", NB, gradesheet.REGRADE)]
    assert not (tmp_path / "grades.csv").exists()


def test_a_file_that_cannot_be_graded_replaced_by_one_that_can_is_refused(course):
    """The last autograde quarantined ann's file; a good one collected since is not a
    'quarantined' to export."""
    broken = Layout(course).notebook("submitted", NB, "ann")
    broken.write_text(json.dumps(perfect(course, NB))[:3000], encoding="utf-8")
    assert {o.student: o.status for o in grade(course)}["ann"] == "quarantined"
    exported(course)
    collect(course, "ann", with_attention(course, WRONG_ATTENTION), "2027-01-17T12:00")
    assert changed(course) == [gradesheet.Changed("ann", NB, gradesheet.REGRADE)]
    refused_by_the_command(course)
    assert {o.student: o.status for o in grade(course)}["ann"] == "graded"
    exported(course)


def test_a_graded_file_replaced_by_one_that_cannot_be_graded_is_refused(course):
    """Not the old score of the file graded last, nor, before autograde, any status of it."""
    broken = Layout(course).notebook("submitted", NB, "bea")
    broken.write_text(json.dumps(perfect(course, NB))[:3000], encoding="utf-8")
    assert changed(course) == [gradesheet.Changed("bea", NB, gradesheet.REGRADE)]
    assert {o.student: o.status for o in grade(course)}["bea"] == "quarantined"
    exported(course)
    assert (sheet(course)["bea"][f"{NB}_score"], sheet(course)["bea"][f"{NB}_status"]) == (
        "",
        "quarantined",
    )


def test_a_due_date_or_an_extension_that_moves_lateness_is_refused_until_autograde(course):
    settings = Layout(course).settings
    settings.write_text(TOML + LATE, encoding="utf-8")
    # ann's notebook is late now (by 10 hours: 25 %); bea's, on time, was and is not.
    assert changed(course) == [gradesheet.Changed("ann", NB, gradesheet.LATENESS)]
    refused_by_the_command(course)
    assert {o.status for o in grade(course)} == {"unchanged"}  # nothing executed again
    exported(course)
    assert (sheet(course)["ann"][f"{NB}_score"], sheet(course)["ann"][f"{NB}_status"]) == (
        "3",
        "late",
    )
    settings.write_text(TOML + LATE + "\n[extensions.ann]\n01_attention = 1\n", encoding="utf-8")
    assert changed(course) == [gradesheet.Changed("ann", NB, gradesheet.LATENESS)]
    grade(course)
    exported(course)
    assert (sheet(course)["ann"][f"{NB}_score"], sheet(course)["ann"][f"{NB}_status"]) == (
        "4",
        "graded",
    )


def test_nothing_changed_since_autograde_exports_and_reads_nothing_again(course, monkeypatch):
    """The graded class as it stands: no submission is prepared again to see it (their files
    and release are older than their last grading)."""
    monkeypatch.setattr(engine, "prepare", lambda *_: pytest.fail("prepared again"))
    opened = Course.open(course)
    with gradebook(opened) as gb:
        assert gradesheet.since_autograde(opened, gb) == []
    exported(course)
