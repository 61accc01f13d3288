"""nbgrader's own apps on the course folder, run in this process with the course's
configuration: the release (`make release`), the feedback pages, and the gradebook a command
opens once and hands down. None of this can change a score: grading is the engine's
(grader/engine/), keyed by the rerun key; this is the term's, and editing it regrades no one.

The release takes the folder's Layout, not an opened Course: it builds what course.toml is
checked against, and never reads course.toml itself.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sqlite3
import sys
from collections.abc import Iterator
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
