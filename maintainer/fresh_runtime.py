"""A fresh Colab runtime: what tests/test_fresh_runtime.py runs every notebook in, what `make
core-minutes` times a setup cell in, and runs each notebook in to see what it shows and how long
it computes (maintainer/core_measurements.py).

An empty working folder, a fresh HOME and kernel, a stand-in `google.colab` imported at kernel
start (as Colab does), and the course served from a local copy of this checkout, tagged with the
ref the setup cell clones, instead of GitHub. pip installs into the runtime's own folder, never
into the environment that runs it. The student's Drive is a folder that outlives every runtime.
The tests' runtimes are offline (pip finds nothing new and builds without isolation); the
measured start is online, as on Colab: pip builds the course's package in an isolated
environment, installing its build backend (setuptools) there from where pip is configured to
look (on Colab, the package index).

    python -m maintainer.fresh_runtime     # time the start of a fresh runtime, 3 times (online)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from . import ROOT, commit_label, corpus_or_exit, notebook_build
from .setup_cell import workshop_setup

REF = "v-fresh-runtime-test"
MEASURED = ROOT / "docs" / "fresh_runtime.json"  # `make core-minutes` writes it
STANDIN_DRIVE = '''"""Stand-in for Colab's Drive: the student's Drive is $STANDIN_DRIVE."""
import os


_mounted = []


def mount(mountpoint, force_remount=False, timeout_ms=120000, readonly=False):
    storage = os.environ["STANDIN_DRIVE"]  # unset: as if the student refused the sign-in
    os.makedirs(os.path.join(storage, "MyDrive"), exist_ok=True)
    os.makedirs(os.path.dirname(mountpoint), exist_ok=True)
    os.symlink(storage, mountpoint)
    _mounted.append(mountpoint)


def flush_and_unmount(timeout_ms=24 * 60 * 60 * 1000):
    while _mounted:
        os.unlink(_mounted.pop())
'''


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def course_repository(repo: Path) -> Path:
    """This checkout as it is now (committed or not), as a repository tagged with REF."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "course", cwd=repo)
    _git("tag", REF, cwd=repo)
    return repo


def runtime_env(tmp_path: Path, online: bool = False) -> dict[str, str]:
    """HOME, PYTHONPATH and pip settings of a fresh runtime under tmp_path. No MPLBACKEND: as on
    Colab, the kernel draws with matplotlib's inline backend, so that figures reach the notebook.
    Offline (the tests) pip reaches no index and builds with the setuptools already here; online
    (the measured start) it builds in isolation, as Colab's pip does."""
    home, site, standin = tmp_path / "home", tmp_path / "site", tmp_path / "standin"
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab\n")  # Colab imports it at start
    (standin / "google" / "colab").mkdir(parents=True)
    (standin / "google" / "__init__.py").write_text("")
    (standin / "google" / "colab" / "__init__.py").write_text('"""Stand-in for Colab."""\n')
    (standin / "google" / "colab" / "drive.py").write_text(STANDIN_DRIVE)
    site.mkdir()
    offline = {
        "PIP_NO_INDEX": "1",  # no network: what the runtime lacks is already here
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of "no isolation": setuptools is here
    }
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(standin), str(site)]),
        "PIP_TARGET": str(site),
        **({} if online else offline),
        "PIP_QUIET": "1",
        "TRANSFORMER_LAB_DATA": os.environ["TRANSFORMER_LAB_DATA"],
        # Colab mounts the Drive at /content/drive; this runtime's own place stands in for it.
        "TRANSFORMER_LAB_DRIVE": str(tmp_path / "mnt" / "drive"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),  # Colab has 2 cores
        "LANG": "C.UTF-8",
    }


def solved_workshop(path: Path, config: dict):
    """The workshop flavour a student opens, every exercise cell filled with its solution, its
    setup cell cloning the course from `config` (repository, ref)."""
    source = notebook_build.source_notebook(path, config=config)
    solutions = {
        cell.metadata["nbgrader"]["grade_id"]: notebook_build.SOLUTION_MARKERS.sub("", cell.source)
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
    }
    nb = notebook_build.workshop_notebook(source)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in solutions:
            cell.source = solutions[grade_id]
    return nb


def setup_digest() -> str:
    """What a measurement was taken of: the workshop setup cell, its address and ref aside."""
    return hashlib.sha256(workshop_setup("URL", "REF").encode()).hexdigest()[:16]


def run(
    nb, tmp_path: Path, env: dict[str, str] | None = None, online: bool = False
) -> tuple[float, list[float]]:
    """Run `nb` cell by cell in a fresh runtime under tmp_path (its environment `runtime_env`'s,
    updated with `env`), its outputs written into it: (the kernel's start, each cell's seconds)."""
    from nbclient import NotebookClient

    content = tmp_path / "content"  # Colab's empty working folder
    content.mkdir(parents=True)
    client = NotebookClient(nb, timeout=3600, resources={"metadata": {"path": str(content)}})
    seconds = []
    started = time.perf_counter()
    with client.setup_kernel(env=runtime_env(tmp_path, online) | (env or {}), cwd=str(content)):
        kernel = time.perf_counter() - started
        for i, cell in enumerate(nb.cells):
            started = time.perf_counter()
            client.execute_cell(cell, i)
            seconds.append(time.perf_counter() - started)
    return kernel, seconds


def time_setup(repository: Path, tmp_path: Path) -> dict[str, float]:
    """Seconds of a fresh runtime's start, online: the kernel's, and the setup cell's (clone,
    then pip's isolated build and install)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(workshop_setup(repository.as_uri(), REF))]
    kernel, (setup,) = run(nb, tmp_path, online=True)
    return {"kernel_start_s": kernel, "setup_cell_s": setup}


# How the measured runtimes installed the package: what docs/fresh_runtime.json records.
INSTALL = "online: pip builds the package in isolation, as on Colab"


def measure(repeats: int = 3) -> dict:
    """The median of `repeats` fresh runtimes' start, online, with where it was measured."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="tl-fresh-") as tmp:
        repository = course_repository(Path(tmp) / "origin")
        for i in range(repeats):
            runs.append(time_setup(repository, Path(tmp) / f"runtime{i}"))
    commit, dirty = commit_label(10)
    changes = " (uncommitted changes)" if dirty else ""
    return {
        "kernel_start_s": round(statistics.median(r["kernel_start_s"] for r in runs), 1),
        "setup_cell_s": round(statistics.median(r["setup_cell_s"] for r in runs), 1),
        "repeats": repeats,
        "setup_digest": setup_digest(),
        "install": INSTALL,
        "where": (
            f"{platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"{datetime.now(UTC):%Y-%m-%d}, commit {commit}{changes}"
        ),
    }


def recorded() -> dict:
    return json.loads(MEASURED.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    corpus_or_exit("python -m maintainer.fresh_runtime")  # a runtime is handed the corpus
    result = measure()
    MEASURED.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
