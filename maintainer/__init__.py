"""The maintainers' tools: what builds and measures the course, not what students install.

    notebook_build   `make notebooks`, `make release`: every notebook flavour from solutions/
    student_package  the graded runtime's wheel: the package, the checks, the recorded data
    setup_cell       the setup cell every notebook starts with (clone or wheel, one-line failures)
    fresh_runtime    a notebook started as a fresh runtime starts it; times its start
    pipeline         `make regenerate-baselines`: run the solution notebooks, refresh data/
    bench            `make bench`: our training loop against a plain one, docs/bench/
    core_minutes     `make core-minutes`: each notebook's core path in minutes, docs/core_path.md
    core_measurements  what `make core-minutes` measures by running the notebooks: what each
                     cell shows, and each notebook's compute on one CPU core
    kernels          how the pipeline starts its kernels (IPC sockets) and shows what they print
    copy_corpus      the copy detector's bars on an honest-versus-copy corpus, 200 students timed
    fabricated_class a class of fabricated students, built as an LMS hands them in
    bench_grading    grading throughput: a fabricated class autograded, in the sandbox, timed
    lms_lateness     lateness from Canvas's downloads, through the grader's commands
    zoo              the bug zoo: each exercise's usual mistakes and right variants, as data
    regenerate_baselines_colab.{py,ipynb}   the pipeline on a Colab GPU

They run from a checkout (`python -m maintainer.pipeline`). They import the package, the
checkpoints and the grader (its course folder's layout, its engine and its term); only the tests
import them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from grader.course import ROOT  # the checkout, defined once


def git(*args: str) -> str:
    """The output of a git command in the checkout, or "" where git or the checkout is missing."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


MEASURED = (":(exclude)data", ":(exclude)docs")  # git pathspecs of what the tools write


def commit_label(length: int = 40) -> tuple[str, bool]:
    """(commit of the checkout or "unknown", whether tracked files have uncommitted changes).

    What the tools themselves write under data/ and docs/ (the measurements, the models) does
    not count: `make ablations` after `make regenerate-baselines` trains the committed code."""
    commit = git("rev-parse", "HEAD")[:length] or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *MEASURED)
    return commit, bool(changed)


def corpus_or_exit(command: str) -> Path:
    """The verified corpus, found (or downloaded) before `command` starts any work, and named in
    TRANSFORMER_LAB_DATA, where nothing named it, for the kernels and jobs the command starts.
    A missing or unreadable corpus stops the command here with one line, what
    transformer_lab/data.py says to do, and exit status 1: not a job's or a notebook's
    traceback after minutes of work."""
    from transformer_lab.data import OVERRIDE_ENV, CorpusError, corpus_path

    try:
        path = corpus_path()
    except CorpusError as err:
        sys.exit(f"{command}: {err}")
    os.environ.setdefault(OVERRIDE_ENV, str(path))
    return path
