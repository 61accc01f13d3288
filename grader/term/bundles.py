"""Feedback per assignment, as an LMS's bulk upload of feedback takes it (`make feedback`):

    reports/feedback_bundles/NN_topic.zip     one per assigned notebook: a page per student

Each page is named after the file the student handed in (as collect kept it in collected/),
`.html` for `.ipynb`, which is what the LMSs match a feedback file by:

    Canvas  smithjohn_12345_67890_01_attention.html     the user id and the attachment id of the
            submission ("Re-Upload Submissions" on the assignment's page)
    Moodle  John Smith_1234567_assignsubmission_file_01_attention.html   the participant id
            ("Upload multiple feedback files in a zip"; the assignment needs feedback files on)

A file handed in under another name (a folder per student, an emailed copy) gets
STUDENT_NN_topic.html: the student's id first, for an upload that matches by the start of a
name, or to send by hand. A notebook quarantined or failed in the last autograde gets a page that
says why it was not graded and what to do (also written to feedback/STUDENT/NN_topic/, over any
page of an earlier run), never an old score. A notebook whose written answer still waits for its
hand grade keeps nbgrader's page with a banner that says so and no score where the notebook's
total and that answer's stood (hand_grading.py); with --partial, the banner says the score shown
is partial. A notebook for which only another notebook was handed in (collected.py) gets a page
that says which was received and what to hand in, named after that file, so that Canvas puts it
on the submission it came with; once the right one is collected, the page goes. A notebook
graded once preflight repaired it says at the top of its page what was repaired, a sentence each,
and one not made from the release handed out (the workshop's copy) that it was graded as it is
(feedback_notes.py). The bundles are rebuilt from feedback/ each time.
"""

from __future__ import annotations

import html
import zipfile
from pathlib import Path, PurePosixPath

from ..engine import review
from ..outcome import Status
from . import collected, feedback_notes, hand_grading
from .course_open import Course
from .roster import lms_name
from .scores import load_outcomes

WHAT_TO_DO = {
    Status.QUARANTINED: (
        "Your file could not be graded as handed in. Download the notebook again from the course "
        "page, copy your answers into it, run it from top to bottom (Runtime → Restart and run "
        "all in Colab), save it (File → Download → .ipynb) and hand that file in again."
    ),
    Status.FAILED: (
        "Grading stopped before your notebook finished. Run it from top to bottom (Runtime → "
        "Restart and run all in Colab): a cell that runs for minutes, never ends or fills the "
        "memory is the one to fix. Then hand it in again."
    ),
}
NOT_GRADED = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{name}: not graded</title></head>
<body>
<h1>{name}: not graded</h1>
<p><strong>Why:</strong> {reason}</p>
<p><strong>What to do:</strong> {what}</p>
<p>Nothing was scored for this notebook yet: it is not a zero. Ask your instructor if the due
date has passed.</p>
</body></html>
"""


WRONG_NOTEBOOK = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{name}: wrong notebook</title></head>
<body>
<h1 id="wrong-notebook">{name}: wrong notebook</h1>
<p>The file you handed in for {name} is notebook {other}, so {name} could not be graded (and
the file was not graded as {other} either).</p>
<p><strong>What to do:</strong> hand in {name}: open your {name} notebook in Colab, save it (File
→ Download → .ipynb) and hand that file in for {name}.</p>
<p>Nothing was scored for this notebook yet: it is not a zero. Ask your instructor if the due
date has passed.</p>
</body></html>
"""
WRONG_MARK = 'id="wrong-notebook"'


def page_name(store: collected.Store, student: str, name: str, wrong: dict | None = None) -> str:
    """The page's name in the zip: the graded file's, where it came from Canvas or Moodle, or
    the file handed in for it that is another notebook (`wrong`: collected.Store.wrong)."""
    path = store.course.layout.notebook("submitted", name, student)
    kept = None
    if path.is_file():
        kept = store.known(student, name, collected.sha256(path.read_bytes()))
    kept = kept or (wrong or {}).get((student, name))
    if kept is not None:
        source = PurePosixPath(kept.source)
        page = source.with_suffix(".html").name
        if lms_name(source.stem):
            return page
        if lms_name(source.parent.name):  # Moodle's folder per student
            return f"{source.parent.name}/{page}"
    return f"{student}_{name}.html"


def not_graded_page(course: Course, outcome) -> Path:
    """The page of a notebook autograde could not grade, in feedback/ where its feedback goes."""
    name = outcome.assignment
    page = course.layout.notebook("feedback", name, outcome.student)
    page.parent.mkdir(parents=True, exist_ok=True)
    reason = html.escape(outcome.reason or outcome.status)
    what = html.escape(WHAT_TO_DO[outcome.status])
    page.write_text(NOT_GRADED.format(name=name, reason=reason, what=what), encoding="utf-8")
    return page


def wrong_notebook_pages(course: Course, store: collected.Store, wrong: dict) -> None:
    """A page for each assigned notebook for which only another was handed in (`wrong`:
    store.wrong()), in feedback/ where its feedback goes; such a page of a notebook collected
    right since is stale, and goes."""
    layout = course.layout
    once = {pair for pair, kept in store.files.items() if any(k.wrong for k in kept.values())}
    for student, name in once - wrong.keys():
        page = layout.notebook("feedback", name, student)
        if page.is_file() and WRONG_MARK in page.read_text(encoding="utf-8"):
            page.unlink()
    for (student, name), kept in wrong.items():
        if name not in course.term.assigned:
            continue
        page = layout.notebook("feedback", name, student)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(WRONG_NOTEBOOK.format(name=name, other=kept.wrong), encoding="utf-8")


def bundle_feedback(course: Course, pending: dict, partial: bool = False) -> list[Path]:
    """One zip per assigned notebook with feedback; returns their paths. `pending`: the written
    answers still to grade by hand (hand_grading.waiting)."""
    layout = course.layout
    folder = layout.report("feedback_bundles")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.zip"):  # a notebook whose feedback is gone keeps no stale zip
        old.unlink()
    store, not_graded = collected.Store(course), set()
    for outcome in load_outcomes(course):
        if outcome.status in WHAT_TO_DO:
            not_graded.add((outcome.student, outcome.assignment))
            not_graded_page(course, outcome)
        else:  # the page tells the student what was done with their file, if anything
            page = layout.notebook("feedback", outcome.assignment, outcome.student)
            made_from = review.Release.read(outcome.made_from) if outcome.made_from else None
            codes = store.codes(outcome.student, outcome.assignment)
            feedback_notes.tell(page, outcome.repairs, made_from, codes)
    for (student, name), ids in pending.items():
        page = layout.notebook("feedback", name, student)
        if page.is_file() and (student, name) not in not_graded:
            hand_grading.mark_page(page, name, ids, partial)
    written = []
    wrong = store.wrong()
    wrong_notebook_pages(course, store, wrong)
    for name in course.term.assigned:
        pages = [p for _, n, p in layout.students_notebooks("feedback") if n == name]
        if not pages:
            continue
        target = layout.report("feedback_bundles", f"{name}.zip")
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for page in pages:
                whose, _ = layout.whose(page)
                archive.write(page, arcname=page_name(store, whose, name, wrong))
        written.append(target)
    return written
