"""The roster: loading it, and collect filing LMS downloads under the students on it (or saying
why not), on a course released into a temporary folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from paths import ROOT

from grader.__main__ import main
from grader.course import GradingError, Layout
from grader.term import collect, collected
from grader.term.course_open import Course
from grader.term.roster import import_roster, read_csv

pytestmark = pytest.mark.heavy(order=16)
ROSTER = """id,first_name,last_name,email,lms_user_id
alice,Alice,Archer,alice@example.edu,
jdoe05,Jane,Doe,jdoe05@example.edu,
jdoe0,Jim,Doe,,
smithj,John,Smith,john@example.edu,12345
mweber,Maria,Weber,,
mzoe,Zoë,Müller,,
carol,Carol,Reed,,
bob,Bob,Stone,,
"""
# file name -> (student, notebook), or None where collect must report it and file nothing
DOWNLOADS = {
    "Alice_01_attention.ipynb": ("alice", "01_attention"),
    "alice_Copy of 02_causal_mask (1).ipynb": ("alice", "02_causal_mask"),
    "jdoe05_06_stretch.ipynb": ("jdoe05", "06_stretch"),
    # Canvas: the user id names John Smith, whatever the login says
    "jsmith_LATE_12345_67890_01_attention-1.ipynb": ("smithj", "01_attention"),
    # Canvas: no user id on the roster for her, so the login ("Weber, Maria") does
    "webermaria_23456_78901_01_attention.ipynb": ("mweber", "01_attention"),
    "CAROL_34567_89012_01_attention.ipynb": ("carol", "01_attention"),
    # Moodle: the full name, in either order, accents and case aside
    "Zoe Müller_1234567_assignsubmission_file_01_attention.ipynb": ("mzoe", "01_attention"),
    "Bob Stone_7654321_assignsubmission_file_/01_attention.ipynb": ("bob", "01_attention"),
    # the course's own pattern: "LMS-<id>-<anything>"
    "LMS-jdoe0-week1-01_attention.ipynb": ("jdoe0", "01_attention"),
    # not on the roster: reported, never a new student
    "mallory_01_attention.ipynb": None,
    "nobodyhere_99999_11111_01_attention.ipynb": None,
    "Eve Intruder_555_assignsubmission_file_01_attention.ipynb": None,
}
PATTERN = r"^LMS-(?P<student>[^-]+)-"


@pytest.fixture
def course(released, tmp_path) -> Path:
    """A fresh copy of the released course for each test: no roster, no submissions."""
    return Path(shutil.copytree(released, tmp_path / "course"))


def downloads(course: Path, folder: Path, names=DOWNLOADS) -> Path:
    for name in names:
        # Any release notebook: the names say which notebook each one is.
        notebook = course / "release" / "01_attention" / "01_attention.ipynb"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, folder / name)
    return folder


def roster(course: Path, tmp_path: Path, text: str = ROSTER) -> None:
    path = tmp_path / "students.csv"
    path.write_text(text)
    main(["--course", str(course), "roster", str(path)])


def test_the_roster_goes_into_the_gradebook(course, tmp_path):
    roster(course, tmp_path)
    with Gradebook(Layout(course).db_url) as gb:
        students = {s.id: s for s in gb.students}
        assert sorted(students) == sorted(line.split(",")[0] for line in ROSTER.split()[1:])
        assert students["smithj"].lms_user_id == "12345"
        assert students["alice"].email == "alice@example.edu"
        assert students["alice"].lms_user_id is None  # an empty cell, as nbgrader imports it
    # Loaded again with a change: updated, not doubled.
    roster(course, tmp_path, ROSTER.replace("alice@example.edu", "alice@new.edu"))
    with Gradebook(Layout(course).db_url) as gb:
        assert gb.find_student("alice").email == "alice@new.edu"
        assert len(gb.students) == 8


def test_ids_that_differ_only_in_case_are_refused(course, tmp_path):
    path = tmp_path / "students.csv"
    path.write_text("id,first_name\nalice,A\nAlice,B\n")
    with pytest.raises(GradingError, match="'Alice' is 'alice' already"):
        import_roster(Course.open(course), path)
    path.write_text("first_name\nA\n")
    with pytest.raises(GradingError, match="not a roster: nbgrader's student CSV needs an `id`"):
        import_roster(Course.open(course), path)


# Canvas's gradebook export as it comes: the points row, a section, Canvas's test student, a
# score and a read-only column that are not the roster's business.
CANVAS_EXPORT = """Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (901),Current Score
    Points Possible,,,,,10,(read only)
"Smith, John",12345,S001,smithj,Lab A,8,80
"Archer, Alice",23456,S002,aarcher,Lab B,,
"Student, Test",99999,,,Lab A,,
"""
MOODLE_EXPORT = """First name,Surname,ID number,Institution,Department,Email address,Lab 1
Zoë,Müller,m-0042,,,zoe@example.edu,7
John,Smith,m-0043,,,john@example.edu,-
"""


def test_a_canvas_gradebook_export_is_a_roster(course, tmp_path):
    roster(course, tmp_path, CANVAS_EXPORT)
    with Gradebook(Layout(course).db_url) as gb:
        students = {s.id: (s.first_name, s.last_name, s.email, s.lms_user_id) for s in gb.students}
    # The points row and the test student are no one; SIS User ID is the id by default.
    assert students == {
        "S001": ("John", "Smith", None, "12345"),
        "S002": ("Alice", "Archer", None, "23456"),
    }
    kept = Layout(course).roster.read_text().splitlines()
    assert kept[0] == "id,first_name,last_name,email,lms_user_id,sis_user_id,sis_login_id,section"
    assert kept[1] == "S001,John,Smith,,12345,S001,smithj,Lab A"


def test_a_canvas_export_with_a_manually_posted_assignment_is_a_roster(course, tmp_path, capsys):
    """lib/gradebook_exporter.rb of canvas-lms: where any assignment's grades are posted by hand,
    a row before "Points Possible" has no Student and no ID, "Manual Posting" under it."""
    lines = CANVAS_EXPORT.splitlines(keepends=True)
    lines.insert(1, ",,,,,Manual Posting,\n")
    roster(course, tmp_path, "".join(lines))
    assert capsys.readouterr().out.startswith("2 students on the roster (2 new)")
    with Gradebook(Layout(course).db_url) as gb:
        assert sorted(s.id for s in gb.students) == ["S001", "S002"]


def test_a_canvas_export_after_our_import_keeps_canvas_assignment_ids(course, tmp_path):
    """Once canvas_import.csv went into Canvas, its export heads our columns "01_attention
    (7001)": the roster keeps those ids, so the next import updates the same assignments."""
    header, *rest = CANVAS_EXPORT.splitlines(keepends=True)
    header = header.replace("Lab 1 (901)", "01_attention (7001)")
    roster(course, tmp_path, "".join([header, *rest]))
    kept = json.loads(Layout(course).lms_ids.read_text())
    assert kept == {"01_attention": "01_attention (7001)"}


def test_a_canvas_export_before_our_import_keeps_no_ids(course, tmp_path):
    roster(course, tmp_path, CANVAS_EXPORT)  # "Lab 1 (901)" is not one of our notebooks
    assert not Layout(course).lms_ids.exists()


def test_the_course_settings_choose_the_id_column(course, tmp_path):
    (course / "course.toml").write_text('[roster]\nid = "SIS Login ID"\n')
    path = tmp_path / "canvas.csv"
    path.write_text(CANVAS_EXPORT)
    assert [row["id"] for row in read_csv(path, Course.open(course).term.roster_id)] == [
        "smithj",
        "aarcher",
    ]
    (course / "course.toml").write_text('[roster]\nid = "Integration ID"\n')
    with pytest.raises(GradingError, match="has no column 'Integration ID'.*\\[roster\\] id"):
        read_csv(path, Course.open(course).term.roster_id)
    path.write_text(CANVAS_EXPORT.replace("S002", ""))
    (course / "course.toml").unlink()
    with pytest.raises(GradingError, match="line 4 has no 'SIS User ID'"):
        read_csv(path, Course.open(course).term.roster_id)


def test_a_moodle_export_is_a_roster(course, tmp_path):
    path = tmp_path / "moodle.csv"
    path.write_text(MOODLE_EXPORT)
    rows = read_csv(path, Course.open(course).term.roster_id)
    assert [(r["id"], r["first_name"], r["last_name"], r["email"]) for r in rows] == [
        ("m-0042", "Zoë", "Müller", "zoe@example.edu"),
        ("m-0043", "John", "Smith", "john@example.edu"),
    ]
    (course / "course.toml").write_text('[roster]\nid = "Email address"\n')
    assert [r["id"] for r in read_csv(path, Course.open(course).term.roster_id)] == [
        "zoe@example.edu",
        "john@example.edu",
    ]


def test_roster_before_release_says_what_to_run_first(tmp_path):
    (tmp_path / "students.csv").write_text(ROSTER)
    command = [sys.executable, "-m", "grader", "--course", str(tmp_path / "course"), "roster"]
    done = subprocess.run(
        [*command, str(tmp_path / "students.csv")], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"grader roster: {tmp_path / 'course'} has no release yet: run `make release` first "
        "(it makes the course folder and its gradebook), then `make roster`"
    ]
    assert not (tmp_path / "course").exists()


def test_lms_names_go_to_the_students_on_the_roster(course, tmp_path, capsys):
    roster(course, tmp_path)
    (course / "course.toml").write_text(f"[collect]\npattern = '{PATTERN}'\n")
    folder = downloads(course, tmp_path / "downloads")
    main(["--course", str(course), "collect", str(folder)])
    found = {f.source: f for f in collect.collect(Course.open(course), folder)}
    for name, expected in DOWNLOADS.items():
        item = found[name]
        if expected is None:
            assert item.student is None and item.note.startswith("skipped:"), name
            assert "roster" in item.note
        else:
            assert (item.student, item.assignment) == expected, name
            submitted = course / "submitted" / expected[0] / expected[1]
            assert (submitted / f"{expected[1]}.ipynb").is_file()
            # No source here records a hand-in time (a folder, Canvas's and Moodle's names).
            assert not (submitted / "timestamp.txt").exists()
    # Nobody off the roster got a folder, and the gradebook has no one new.
    on_roster = {line.split(",")[0] for line in ROSTER.split()[1:]}
    assert {p.name for p in (course / "submitted").iterdir()} <= on_roster
    with Gradebook(Layout(course).db_url) as gb:
        assert {s.id for s in gb.students} == on_roster
    text = (course / "reports" / "collect.md").read_text()
    assert "'mallory_01_attention' does not start with an id on the roster" in text
    assert "Canvas name 'nobodyhere', user id 99999 is not on the roster" in text
    assert "Moodle name" in text and "'Eve Intruder'" in text  # the same words as Canvas's
    # John Smith's file carries Canvas's LATE: kept, for the instructor and for Canvas's policy.
    assert collected.lms_late(Course.open(course), "smithj", "01_attention") is True
    assert collected.lms_late(Course.open(course), "mweber", "01_attention") is False
    # jdoe05 handed in 06 only: missing from 01; Jane's twin jdoe0 is not confused with her.
    missing = collect.missing(Course.open(course))
    assert (missing["01_attention"], len(missing["06_stretch"]), missing[""]) == (["jdoe05"], 7, [])
    assert "(0): nobody\n" in text
    capsys.readouterr()


def test_the_pattern_option_and_an_ambiguous_name(course, tmp_path):
    roster(course, tmp_path, ROSTER + "smith2,John,Smith,,\n")
    names = ["LMS-alice-x-01_attention.ipynb", "smithjohn_42_43_01_attention.ipynb"]
    folder = downloads(course, tmp_path / "downloads", names)
    found = {f.source: f for f in collect.collect(Course.open(course), folder, pattern=PATTERN)}
    assert found[names[0]].student == "alice"
    assert found[names[1]].student is None
    assert "fits several on the roster (smith2, smithj)" in found[names[1]].note
    with pytest.raises(GradingError, match="no \\(\\?P<student>"):
        collect.collect(Course.open(course), folder, pattern=r"^LMS-(\w+)")


def test_without_a_roster_collect_works_as_before(course, tmp_path):
    names = ["Alice_01_attention.ipynb", "alice/02_causal_mask.ipynb", "jdoe05_06_stretch.ipynb"]
    names += ["mallory_01_attention.ipynb", "smithjohn_12345_67890_01_attention.ipynb"]
    names += ["Bob Stone_7654321_assignsubmission_file_01_attention.ipynb"]
    folder = downloads(course, tmp_path / "downloads", names)
    found = {
        f.source: (f.student, f.assignment) for f in collect.collect(Course.open(course), folder)
    }
    assert found == {
        "Alice_01_attention.ipynb": ("Alice", "01_attention"),  # case kept, as before
        "alice/02_causal_mask.ipynb": ("alice", "02_causal_mask"),
        "jdoe05_06_stretch.ipynb": ("jdoe05", "06_stretch"),  # was jdoe / 05_heads
        "mallory_01_attention.ipynb": ("mallory", "01_attention"),
        "smithjohn_12345_67890_01_attention.ipynb": ("smithjohn", "01_attention"),
        "Bob Stone_7654321_assignsubmission_file_01_attention.ipynb": ("Bob_Stone", "01_attention"),
    }
    assert collect.missing(Course.open(course)) == {}


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("jdoe05_06_stretch", ("06_stretch", "jdoe05")),
        ("jdoe05_06", ("06_stretch", "jdoe05")),
        ("student01_01_attention", ("01_attention", "student01")),
        ("colab_Copy of 01_attention (1)", ("01_attention", "colab")),
        ("bob 05 heads", ("05_heads", "bob")),
    ],
)
def test_an_id_ending_in_digits_is_never_split(stem, expected):
    names = ["01_attention", "02_causal_mask", "03_positions", "04_training", "05_heads"]
    names.append("06_stretch")
    assert collect._name_match(stem, names) == expected
