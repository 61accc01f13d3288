"""Autograde: preflight each submission, grade them in parallel jobs, keep every score.

For each submitted/STUDENT/NN_topic/NN_topic.ipynb:
  1. preflight (repair or quarantine, see preflight.py), then nbgrader's sanitizing
     preprocessors, which put back the locked cells and the hidden tests from the gradebook;
  2. a job (job.py) executes it in a bubblewrap sandbox (sandbox.py): one per worker at a time,
     one torch thread each, a timeout per cell and a limit per notebook;
  3. back here, one at a time: stderr of passing checks is not a failure, output is limited,
     nbgrader's SaveAutoGrades writes the scores, the executed notebook goes to autograded/.
A rerun regrades only what changed: the job's input, its limits and the grading code are
hashed. Manual grades are kept.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from sqlalchemy.exc import SAWarning
from tqdm.auto import tqdm

from . import preflight, review, sandbox
from .course import GradingError, assignments, db_url, release_notebook
from .course import cell_timeout as default_cell_timeout
from .sandbox import ROOT

NOTEBOOK_TIMEOUT = 600  # seconds; the backstop for a kernel that ignores interrupts
MEMORY_GB = 4.0
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
        gb.update_or_create_submission(assignment, student)
    for step in (StderrIsNotFailure(), LimitOutput(), SaveAutoGrades()):
        nb, resources = step.preprocess(nb, resources)
    out = Path(course) / "autograded" / student / assignment / f"{assignment}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    with Gradebook(db_url(course)) as gb:
        notebook = gb.find_submission_notebook(assignment, assignment, student)
        needs = sum(bool(g.needs_manual_grade) for g in notebook.grades)
        return Outcome(student, assignment, "graded", notebook.score, notebook.max_score, needs)


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


def run_job(text: str, command: list[str], notebook_timeout: int, env: dict) -> dict:
    """Run one job in its own process group; kill the group past the limit."""
    with tempfile.TemporaryDirectory(prefix="tl-job-") as cwd:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(text, timeout=notebook_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return {"error": f"ran past the {notebook_timeout} s limit for a notebook"}
    if process.returncode != 0:
        return {"error": f"the grading job failed: {stderr.strip().splitlines()[-1:]}"}
    return json.loads(stdout)


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


def _job_file(course: Path, student: str, assignment: str) -> Path:
    return Path(course) / "autograded" / student / assignment / "job.json"


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
    releases = {name: release_notebook(course, name) for name in assignments(course)}
    # The job reads the corpus from this verified copy; a sandboxed job sees no cache or network.
    corpus = corpus_path()
    settings = f"{cell_timeout} {memory_gb} {isolated} {grading_digest(course)}"
    command = job_command(cell_timeout, memory_gb)
    if sandboxed:
        command = sandbox.command(command, course, corpus)
    # grader/ is not installed: the job finds it in the checkout.
    env = {**os.environ, "TRANSFORMER_LAB_DATA": str(corpus), "PYTHONPATH": str(ROOT)}
    # Notebook 04 trains; the longest jobs go first so that the workers finish together.
    found = sorted(submissions(course, students, only), key=lambda s: not s[1].startswith("04"))
    outcomes, running = [], {}
    with (
        job_pool(workers, scheduler) as pool,
        tqdm(total=len(found), desc="autograde", unit="notebook", disable=not progress) as bar,
    ):

        def keep(outcome: Outcome) -> None:
            outcomes.append(outcome)
            bar.update()

        # Each job starts as soon as its notebook is sanitized, and finished jobs are saved
        # between two submissions: the parent's serial work overlaps the workers'.
        for student, assignment, path in found:
            text, outcome = prepare(course, student, assignment, path, releases[assignment])
            if text is None:
                keep(outcome)
                continue
            key = hashlib.sha256(f"{settings} {text}".encode()).hexdigest()
            last = _last_job(course, student, assignment)
            if not force and last.get("key") == key:
                keep(_unchanged(course, outcome, last))
                continue
            running[pool.submit(run_job, text, command, notebook_timeout, env)] = (key, outcome)
            for future in [f for f in running if f.done()]:
                keep(_finish(course, future.result(), *running.pop(future)))
        for future in concurrent.futures.as_completed(running):
            keep(_finish(course, future.result(), *running[future]))
    outcomes.sort(key=lambda o: (o.student, o.assignment))
    write_report(course, outcomes, isolated)
    return outcomes


def _last_job(course: Path, student: str, assignment: str) -> dict:
    job_file = _job_file(course, student, assignment)
    return json.loads(job_file.read_text()) if job_file.is_file() else {}


def _unchanged(course: Path, outcome: Outcome, last: dict) -> Outcome:
    """The scores of the last run kept: nothing its job saw has changed."""
    student, assignment = outcome.student, outcome.assignment
    executed = nbformat.read(
        _job_file(course, student, assignment).with_name(f"{assignment}.ipynb"), 4
    )
    kept = save_scores(executed, course, student, assignment)
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
    _job_file(course, outcome.student, outcome.assignment).write_text(
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
                cells.append(f"{o.score:g} / {o.max_score:g}{manual}")
                total, out_of = total + o.score, out_of + o.max_score
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
        "(checkpoints, sys.modules, trace hooks, input transformers, builtins, unittest.mock). "
        "A flag does not change a score; read the quoted line.",
    ]
    return "\n".join(lines + footer + notes) + "\n"


def write_report(course: Path, outcomes: list[Outcome], isolated: str) -> None:
    folder = Path(course) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "autograde.md").write_text(report(outcomes, isolated), encoding="utf-8")
    (folder / "autograde.json").write_text(
        json.dumps({"sandbox": isolated, "outcomes": [asdict(o) for o in outcomes]}, indent=2),
        encoding="utf-8",
    )
