"""nbgrader's own apps on the course folder, run in this process with the course's
configuration: the release (`make release`), the feedback pages, and the gradebook a command
opens once and hands down. None of this can change a score: grading is the engine's
(grader/engine/), keyed by the rerun key; this is the term's, and editing it regrades no one.

The release takes the folder's Layout, not an opened Course: it builds what course.toml is
checked against, and never reads course.toml itself. It is built in a staging folder beside the
course folder (`staged`) and swapped in by renames only once all of it succeeded: a failed
release leaves the course folder byte for byte as it was.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..course import GradingError, Layout, nbgrader_config
from .course_open import Course


def scripts_on_path(env: dict) -> dict:
    """nbgrader runs `alembic` for its gradebook: put this interpreter's scripts on the PATH."""
    scripts = str(Path(sys.executable).parent)
    if scripts in env.get("PATH", "").split(os.pathsep):
        return env
    return {**env, "PATH": os.pathsep.join([scripts, env.get("PATH", "")])}


def api(layout: Layout):
    """nbgrader's own API on the course folder with the course's configuration (one start-up
    for any number of commands, where each `nbgrader` command line pays several seconds)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    os.environ.update(scripts_on_path(dict(os.environ)))
    config = copy.deepcopy(nbgrader_config())  # the cached one stays course-free
    config.CourseDirectory.root = str(layout.root.resolve())
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def stamp_new_gradebook(gradebook: Path) -> None:
    """A new gradebook.db holding only nbgrader's migration head, as nbgrader's Gradebook stamps
    a new file (and then adds its tables). nbgrader asks `alembic heads` in a second interpreter
    for the head, some seconds each release; alembic reads it here from the same scripts."""
    import nbgrader
    from alembic.script import ScriptDirectory

    head = ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()
    gradebook.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(gradebook)) as db, db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (head,))


def release(layout: Layout, names: list[str]) -> None:
    """The graded release of source/NAME, by nbgrader itself: no solutions, no hidden tests."""
    nbgrader = api(layout)
    if not layout.gradebook.exists():
        stamp_new_gradebook(layout.gradebook)
    for name in names:
        result = nbgrader.generate_assignment(name, force=True)
        if not result["success"]:
            raise GradingError(
                f"nbgrader generate_assignment {name} failed:\n{result['log']}{result['error']}"
            )


RELEASED = ("source", "release", "publish")  # the steps a release rebuilds


@dataclass
class Staging:
    """A release in the making: `layout`, a folder beside the course's, holds copies of what the
    release may change; `swap` puts each in place of the course's by renames."""

    course: Layout
    layout: Layout
    parts: list[tuple[Path, Path]] = field(default_factory=list)  # (course's, staged) to swap

    def take(self, mine: Path, staged: Path, swap: bool = True) -> None:
        """A copy of `mine` (if it exists) at `staged`; swapped in at the end unless `swap` is
        False (a copy to read: the submissions a regrade reads)."""
        staged.parent.mkdir(parents=True, exist_ok=True)
        if mine.is_dir():
            shutil.copytree(mine, staged, symlinks=True)
        elif mine.is_file():
            shutil.copy2(mine, staged)
        if swap:
            self.parts.append((mine, staged))

    def take_notebook(self, name: str, students: list[str]) -> None:
        """What a regrade of notebook `name` reads and writes: each student's submitted/ (read)
        and autograded/ folders, and the record of hand grades."""
        for student in students:
            for step in ("submitted", "autograded"):
                mine = self.course.folder(step, name, student)
                self.take(mine, self.layout.folder(step, name, student), swap=step != "submitted")
        if (self.course.hand_grades, self.layout.hand_grades) not in self.parts:
            self.take(self.course.hand_grades, self.layout.hand_grades)

    def swap(self) -> None:
        """Each staged part in place of the course's, by renames on one disk: the course's moved
        into the staging folder (removed with it), the staged one moved in; all moved back
        should a rename fail."""
        moved = []
        try:
            for mine, staged in self.parts:
                old = staged.with_name(f"{staged.name}.replaced")
                if mine.exists():
                    mine.rename(old)
                moved.append((mine, old))
                if staged.exists():
                    mine.parent.mkdir(parents=True, exist_ok=True)
                    staged.rename(mine)
        except OSError:
            for mine, old in reversed(moved):
                if mine.is_dir():
                    shutil.rmtree(mine)
                elif mine.exists():
                    mine.unlink()
                if old.exists():
                    old.rename(mine)
            raise


@contextlib.contextmanager
def staged(course: Layout) -> Iterator[Staging]:
    """A Staging beside the course folder holding copies of its release (source/, release/,
    publish/), its gradebook and course.toml; swapped in when the block ends without an
    exception, removed either way. Nothing in the course folder is written before the swap."""
    staging = Staging(course, course.beside("release"))
    shutil.rmtree(staging.layout.root, ignore_errors=True)  # left by a release that was killed
    staging.layout.root.mkdir(parents=True)
    try:
        for step in RELEASED:
            staging.take(course.step(step), staging.layout.step(step))
        staging.take(course.gradebook, staging.layout.gradebook)
        staging.take(course.settings, staging.layout.settings)
        yield staging
        staging.swap()
    finally:
        shutil.rmtree(staging.layout.root, ignore_errors=True)


def feedback(course: Course) -> None:
    """nbgrader's HTML feedback of every released notebook anyone was graded on."""
    nbgrader, layout = api(course.layout), course.layout
    graded = {a for _, a, _ in layout.students_notebooks("autograded")}
    for name in layout.assignments():
        if name in graded:
            result = nbgrader.generate_feedback(name, force=True)
            if not result["success"]:
                raise GradingError(f"feedback for {name} failed:\n{result['error']}")


@contextlib.contextmanager
def gradebook(course: Course, create: bool = False) -> Iterator:
    """nbgrader's Gradebook, opened once for a command's reading and settling and handed down
    (open it once nbgrader's own apps and the engine have written: SQLite lets one writer in).
    None where the course has no gradebook.db and `create` is not asked: nothing makes one just
    to read it."""
    if not course.layout.gradebook.is_file():
        if not create:
            yield None
            return
        os.environ.update(scripts_on_path(dict(os.environ)))  # a new gradebook runs alembic
    from nbgrader.api import Gradebook

    try:
        opened = Gradebook(course.layout.db_url)
    except Exception as err:  # nbgrader's own failure, e.g. a file that is no gradebook
        raise GradingError(f"cannot open {course.layout.gradebook}: {err}") from err
    with opened as gb:
        yield gb
