"""Hand grades kept over a regrade. A hand grade (a written answer's score, given in the
formgrader) or an override (a hand score on an autograded check) belongs to the answer it judged,
and lasts as long as that answer is unchanged, whatever else changed: a check, the kit, the
release, the points.

nbgrader's SaveAutoGrades marks every grade that has a manual score as needing a grader each
time the scores are saved. So autograde reads the hand grades before it (`before`: the gradebook's
scores, extra credit and comments, each with the digest of the answer it judged in the notebook
last graded, which is what the formgrader showed), and puts them right after it (`after`):

    the answer unchanged            the hand grade or override stays done
    a written answer changed        nbgrader's flag stands: the score is kept, a second look asked,
                                    the answer graded put beside the new one (below)
    an override's answer changed    set aside: the new autograde counts, and the override is kept
                                    on record, restorable (`python -m grader override keep`)
    not known (no notebook graded before)   as changed

A second look needs what changed. The answer graded (its text, HandGrade.text, read from the
notebook last graded) goes into the cell's comment in the formgrader, below anything the grader
wrote there, between two marked lines (NOTE_HEAD, NOTE_END); the grader's own words stay. It is
the grader's, not the student's: feedback is written without it (term/hand_grading.py), and it
goes for good once the second look is given (Resolve, or a score typed), at the next feedback
or regrade that finds the answer unchanged. Each such change is also recorded (event "answer
changed", with the new answer and the score kept) and listed, both answers whole, in
COURSE/reports/changed_answers.md (`changed_page`).

The record, COURSE/hand_grades.jsonl, is written one line per event and never rewritten. It also
carries a notebook's hand grades across an errata that rebuilds the notebook in the gradebook
(grader/term/errata.py): every score, extra credit, comment and flag, keyed by student, grade id
and the digest of the answer it judged, so that none is lost; and each hand score left standing
on a cell whose points a release changed ("points changed", with both maxima: term/overrides.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from ..cells import answers
from ..course import Layout
from ..outcome import SetAside

SET_ASIDE, KEPT, CLEARED, SAVED = "set aside", "kept", "cleared", "saved for errata"
ANSWER_CHANGED = "answer changed"  # a written answer changed after its hand grade: asked again
CHANGED_PAGE = "changed_answers.md"  # in reports/: every written answer asked again, both texts
# The note on a written answer asked again, in its formgrader comment: its first and last lines
# mark it, so that it can be taken out again without touching the grader's own words.
NOTE_HEAD = "[The answer changed after it was graded; score kept: {score} / {points}. It was:]"
NOTE_END = "[End of the answer graded. The cell above is the new one; Resolve keeps the score.]"
NOTE = re.compile(
    r"\n*" + re.escape(NOTE_HEAD).split(r"\{")[0] + r".*?" + re.escape(NOTE_END), re.S
)
POINTS_CHANGED = "points changed"  # a release changed the points of a hand-scored cell


@dataclass(frozen=True)
class HandGrade:
    """What a grader gave one cell of one submission, and the answer it judged. `grade_id` None
    stands for the notebook itself, for its formgrader flag alone."""

    student: str
    notebook: str
    grade_id: str | None
    answer: str | None  # cells.answers' digest of what it judged; None: not known
    written: bool = False  # a written answer (solution and grade); else an override, a comment
    manual_score: float | None = None
    extra_credit: float | None = None
    comment: str | None = None
    done: bool = True  # graded, not waiting for a (second) look
    flagged: bool = False  # the submission's flag in the formgrader
    text: str | None = None  # a written answer's text as it judged it; None: not known

    @property
    def scored(self) -> bool:
        return self.manual_score is not None or self.extra_credit is not None


@dataclass
class Kept:
    """What `after` did with one submission's hand grades."""

    kept: int = 0  # done, and still done: the answer unchanged
    asked: list[str] = field(default_factory=list)  # written answers to grade again
    set_aside: list[SetAside] = field(default_factory=list)


def before(gb, student: str, notebook: str, previous) -> list[HandGrade]:
    """The submission's hand grades as the gradebook (`gb`) holds them now, each with the
    digest of its answer in `previous`, the notebook last graded (None where there is none)."""
    from nbgrader.api import MissingEntry

    try:
        submitted = gb.find_submission_notebook(notebook, notebook, student)
    except MissingEntry:
        return []
    judged = answers(previous) if previous is not None else {}
    texts = written_texts(previous) if previous is not None else {}
    solutions = {cell.name for cell in submitted.notebook.solution_cells}
    found: dict[str | None, HandGrade] = {}
    for g in submitted.grades:
        if g.manual_score is not None or g.extra_credit is not None:
            found[g.name] = HandGrade(
                student,
                notebook,
                g.name,
                judged.get(g.name),
                written=g.name in solutions,
                manual_score=g.manual_score,
                extra_credit=g.extra_credit,
                done=not g.needs_manual_grade,
                flagged=bool(submitted.flagged),
                text=texts.get(g.name) if g.name in solutions else None,
            )
    for c in submitted.comments:
        if c.manual_comment is not None:
            base = found.get(c.name) or HandGrade(student, notebook, c.name, judged.get(c.name))
            found[c.name] = _with(base, comment=c.manual_comment, flagged=bool(submitted.flagged))
    if submitted.flagged and not found:
        found[None] = HandGrade(student, notebook, None, None, flagged=True)
    return list(found.values())


def _with(hand: HandGrade, **changes) -> HandGrade:
    return HandGrade(**{**asdict(hand), **changes})


def after(gb, hands: list[HandGrade], executed, layout: Layout) -> Kept:
    """Put `hands` back on the grades just saved for `executed` (see the module's docstring);
    an override set aside, and a written answer asked again, go to the record. Commits."""
    if not hands:
        return Kept()
    student, notebook = hands[0].student, hands[0].notebook
    submitted = gb.find_submission_notebook(notebook, notebook, student)
    grades = {g.name: g for g in submitted.grades}
    comments = {c.name: c for c in submitted.comments}
    now, done, aside, asked = answers(executed), Kept(), [], []
    for hand in hands:
        submitted.flagged = bool(submitted.flagged or hand.flagged)
        grade = grades.get(hand.grade_id) if hand.scored else None  # None: its cell is gone
        same = hand.answer is not None and now.get(hand.grade_id) == hand.answer
        again = grade is not None and hand.written and hand.done and not same
        if hand.grade_id in comments and (hand.comment is not None or again):
            comment = _commented(hand, same, grade if again else None)
            comments[hand.grade_id].manual_comment = comment
        if grade is None:  # unscored, or an errata removed its cell: the record keeps it
            continue
        if hand.written or same:
            _put_back(hand, grade, same, done)
            if again:
                asked.append((hand, grade))
            continue
        grade.manual_score, grade.extra_credit, grade.needs_manual_grade = None, None, False
        done.set_aside.append(
            SetAside(hand.grade_id, hand.manual_score, grade.auto_score, grade.max_score)
        )
        aside.append(hand)
    gb.db.commit()
    autograded = {s.grade_id: s.autograde for s in done.set_aside}
    record(layout, SET_ASIDE, aside, autograde=autograded)
    _asked_again(layout, asked, written_texts(executed))
    return done


def _put_back(hand: HandGrade, grade, same: bool, done: Kept) -> None:
    """A written answer's hand grade, or an override of an unchanged answer, back on its grade:
    done where its answer is unchanged and it was done (a check's own flag only ever said
    "re-saved": nbgrader flags every hand score then); else flagged, a (second) look asked."""
    done_before = hand.done or not hand.written
    grade.manual_score, grade.extra_credit = hand.manual_score, hand.extra_credit
    grade.needs_manual_grade = not (same and done_before)
    done.kept += int(same and done_before)
    if hand.written and hand.done and not same:
        done.asked.append(hand.grade_id)


def _commented(hand: HandGrade, same: bool, asked) -> str | None:
    """The cell's comment: the grader's own words, with the note of the answer graded where it
    is asked again (`asked`: its grade), without it once the second look was given and the
    answer stands; else as it was."""
    own = without_note(hand.comment)
    if asked is not None:
        head = NOTE_HEAD.format(score=_number(hand.manual_score), points=_number(asked.max_score))
        note = f"{head}\n{_quoted(hand.text)}\n{NOTE_END}"
        return f"{own}\n\n{note}" if own else note
    return own if same and hand.done else hand.comment


def without_note(comment: str | None) -> str | None:
    """A comment without the note of an answer graded (None where nothing else is left); one
    without a note as it is."""
    if comment is None or not NOTE.search(comment):
        return comment
    return NOTE.sub("", comment).strip() or None


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def written_texts(nb) -> dict[str, str]:
    """grade id -> the text of each written answer (a cell both solution and graded) of `nb`."""
    found = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and meta.get("grade") and meta.get("grade_id"):
            source = cell["source"]
            found[meta["grade_id"]] = source if isinstance(source, str) else "".join(source)
    return found


def _asked_again(layout: Layout, asked: list, texts: dict[str, str]) -> None:
    """Each written answer asked again, on record with the new answer and the score kept; and
    the page of them all (changed_page)."""
    if not asked:
        return
    hands = [hand for hand, _ in asked]
    points = {hand.grade_id: grade.max_score for hand, grade in asked}
    new = {hand.grade_id: texts.get(hand.grade_id) for hand in hands}
    record(layout, ANSWER_CHANGED, hands, new_text=new, max_score=points)
    changed_page(layout)


PAGE_HEAD = """# Written answers that changed after they were graded by hand

Each is flagged again in the formgrader (`make formgrader`), its score kept, and its cell's
comment there holds the answer graded. Read the new answer: press **Resolve** to keep the score,
or type another. Oldest first; the record is COURSE/hand_grades.jsonl (event "answer changed").
"""


def changed_page(layout: Layout) -> Path:
    """reports/changed_answers.md, written again from the record: for every written answer asked
    again, who, which notebook and cell, when, the score kept, the answer graded and the new."""
    parts = [PAGE_HEAD]
    for line in recorded(layout):
        if line["event"] != ANSWER_CHANGED:
            continue
        score = f"{_number(line['manual_score'])} / {_number(line.get('max_score'))}"
        parts.append(
            f"## {line['student']} / {line['notebook']} / {line['grade_id']}, {line['at']}\n\n"
            f"Score kept: {score}\n\nThe answer graded:\n\n{_quoted(line['text'])}\n\n"
            f"The new answer:\n\n{_quoted(line.get('new_text'))}\n"
        )
    page = layout.report(CHANGED_PAGE)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(parts), encoding="utf-8")
    return page


def _quoted(text: str | None) -> str:
    if text is None:
        return "(not known: no notebook graded before)"
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def record(layout: Layout, event: str, hands: list[HandGrade], **extra: dict) -> None:
    """One line per hand grade at the end of COURSE/hand_grades.jsonl: when, what happened
    (`event`) and the hand grade whole; `extra` maps a grade id to one more field's value."""
    if not hands:
        return
    at = datetime.now().astimezone().isoformat(timespec="seconds")
    with layout.hand_grades.open("a", encoding="utf-8") as out:
        for hand in hands:
            line = {"at": at, "event": event, **asdict(hand)}
            line |= {key: values[hand.grade_id] for key, values in extra.items()}
            out.write(json.dumps(line) + "\n")


def recorded(layout: Layout) -> list[dict]:
    """Every line of the record, oldest first; [] before any."""
    if not layout.hand_grades.is_file():
        return []
    lines = layout.hand_grades.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def hand_grade(line: dict) -> HandGrade:
    """A line of the record read back as the hand grade it holds."""
    known = HandGrade.__dataclass_fields__
    return HandGrade(**{k: v for k, v in line.items() if k in known})
