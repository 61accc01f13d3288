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
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import nbformat
from sqlalchemy.exc import SAWarning
from tqdm.auto import tqdm

from . import deadlines, preflight, review, sandbox, supervisor
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
        write_report(course, merged(course, outcomes, students, only), isolated)
    except KeyboardInterrupt:
        saved = sum(o.status in ("graded", "unchanged") for o in outcomes)
        raise Interrupted(saved, len(found)) from None
    return outcomes


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


def report(outcomes: list[Outcome], isolated: str) -> str:
    """Students down, notebooks across: score / max, or why there is none; then what to review."""
    names = sorted({o.assignment for o in outcomes})
    table = {(o.student, o.assignment): o for o in outcomes}
    lines = [
        "| student | " + " | ".join(names) + " | total | review |",
        "|---|" + "---|" * (len(names) + 2),
    ]
    notes = []
    for student in sorted({o.student for o in outcomes}):
        cells, total, out_of, flagged = [], 0.0, 0.0, []
        for name in names:
            o = table.get((student, name))
            if o is None:
                cells.append("–")
                continue
            if o.status in ("graded", "unchanged"):
                manual = f" (+{o.needs_manual} to grade by hand)" if o.needs_manual else ""
                late = f" late −{o.late_penalty:g}" if o.seconds_late else ""
                cells.append(f"{o.score:g} / {o.max_score:g}{manual}{late}")
                total, out_of = total + o.score - o.late_penalty, out_of + o.max_score
                notes += [f"- {student} / {name}: {_late_note(o)}"] if o.seconds_late else []
            else:
                cells.append(o.status)
            notes += [f"- {student} / {name}: {o.status}: {o.reason}"] if o.reason else []
            notes += [f"- {student} / {name}: repaired: {r}" for r in o.repairs]
            notes += [f"- {student} / {name}: review: {f}" for f in o.flags]
            flagged += [f"{name} ({len(o.flags)})"] if o.flags else []
        review_cell = "⚑ " + ", ".join(flagged) if flagged else ""
        lines.append(
            f"| {student} | " + " | ".join(cells) + f" | {total:g} / {out_of:g} | {review_cell} |"
        )
    footer = [
        "",
        f"Sandbox: {isolated}.",
        "Review: code in the student's own cells that touches the checking machinery "
        "(checkpoints, torch's attributes, sys.modules, trace hooks, input transformers, "
        "builtins, unittest.mock), and functions that copy the package's reference (with how "
        "similar they are). A flag does not change a score; read the quoted line.",
    ]
    return "\n".join(lines + footer + notes) + "\n"


def _late_note(o: Outcome) -> str:
    taken = f"{o.late_penalty:g} of {o.score:g} points taken" if o.late_penalty else "no penalty"
    return f"handed in {deadlines.describe(o.seconds_late)} late (course.toml): {taken}"


def write_report(course: Path, outcomes: list[Outcome], isolated: str) -> None:
    folder = Path(course) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "autograde.md").write_text(report(outcomes, isolated), encoding="utf-8")
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
