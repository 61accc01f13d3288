"""What preflight repaired in a submission, told to its student on the feedback page.

Preflight (grader/engine/preflight.py) repairs a file before grading and records each repair
for the instructor, in reports/autograde.json (Outcome.repairs). Here each becomes a sentence for
the student, in a box at the top of their feedback page: what was wrong with the file they
handed in, and what the grader did about it, so that a restored check or an ignored copy does not
go unexplained. The repairs are read in preflight's own words; one this module does not know is
told as it stands.

A submission made from an earlier release (grader/engine/review.made_from, after an errata) is not
its student's fault: its page says first which release it was made from and that the grader
brought it up to date, and the repairs that release explains (a graded cell the errata added, one
it removed) are told there, as the update they are, never as the student's doing.

A file not made from the release handed out (the workshop's copy, another course's or term's
notebook: collect's codes, recorded in collected/index.jsonl) counts and is graded as it is: its
page says so in a box of its own, and what to hand in next time.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from transformer_lab.catalogue import of_cell
from transformer_lab.hand_in import KINDS

from ..engine.review import Release
from .collected import NOT_THIS_RELEASE, WORKSHOP_COPY

MARK = 'id="repairs"'
BOX = """<div class="alert alert-info" {mark}><strong>Your file was repaired before it was
graded.</strong>
<ul>
{items}
</ul>
<p>Next time, run the notebook's last cell, <em>Before you hand in</em>, before you download it:
it finds these while you can still fix them.</p>
</div>"""
RELEASE_MARK = 'id="old-release"'
OLD_RELEASE = """<div class="alert alert-info" {mark} data-release="{date}"><strong>Your notebook
was made from the release of {date}; the grader brought it up to date.</strong> The notebook
changed after you downloaded your copy: your work was graded against the notebook as it is
now.{items}
</div>"""
WRONG_FILE_MARK = 'id="wrong-file"'
WRONG_FILE = """<div class="alert alert-warning" {mark} data-code="{code}"><strong>{what}</strong>
It was graded as it is, against this release's checks and points. Next time, hand in the notebook
made from the course's release: open it from the course page (its Colab link), do your work in
it, and download that one (File → Download → .ipynb).
</div>"""
# collect's code of the file handed in -> what it was (_wrong_file_box)
HANDED = {
    WORKSHOP_COPY: "The file you handed in was the workshop's copy of this notebook, not the "
    "notebook of the course's release.",
    NOT_THIS_RELEASE: "The file you handed in was not made from this course's release of the "
    "notebook: perhaps another course's, or an earlier term's.",
}
# The repairs an earlier release explains, as the update they are (_update).
UPDATED = {
    "removed": "{title}'s {cell} (cell {n} from the top) is no longer graded in this notebook; "
    "it ran as an ordinary cell.",
    "added": "{title}'s {cell} came with the later release: it was put in as handed out, and "
    "graded.",
}
GRADE_ID = r"'?(?P<id>[\w-]+)'?"
# preflight's repairs that an earlier release explains: a graded cell it had and this one lacks,
# one this one has and it lacked.
UNKNOWN_ID = rf"cell (?P<n>\d+): unknown grade id {GRADE_ID}, grading metadata removed"
CHECK_MISSING = rf"{GRADE_ID}: check missing, restored from the release"
STUB_MISSING = rf"{GRADE_ID}: exercise cell \(as a stub\) missing, restored from the release"
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
        UNKNOWN_ID,
        "Cell {n} carried the grading label of a cell this notebook does not have ({id}), perhaps "
        "pasted from another notebook; it ran as an ordinary cell and was not graded.",
    ),
    (
        # nbgrader grades a written answer too: preflight calls every graded cell a check
        CHECK_MISSING,
        {
            "written answer": "Your written answer for {title} was missing; it was put back "
            "empty, as handed out, so it counts as not answered.",
            None: "Your check cell for {title} was missing; it was put back from the notebook "
            "as handed out, and run.",
        },
    ),
    (
        # the student's edit, or a copy not made from the release: told without blame
        rf"{GRADE_ID}: check edited, restored from the release",
        "Your check cell for {title} did not hold the check as handed out; the check as handed "
        "out was put back in its place and run, so your code was checked as everyone's was.",
    ),
    (
        STUB_MISSING,
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


def explained(repairs: list[str], made_from: Release | None) -> tuple[list[str], list[str]]:
    """(the repairs of the student's own file, those the release it was made from explains)."""
    own = [r for r in repairs if _update(r, made_from) is None]
    return own, [r for r in repairs if r not in own]


def _update(repair: str, made_from: Release | None) -> str | None:
    """A repair that the earlier release a submission was made from explains, as the update it
    is: a graded cell of that release the current one lacks, or one the current one added;
    None where it is the student's file's own."""
    if made_from is None:
        return None
    removed = re.fullmatch(UNKNOWN_ID, repair)
    if removed and removed["id"] in made_from.grade_ids:
        return UPDATED["removed"].format(**removed.groupdict(), **_cell(removed["id"]))
    added = re.fullmatch(CHECK_MISSING, repair) or re.fullmatch(STUB_MISSING, repair)
    if added and added["id"] not in made_from.grade_ids:
        return UPDATED["added"].format(**_cell(added["id"]))
    return None


def _release_box(made_from: Release, updated: list[str]) -> str:
    items = "".join(f"\n<li>{html.escape(_update(r, made_from))}</li>" for r in updated)
    return OLD_RELEASE.format(
        mark=RELEASE_MARK,
        date=made_from.date,
        items=f"\n<ul>{items}\n</ul>" if items else "",
    )


def _wrong_file_box(codes: list[str], made_from: Release | None) -> list[str]:
    """The box of a file not made from the release handed out, where collect's codes say so;
    none for this course's copy from before an errata (`made_from`): its own box tells it."""
    told = [c for c in codes if c in HANDED and not (made_from and c == NOT_THIS_RELEASE)]
    return [
        WRONG_FILE.format(mark=WRONG_FILE_MARK, code=c, what=html.escape(HANDED[c])) for c in told
    ]


def tell(
    page: Path, repairs: list[str], made_from: Release | None = None, codes: list[str] | None = None
) -> None:
    """Put the repairs, a sentence each, at the top of a feedback page (once: a page told
    already is left as it is; a page not written yet, as none). `made_from`: the earlier release
    the submission was made from (review.made_from), said first with the repairs it explains;
    `codes`: collect's codes of the file graded (collected.Store.codes), the workshop's copy or
    another release's notebook said before all."""
    wrong_file = _wrong_file_box(codes or [], made_from)
    if not (repairs or made_from or wrong_file) or not page.is_file():
        return
    text = page.read_text(encoding="utf-8")
    if any(mark in text for mark in (MARK, RELEASE_MARK, WRONG_FILE_MARK)):
        return
    own, updated = explained(repairs, made_from)
    boxes = wrong_file + ([_release_box(made_from, updated)] if made_from else [])
    items = "\n".join(f"<li>{html.escape(sentence(r))}</li>" for r in own)
    boxes += [BOX.format(mark=MARK, items=items)] if own else []
    box = "\n".join(boxes)
    text, found = re.subn(r"(<body[^>]*>)", lambda m: m[1] + "\n" + box, text, count=1)
    page.write_text(text if found else box + "\n" + text, encoding="utf-8")
