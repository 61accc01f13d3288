"""The term's half of autograde (grader/term/scores.py), on outcomes written by hand: nothing is
executed or graded. The summary line and the term log's entry, word for word; the scores table
(reports/autograde.md) with one maximum per notebook, every kind of cell and the notes grouped by
kind, and autograde.json read back; a run limited to some students or notebooks keeping everyone
else's rows; lateness settled on a gradebook filled by hand, for graded and reused notebooks
only. The release is a few one-cell notebooks with their points, 02's with a written answer
graded by hand beside its check. A real class graded, late and
on time, is test_deadlines.py's (with the table's late cell), a partial run through the command
line test_gradesheet.py's, the table of a real sandbox test_sandbox.py's."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.engine.options import EngineOptions
from grader.outcome import COPY, Flag, Outcome
from grader.outcome import REVIEW as REVIEW_KIND
from grader.term import deadlines, scores
from grader.term.course_open import Course
from grader.term.nbgrader_apps import gradebook as session
from grader.term.rules import Counted
from grader.term.scores import REVIEW

POINTS = {"01_attention": 4, "02_causal_mask": 2, "03_positions": 2, "06_stretch": 4}
BY_HAND = {"02_causal_mask": 1}  # of its points, a written answer's
# 03 handed in by someone but not assigned; 02 not due yet; 06 extra credit by default.
COURSE_TOML = """assigned = ["01_attention", "02_causal_mask", "06_stretch"]

[due]
02_causal_mask = 2999-01-01T00:00:00+00:00
"""
SANDBOX = "bubblewrap (unprivileged user namespaces)"
GIVEN = (("workers", "course.toml"), ("memory_gb", "command line"))
OPTIONS = EngineOptions(workers=2, cell_timeout=30, memory_gb=3.0, origin=GIVEN)
COPY_FLAG = Flag(
    COPY,
    "ex1_attention",
    "the course's solution",
    share=1.0,
    held=0.8,
    alike=80,
    longest=80,
    whose="the solution's",
)
TORCH_LINE = "torch.allclose = lambda *a, **k: True"
TORCH_FLAG = Flag(REVIEW_KIND, "cell 7 (ex1_attention)", "writes to torch", TORCH_LINE)
DIED = (
    "the kernel died in cell 12 (ex2_mask); the checks above it kept their points, none below ran"
)


def graded_cell(grade_id: str, points: float, by_hand: bool = False) -> dict:
    """A check, or (`by_hand`) a written answer graded by hand, as nbgrader marks them."""
    grading = {"grade": True, "grade_id": grade_id, "points": points, "solution": by_hand}
    if by_hand:
        return {"cell_type": "markdown", "metadata": {"nbgrader": grading}, "source": ""}
    meta = {"metadata": {"nbgrader": grading}, "outputs": [], "source": ""}
    return {"cell_type": "code", "execution_count": None} | meta


@pytest.fixture
def course(tmp_path) -> Path:
    """A release of one graded cell per notebook, worth POINTS, and 02's written answer."""
    for name, points in POINTS.items():
        cells = [graded_cell(f"{name}_check", points - BY_HAND.get(name, 0))]
        cells += [graded_cell(f"{name}_answer", BY_HAND[name], True)] if name in BY_HAND else []
        notebook = {"cells": cells, "metadata": {}}
        path = tmp_path / "release" / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(notebook | {"nbformat": 4, "nbformat_minor": 4}))
    (tmp_path / "course.toml").write_text(COURSE_TOML)
    return tmp_path


def graded(student: str, notebook: str, score: float, **more) -> Outcome:
    return Outcome(student, notebook, "graded", score=score, max_score=POINTS[notebook], **more)


CLASS = [
    graded("alice", "01_attention", 4, seconds_late=600),  # late, but the policy takes nothing
    Outcome("alice", "02_causal_mask", "unchanged", score=1, max_score=2, needs_manual=1),
    graded("alice", "06_stretch", 4),
    Outcome("bob", "01_attention", "quarantined", reason="not valid notebook JSON"),
    graded(
        "carol",
        "01_attention",
        3,
        reason=DIED,
        repairs=["ex1_attention: grading metadata restored (cell 9)"],
        flags=[COPY_FLAG, TORCH_FLAG],
    ),
    # Not assigned: its repair is no note of the table's.
    graded(
        "carol", "03_positions", 2, repairs=["ex1_positions: grading metadata restored (cell 4)"]
    ),
    Outcome("dave", "02_causal_mask", "failed", reason="the job could not run: out of memory"),
    graded("eve", "01_attention", 4, seconds_late=25 * 3600, late_penalty=1),
]


def test_the_summary_counts_each_status():
    assert scores.summary(CLASS) == (
        "8 notebooks: 5 graded, 1 reused from their last run (unchanged), 1 quarantined, 1 failed"
    )
    assert scores.summary([]) == (
        "0 notebooks: 0 graded, 0 reused from their last run (unchanged), 0 quarantined, 0 failed"
    )


def test_the_log_entry_names_what_could_not_be_graded_and_why():
    assert scores.log_entry(CLASS, OPTIONS).splitlines() == [
        scores.summary(CLASS),
        f"Options: {OPTIONS.said()}.",
        "",
        "- bob / 01_attention: quarantined: not valid notebook JSON",
        "- dave / 02_causal_mask: failed: the job could not run: out of memory",
        "",
        "The scores: reports/autograde.md.",
    ]


def test_a_limited_run_says_what_it_was_limited_to():
    assert scores._scope(None, None) == ""
    assert scores._scope(["bob", "carol"], None) == " --student bob carol"
    assert scores._scope(["bob"], ["01_attention"]) == " --student bob --notebook 01_attention"


def test_the_table_has_one_maximum_per_notebook_and_the_notes_by_kind(course):
    scores.write_scores_table(Course.open(course), CLASS, SANDBOX, OPTIONS)
    table = (course / "reports" / "autograde.md").read_text(encoding="utf-8")
    assert table.splitlines() == [
        "| student | 01_attention | 02_causal_mask (not due yet) | 06_stretch (extra credit) "
        "| total / 6 | review |",
        "|---|---|---|---|---|---|",
        # No total while an answer waits for its hand grade: the grade sheet has none either;
        # "1 / 2" would read as the notebook's score.
        "| alice | 4 / 4 late, no penalty | 1 of 2, 1 point to grade by hand | 4 / 4 | – / 6 |  |",
        "| bob | quarantined | – | – | – / 6 |  |",
        "| carol | 3 / 4 | – | – | 3 / 6 "
        "| ⚑ 01_attention: ex1_attention 100% the course's solution, holding 80% of it; 1 other |",
        "| dave | – | failed | – | – / 6 |  |",
        "| eve | 4 / 4 late −1 | – | – | 3 / 6 |  |",
        "",
        f"Sandbox: {SANDBOX}.",
        f"Options: {OPTIONS.said()}.",
        "Each notebook is out of its release's points; the total, as the grade sheet has it, out "
        "of those of the notebooks course.toml assigns. Extra credit (06_stretch): its points "
        "add to the total, not to its maximum. Not due yet (02_causal_mask): nothing handed in "
        "is no loss yet.",
        "",
        "### Late (course.toml's due dates and [late] policy)",
        "",
        "- alice / 01_attention: handed in 10 min late (course.toml): no penalty",
        "- eve / 01_attention: handed in 1 d 1 h late (course.toml): 1 of 4 points taken",
        "",
        "### Not graded: quarantined or failed (the grade sheet leaves them empty)",
        "",
        "- bob / 01_attention: quarantined: not valid notebook JSON",
        "- dave / 02_causal_mask: failed: the job could not run: out of memory",
        "",
        "### Graded in part: the kernel died",
        "",
        f"- carol / 01_attention: {DIED}",
        "",
        "### Repaired by preflight",
        "",
        "- carol / 01_attention: ex1_attention: grading metadata restored (cell 9)",
        "",
        "### Review: copies, and code that touches the checking machinery",
        "",
        REVIEW,
        "",
        f"- carol / 01_attention: {COPY_FLAG}",
        f"- carol / 01_attention: {TORCH_FLAG}",
        "",
        "Handed in, not assigned (course.toml): 03_positions.",
    ]


def test_a_score_still_to_grade_by_hand_says_what_is_to_come():
    """Of what, and how much waits: the points where every written answer waits, the answers
    where some were graded (the table cannot tell which is left); none for a final score."""
    nb = Counted("04_training", 4)
    waits = Outcome("ann", "04_training", "graded", score=3, needs_manual=1)
    assert scores._cell(waits, nb, {"04_training": (1, 1.0)}) == "3 of 4, 1 point to grade by hand"
    both = Outcome("ann", "04_training", "graded", score=2, needs_manual=2)
    assert scores._cell(both, nb, {"04_training": (2, 2.0)}) == "2 of 4, 2 points to grade by hand"
    one = scores._cell(waits, nb, {"04_training": (2, 2.0)})
    assert one == "3 of 4, 1 written answer to grade by hand"
    done = Outcome("ann", "04_training", "graded", score=3)
    assert scores._cell(done, nb, {"04_training": (1, 1.0)}) == "3 / 4"


def test_a_wrong_notebook_has_its_cell_and_no_total():
    """Only another notebook handed in for 01 (collect named it): said, and no total, as the
    grade sheet has none; frank handed in nothing else and still has his row."""
    notebooks = [Counted("01_attention", 4), Counted("02_causal_mask", 2)]
    rows = scores.scores_table(
        [graded("alice", "02_causal_mask", 2)],
        SANDBOX,
        OPTIONS,
        notebooks,
        wrong={("alice", "01_attention"), ("frank", "02_causal_mask")},
    ).splitlines()[2:4]
    assert rows == [
        "| alice | wrong notebook | 2 / 2 | – / 6 |  |",
        "| frank | – | wrong notebook | – / 6 |  |",
    ]


def test_a_table_with_nothing_to_note_ends_with_its_legend(course):
    (course / "course.toml").write_text('assigned = ["01_attention"]\n')
    alice = [graded("alice", "01_attention", 4)]
    scores.write_scores_table(Course.open(course), alice, "none", OPTIONS)
    table = (course / "reports" / "autograde.md").read_text(encoding="utf-8")
    assert table == (
        "| student | 01_attention | total / 4 | review |\n"
        "|---|---|---|---|\n"
        "| alice | 4 / 4 | 4 / 4 |  |\n"
        "\n"
        "Sandbox: none.\n"
        f"Options: {OPTIONS.said()}.\n"
        "Each notebook is out of its release's points; the total, as the grade sheet has it, out "
        "of those of the notebooks course.toml assigns.\n"
    )


def test_the_saved_outcomes_read_back_as_written(course):
    scores.write_scores_table(Course.open(course), CLASS, SANDBOX, OPTIONS)
    saved = json.loads((course / "reports" / "autograde.json").read_text(encoding="utf-8"))
    assert saved["sandbox"] == SANDBOX
    assert saved["options"] == {
        "workers": 2, "cell_timeout": 30, "notebook_timeout": 600, "memory_gb": 3.0,
        "sandboxed": True, "scheduler": None, "force": False, "progress": True,
        "given": {"workers": "course.toml", "memory_gb": "command line"},
    }  # fmt: skip
    assert scores.load_outcomes(Course.open(course)) == CLASS


def test_a_report_of_another_version_still_reads(course):
    assert scores.load_outcomes(Course.open(course)) == []  # no report yet
    (course / "reports").mkdir()
    row = {"student": "alice", "assignment": "01_attention", "status": "graded", "score": 4}
    report = {"sandbox": "none", "outcomes": [row | {"kernel": "python3"}]}  # a field since gone
    (course / "reports" / "autograde.json").write_text(json.dumps(report))
    assert scores.load_outcomes(Course.open(course)) == [
        Outcome("alice", "01_attention", "graded", score=4)
    ]


def test_flags_travel_as_data_and_an_earlier_report_s_text_is_kept_whole(course):
    """A flag is written to autograde.json as its fields and read back as the same record; a
    report from before flags were data holds text, which the notes quote as it was."""
    scores.write_scores_table(Course.open(course), CLASS, SANDBOX, OPTIONS)
    saved = json.loads((course / "reports" / "autograde.json").read_text(encoding="utf-8"))
    (carol,) = [o for o in saved["outcomes"] if o["flags"]]
    assert carol["flags"][0] | {"share": 1.0} == {
        "kind": "copy", "part": "ex1_attention", "source": "the course's solution",
        "quoted": "", "share": 1.0, "held": 0.8, "alike": 80, "longest": 80,
        "answer": "own code", "whose": "the solution's", "written": "",
    }  # fmt: skip
    old = "copy: ex1_attention matches the course's solution: 100% of the student's own code"
    carol["flags"] = [old, TORCH_FLAG.text()]
    (course / "reports" / "autograde.json").write_text(json.dumps(saved))
    (read,) = [o for o in scores.load_outcomes(Course.open(course)) if o.flags]
    assert [f.text() for f in read.flags] == [old, TORCH_FLAG.text()]
    assert [f.kind for f in read.flags] == ["copy", "review"]  # the copy's is replaced anew
    table = scores.scores_table([read], SANDBOX, OPTIONS, Course.open(course).term.counted(), str)
    assert f"- carol / 01_attention: {old}" in table


EARLIER = [
    graded("alice", "01_attention", 4),
    graded("alice", "02_causal_mask", 2),
    graded("bob", "01_attention", 1),
    graded("bob", "02_causal_mask", 2),
]


def test_a_limited_run_replaces_its_rows_and_keeps_the_others(course):
    scores.write_scores_table(Course.open(course), EARLIER, SANDBOX, OPTIONS)
    bob_01 = Outcome("bob", "01_attention", "unchanged", score=1)
    merged = scores.merged(
        Course.open(course), [bob_01], students=["bob"], notebooks=["01_attention"]
    )
    assert merged == [EARLIER[0], EARLIER[1], bob_01, EARLIER[3]]
    bob_02 = Outcome("bob", "02_causal_mask", "failed", reason="the job could not run")
    merged = scores.merged(Course.open(course), [bob_02, bob_01], students=["bob"])
    assert merged == [EARLIER[0], EARLIER[1], bob_01, bob_02]
    # A run over 02 that found no 02 of bob's any more: his old row goes with it.
    alice_02 = graded("alice", "02_causal_mask", 1)
    merged = scores.merged(Course.open(course), [alice_02], notebooks=["02_causal_mask"])
    assert merged == [EARLIER[0], alice_02, EARLIER[2]]


def test_a_whole_run_replaces_every_row(course):
    scores.write_scores_table(Course.open(course), EARLIER, SANDBOX, OPTIONS)
    assert scores.merged(Course.open(course), [EARLIER[2]]) == [EARLIER[2]]


@pytest.fixture
def gradebook(course, monkeypatch) -> Path:
    """alice, bob and carol each scored 4 of 4 on 01_attention in the gradebook, each handed in
    25 h after its due date (timestamp.txt), with 25 % a started day taken."""
    from nbgrader.api import Gradebook

    # nbgrader runs `alembic` to create a gradebook: this interpreter's, on the PATH.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    (course / "course.toml").write_text(
        "[due]\n01_attention = 2027-01-15T23:59:00+00:00\n\n"
        '[late]\npenalty = "percent_per_day"\npercent_per_day = 25\n'
    )
    opened = Course.open(course)
    with Gradebook(opened.layout.db_url) as gb:
        gb.add_assignment("01_attention")
        gb.add_notebook("01_attention", "01_attention")
        gb.add_grade_cell("ex1", "01_attention", "01_attention", max_score=4, cell_type="code")
        for student in ("alice", "bob", "carol"):
            gb.add_student(student)
            with gb.db.no_autoflush:  # else SQLAlchemy warns on nbgrader's own add_submission
                gb.add_submission("01_attention", student)
            gb.find_grade("ex1", "01_attention", "01_attention", student).auto_score = 4
            (course / "submitted" / student / "01_attention").mkdir(parents=True)
            late = datetime(2027, 1, 17, 0, 59, tzinfo=UTC)
            deadlines.write_timestamp(opened, student, "01_attention", late)
        gb.db.commit()
    return course


def test_lateness_is_settled_for_graded_and_reused_notebooks_only(gradebook):
    outcomes = [
        graded("alice", "01_attention", 4),
        Outcome("bob", "01_attention", "unchanged", score=4),
        Outcome("carol", "01_attention", "quarantined", reason="not valid notebook JSON"),
    ]
    course = Course.open(gradebook)
    with session(course) as gb:
        scores.settle(course, gb, outcomes)
    assert [(o.seconds_late, o.late_penalty) for o in outcomes] == [(90000, 2), (90000, 2), (0, 0)]
    # carol's quarantined notebook has no score to take from: her gradebook entry is untouched.
    with session(course) as gb:
        assert deadlines.lateness(gb)["carol", "01_attention"] == (0, 0)
