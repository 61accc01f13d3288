"""Grading throughput for the fabricated test class: notebooks per minute with 1 and 2 local
workers and with a Dask LocalCluster of 2 single-threaded workers, in the bubblewrap sandbox;
the same class without the sandbox (its cost); where a notebook's time goes; and each notebook's
grading time. Figures only:

    python tests/bench_grading.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from test_grading import fabricate, release  # noqa: E402

from grader import autograde as grading  # noqa: E402
from grader import collect  # noqa: E402

SETTINGS = {"cell_timeout": 10, "memory_gb": 3, "force": True, "progress": False}


TIMED = ("prepare", "save_scores")  # the parent's serial work: preflight + sanitize, saving


def _timed(fn, name: str, spent: dict):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - start

    return wrapper


def run(label: str, course: Path, **kwargs) -> list:
    spent: dict[str, float] = {}
    originals = {name: getattr(grading, name) for name in TIMED}
    for name, fn in originals.items():
        setattr(grading, name, _timed(fn, name, spent))
    start = time.perf_counter()
    try:
        outcomes = grading.autograde(course, **SETTINGS, **kwargs)
    finally:
        for name, fn in originals.items():
            setattr(grading, name, fn)
    wall = time.perf_counter() - start
    graded = [o for o in outcomes if o.status == "graded"]
    print(
        f"{label}: {wall:.1f} s for {len(graded)} notebooks, {60 * len(graded) / wall:.1f} "
        f"notebooks a minute; in the parent: preflight + sanitizing {spent['prepare']:.1f} s, "
        f"saving scores {spent['save_scores']:.1f} s; job time median "
        f"{statistics.median(o.seconds for o in graded):.1f} s"
    )
    return outcomes


def fixed_cost(course: Path, sandboxed: bool) -> float:
    """Seconds a job takes for a notebook of one empty cell: process, sandbox, kernel start."""
    import os

    import nbformat

    from transformer_lab.data import corpus_path

    command = grading.job_command(10, 3)
    if sandboxed:
        command = grading.sandbox.command(command, course, corpus_path())
    env = {**os.environ, "PYTHONPATH": str(grading.ROOT)}
    text = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")]))
    start = time.perf_counter()
    grading.run_job(text, command, 60, env)
    return time.perf_counter() - start


def main() -> None:
    from distributed import LocalCluster

    with tempfile.TemporaryDirectory() as tmp:
        course, downloads = Path(tmp) / "course", Path(tmp) / "downloads"
        release(course)
        fabricate(course, downloads)
        collect.collect(downloads, course)
        print(
            f"fixed cost of a job (one empty cell): sandbox {fixed_cost(course, True):.1f} s, "
            f"none {fixed_cost(course, False):.1f} s"
        )
        per_notebook = {}
        for workers in (1, 2):
            outcomes = run(f"sandbox, {workers} local worker(s)", course, workers=workers)
        per_notebook[True] = {o.assignment: o.seconds for o in outcomes if o.student == "perfect"}
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
            run("sandbox, Dask LocalCluster 2x1", course, scheduler=cluster.scheduler_address)
        outcomes = run("no sandbox, 2 local workers", course, workers=2, sandboxed=False)
        per_notebook[False] = {o.assignment: o.seconds for o in outcomes if o.student == "perfect"}
        print(
            "grading time per notebook (student 'perfect': job wall time, kernel start included):"
        )
        print(f"  {'notebook':<16} {'sandbox':>8} {'none':>8}")
        for name, with_sandbox in per_notebook[True].items():
            print(f"  {name:<16} {with_sandbox:7.1f}s {per_notebook[False][name]:7.1f}s")


if __name__ == "__main__":
    main()
