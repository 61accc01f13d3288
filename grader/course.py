"""The course folder nbgrader works in, its configuration, and running nbgrader against it.

~/transformer-lab-course/           (--course, $TRANSFORMER_LAB_COURSE; outside the checkout)
    source/NN_topic/NN_topic.ipynb      solutions and hidden tests (from solutions/)
    release/NN_topic/NN_topic.ipynb     what students get (nbgrader generate_assignment)
    publish/NN_topic.ipynb              the release, flat, to publish for Colab; README.md
    collected/<sha256>.ipynb            every file collect ever kept; index.jsonl (collected.py)
    submitted/STUDENT/NN_topic/         the file that counts, as handed in, and its time
    autograded/STUDENT/NN_topic/        executed notebooks, as graded; job.json (the rerun key)
    feedback/STUDENT/NN_topic/          HTML feedback
    gradebook.db                        nbgrader's gradebook
    reports/                            collect, preflight and autograde reports; grades.csv;
                                        term_log.md, every step of the term (term_log.py)
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

GRADER = Path(__file__).resolve().parent
ROOT = GRADER.parent  # the checkout
# A term's grades (hand grades in gradebook.db, submissions, feedback) live outside the
# checkout, so that `git clean -xdf`, a fresh clone or deleting the checkout cannot take them.
COURSE_ENV = "TRANSFORMER_LAB_COURSE"
COURSE = Path(os.environ.get(COURSE_ENV) or Path.home() / "transformer-lab-course").expanduser()
NBGRADER_CONFIG = GRADER / "nbgrader_config.py"
# The instructor's settings for this term (due dates, late policy, collect's name pattern).
COURSE_FILE = "course.toml"
# The notebook that trains (its jobs are the longest) and holds the written answer.
TRAINING_NOTEBOOK = "04_training"
MEMORY_GB = 4.0  # a grading job's address-space cap, its kernel's included


class GradingError(RuntimeError):
    """A grading step cannot go on; the message says what to do."""


@dataclass(frozen=True)
class Layout:
    """Every path of a course folder (the tree above), made here and read back here only, as
    nbgrader's CourseDirectory names each step's folder. A notebook's folders are
    STEP/STUDENT/NN_topic/ (submitted, autograded, feedback) or STEP/NN_topic/ (source,
    release); `whose` reads a student's path back."""

    root: Path

    @classmethod
    def of(cls, course: Path | Layout) -> Layout:
        return course if isinstance(course, Layout) else cls(Path(course))

    def step(self, name: str) -> Path:
        """A step's folder: source, release, publish, collected, submitted, autograded,
        feedback or reports."""
        if name not in STEPS:
            raise ValueError(f"no step {name!r} in a course folder: {', '.join(STEPS)}")
        return self.root / name

    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def settings(self) -> Path:
        return self.root / COURSE_FILE

    @property
    def db_url(self) -> str:
        """The gradebook as nbgrader's Gradebook and preprocessors open it."""
        return f"sqlite:///{self.gradebook.resolve()}"

    def released(self) -> list[str]:
        """The released assignments (one notebook each), in course order; [] before a release."""
        release = self.step("release")
        return sorted(p.name for p in release.glob("*") if (p / f"{p.name}.ipynb").is_file())

    def assignments(self) -> list[str]:
        """The released assignments, in course order; an error that says what to do before any."""
        names = self.released()
        if not names:
            raise GradingError(f"nothing is released in {self.step('release')}: run `make release`")
        return names

    def release_notebook(self, assignment: str) -> nbformat.NotebookNode:
        return nbformat.read(self.notebook("release", assignment), 4)

    def report(self, name: str) -> Path:
        return self.step("reports") / name

    def notebook(self, step: str, assignment: str, student: str | None = None) -> Path:
        """A notebook of a step: the course's (source, release) or a student's."""
        folder = self.folder(step, assignment, student)
        return folder / f"{assignment}.{'html' if step == 'feedback' else 'ipynb'}"

    def folder(self, step: str, assignment: str, student: str | None = None) -> Path:
        if (student is None) != (step in COURSE_STEPS):
            whose = "the course's" if step in COURSE_STEPS else "a student's"
            raise ValueError(f"{step}/ holds {whose} notebooks")
        return self.step(step) / (assignment if student is None else f"{student}/{assignment}")

    def job(self, student: str, assignment: str) -> Path:
        """What the last job of this notebook left: its rerun key, seconds and the kernel's
        fate."""
        return self.folder("autograded", assignment, student) / "job.json"

    def students_notebooks(self, step: str) -> list[tuple[str, str, Path]]:
        """(student, assignment, path) of every student's notebook in a step, sorted."""
        found = self.step(step).glob(f"*/*/*.{'html' if step == 'feedback' else 'ipynb'}")
        return sorted((*self.whose(path), path) for path in found if path.stem == path.parent.name)

    def whose(self, path: Path) -> tuple[str, str]:
        """(student, assignment) of a path inside a student's folder of a step: the inverse of
        `folder` and `notebook`."""
        parts = Path(path).relative_to(self.root).parts
        if len(parts) < 3 or parts[0] in COURSE_STEPS or parts[0] not in STEPS:
            raise ValueError(f"{path} is in no student's folder of {self.root}")
        return parts[1], parts[2]


COURSE_STEPS = ("source", "release")  # hold the course's notebooks
STEPS = (*COURSE_STEPS, "publish", "collected", "submitted", "autograded", "feedback", "reports")


@functools.cache
def nbgrader_config():
    """grader/nbgrader_config.py, loaded: stubs, cell timeout, feedback preprocessors."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader(NBGRADER_CONFIG.name, path=str(NBGRADER_CONFIG.parent)).load_config()


def code_stub() -> str:
    return nbgrader_config().ClearSolutions.code_stub["python"]


def cell_timeout() -> int:
    return nbgrader_config().Execute.timeout


def _scripts_on_path(env: dict) -> dict:
    """nbgrader runs `alembic` for its gradebook: put this interpreter's scripts on the PATH."""
    scripts = str(Path(sys.executable).parent)
    if scripts in env.get("PATH", "").split(os.pathsep):
        return env
    return {**env, "PATH": os.pathsep.join([scripts, env.get("PATH", "")])}


def nbgrader_api(course: Path):
    """nbgrader's own API on `course` with the course's configuration (one start-up for any
    number of commands, where each `nbgrader` command line pays several seconds)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    os.environ.update(_scripts_on_path(dict(os.environ)))
    config = copy.deepcopy(nbgrader_config())  # the cached one stays course-free
    config.CourseDirectory.root = str(Path(course).resolve())
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def stamp_new_gradebook(gradebook: Path) -> None:
    """A new gradebook.db holding only nbgrader's migration head, as nbgrader's Gradebook stamps
    a new file (and then adds its tables). nbgrader asks `alembic heads` in a second interpreter
    for the head, some seconds each release; alembic reads it here from the same scripts."""
    import sqlite3

    import nbgrader
    from alembic.script import ScriptDirectory

    head = ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()
    gradebook.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(gradebook)) as db, db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (head,))


def release(names: list[str], course: Path) -> None:
    """The graded release of source/NAME, by nbgrader itself: no solutions, no hidden tests."""
    api = nbgrader_api(course)
    if not (gradebook := Layout(course).gradebook).exists():
        stamp_new_gradebook(gradebook)
    for name in names:
        result = api.generate_assignment(name, force=True)
        if not result["success"]:
            raise GradingError(
                f"nbgrader generate_assignment {name} failed:\n{result['log']}{result['error']}"
            )


def export(course: Path, target: Path, partial: bool) -> None:
    """`nbgrader export --to=TARGET` with the course's configuration (its plugin writes
    grades.csv), run in this process as nbgrader_api runs the other commands."""
    from nbgrader.apps import ExportApp

    api = nbgrader_api(course)
    config = copy.deepcopy(api.config)
    config.ExportPlugin.to, config.NbgraderCsv.partial = str(target), partial
    config.ExportApp.log_level = "WARN"  # as quiet as the other commands
    app = ExportApp(config=config)
    app.coursedir = api.coursedir
    try:
        app.start()
    except Exception as err:  # nbgrader's own failure, e.g. a gradebook it cannot read
        raise GradingError(f"nbgrader export failed: {type(err).__name__}: {err}") from err
