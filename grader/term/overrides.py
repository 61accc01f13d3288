"""Overrides: a hand score given in the formgrader on an autograded check (3 of 3 made 2, say).
Like a hand grade it belongs to the answer it judged (grader/engine/kept_grades.py): kept, and
never asked about, while the answer stays the same. When a regrade finds the answer changed (a
fixed resubmission), the override judged code that no longer exists: the new autograde counts,
and the override is set aside on record (COURSE/hand_grades.jsonl), named with both scores in
autograde's report and export's summary until it is decided:

    python -m grader override keep STUDENT NOTEBOOK GRADE_ID     the override counts again
    python -m grader override clear STUDENT NOTEBOOK GRADE_ID    the autograde stands

Either is written to the record and the term's log; nothing is deleted.

A hand score whose cell's points a release changed (an errata moves ex1_check from 2 to 3
points; the override said 1 of 2) keeps its number, as any hand grade of an unchanged answer
does, but 1 of 2 need not mean 1 of 3: the release names each one for review, with the
maximum it was given against and the new one (`rescaled`, `said_rescaled`), and writes it to
the record ("points changed").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..course import GradingError
from ..engine import kept_grades
from ..engine.kept_grades import CLEARED, KEPT, POINTS_CHANGED, SET_ASIDE
from ..outcome import SetAside
from . import term_log
from .course_open import Course
from .names import namer
from .nbgrader_apps import gradebook

ACTIONS = ("keep", "clear")
COMMAND = "python -m grader override {action} {student} {notebook} {grade_id}"


def _key(line: dict) -> tuple[str, str, str]:
    return line["student"], line["notebook"], line["grade_id"]


def pending(course: Course, gb) -> list[tuple[str, str, SetAside]]:
    """(student, notebook, the override set aside) for each one not decided yet: no `keep` or
    `clear` since, and no hand score entered again in the formgrader. The autograde's score is
    the gradebook's now."""
    from nbgrader.api import MissingEntry

    last: dict[tuple, dict] = {}
    for line in kept_grades.recorded(course.layout):
        if line["event"] in (SET_ASIDE, KEPT, CLEARED) and line["grade_id"]:
            last[_key(line)] = line
    found = []
    for (student, notebook, grade_id), line in sorted(last.items()):
        if line["event"] != SET_ASIDE or gb is None:
            continue
        try:
            grade = gb.find_grade(grade_id, notebook, notebook, student)
        except MissingEntry:  # a cell an errata removed: nothing left to decide
            continue
        if grade.manual_score is None:
            aside = SetAside(grade_id, line["manual_score"], grade.auto_score, grade.max_score)
            found.append((student, notebook, aside))
    return found


def said(overrides: list[tuple[str, str, SetAside]], who=str) -> str:
    """The overrides set aside, with both scores and the command that keeps each: for
    autograde's terminal and report, and export's summary. Empty where there are none."""
    if not overrides:
        return ""
    n = len(overrides)
    lines = [
        f"{n} override{'s' * (n != 1)} set aside: the answer {'each' if n != 1 else 'it'} judged "
        "has changed since, so the new autograde counts; the override is kept on record "
        "(hand_grades.jsonl):"
    ]
    lines += [
        f"  {notebook} {line(student, notebook, s, who)}" for student, notebook, s in overrides
    ]
    clear = COMMAND.format(action="clear", student="STUDENT", notebook="NN_topic", grade_id="ID")
    lines.append(f"To take one off this list, the autograde standing: `{clear}`.")
    return "\n".join(lines)


def line(student: str, notebook: str, s: SetAside, who=str) -> str:
    """One override set aside: its grade id, whose, both scores and the command that keeps it."""
    keep = COMMAND.format(action="keep", student=student, notebook=notebook, grade_id=s.grade_id)
    return (
        f"{s.grade_id}, {who(student)}: autograde {_score(s.autograde)} / {s.max_score:g} "
        f"counts, override {_score(s.override)} / {s.max_score:g} set aside (to count it again: "
        f"`{keep}`)"
    )


@dataclass(frozen=True)
class Rescaled:
    """A hand score that a release left standing on a cell whose points it changed: given as
    `manual_score` of `old_max`, it now reads as of `new_max`."""

    student: str
    notebook: str
    grade_id: str
    manual_score: float
    old_max: float
    new_max: float
    written: bool = False  # a written answer's hand grade; else an override of a check


def rescaled(gb, points: dict[str, dict[str, tuple[float, float]]]) -> list[Rescaled]:
    """Each hand score the gradebook (`gb`) holds now on a cell whose points a release changed
    (`points`: notebook -> grade id -> (points before, after), as errata.Change has them). An
    override set aside holds no hand score: it is named as set aside, not here."""
    found = []
    for notebook, changed in sorted(points.items()):
        written = {cell.name for cell in gb.find_notebook(notebook, notebook).solution_cells}
        grades = (
            (s.student.id, g) for s in gb.notebook_submissions(notebook, notebook) for g in s.grades
        )
        found += [
            Rescaled(student, notebook, g.name, g.manual_score, *changed[g.name], g.name in written)
            for student, g in grades
            if g.name in changed and g.manual_score is not None
        ]
    return sorted(found, key=lambda r: (r.notebook, r.grade_id, r.student))


def record_rescaled(course: Course, found: list[Rescaled]) -> None:
    """Each one written to the record (hand_grades.jsonl), event "points changed", with both
    maxima."""
    for r in found:
        hand = kept_grades.HandGrade(
            r.student, r.notebook, r.grade_id, None, r.written, manual_score=r.manual_score
        )
        maxima = {"old_max": {r.grade_id: r.old_max}, "new_max": {r.grade_id: r.new_max}}
        kept_grades.record(course.layout, POINTS_CHANGED, [hand], **maxima)


def said_rescaled(found: list[Rescaled], who=str) -> str:
    """The hand scores a release left standing on cells whose points it changed, each with the
    maximum it was given against and the new one: for the release's output and the term's log.
    Empty where there are none."""
    if not found:
        return ""
    n = len(found)
    lines = [
        f"{n} hand score{'s' * (n != 1)} given against another maximum, to review (the release "
        "changed the cell's points; the score stands as given, `make formgrader` to change it):"
    ]
    for r in found:
        kind = "written answer" if r.written else "override"
        lines.append(
            f"  {r.notebook} {r.grade_id}, {who(r.student)}: {kind} {r.manual_score:g} of "
            f"{r.old_max:g} when given, now of {r.new_max:g}"
        )
    return "\n".join(lines)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def override(course: Course, action: str, student: str, notebook: str, grade_id: str) -> str:
    """`keep`: the override set aside last counts again; `clear`: the autograde stands, the
    override (set aside, or counting now) kept on record only. What to print."""
    layout = course.layout
    with gradebook(course) as gb:
        if gb is None:
            raise GradingError(f"no gradebook in {layout.root}: nothing is graded there yet")
        grade = _grade(gb, student, notebook, grade_id)
        hand = _hand(layout, grade, action, (student, notebook, grade_id))
        if action == "keep":
            grade.manual_score, grade.extra_credit = hand.manual_score, hand.extra_credit
        else:
            grade.manual_score, grade.extra_credit = None, None
        grade.needs_manual_grade = False
        gb.db.commit()
        max_score, auto = grade.max_score, grade.auto_score
        who = namer(course, gb)(student)
    kept_grades.record(layout, KEPT if action == "keep" else CLEARED, [hand])
    scores = (
        f"override {_score(hand.manual_score)} / {max_score:g}, "
        f"autograde {_score(auto)} / {max_score:g}"
    )
    counts = "the override counts again" if action == "keep" else "the autograde counts"
    text = f"{who} / {notebook} {grade_id}: {counts} ({scores})"
    term_log.append(course, f"override {action} {student} {notebook} {grade_id}", text)
    return f"{text}; recorded in {layout.hand_grades}"


def _grade(gb, student: str, notebook: str, grade_id: str):
    from nbgrader.api import MissingEntry

    try:
        grade = gb.find_grade(grade_id, notebook, notebook, student)
    except MissingEntry:
        raise GradingError(
            f"{student} has no graded cell {grade_id} in {notebook} in the gradebook: give the "
            "student's id, the notebook (NN_topic) and the check's grade id as autograde's report "
            "names them"
        ) from None
    solutions = {cell.name for cell in grade.notebook.notebook.solution_cells}
    if grade_id in solutions:
        raise GradingError(
            f"{grade_id} is a written answer, not an override of a check: grade it in "
            "`make formgrader`"
        )
    return grade


def _hand(layout, grade, action: str, key: tuple[str, str, str]) -> kept_grades.HandGrade:
    """The override the action is about: the last one set aside (to keep), else the one
    counting now (to clear)."""
    lines = [
        line for line in kept_grades.recorded(layout) if line["grade_id"] and _key(line) == key
    ]
    aside = [line for line in lines if line["event"] == SET_ASIDE]
    if action == "keep" and aside:
        return kept_grades.hand_grade(aside[-1])
    if action == "clear" and grade.manual_score is not None:
        student, notebook, grade_id = key
        return kept_grades.HandGrade(
            student,
            notebook,
            grade_id,
            None,
            manual_score=grade.manual_score,
            extra_credit=grade.extra_credit,
        )
    if action == "clear" and aside:
        return kept_grades.hand_grade(aside[-1])
    student, notebook, grade_id = key
    raise GradingError(
        f"no override of {grade_id} for {student} / {notebook} is set aside: nothing to {action} "
        "(an override is given in `make formgrader`)"
    )
