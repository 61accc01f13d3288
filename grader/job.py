"""One grading job: execute one sanitized notebook in a scratch folder, hand back the result.

    python -m grader.job --cell-timeout 60 --memory-gb 4 < in.ipynb > result.json

The notebook (with its hidden tests) arrives on stdin and the executed notebook leaves on stdout,
inside a JSON object with the wall time. The job touches no gradebook and no course folder, so
any engine that can run a command with a file on stdin (a process pool here; Slurm, HTCondor or
a Kubernetes Job elsewhere) can run it. The kernel starts in an empty scratch folder with a
minimal environment: no path to the course, the gradebook or the job's input is given to it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import uuid

import nbformat

# What the kernel may see of the grader's environment: enough to run Python and find the data.
PASSED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "TRANSFORMER_LAB_DATA",
    "TRANSFORMER_LAB_CACHE",
    "XDG_CACHE_HOME",
    "VIRTUAL_ENV",
)


def kernel_environment() -> dict[str, str]:
    env = {key: os.environ[key] for key in PASSED_ENV if key in os.environ}
    return env | {
        "NBGRADER_EXECUTION": "autograde",  # the notebooks pick the tiny `grade` budget
        "OMP_NUM_THREADS": "1",  # one thread a job: N jobs share N cores without contention
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "PYTHONHASHSEED": "0",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def limit_memory(gigabytes: float) -> None:
    """Cap the address space of this process and the kernel it starts: a cell that allocates
    more fails with MemoryError (or torch's RuntimeError) instead of taking the machine down."""
    limit = int(gigabytes * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def execute(nb: nbformat.NotebookNode, cell_timeout: int) -> nbformat.NotebookNode:
    from nbgrader.preprocessors import Execute

    executor = Execute(
        timeout=cell_timeout,
        interrupt_on_timeout=True,
        # No tag a student can type skips a cell.
        skip_cells_with_tag=f"never-{uuid.uuid4().hex}",
        kernel_name="python3",
    )
    with tempfile.TemporaryDirectory(prefix="tl-grade-") as scratch:
        nb, _ = executor.preprocess(nb, {"metadata": {"path": scratch}})
    return nb


def run(raw: str, cell_timeout: int, memory_gb: float) -> dict:
    start = time.perf_counter()
    os.environ.clear()
    os.environ.update(kernel_environment())
    limit_memory(memory_gb)
    nb = nbformat.reads(raw, as_version=4)
    nb = execute(nb, cell_timeout)
    return {"notebook": nbformat.writes(nb), "seconds": round(time.perf_counter() - start, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="address-space cap")
    args = parser.parse_args(argv)
    raw = sys.stdin.read()
    # The kernel inherits our stdout; keep the real one for the result and give it /dev/null.
    result_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = sys.stderr
    result = run(raw, args.cell_timeout, args.memory_gb)
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
