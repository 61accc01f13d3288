"""Autograde: preflight each submission, grade them in parallel jobs, keep every score.

For each submitted/STUDENT/NN_topic/NN_topic.ipynb:
  1. preflight (repair or quarantine, see preflight.py), then nbgrader's sanitizing
     preprocessors, which put back the locked cells and the hidden tests from the gradebook;
  2. a job (job.py) executes it in a bubblewrap sandbox (sandbox.py): one per worker at a time,
     one torch thread each, a timeout per cell and a limit per notebook;
  3. back here, one at a time: stderr of passing checks is not a failure, output is limited,
     nbgrader's SaveAutoGrades writes the scores, the executed notebook goes to autograded/.
A rerun regrades only what changed: the job's input, its limits and the grading code are
hashed. Hand grades are kept, and stay done until the answer changes. Ctrl-C kills the jobs,
keeps every score saved so far, and raises Interrupted: a rerun continues where it stopped.
Jobs run in a local pool of threads, or on the workers of a Dask cluster (supervisor.py says
how a job runs there).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import subprocess
import sys
import uuid
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import nbformat
from sqlalchemy.exc import SAWarning
from tqdm.auto import tqdm

from . import copies, deadlines, preflight, review, sandbox, supervisor, term_log
from .course import (
    MEMORY_GB,
    TRAINING_NOTEBOOK,
    GradingError,
    assignments,
    autograded_notebook,
    db_url,
    job_file,
    release_notebook,
)
from .course import cell_timeout as default_cell_timeout
from .sandbox import ROOT
from .supervisor import run_job, stop_jobs  # by these names here: the local pool's, and tests'

NOTEBOOK_TIMEOUT = 600  # seconds; the backstop for a kernel that ignores interrupts
QUIET = logging.getLogger("grader.nbgrader")
QUIET.setLevel(logging.ERROR)


@dataclass
class Outcome:
    student: str
    assignment: str
    status: str  # graded | unchanged | quarantined | failed
    score: float = 0.0
    max_score: float = 0.0
    needs_manual: int = 0
    seconds: float = 0.0
    repairs: list[str] = field(default_factory=list)
    reason: str = ""
    flags: list[str] = field(default_factory=list)  # for review; never change a score
    seconds_late: float = 0.0  # past the due date (extension included), from course.toml
    late_penalty: float = 0.0  # points nbgrader's late penalty takes off `score`


def submissions(course: Path, students=None, only=None) -> list[tuple[str, str, Path]]:
    names = assignments(course)
    found = []
    for folder in sorted((Path(course) / "submitted").glob("*/*")):
        student, assignment = folder.parent.name, folder.name
        if assignment not in names or (students and student not in students):
            continue
        if only and assignment not in only:
            continue
        found.append((student, assignment, folder / f"{assignment}.ipynb"))
    return found


def _resources(course: Path, student: str, assignment: str) -> dict:
    return {
        "nbgrader": {
            "db_url": db_url(course),
            "assignment": assignment,
            "notebook": assignment,
            "student": student,
        }
    }


def sanitize(nb, course: Path, student: str, assignment: str):
    """nbgrader's sanitizing step: clear outputs, restore locked cells and hidden tests."""
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearOutput,
        DeduplicateIds,
        OverwriteCells,
        OverwriteKernelspec,
    )

    resources = _resources(course, student, assignment)
    steps = (ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata)
    for step in steps:
        # OverwriteCells warns for every check it puts back; the preflight report says it once.
        nb, resources = step(log=QUIET).preprocess(nb, resources)
    return nb


def save_scores(nb, course: Path, student: str, assignment: str) -> Outcome:
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import LimitOutput, SaveAutoGrades

    from .preprocessors import StderrIsNotFailure

    resources = _resources(course, student, assignment)
    with Gradebook(db_url(course)) as gb, warnings.catch_warnings():
        # nbgrader's own session handling makes SQLAlchemy warn here; the rows are written.
        warnings.simplefilter("ignore", SAWarning)
        gb.update_or_create_student(student)
        deadlines.record(gb, course, student, assignment)  # due date, time handed in, extension
    for step in (StderrIsNotFailure(), LimitOutput(), SaveAutoGrades()):
        nb, resources = step.preprocess(nb, resources)
    out = autograded_notebook(course, student, assignment)
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    with Gradebook(db_url(course)) as gb:
        notebook = gb.find_submission_notebook(assignment, assignment, student)
        needs = sum(bool(g.needs_manual_grade) for g in notebook.grades)
        outcome = Outcome(student, assignment, "graded", notebook.score, notebook.max_score, needs)
    # The penalty is a share of the scores (or all of them): taken once they are in.
    late = deadlines.settle(course, student, assignment, QUIET)
    outcome.seconds_late, outcome.late_penalty = late
    return outcome


def job_command(cell_timeout: int, memory_gb: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "grader.job",
        f"--cell-timeout={cell_timeout}",
        f"--memory-gb={memory_gb}",
    ]


def isolation(sandboxed: bool) -> str:
    """What kept the jobs in, for the report; raises where a sandbox was asked for and none can
    be built, saying how to get one."""
    if not sandboxed:
        return sandbox.NO_SANDBOX
    problem = sandbox.problem()
    if problem:
        raise GradingError(sandbox.INSTALL.format(problem=problem))
    return sandbox.describe()


# What the notebooks run besides themselves: a change here changes what a grade means.
GRADING_CODE = ("checkpoints/**/*.py", "transformer_lab/**/*.py", "grader/*.py", "data/*.json")


def grading_digest(course: Path) -> str:
    """SHA-256 of the grading code and the release notebooks, part of every rerun key."""
    files = [(ROOT, path) for pattern in GRADING_CODE for path in sorted(ROOT.glob(pattern))]
    files += [(course, path) for path in sorted(Path(course).glob("release/*/*.ipynb"))]
    digest = hashlib.sha256()
    for top, path in files:
        content = path.read_bytes()
        digest.update(f"{path.relative_to(top)}\0{len(content)}\0".encode() + content)
    return digest.hexdigest()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped autograde: its jobs are killed, what was saved stays saved."""

    def __init__(self, saved: int, total: int):
        super().__init__(saved, total)
        self.saved, self.total = saved, total

    def __str__(self) -> str:
        return (
            f"interrupted: {self.saved} of {self.total} notebooks are scored and saved in the "
            "gradebook; run `make autograde` again to continue where it stopped"
        )


@contextlib.contextmanager
def job_pool(workers: int, scheduler: str | None = None):
    """Where jobs run: `workers` local threads, each waiting on its job's process; or, given a
    scheduler address (tcp://HOST:PORT), the workers of a Dask cluster. Either way a
    concurrent.futures executor, and the results come back here, to the gradebook's one writer."""
    if scheduler is None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            yield pool
        return
    try:
        from distributed import Client
    except ImportError as err:
        raise GradingError(
            "--scheduler needs dask.distributed: `make setup` installs it, or "
            "`pip install -e '.[instructor]'`"
        ) from err
    with Client(scheduler) as client:
        yield client.get_executor(pure=False)


def prepare(course: Path, student: str, assignment: str, path: Path, release) -> tuple:
    """(notebook text to execute, Outcome so far), or (None, Outcome quarantined)."""
    checked = preflight.preflight(path.read_bytes(), release)
    outcome = Outcome(student, assignment, "quarantined", repairs=checked.repairs)
    if checked.notebook is None:
        outcome.reason = checked.quarantined
        return None, outcome
    nb = sanitize(checked.notebook, course, student, assignment)
    outcome.flags = review.flags(nb, release)
    return nbformat.writes(nb), outcome


@dataclass
class _Run:
    """What every job of one autograde run shares."""

    course: Path
    releases: dict
    settings: str  # the limits, the sandbox and the grading code, in every rerun key
    command: list[str]
    notebook_timeout: int
    env: dict
    force: bool
    on_dask: bool
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


def autograde(
    course: Path,
    workers: int = 2,
    cell_timeout: int | None = None,
    notebook_timeout: int = NOTEBOOK_TIMEOUT,
    memory_gb: float = MEMORY_GB,
    force: bool = False,
    students=None,
    only=None,
    progress: bool = True,
    sandboxed: bool = True,
    scheduler: str | None = None,
) -> list[Outcome]:
    from transformer_lab.data import corpus_path

    course = Path(course)
    cell_timeout = cell_timeout or default_cell_timeout()
    isolated = isolation(sandboxed)
    # The job reads the corpus from this verified copy; a sandboxed job sees no cache or network.
    corpus = corpus_path()
    command = job_command(cell_timeout, memory_gb)
    if sandboxed:
        command = sandbox.command(command, course, corpus)
    run = _Run(
        course,
        releases={name: release_notebook(course, name) for name in assignments(course)},
        settings=f"{cell_timeout} {memory_gb} {isolated} {grading_digest(course)}",
        command=command,
        notebook_timeout=notebook_timeout,
        # grader/ is not installed: the job (and on Dask its supervisor) finds it in the checkout.
        env={**os.environ, "TRANSFORMER_LAB_DATA": str(corpus), "PYTHONPATH": str(ROOT)},
        force=force,
        on_dask=scheduler is not None,
    )
    # Notebook 04 trains; the longest jobs go first so that the workers finish together.
    found = sorted(submissions(course, students, only), key=lambda s: s[1] != TRAINING_NOTEBOOK)
    outcomes = []
    try:
        with (
            job_pool(workers, scheduler) as pool,
            tqdm(total=len(found), desc="autograde", unit="notebook", disable=not progress) as bar,
        ):

            def keep(outcome: Outcome) -> None:
                outcomes.append(outcome)
                bar.update()

            _grade(run, pool, found, keep)
        outcomes.sort(key=lambda o: (o.student, o.assignment))
        # Copies are the whole class's matter: flagged once every notebook is in, none scored.
        everyone = copies.with_copies(course, merged(course, outcomes, students, only))
        write_report(course, everyone, isolated)
    except KeyboardInterrupt:
        saved = sum(o.status in ("graded", "unchanged") for o in outcomes)
        stop = Interrupted(saved, len(found))
        term_log.append(course, "autograde, interrupted", f"{summary(outcomes)}\n\n{stop}")
        raise stop from None
    term_log.append(course, "autograde" + _scope(students, only), log_entry(outcomes))
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    """One line for the terminal and the term's log: how many notebooks ran, were reused (their
    last run's scores kept: nothing their job sees had changed) or could not be graded."""
    n = Counter(o.status for o in outcomes)
    return (
        f"{len(outcomes)} notebooks: {n['graded']} graded, {n['unchanged']} reused from their last "
        f"run (unchanged), {n['quarantined']} quarantined, {n['failed']} failed"
    )


def log_entry(outcomes: list[Outcome]) -> str:
    """The summary, and each notebook that could not be graded, with the reason."""
    lines = [summary(outcomes), ""]
    lines += [
        f"- {o.student} / {o.assignment}: {o.status}: {o.reason}"
        for o in outcomes
        if o.status in ("quarantined", "failed")
    ]
    return "\n".join(lines + ["", "The scores: reports/autograde.md."])


def _scope(students, only) -> str:
    """' --student bob --assignment 01_attention': what a limited run was limited to."""
    said = f" --student {' '.join(students)}" if students else ""
    return said + (f" --assignment {' '.join(only)}" if only else "")


def _grade(run: _Run, pool, found: list, keep) -> None:
    """Each job starts as soon as its notebook is sanitized, and finished jobs are saved between
    two submissions: the parent's serial work overlaps the workers'."""
    course, running = run.course, {}
    try:
        for student, assignment, path in found:
            text, outcome = prepare(course, student, assignment, path, run.releases[assignment])
            if text is None:
                keep(outcome)
                continue
            key = hashlib.sha256(f"{run.settings} {text}".encode()).hexdigest()
            last = _last_job(course, student, assignment)
            if not run.force and last.get("key") == key:
                with supervisor.ctrl_c_waits():
                    keep(_unchanged(course, outcome, last))
                continue
            running[_submit(pool, run, text)] = (key, outcome)
            for future in [f for f in running if f.done()]:
                with supervisor.ctrl_c_waits():
                    keep(_finish(course, _result(future), *running.pop(future)))
        for future in concurrent.futures.as_completed(running):
            with supervisor.ctrl_c_waits():
                keep(_finish(course, _result(future), *running[future]))
    except KeyboardInterrupt:
        # Otherwise leaving the pool would wait for every job still queued or running.
        _stop(pool, running, run)
        raise


def _submit(pool, run: _Run, text: str) -> concurrent.futures.Future:
    """Start one job: in a thread of the local pool, or as a command on a Dask worker. A task
    that a worker unpickles names only the standard library (subprocess.run), since workers
    need not import grader/; the supervisor finds it through the PYTHONPATH in run.env."""
    if not run.on_dask:
        return pool.submit(run_job, text, run.command, run.notebook_timeout, run.env, run.id)
    argv = supervisor.command(run.command, run.notebook_timeout, run.id)
    captured = {"capture_output": True, "text": True, "env": run.env}
    return pool.submit(subprocess.run, argv, input=text, **captured)


def _result(future: concurrent.futures.Future) -> dict:
    """A job's result: run_job's from the local pool, the supervisor's process from Dask."""
    try:
        done = future.result()
    except Exception as err:  # Dask gives up on a job whose workers keep dying (KilledWorker)
        return {"error": f"the job could not run: {type(err).__name__}: {err}"}
    return supervisor.result(done) if isinstance(done, subprocess.CompletedProcess) else done


def _stop(pool, running: dict, run: _Run) -> None:
    """Cancel the queued jobs and kill the running ones, here or on the Dask workers."""
    for future in running:
        future.cancel()
    if not run.on_dask:
        stop_jobs(run.id)
        return
    client = pool._client  # distributed's executor keeps its Client there
    client.run(subprocess.run, supervisor.stop_command(run.id), env=run.env, capture_output=True)


def _last_job(course: Path, student: str, assignment: str) -> dict:
    last = job_file(course, student, assignment)
    return json.loads(last.read_text()) if last.is_file() else {}


def saved_scores(executed, course: Path, student: str, assignment: str) -> Outcome | None:
    """The gradebook's scores of one submission as they stand, where its automatic scores are
    those of the executed notebook; None where it lacks them or holds others (a gradebook
    restored from an older copy)."""
    from nbgrader import utils
    from nbgrader.api import Gradebook, MissingEntry

    expected = {
        cell.metadata.nbgrader.grade_id: utils.determine_grade(cell, QUIET)[0]
        for cell in executed.cells
        if utils.is_grade(cell)
    }
    with Gradebook(db_url(course)) as gb:
        try:
            notebook = gb.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            return None
        grades = notebook.grades
        if {g.name: g.auto_score for g in grades} != expected:
            return None
        needs = sum(bool(g.needs_manual_grade) for g in grades)
        return Outcome(student, assignment, "graded", notebook.score, notebook.max_score, needs)


def _unchanged(course: Path, outcome: Outcome, last: dict) -> Outcome:
    """The scores of the last run kept: nothing its job saw has changed. They are read, not
    saved again: nbgrader's SaveAutoGrades marks every grade that has a manual score as needing
    a grader, so re-saving would put each hand-graded answer back on the formgrader's to-do
    list. Only a gradebook that lacks them or disagrees (restored from an older copy) gets them
    saved again."""
    student, assignment = outcome.student, outcome.assignment
    executed = nbformat.read(autograded_notebook(course, student, assignment), 4)
    kept = saved_scores(executed, course, student, assignment)
    if kept is None:
        kept = save_scores(executed, course, student, assignment)
    else:  # the due date, extension or policy may have changed, or a score given by hand
        kept.seconds_late, kept.late_penalty = deadlines.settle(course, student, assignment, QUIET)
    kept.status, kept.repairs, kept.seconds = "unchanged", outcome.repairs, last["seconds"]
    kept.flags, kept.reason = outcome.flags, last.get("reason", "")
    return kept


def _finish(course: Path, result: dict, key: str, outcome: Outcome) -> Outcome:
    """A job's result into the gradebook and autograded/, or the reason there is none."""
    if "error" in result:
        outcome.status, outcome.reason = "failed", result["error"]
        return outcome
    executed = nbformat.reads(result["notebook"], 4)
    graded = save_scores(executed, course, outcome.student, outcome.assignment)
    graded.repairs, graded.seconds = outcome.repairs, result["seconds"]
    graded.flags, graded.reason = outcome.flags, died(executed, result.get("died_in"))
    job_file(course, outcome.student, outcome.assignment).write_text(
        json.dumps({"key": key, "seconds": result["seconds"], "reason": graded.reason})
    )
    return graded


def died(executed, index: int | None) -> str:
    """The report's note on a kernel that died: in which cell, and what that cost."""
    if index is None:
        return ""
    cell = executed.cells[index]
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    where = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
    return f"the kernel died in {where}; the checks above it kept their points, none below ran"


def report(outcomes: list[Outcome], isolated: str, notebooks: list) -> str:
    """Students down, the assigned notebooks across (deadlines.notebooks): score / the release's
    points, or why there is none; the total out of the same maximum for everyone, as the grade
    sheet counts it; then the notes, grouped by kind."""
    table = {(o.student, o.assignment): o for o in outcomes}
    out_of = sum(nb.out_of for nb in notebooks)
    lines = [
        "| student | " + " | ".join(map(_heading, notebooks)) + f" | total / {out_of:g} | review |",
        "|---|" + "---|" * (len(notebooks) + 2),
    ]
    for student in sorted({o.student for o in outcomes}):
        mine = [table.get((student, nb.name)) for nb in notebooks]
        flagged = [copies.review_cell(o.assignment, o.flags) for o in mine if o and o.flags]
        review_cell = "⚑ " + " · ".join(flagged) if flagged else ""
        cells = [_cell(o, nb) for o, nb in zip(mine, notebooks, strict=True)]
        total = _total(mine, notebooks)
        lines.append(f"| {student} | " + " | ".join(cells) + f" | {total} | {review_cell} |")
    counted = {nb.name for nb in notebooks}
    lines += ["", f"Sandbox: {isolated}.", _legend(notebooks)]
    lines += _notes([o for o in outcomes if o.assignment in counted])
    unassigned = sorted({o.assignment for o in outcomes} - counted)
    if unassigned:
        lines += ["", f"Handed in, not assigned (course.toml): {', '.join(unassigned)}."]
    return "\n".join(lines) + "\n"


def _heading(nb) -> str:
    return nb.name + " (extra credit)" * nb.extra_credit + " (not due yet)" * (not nb.due)


def _cell(o: Outcome | None, nb) -> str:
    if o is None:
        return "–"
    if o.status not in ("graded", "unchanged"):
        return o.status
    manual = f" (+{o.needs_manual} to grade by hand)" if o.needs_manual else ""
    late = f" late −{o.late_penalty:g}" if o.seconds_late else ""
    return f"{o.score:g} / {nb.points:g}{manual}{late}"


def _total(mine: list, notebooks: list) -> str:
    """The grade sheet's total: nothing handed in counts 0, and there is none while a notebook is
    quarantined or failed."""
    total, out_of = 0.0, sum(nb.out_of for nb in notebooks)
    for o in mine:
        if o is None:
            continue
        if o.status not in ("graded", "unchanged"):
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


NOTE_KINDS = {
    "late": "Late (course.toml's due dates and [late] policy)",
    "not graded": "Not graded: quarantined or failed (the grade sheet leaves them empty)",
    "cut short": "Graded in part: the kernel died",
    "repaired": "Repaired by preflight",
    "review": "Review: copies, and code that touches the checking machinery",
}
REVIEW = (
    "Code in the student's own cells that touches the checking machinery (checkpoints, torch's "
    "attributes, sys.modules, trace hooks, input transformers, builtins, unittest.mock), and "
    "the student's own code that another source covers (the course's solution, the package's "
    "reference or a classmate, with the share of the student's code it covers; side by side in "
    "`make class-report`'s reports/copies/). A flag does not change a score; read the quoted line."
)


def _notes(outcomes: list[Outcome]) -> list[str]:
    """What happened to whom, one heading per kind, only kinds that happened."""
    kinds: dict[str, list[str]] = {kind: [] for kind in NOTE_KINDS}
    for o in outcomes:
        who = f"- {o.student} / {o.assignment}: "
        if o.seconds_late and o.status in ("graded", "unchanged"):
            kinds["late"].append(who + _late_note(o))
        if o.reason:
            kind = "not graded" if o.status in ("quarantined", "failed") else "cut short"
            kinds[kind].append(who + (f"{o.status}: " if kind == "not graded" else "") + o.reason)
        kinds["repaired"] += [who + r for r in o.repairs]
        kinds["review"] += [who + f for f in o.flags]
    lines = []
    for kind, notes in kinds.items():
        if notes:
            lines += ["", f"### {NOTE_KINDS[kind]}", ""]
            lines += [REVIEW, ""] if kind == "review" else []
            lines += notes
    return lines


def _late_note(o: Outcome) -> str:
    taken = f"{o.late_penalty:g} of {o.score:g} points taken" if o.late_penalty else "no penalty"
    return f"handed in {deadlines.describe(o.seconds_late)} late (course.toml): {taken}"


def write_report(course: Path, outcomes: list[Outcome], isolated: str) -> None:
    folder = Path(course) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    text = report(outcomes, isolated, deadlines.notebooks(course))
    (folder / "autograde.md").write_text(text, encoding="utf-8")
    (folder / "autograde.json").write_text(
        json.dumps({"sandbox": isolated, "outcomes": [asdict(o) for o in outcomes]}, indent=2),
        encoding="utf-8",
    )


def load_outcomes(course: Path) -> list[Outcome]:
    """Every notebook's last outcome, as the last report (reports/autograde.json) holds it."""
    saved = Path(course) / "reports" / "autograde.json"
    if not saved.is_file():
        return []
    known = {f.name for f in fields(Outcome)}  # a report written by another version may differ
    rows = json.loads(saved.read_text(encoding="utf-8"))["outcomes"]
    return [Outcome(**{k: v for k, v in o.items() if k in known}) for o in rows]


def merged(course: Path, outcomes: list[Outcome], students=None, only=None) -> list[Outcome]:
    """This run's outcomes over the last report's: a run limited to some students or notebooks
    replaces their rows and keeps everyone else's, so the report stays the whole class's."""

    def in_scope(o: Outcome) -> bool:
        return (not students or o.student in students) and (not only or o.assignment in only)

    kept = [o for o in load_outcomes(course) if not in_scope(o)]
    return sorted(kept + outcomes, key=lambda o: (o.student, o.assignment))
