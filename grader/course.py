"""The course folder nbgrader works in, and its configuration: what grading jobs read of the
course (hashed into the rerun key: engine/rerun_key.py). What only reports or builds the term,
nbgrader's release, feedback and export included, is the term's (grader/term/).

~/transformer-lab-course/           (--course, $TRANSFORMER_LAB_COURSE; outside the checkout)
    source/NN_topic/NN_topic.ipynb      solutions and hidden tests (from solutions/)
    release/NN_topic/NN_topic.ipynb     what students get (nbgrader generate_assignment)
    publish/NN_topic.ipynb              the release, flat, to publish for Colab; README.md
    collected/<sha256>.ipynb            every file collect ever kept; index.jsonl (collected.py)
    submitted/STUDENT/NN_topic/         the file that counts, as handed in, and its
                                        timestamp.txt (when it was handed in)
    autograded/STUDENT/NN_topic/        executed notebooks, as graded; job.json (the rerun key)
    feedback/STUDENT/NN_topic/          HTML feedback
    reports/                            collect, preflight and autograde reports; grades.csv;
                                        term_log.md, every step of the term (term_log.py)
    gradebook.db                        nbgrader's gradebook
    course.toml                         the term's settings (grader/term/settings.py)
    roster.csv                          the class as `make roster` last loaded it
    hand_grades.jsonl                   hand grades set aside or carried over an errata
    canvas_assignments.json             Canvas's ids of our assignments (grader/term/canvas.py)
    exchange/                           nbgrader's exchange, for the formgrader (unused)
"""

from __future__ import annotations

import functools
import os
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
    def roster(self) -> Path:
        """The class as `make roster` last loaded it (nbgrader's student CSV)."""
        return self.root / "roster.csv"

    @property
    def lms_ids(self) -> Path:
        """Canvas's ids of our assignments: {"01_attention": 7001, ...}."""
        return self.root / "canvas_assignments.json"

    @property
    def hand_grades(self) -> Path:
        """Every hand grade set aside or carried over an errata, one JSON line each, never
        rewritten (grader/engine/kept_grades.py)."""
        return self.root / "hand_grades.jsonl"

    def built(self) -> Path:
        """In a folder the notebook build hands over: the notebooks' names and the publish URL
        (grader/term/release.py)."""
        return self.root / "built.json"

    def beside(self, purpose: str) -> Layout:
        """A folder of its own beside the course folder, on the same disk, laid out as it is:
        where a release is built, swapped in by renames only once all of it succeeded."""
        return Layout(self.root.with_name(f".{self.root.name}.{purpose}"))

    @property
    def exchange(self) -> Path:
        """nbgrader's exchange, which the formgrader wants writable (students hand in
        downloads, so it stays empty)."""
        return self.root / "exchange"

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

    def published(self, name: str) -> Path:
        """A file of publish/: NN_topic.ipynb (the release, flat) or its README.md."""
        return self.step("publish") / name

    def report(self, *parts: str) -> Path:
        """A file of reports/, or of a folder in it (feedback_bundles/NN_topic.zip)."""
        return self.step("reports").joinpath(*parts)

    def kept(self, sha256: str) -> Path:
        """A file collect kept, named by its content."""
        return self.step("collected") / f"{sha256}.ipynb"

    @property
    def collected_index(self) -> Path:
        """Every arrival and pin of a kept file, one JSON line each, never rewritten."""
        return self.step("collected") / "index.jsonl"

    def notebook(self, step: str, assignment: str, student: str | None = None) -> Path:
        """A notebook of a step: the course's (source, release) or a student's."""
        folder = self.folder(step, assignment, student)
        return folder / f"{assignment}.{'html' if step == 'feedback' else 'ipynb'}"

    def folder(self, step: str, assignment: str, student: str | None = None) -> Path:
        if (student is None) != (step in COURSE_STEPS):
            whose = "the course's" if step in COURSE_STEPS else "a student's"
            raise ValueError(f"{step}/ holds {whose} notebooks")
        return self.step(step) / (assignment if student is None else f"{student}/{assignment}")

    def timestamp(self, assignment: str, student: str) -> Path:
        """When the student's notebook that counts was handed in, where a source recorded it:
        nbgrader's name (its CourseDirectory reads it there too)."""
        return self.folder("submitted", assignment, student) / "timestamp.txt"

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
