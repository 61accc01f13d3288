"""Grading throughput, in the bubblewrap sandbox unless said:

- a class of 8 students x 6 notebooks (5 who solved everything, 2 who handed in the untouched
  notebooks, 1 with a wrong attention in 01): notebooks per minute with 1 and 2 local workers and
  with a Dask LocalCluster of 2 single-threaded workers, then without the sandbox (its cost);
  the parent's serial work per notebook; and from these, the time for 200 students x 6 notebooks
  on 2, 16 and 64 cores;
- the fabricated test class (mostly 01, with hostile notebooks: one loops until its cells time
  out) with 2 workers;
- the fixed cost of a job and each notebook's grading time. Figures only:

    python -m maintainer.bench_grading
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import nbformat

from grader.course import Layout
from grader.engine import autograde as grading
from grader.engine.options import EngineOptions
from grader.outcome import Status
from grader.term import collect
from grader.term.course_open import Course
from maintainer import corpus_or_exit
from maintainer.fabricated_class import (
    WRONG_ATTENTION,
    fabricate,
    perfect,
    release,
    untouched,
    with_attention,
    write,
)
from transformer_lab.catalogue import NOTEBOOKS

SETTINGS = EngineOptions(cell_timeout=10, memory_gb=3, force=True, progress=False)


TIMED = ("prepare", "save_scores")  # the parent's serial work: preflight + sanitize, saving


def _timed(fn, name: str, spent: dict):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - start

    return wrapper


def fabricate_class(course: Path, folder: Path) -> None:
    """8 students x 6 notebooks: 5 solved everything, 2 untouched, 1 wrong attention in 01."""
    for student in range(1, 9):
        for name in NOTEBOOKS:
            if student in (6, 7):
                nb = untouched(course, name)
            elif student == 8 and name == "01_attention":
                nb = with_attention(course, WRONG_ATTENTION)
            else:
                nb = perfect(course, name)
            write(folder / f"student{student}" / f"{name}.ipynb", nb)


def run(label: str, course: Path, **kwargs) -> tuple[list, float, float]:
    """The outcomes, notebooks a minute, and the parent's serial seconds per notebook."""
    spent: dict[str, float] = {}
    originals = {name: getattr(grading, name) for name in TIMED}
    for name, fn in originals.items():
        setattr(grading, name, _timed(fn, name, spent))
    start = time.perf_counter()
    try:
        outcomes = grading.grade(Layout(course), replace(SETTINGS, **kwargs))
    finally:
        for name, fn in originals.items():
            setattr(grading, name, fn)
    wall = time.perf_counter() - start
    graded = [o for o in outcomes if o.status == Status.GRADED]
    print(
        f"{label}: {wall:.1f} s for {len(graded)} notebooks, {60 * len(graded) / wall:.1f} "
        f"notebooks a minute; in the parent: preflight + sanitizing {spent['prepare']:.1f} s, "
        f"saving scores {spent['save_scores']:.1f} s; job time median "
        f"{statistics.median(o.seconds for o in graded):.1f} s"
    )
    return (
        outcomes,
        60 * len(graded) / wall,
        (spent["prepare"] + spent["save_scores"]) / len(graded),
    )


def estimate(two: float, parent: float, notebooks: int = 1200) -> None:
    """Minutes for `notebooks` on 2, 16 and 64 cores with a single-threaded worker a core: the
    2-core rate as measured (the parent's share included), per core beyond that, capped by the
    parent, which sanitizes and saves every notebook alone."""
    cap = 60 / parent
    print(
        f"estimate for {notebooks:,} notebooks (200 students x 6), from the 2-worker rate; the "
        f"parent's {parent:.2f} s a notebook caps grading at {cap:.0f} notebooks a minute:"
    )
    for cores in (2, 16, 64):
        rate = min(cores * two / 2, cap)
        print(f"  {cores:>2} cores: {rate:6.1f} notebooks a minute, {notebooks / rate:6.1f} min")


def fixed_cost(course: Path, sandboxed: bool) -> float:
    """Seconds a job takes for a notebook of one empty cell: process, sandbox, kernel start."""
    import os

    from transformer_lab.data import corpus_path

    command = grading.job_command(SETTINGS)
    if sandboxed:
        command = grading.sandbox.command(command, course, corpus_path())
    env = {**os.environ, "PYTHONPATH": str(grading.ROOT)}
    text = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")]))
    start = time.perf_counter()
    grading.run_job(text, command, 60, env)
    return time.perf_counter() - start


def _cell_seconds(cell) -> float:
    timing = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in timing:
        return 0.0
    start, end = (
        datetime.fromisoformat(timing[k]) for k in ("iopub.execute_input", "shell.execute_reply")
    )
    return (end - start).total_seconds()


def where_the_time_goes(course: Path, student: str, seconds: dict[str, float]) -> None:
    """A solved notebook's last job: outside its cells (process, kernel start and shutdown),
    its import cell (torch, matplotlib, the package) and the rest of its cells."""
    print("where a solved notebook's job time goes (the last run):")
    print(f"  {'notebook':<16} {'job':>6} {'outside cells':>14} {'imports':>8} {'other cells':>12}")
    for name, job in seconds.items():
        nb = nbformat.read(Layout(course).notebook("autograded", name, student), 4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        imports = sum(_cell_seconds(c) for c in code if "tl.start_notebook(" in c.source)
        cells = sum(map(_cell_seconds, code))
        outside, others = job - cells, cells - imports
        print(f"  {name:<16} {job:5.1f}s {outside:13.1f}s {imports:7.1f}s {others:11.1f}s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    corpus_or_exit("python -m maintainer.bench_grading")  # every graded notebook reads it
    from distributed import LocalCluster

    with tempfile.TemporaryDirectory() as tmp:
        course, downloads = Path(tmp) / "course", Path(tmp) / "downloads"
        release(course)
        fabricate_class(course, downloads / "class")
        collect.collect(Course.open(course), downloads / "class")
        print(
            f"fixed cost of a job (one empty cell): sandbox {fixed_cost(course, True):.1f} s, "
            f"none {fixed_cost(course, False):.1f} s"
        )
        print("a class of 8 students x 6 notebooks:")
        rates, per_notebook = {}, {}
        for workers in (1, 2):
            outcomes, rates[workers], parent = run(
                f"  sandbox, {workers} local worker(s)", course, workers=workers
            )
        per_notebook[True] = {o.assignment: o.seconds for o in outcomes if o.student == "student1"}
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
            run("  sandbox, Dask LocalCluster 2x1", course, scheduler=cluster.scheduler_address)
        outcomes, *_ = run("  no sandbox, 2 local workers", course, workers=2, sandboxed=False)
        per_notebook[False] = {o.assignment: o.seconds for o in outcomes if o.student == "student1"}
        estimate(rates[2], parent)
        print("grading time per notebook (a solved one: job wall time, kernel start included):")
        print(f"  {'notebook':<16} {'sandbox':>8} {'none':>8}")
        for name, with_sandbox in per_notebook[True].items():
            print(f"  {name:<16} {with_sandbox:7.1f}s {per_notebook[False][name]:7.1f}s")
        where_the_time_goes(course, "student1", per_notebook[False])

        test_class = Path(tmp) / "test-class"
        release(test_class)
        fabricate(test_class, downloads / "test-class")
        collect.collect(Course.open(test_class), downloads / "test-class")
        print("the fabricated test class (hostile notebooks included):")
        run("  sandbox, 2 local workers", test_class, workers=2)


if __name__ == "__main__":
    main()
