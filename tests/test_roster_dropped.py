"""A dropped student leaves cleanly: ann, bea and cyd on the first roster, bea on none after it.
`roster` names her (roster.dropped), export leaves her out of its three files and of what waits
for a hand grade (unless `--dropped keep`), collect no longer files under her, and nothing of
hers is deleted: her submissions, executed notebooks, kept files and grades stay. dee, who never
was on a roster (her notebook put in submitted/ by hand), is no dropped student. ann and bea
handed in 01 and 04 through collect, dee 04; jobs are stand-ins (conftest.executing), so 04's
written prediction waits for its hand grade."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from conftest import executing, grader_cli
from nbgrader.api import Gradebook

from grader.course import Layout
from grader.engine import autograde as engine
from grader.engine.options import EngineOptions
from grader.term import gradesheet, names, roster
from grader.term.course_open import Course
from grader.term.nbgrader_apps import gradebook
from grader.term.scores import autograde
from maintainer.fabricated_class import cell_of, perfect, write

CLASS = "id,first_name,last_name,email\nann,Ann,Lee,\nbea,Bea,Ray,\ncyd,Cyd,Ng,\n"
WITHOUT_BEA = "id,first_name,last_name,email\nann,Ann,Lee,\ncyd,Cyd,Ng,\n"
WRITTEN, PREDICTION = "04_training", "ex4_prediction"


def load(course: Path, text: str) -> str:
    """`python -m grader roster students.csv`; what it printed."""
    path = course.parent / "students.csv"
    path.write_text(text, encoding="utf-8")
    done = grader_cli(course, "roster", str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout


def written(course: Path) -> dict:
    nb = perfect(course, WRITTEN)
    cell_of(nb, PREDICTION)["source"] = "The LSTM: fewer parameters suit this small budget."
    return nb


@pytest.fixture(scope="module")
def left(released, tmp_path_factory) -> Path:
    """The class graded, then the roster loaded again without bea."""
    course = Path(shutil.copytree(released, tmp_path_factory.mktemp("dropped") / "course"))
    load(course, CLASS)
    downloads = course.parent / "downloads"
    for student in ("ann", "bea"):
        write(downloads / f"{student}_01_attention.ipynb", perfect(course, "01_attention"))
        write(downloads / f"{student}_{WRITTEN}.ipynb", written(course))
    assert grader_cli(course, "collect", str(downloads)).returncode == 0
    write(Layout(course).notebook("submitted", WRITTEN, "dee"), written(course))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        graded = autograde(Course.open(course), EngineOptions(progress=False, sandboxed=False))
    assert {(o.student, o.assignment) for o in graded} == {
        ("ann", "01_attention"),
        ("ann", WRITTEN),
        ("bea", "01_attention"),
        ("bea", WRITTEN),
        ("dee", WRITTEN),
    }
    said = load(course, WITHOUT_BEA)
    last = said.splitlines()[-1]
    assert last.startswith("no longer on the class list, 1 ") and last.endswith(": bea (Bea Ray)")
    return course


@pytest.fixture
def course(left, tmp_path) -> Path:
    return Path(shutil.copytree(left, tmp_path / "class" / "course"))


def rows(course: Path, name: str, key: str) -> list[str]:
    with Layout(course).report(name).open(encoding="utf-8") as f:
        return [row[key] for row in csv.DictReader(f)]


def canvas_students(course: Path) -> list[str]:
    with Layout(course).report("canvas_import.csv").open(encoding="utf-8") as f:
        return [line[2] for line in list(csv.reader(f))[2:]]  # SIS User ID, the id


def waiting_for_a_hand_grade(course: Path, dropped: str = gradesheet.LEAVE_OUT) -> set:
    """(student, notebook) of what waits for a hand grade, in the Sheet export writes from."""
    opened = Course.open(course)
    with gradebook(opened) as gb:
        sheet = gradesheet.read(opened, gb, dropped=dropped)
    return {(r.id, name) for r in sheet.rows for name, m in r.marks.items() if m.waiting}


def test_roster_names_who_left_and_keeps_them_in_the_gradebook(course):
    opened = Course.open(course)
    assert roster.dropped(opened) == ["bea"]
    assert roster.Roster.of(opened).ids == ["ann", "cyd"]  # collect files under these only
    with gradebook(opened) as gb:
        assert sorted(s.id for s in gb.students) == ["ann", "bea", "cyd", "dee"]
        assert names.namer(opened, gb)("bea") == "bea (Bea Ray)"
    load(course, WITHOUT_BEA)  # loaded again: still gone, nobody else
    assert roster.dropped(Course.open(course)) == ["bea"]
    load(course, CLASS)  # back on the class list
    assert roster.dropped(Course.open(course)) == []
    assert roster.Roster.of(Course.open(course)).ids == ["ann", "bea", "cyd"]


def test_export_leaves_a_dropped_student_out_and_deletes_nothing_of_theirs(course):
    layout = Layout(course)
    assert grader_cli(course, "export").returncode == 0
    everyone = ["ann", "cyd", "dee"]  # dee handed in on no roster: not dropped
    assert rows(course, "gradesheet.csv", "id") == everyone
    assert canvas_students(course) == everyone
    assert "bea" not in rows(course, "grades.csv", "student_id")
    assert waiting_for_a_hand_grade(course) == {("ann", WRITTEN), ("dee", WRITTEN)}
    for notebook in ("01_attention", WRITTEN):
        assert layout.notebook("submitted", notebook, "bea").is_file()
        assert layout.notebook("autograded", notebook, "bea").is_file()
    with Gradebook(layout.db_url) as gb:
        assert gb.find_submission_notebook("01_attention", "01_attention", "bea").score == 4
    index = layout.collected_index.read_text(encoding="utf-8")
    assert index.count('"student": "bea"') == 2


def test_dropped_keep_exports_them_as_before(course):
    assert grader_cli(course, "export", "--dropped", "keep").returncode == 0
    assert rows(course, "gradesheet.csv", "id") == ["ann", "bea", "cyd", "dee"]
    assert canvas_students(course) == ["ann", "bea", "cyd", "dee"]
    assert waiting_for_a_hand_grade(course, gradesheet.KEEP) == {
        ("ann", WRITTEN),
        ("bea", WRITTEN),
        ("dee", WRITTEN),
    }


def test_a_dropped_students_changed_file_holds_up_no_export_that_leaves_them_out(course):
    write(Layout(course).notebook("submitted", "01_attention", "bea"), written(course))
    assert grader_cli(course, "export").returncode == 0
    done = grader_cli(course, "export", "--dropped", "keep")
    assert done.returncode == 1 and "run autograde first: 1 submission" in done.stderr


def test_feedback_asks_no_hand_grade_of_a_dropped_student(course):
    done = grader_cli(course, "feedback")
    assert done.returncode == 0, done.stderr
    (waiting,) = [line for line in done.stdout.splitlines() if line.startswith(f"  {WRITTEN}: ")]
    assert waiting.split(": ", 1)[1].split(", ") == ["ann (Ann Lee)", "dee"]
    # Her page, still written, says as everyone's does that the answer waits.
    page = Layout(course).notebook("feedback", WRITTEN, "bea").read_text(encoding="utf-8")
    assert 'id="hand-grading"' in page
