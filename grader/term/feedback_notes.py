"""What preflight repaired in a submission, told to its student on the feedback page.

Preflight (grader/engine/preflight.py) repairs a file before grading and records each repair
for the instructor, in reports/autograde.json (Outcome.repairs). Here each becomes a sentence for
the student, in a box at the top of their feedback page: what was wrong with the file they
handed in, and what the grader did about it, so that a restored check or an ignored copy does not
go unexplained. The repairs are read in preflight's own words; one this module does not know is
told as it stands.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from transformer_lab.catalogue import of_cell
from transformer_lab.hand_in import KINDS

MARK = 'id="repairs"'
BOX = """<div class="alert alert-info" {mark}><strong>Your file was repaired before it was
graded.</strong>
<ul>
{items}
</ul>
<p>Next time, run the notebook's last cell, <em>Before you hand in</em>, before you download it:
it finds these while you can still fix them.</p>
</div>"""
GRADE_ID = r"'?(?P<id>[\w-]+)'?"
# preflight's words -> the student's: {cell} is "cell", "check cell" or "written answer" (the
# words of a dict are by which), {title} the exercise, {n} the cell's place from the top, {was}
# and {want} a cell type.
SENTENCES = (
    (
        rf"cell (?P<n>\d+): duplicate of graded cell {GRADE_ID}, not graded twice",
        "You had pasted a second copy of {title}'s {cell} (cell {n} from the top); only the "
        "first was graded.",
    ),
    (
        rf"cell (?P<n>\d+): unknown grade id {GRADE_ID}, grading metadata removed",
        "Cell {n} carried the grading label of a cell this notebook does not have ({id}), perhaps "
        "pasted from another notebook; it ran as an ordinary cell and was not graded.",
    ),
    (
        # nbgrader grades a written answer too: preflight calls every graded cell a check
        rf"{GRADE_ID}: check missing, restored from the release",
        {
            "written answer": "Your written answer for {title} was missing; it was put back "
            "empty, as handed out, so it counts as not answered.",
            None: "Your check cell for {title} was missing; it was put back from the notebook "
            "as handed out, and run.",
        },
    ),
    (
        rf"{GRADE_ID}: exercise cell \(as a stub\) missing, restored from the release",
        "Your {cell} for {title} was missing; it was put back empty, as handed out, so {title} "
        "was graded as not done.",
    ),
    (
        rf"{GRADE_ID}: grading metadata restored \(cell (?P<n>\d+)\)",
        "Your {cell} for {title} (cell {n} from the top) had lost its grading label; it was "
        "found by its place and content, and graded.",
    ),
    (
        rf"{GRADE_ID}: was a (?P<was>\w+) cell, restored to (?P<want>\w+)",
        "Your {cell} for {title} had been turned into a {was} cell; it was turned back into a "
        "{want} cell and graded as one.",
    ),
    (
        rf"{GRADE_ID}: tag that would skip it removed",
        "Your {cell} for {title} carried a tag that skips a cell when the notebook runs; the tag "
        "was taken off so that it ran.",
    ),
)


def _cell(grade_id: str) -> dict[str, str]:
    """How the student knows a graded cell: its exercise's title, and which of its cells."""
    try:
        exercise = of_cell(grade_id)
    except KeyError:  # a cell of the course's own, not in the lab's catalogue
        return {"title": grade_id, "cell": "cell"}
    if grade_id == exercise.check:
        return {"title": exercise.title, "cell": "check cell"}
    if grade_id in exercise.written:
        return {"title": exercise.title, "cell": "written answer"}
    return {"title": exercise.title, "cell": "cell"}


def sentence(repair: str) -> str:
    """One repair, as preflight recorded it, in a sentence for the student."""
    for pattern, said in SENTENCES:
        found = re.fullmatch(pattern, repair)
        if found:
            words = {**found.groupdict(), **_cell(found["id"])}
            for kind in ("was", "want"):
                words[kind] = KINDS.get(words.get(kind), words.get(kind))
            if isinstance(said, dict):  # worded by which cell it is
                said = said.get(words["cell"], said[None])
            return said.format(**words)
    return f"Your file was repaired before grading: {repair}."


def tell(page: Path, repairs: list[str]) -> None:
    """Put the repairs, a sentence each, at the top of a feedback page (once: a page told
    already is left as it is; a page not written yet, as none)."""
    if not repairs or not page.is_file():
        return
    text = page.read_text(encoding="utf-8")
    if MARK in text:
        return
    items = "\n".join(f"<li>{html.escape(sentence(r))}</li>" for r in repairs)
    box = BOX.format(mark=MARK, items=items)
    text, found = re.subn(r"(<body[^>]*>)", lambda m: m[1] + "\n" + box, text, count=1)
    page.write_text(text if found else box + "\n" + text, encoding="utf-8")
