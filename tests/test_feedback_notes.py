"""The feedback page of a submission preflight repaired tells its student what was repaired, a
sentence each (grader/term/feedback_notes.py, called where the bundles are built). The repairs
are preflight's own, made on a notebook damaged as students damage it in Colab; the page and the
last autograde's report are written here, as test_bundles.py writes them: no grading. A file
not made from the release handed out is told in a box of its own."""

from __future__ import annotations

import copy
import json
import shutil
import zipfile
from dataclasses import asdict
from pathlib import Path

from grader.course import Layout
from grader.engine.preflight import preflight
from grader.engine.review import Release
from grader.outcome import Outcome
from grader.term.bundles import bundle_feedback
from grader.term.course_open import Course
from grader.term.feedback_notes import sentence, tell
from maintainer.fabricated_class import cell_of, colab_shaped, perfect

NB = "01_attention"
PAGE = (
    "<!DOCTYPE html>\n<html><head><title>{student}</title></head>\n<body>\n<p>4 / 4</p>\n"
    "</body></html>"
)


def damaged(course: Path) -> bytes:
    """A solved 01 as Colab saves it, damaged: Exercise 1's cell pasted twice, Exercise 0's check
    deleted and its cell turned into text, Exercise 1's check stripped of its label."""
    nb = colab_shaped(perfect(course, NB))
    at = nb["cells"].index(cell_of(nb, "ex1_attention"))
    nb["cells"].insert(at + 2, copy.deepcopy(nb["cells"][at]))
    nb["cells"].remove(cell_of(nb, "ex0_check"))
    text = cell_of(nb, "ex0_read_the_model")
    text["cell_type"] = "markdown"
    del text["outputs"], text["execution_count"]
    del cell_of(nb, "ex1_check")["metadata"]["nbgrader"]
    return json.dumps(nb).encode()


def test_a_repaired_submission_s_page_says_what_was_repaired_in_a_sentence_each(released, tmp_path):
    course = Path(shutil.copytree(released, tmp_path / "course"))
    layout = Layout(course)
    release = layout.release_notebook(NB)
    repairs = preflight(damaged(course), release).repairs
    outcomes = [
        Outcome("alice", NB, "graded", 3, 4, repairs=repairs),
        Outcome("bob", NB, "graded", 4, 4),  # handed in as released: nothing to tell
    ]
    report = {"sandbox": "", "outcomes": [asdict(o) for o in outcomes]}
    layout.report("autograde.json").parent.mkdir(parents=True, exist_ok=True)
    layout.report("autograde.json").write_text(json.dumps(report))
    for student in ("alice", "bob"):
        page = layout.notebook("feedback", NB, student)
        page.parent.mkdir(parents=True)
        page.write_text(PAGE.format(student=student))
    for _ in range(2):  # a second `make feedback` tells it once
        (bundle,) = bundle_feedback(Course.open(course), {})
    with zipfile.ZipFile(bundle) as archive:
        pages = {name: archive.read(name).decode() for name in archive.namelist()}
    alice = pages["alice_01_attention.html"]
    assert alice.startswith(PAGE.format(student="alice").partition("<p>")[0])  # top of the body
    assert alice.count('id="repairs"') == 1
    assert "Your file was repaired before it was\ngraded." in alice
    copy_at = repairs[0].split(":")[0].removeprefix("cell ")
    label_at = repairs[-1].rpartition("cell ")[2].rstrip(")")
    said = [
        f"You had pasted a second copy of Exercise 1&#x27;s cell (cell {copy_at} from the top); "
        "only the first was graded.",
        "Your cell for Exercise 0 had been turned into a text (Markdown) cell; it was turned back "
        "into a code cell and graded as one.",
        "Your check cell for Exercise 0 was missing; it was put back from the notebook as handed "
        "out, and run.",
        f"Your check cell for Exercise 1 (cell {label_at} from the top) had lost its grading "
        "label; it was found by its place and content, and graded.",
    ]
    assert [line[4:-5] for line in alice.splitlines() if line.startswith("<li>")] == said
    assert pages["bob_01_attention.html"] == PAGE.format(student="bob")


def test_a_repair_of_a_kind_not_known_here_is_told_as_it_stands():
    assert sentence("ex9_extra: a repair of a later preflight") == (
        "Your file was repaired before grading: ex9_extra: a repair of a later preflight."
    )
    assert sentence("ex9_check: check missing, restored from the release") == (
        "Your check cell for ex9_check was missing; it was put back from the notebook as handed "
        "out, and run."
    )
    assert sentence("ex4_prediction: check missing, restored from the release") == (
        "Your written answer for Exercise 4 was missing; it was put back empty, as handed out, "
        "so it counts as not answered."
    )


def test_a_file_not_made_from_the_release_is_told_in_a_box_of_its_own(tmp_path):
    page = tmp_path / "alice_01_attention.html"
    page.write_text(PAGE.format(student="alice"))
    tell(page, [], codes=["workshop_copy", "not_ready"])
    body = page.read_text().partition("<body>\n")[2]
    assert body.startswith(
        '<div class="alert alert-warning" id="wrong-file" data-code="workshop_copy"><strong>The '
        "file you handed in was the workshop&#x27;s copy of this notebook, not the notebook of "
        "the course&#x27;s release.</strong>\nIt was graded as it is, against this release's "
        "checks and points. Next time, hand in the notebook\nmade from the course's release: "
        "open it from the course page (its Colab link), do your work in\nit, and download that "
        "one (File → Download → .ipynb).\n</div>\n<p>4 / 4</p>"
    )
    # This course's copy from before an errata: the old release's box tells it, not this one.
    page.write_text(PAGE.format(student="bob"))
    old = Release("2027-01-10T09:00:00+01:00", (), ())
    tell(page, [], old, codes=["not_this_release"])
    assert 'id="old-release"' in page.read_text() and "wrong-file" not in page.read_text()
