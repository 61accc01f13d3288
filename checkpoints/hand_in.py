"""Before you hand in: the last cell of every graded notebook.

It reads the notebook as the grader will (transformer_lab/hand_in.py: Colab's copy, else the
saved file), names what the grader would not read as meant, runs each exercise's check again on
the kernel's code as the release has it (quietly: no ticks, results or keeping), prints one line
per exercise and then either how to hand in or what to fix, and leaves a receipt in the notebook
for the instructor. Here, with the checks, because it runs them; never while grading, where the
grader reads the file itself.
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
READY = "ready to hand in: {how}"
NOT_READY = (
    "not ready: fix what ❌ says, then run this cell again (handed in as it is, it is graded as "
    "it stands: {how})"
)


def before_you_hand_in(
    name: str,
    release: dict[str, str],
    namespace: dict | None = None,
    ran: list[str] | None = None,
) -> None:
    """Check notebook `name` against its release's graded cells (grade id -> YOUR_CODE,
    YOUR_ANSWER or a check's code, as the build wrote them into the cell) in the kernel's
    namespace (`namespace`, and `ran`, the code it ran: the notebook's own, where None)."""
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
    lines, receipt = verdict(read, name, release, namespace, ran)
    print("\n".join(lines[:-1]))
    if shell is None:
        print(lines[-1])
        return
    from IPython.display import publish_display_data

    publish_display_data({"text/plain": lines[-1], hand_in.MIME: receipt})


def verdict(
    read: Read, name: str, release: dict[str, str], namespace: dict, ran: list[str] | None
) -> tuple[list[str], dict]:
    """The lines to show (where it was read from, each exercise, then ready or not) and the
    receipt (each check's code: None where it passed)."""
    found = hand_in.problems(read.nb, release, ran)
    exercises: dict[str, list[str]] = {}
    for graded in release:
        exercises.setdefault(hand_in.exercise_title(graded), []).append(graded)
    lines, checks, ready = [f"Before you hand in {name}: read from {read.where}"], {}, True
    for title, cells in exercises.items():
        mine = [p for p in found if p.grade_id in cells]
        mine += _checked_again(title, {g: release[g] for g in cells}, mine, namespace, checks)
        lines += [f"{'❌' if p.blocks else '⚠️'} {p.text}" for p in mine] or [f"✅ {title}"]
        ready = ready and not any(p.blocks for p in mine)
    lines.append((READY if ready else NOT_READY).format(how=read.hand_in))
    return lines, hand_in.receipt(read.nb, name, checks, ready)


def _checked_again(
    title: str, cells: dict[str, str], found: list[Problem], namespace: dict, checks: dict
) -> list[Problem]:
    """An exercise's checks run again, each code written to `checks`; what they say. None runs
    where one of the exercise's cells is to fix first: its verdict would be about another file."""
    said = []
    for graded, what in cells.items():
        if what in (hand_in.YOUR_CODE, hand_in.YOUR_ANSWER):
            continue
        if any(p.blocks for p in found):
            checks[graded] = NOT_RUN
            continue
        checks[graded], why = rerun(what, namespace, title)
        if why:
            said.append(Problem(graded, why))
    return said


def rerun(code: str, namespace: dict, title: str) -> tuple[str | None, str]:
    """A check's code run again in a copy of the kernel's namespace, quietly, what it prints held
    back: (None, "") where it passes, else (its code, what to say)."""
    held = io.StringIO()
    try:
        with quietly(), redirect_stdout(held), redirect_stderr(held):
            exec(compile(code, f"<the check of {title}>", "exec"), dict(namespace))
    except CheckFailed as failure:
        return failure.code, f"{title} fails its check: {failure}"
    except Exception as err:  # the student's code is undefined or broken in the kernel
        return RAISED, (
            f"{title}: its check could not run ({type(err).__name__}: {err}); run the notebook "
            "from the top (Runtime → Run all in Colab), then this cell again"
        )
    return None, ""
