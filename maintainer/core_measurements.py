"""What `make core-minutes` measures by running the notebooks as a student runs them: each
workshop notebook, its exercises solved, in a fresh runtime of its own
(maintainer/fresh_runtime.py), in order, the student's Drive (a folder that outlives the
runtimes) carrying their pieces and model from one notebook to the next, as on Colab.

    python -m maintainer.core_measurements shown      # what each code cell of the core path shows
    python -m maintainer.core_measurements one-core   # each notebook's compute on one CPU core

`shown` runs at the smoke budget (any machine, a few minutes): the words each cell prints (the
package's lines too), its tables and figures, by the cell's digest, in docs/shown_outputs.json.
`one-core` runs at the budget `auto` picks on a CPU, pinned to one CPU as `taskset -c 0` pins
it, one torch thread (Colab's CPU runtime has one core): the seconds of each notebook's core
path, its setup cell aside (the start is counted apart), in docs/one_core_compute.json. Its
timings are only as quiet as the machine: run it when nothing else does (a quarter of an hour).
Both run only the core path's code cells: what a student runs before "After the lab".
`--notebooks 01_attention,02_causal_mask` measures only those (a record keeps the others);
`--out FILE` writes elsewhere, for a trial.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from transformer_lab.runtime import resolve_mode

from . import ROOT, commit_label, corpus_or_exit, fresh_runtime, notebook_build
from .core_minutes import ONE_CORE, SHOWN, WORD, Shown, cell_digest, core_code_cells

TABLE_RULE = re.compile(r"^\|[-:| ]+\|$", re.MULTILINE)  # a Markdown table's |---|---| line
CHECK_RECORD = "application/vnd.transformer-lab.check+json"  # a checkpoint's verdict, for grading
SETUP_TITLE = "#@title Setup"


def _with_mode(nb, mode: str) -> None:
    """The parameters cell's MODE set as papermill sets it: a cell of its own after it."""
    import nbformat

    (at,) = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    injected = nbformat.v4.new_code_cell(f'MODE = "{mode}"', metadata={"tags": ["injected"]})
    nb.cells.insert(at + 1, injected)


def run_notebooks(
    paths: list[Path], mode: str | None, env: dict[str, str]
) -> Iterator[tuple[Path, object, object, dict[str, float]]]:
    """Each notebook's core path run as a student runs it, in order: (its path, its source
    notebook, the executed notebook, the seconds of each cell by its id). The code cells set
    aside for afterwards are not run: the core path never needs them. `mode`: the MODE set
    (None: the notebook's own, auto)."""
    with tempfile.TemporaryDirectory(prefix="tl-core-") as tmp:
        here = Path(tmp)
        origin = fresh_runtime.course_repository(here / "origin")
        config = {"repository": origin.as_uri(), "ref": fresh_runtime.REF}
        drive = {"STANDIN_DRIVE": str(here / "google-drive")}  # outlives every runtime
        for path in paths:
            source = notebook_build.source_notebook(path)
            core = {cell.id for cell in core_code_cells(source.cells)}
            nb = fresh_runtime.solved_workshop(path, config)  # the same cells, the same ids
            nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.id in core]
            if mode:
                _with_mode(nb, mode)
            print(f"running {path.stem} ...", flush=True)
            _, seconds = fresh_runtime.run(nb, here / path.stem, env | drive)
            yield path, source, nb, {c.id: s for c, s in zip(nb.cells, seconds, strict=True)}


def _words(text: str) -> int:
    return len(WORD.findall(text))


def shown_by(cell) -> Shown:
    """What an executed code cell shows: the words it prints (streams, results, the text of a
    widget such as a progress bar), its Markdown tables (their other lines read as words) and
    its figures. A checkpoint's record for grading shows nothing."""
    words = tables = figures = 0
    for output in cell.outputs:
        data = output.get("data", {})
        if output.output_type == "stream":
            words += _words(output.text)
        elif any(kind.startswith("image/") for kind in data):
            figures += 1
        elif "text/markdown" in data:
            markdown = data["text/markdown"]
            tables += len(TABLE_RULE.findall(markdown))
            prose = [line for line in markdown.splitlines() if not line.startswith("|")]
            words += _words("\n".join(prose))
        elif CHECK_RECORD not in data:
            words += _words(data.get("text/plain", ""))
    return Shown(words, tables, figures)


def shown_entries(source, executed) -> dict[str, dict]:
    """What each code cell of the source notebook's core path showed in the executed one (the
    same ids), by the source cell's digest."""
    by_id = {cell.id: cell for cell in executed.cells}
    return {
        cell_digest(cell): asdict(shown_by(by_id[cell.id]))
        for cell in core_code_cells(source.cells)
    }


def _is_setup(cell) -> bool:
    return cell.source.startswith(SETUP_TITLE)  # the build's setup cell, run at the start


def one_core_seconds(source, seconds: dict[str, float]) -> float:
    """A notebook's compute: the seconds of its core path's code cells, the setup cell aside
    (the runtime's start, counted apart)."""
    core = {cell.id for cell in core_code_cells(source.cells) if not _is_setup(cell)}
    return round(sum(s for i, s in seconds.items() if i in core), 1)


def pin_to_one_cpu() -> int:
    """Pin this thread, and so every process it starts (a kernel), to one CPU, as `taskset -c N`
    pins a command."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def _label() -> str:
    import torch

    commit, dirty = commit_label(10)
    return (
        f"{platform.machine()}, torch {torch.__version__}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit}"
        f"{' (uncommitted changes)' if dirty else ''}"
    )


def _keep(out: Path) -> dict:
    """The record at `out`, whose notebooks a measurement of some of them keeps."""
    return json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {"notebooks": {}}


def measure_shown(paths: list[Path], out: Path) -> dict:
    record = _keep(out)
    for path, source, executed, _ in run_notebooks(paths, "smoke", {}):
        record["notebooks"][path.stem] = shown_entries(source, executed)
    record["budget"], record["where"] = "smoke", _label()
    return record


def measure_one_core(paths: list[Path], out: Path) -> dict:
    record = _keep(out)
    cpu, load = pin_to_one_cpu(), os.getloadavg()[0]
    for path, source, _, seconds in run_notebooks(paths, None, {"OMP_NUM_THREADS": "1"}):
        record["notebooks"][path.stem] = {"core_s": one_core_seconds(source, seconds)}
    record["mode"] = resolve_mode("auto", "cpu")
    record["where"] = (
        f"pinned to CPU {cpu} of {os.cpu_count()} (as `taskset -c {cpu}`), one torch thread, "
        f"{_label()}; load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )
    return record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("shown", "one-core"))
    parser.add_argument("--notebooks", help="comma-separated names (default: every notebook)")
    parser.add_argument("--out", type=Path, help="where to write (default: the record in docs/)")
    args = parser.parse_args(argv)
    every = notebook_build.sources()
    wanted = args.notebooks.split(",") if args.notebooks else [p.stem for p in every]
    unknown = sorted(set(wanted) - {p.stem for p in every})
    if unknown:
        names = ", ".join(p.stem for p in every)
        parser.error(f"no such notebook: {', '.join(unknown)}; solutions/ has {names}")
    paths = [p for p in every if p.stem in wanted]
    corpus_or_exit("python -m maintainer.core_measurements")  # the notebooks read it
    out = args.out or (SHOWN if args.what == "shown" else ONE_CORE)
    measure = measure_shown if args.what == "shown" else measure_one_core
    record = measure(paths, out)
    out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    sys.exit(main())
