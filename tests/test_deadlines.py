"""Due dates: collect records when each notebook was handed in where a source records it (here a
course whose zips are stamped with the hand-in time), autograde has nbgrader take the late
penalty course.toml asks for, and an extension makes a late notebook on time; a Canvas zip,
which records no hand-in time, costs no one a point here. The jobs stand in for runs of the
solution: lateness is settled on saved scores (conftest.executing)."""

from __future__ import annotations

import json
import struct
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import executing
from nbgrader.api import Gradebook

from grader.course import Layout
from grader.engine import autograde as engine
from grader.engine.options import EngineOptions
from grader.term import collect, collected, deadlines
from grader.term.course_open import Course
from grader.term.nbgrader_apps import gradebook
from grader.term.scores import autograde
from grader.term.settings import SettingError
from maintainer.fabricated_class import canvas_name, canvas_zip, release
from maintainer.notebook_build import SOLUTION_MARKERS

NAME = "01_attention"
TWO_TRUSTED = EngineOptions(workers=2, sandboxed=False, progress=False)  # stand-in jobs
DUE = datetime(2027, 1, 15, 23, 59)  # UTC, as the gradebook keeps it
LATE = (2027, 1, 17, 1, 0, 0)  # 1 d 1 h 1 min late: two started days
COURSE_TOML = """timezone = "UTC"

[due]
01_attention = 2027-01-15T23:59:00+00:00

[extensions.ext_days]
01_attention = 2

[extensions.EXT_DATE]   # ids are matched whatever their case
01_attention = "2027-01-17T02:00:00+01:00"

[late]
penalty = "percent_per_day"
percent_per_day = 25

[collect]
stamped = true    # this course's submission server stamps each entry with its hand-in time
"""
# student -> when the zip says they handed in
HANDED_IN = {
    "ontime": (2027, 1, 15, 20, 0, 0),
    "late": LATE,
    "ext_days": LATE,
    "ext_date": LATE,
}


def lateness(course: Path, student: str) -> tuple[float, float]:
    """(seconds late, points taken) of the student's notebook, as the gradebook holds them."""
    opened = Course.open(course)
    with gradebook(opened) as gb:
        return deadlines.lateness(gb)[student, NAME]


def perfect(course: Path) -> str:
    """The release with every exercise filled in with its solution: 4 points of 4."""
    release = json.loads((course / "release" / NAME / f"{NAME}.ipynb").read_text())
    source = json.loads((course / "source" / NAME / f"{NAME}.ipynb").read_text())
    solutions = {
        c["metadata"]["nbgrader"]["grade_id"]: SOLUTION_MARKERS.sub("", "".join(c["source"]))
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    for cell in release["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in solutions:
            cell["source"] = solutions[grade_id]
    return json.dumps(release)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    release(course)
    (course / "course.toml").write_text(COURSE_TOML)
    return course


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    downloads = tmp_path_factory.mktemp("downloads") / "canvas.zip"
    with zipfile.ZipFile(downloads, "w") as archive:
        for student, when in HANDED_IN.items():
            entry = zipfile.ZipInfo(f"{student}_{NAME}.ipynb", date_time=when)
            archive.writestr(entry, perfect(course))
    collect.collect(Course.open(course), downloads)
    # Our own solutions, every check passing: the jobs stand in for their runs (lateness is
    # settled on saved scores, whatever produced them).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        outcomes = autograde(Course.open(course), TWO_TRUSTED)
    return {o.student: o for o in outcomes}


def test_a_stamped_course_s_zip_entry_time_is_timestamp_txt(course, graded):
    for student, when in HANDED_IN.items():
        stamp = course / "submitted" / student / NAME / "timestamp.txt"
        expected = datetime(*when).strftime("%Y-%m-%d %H:%M:%S.000000 UTC")
        assert stamp.read_text().strip() == expected


def test_a_late_notebook_gets_the_penalty_in_the_gradebook(course, graded):
    assert graded["late"].status == "graded" and graded["late"].score == 4
    assert graded["late"].late_penalty == 2  # two started days at 25 %
    assert graded["late"].seconds_late == 90060
    assert lateness(course, "late") == (90060.0, 2.0)
    assert lateness(course, "ontime") == (0.0, 0.0)
    assert lateness(course, "nobody") == (0.0, 0.0)
    with Gradebook(Layout(course).db_url) as gb:
        assert gb.find_assignment(NAME).duedate == DUE
        late = gb.find_submission(NAME, "late")
        assert late.timestamp == datetime(*LATE)
        assert late.notebooks[0].late_submission_penalty == 2
        assert late.score - late.late_submission_penalty == 2  # what nbgrader's export says
    text = (course / "reports" / "autograde.md").read_text()
    # One maximum for everyone: the release's points of the core notebooks, 06 being extra.
    term = Course.open(course).term
    core = sum(nb.out_of for nb in term.counted())
    others = " | –" * (len(term.assigned) - 1)
    assert f"| late | 4 / 4 late −2{others} | 2 / {core:g} |" in text
    assert f"| ontime | 4 / 4{others} | 4 / {core:g} |" in text
    late = text.split("### Late", 1)[1].split("###")[0]
    assert "- late / 01_attention: handed in 1 d 1 h late (course.toml): 2 of 4 points" in late


def test_an_extension_makes_it_on_time(course, graded):
    for student in ("ext_days", "ext_date"):
        assert graded[student].score == 4
        assert graded[student].late_penalty == 0 and graded[student].seconds_late == 0
        assert lateness(course, student) == (0.0, 0.0)
    with Gradebook(Layout(course).db_url) as gb:
        assert gb.find_submission(NAME, "ext_days").extension == timedelta(days=2)
        # 02:00 at +01:00 is 01:00 UTC on the 17th: handed in at exactly the new due date
        assert gb.find_submission(NAME, "ext_date").extension == timedelta(
            days=1, hours=1, minutes=1
        )
        assert gb.find_submission(NAME, "ontime").extension is None


def test_a_changed_policy_applies_without_grading_again(course, graded):
    toml = course / "course.toml"
    try:
        toml.write_text(COURSE_TOML.replace('"percent_per_day"', '"zero"'))
        rerun = autograde(Course.open(course), EngineOptions(sandboxed=False, progress=False))
        again = {o.student: o for o in rerun}
    finally:
        toml.write_text(COURSE_TOML)
    assert again["late"].status == "unchanged"  # nothing ran again
    assert again["late"].late_penalty == 4 and again["ontime"].late_penalty == 0
    assert lateness(course, "late") == (90060.0, 4.0)


def test_the_course_says_which_notebooks_are_assigned_and_extra(course, tmp_path):
    copy = tmp_path / "course"
    (copy / "release").mkdir(parents=True)
    for name in Layout(course).assignments():
        (copy / "release" / name).symlink_to(course / "release" / name)
    # By default every released notebook, the optional challenge as extra credit.
    term = Course.open(copy).term
    assert list(term.assigned) == Layout(course).assignments()
    assert term.extra_credit == ("06_stretch",)
    (copy / "course.toml").write_text(
        'assigned = ["04_training", "01_attention", "06_stretch"]\nextra_credit = []\n\n'
        "[due]\n04_training = 2027-01-22T23:59:00+00:00\n"
    )
    term = Course.open(copy).term
    assert term.assigned == ("01_attention", "04_training", "06_stretch")
    assert term.extra_credit == ()  # counted as core, where the course says so
    before, after = datetime(2027, 1, 20, tzinfo=UTC), datetime(2027, 1, 23, tzinfo=UTC)
    assert [nb.due for nb in term.counted(before)] == [True, False, True]
    assert [nb.due for nb in term.counted(after)] == [True, True, True]
    assert [(nb.name, nb.out_of) for nb in term.counted()] == [
        (name, Course.open(course).term.points[name])
        for name in ("01_attention", "04_training", "06_stretch")
    ]
    (copy / "course.toml").write_text('assigned = ["01_attention"]\nextra_credit = ["05_head"]\n')
    with pytest.raises(SettingError) as refused:
        Course.open(copy)
    assert (refused.value.key, refused.value.value) == ("extra_credit", ["05_head"])


def test_the_zip_extended_timestamp_is_read_as_utc():
    moment = datetime(2027, 1, 15, 23, 0, tzinfo=UTC)
    extra = struct.pack("<HHBi", 0x5455, 5, 1, int(moment.timestamp()))
    info = zipfile.ZipInfo("a.ipynb", date_time=(1999, 1, 1, 0, 0, 0))  # local, ignored
    info.extra = extra
    assert collect._zip_time(info) == moment.timestamp()


def test_percent_per_day_counts_started_days_and_stops_at_the_score():
    plugin = deadlines.PercentPerDay(percent_per_day=30)
    assert plugin.late_submission_penalty("s", 10, 0) is None
    assert plugin.late_submission_penalty("s", 10, 1) == 3
    assert plugin.late_submission_penalty("s", 10, 86400) == 3
    assert plugin.late_submission_penalty("s", 10, 86401) == 6
    assert plugin.late_submission_penalty("s", 10, 10 * 86400) == 10


def test_a_canvas_zip_as_canvas_builds_it_costs_no_one_points(tmp_path):
    """Every entry of Canvas's zip carries the moment it was built, here ten days after the due
    date: no hand-in time, so no penalty here. Canvas's LATE on Bob's file is kept; Canvas's own
    late policy takes its deduction when the scores are imported."""
    course = tmp_path / "course"
    release(course)
    (course / "course.toml").write_text(COURSE_TOML.split("[collect]")[0])  # not stamped
    files = [
        (canvas_name("Archer, Alice", 111, 9001, f"{NAME}.ipynb"), perfect(course)),
        (canvas_name("Stone, Bob", 222, 9002, f"{NAME}.ipynb", late=True), perfect(course)),
    ]
    built = canvas_zip(tmp_path / "canvas.zip", files, datetime(2027, 1, 25, 9))
    collect.collect(Course.open(course), built)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        outcomes = autograde(Course.open(course), TWO_TRUSTED)
    assert sorted((o.student, o.score, o.late_penalty, o.seconds_late) for o in outcomes) == [
        ("archeralice", 4, 0, 0),
        ("stonebob", 4, 0, 0),
    ]
    assert lateness(course, "stonebob") == (0.0, 0.0)
    with Gradebook(Layout(course).db_url) as gb:
        assert gb.find_submission(NAME, "stonebob").timestamp is None
    assert collected.lms_late(Course.open(course), "stonebob", NAME) is True
    assert collected.lms_late(Course.open(course), "archeralice", NAME) is False
