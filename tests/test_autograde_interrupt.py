"""Ctrl-C during `python -m grader autograde`: one line on stderr, exit status 130, no job left
behind, and the next run continues where this one stopped. How a stopped run's jobs are killed,
with what they started, is test_supervisor.py's."""

from __future__ import annotations

import copy
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from paths import ROOT

from grader.engine import sandbox
from grader.term import collect
from grader.term.course_open import Course
from maintainer.fabricated_class import release

pytestmark = pytest.mark.heavy(order=10)
NAME = "01_attention"
STUDENTS = ("ann", "bob", "cyd")  # graded in this order, one at a time
SLOW = 10  # seconds bob's notebook sleeps: its job is still running when Ctrl-C comes


def make_course(tmp_path: Path) -> Path:
    """A course with one released notebook and three submissions of it, bob's a slow one."""
    course = tmp_path / "course"
    release(course)
    released = json.loads((course / "release" / NAME / f"{NAME}.ipynb").read_text())
    downloads = tmp_path / "downloads"
    for student in STUDENTS:
        nb = copy.deepcopy(released)
        if student == "bob":
            (cell,) = [
                c
                for c in nb["cells"]
                if c["metadata"].get("nbgrader", {}).get("grade_id") == "ex0_read_the_model"
            ]
            cell["source"] = f"import time\n\ntime.sleep({SLOW})\n" + "".join(cell["source"])
        path = downloads / student / f"{NAME}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb))
    collect.collect(Course.open(course), downloads)
    return course


def processes_with(marks: list[bytes]) -> list[int]:
    """The processes whose environment holds one of `marks` (VAR=value)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            variables = environ.read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours
            continue
        if any(mark in variables for mark in marks):
            found.append(int(environ.parent.name))
    return found


def test_ctrl_c_keeps_the_saved_scores_and_a_rerun_finishes(tmp_path):
    course = make_course(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # The jobs inherit the marker (in or out of the sandbox); their kernels keep only TMPDIR.
    marker = uuid.uuid4().hex
    marks = [f"TL_INTERRUPT_TEST={marker}".encode(), f"TMPDIR={scratch}".encode()]
    env = {**os.environ, "TL_INTERRUPT_TEST": marker, "TMPDIR": str(scratch)}
    command = [sys.executable, "-m", "grader", "--course", str(course), "autograde"]
    command += ["--workers", "1", "--cell-timeout", "60"]
    command += [] if sandbox.why_no_sandbox() is None else ["--no-sandbox"]

    # A session of its own, so that the SIGINT goes to its whole group, as a terminal's does.
    grader = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        # job.json is written last, once the scores are in the gradebook.
        while not list(course.glob("autograded/*/*/job.json")):
            assert grader.poll() is None, grader.communicate()[1]
            assert time.monotonic() < deadline, "no notebook was saved in 180 s"
            time.sleep(0.1)
        os.killpg(grader.pid, signal.SIGINT)
        interrupted = time.monotonic()
        _, stderr = grader.communicate(timeout=60)
        stopping = time.monotonic() - interrupted
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.communicate()

    assert grader.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == (
        "grader autograde: interrupted: 1 of 3 notebooks are scored and saved in the gradebook; "
        "run `make autograde` again to continue where it stopped"
    )
    with sqlite3.connect(course / "gradebook.db") as db:
        assert db.execute("select count(*) from submitted_notebook").fetchone() == (1,)
    # Killed, not waited for: bob's job would sleep on for most of SLOW seconds, and its kernel
    # could outlive it.
    assert stopping < SLOW / 2, f"{stopping:.1f} s from Ctrl-C to exit"
    deadline = time.monotonic() + 2
    while processes_with(marks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marks) == []

    # bob's sleep has done its part: his notebook, without it, so that the rerun waits for nothing.
    released = (course / "release" / NAME / f"{NAME}.ipynb").read_text()
    (course / "submitted" / "bob" / NAME / f"{NAME}.ipynb").write_text(released)
    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    outcomes = json.loads((course / "reports" / "autograde.json").read_text())["outcomes"]
    # ann's notebook was saved before Ctrl-C: the rerun keeps it without running it again.
    assert {o["student"]: o["status"] for o in outcomes} == {
        "ann": "unchanged",
        "bob": "graded",
        "cyd": "graded",
    }
    assert all(o["max_score"] == 4 for o in outcomes)
