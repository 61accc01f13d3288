"""Autograde: preflight each submission, grade them in parallel jobs, keep every score.

For each submitted/STUDENT/NN_topic/NN_topic.ipynb:
  1. preflight (repair or quarantine, see preflight.py), then nbgrader's sanitizing
     preprocessors, which put back the locked cells and the hidden tests from the gradebook;
  2. a job (job.py) executes it in a bubblewrap sandbox (sandbox.py): one per worker at a time,
     one torch thread each, a timeout per cell and a limit per notebook, as the command's one
     EngineOptions says (options.py);
  3. back here, one at a time: stderr of passing checks is not a failure, output is limited,
     nbgrader's SaveAutoGrades writes the scores, the executed notebook goes to autograded/.
A rerun regrades only what changed: the rerun key hashes the job's input, its limits and
what can change that notebook's score (rerun_key.py). A regrade, for whatever reason, keeps each
hand grade and override whose answer is unchanged (kept_grades.py). Ctrl-C kills the jobs, keeps
every score saved so far, and raises Interrupted: a rerun continues where it stopped. Jobs run in
a local pool of threads, or on the workers of a Dask cluster (supervisor.py says how a job runs
there).

The engine saves scores and nothing else: lateness, copies, the scores table and the term's log
are the term's, once the scores are in (grader/term/scores.py).
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from sqlalchemy.exc import SAWarning
from tqdm.auto import tqdm

from transformer_lab.catalogue import TRAINING_NOTEBOOK

from ..course import GradingError, Layout
from ..ctrl_c import ctrl_c_waits
from ..outcome import SCORED, Outcome, Status
from . import kept_grades, preflight, rerun_key, review, sandbox, supervisor
from .options import EngineOptions
from .sandbox import ROOT
from .supervisor import run_job, stop_jobs  # by these names here: the local pool's, and tests'

QUIET = logging.getLogger("grader.nbgrader")
QUIET.setLevel(logging.ERROR)


def submissions(layout: Layout, students=None, notebooks=None) -> list[tuple[str, str, Path]]:
    names = layout.assignments()
    found = []
    for folder in sorted(layout.step("submitted").glob("*/*")):
        student, assignment = layout.whose(folder)
        if assignment not in names or (students and student not in students):
            continue
        if notebooks and assignment not in notebooks:
            continue
        found.append((student, assignment, layout.notebook("submitted", assignment, student)))
    return found


def _resources(layout: Layout, student: str, assignment: str) -> dict:
    return {
        "nbgrader": {
            "db_url": layout.db_url,
            "assignment": assignment,
            "notebook": assignment,
            "student": student,
        }
    }


def sanitize(nb, layout: Layout, student: str, assignment: str):
    """nbgrader's sanitizing step: clear outputs, restore locked cells and hidden tests."""
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearOutput,
        DeduplicateIds,
        OverwriteCells,
        OverwriteKernelspec,
    )

    resources = _resources(layout, student, assignment)
    steps = (ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata)
    for step in steps:
        # OverwriteCells warns for every check it puts back; the preflight report says it once.
        nb, resources = step(log=QUIET).preprocess(nb, resources)
    return nb


def save_scores(nb, layout: Layout, student: str, assignment: str, carried=None) -> Outcome:
    """The executed notebook's automatic scores into the gradebook, and the notebook into
    autograded/; the hand grades of the submission kept where their answers are unchanged
    (kept_grades.py): those the gradebook holds, or `carried` over an errata. Lateness is not the
    engine's: the term settles it once the scores are in."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import LimitOutput, SaveAutoGrades

    from .preprocessors import StderrIsNotFailure

    resources = _resources(layout, student, assignment)
    out = layout.notebook("autograded", assignment, student)
    # What the formgrader showed when a hand grade was entered: the notebook graded last.
    previous = nbformat.read(out, 4) if out.is_file() else None
    with Gradebook(layout.db_url) as gb, warnings.catch_warnings():
        # nbgrader's own session handling makes SQLAlchemy warn here; the rows are written.
        warnings.simplefilter("ignore", SAWarning)
        gb.update_or_create_student(student)
        gb.update_or_create_submission(assignment, student)
        hands = kept_grades.before(gb, student, assignment, previous)
    for step in (StderrIsNotFailure(), LimitOutput(), SaveAutoGrades()):
        nb, resources = step.preprocess(nb, resources)
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    with Gradebook(layout.db_url) as gb:
        kept = kept_grades.after(gb, hands if carried is None else carried, nb, layout)
        notebook = gb.find_submission_notebook(assignment, assignment, student)
        needs = sum(bool(g.needs_manual_grade) for g in notebook.grades)
        outcome = Outcome(
            student, assignment, Status.GRADED, notebook.score, notebook.max_score, needs
        )
    outcome.hand_kept, outcome.hand_asked, outcome.set_aside = kept.kept, kept.asked, kept.set_aside
    return outcome


def job_command(options: EngineOptions) -> list[str]:
    return [
        sys.executable,
        "-m",
        "grader.engine.job",
        f"--cell-timeout={options.cell_timeout}",
        f"--memory-gb={options.memory_gb}",
    ]


def isolation(sandboxed: bool) -> str:
    """What kept the jobs in, for the report; raises where a sandbox was asked for and none can
    be built, saying how to get one."""
    if not sandboxed:
        return sandbox.NO_SANDBOX
    why_not = sandbox.why_no_sandbox()
    if why_not:
        raise GradingError(sandbox.INSTALL.format(why_not=why_not))
    return sandbox.describe()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped autograde: its jobs are killed, what was saved stays saved (`outcomes`)."""

    def __init__(self, outcomes: list, total: int):
        super().__init__(outcomes, total)
        self.outcomes, self.total = outcomes, total
        self.saved = sum(o.status in SCORED for o in outcomes)

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


def prepare(layout: Layout, student: str, assignment: str, path: Path, release) -> tuple:
    """(notebook text to execute, Outcome so far), or (None, Outcome quarantined)."""
    checked = preflight.preflight(path.read_bytes(), release)
    outcome = Outcome(student, assignment, Status.QUARANTINED, repairs=checked.repairs)
    if checked.notebook is None:
        outcome.reason = checked.quarantined
        return None, outcome
    nb = sanitize(checked.notebook, layout, student, assignment)
    outcome.flags = review.flags(nb, release)
    made_from = review.made_from(nb, release)
    outcome.made_from = asdict(made_from) if made_from else None
    return nbformat.writes(nb), outcome


@dataclass
class _Run:
    """What every job of one autograde run shares."""

    layout: Layout
    options: EngineOptions
    releases: dict
    settings: str  # the limits and the sandbox, in every rerun key
    digests: dict  # notebook -> the digest of what can change its scores (rerun_key.py)
    command: list[str]
    env: dict
    carried: dict  # (student, notebook) -> hand grades carried over an errata (kept_grades.py)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


def grade(
    layout: Layout,
    options: EngineOptions,
    students=None,
    notebooks=None,
    carried: dict | None = None,
) -> list[Outcome]:
    """Grade every submission in the course folder's submitted/ (or these students' and
    notebooks') as `options` say: the scores go to the gradebook, the executed notebooks to
    autograded/; each notebook's Outcome, sorted. `carried`: (student, notebook) -> its hand
    grades, kept over an errata that rebuilt the notebook in the gradebook. Every path below is
    the Layout's."""
    from transformer_lab.data import corpus_path

    isolated = isolation(options.sandboxed)
    # The job reads the corpus from this verified copy; a sandboxed job sees no cache or network.
    corpus = corpus_path()
    command = job_command(options)
    if options.sandboxed:
        command = sandbox.command(command, layout.root, corpus)
    releases = {name: layout.release_notebook(name) for name in layout.assignments()}
    run = _Run(
        layout,
        options,
        releases=releases,
        settings=options.settings(isolated),
        digests=rerun_key.digests(releases, ROOT),
        command=command,
        # grader/ is not installed: the job (and on Dask its supervisor) finds it in the checkout.
        env={**os.environ, "TRANSFORMER_LAB_DATA": str(corpus), "PYTHONPATH": str(ROOT)},
        carried=carried or {},
    )
    # Notebook 04 trains; the longest jobs go first so that the workers finish together.
    found = submissions(layout, students, notebooks)
    found.sort(key=lambda s: s[1] != TRAINING_NOTEBOOK)
    outcomes = []
    hidden = not options.progress
    try:
        with (
            job_pool(options.workers, options.scheduler) as pool,
            tqdm(total=len(found), desc="autograde", unit="notebook", disable=hidden) as bar,
        ):

            def keep(outcome: Outcome) -> None:
                outcomes.append(outcome)
                bar.update()

            _grade(run, pool, found, keep)
    except KeyboardInterrupt:
        raise Interrupted(outcomes, len(found)) from None
    return sorted(outcomes, key=lambda o: (o.student, o.assignment))


def _grade(run: _Run, pool, found: list, keep) -> None:
    """Each job starts as soon as its notebook is sanitized, and finished jobs are saved between
    two submissions: the parent's serial work overlaps the workers'."""
    layout, running = run.layout, {}
    try:
        for student, assignment, path in found:
            text, outcome = prepare(layout, student, assignment, path, run.releases[assignment])
            if text is None:
                keep(outcome)
                continue
            digest = run.digests[assignment]
            key = hashlib.sha256(f"{run.settings} {digest} {text}".encode()).hexdigest()
            last = _last_job(layout, student, assignment)
            if not run.options.force and last.get("key") == key:
                with ctrl_c_waits():
                    keep(_unchanged(layout, outcome, last))
                continue
            running[_submit(pool, run, text)] = (key, outcome)
            for future in [f for f in running if f.done()]:
                with ctrl_c_waits():
                    keep(_finish(run, _result(future), *running.pop(future)))
        for future in concurrent.futures.as_completed(running):
            with ctrl_c_waits():
                keep(_finish(run, _result(future), *running[future]))
    except KeyboardInterrupt:
        # Otherwise leaving the pool would wait for every job still queued or running.
        _stop(pool, running, run)
        raise


def _submit(pool, run: _Run, text: str) -> concurrent.futures.Future:
    """Start one job: in a thread of the local pool, or as a command on a Dask worker. A task
    that a worker unpickles names only the standard library (subprocess.run), since workers
    need not import grader/; the supervisor finds it through the PYTHONPATH in run.env."""
    timeout = run.options.notebook_timeout
    if run.options.scheduler is None:
        return pool.submit(run_job, text, run.command, timeout, run.env, run.id)
    argv = supervisor.command(run.command, timeout, run.id)
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
    if run.options.scheduler is None:
        stop_jobs(run.id)
        return
    client = pool._client  # distributed's executor keeps its Client there
    client.run(subprocess.run, supervisor.stop_command(run.id), env=run.env, capture_output=True)


def _last_job(layout: Layout, student: str, assignment: str) -> dict:
    last = layout.job(student, assignment)
    return json.loads(last.read_text()) if last.is_file() else {}


def saved_scores(executed, layout: Layout, student: str, assignment: str) -> Outcome | None:
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
    with Gradebook(layout.db_url) as gb:
        try:
            notebook = gb.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            return None
        grades = notebook.grades
        if {g.name: g.auto_score for g in grades} != expected:
            return None
        needs = sum(bool(g.needs_manual_grade) for g in grades)
        return Outcome(
            student, assignment, Status.GRADED, notebook.score, notebook.max_score, needs
        )


def _unchanged(layout: Layout, outcome: Outcome, last: dict) -> Outcome:
    """The scores of the last run kept: nothing its job saw has changed. They are read, not
    saved again, and nothing is written: nbgrader's SaveAutoGrades marks every grade that has a
    manual score as needing a grader, which save_scores then puts right from the notebook graded
    last (kept_grades.py); reading needs none of it. Only a gradebook that lacks the scores or
    disagrees (restored from an older copy) gets them saved again, its hand grades kept."""
    student, assignment = outcome.student, outcome.assignment
    executed = nbformat.read(layout.notebook("autograded", assignment, student), 4)
    kept = saved_scores(executed, layout, student, assignment)
    if kept is None:
        kept = save_scores(executed, layout, student, assignment)
    kept.status, kept.repairs, kept.seconds = Status.UNCHANGED, outcome.repairs, last["seconds"]
    kept.flags, kept.reason = outcome.flags, last.get("reason", "")
    kept.made_from = outcome.made_from
    return kept


def _finish(run: _Run, result: dict, key: str, outcome: Outcome) -> Outcome:
    """A job's result into the gradebook and autograded/, or the reason there is none."""
    if "error" in result:
        outcome.status, outcome.reason = Status.FAILED, result["error"]
        return outcome
    layout, whose = run.layout, (outcome.student, outcome.assignment)
    executed = nbformat.reads(result["notebook"], 4)
    graded = save_scores(executed, layout, *whose, run.carried.get(whose))
    graded.repairs, graded.seconds = outcome.repairs, result["seconds"]
    graded.flags, graded.made_from = outcome.flags, outcome.made_from
    notes = [kernel_death_note(executed, result.get("died_in")), result.get("process_cap")]
    graded.reason = "; ".join(note for note in notes if note)
    layout.job(outcome.student, outcome.assignment).write_text(
        json.dumps({"key": key, "seconds": result["seconds"], "reason": graded.reason})
    )
    return graded


def kernel_death_note(executed, index: int | None) -> str:
    """The report's note on a kernel that died: in which cell, and what that cost."""
    if index is None:
        return ""
    cell = executed.cells[index]
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    where = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
    return f"the kernel died in {where}; the checks above it kept their points, none below ran"
