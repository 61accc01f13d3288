"""A grading job as a process (grader/engine/supervisor.py), with `python -c` commands standing in
for the job: no notebook, no kernel. run_job hands back the JSON the job printed, or the error
an instructor reads (a job that failed, one past its limit, killed with what it started, one of
a stopped run); the supervisor command a Dask worker runs prints the same, and `--stop` kills a
run's supervisors with their jobs and lets none start after; a supervisor whose worker died kills
its job. That Ctrl-C in autograde reaches these is test_autograde_interrupt.py's and
test_dask_cluster.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import wait_for
from paths import ROOT

from grader.engine import supervisor
from grader.engine.supervisor import NOT_RUN, STOPPED, result, run_job, stop_jobs

pytestmark = pytest.mark.waits  # for sleeping jobs to be stopped

ECHO = "import json, sys; print(json.dumps({'read': sys.stdin.read()}))"


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def sleeping_job(pid_file: Path, *popen: str) -> list[str]:
    """A job whose child leads a session of its own and sleeps, as a grading job's kernel does
    (`popen`: more arguments of its Popen); the child's pid goes to `pid_file`, so that a test
    can see it die."""
    arguments = ", ".join(["sleeper", "start_new_session=True", *popen])
    return python(
        "import subprocess, sys, time\n"
        "sleeper = [sys.executable, '-c', 'import time; time.sleep(60)']\n"
        f"child = subprocess.Popen({arguments})\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )


def supervisor_env(tmp_path: Path) -> dict:
    """As autograde gives it: the checkout on the path. TMPDIR holds the run's stop marker."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}


def supervised(job: list[str], run: str, env: dict) -> subprocess.Popen:
    """The supervisor as a Dask worker runs it, with an empty notebook: these jobs read none."""
    return subprocess.Popen(
        supervisor.command(job, 60, run),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_job_hands_back_the_json_it_printed_for_the_text_on_its_stdin():
    assert run_job("the notebook", python(ECHO), 5, dict(os.environ)) == {"read": "the notebook"}


def test_a_job_that_failed_gives_the_last_line_of_its_stderr():
    failing = python("import sys; sys.stderr.write('first\\nlast line\\n'); sys.exit(3)")
    assert run_job("", failing, 5, dict(os.environ)) == {
        "error": "the grading job failed: last line"
    }
    silent = python("import sys; sys.exit(3)")
    assert run_job("", silent, 5, dict(os.environ)) == {
        "error": "the grading job failed: exit status 3, nothing on stderr"
    }


def test_a_job_past_its_limit_is_killed_with_what_it_started(tmp_path):
    pid_file, child = tmp_path / "child.pid", None
    # The child holds none of the job's pipes: run_job returns whether or not it was killed.
    job = sleeping_job(pid_file, "stdout=subprocess.DEVNULL", "stderr=subprocess.DEVNULL")
    try:
        # 4 s: time enough for the job to start its child on a loaded machine.
        outcome = run_job("", job, 4, dict(os.environ))
        child = int(pid_file.read_text())
        assert outcome == {"error": "ran past the 4 s limit for a notebook"}
        wait_for(lambda: not running(child), 5, "end of the job's child")
    finally:
        if child and running(child):
            os.kill(child, signal.SIGKILL)


def test_a_stopped_run_kills_its_jobs_with_what_they_started_and_starts_no_more(tmp_path):
    """As a grading job's kernel does, this job's child leads a session of its own and holds the
    job's pipes: killing the job's group alone would leave it, and run_job waiting on it."""
    pid_file, run = tmp_path / "child.pid", uuid.uuid4().hex
    env, child = dict(os.environ), None
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run_job, "", sleeping_job(pid_file), 60, env, run)
        try:
            deadline = time.monotonic() + 30
            while not pid_file.is_file() or not pid_file.read_text():
                assert time.monotonic() < deadline and not future.done(), "the job did not start"
                time.sleep(0.05)
            child = int(pid_file.read_text())
            stop_jobs(run)
            outcome = future.result(timeout=10)
            # A killed process is gone a moment later, not at once, on a loaded machine.
            wait_for(lambda: not running(child), 5, "end of the job's child")
        finally:
            if child and running(child):
                os.kill(child, signal.SIGKILL)
    assert outcome == STOPPED
    ran = tmp_path / "ran"
    late = python(f"open({str(ran)!r}, 'w')")
    assert run_job("", late, 60, env, run) == NOT_RUN
    assert not ran.exists()


@pytest.mark.parametrize(
    "status, stdout, expected",
    [
        (0, "not json", "the job's supervisor failed (exit status 0): last words"),
        (1, '{"seconds": 1}', "the job's supervisor failed (exit status 1): last words"),
    ],
)
def test_a_supervisor_without_json_or_that_failed_gives_its_status_and_last_line(
    status, stdout, expected
):
    done = subprocess.CompletedProcess([], status, stdout=stdout, stderr="first\nlast words\n")
    assert result(done) == {"error": expected}


def test_the_supervisor_command_prints_its_jobs_json(tmp_path):
    done = subprocess.run(
        supervisor.command(python(ECHO), 5, uuid.uuid4().hex),
        input="the notebook",
        cwd=ROOT,
        env=supervisor_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert json.loads(done.stdout) == {"read": "the notebook"}


def test_stopping_a_run_kills_its_supervised_jobs_and_starts_no_more(tmp_path):
    env = supervisor_env(tmp_path)
    run, pid_file, child = uuid.uuid4().hex, tmp_path / "child.pid", None
    watched = supervised(sleeping_job(pid_file), run, env)
    try:
        child = int(wait_for(lambda: pid_file.is_file() and pid_file.read_text(), 30, "job"))
        stop = subprocess.run(
            supervisor.stop_command(run), cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert stop.stdout == f"stopped 1 job(s) of run {run}\n", stop.stderr
        assert watched.wait(timeout=10) == -signal.SIGKILL
        wait_for(lambda: not running(child), 5, "end of the job's child")
    finally:
        for pid in [watched.pid] + ([child] if child else []):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        watched.communicate()
    ran = tmp_path / "ran"
    late = supervised(python(f"open({str(ran)!r}, 'w')"), run, env)
    stdout, _ = late.communicate(timeout=30)
    assert json.loads(stdout) == NOT_RUN
    assert not ran.exists()


def test_a_supervisor_whose_worker_died_kills_its_job(tmp_path):
    """The worker stands in as a process that starts the supervisor and is killed alone."""
    pid_file, child = tmp_path / "child.pid", None
    argv = supervisor.command(sleeping_job(pid_file), 60, uuid.uuid4().hex)
    worker_code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen({argv!r}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    worker = subprocess.Popen(
        python(worker_code),
        cwd=ROOT,
        env=supervisor_env(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    watched = int(worker.stdout.readline())
    try:
        child = int(wait_for(lambda: pid_file.is_file() and pid_file.read_text(), 30, "job"))
        worker.kill()
        worker.wait(timeout=10)
        wait_for(lambda: not running(watched), 10, "end of the orphaned supervisor")
        wait_for(lambda: not running(child), 5, "end of its job's child")
    finally:
        for pid in [worker.pid, watched] + ([child] if child else []):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        worker.communicate()
