"""The course folder's layout (grader.course.Layout): every path of it is made there and read
back there (that no other module joins one by hand: test_no_path_joined_by_hand.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.course import Layout

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
    assert (layout.roster, layout.lms_ids, layout.exchange) == (
        COURSE / "roster.csv",
        COURSE / "canvas_assignments.json",
        COURSE / "exchange",
    )
    assert layout.timestamp("01_attention", "ann") == (
        COURSE / "submitted/ann/01_attention/timestamp.txt"
    )
    assert layout.report("feedback_bundles", "01_attention.zip") == (
        COURSE / "reports/feedback_bundles/01_attention.zip"
    )
    assert layout.kept("ab12") == COURSE / "collected/ab12.ipynb"
    assert layout.collected_index == COURSE / "collected/index.jsonl"
    assert layout.published("README.md") == COURSE / "publish/README.md"
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
    layout.timestamp("01_attention", "ann").write_text("")
    assert layout.students_notebooks("submitted") == [
        ("ann", "01_attention", layout.notebook("submitted", "01_attention", "ann")),
        ("bea", "02_causal_mask", layout.notebook("submitted", "02_causal_mask", "bea")),
    ]
