"""A submission made from an older release is not its student's fault (grader/term/errata.py keeps
each release's cells, dated; grader/engine/review.py knows the release a submission was made
from; grader/term/feedback_notes.py tells it). After an errata that changes a locked cell (Exercise
1's check) and removes another (Exercise 0's), a notebook made from the release before it carries
that release's setup and hand-in cells and Exercise 0's check: no review flag for them, and its
feedback names the release's date and brings it up to date instead of blaming the student; a cell
that really came from elsewhere is still flagged. Twice: with the history kept since the first
release, and begun by the errata in a course released before any was kept (the release before it
dated by its file). solutions/ is a copy, the wheel and the jobs stand-ins, as tests/test_errata.py
builds them."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from conftest import executing
from test_errata import TRUSTED, first_check_removed, solutions_with

from grader.course import Layout
from grader.engine import autograde as engine
from grader.engine import review
from grader.outcome import REVIEW, Outcome
from grader.term import errata, feedback_notes
from grader.term.course_open import Course
from grader.term.scores import autograde, load_outcomes
from maintainer import notebook_build
from maintainer.fabricated_class import colab_shaped, perfect, write

NB = "01_attention"
CHECK = "check.exercise_1(scaled_dot_product_attention)\n"
# A cell pasted from another notebook: its import of the checks is the student's, not the course's.
FOREIGN = "from checkpoints import causal_mask as other_check\n"
BEFORE = datetime(2026, 11, 3, 12, tzinfo=UTC)  # when the course released 01, by its file
PAGE = "<!DOCTYPE html>\n<html><body>\n<p>4 / 4</p>\n</body></html>"


def check_changed(text: str) -> str:
    """Exercise 1's check (a locked cell) given a second line."""
    assert text.count(CHECK) == 1
    return text.replace(CHECK, CHECK + 'print("Exercise 1 checked")\n')


@pytest.fixture(scope="module", params=["kept since the first release", "begun by the errata"])
def errata_made(request, released, tmp_path_factory) -> tuple[Path, str, bool]:
    """01 handed in by ann (as released) and cyd (with a foreign cell), then the errata released;
    then bea hands in the new release. The course, when the release before it was made (as the
    history records it) and whether the history was begun by the errata."""
    tmp = tmp_path_factory.mktemp("old_release")
    course = Path(shutil.copytree(released, tmp / "class" / "course"))
    layout = Layout(course)
    begun = request.param == "begun by the errata"
    if begun:
        layout.report(errata.HISTORY).unlink(missing_ok=True)  # a course from before it
        os.utime(layout.notebook("release", NB), (BEFORE.timestamp(),) * 2)
    old = perfect(course, NB)
    pasted = perfect(course, NB)
    pasted["cells"].insert(7, nbformat.v4.new_code_cell(FOREIGN))
    with pytest.MonkeyPatch.context() as patch:
        solutions_with(tmp, patch, check_changed, first_check_removed)
        notebook_build.build(None, course, only=[NB], options=TRUSTED)
        for student, nb in (("ann", old), ("cyd", pasted), ("bea", perfect(course, NB))):
            write(layout.notebook("submitted", NB, student), colab_shaped(nb))
        patch.setattr(engine, "run_job", executing())
        autograde(Course.open(course), TRUSTED)
    first = [r for r in errata.released(layout) if r["notebook"] == NB][0]
    return course, first["released"], begun


def graded(course: Path, student: str) -> tuple[review.Release | None, Outcome]:
    """The release the student's notebook was made from, and its outcome (flags, repairs), as
    autograde left them."""
    layout = Layout(course)
    executed = nbformat.read(layout.notebook("autograded", NB, student), 4)
    (outcome,) = [o for o in load_outcomes(Course.open(course)) if o.student == student]
    return review.made_from(executed, layout.release_notebook(NB)), outcome


def test_the_history_records_each_release_dated_and_the_release_names_the_one_before(errata_made):
    course, first, begun = errata_made
    layout = Layout(course)
    records = [r for r in errata.released(layout) if r["notebook"] == NB]
    assert len(records) == 2
    ids = [[c["grade_id"] for c in r["cells"] if c["grade_id"]] for r in records]
    assert "ex0_check" in ids[0] and "ex0_check" not in ids[1]
    (before,) = review.earlier(layout.release_notebook(NB))
    assert before.released == first == records[0]["released"]
    if begun:  # dated by the file of the release the course held
        assert datetime.fromisoformat(first) == BEFORE
    assert before.grade_ids == tuple(ids[0])


def test_a_notebook_of_the_old_release_is_not_flagged_for_the_cells_it_shipped(errata_made):
    course, first, _ = errata_made
    made_from, outcome = graded(course, "ann")
    assert made_from is not None and made_from.released == first
    assert outcome.flags == []


def test_a_cell_pasted_from_elsewhere_is_still_flagged_in_a_notebook_of_the_old_release(
    errata_made,
):
    course, first, _ = errata_made
    made_from, outcome = graded(course, "cyd")
    assert made_from is not None and made_from.released == first
    assert [(f.kind, f.source, f.quoted) for f in outcome.flags] == [
        (REVIEW, "imports checkpoints", FOREIGN.strip())
    ]


def test_a_notebook_of_the_new_release_was_made_from_it(errata_made):
    course, _, _ = errata_made
    made_from, outcome = graded(course, "bea")
    assert made_from is None and outcome.flags == []


def test_the_feedback_names_the_release_and_blames_nothing_it_explains(errata_made, tmp_path):
    course, first, _ = errata_made
    made_from, outcome = graded(course, "ann")
    assert outcome.repairs == ["cell 10: unknown grade id 'ex0_check', grading metadata removed"]
    assert feedback_notes.explained(outcome.repairs, made_from) == ([], outcome.repairs)
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    feedback_notes.tell(page, outcome.repairs, made_from)
    text = page.read_text(encoding="utf-8")
    assert f'data-release="{first[:10]}"' in text and feedback_notes.RELEASE_MARK in text
    assert feedback_notes.MARK not in text  # no box of the student's own repairs


def test_an_earlier_release_explains_only_the_cells_it_had_or_lacked():
    made_from = review.Release("2026-11-03T13:00:00+01:00", ("ex0_check", "ex1_check"), ())
    removed = "cell 10: unknown grade id 'ex0_check', grading metadata removed"
    added = "ex1b_check: check missing, restored from the release"
    pasted = "cell 4: unknown grade id 'ex9_check', grading metadata removed"
    deleted = "ex1_check: check missing, restored from the release"
    repairs = [removed, added, pasted, deleted]
    assert feedback_notes.explained(repairs, made_from) == ([pasted, deleted], [removed, added])
    assert feedback_notes.explained(repairs, None) == (repairs, [])


def test_the_old_release_s_note_in_words(tmp_path):
    """The one test of the note's words."""
    made_from = review.Release("2026-11-03T13:00:00+01:00", ("ex0_check", "ex1_check"), ())
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    removed = "cell 10: unknown grade id 'ex0_check', grading metadata removed"
    feedback_notes.tell(page, [removed], made_from)
    words = " ".join(page.read_text(encoding="utf-8").split())
    assert (
        "Your notebook was made from the release of 2026-11-03; the grader brought it up to "
        "date.</strong> The notebook changed after you downloaded your copy: your work was "
        "graded against the notebook as it is now."
    ) in words
    assert "Exercise 0" in words and "is no longer graded in this notebook" in words
    assert "Next time" not in words and "perhaps pasted" not in words
