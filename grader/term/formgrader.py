"""`make formgrader`: nbgrader's formgrader on the course, to grade the written answer by hand.

JupyterLab starts with nbgrader's server extensions, from grader/ (so that nbgrader reads the
course's nbgrader_config.py), with the course folder as its root (the file browser shows the
course and nothing above it), bound to 127.0.0.1 with a fresh token. nbgrader's exchange (how
students fetch and submit on a shared JupyterHub, unused here: students hand in downloads) is
COURSE/exchange, so that nbgrader finds it writable and does not warn on every page; the
students' extensions that list it (assignment_list, course_list) are not loaded, since they read
no configuration of ours. The formgrader's panel of the loaded configuration is off: it cannot
show jupyter_server's own merged list of extensions as JSON and would warn "Formgrader config is
not serializable" on every visit. The command prints the Manual Grading page of the notebook
with the written prediction, and the page of written answers that changed after they were graded
(kept_grades.changed_page) where there is one.

The formgrader's own Autograde button is refused (nbgrader_config.py sets SandboxOnly): it
would run nbgrader's autograde in the server's process, with the instructor's rights and no
sandbox, after deleting the submission's executed notebook. Grading goes through
`python -m grader autograde` only.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys

from nbconvert.exporters import NotebookExporter

from transformer_lab.catalogue import TRAINING_NOTEBOOK

from ..course import GRADER
from ..engine.kept_grades import CHANGED_PAGE
from .course_open import Course
from .nbgrader_apps import scripts_on_path

MANUAL = TRAINING_NOTEBOOK  # the notebook with a written answer (ex4_prediction)
STUDENT_EXTENSIONS = ("assignment_list", "course_list")  # nbgrader's, for students on a hub
REFUSED = (
    "The formgrader does not autograde: nbgrader's autograde would run {student}'s notebook "
    "outside the sandbox, with your own rights. Grade with `make autograde` "
    "(`python -m grader autograde --student {student} --notebook {assignment}`), then reload "
    "this page."
)


class SandboxOnly(NotebookExporter):
    """nbgrader's Autograde converter builds its exporter before it touches a file or the
    gradebook; failing here stops the formgrader's Autograde button with this message, where
    the usual hooks would only log an error and let the grading go on."""

    def __init__(self, parent=None, **kwargs):
        coursedir = getattr(parent, "coursedir", None)
        student = getattr(coursedir, "student_id", "*") or "*"
        assignment = getattr(coursedir, "assignment_id", "*") or "*"
        raise PermissionError(REFUSED.format(student=student, assignment=assignment))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(course: Course, port: int, token: str) -> list[str]:
    """JupyterLab on the course folder; makes its exchange folder."""
    root, exchange = course.layout.root.resolve(), course.layout.exchange.resolve()
    exchange.mkdir(parents=True, exist_ok=True)
    return [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        f"--CourseDirectory.root={root}",
        f"--Exchange.root={exchange}",
        "--FormgradeExtension.debug=False",
        *(
            arg
            for name in STUDENT_EXTENSIONS
            for arg in (
                "--ServerApp.jpserver_extensions",
                f"nbgrader.server_extensions.{name}=False",
            )
        ),
        *(["--allow-root"] if os.geteuid() == 0 else []),  # CI and containers run as root
    ]


def urls(port: int, token: str, assignment: str = MANUAL) -> dict[str, str]:
    """Open "log in" first: the token in its address sets the login cookie that the
    formgrader's pages and their API calls need (a token on a formgrader address does not)."""
    base = f"http://127.0.0.1:{port}"
    return {
        "log in": f"{base}/lab?token={token}",
        "manual grading": f"{base}/formgrader/gradebook/{assignment}/{assignment}",
        "formgrader": f"{base}/formgrader",
    }


def main(course: Course, port: int | None = None) -> None:
    """Print where to go, then run the server until Ctrl-C."""
    port, token = port or free_port(), secrets.token_hex(16)
    for name, url in urls(port, token).items():
        print(f"{name:>15}: {url}")
    changed = course.layout.report(CHANGED_PAGE)
    if changed.is_file():  # each answer there carries the one graded in its cell's comment
        print(f"{'changed answers':>15}: {changed}")
    print("Open 'log in' once (JupyterLab), then the manual grading page. Stop with Ctrl-C.")
    sys.stdout.flush()
    os.chdir(GRADER)  # nbgrader reads nbgrader_config.py from here
    command = server_command(course, port, token)
    os.execve(sys.executable, command, scripts_on_path(dict(os.environ)))
