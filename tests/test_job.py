"""One grading job (grader/engine/job.py), run as autograde runs it, `python -m grader.engine.job`
with the notebook on stdin, without the sandbox: one tiny hand-made notebook whose cells are
independent cases, executed once. Every cell runs (an error, a timeout and a skip tag stop
none), the output is cut at its caps per cell and per notebook with a note, a warning on stderr
stays a stream, the kernel sees only the passed environment under the memory cap, a dead
kernel fails the checks below it, and a job out of the sandbox notes no process cap. What the
sandbox keeps from the kernel (its process cap too) and what these become in scores is
test_sandbox.py's and test_grading.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output
from paths import ROOT

from grader.engine.job import CELL_OUTPUT_CAP, NOTEBOOK_OUTPUT_CAP, TIMEOUT_ERROR
from grader.engine.sandbox import PROCESSES_ENV

pytestmark = [pytest.mark.heavy(order=14), pytest.mark.waits]  # its timeouts
# The sleeping cell pays it; every other cell needs far less, even on a busy machine.
CELL_TIMEOUT = 4
MEMORY_GB = 2
SECRET = "TL_JOB_TEST_SECRET"  # in the job's environment, not in PASSED_ENV
NOTE = (
    f"\n[output cut by the grader: it keeps {CELL_OUTPUT_CAP:,} characters a cell, "
    f"{NOTEBOOK_OUTPUT_CAP:,} a notebook]\n"
)
ENVIRONMENT = f"""import json, os

names = ["{SECRET}", "TRANSFORMER_LAB_CACHE", "NBGRADER_EXECUTION", "OMP_NUM_THREADS"]
print(json.dumps({{name: os.environ.get(name) for name in names}}))
"""
# Cells of exactly CELL_OUTPUT_CAP characters: nine, after the huge cell's and the rest, pass
# the notebook's cap in the ninth.
FULL_CELL = f"print('y' * {CELL_OUTPUT_CAP - 1})"
FULL_CELLS = 9


def cell(name: str, source: str, graded: bool = False, **fields) -> nbformat.NotebookNode:
    metadata = {"case": name} | fields.pop("metadata", {})
    if graded:
        metadata["nbgrader"] = {"grade": True, "grade_id": name, "points": 1, "locked": True}
    return new_code_cell(source, metadata=metadata, **fields)


CELLS = [
    cell("environment", ENVIRONMENT),
    cell("raises", "raise ValueError('boom')"),
    cell("after_raise", "print('ran after the error')"),
    cell("warns", "import warnings\n\nwarnings.warn('deprecated style')", graded=True),
    cell("sleeps", "import time\n\ntime.sleep(30)"),
    cell("after_timeout", "print('ran after the timeout')"),
    cell("skip_tagged", "print('ran despite the tag')", metadata={"tags": ["skip-execution"]}),
    # numpy takes the address space without touching it: without the cap this costs nothing.
    cell(
        "allocates", f"import numpy\n\ntaken = numpy.empty({MEMORY_GB + 1} * 2**30, dtype='uint8')"
    ),
    cell("huge", f"print('x' * {CELL_OUTPUT_CAP + 100_000})"),
    *[cell(f"full_{i}", FULL_CELL) for i in range(FULL_CELLS)],
    cell("after_cap", "print('past the notebook cap')"),
    cell("dies", "import os\n\nos._exit(0)"),
    # The student's own run left a pass here: it must not count, this cell never runs.
    cell(
        "check_below",
        "print('passed')",
        graded=True,
        outputs=[new_output("stream", name="stdout", text="passed\n")],
    ),
    cell("plain_below", "print('not graded')"),
]


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> tuple[dict, dict[str, nbformat.NotebookNode], str]:
    """The job's result, its executed notebook's cells by case, and the cache folder passed."""
    nb = new_notebook(
        cells=CELLS,
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    cache = tmp_path_factory.mktemp("cache")
    env = {**os.environ, SECRET: "the gradebook's path", "TRANSFORMER_LAB_CACHE": str(cache)}
    # The instructor's setting, which only the sandbox enforces: out of it this machine's tasks,
    # more than 32, show in /proc, and a job that watched them would claim a cap it never had.
    env[PROCESSES_ENV] = "32"
    command = [sys.executable, "-m", "grader.engine.job", f"--cell-timeout={CELL_TIMEOUT}"]
    done = subprocess.run(
        [*command, f"--memory-gb={MEMORY_GB}"],
        input=nbformat.writes(nb),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    executed = nbformat.reads(result["notebook"], as_version=4)
    return result, {c.metadata.case: c for c in executed.cells}, str(cache)


def printed(cell: nbformat.NotebookNode, name: str = "stdout") -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == name)


def errors(cell: nbformat.NotebookNode) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]


def test_a_cell_that_raises_keeps_its_error_and_the_cells_below_run(job):
    _, cells, _ = job
    assert errors(cells["raises"]) == ["ValueError: boom"]
    assert printed(cells["after_raise"]) == "ran after the error\n"


def test_a_cell_past_its_timeout_fails_with_the_timeout_and_the_cells_below_run(job):
    _, cells, _ = job
    last = cells["sleeps"].outputs[-1]
    assert (last.output_type, last.ename) == ("error", "CellTimeoutError")
    assert last.traceback == TIMEOUT_ERROR["traceback"]
    assert printed(cells["after_timeout"]) == "ran after the timeout\n"


def test_no_tag_skips_a_cell(job):
    _, cells, _ = job
    assert printed(cells["skip_tagged"]) == "ran despite the tag\n"


def test_a_warning_on_stderr_stays_a_stream_not_an_error(job):
    _, cells, _ = job
    assert errors(cells["warns"]) == []
    assert printed(cells["warns"], "stderr").endswith(
        "UserWarning: deprecated style\n  warnings.warn('deprecated style')\n"
    )


def test_the_kernel_sees_only_the_passed_environment_and_is_told_it_is_autograded(job):
    _, cells, cache = job
    assert json.loads(printed(cells["environment"])) == {
        SECRET: None,
        "TRANSFORMER_LAB_CACHE": cache,
        "NBGRADER_EXECUTION": "autograde",
        "OMP_NUM_THREADS": "1",
    }


def test_a_cell_that_takes_more_memory_than_the_cap_fails_with_memory_error(job):
    _, cells, _ = job
    assert [o.ename for o in cells["allocates"].outputs] == ["MemoryError"]


def test_a_cell_is_cut_at_its_cap_with_a_note(job):
    _, cells, _ = job
    assert printed(cells["huge"]) == "x" * CELL_OUTPUT_CAP + NOTE


def test_the_notebook_is_cut_at_its_cap_with_a_note_and_keeps_nothing_printed_after(job):
    _, cells, _ = job
    ran = list(cells.values())[: list(cells).index("dies")]  # below, a student's stale output
    kept = sum(len(printed(c, name)) for c in ran for name in ("stdout", "stderr"))
    assert kept - 2 * len(NOTE) == NOTEBOOK_OUTPUT_CAP  # huge's note and the last full cell's
    assert printed(cells[f"full_{FULL_CELLS - 2}"]).endswith("y\n")
    assert printed(cells[f"full_{FULL_CELLS - 1}"]).endswith("y" + NOTE)
    assert cells["after_cap"].outputs == []


def test_a_dead_kernel_fails_the_checks_below_it_and_says_where_it_died(job):
    result, cells, _ = job
    died_in = list(cells).index("dies")
    assert result["died_in"] == died_in
    assert errors(cells["dies"]) == [
        "DeadKernelError: the kernel died while this cell ran; no cell below it ran"
    ]
    assert errors(cells["check_below"]) == [f"NotRun: the kernel died in cell {died_in}, above"]
    assert printed(cells["check_below"]) == ""  # the student's own pass is gone
    assert cells["plain_below"].outputs == []


def test_a_job_out_of_the_sandbox_notes_no_process_cap(job):
    result, cells, _ = job
    assert result["process_cap"] is None
    assert not [c for c in cells.values() if "process cap:" in printed(c)]
