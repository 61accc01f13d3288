"""Grading on a Dask cluster started as grader/README.md says: `dask scheduler`, two
`dask worker tcp://HOST:PORT --nthreads 1`, then `python -m grader autograde --scheduler ...`,
every command from the checkout with no PYTHONPATH, so the workers cannot import grader/. One
worker is killed while it runs a job: the scheduler gives the job to the other, and every score
is the local pool's. Ctrl-C in autograde stops the job running on a worker. (The supervisor a
worker runs each job under, alone: test_supervisor.py.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import wait_for
from paths import ROOT

from grader.engine import sandbox
from grader.term import collect
from grader.term.course_open import Course
from maintainer.fabricated_class import (
    WRONG_ATTENTION,
    cell_of,
    perfect,
    release,
    untouched,
    with_attention,
    write,
)

pytestmark = pytest.mark.heavy(order=6)
pytest.importorskip("distributed", reason="Dask is in the instructor extra (`make setup`)")
DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
if DASK is None:
    pytest.skip("no `dask` command beside this Python", allow_module_level=True)

NAME = "01_attention"
CELL_TIMEOUT = 20
STARTUP_S = 60  # for the scheduler and the workers to come up, each
GRADING_S = 300  # for the whole Dask run; the local one takes some tens of seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (process group, command line) of every process that can be read."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            group = int(stat.read_text().rpartition(")")[2].split()[2])
            args = stat.with_name("cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            continue
        found[int(stat.parent.name)] = (group, args)
    return found


def marked(marks: list[bytes]) -> list[int]:
    """The processes whose environment holds one of `marks` (VAR=value)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if set(environ.read_bytes().split(b"\0")) & set(marks):
                found.append(int(environ.parent.name))
        except OSError:  # gone meanwhile, or not ours
            continue
    return found


def kill_marked(marks: list[bytes]) -> list[int]:
    """SIGKILL every process that carries a mark, with its group; return those that remain."""
    for pid in marked(marks):
        for kill, target in ((os.killpg, os.getpgid), (os.kill, lambda pid: pid)):
            try:
                kill(target(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    time.sleep(0.5)
    return marked(marks)


def released_course(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    release(course)
    return course


def class_of_three(course: Path, downloads: Path) -> None:
    """A right answer, an untouched notebook, an attention without 1/sqrt(d_k): one job more
    than the two workers, so that one waits for the worker the test leaves alive."""
    write(downloads / "ada" / f"{NAME}.ipynb", perfect(course, NAME))
    write(downloads / "dan" / f"{NAME}.ipynb", untouched(course, NAME))
    write(downloads / "eve" / f"{NAME}.ipynb", with_attention(course, WRONG_ATTENTION))


# What the local pool gives these three notebooks (test_grading.py grades the same kinds: a
# solution 4 of 4, an untouched release 0, attention without 1/sqrt(d_k) 1 for Exercise 0).
LOCAL_POOL = {"ada": ("graded", 4, 4), "dan": ("graded", 0, 4), "eve": ("graded", 1, 4)}


def autograde_command(course: Path, address: str) -> list[str]:
    """`make autograde SCHEDULER=...` on this course, without the sandbox where none can be."""
    command = [sys.executable, "-m", "grader", "--course", str(course), "autograde"]
    command += ["--workers", "2", "--scheduler", address, "--force"]
    sandboxed = sandbox.why_no_sandbox() is None
    return command + ["--cell-timeout", str(CELL_TIMEOUT)] + ([] if sandboxed else ["--no-sandbox"])


def supervisor_under(groups: set[int]) -> int | None:
    """The process group, among `groups`, of a worker that runs a job now."""
    for group, args in processes().values():
        if group in groups and "grader.engine.supervisor" in args:
            return group
    return None


@dataclass
class Cluster:
    address: str
    workers: list[subprocess.Popen]
    env: dict  # what every command of the test runs with: no PYTHONPATH, the marks
    marks: list[bytes]
    groups: set[int]  # the process groups of the scheduler and the workers


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers on 127.0.0.1, started by their command
    lines from the checkout, each in a session of its own; all killed at the end. One cluster
    for the file: the lost-worker test leaves one worker, all the Ctrl-C test needs."""
    tmp_path = tmp_path_factory.mktemp("cluster")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"TL_DASK_TEST": marker, "TMPDIR": str(scratch)}
    # Everything started here carries the first mark; a grading kernel keeps only TMPDIR.
    marks = [f"TL_DASK_TEST={marker}".encode(), f"TMPDIR={scratch}".encode()]
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    started = []

    def start(*args: str) -> subprocess.Popen:
        log = (tmp_path / f"dask-{len(started)}.log").open("w")
        process = subprocess.Popen(
            [DASK, *args], cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True
        )
        started.append(process)
        return process

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        wait_for(lambda: listening(port), STARTUP_S, "scheduler listening")
        workers = [
            start("worker", address, "--nthreads", "1", "--no-dashboard", "--name", f"w{n}")
            for n in range(2)
        ]
        wait_for(lambda: worker_count(address) == 2, STARTUP_S, "two workers", every=0.5)
        yield Cluster(address, workers, env, marks, {p.pid for p in started})
    finally:
        for process in started:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)
        assert kill_marked(marks) == [], "processes of the cluster outlived its tests"


def worker_count(address: str) -> int:
    from distributed import Client

    with Client(address, timeout=10) as client:
        return len(client.scheduler_info()["workers"])


def test_a_cluster_started_as_documented_grades_like_the_local_pool_despite_a_lost_worker(
    tmp_path, cluster
):
    course = released_course(tmp_path)
    class_of_three(course, tmp_path / "downloads")
    collect.collect(Course.open(course), tmp_path / "downloads")
    grader = start_autograde(course, cluster)
    try:
        workers = {worker.pid for worker in cluster.workers}  # each leads its own group

        def busy_worker():
            if grader.poll() is not None:
                out, err = grader.communicate()
                pytest.fail(f"autograde ended before a job ran:\n{err}{out[-3000:]}")
            return supervisor_under(workers)

        lost = wait_for(busy_worker, GRADING_S, "job running on a worker", every=0.05)
        os.killpg(lost, signal.SIGKILL)  # the worker, its nanny and the job's supervisor
        stdout, stderr = grader.communicate(timeout=GRADING_S)
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.communicate()
    assert grader.returncode == 0, stderr
    outcomes = json.loads((course / "reports" / "autograde.json").read_text())["outcomes"]
    on_dask = {o["student"]: (o["status"], o["score"], o["max_score"]) for o in outcomes}
    assert on_dask == LOCAL_POOL


def test_ctrl_c_stops_the_jobs_on_the_workers(tmp_path, cluster):
    """As in a terminal: SIGINT to autograde's process group. Autograde says what it kept and
    exits 130, and the job it was running on a worker is gone with its supervisor."""
    course = released_course(tmp_path)
    slow = perfect(course, NAME)
    cell = cell_of(slow, "ex0_read_the_model")
    cell["source"] = f"import time\n\ntime.sleep({GRADING_S})\n" + "".join(cell["source"])
    write(tmp_path / "downloads" / "sam" / f"{NAME}.ipynb", slow)
    collect.collect(Course.open(course), tmp_path / "downloads")
    grader = start_autograde(course, cluster, start_new_session=True)
    try:
        wait_for(lambda: supervisor_under(cluster.groups), STARTUP_S, "job on a worker")
        time.sleep(2)  # into the notebook's sleep
        os.killpg(grader.pid, signal.SIGINT)
        _, stderr = grader.communicate(timeout=30)
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.communicate()
    assert grader.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith("grader autograde: interrupted: 0 of 1 ")

    def left_over() -> list[int]:
        groups = {pid: group for pid, (group, _) in processes().items()}
        return [pid for pid in marked(cluster.marks) if groups.get(pid, 0) not in cluster.groups]

    wait_for(lambda: not supervisor_under(cluster.groups), 10, "end of the job's supervisor")
    wait_for(lambda: not left_over(), 10, "end of the job")


def start_autograde(course: Path, cluster, **popen) -> subprocess.Popen:
    """`python -m grader autograde --scheduler ...` on the cluster, as a terminal would start it."""
    return subprocess.Popen(
        autograde_command(course, cluster.address),
        cwd=ROOT,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
