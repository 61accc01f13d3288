"""The wrong file named, and the receipt read (grader/term/collect.py). Canvas's zip of one
assignment as canvas-lms builds it (maintainer/fabricated_class.py), each notebook as Colab saves
it: alice hands in the workshop's copy (notebooks/01_attention.ipynb, solved), bob a notebook of
another release (nbgrader's checksums not this release's), carol an upload of 0 bytes, dave a
.py, erin the release whose own "Before you hand in" said not ready, frank the release as it is.
Each is named with its student and a stable code in reports/collect.md; the workshop's copy and
another release's notebook count and are graded as they are. A check cell the student edited is
recorded by preflight, reaches autograde's outcome (its report's repairs) and the feedback page.
The code of a file graded as it is reaches its student's row of the scores table and a box on
their feedback page. No grading: autograde's own preparation (preflight and nbgrader's
sanitizing) only; the scores and pages are written here."""

from __future__ import annotations

import ast
import copy
import json
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from nbformat import from_dict
from nbgrader.utils import compute_checksum
from paths import ROOT

from checkpoints import hand_in as the_cell
from grader.engine import autograde, preflight
from grader.engine.options import EngineOptions
from grader.outcome import Outcome
from grader.term import collect, collected, feedback_notes, scores
from grader.term.bundles import bundle_feedback
from grader.term.course_open import Course
from maintainer.fabricated_class import canvas_name, canvas_zip, cell_of, colab_shaped, perfect
from transformer_lab import hand_in

NB = "01_attention"
ROSTER = "id,first_name,last_name,email,lms_user_id\n" + "".join(
    f"{s},{s.title()},{last},,{uid}\n"
    for s, last, uid in (
        ("alice", "Archer", 111),
        ("bob", "Stone", 222),
        ("carol", "Reed", 333),
        ("dave", "Doe", 444),
        ("erin", "Eyre", 555),
        ("frank", "Fox", 666),
    )
)
ALICE, BOB, CAROL, DAVE, ERIN, FRANK = (
    canvas_name(sortable, uid, 9000 + uid // 111, f"{NB}{ext}")
    for sortable, uid, ext in (
        ("Archer, Alice", 111, ".ipynb"),
        ("Stone, Bob", 222, ".ipynb"),
        ("Reed, Carol", 333, ".ipynb"),
        ("Doe, Dave", 444, ".py"),
        ("Eyre, Erin", 555, ".ipynb"),
        ("Fox, Frank", 666, ".ipynb"),
    )
)
OLD_CHECK = "check.exercise_1(scaled_dot_product_attention)  # last term's"


def workshop_copy(course: Path) -> dict:
    """The workshop's notebook 01, its exercises solved (as fabricated_class's workshop student)."""
    nb = json.loads((ROOT / "notebooks" / f"{NB}.ipynb").read_text())
    for grade_id in ("ex0_read_the_model", "ex1_attention"):
        cell_of(nb, grade_id)["source"] = cell_of(perfect(course, NB), grade_id)["source"]
    return nb


def another_release(course: Path) -> dict:
    """Notebook 01 as last term's release had it: its check 1 of other code and points, with the
    checksum that release's nbgrader wrote on it."""
    nb = perfect(course, NB)
    check = cell_of(nb, "ex1_check")
    check["source"], check["metadata"]["nbgrader"]["points"] = OLD_CHECK, 2
    check["metadata"]["nbgrader"]["checksum"] = compute_checksum(from_dict(check))
    return nb


def checked_as_it_stands(nb: dict) -> tuple[dict, list[str]]:
    """nb once its hand-in cell ran on it (no kernel: the checks cannot pass), as Colab saves it:
    what it printed, then the receipt; and the lines it showed."""
    nb = copy.deepcopy(nb)
    (cell,) = [c for c in nb["cells"] if "before_you_hand_in(" in hand_in.text_of(c)]
    (call,) = [n for n in ast.walk(ast.parse(hand_in.text_of(cell))) if isinstance(n, ast.Call)]
    read = hand_in.Read(nb, "Colab's copy of this notebook", f"hand in {NB}.ipynb")
    lines, receipt = the_cell.verdict(read, NB, ast.literal_eval(call.args[1]), {}, None)
    printed = {"output_type": "stream", "name": "stdout", "text": "\n".join(lines[:-1]) + "\n"}
    shown = {"output_type": "display_data", "metadata": {}}
    shown["data"] = {"text/plain": lines[-1], hand_in.MIME: receipt}
    cell["outputs"] = [printed, shown]
    return nb, lines


@dataclass
class Handed:
    course: Path
    by: dict[str, collect.Found]  # each file as collect found it, by student
    report: str  # reports/collect.md
    erin_saw: list[str]  # the lines erin's hand-in cell showed


@pytest.fixture(scope="module")
def handed(released, tmp_path_factory) -> Handed:
    """Canvas's zip of 01 collected (--notebook 01_attention)."""
    folder = tmp_path_factory.mktemp("named")
    course = Path(shutil.copytree(released, folder / "course"))
    (course / "roster.csv").write_text(ROSTER)
    untouched = json.loads((course / "release" / NB / f"{NB}.ipynb").read_text())
    erin, said = checked_as_it_stands(colab_shaped(untouched))
    files = [
        (ALICE, json.dumps(colab_shaped(workshop_copy(course)))),
        (BOB, json.dumps(colab_shaped(another_release(course)))),
        (CAROL, b""),
        (DAVE, "def scaled_dot_product_attention(Q, K, V):\n    ...\n"),
        (ERIN, json.dumps(erin)),
        (FRANK, json.dumps(colab_shaped(perfect(course, NB)))),
    ]
    batch = canvas_zip(folder / "submissions.zip", files, datetime(2027, 1, 25, 9))
    found = collect.collect(Course.open(course), batch, notebook=NB)
    by = {item.student: item for item in found}
    return Handed(course, by, (course / "reports" / "collect.md").read_text(encoding="utf-8"), said)


def row(report: str, source: str) -> list[str]:
    """A file's row of collect.md: file, student, notebook, handed in, kept as, status, note."""
    (line,) = [line for line in report.splitlines() if line.startswith(f"| {source} |")]
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_the_workshop_copy_is_named_for_its_student_and_graded_as_it_is(handed):
    course, by, report = handed.course, handed.by, handed.report
    said = row(report, ALICE)
    assert (said[1], said[5]) == ("alice", "counts")
    assert said[6].endswith("[workshop_copy]")
    assert by["alice"].codes == ["workshop_copy"]
    kept = (course / "submitted" / "alice" / NB / f"{NB}.ipynb").read_bytes()
    assert collected.sha256(kept) == by["alice"].sha256  # it stands to be graded
    terminal = report.partition("\n| file")[0]  # the summary the terminal got tops the report
    assert f"counts: {ALICE} (alice / {NB}): {said[6]}" in terminal.splitlines()


def test_the_workshop_copy_is_said_where_the_mark_is_made(released):
    nb = from_dict(colab_shaped(workshop_copy(released)))
    release = Course.open(released).layout.release_notebook(NB)
    assert collect.not_the_release(nb, release, NB) == (
        "workshop_copy",
        "the workshop's notebook (notebooks/01_attention.ipynb, solutions folded in), not the "
        "release: graded as it is, against this release's checks and points [workshop_copy]",
    )


def test_another_releases_notebook_is_named_with_the_cells_not_this_releases(handed):
    course, by, report = handed.course, handed.by, handed.report
    said = row(report, BOB)
    assert (said[1], said[5]) == ("bob", "counts")
    assert said[6].endswith("[not_this_release]") and "another release's ex1_check (" in said[6]
    assert by["bob"].codes == ["not_this_release"]
    # Its check is that release's, untouched: nbgrader runs this release's, and no one is told
    # the student edited it.
    release = Course.open(course).layout.release_notebook(NB)
    raw = json.dumps(another_release(course)).encode()
    assert preflight.preflight(raw, release).repairs == []


def test_the_release_as_handed_out_gets_no_code(handed):
    by, report = handed.by, handed.report
    assert row(report, FRANK)[5:] == ["counts", ""]
    assert by["frank"].codes == []


def test_an_empty_upload_is_empty_not_a_json_error(handed):
    course, by, report = handed.course, handed.by, handed.report
    said = row(report, CAROL)
    assert (said[1], said[2], said[5]) == ("carol", NB, "cannot be graded")
    assert "Expecting value" not in said[6] and "[empty]" in said[6]
    assert by["carol"].codes == ["empty"]
    kept = collected.Store(Course.open(course)).known("carol", NB, collected.sha256(b""))
    assert kept.broken == "the file is empty (0 bytes) [empty]"


def test_a_file_that_is_no_notebook_is_the_student_its_name_names(handed):
    course, by, report = handed.course, handed.by, handed.report
    said = row(report, DAVE)
    assert (said[1], said[2], said[5]) == ("dave", NB, "skipped")
    assert said[6].endswith("[not_a_notebook]") and "ask dave " in said[6]
    assert by["dave"].codes == ["not_a_notebook"]
    assert not (course / "submitted" / "dave").exists()  # nothing to grade; still nothing kept


def test_a_file_whose_own_check_said_not_ready_says_so_with_what_it_said(handed):
    by, report = handed.by, handed.report
    said = row(report, ERIN)
    assert (said[1], said[5]) == ("erin", "counts")
    receipt = hand_in.receipts(json.loads(by["erin"].raw))[0]
    stubs = [line for line in handed.erin_saw if line.startswith("❌")]
    assert len(stubs) == 2  # Exercise 0 and 1 still stubs
    assert said[6] == (
        f'its "Before you hand in" said not ready ({receipt["checked"]}): {stubs[0]}; '
        f"{stubs[1]}; checks: ex0_check not run, ex1_check not run [not_ready]"
    )
    assert by["erin"].codes == ["not_ready"]


def test_a_ready_receipt_is_not_noted(released):
    nb, _ = checked_as_it_stands(colab_shaped(perfect(released, NB)))
    release = Course.open(released).layout.release_notebook(NB)
    receipt = hand_in.receipts(nb)[0]  # as a kernel that ran the notebook would have said
    receipt["ready"], receipt["checks"] = True, dict.fromkeys(receipt["checks"])
    assert collect.marks(json.dumps(nb).encode(), release, NB) == []
    receipt["ready"] = False
    assert [code for code, _ in collect.marks(json.dumps(nb).encode(), release, NB)] == [
        "not_ready"
    ]


def test_an_edited_check_is_restored_reported_and_told_to_its_student(released, tmp_path):
    course = Path(shutil.copytree(released, tmp_path / "course"))
    opened = Course.open(course)
    nb = colab_shaped(perfect(course, NB))
    cell_of(nb, "ex1_check")["source"] = ["pass\n"]
    path = tmp_path / f"{NB}.ipynb"
    path.write_text(json.dumps(nb))
    release = opened.layout.release_notebook(NB)
    text, outcome = autograde.prepare(opened.layout, "alice", NB, path, release)
    assert outcome.repairs == ["ex1_check: check edited, restored from the release"]
    ran = hand_in.text_of(cell_of(json.loads(text), "ex1_check"))  # with its hidden tests
    assert ran.splitlines()[0] == cell_of(release, "ex1_check").source
    page = opened.layout.notebook("feedback", NB, "alice")
    page.parent.mkdir(parents=True)
    page.write_text("<html><body>\n<p>1 / 4</p>\n</body></html>")
    feedback_notes.tell(page, outcome.repairs)
    said = feedback_notes.sentence(outcome.repairs[0])
    assert said == (
        "Your check cell for Exercise 1 did not hold the check as handed out; the check as "
        "handed out was put back in its place and run, so your code was checked as everyone's "
        "was."
    )
    assert f"<li>{said.replace(chr(39), '&#x27;')}</li>" in page.read_text()


def test_a_file_that_is_no_notebook_is_its_students_not_nothing(handed, tmp_path):
    """dave's .py alone: named as his, for 01, over every collect, never as nothing handed in."""
    course = Path(shutil.copytree(handed.course, tmp_path / "course"))
    absent = collect.missing(Course.open(course))
    assert "dave" not in absent[""] and "dave" not in absent[NB]
    (other,) = collected.Store(Course.open(course)).others.values()
    assert (other.student, other.assignment, other.source) == ("dave", NB, DAVE)
    assert collect.no_notebook(Course.open(course)) == [f"dave / {NB}: no notebook, only {DAVE}"]
    empty = tmp_path / "nothing new"
    empty.mkdir()
    printed = collect.collect(Course.open(course), empty).summary  # a later collect
    assert f"dave (Dave Doe) / {NB}: no notebook, only {DAVE}" in printed.splitlines()
    report = (course / "reports" / "collect.md").read_text(encoding="utf-8")
    assert f"\n- dave (Dave Doe) / {NB}: no notebook, only {DAVE}\n" in report
    assert collect.missing(Course.open(course)) == absent


def test_a_file_graded_as_it_is_is_named_on_its_row_and_its_feedback_page(handed, tmp_path):
    """alice's workshop copy, bob's other release and frank's release, graded (as autograde
    would save them): each row and page names the code of the file graded, frank's nothing."""
    course = Path(shutil.copytree(handed.course, tmp_path / "course"))
    opened = Course.open(course)
    graded = [Outcome(s, NB, "graded", 4, 4) for s in ("alice", "bob", "frank")]
    scores.write_scores_table(opened, graded, "none", EngineOptions())
    table = (course / "reports" / "autograde.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0][2:]: line for line in table.splitlines()[2:5]}
    assert rows["alice"].endswith(
        f" | {NB}: the workshop's copy, graded as it is [workshop_copy] |"
    )
    assert rows["bob"].endswith(" [not_this_release] |")
    assert rows["frank"].endswith(" |  |")  # nothing to review
    for student in ("alice", "bob", "frank"):
        page = opened.layout.notebook("feedback", NB, student)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html><body>\n<p>4 / 4</p>\n</body></html>")
    bundle_feedback(Course.open(course), {})
    pages = {s: opened.layout.notebook("feedback", NB, s).read_text() for s in ("alice", "bob")}
    assert 'id="wrong-file" data-code="workshop_copy"' in pages["alice"]
    assert 'id="wrong-file" data-code="not_this_release"' in pages["bob"]
    assert "wrong-file" not in opened.layout.notebook("feedback", NB, "frank").read_text()
