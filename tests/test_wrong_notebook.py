"""A notebook handed in for another (grader/term/collect.py): Canvas's zip of assignment 04 as
canvas-lms builds it (maintainer/fabricated_class.py), holding bob's notebook 02 and alice's 04.
Collected for 04_training (`collect --notebook`, or Canvas's own record of the uploads: --times
with attachment_ids), alice's counts as 04; bob's is kept, never filed as 02 nor graded as 04,
and named "wrong notebook for 04_training" with his name on the terminal and in collect.md, as
the grade sheet's status (no 0, not missing), in the class report and on his feedback page,
named as his upload so that Canvas puts it on that submission. Without either, as before, its
content files it as 02. course.toml assigns 01 and 04 only: collect.md lists nothing handed in
for those alone. No grading."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from conftest import grader_cli
from paths import ROOT

from grader.term import collect, collected, gradesheet
from grader.term.bundles import bundle_feedback
from grader.term.class_report import NAMED, class_report, wrong_notebooks
from grader.term.collect import FileStatus
from grader.term.course_open import Course
from grader.term.nbgrader_apps import gradebook
from grader.term.roster import import_roster
from maintainer.fabricated_class import canvas_name, canvas_zip, perfect

NB, OTHER = "04_training", "02_causal_mask"
COURSE_TOML = 'assigned = ["01_attention", "04_training"]\n'
ROSTER = (
    "id,first_name,last_name,email,lms_user_id\n"
    "alice,Alice,Archer,,111\nbob,Bob,Stone,,222\ncarol,Carol,Reed,,333\n"
)
ALICE = canvas_name("Archer, Alice", 111, 9001, f"{NB}.ipynb")
BOB = canvas_name("Stone, Bob", 222, 9002, f"{OTHER}.ipynb")  # his 02, uploaded to 04
# Canvas's submissions API for assignment 04 (7004, in canvas_assignments.json), as CSV.
TIMES = (
    "user_id,assignment_id,submitted_at,attachment_ids\n"
    "111,7004,2027-01-20T10:00:00Z,9001\n222,7004,2027-01-20T11:00:00Z,9002\n"
)
SAID = "wrong notebook for 04_training: bob (Bob Stone) handed in 02_causal_mask"


def rows(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in `text` (reports/collect.md), by column."""
    table = [line for line in text.splitlines() if line.startswith("| ")]
    head, *body = ([cell.strip() for cell in line.strip("|").split(" | ")] for line in table)
    return [dict(zip(head, row, strict=True)) for row in body]


def course_with_roster(released: Path, folder: Path) -> Path:
    course = Path(shutil.copytree(released, folder / "course"))
    (course / "course.toml").write_text(COURSE_TOML)
    (folder / "students.csv").write_text(ROSTER)
    import_roster(Course.open(course), folder / "students.csv")
    return course


def downloads(course: Path, folder: Path) -> Path:
    """04's "Download Submissions": Canvas names it submissions.zip, and nothing in it names
    the assignment."""
    files = [(ALICE, json.dumps(perfect(course, NB))), (BOB, json.dumps(perfect(course, OTHER)))]
    return canvas_zip(folder / "submissions.zip", files, datetime(2027, 1, 25, 9))


@pytest.fixture(scope="module")
def handed(released, tmp_path_factory) -> tuple[Path, str]:
    """The zip collected for 04 from the command line: the course, and what it printed."""
    folder = tmp_path_factory.mktemp("wrong")
    course = course_with_roster(released, folder)
    done = grader_cli(course, "collect", str(downloads(course, folder)), "--notebook", NB)
    assert done.returncode == 0, done.stderr
    return course, done.stdout


def test_the_wrong_one_is_named_kept_and_never_filed_as_the_other(handed):
    course, printed = handed
    lines = printed.splitlines()
    assert lines[0].endswith(f": {FileStatus.COUNTS} 1, {FileStatus.WRONG} 1")
    assert (
        f"wrong notebook for 04_training: {BOB}: bob (Bob Stone) handed in 02_causal_mask; kept, "
        "and graded as neither: ask for 04_training, then collect it (emailed: --student bob "
        "--notebook 04_training)"
    ) in lines
    assert (course / "submitted" / "alice" / NB / f"{NB}.ipynb").is_file()
    assert not (course / "submitted" / "bob").exists()  # neither as 04 nor as 02
    kept = collected.Store(Course.open(course)).wrong()[("bob", NB)]
    assert (kept.wrong, kept.source) == (OTHER, BOB)
    assert json.loads((course / "collected" / f"{kept.sha256}.ipynb").read_text()) == perfect(
        course, OTHER
    )
    report = (course / "reports" / "collect.md").read_text()
    bob = next(row for row in rows(report) if row["file"] == BOB)
    assert (bob["student"], bob["notebook"], bob["status"]) == ("bob", NB, FileStatus.WRONG)
    assert bob["note"].startswith(f"{SAID}; ")
    assert f"- {SAID} (kept as {kept.short})" in report
    # Handed in nothing: bob's 04 is not nothing.
    assert collect.missing(Course.open(course)) == {"": ["carol"], NB: ["carol"]}


def test_the_grade_sheet_says_wrong_notebook_never_0_nor_missing(handed):
    course, _ = handed
    opened = Course.open(course)
    with gradebook(opened) as gb:
        sheet = gradesheet.read(opened, gb)
    rows = {row.id: row for row in sheet.rows}
    assert [(s, rows[s].marks[NB].status, rows[s].marks[NB].score) for s in rows] == [
        ("alice", "pending", None),
        ("bob", "wrong notebook", None),
        ("carol", "missing", 0.0),
    ]
    assert rows["bob"].total() is None  # settled once the right notebook is collected
    with gradesheet.write_gradesheet(opened, sheet).open() as f:
        bob = next(row for row in csv.DictReader(f) if row["id"] == "bob")
    assert (bob[f"{NB}_score"], bob[f"{NB}_status"], bob["total"]) == ("", "wrong notebook", "")


def test_the_class_report_counts_it_and_names_him_only_with_names(handed):
    course, _ = handed
    class_report(Course.open(course), names=True)
    text = (course / "reports" / "class.md").read_text(encoding="utf-8")
    section = wrong_notebooks(collected.Store(Course.open(course)).wrong())
    assert section[-1] == "- wrong notebook for 04_training: 1 (02_causal_mask 1)"
    assert "\n".join(section) in text
    assert "bob" not in text  # the report for class names no one
    named = (course / "reports" / NAMED).read_text(encoding="utf-8")
    assert f"- {SAID}\n" in named


def test_his_feedback_page_says_what_came_and_what_to_hand_in_until_it_comes(handed, tmp_path):
    course = Path(shutil.copytree(handed[0], tmp_path / "course"))
    (bundle,) = bundle_feedback(Course.open(course), {})
    page = BOB.replace(".ipynb", ".html")  # his upload's name: Canvas matches it to it
    with zipfile.ZipFile(bundle) as archive:
        assert archive.namelist() == [page]
        text = " ".join(archive.read(page).decode().split())
    assert "The file you handed in for 04_training is notebook 02_causal_mask" in text
    assert f"hand in {NB}: open your {NB} notebook" in text  # "it is not a zero": test_bundles
    # bob emails his 04: it counts, and the page that asked for it goes.
    (tmp_path / "mine.ipynb").write_text(json.dumps(perfect(course, NB)))
    grader_cli(
        course, "collect", str(tmp_path / "mine.ipynb"), "--student", "bob", "--notebook", NB
    )
    assert (course / "submitted" / "bob" / NB / f"{NB}.ipynb").is_file()
    assert bundle_feedback(Course.open(course), {}) == []
    assert not (course / "feedback" / "bob" / NB / f"{NB}.html").exists()


def test_canvas_s_record_of_the_uploads_says_the_same(released, tmp_path):
    """Canvas's submissions API lists each submission's attachments: 9002 was handed in for
    assignment 7004, 04_training. Without attachment_ids nothing says so: as before."""
    course = course_with_roster(released, tmp_path)
    (course / "canvas_assignments.json").write_text('{"02_causal_mask": 7002, "04_training": 7004}')
    (tmp_path / "times.csv").write_text(TIMES)
    zipped = downloads(course, tmp_path)
    found = collect.collect(Course.open(course), zipped, times=tmp_path / "times.csv")
    assert [(f.student, f.assignment, f.status, f.time_from) for f in found] == [
        ("alice", NB, "counts", "LMS times"),
        ("bob", NB, "wrong notebook", "LMS times"),
    ]
    other = course_with_roster(released, tmp_path / "other")
    (other / "canvas_assignments.json").write_text('{"04_training": 7004}')
    without = [line.rsplit(",", 1)[0] for line in TIMES.splitlines()]  # no attachment_ids
    (tmp_path / "times.csv").write_text("\n".join(without) + "\n")
    found = collect.collect(Course.open(other), zipped, times=tmp_path / "times.csv")
    assert [(f.student, f.assignment, f.status) for f in found] == [
        ("alice", NB, "counts"),
        ("bob", OTHER, "counts"),
    ]


def test_without_a_notebook_named_its_content_files_it_as_before(released, tmp_path):
    course = course_with_roster(released, tmp_path)
    found = collect.collect(Course.open(course), downloads(course, tmp_path))
    assert [(f.student, f.assignment, f.status) for f in found] == [
        ("alice", NB, "counts"),
        ("bob", OTHER, "counts"),
    ]
    assert (course / "submitted" / "bob" / OTHER / f"{OTHER}.ipynb").is_file()
    report = (course / "reports" / "collect.md").read_text()
    # 02 is not assigned: nobody is said to have handed in nothing for it.
    assert collect.missing(Course.open(course)) == {"": ["carol"], NB: ["bob", "carol"]}
    assert "- 02_causal_mask" not in report and FileStatus.WRONG not in report


def test_a_notebook_not_released_is_refused_in_one_line(handed, tmp_path):
    course, _ = handed
    done = grader_cli(course, "collect", str(tmp_path), "--notebook", "04_trainig")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "grader collect: --notebook 04_trainig: not a released notebook; give one of "
        "01_attention, 02_causal_mask,"
    )
    pinned = grader_cli(course, "collect-pin", "bob", NB)
    assert pinned.stderr.splitlines() == [
        f"grader collect-pin: bob / 04_training: only 02_causal_mask was handed in for it (kept "
        f"as {collected.Store(Course.open(course)).wrong()['bob', NB].short}), which cannot "
        "count for 04_training; collect the right file with --student bob --notebook 04_training"
    ]


def test_make_collect_passes_the_notebook():
    said = subprocess.run(
        ["make", "-n", "collect", "SUBMISSIONS=s.zip", f"NOTEBOOK={NB}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    command = " ".join(said.replace("\\\n", " ").split())
    assert 'collect "s.zip"' in command and f"--notebook '{NB}'" in command
