"""Before you hand in: the last cell of every graded notebook, and of every workshop notebook.

It reads the notebook as the grader will (transformer_lab/hand_in.py: Colab's copy, else the
saved file), names what the grader would not read as meant, runs each exercise's check again on
the kernel's code as the release has it (quietly: no ticks, results or keeping), prints one line
per exercise and then either how to hand in or what to fix, and leaves a receipt in the notebook
for the instructor. A check that raised (a kernel that lost what a cell made) names the cells to
run again, those that make what it reads: never the whole notebook, which in 04 would train both
models again. The workshop's (self-study) flavour ends with the same check, its visible checks
alone, and says whether the notebook is complete instead of how to hand it in. Here, with the
checks, because it runs them; never while grading, where the grader reads the file itself.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from transformer_lab import hand_in
from transformer_lab.hand_in import Problem, Read

from ._core import CheckFailed, grading, quietly
from .results import notebook_shell

NOT_RUN = "not run"  # a receipt's code for a check left out: its exercise has a problem to fix
RAISED = "raised"  # a receipt's code for a check that stopped on an error of its own
# The last line, in the graded flavour (hand in the file) and in the workshop's (no hand-in: a
# student working alone learns whether the notebook is complete). Not ready, it ends with what
# to fix: the way to hand in is said only once there is nothing left to fix.
READY = "ready to hand in: {how}"
NOT_READY = "not ready to hand in: run this cell again after fixing what ❌ says of {what}"
COMPLETE = "complete: every exercise is done and passes its check"
NOT_COMPLETE = "not complete yet: run this cell again after fixing what ❌ says of {what}"


def before_you_hand_in(
    name: str,
    release: dict[str, str],
    namespace: dict | None = None,
    ran: list[str] | None = None,
    *,
    graded: bool = True,
) -> None:
    """Check notebook `name` against its release's graded cells (grade id -> YOUR_CODE,
    YOUR_ANSWER or a check's code, as the build wrote them into the cell) in the kernel's
    namespace (`namespace`, and `ran`, the code it ran: the notebook's own, where None).
    `graded` False: the workshop's notebook, which is complete rather than handed in."""
    if grading():
        return
    shell = notebook_shell()
    if namespace is None:
        namespace = shell.user_ns if shell is not None else {}
    if ran is None and shell is not None:
        ran = list(shell.history_manager.input_hist_raw)
    try:
        read = hand_in.read_here(name, namespace)
    except hand_in.NotRead as why:
        print(f"❌ {why}")
        return
    lines, receipt = verdict(read, name, release, namespace, ran, graded)
    print("\n".join(lines[:-1]))
    if shell is None:
        print(lines[-1])
        return
    from IPython.display import publish_display_data

    publish_display_data({"text/plain": lines[-1], hand_in.MIME: receipt})


def verdict(
    read: Read,
    name: str,
    release: dict[str, str],
    namespace: dict,
    ran: list[str] | None,
    graded: bool = True,
) -> tuple[list[str], dict]:
    """The lines to show (where it was read from, each exercise, then ready or what to fix) and
    the receipt (each check's code: None where it passed)."""
    found = hand_in.problems(read.nb, release, ran)
    exercises: dict[str, list[str]] = {}
    for graded_id in release:
        exercises.setdefault(hand_in.exercise_title(graded_id), []).append(graded_id)
    heading = f"Before you hand in {name}: read" if graded else f"Is {name} complete? Read"
    lines, checks, to_fix = [f"{heading} from {read.where}"], {}, []
    for title, cells in exercises.items():
        mine = [p for p in found if p.grade_id in cells]
        mine += _checked_again(read.nb, release, cells, mine, namespace, checks)
        lines += [f"{'❌' if p.blocks else '⚠️'} {p.text}" for p in mine] or [f"✅ {title}"]
        to_fix += [title] if any(p.blocks for p in mine) else []
    lines.append(_last_line(to_fix, read.hand_in, graded))
    return lines, hand_in.receipt(read.nb, name, checks, not to_fix)


def _last_line(to_fix: list[str], how: str, graded: bool) -> str:
    if not to_fix:
        return READY.format(how=how) if graded else COMPLETE
    what = ", ".join(to_fix[:-1]) + f" and {to_fix[-1]}" if len(to_fix) > 1 else to_fix[0]
    return (NOT_READY if graded else NOT_COMPLETE).format(what=what)


def _checked_again(
    nb: dict,
    release: dict[str, str],
    cells: list[str],
    found: list[Problem],
    namespace: dict,
    checks: dict,
) -> list[Problem]:
    """An exercise's checks (of its `cells`) run again, each code written to `checks`; what they
    say, and for a check that raised, which cells to run again. None runs where one of the
    exercise's cells is to fix first: its verdict would be about another file."""
    said = []
    for graded in cells:
        what = release[graded]
        if what in (hand_in.YOUR_CODE, hand_in.YOUR_ANSWER):
            continue
        if any(p.blocks for p in found):
            checks[graded] = NOT_RUN
            continue
        checks[graded], why = rerun(what, namespace, hand_in.exercise_title(graded))
        if checks[graded] == RAISED:
            at = next(i for i, cell in enumerate(nb["cells"]) if hand_in.grade_id(cell) == graded)
            again = hand_in.cells_to_run_again(nb, at, what, namespace, release)
            why += run_again([hand_in.cell_name(nb["cells"][i], i, release) for i in again])
        if why:
            said.append(Problem(graded, why))
    return said


def run_again(cells: list[str]) -> str:
    """The end of a raised check's line: the cells to run again, in order, then this one."""
    if not cells:
        return "; run the cells above its check again, in order, then this cell"
    return f"; run again, in this order: {'; '.join(cells)}; then this cell"


def rerun(code: str, namespace: dict, title: str) -> tuple[str | None, str]:
    """A check's code run again in a copy of the kernel's namespace, quietly, what it prints held
    back: (None, "") where it passes, else (its code, what to say; for a check that raised, what
    to run again is the caller's to add)."""
    held = io.StringIO()
    try:
        with quietly(), redirect_stdout(held), redirect_stderr(held):
            exec(compile(code, f"<the check of {title}>", "exec"), dict(namespace))
    except CheckFailed as failure:
        return failure.code, f"{title} fails its check: {failure}"
    except Exception as err:  # the student's code is undefined or broken in the kernel
        return RAISED, f"{title}: its check could not run ({type(err).__name__}: {err})"
    return None, ""
