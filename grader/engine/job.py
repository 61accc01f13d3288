"""One grading job: execute one sanitized notebook in a scratch folder, hand back the result.

    python -m grader.engine.job --cell-timeout 60 --memory-gb 4 < in.ipynb > result.json

The notebook (with its hidden tests) arrives on stdin and the executed notebook leaves on stdout,
inside a JSON object with the wall time. The job touches no gradebook and no course folder, so
any engine that can run a command with a file on stdin (a process pool here; Slurm, HTCondor or
a Kubernetes Job elsewhere) can run it. The kernel starts in an empty scratch folder with a
minimal environment: no path to the course, the gradebook or the job's input is given to it.
In the sandbox, which caps its processes and threads (sandbox.py), it watches their number and
says in which cell it reached the cap.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
import uuid

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from ..course import MEMORY_GB
from .sandbox import CAP_ENV

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
    # The checkout the grader mounted, first on the path: the kernel imports the checks and the
    # package from the tree being graded with, wherever an editable install points.
    "PYTHONPATH",
)
TIMEOUT_ERROR = {
    "ename": "CellTimeoutError",
    "evalue": "",
    "traceback": ["CellTimeoutError: no reply from the kernel before the cell's timeout"],
}
# Characters of output kept per cell and per notebook; a plot takes some tens of thousands.
CELL_OUTPUT_CAP = 500_000
NOTEBOOK_OUTPUT_CAP = 5_000_000
TASKS_POLL_S = 0.05  # a flood holds the cap for as long as it tries; this sees it


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


def _size(output) -> int:
    if output.output_type == "stream":
        return len(output.text)
    if output.output_type == "error":
        return sum(map(len, output.traceback))
    return sum(len(str(value)) for value in output.get("data", {}).values())


def _error(ename: str, evalue: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"]
    )


def record_reply_error(cell, execute_reply, **_) -> None:
    """As nbgrader's executor does: an error the kernel replied with but did not print (a cell
    timeout, above all) becomes an output, so that the check scores 0."""
    reply = execute_reply["content"]
    if reply["status"] != "error":
        return
    if not any(o.output_type == "error" and o.ename == reply["ename"] for o in cell.outputs):
        traceback = reply["traceback"] or [f"{reply['ename']}: {reply['evalue']}"]
        cell.outputs.append(
            nbformat.v4.new_output(
                "error", ename=reply["ename"], evalue=reply["evalue"], traceback=traceback
            )
        )


class GradingClient(NotebookClient):
    """nbclient's executor set up as nbgrader's (every cell runs, errors or not; a cell past its
    timeout is interrupted and fails), without importing nbgrader and nbconvert (a second of
    every job). It keeps only so much output per cell and per notebook as the output arrives
    (nbgrader's LimitOutput counts lines, and one 200 MB line passes it), and remembers which
    cell runs, for when the kernel dies."""

    running = None  # index of the cell being executed
    in_notebook = 0  # characters kept so far

    async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
        self.running, self.in_cell = cell_index, 0
        return await super().async_execute_cell(cell, cell_index, *args, **kwargs)

    def output(self, outs, msg, display_id, cell_index):
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or out.output_type == "error":  # an error always counts: it scores 0
            return out
        room = min(CELL_OUTPUT_CAP - self.in_cell, NOTEBOOK_OUTPUT_CAP - self.in_notebook)
        size = _size(out)
        self.in_cell += size
        self.in_notebook += max(0, min(size, room))
        if size <= room:
            return out
        outs.remove(out)
        if room > 0:  # the first output past the cap: keep its head, say what was cut
            if out.output_type == "stream":
                out.text = out.text[:room]
                outs.append(out)
            note = (
                f"\n[output cut by the grader: it keeps {CELL_OUTPUT_CAP:,} characters a cell, "
                f"{NOTEBOOK_OUTPUT_CAP:,} a notebook]\n"
            )
            outs.append(nbformat.v4.new_output("stream", name="stdout", text=note))
        return None


def tasks() -> int:
    """The processes and threads this process can see: in the sandbox's PID namespace, the
    job's own."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:  # ended while counted
                pass
    return count


class CapWatch(threading.Thread):
    """Notes the cell running when the job's tasks first reach `cap`: the kernel refuses the
    next one, and the student's code gets a BlockingIOError it may well catch."""

    def __init__(self, cap: int, client: GradingClient):
        super().__init__(daemon=True)
        self.cap, self.client, self.done = cap, client, threading.Event()
        self.peak, self.reached_in = 0, None

    def run(self):
        while not self.done.wait(TASKS_POLL_S):
            self.peak = max(self.peak, tasks())
            if self.peak >= self.cap and self.reached_in is None:
                self.reached_in = self.client.running


def mark_process_cap(nb: nbformat.NotebookNode, index: int, cap: int) -> str:
    """Say in cell `index` that the job reached its process cap there; the report's line."""
    text = (
        f"\n[process cap: this job reached the grader's cap of {cap} processes and threads "
        "while this cell ran; what it started past the cap failed to start]\n"
    )
    cell = nb.cells[index]
    cell.setdefault("outputs", []).append(
        nbformat.v4.new_output("stream", name="stdout", text=text)
    )
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    where = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
    return f"the job hit its process cap ({cap} processes and threads) in {where}"


def mark_dead_kernel(nb: nbformat.NotebookNode, index: int) -> None:
    """The kernel died in cell `index`: say so there, and fail every check below it, which
    would otherwise pass by having no error."""
    nb.cells[index].setdefault("outputs", []).append(
        _error("DeadKernelError", "the kernel died while this cell ran; no cell below it ran")
    )
    for cell in nb.cells[index + 1 :]:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [_error("NotRun", f"the kernel died in cell {index}, above")]


def execute(
    nb: nbformat.NotebookNode, cell_timeout: int, processes: int | None = None
) -> tuple[nbformat.NotebookNode, int | None, str | None]:
    """The executed notebook, as far as it got, the cell the kernel died in (or None), and
    where it reached its cap of `processes` (or None)."""
    with tempfile.TemporaryDirectory(prefix="tl-grade-") as scratch:
        executor = GradingClient(
            nb,
            timeout=cell_timeout,
            interrupt_on_timeout=True,
            allow_errors=True,
            error_on_timeout=TIMEOUT_ERROR,
            on_cell_executed=record_reply_error,
            # No tag a student can type skips a cell.
            skip_cells_with_tag=f"never-{uuid.uuid4().hex}",
            kernel_name="python3",
            resources={"metadata": {"path": scratch}},
        )
        watch = CapWatch(processes, executor) if processes else None
        if watch:
            watch.start()
        died_in = None
        try:
            executor.execute()  # fills `nb` in place
        except DeadKernelError:
            died_in = executor.running
            mark_dead_kernel(nb, died_in)
        finally:
            if watch:
                watch.done.set()
                watch.join()
    capped = None
    if watch and watch.reached_in is not None:
        capped = mark_process_cap(nb, watch.reached_in, processes)
    return nb, died_in, capped


def run(raw: str, cell_timeout: int, memory_gb: float) -> dict:
    start = time.perf_counter()
    processes = int(os.environ.get(CAP_ENV, 0)) or None  # only the sandbox, which caps, says
    env = kernel_environment()
    os.environ.clear()
    os.environ.update(env)
    limit_memory(memory_gb)
    nb, died_in, capped = execute(nbformat.reads(raw, as_version=4), cell_timeout, processes)
    return {
        "notebook": nbformat.writes(nb),
        "seconds": round(time.perf_counter() - start, 2),
        "died_in": died_in,
        "process_cap": capped,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell-timeout", type=int, required=True, help="seconds per cell")
    parser.add_argument("--memory-gb", type=float, default=MEMORY_GB, help="address-space cap")
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
