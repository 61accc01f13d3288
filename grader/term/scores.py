"""The term's half of `make autograde`: the engine grades (grader/engine/autograde.py), then the
term settles lateness on the scores it saved (`grade`), flags copies across the class, writes the
scores table (reports/autograde.md, and autograde.json that the grade sheet and feedback read),
both with the engine's options in force (`report`), and appends the step to the term's log. A
release's errata regrades by the same two steps (grader/term/release.py). None of this can
change a score the engine saved; a late penalty is nbgrader's own, applied to those scores
(deadlines.settle). The course is opened once for the run (course_open.py) and its gradebook
once the engine is done (nbgrader_apps.gradebook).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import asdict, fields

from nbgrader import utils as nbgrader_utils

from ..engine import autograde as engine
from ..engine.options import EngineOptions
from ..outcome import NOT_GRADED, SCORED, Flag, Outcome, SetAside, SheetStatus, Status
from . import collected, copies, deadlines, hand_grading, overrides, term_log
from .course_open import Course
from .names import namer
from .nbgrader_apps import gradebook

QUIET = logging.getLogger("grader.nbgrader")


def autograde(
    course: Course, options: EngineOptions, students=None, notebooks=None, carried=None
) -> list[Outcome]:
    """Grade as `options` say, settle lateness, then flag copies and write the scores table over
    the last one: a run limited to some students or notebooks keeps everyone else's rows. The
    course is the one opened at the start, course.toml with it: a file edited meanwhile applies
    from the next run."""
    outcomes = _graded(course, options, students, notebooks, carried)
    # Opened once the engine's jobs are saved: the term's one session of the run.
    with gradebook(course) as gb:
        settle(course, gb, outcomes)
        _report(course, gb, outcomes, options, students, notebooks)
    entry = log_entry(outcomes, options)
    term_log.append(course, "autograde" + _scope(students, notebooks), entry)
    return outcomes


def grade(
    course: Course, options: EngineOptions, students=None, notebooks=None, carried=None
) -> list[Outcome]:
    """autograde's first half, for an errata's staged release: the engine's grading, lateness
    settled on what it saved; `report`, once the release is in place, is the second."""
    outcomes = _graded(course, options, students, notebooks, carried)
    with gradebook(course) as gb:
        settle(course, gb, outcomes)
    return outcomes


def report(
    course: Course, outcomes: list[Outcome], options: EngineOptions, students=None, notebooks=None
) -> None:
    """autograde's second half, for an errata's release once it is in place."""
    with gradebook(course) as gb:
        _report(course, gb, outcomes, options, students, notebooks)


def _graded(course: Course, options: EngineOptions, students, notebooks, carried) -> list:
    """The engine's grading (`carried`: hand grades carried over an errata, autograde.grade).
    On Ctrl-C, what was saved is settled and logged, and autograde.Interrupted goes on up."""
    engine.isolation(options.sandboxed)  # no sandbox to be had: stops here, before any work
    try:
        return engine.grade(course.layout, options, students, notebooks, carried)
    except engine.Interrupted as stop:
        with gradebook(course) as gb:
            settle(course, gb, stop.outcomes)
        log = f"{summary(stop.outcomes)}\n\n{stop}"
        term_log.append(course, "autograde, interrupted", log)
        raise


def _report(course: Course, gb, outcomes, options: EngineOptions, students, notebooks) -> None:
    """Copies flagged across the class and the scores table written, this run's rows (graded
    for these students and notebooks) over the last report's."""
    isolated = engine.isolation(options.sandboxed)
    # Copies are the whole class's matter: flagged once every notebook is in, none scored.
    everyone = copies.with_copies(course, merged(course, outcomes, students, notebooks))
    write_scores_table(course, everyone, isolated, options, namer(course, gb))


def settle(course: Course, gb, outcomes: list[Outcome]) -> None:
    """Due dates, times handed in and extensions into the gradebook, then nbgrader's late
    penalty on the scores the engine saved, for each graded notebook: on every autograde, graded
    again or not, so that a changed due date, extension or policy applies without executing
    anything again."""
    scored = [o for o in outcomes if o.status in SCORED]
    if not scored:
        return
    late = deadlines.settle(course, gb, [(o.student, o.assignment) for o in scored], QUIET)
    for o in scored:
        o.seconds_late, o.late_penalty = late[o.student, o.assignment]


def summary(outcomes: list[Outcome]) -> str:
    """One line for the terminal and the term's log: how many notebooks ran, were reused (their
    last run's scores kept: nothing their job sees had changed) or could not be graded."""
    n = Counter(o.status for o in outcomes)
    return (
        f"{len(outcomes)} notebooks: {n[Status.GRADED]} graded, {n[Status.UNCHANGED]} reused "
        f"from their last run (unchanged), {n[Status.QUARANTINED]} quarantined, "
        f"{n[Status.FAILED]} failed"
    )


def log_entry(outcomes: list[Outcome], options: EngineOptions) -> str:
    """The summary, the options in force, what became of the hand grades, and each notebook
    that could not be graded, with the reason."""
    hand = hand_grading.regraded(outcomes)
    lines = [summary(outcomes), f"Options: {options.said()}.", *[hand] * bool(hand), ""]
    lines += [
        f"- {o.student} / {o.assignment}: {o.status}: {o.reason}"
        for o in outcomes
        if o.status in NOT_GRADED
    ]
    return "\n".join(lines + ["", "The scores: reports/autograde.md."])


def _scope(students, notebooks) -> str:
    """' --student bob --notebook 01_attention': what a limited run was limited to."""
    said = f" --student {' '.join(students)}" if students else ""
    return said + (f" --notebook {' '.join(notebooks)}" if notebooks else "")


def scores_table(
    outcomes: list[Outcome],
    isolated: str,
    options: EngineOptions,
    notebooks: list,
    who=str,
    by_hand=None,
    wrong=(),
    handed=None,
) -> str:
    """Students down (`who`: how to name them, names.namer), the assigned notebooks across
    (Term.counted): score / the release's points, or why there is none; the total out of
    the same maximum for everyone, as the grade sheet counts it; then the notes, grouped by
    kind. `by_hand`: notebook -> its answers graded by hand (_by_hand); `wrong`: the (student,
    notebook) for which only another notebook was handed in (collected.Store.wrong); `handed`:
    (student, notebook) -> collect's codes of the file graded (collected.Store.codes)."""
    table = {(o.student, o.assignment): o for o in outcomes}
    out_of = sum(nb.out_of for nb in notebooks)
    lines = [
        "| student | " + " | ".join(map(_heading, notebooks)) + f" | total / {out_of:g} | review |",
        "|---|" + "---|" * (len(notebooks) + 2),
    ]
    counted = {nb.name for nb in notebooks}
    for student in sorted({o.student for o in outcomes} | {s for s, a in wrong if a in counted}):
        mine = [table.get((student, nb.name)) for nb in notebooks]
        review_cell = _review_cell([o for o in mine if o], handed or {})
        cells = [
            SheetStatus.WRONG
            if o is None and (student, nb.name) in wrong
            else _cell(o, nb, by_hand)
            for o, nb in zip(mine, notebooks, strict=True)
        ]
        total = _total(mine, notebooks, SheetStatus.WRONG in cells)
        lines.append(f"| {who(student)} | " + " | ".join(cells) + f" | {total} | {review_cell} |")
    lines += ["", f"Sandbox: {isolated}.", f"Options: {options.said()}.", _legend(notebooks)]
    lines += _notes([o for o in outcomes if o.assignment in counted])
    unassigned = sorted({o.assignment for o in outcomes} - counted)
    if unassigned:
        lines += ["", f"Handed in, not assigned (course.toml): {', '.join(unassigned)}."]
    return "\n".join(lines) + "\n"


def _review_cell(mine: list[Outcome], handed: dict) -> str:
    """A row's review column: the copies and code flagged ("⚑ ..."), then each notebook graded
    as it is though not made from the release handed out ("01_attention: the workshop's copy,
    graded as it is [workshop_copy]"): the work to check is the student's own."""
    flagged = [copies.review_cell(o.assignment, o.flags) for o in mine if o.flags]
    said = ["⚑ " + " · ".join(flagged)] if flagged else []
    for o in mine:
        codes = handed.get((o.student, o.assignment), [])
        said += [
            f"{o.assignment}: {NOT_THE_RELEASE[c]} [{c}]" for c in codes if c in NOT_THE_RELEASE
        ]
    return " · ".join(said)


def _heading(nb) -> str:
    return nb.name + " (extra credit)" * nb.extra_credit + " (not due yet)" * (not nb.due)


def _cell(o: Outcome | None, nb, by_hand: dict | None) -> str:
    if o is None:
        return "–"
    if o.status not in SCORED:
        return o.status
    late = ""
    if o.seconds_late:  # late under a policy that takes nothing: said, not "−0"
        late = f" late −{o.late_penalty:g}" if o.late_penalty else " late, no penalty"
    if not o.needs_manual:
        return f"{o.score:g} / {nb.points:g}{late}"
    # Not "3 / 4", which reads as the notebook's score: say what is still to come.
    return f"{o.score:g} of {nb.points:g}{late}, {_still_by_hand(o, nb, by_hand or {})}"


def _still_by_hand(o: Outcome, nb, by_hand: dict) -> str:
    """'1 point to grade by hand' where every answer of the notebook graded by hand waits (the
    release has their points), else '1 written answer to grade by hand'."""
    answers, points = by_hand.get(nb.name, (0, 0.0))
    if o.needs_manual == answers:
        return f"{points:g} point{'s' * (points != 1)} to grade by hand"
    return f"{o.needs_manual} written answer{'s' * (o.needs_manual != 1)} to grade by hand"


def _by_hand(course: Course, notebooks: list) -> dict[str, tuple[int, float]]:
    """notebook -> how many answers its release has that are graded by hand (nbgrader's
    manually graded answers and tasks), and their points."""
    found = {}
    for nb in notebooks:
        cells = course.layout.release_notebook(nb.name).cells
        manual = [c for c in cells if nbgrader_utils.is_task(c) or _manual_answer(c)]
        points = sum(float(c.metadata["nbgrader"].get("points", 0)) for c in manual)
        found[nb.name] = (len(manual), points)
    return found


def _manual_answer(cell) -> bool:
    return nbgrader_utils.is_grade(cell) and nbgrader_utils.is_solution(cell)


def _total(mine: list, notebooks: list, wrong: bool = False) -> str:
    """The grade sheet's total: nothing handed in counts 0, and there is none while a notebook is
    quarantined or failed, has a written answer still to grade by hand, or only another notebook
    was handed in for it (`wrong`)."""
    total, out_of = 0.0, sum(nb.out_of for nb in notebooks)
    if wrong:
        return f"– / {out_of:g}"
    for o in mine:
        if o is None:
            continue
        if o.status not in SCORED or o.needs_manual:
            return f"– / {out_of:g}"
        total += o.score - o.late_penalty
    return f"{total:g} / {out_of:g}"


def _legend(notebooks: list) -> str:
    extra = ", ".join(nb.name for nb in notebooks if nb.extra_credit)
    later = ", ".join(nb.name for nb in notebooks if not nb.due)
    said = (
        "Each notebook is out of its release's points; the total, as the grade sheet has it, "
        "out of those of the notebooks course.toml assigns."
    )
    if extra:
        said += f" Extra credit ({extra}): its points add to the total, not to its maximum."
    if later:
        said += f" Not due yet ({later}): nothing handed in is no loss yet."
    return said


# collect's codes of a file that counts though not made from the release handed out, as a row
# of the table names it (_review_cell).
NOT_THE_RELEASE = {
    collected.WORKSHOP_COPY: "the workshop's copy, graded as it is",
    collected.NOT_THIS_RELEASE: "not made from this release, graded as it is",
}
NOTE_KINDS = {
    "late": "Late (course.toml's due dates and [late] policy)",
    "not graded": "Not graded: quarantined or failed (the grade sheet leaves them empty)",
    "cut short": "Graded in part: the kernel died",
    "repaired": "Repaired by preflight",
    "review": "Review: copies, and code that touches the checking machinery",
    "hand": "Hand grades whose answer changed (those of unchanged answers are kept)",
}
REVIEW = (
    "Code in the student's own cells that touches the checking machinery (checkpoints, torch's "
    "attributes, sys.modules, trace hooks, input transformers, builtins, unittest.mock), and "
    "the student's own code that another source covers (the course's solution, the package's "
    "reference or a classmate: the share of the student's code it covers, the share of the "
    "source the student's code holds, and the longest shared run; side by side in "
    "`make class-report`'s reports/copies/). A flag does not change a score; read the quoted line."
)


def _notes(outcomes: list[Outcome]) -> list[str]:
    """What happened to whom, one heading per kind, only kinds that happened."""
    kinds: dict[str, list[str]] = {kind: [] for kind in NOTE_KINDS}
    for o in outcomes:
        who = f"- {o.student} / {o.assignment}: "
        if o.seconds_late and o.status in SCORED:
            kinds["late"].append(who + _late_note(o))
        if o.reason:
            kind = "not graded" if o.status in NOT_GRADED else "cut short"
            kinds[kind].append(who + (f"{o.status}: " if kind == "not graded" else "") + o.reason)
        kinds["repaired"] += [who + r for r in o.repairs]
        kinds["review"] += [who + f.text() for f in o.flags]
        kinds["hand"] += [who + f"{i}: the answer changed; grade it again" for i in o.hand_asked]
        kinds["hand"] += [who + overrides.line(o.student, o.assignment, s) for s in o.set_aside]
    lines = []
    for kind, notes in kinds.items():
        if notes:
            lines += ["", f"### {NOTE_KINDS[kind]}", ""]
            lines += [REVIEW, ""] if kind == "review" else []
            lines += notes
    return lines


def _late_note(o: Outcome) -> str:
    taken = f"{o.late_penalty:g} of {o.score:g} points taken" if o.late_penalty else "no penalty"
    return f"handed in {term_log.describe(o.seconds_late)} late (course.toml): {taken}"


def write_scores_table(
    course: Course, outcomes: list[Outcome], isolated: str, options: EngineOptions, who=str
) -> None:
    """reports/autograde.md (`who`: how to name the students, names.namer) and autograde.json,
    which the grade sheet and feedback read back; both with the options of the run that wrote
    them."""
    table = course.layout.report("autograde.md")
    table.parent.mkdir(parents=True, exist_ok=True)
    notebooks = course.term.counted()
    store = collected.Store(course)
    wrong = store.wrong()
    handed = {pair: store.codes(*pair) for pair in store.pairs()}
    by_hand = _by_hand(course, notebooks)
    text = scores_table(outcomes, isolated, options, notebooks, who, by_hand, wrong, handed)
    table.write_text(text, encoding="utf-8")
    saved = {"sandbox": isolated, "options": options.record()}
    saved["outcomes"] = [asdict(o) for o in outcomes]
    course.layout.report("autograde.json").write_text(json.dumps(saved, indent=2), encoding="utf-8")


def load_outcomes(course: Course) -> list[Outcome]:
    """Every notebook's last outcome, as the last report (reports/autograde.json) holds it."""
    saved = course.layout.report("autograde.json")
    if not saved.is_file():
        return []
    known = {f.name for f in fields(Outcome)}  # a report written by another version may differ
    rows = json.loads(saved.read_text(encoding="utf-8"))["outcomes"]
    outcomes = [Outcome(**{k: v for k, v in o.items() if k in known}) for o in rows]
    for o in outcomes:
        o.status, o.flags = Status(o.status), [Flag.read(f) for f in o.flags]
        o.set_aside = [SetAside.read(s) for s in o.set_aside]
    return outcomes


def merged(course: Course, outcomes: list[Outcome], students=None, notebooks=None) -> list[Outcome]:
    """This run's outcomes over the last report's: a run limited to some students or notebooks
    replaces their rows and keeps everyone else's, so the report stays the whole class's."""

    def in_scope(o: Outcome) -> bool:
        in_notebooks = not notebooks or o.assignment in notebooks
        return (not students or o.student in students) and in_notebooks

    kept = [o for o in load_outcomes(course) if not in_scope(o)]
    return sorted(kept + outcomes, key=lambda o: (o.student, o.assignment))
