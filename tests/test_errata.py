"""Errata (grader/term/errata.py, grader/term/release.py): a graded cell added to
notebook 01 after the class handed it in. Refused (ERRATA=refuse), the course folder is byte for
byte as it was, and the line says whose submissions and which routes; carried out, every hand
grade of an unchanged answer (an override, extra credit, a comment, a flag) is back after the
regrade against the new release, and the release says what it did in its output and the term's
log; a release that fails half way (nbgrader raising) leaves the course folder byte for byte as
it was. An override stands when a check above its own is removed, and one whose check's points
changed is named with both maxima, on record. solutions/ is a copy with the cell added; jobs are
stand-ins (conftest.executing); grades entered as the formgrader enters them (nbgrader's
Gradebook API)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import executing
from nbgrader.api import Gradebook
from paths import ROOT

from grader.course import GradingError, Layout
from grader.engine import autograde as engine
from grader.engine.options import EngineOptions
from grader.term import errata, overrides, settings
from grader.term.course_open import Course
from grader.term.scores import autograde
from maintainer import notebook_build
from maintainer.fabricated_class import (
    WRONG_ATTENTION,
    colab_shaped,
    perfect,
    with_attention,
    write,
)
from maintainer.student_package import wheel_name

NB, CHECK = "01_attention", "ex1_check"
TRUSTED = EngineOptions(sandboxed=False, progress=False)  # the jobs are stand-ins
FAILED = nbformat.v4.new_output(
    "error", ename="CheckFailed", evalue="[ex1.no_sqrt_dk]", traceback=[]
)
# A check added after Exercise 1's: one point for an attention that returns both its outputs.
ADDED = (
    '# %% nbgrader={"grade": true, "grade_id": "ex1b_check", "locked": true, "points": 1, '
    '"solution": false, "schema_version": 3}\n'
    "assert len(scaled_dot_product_attention(*[torch.ones(1, 2, 4)] * 3)) == 2\n\n"
)


def job(text: str, *rest) -> dict:
    """A stand-in job that fails Exercise 1's check where the attention leaves out the scaling."""
    failed = {CHECK: [FAILED]} if "not divided by sqrt(d_k)" in text else {}
    return executing(failed)(text, *rest)


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory) -> Path:
    """01 handed in by three, graded; then in the formgrader: bea's failed check overridden to 2
    of 3, 0.5 extra credit and a comment for ann, cyd's notebook flagged."""
    course = Path(shutil.copytree(released, tmp_path_factory.mktemp("errata") / "course"))
    layout = Layout(course)
    for student, nb in (
        ("ann", perfect(course, NB)),
        ("bea", with_attention(course, WRONG_ATTENTION)),
        ("cyd", perfect(course, NB)),
    ):
        write(layout.notebook("submitted", NB, student), colab_shaped(nb))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", job)
        autograde(Course.open(course), TRUSTED)
    with Gradebook(layout.db_url) as gb:
        override = gb.find_grade(CHECK, NB, NB, "bea")
        override.manual_score, override.needs_manual_grade = 2, False
        extra = gb.find_grade("ex0_check", NB, NB, "ann")
        extra.extra_credit = 0.5
        gb.find_comment("ex1_attention", NB, NB, "ann").manual_comment = "Clear and short."
        gb.find_submission_notebook(NB, NB, "cyd").flagged = True
        gb.db.commit()
    return course


@pytest.fixture
def course(graded, tmp_path) -> Path:
    return Path(shutil.copytree(graded, tmp_path / "class" / "course"))


@pytest.fixture
def errata_in_solutions(tmp_path, monkeypatch) -> Path:
    """solutions/ as the checkout has it, 01 with a graded cell added after Exercise 1's check."""

    def added(text: str) -> str:
        at = text.index("# %%", text.index('"grade_id": "ex1_check"'))
        return text[:at] + ADDED + text[at:]

    return solutions_with(tmp_path, monkeypatch, added)


def solutions_with(tmp_path: Path, monkeypatch, *edits) -> Path:
    """solutions/ as the checkout has it, 01's text put through `edits`, made the one the
    release is built from."""
    solutions = Path(shutil.copytree(ROOT / "solutions", tmp_path / "solutions"))
    path = solutions / f"{NB}.py"
    text = path.read_text(encoding="utf-8")
    for edit in edits:
        text = edit(text)
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(notebook_build, "SOLUTIONS", solutions)
    # The student wheel published beside the notebooks is not what these tests are about (3 s).
    monkeypatch.setattr(notebook_build, "build_wheel", _wheel)
    return solutions


def first_check_removed(text: str) -> str:
    """Exercise 0's check cell gone (its exercise cell stays)."""
    start = text.index('# %% nbgrader={"grade": true, "grade_id": "ex0_check"')
    end = text.index("# %%", start + 1)
    return text[:start] + text[end:]


def check_worth_four(text: str) -> str:
    """Exercise 1's check moved from 3 points to 4."""
    header = '"grade_id": "ex1_check", "locked": true, "points": 3,'
    assert header in text
    return text.replace(header, header.replace('"points": 3', '"points": 4'))


def _wheel(folder: Path) -> Path:
    wheel = folder / wheel_name()
    wheel.write_bytes(b"a stand-in")
    return wheel


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by its path there, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def release(course: Path, route: str) -> list[str]:
    return notebook_build.build(None, course, only=[NB], errata_route=route, options=TRUSTED)


def test_refused_the_course_folder_stays_byte_for_byte_and_the_line_says_why(
    course, errata_in_solutions
):
    before = files(course.parent)
    with pytest.raises(GradingError) as refused:
        release(course, errata.REFUSE)
    said = str(refused.value)
    assert "\n" not in said
    assert said.startswith(
        "release refused (ERRATA=refuse): 01_attention: ex1b_check (1 point) added under 3 "
        "submissions (ann, bea, cyd), and nbgrader cannot add or remove a graded cell once "
        "there are submissions. Either `make release` (ERRATA=carry, the default)"
    )
    assert said.endswith("Nothing in the course folder was changed.")
    assert files(course.parent) == before  # nor beside it: no staging folder left


def grades(course: Path) -> dict[str, dict]:
    with Gradebook(Layout(course).db_url) as gb:
        return {
            s.student.id: {
                "score": s.score,
                "max": s.max_score,
                "flagged": bool(s.flagged),
                "grades": {
                    g.name: (g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade)
                    for g in s.grades
                },
                "comment": {c.name: c.manual_comment for c in s.comments if c.manual_comment},
            }
            for s in gb.notebook_submissions(NB, NB)
        }


def test_carried_out_every_hand_grade_of_an_unchanged_answer_is_back(
    course, errata_in_solutions, monkeypatch
):
    monkeypatch.setattr(engine, "run_job", job)
    settings_before = Layout(course).settings.read_bytes()
    said = "\n".join(release(course, errata.CARRY))
    assert Layout(course).settings.read_bytes() == settings_before  # a release never edits it
    assert (
        "01_attention: ex1b_check (1 point) added; its 3 submissions: rebuilt in the gradebook "
        "and regraded"
    ) in said
    assert "regraded 3 submissions of 01_attention in " in said
    assert ": 3 graded, 0 quarantined or failed (reports/autograde.md)" in said
    assert "hand grades kept over this grading, their answers unchanged: 2" in said
    now = grades(course)
    assert now["bea"]["grades"][CHECK] == (0, 2, None, False)  # the override, still done
    assert now["bea"]["grades"]["ex1b_check"] == (1, None, None, False)
    assert (now["bea"]["score"], now["bea"]["max"]) == (4, 5)  # 1 + 2 (override) + 1
    assert now["ann"]["grades"]["ex0_check"] == (1, None, 0.5, False)
    assert now["ann"]["comment"] == {"ex1_attention": "Clear and short."}
    assert (now["ann"]["score"], now["cyd"]["score"], now["cyd"]["flagged"]) == (5.5, 5, True)
    record = [json.loads(line) for line in Layout(course).hand_grades.open(encoding="utf-8")]
    assert {(r["event"], r["student"], r["grade_id"]) for r in record} == {
        ("saved for errata", "ann", "ex0_check"),
        ("saved for errata", "ann", "ex1_attention"),
        ("saved for errata", "bea", CHECK),
        ("saved for errata", "cyd", None),
    }
    log = (course / "reports" / "term_log.md").read_text(encoding="utf-8")
    assert "· release\n\n01_attention: ex1b_check (1 point) added;" in log
    rows = json.loads((course / "reports" / "autograde.json").read_text())["outcomes"]
    assert {(o["student"], o["score"], o["max_score"]) for o in rows} == {
        ("ann", 5.5, 5),
        ("bea", 4, 5),
        ("cyd", 5, 5),
    }
    # The next autograde finds nothing to run: the release graded against what it released.
    monkeypatch.setattr(engine, "run_job", lambda *_: pytest.fail("a job ran"))
    again = autograde(Course.open(course), TRUSTED)
    assert {o.status for o in again} == {"unchanged"}


def test_a_release_that_fails_half_way_leaves_the_course_folder_byte_for_byte(
    course, errata_in_solutions, monkeypatch
):
    """nbgrader itself refusing the change (the kit's carrying skipped), after the sources,
    the hand grades' record and the gradebook were written in the staging folder."""
    monkeypatch.setattr(errata, "set_aside", lambda layout, changes: {})
    before = files(course.parent)
    with pytest.raises(GradingError, match="Cannot add or remove cells for notebook"):
        release(course, errata.CARRY)
    assert files(course.parent) == before


def test_the_first_release_writes_a_commented_course_toml_that_reads_as_every_default(released):
    text = Layout(released).settings.read_text(encoding="utf-8")
    assert text == settings.starting_file()
    assert all(line.startswith("#") for line in text.splitlines() if line.strip())
    assert all(f"\n# {setting.key}: " in text for setting in settings.SETTINGS)
    names = tuple(Layout(released).released())
    assert settings.read(text, names) == settings.read("", names)
    # Each example is a setting as written: uncommented, it is read.
    late = text.replace('# [late]\n# penalty = "percent_per_day"', '[late]\npenalty = "zero"')
    assert settings.read(late, names).late.penalty == "zero"


def test_an_override_stands_when_a_check_before_it_is_removed(course, tmp_path, monkeypatch):
    """ex1_check's answer is Exercise 1's cell, wherever the graded cells above it stand."""
    solutions_with(tmp_path, monkeypatch, first_check_removed)
    monkeypatch.setattr(engine, "run_job", job)
    said = "\n".join(release(course, errata.CARRY))
    assert "01_attention: ex0_check (1 point) removed; its 3 submissions: rebuilt" in said
    assert "set aside" not in said
    now = grades(course)
    assert "ex0_check" not in now["bea"]["grades"]
    assert now["bea"]["grades"][CHECK] == (0, 2, None, False)  # the override, still done
    events = [json.loads(line)["event"] for line in Layout(course).hand_grades.open()]
    assert "set aside" not in events


@pytest.mark.parametrize(
    "edits",
    [(check_worth_four,), (check_worth_four, first_check_removed)],
    ids=["in place", "rebuilt"],
)
def test_an_override_whose_check_changed_points_is_named_with_both_maxima(
    course, tmp_path, monkeypatch, edits
):
    """bea's override said 2 of 3; the errata makes the check worth 4: the override stands (its
    answer is unchanged), now 2 of 4, and the release names it with 3 and 4, on record."""
    solutions_with(tmp_path, monkeypatch, *edits)
    monkeypatch.setattr(engine, "run_job", job)
    said = "\n".join(release(course, errata.CARRY))
    assert "ex1_check 3 → 4 points" in said
    assert grades(course)["bea"]["grades"][CHECK][1:] == (2, None, False)
    record = [json.loads(line) for line in Layout(course).hand_grades.open(encoding="utf-8")]
    named = [r for r in record if r["event"] == "points changed"]
    assert [
        (r["student"], r["notebook"], r["grade_id"], r["manual_score"], r["old_max"], r["new_max"])
        for r in named
    ] == [("bea", NB, CHECK, 2, 3, 4)]
    with Gradebook(Layout(course).db_url) as gb:
        found = overrides.rescaled(gb, {NB: {CHECK: (3.0, 4.0)}})
    assert found == [overrides.Rescaled("bea", NB, CHECK, 2, 3, 4, written=False)]
    assert overrides.said_rescaled(found) in said
    assert "01_attention ex1_check, bea: override 2 of 3 when given, now of 4" in said
    log = (course / "reports" / "term_log.md").read_text(encoding="utf-8")
    assert overrides.said_rescaled(found) in log
