"""A grading job as a process: started in a session of its own, killed with everything it started
when it runs past its limit or its autograde run is stopped. The standard library only.

autograde runs `run_job` in threads of its own. A Dask worker runs it as a command instead,

    python -m grader.engine.supervisor --timeout 600 --run RUN -- JOB COMMAND ... < notebook

because a task that a worker unpickles may name nothing but what every worker can import: a
worker started with `dask worker` has the environment of `make setup`, not the checkout on its
path. The task is `subprocess.run` of this command, whose environment (PYTHONPATH) leads it to
the checkout. Ctrl-C in autograde then runs, on every worker,

    python -m grader.engine.supervisor --stop RUN

which marks RUN stopped on that machine (none of its jobs starts after) and kills its
supervisors there with their jobs. A supervisor whose worker died kills its job and exits: the
scheduler has given the job to another worker.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

NOT_RUN = {"error": "not run: autograde was interrupted"}
STOPPED = {"error": "stopped: autograde was interrupted while it ran"}
ABANDONED = "abandoned: the worker that ran it is gone"
POLL_S = 0.5  # how often a supervisor started by a Dask worker checks that the worker lives

# The jobs this process runs, by the autograde run that started them, and the runs that were
# stopped. Under a lock, so that no job starts after its run was stopped.
_jobs_lock = threading.Lock()
_live_jobs: dict[subprocess.Popen, str] = {}
_stopped_runs: set[str] = set()


def _descendants(pid: int) -> list[tuple[int, int]]:
    """(pid, process group) of every process below `pid`, read from /proc (none elsewhere)."""
    children: dict[int, list[tuple[int, int]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError):
            # The command name, in parentheses, may hold spaces: parse from its closing one.
            _, ppid, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
            children.setdefault(int(ppid), []).append((int(stat.parent.name), int(pgrp)))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += [child for child, _ in below]
    return found


def _kill_groups(groups: set[int]) -> None:
    for group in groups - {os.getpgrp()}:  # never the group this process belongs to
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL a job's process group and every group below it: the kernel a job starts leads a
    session of its own (jupyter_client does so), out of reach of the job's group."""
    _kill_groups({process.pid} | {group for _, group in _descendants(process.pid)})


def stop_jobs(run: str) -> None:
    """Kill the jobs of `run` that this process runs, and let none of it start any more."""
    with _jobs_lock:
        _stopped_runs.add(run)
        for process in [p for p, its_run in _live_jobs.items() if its_run == run]:
            _kill(process)


def _wait(process: subprocess.Popen, text: str, limit: float, orphaned: Callable | None):
    """process.communicate(text) within `limit` seconds (TimeoutExpired past it); None as soon
    as `orphaned()` says nobody waits for the result any more."""
    if orphaned is None:
        return process.communicate(text, timeout=limit)
    deadline = time.monotonic() + limit
    while True:
        try:
            left = max(0.0, deadline - time.monotonic())
            return process.communicate(text, timeout=min(POLL_S, left))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
            if orphaned():
                return None
            text = None  # sent already; communicate() goes on where it stopped


def run_job(
    text: str,
    command: list[str],
    notebook_timeout: int,
    env: dict,
    run: str = "",
    orphaned: Callable[[], bool] | None = None,
) -> dict:
    """Run one job in a session of its own, `text` on its stdin; its result (JSON on stdout),
    or {"error": why there is none}. The job and all it started are killed past the limit,
    when `run` is stopped, when `orphaned()` turns true, or when this raises."""
    with tempfile.TemporaryDirectory(prefix="tl-job-") as cwd:
        with _jobs_lock:
            if run in _stopped_runs:
                return dict(NOT_RUN)
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            _live_jobs[process] = run
        cut_short = None
        try:
            output = _wait(process, text, notebook_timeout, orphaned)
            if output is None:
                cut_short = ABANDONED
        except subprocess.TimeoutExpired:
            cut_short = f"ran past the {notebook_timeout} s limit for a notebook"
        except BaseException:  # Ctrl-C or SIGTERM here: the job must not outlive us
            _kill(process)
            raise
        finally:
            with _jobs_lock:
                _live_jobs.pop(process)
        if cut_short:
            _kill(process)
            process.communicate()
            return {"error": cut_short}
    stdout, stderr = output
    if process.returncode != 0:
        if run in _stopped_runs:  # killed by stop_jobs
            return dict(STOPPED)
        why = _last_line(stderr, f"exit status {process.returncode}, nothing on stderr")
        return {"error": f"the grading job failed: {why}"}
    return json.loads(stdout)


def _last_line(text: str | None, otherwise: str) -> str:
    """The last line a process printed (where the error is), or `otherwise`."""
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else otherwise


# ---------------------------------------------------------------------------------------------
# The same, as commands a Dask worker runs


def command(job: list[str], notebook_timeout: int, run: str) -> list[str]:
    """The command line that runs `job` under a supervisor process (the notebook on stdin)."""
    limits = [f"--timeout={notebook_timeout}", f"--run={run}"]
    return [sys.executable, "-m", "grader.engine.supervisor", *limits, "--", *job]


def stop_command(run: str) -> list[str]:
    return [sys.executable, "-m", "grader.engine.supervisor", f"--stop={run}"]


def result(done: subprocess.CompletedProcess) -> dict:
    """The job's result from its supervisor's completed process."""
    if done.returncode == 0:
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(done.stdout)
    last = _last_line(done.stderr, "nothing on stderr")
    return {"error": f"the job's supervisor failed (exit status {done.returncode}): {last}"}


def _stop_marker(run: str) -> Path:
    return Path(tempfile.gettempdir()) / f"tl-autograde-stopped-{run}"


def _supervisors_of(run: str) -> list[int]:
    """The supervisor processes of `run` on this machine, found by their command lines."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().decode(errors="replace").split("\0")
            options = args[: args.index("--")] if "--" in args else args
            if "grader.engine.supervisor" in options and f"--run={run}" in options:
                found.append(int(cmdline.parent.name))
    return found


def stop_run(run: str) -> int:
    """Mark `run` stopped on this machine and kill its supervisors here, each with its job;
    return how many. The mark comes first: a supervisor that starts after the search reads it."""
    _stop_marker(run).touch()
    supervisors = [pid for pid in _supervisors_of(run) if pid != os.getpid()]
    for pid in supervisors:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            # Frozen, it starts nothing while the groups below it are read and killed.
            os.kill(pid, signal.SIGSTOP)
            _kill_groups({group for _, group in _descendants(pid)} - {os.getpgid(pid)})
            os.kill(pid, signal.SIGKILL)
    return len(supervisors)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=int, default=600, help="seconds for the whole job")
    parser.add_argument("--run", default="", help="the autograde run the job belongs to")
    parser.add_argument("--stop", metavar="RUN", help="stop RUN's jobs on this machine instead")
    parser.add_argument("job", nargs="*", help="the job's command, after --")
    args = parser.parse_args(argv)
    if args.stop:
        print(f"stopped {stop_run(args.stop)} job(s) of run {args.stop}")
        return
    if args.run and _stop_marker(args.run).exists():
        outcome = dict(NOT_RUN)
    else:
        # SIGTERM (a worker shutting down) unwinds like Ctrl-C, so that the job is killed too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        parent = os.getppid()
        outcome = run_job(
            sys.stdin.read(),
            args.job,
            args.timeout,
            dict(os.environ),
            args.run,
            orphaned=lambda: os.getppid() != parent,
        )
    if outcome.get("error") != ABANDONED:  # else nobody reads stdout any more
        json.dump(outcome, sys.stdout)


if __name__ == "__main__":
    main()
