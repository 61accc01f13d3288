"""Autograde: preflight each submission, grade them in parallel jobs, keep every score.

For each submitted/STUDENT/NN_topic/NN_topic.ipynb:
  1. preflight (repair or quarantine, see preflight.py), then nbgrader's sanitizing
     preprocessors, which put back the locked cells and the hidden tests from the gradebook;
  2. a job (job.py) executes it in a scratch folder: one per worker at a time, one torch thread
     each, a timeout per cell and a limit per notebook;
  3. back here, one at a time: stderr of passing checks is not a failure, output is limited,
     nbgrader's SaveAutoGrades writes the scores, the executed notebook goes to autograded/.
A rerun regrades only what changed (the job's input is hashed); manual grades are kept.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import json
import logging
import os
import shutil
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

from . import preflight
from .course import GRADER, assignments, db_url, release_notebook

ROOT = GRADER.parent
CELL_TIMEOUT = 60  # seconds; grading mode cells take a few, a slow laptop ten times that
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


# Linux: the job runs in its own user and mount namespaces, where an empty read-only tmpfs
# covers the course folder and every capability is dropped before the kernel starts, so the
# kernel can neither read nor write the gradebook, nor unmount the cover.
HIDE_AND_DROP = (
    'mount -t tmpfs -o size=1m,mode=0555 tl-hidden "$0" && exec setpriv '
    '--securebits=+noroot,+noroot_locked --bounding-set=-all --inh-caps=-all "$@"'
)


@functools.cache
def isolation() -> str:
    """How jobs are kept away from the course folder here: "namespace", or "none" and why."""
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        return "none (no unshare/setpriv: not Linux, or util-linux missing)"
    probe = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    if subprocess.run(probe, capture_output=True).returncode != 0:
        return "none (unprivileged user namespaces are not allowed on this machine)"
    return "namespace"


def job_command(course: Path, cell_timeout: int, memory_gb: float) -> list[str]:
    command = [sys.executable, "-m", "grader.job", f"--cell-timeout={cell_timeout}"]
    command.append(f"--memory-gb={memory_gb}")
    if isolation() != "namespace":
        return command
    hide = ["unshare", "--user", "--map-root-user", "--mount", "--", "sh", "-c", HIDE_AND_DROP]
    return [*hide, str(Path(course).resolve()), *command]


def run_job(text: str, command: list[str], notebook_timeout: int) -> dict:
    """Run one job in its own process group; kill the group past the limit."""
    with tempfile.TemporaryDirectory(prefix="tl-job-") as cwd:
        process = subprocess.Popen(
            command,
            cwd=cwd,
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


def _job_file(course: Path, student: str, assignment: str) -> Path:
    return Path(course) / "autograded" / student / assignment / "job.json"


def prepare(course: Path, student: str, assignment: str, path: Path, release) -> tuple:
    """(notebook text to execute, Outcome so far), or (None, Outcome quarantined)."""
    checked = preflight.preflight(path.read_bytes(), release)
    outcome = Outcome(student, assignment, "quarantined", repairs=checked.repairs)
    if checked.notebook is None:
        outcome.reason = checked.quarantined
        return None, outcome
    return nbformat.writes(sanitize(checked.notebook, course, student, assignment)), outcome


def autograde(
    course: Path,
    workers: int = 2,
    cell_timeout: int = CELL_TIMEOUT,
    notebook_timeout: int = NOTEBOOK_TIMEOUT,
    memory_gb: float = MEMORY_GB,
    force: bool = False,
    students=None,
    only=None,
    progress: bool = True,
) -> list[Outcome]:
    course = Path(course)
    releases = {name: release_notebook(course, name) for name in assignments(course)}
    outcomes, pending = [], []
    for student, assignment, path in submissions(course, students, only):
        text, outcome = prepare(course, student, assignment, path, releases[assignment])
        if text is None:
            outcomes.append(outcome)
            continue
        key = hashlib.sha256(f"{cell_timeout} {memory_gb} {text}".encode()).hexdigest()
        job_file = _job_file(course, student, assignment)
        last = json.loads(job_file.read_text()) if job_file.is_file() else {}
        if not force and last.get("key") == key:
            executed = nbformat.read(job_file.with_name(f"{assignment}.ipynb"), 4)
            kept = save_scores(executed, course, student, assignment)
            kept.status, kept.repairs, kept.seconds = "unchanged", outcome.repairs, last["seconds"]
            outcomes.append(kept)
            continue
        pending.append((text, key, outcome))
    command = job_command(course, cell_timeout, memory_gb)
    # Notebook 04 trains; the longest jobs go first so that the workers finish together.
    pending.sort(key=lambda job: job[2].assignment.startswith("04"), reverse=True)
    with (
        concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool,
        tqdm(total=len(pending), desc="autograde", unit="notebook", disable=not progress) as bar,
    ):
        futures = {
            pool.submit(run_job, text, command, notebook_timeout): (key, outcome)
            for text, key, outcome in pending
        }
        for future in concurrent.futures.as_completed(futures):
            key, outcome = futures[future]
            result = future.result()
            bar.update()
            if "error" in result:
                outcome.status, outcome.reason = "failed", result["error"]
                outcomes.append(outcome)
                continue
            graded = save_scores(
                nbformat.reads(result["notebook"], 4), course, outcome.student, outcome.assignment
            )
            graded.repairs, graded.seconds = outcome.repairs, result["seconds"]
            _job_file(course, outcome.student, outcome.assignment).write_text(
                json.dumps({"key": key, "seconds": result["seconds"]})
            )
            outcomes.append(graded)
    outcomes.sort(key=lambda o: (o.student, o.assignment))
    write_report(course, outcomes)
    return outcomes


def report(outcomes: list[Outcome]) -> str:
    """Students down, notebooks across: score / max, or why there is none."""
    names = sorted({o.assignment for o in outcomes})
    table = {(o.student, o.assignment): o for o in outcomes}
    lines = [
        "| student | " + " | ".join(names) + " | total |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    notes = []
    for student in sorted({o.student for o in outcomes}):
        cells, total, out_of = [], 0.0, 0.0
        for name in names:
            o = table.get((student, name))
            if o is None:
                cells.append("–")
            elif o.status in ("graded", "unchanged"):
                manual = f" (+{o.needs_manual} to grade by hand)" if o.needs_manual else ""
                cells.append(f"{o.score:g} / {o.max_score:g}{manual}")
                total, out_of = total + o.score, out_of + o.max_score
            else:
                cells.append(o.status)
            if o is not None:
                notes += [f"- {student} / {name}: {o.status}: {o.reason}"] if o.reason else []
                notes += [f"- {student} / {name}: repaired: {r}" for r in o.repairs]
        lines.append(f"| {student} | " + " | ".join(cells) + f" | {total:g} / {out_of:g} |")
    return "\n".join(lines + ["", f"Kernel isolation: {isolation()}.", *notes]) + "\n"


def write_report(course: Path, outcomes: list[Outcome]) -> None:
    folder = Path(course) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "autograde.md").write_text(report(outcomes), encoding="utf-8")
    (folder / "autograde.json").write_text(
        json.dumps([asdict(o) for o in outcomes], indent=2), encoding="utf-8"
    )
