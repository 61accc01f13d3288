import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from paths import ROOT, SHARED

from transformer_lab.data import OVERRIDE_ENV, load_corpus

SHARED_CORPUS = SHARED / "data" / "tinyshakespeare.txt"

# Tests never download: they read the course's copy beside the checkout unless told otherwise.
if not os.environ.get(OVERRIDE_ENV) and SHARED_CORPUS.is_file():
    os.environ[OVERRIDE_ENV] = str(SHARED_CORPUS)


# A file whose tests execute notebooks, grade in the sandbox or train models says so at its top,
# `pytestmark = pytest.mark.heavy(order=N)`: `make test-quick` leaves it out. N is its place among
# the heavy files, longest first (`make test --durations`): `make test` hands files to its workers
# in this order, so that no long file starts last and runs on alone (`--no-loadscope-reorder`
# keeps pytest-xdist from sorting the files by their number of tests instead).
# A file whose tests mostly wait (for a timeout, a sleeping child, an install that fails) says
# `pytest.mark.waits`: the waiting files come right after the first heavy file, so that they run
# beside it on the next worker, where its two grading jobs keep both cores busy; last, they would
# leave a core idle.
def place(item) -> tuple[float, bool]:
    """Where an item's file comes: a heavy file's order, the waiting files just after order 1,
    every other file after the heavy ones."""
    if item.get_closest_marker("waits"):
        return (1, True)
    marker = item.get_closest_marker("heavy")
    return (marker.kwargs["order"] if marker else float("inf"), False)


def pytest_collection_modifyitems(items):
    for item in items:
        marker = item.get_closest_marker("heavy")
        if marker and set(marker.kwargs) != {"order"}:
            raise pytest.UsageError(f"{item.nodeid}: mark the file, heavy(order=N), not a test")
        if "waits" in {m.name for m in item.own_markers}:
            raise pytest.UsageError(f"{item.nodeid}: mark the file as one that waits, not a test")
    # A stable sort: the heavy files first (the waiting ones after the first), the rest after,
    # each file's tests in their order.
    items.sort(key=place)


# `make test` runs the files on parallel pytest workers (pytest-xdist, `--dist loadfile`: a file's
# tests stay on one worker, so its module fixtures, a graded class or executed notebooks, are
# built once). Each worker, and every notebook or job it starts, gets one torch thread: two
# processes of two threads each on two cores run several times slower than two of one.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)

# A run started in the background by a script (`make test &`, nohup) inherits SIGINT ignored, and
# so would every process it starts: the Ctrl-C tests need it as a terminal has it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config):
    """One release build for the whole run: every worker copies the first one's
    (maintainer/fabricated_class.py). Set before the workers start, so that they inherit it."""
    from maintainer.fabricated_class import SHARED_BUILDS_ENV

    if not hasattr(config, "workerinput") and SHARED_BUILDS_ENV not in os.environ:
        config._release_builds = tempfile.mkdtemp(prefix="tl-release-builds-")
        os.environ[SHARED_BUILDS_ENV] = config._release_builds


def pytest_unconfigure(config):
    if hasattr(config, "_release_builds"):
        shutil.rmtree(config._release_builds, ignore_errors=True)


@pytest.fixture(scope="session")
def corpus():
    return load_corpus("cpu")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


GUARDED = ("checkpoints", "transformer_lab", "grader", "data")


def _checkout_state() -> dict[str, bytes]:
    """Every file git would see in the folders the grader trusts (tracked, or untracked and not
    ignored), with its bytes: the suite works on copies and must leave these as it found them."""
    import subprocess

    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "--", *GUARDED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return {name: (ROOT / name).read_bytes() for name in listed if (ROOT / name).is_file()}


@pytest.fixture(scope="session", autouse=True)
def _checkout_left_alone():
    before = _checkout_state()
    yield
    after = _checkout_state()
    changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    assert not changed, f"the tests changed the checkout: {changed}"


def checkout_copy(folder: Path, monkeypatch) -> Path:
    """A copy of what a grading job reads (checks, package, grader, data), made the checkout the
    grader runs from: a test may change or attack it without touching the real one."""
    import shutil

    import grader.engine.autograde
    import grader.engine.sandbox

    skip = shutil.ignore_patterns("__pycache__", "course", "*.pyc")
    for name in GUARDED:
        shutil.copytree(ROOT / name, folder / name, ignore=skip)
    monkeypatch.setattr(grader.engine.sandbox, "ROOT", folder)
    monkeypatch.setattr(grader.engine.autograde, "ROOT", folder)
    return folder


def checkpoints_without_a_tick(notebook) -> dict[str, str]:
    """The checkpoint cells of an executed notebook that printed no ✅: grade id -> what they
    printed."""
    printed = {}
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            printed[cell.metadata.nbgrader.grade_id] = "".join(
                o.get("text", "") for o in cell.outputs
            )
    return {grade_id: text for grade_id, text in printed.items() if "✅" not in text}


def wait_for(condition, seconds: float, what: str, every: float = 0.05):
    """What `condition()` gives once it is true; a failure naming `what` past `seconds`."""
    import time

    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(every)
    return found


def grader_cli(course: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m grader --course COURSE ARGS` run in this process, what it printed and its exit
    status as the shell sees them: the same `main`, without a second interpreter's imports
    (seconds each). Tests of the command line itself start it as a user does."""
    from grader.__main__ import main

    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--course", str(course), *args])
        except SystemExit as stop:  # sys.exit(message) prints it and exits 1, as Python does
            code = stop.code if isinstance(stop.code, int) else 1
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
    return subprocess.CompletedProcess(["grader", *args], code, out.getvalue(), err.getvalue())


def executing(outputs: dict | None = None, seconds: float = 1.5):
    """A stand-in for a grading job (grader.engine.autograde.run_job), for the tests whose
    subject is not execution (lateness, hand grades, the formgrader): it hands back the sanitized
    notebook with `outputs` in the cells of those grade ids and none elsewhere, as a real run
    would have left it. nbgrader scores a check without an error as passed, so a solved notebook
    gets its real run's score (test_grading.py runs them for real)."""
    import nbformat

    def job(text: str, *_) -> dict:
        nb = nbformat.reads(text, 4)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in (outputs or {}):
                cell.outputs = outputs[grade_id]
        return {"notebook": nbformat.writes(nb), "seconds": seconds, "died_in": None}

    return job


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A course folder with the graded release built (once a run, copied here); tests that
    change it take a copy."""
    from maintainer.fabricated_class import release

    course = tmp_path_factory.mktemp("released") / "course"
    release(course)
    return course
