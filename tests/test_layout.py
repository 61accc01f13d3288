"""The course folder's layout (grader.course.Layout): every path of it is made there and read
back there; no other module of grader/ or maintainer/ joins its parts by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from paths import ROOT

from grader.course import STEPS, Layout

COURSE = Path("/term/course")


def test_each_step_s_notebooks_and_their_inverse():
    layout = Layout(COURSE)
    assert (
        layout.notebook("release", "01_attention")
        == COURSE / "release/01_attention/01_attention.ipynb"
    )
    assert layout.notebook("autograded", "04_training", "ann") == (
        COURSE / "autograded/ann/04_training/04_training.ipynb"
    )
    assert layout.notebook("feedback", "04_training", "ann").name == "04_training.html"
    assert layout.job("ann", "04_training") == COURSE / "autograded/ann/04_training/job.json"
    assert layout.report("grades.csv") == COURSE / "reports/grades.csv"
    assert (layout.gradebook, layout.settings) == (COURSE / "gradebook.db", COURSE / "course.toml")
    for step in ("submitted", "autograded", "feedback"):
        assert layout.whose(layout.notebook(step, "02_causal_mask", "bea")) == (
            "bea",
            "02_causal_mask",
        )
        assert layout.whose(layout.folder(step, "02_causal_mask", "bea")) == (
            "bea",
            "02_causal_mask",
        )


@pytest.mark.parametrize(
    "wrong",
    [
        lambda layout: layout.notebook("release", "01_attention", "ann"),  # not a student's
        lambda layout: layout.notebook("submitted", "01_attention"),  # a student's
        lambda layout: layout.step("graded"),
        lambda layout: layout.whose(COURSE / "release/01_attention/01_attention.ipynb"),
        lambda layout: layout.whose(COURSE / "reports"),
    ],
)
def test_a_path_the_course_folder_has_no_place_for_is_refused(wrong):
    with pytest.raises(ValueError):
        wrong(Layout(COURSE))


def test_students_notebooks_lists_what_the_step_holds(tmp_path):
    layout = Layout(tmp_path)
    for student, name in (("bea", "02_causal_mask"), ("ann", "01_attention")):
        path = layout.notebook("submitted", name, student)
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    (layout.folder("submitted", "01_attention", "ann") / "timestamp.txt").write_text("")
    assert layout.students_notebooks("submitted") == [
        ("ann", "01_attention", layout.notebook("submitted", "01_attention", "ann")),
        ("bea", "02_causal_mask", layout.notebook("submitted", "02_causal_mask", "bea")),
    ]


# A step's name as a path part: `/ "autograded"`, `"reports" /`, or a glob from one.
JOINED = re.compile(
    rf"""/\s*["']({"|".join(STEPS)}|gradebook\.db)["']|["']({"|".join(STEPS)})["']\s*/"""
    rf"""|glob\(\s*f?["']({"|".join(STEPS)})/|\.parent\.parent\.name"""
)


def hand_joined(paths, root: Path = ROOT) -> list[str]:
    """file:line of each line that joins the course folder's parts by hand."""
    return [
        f"{path.relative_to(root)}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if JOINED.search(line)
    ]


def test_nothing_but_the_layout_joins_the_course_folder_s_parts():
    paths = [
        p for folder in ("grader", "maintainer") for p in sorted((ROOT / folder).rglob("*.py"))
    ]
    paths = [p for p in paths if p != ROOT / "grader" / "course.py"]
    assert hand_joined(paths) == []


def test_a_path_joined_by_hand_is_found(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        'folder = Path(course) / "autograded" / student\n'
        'for p in course.glob("submitted/*/*/*.ipynb"):\n'
        "    who = p.parent.parent.name\n"
        'fine = Layout(course).report("grades.csv")\n',
        encoding="utf-8",
    )
    assert hand_joined([bad], tmp_path) == ["bad.py:1", "bad.py:2", "bad.py:3"]
