"""The course folder nbgrader works in, and running nbgrader's own commands against it.

grader/course/                      (generated; ignored by git)
    source/NN_topic/NN_topic.ipynb      solutions and hidden tests (from solutions/)
    release/NN_topic/NN_topic.ipynb     what students get (nbgrader generate_assignment)
    submitted/STUDENT/NN_topic/         what `collect` found, as handed in
    autograded/STUDENT/NN_topic/        executed notebooks, as graded
    feedback/STUDENT/NN_topic/          HTML feedback
    gradebook.db                        nbgrader's gradebook
    reports/                            collect, preflight and autograde reports; grades.csv
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

GRADER = Path(__file__).resolve().parent
COURSE = GRADER / "course"


class GradingError(RuntimeError):
    """A grading step cannot go on; the message says what to do."""


def db_url(course: Path) -> str:
    return f"sqlite:///{Path(course).resolve() / 'gradebook.db'}"


def assignments(course: Path) -> list[str]:
    """The released assignments (one notebook each), in course order."""
    release = Path(course) / "release"
    names = sorted(p.name for p in release.glob("*") if (p / f"{p.name}.ipynb").is_file())
    if not names:
        raise GradingError(f"nothing is released in {release}: run `python -m grader release`")
    return names


def release_notebook(course: Path, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(Path(course) / "release" / assignment / f"{assignment}.ipynb", 4)


def nbgrader(course: Path, *args: str) -> None:
    """Run an nbgrader command on `course` with the course's nbgrader_config.py."""
    # nbgrader runs `alembic` for its gradebook: put this interpreter's scripts on the PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            *args,
            f"--CourseDirectory.root={Path(course).resolve()}",
            "--log-level=WARN",
        ],
        cwd=GRADER,  # nbgrader reads nbgrader_config.py from the working folder
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise GradingError(f"nbgrader {args[0]} failed:\n{done.stderr.strip()[-2000:]}")
