"""`make export`: the gradebook read once, in one session, into one Sheet (gradesheet.py: every
student's marks, the notebooks that count, each submission's score, time and lateness), then
written in the three shapes an LMS takes:

    reports/grades.csv          nbgrader's export, with a status column (gradesheet.NbgraderCsv)
    reports/gradesheet.csv      one row per student, a score and a status per notebook, a total
    reports/canvas_import.csv   Canvas's gradebook import (canvas.py)

Nothing here can change a score: export reads the gradebook and writes reports. It writes
nothing from a gradebook the last autograde has not caught up with (a release that changed a
check's points, a newer file collected, a due date or extension moved since): it refuses, in one
line that names them (gradesheet.Stale), before any file. A student who has left the class list
(roster.dropped) is left out of the three files and of what waits for a hand grade, unless
`dropped` is "keep"; their submissions and grades stay in the gradebook and the folders. It ends
with what still waits for the instructor: written answers to grade by hand, and overrides set
aside since their answers changed (overrides.py), each with both scores.
"""

from __future__ import annotations

from pathlib import Path

from . import canvas, gradesheet, hand_grading, overrides
from .course_open import Course
from .names import namer
from .nbgrader_apps import gradebook


def export(
    course: Course,
    target: Path,
    partial: bool = False,
    canvas_export: Path | None = None,
    dropped: str = gradesheet.LEAVE_OUT,
) -> list[str]:
    """The three files (grades.csv at `target`), after keeping the columns of Canvas's own
    export where one is given (canvas.keep_columns); returns what to print. `partial`: a
    notebook whose written answer waits for its hand grade gets its partial score, marked.
    `dropped`: "leave-out" (the default) or "keep" those who left the class list. Raises
    gradesheet.Stale, having written nothing, where the last autograde is behind."""
    course.layout.assignments()  # nothing released: one line, before any file
    said, left = [], gradesheet.left_out(course, dropped)
    with gradebook(course, create=True) as gb:
        gradesheet.refuse_stale(course, gb, dropped)
        if canvas_export:
            kept = canvas.keep_columns(course, canvas_export)
            said.append(f"Canvas's columns, kept for canvas_import.csv: {', '.join(kept)}")
        sheet = gradesheet.read(course, gb, partial, dropped)
        who = namer(course, gb)
        written = hand_grading.written_answers(gb, [nb.name for nb in sheet.notebooks])
        set_aside = [o for o in overrides.pending(course, gb) if o[0] not in left]
    if left:
        said.append(
            "left out, no longer on the class list (their work is kept; --dropped keep to "
            f"export them): {', '.join(map(who, left))}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    gradesheet.NbgraderCsv(to=str(target), partial=partial).write(course, sheet)
    said.append(f"wrote {target}")
    course.layout.step("reports").mkdir(parents=True, exist_ok=True)
    said.append(f"wrote {gradesheet.write_gradesheet(course, sheet)}")
    path, penalties = canvas.write_import(course, sheet)
    said.append(f"wrote {path} ({penalties})")
    later = [nb.name for nb in sheet.notebooks if not nb.due]
    if later:
        said.append(f"not due yet, nothing handed in is 'not due', not 0: {', '.join(later)}")
    pending = {
        (r.id, name): m.waiting for r in sheet.rows for name, m in r.marks.items() if m.waiting
    }
    summary = hand_grading.summary(pending, partial, who, written)
    aside = overrides.said(set_aside, who)
    return said + [summary] * bool(summary) + [aside] * bool(aside)
