"""Written answers still waiting for a hand grade: nbgrader's manually graded cells (notebook
04's prediction) whose grade the gradebook marks `needs_manual_grade`, because nobody has
graded them in the formgrader yet or because the answer changed since (nbgrader keeps the old
hand score and asks for a second look; an unchanged answer keeps its hand grade done through
any regrade: grader/engine/kept_grades.py). An override of a check that nbgrader flagged so
(before this kit kept them) is named as an override, never as a written answer.

Until every such answer of a notebook is graded, the notebook's score is partial: the answer
counts 0. `make export` and `make feedback` therefore leave it out of every file they write
(the score empty, the status "needs hand grading") and say whose it is; `--partial` writes the
partial score on purpose, marked as such.

A written answer asked again carries, in its formgrader comment, a note with the answer graded
(kept_grades.py): the grader's, not the student's, so `make feedback` writes every page with the
note set aside (`notes_aside`), and puts it back only where the answer still waits for its look.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from ..engine.kept_grades import NOTE, without_note
from ..outcome import Outcome, SheetStatus
from . import nbgrader_apps, overrides
from .course_open import Course


def waiting(gb, notebooks) -> dict[tuple[str, str], list[str]]:
    """(student, notebook) -> the grade ids of its written answers still to grade by hand,
    read from the gradebook now (`gb`, the command's session; None where the course has none):
    hand grades entered since the last autograde count."""
    if gb is None:
        return {}
    found: dict[tuple[str, str], list[str]] = {}
    known = {a.name for a in gb.assignments}
    for name in (n for n in notebooks if n in known):
        for submission in gb.assignment_submissions(name):
            ids = [
                grade.name
                for notebook in submission.notebooks
                for grade in notebook.grades
                if grade.needs_manual_grade
            ]
            if ids:
                found[submission.student_id, name] = sorted(ids)
    return found


def written_answers(gb, notebooks) -> set[tuple[str, str]]:
    """(notebook, grade id) of every written answer (a cell both solution and graded) of these
    notebooks, from the gradebook (`gb`; None: none)."""
    known = {a.name for a in gb.assignments} if gb is not None else set()
    found = set()
    for name in (n for n in notebooks if n in known):
        notebook = gb.find_notebook(name, name)
        graded = {cell.name for cell in notebook.grade_cells}
        found |= {(name, cell.name) for cell in notebook.solution_cells if cell.name in graded}
    return found


def _counted(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def summary(pending: dict[tuple[str, str], list[str]], partial: bool, who, written: set) -> str:
    """One paragraph for the terminal: how many answers, in which notebooks, whose (`who`:
    how to name them, names.namer), and what the files written hold for them. `written`: the
    (notebook, grade id) that are written answers (written_answers); any other waiting is an
    override, and is called one. Empty when nothing waits."""
    if not pending:
        return ""
    ids = [(name, i) for (_, name), found in pending.items() for i in found]
    answers = sum(key in written for key in ids)
    kinds = [_counted(answers, "written answer")] * bool(answers)
    kinds += [_counted(len(ids) - answers, "override")] * (len(ids) > answers)
    by_notebook: dict[str, list[str]] = {}
    for student, name in sorted(pending):
        by_notebook.setdefault(name, []).append(who(student))
    lines = [
        f"{' and '.join(kinds)} still need{'s' * (len(ids) == 1)} a hand grade, in "
        f"{_counted(len(pending), 'notebook')} (grade them in `make formgrader`, then run this "
        "again):"
    ]
    lines += [f"  {name}: {', '.join(people)}" for name, people in sorted(by_notebook.items())]
    if partial:
        lines.append(
            f"--partial: their scores are written as they stand, marked '{SheetStatus.PARTIAL}'."
        )
    else:
        lines.append(
            f"Those notebooks' scores are left empty, marked '{SheetStatus.NEEDS}', in every file "
            "written (--partial writes the partial scores, marked so)."
        )
    return "\n".join(lines)


def regraded(outcomes: list[Outcome], who=str) -> str:
    """What a grading did with hand grades, for the terminal and the term's log: how many it
    kept (their answers unchanged), the written answers it asks to grade again (changed), and
    the overrides it set aside (changed: overrides.py). Empty where it met none."""
    kept = sum(o.hand_kept for o in outcomes)
    asked = [f"{who(o.student)} / {o.assignment} {i}" for o in outcomes for i in o.hand_asked]
    aside = [(o.student, o.assignment, s) for o in outcomes for s in o.set_aside]
    lines = []
    if kept or asked:
        said = f"hand grades kept over this grading, their answers unchanged: {kept}"
        if asked:
            said += f"; to grade again, the answer changed: {', '.join(asked)}"
        lines.append(said)
    if aside:
        lines.append(overrides.said(aside, who))
    return "\n".join(lines)


BANNER = '<div class="alert alert-warning" id="hand-grading"><strong>{title}</strong> {text}</div>'
WAITING_TEXT = (
    "Your written answer ({ids}) has not been graded by hand yet; the score of this notebook "
    "comes once it is. The checks below show how your code did."
)
PARTIAL_TEXT = (
    "Your written answer ({ids}) has not been graded by hand yet and counts 0 for now: the "
    "score below is partial."
)
SCORE = r"Score: -?[\d.]+ /"


def mark_page(page: Path, name: str, ids: list[str], partial: bool) -> None:
    """nbgrader's feedback page of a notebook with answers still to grade: a banner that says
    so and, unless `partial`, no score where the notebook's total and those answers' scores
    stood (the checks keep theirs: they are final)."""
    text = page.read_text(encoding="utf-8")
    if 'id="hand-grading"' in text:  # marked already
        return
    said = ", ".join(ids)
    if partial:
        banner = BANNER.format(title="Partial score.", text=PARTIAL_TEXT.format(ids=said))
    else:
        banner = BANNER.format(title="Not graded yet.", text=WAITING_TEXT.format(ids=said))
        blank = f"Score: {SheetStatus.NEEDS} /"
        text = re.sub(rf"(<h4>{re.escape(name)} \(){SCORE}", rf"\g<1>{blank}", text, count=1)
        for grade_id in ids:
            anchor = re.escape(f'href="#{grade_id}"') + r"[^\n]*?\(" + SCORE
            text = re.sub(anchor, lambda m: re.sub(SCORE, blank, m[0]), text, count=1)
            anchor = re.escape(f'<a name="{grade_id}"></a>') + r".*?" + SCORE
            text = re.sub(anchor, lambda m: re.sub(SCORE, blank, m[0]), text, count=1, flags=re.S)
    text, found = re.subn(r"(<body[^>]*>)", lambda m: m[1] + "\n" + banner, text, count=1)
    page.write_text(text if found else banner + "\n" + text, encoding="utf-8")


@contextlib.contextmanager
def notes_aside(course: Course) -> Iterator[None]:
    """Within: every comment of the gradebook without its note of an answer graded (the grader's
    own words alone); after, each note back where its answer still waits for the second look
    and the comment is still as left here (a comment the grader edited meanwhile is theirs). A
    note whose answer had its look (Resolve, a score typed) is not put back: the record and
    reports/changed_answers.md keep the answer graded."""
    with nbgrader_apps.gradebook(course) as gb:
        noted = _noted(gb)
        for comment, whole in noted:
            comment.manual_comment = without_note(whole)
        if noted:
            gb.db.commit()
        kept = [(comment.id, whole) for comment, whole in noted if _waits(comment)]
    try:
        yield
    finally:
        _put_back_notes(course, kept)


def _noted(gb) -> list:
    """(comment, its whole text) of every comment that holds a note; [] without a gradebook."""
    from nbgrader.api import Comment

    if gb is None:
        return []
    found = gb.db.query(Comment).filter(Comment.manual_comment.isnot(None)).all()
    return [(c, c.manual_comment) for c in found if NOTE.search(c.manual_comment)]


def _waits(comment) -> bool:
    """Whether the comment's written answer is flagged for a (second) look."""
    return any(g.name == comment.name and g.needs_manual_grade for g in comment.notebook.grades)


def _put_back_notes(course: Course, kept: list[tuple[str, str]]) -> None:
    if not kept:
        return
    with nbgrader_apps.gradebook(course) as gb:
        for comment_id, whole in kept:
            comment = gb.find_comment_by_id(comment_id)
            if comment.manual_comment == without_note(whole):
                comment.manual_comment = whole
        gb.db.commit()
