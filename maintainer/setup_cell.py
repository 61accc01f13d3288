"""The setup cell the build puts after each notebook's title: what a fresh Colab runtime runs first.

Two flavours. The workshop's clones the lab at its pinned ref and works from its notebooks/
folder (the recorded data in ../data/). The graded one installs the student wheel that
`make release` publishes beside the notebooks (maintainer/student_package.py) and nothing else.
Both install the package with `--no-deps` and, of its dependencies, only those the runtime lacks:
Colab's own torch, numpy and matplotlib are never reinstalled. A step that fails raises
SetupFailed, which IPython shows as one line (`_render_traceback_`): what failed, what the tool
said, what to do. Each installs into a `.part` folder renamed only when every step passed, so
running the cell again after a failure tries again. Off Colab the cell does nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import ROOT
from .student_package import RECORDED, runtime_modules

# Colab shows a cell so marked as its `#@title` line alone, its code one click away: a student
# runs the setup, and reads it only to see why it failed.
FORM = {"cellView": "form"}

HELPERS = """\
import sys

if "google.colab" in sys.modules:
    import importlib.util
    import os
    import re
    import shutil
    import subprocess

    class SetupFailed(Exception):
        def _render_traceback_(self):  # IPython shows this line instead of a traceback
            return [f"Setup failed: {self}"]

    def step(command, failed, to_do):
        done = subprocess.run(command, capture_output=True, text=True)
        plain = re.sub(r"\\x1b\\[[0-9;]*m", "", done.stderr or done.stdout).strip()
        lines = plain.splitlines() or ["no message"]  # git's "fatal:", pip's "ERROR:" or "×"
        said = next((s for s in lines if s.startswith(("fatal:", "ERROR:", "×"))), lines[-1])
        if done.returncode:
            raise SetupFailed(f"{failed} ({said.strip(' ×')}). {to_do}")

    pip = [sys.executable, "-m", "pip", "install", "-q"]
    needs = {modules}  # what the package imports, installed only where missing
    course = os.path.expanduser("~/transformer-lab")
    shutil.rmtree(course + ".part", ignore_errors=True)  # what a failed try left
"""
MISSING = """\
        missing = [m for m in needs if importlib.util.find_spec(m) is None]
        if missing:
            step(pip + missing, f"could not install {{missing}}", {to_do})
        os.rename(course + ".part", course)
"""
AGAIN = (
    "Check that the runtime is online (the RAM and Disk meter, top right) and run this cell "
    "again; if it fails again, tell your instructor"
)

WORKSHOP = """\
#@title Setup: run this cell first (on Colab it fetches and installs the course)
# Setup. On Colab: fetch the course at its pinned ref, install its helper package and, of what
# it needs, only what Colab lacks (Colab's torch, numpy and matplotlib stay), then work from its
# notebooks/ folder, where the recorded baselines and model (../data/) are found. A step that
# fails says so in one line. Elsewhere this cell does nothing.
{helpers}    url, ref = "{repo}", "{ref}"
    again = "{again}"
    if not os.path.isdir(course):
        clone = ["git", "clone", "-q", "--depth", "1", "--branch", ref, url, course + ".part"]
        step(clone, f"could not fetch {{ref}} of the course from {{url}}", again)
        step(pip + ["--no-deps", course + ".part"], "could not install the course's package", again)
{missing}    os.chdir(f"{{course}}/notebooks")"""

GRADED = '''\
#@title Setup: run this cell first (on Colab it installs the course's package)
# Setup. On Colab: install the course's helper package, its checks and its recorded data (one
# wheel, published with this notebook) and, of what they need, only what Colab lacks (Colab's
# torch, numpy and matplotlib stay). A step that fails says so in one line. Elsewhere this cell
# does nothing.
{helpers}    wheel = "{wheel}"
    to_do = "{to_do}"
    if not os.path.isdir(course):
        install = pip + ["--no-deps", "--target", course + ".part", wheel]
        step(install, f"could not install the course's package from {{wheel}}", to_do)
{missing}    if course not in sys.path:
        sys.path.insert(0, course)
    os.environ["TRANSFORMER_LAB_BASELINES"] = f"{{course}}/{recorded}/baselines.json"'''
UPLOAD = (
    "Upload {wheel}, which your instructor gives with this notebook, into this runtime's files "
    "(the folder icon on the left), then run this cell again."
)


def _helpers() -> str:
    modules = ", ".join(f'"{name}"' for name in runtime_modules())
    return HELPERS.replace("{modules}", f"({modules})")


def workshop_setup(repo: str, ref: str) -> str:
    """The workshop flavour's setup cell: clone the lab at `ref`, install, work from notebooks/."""
    missing = MISSING.format(to_do="again")
    return WORKSHOP.format(
        helpers=_helpers(), repo=repo, ref=ref, again=f"{AGAIN}.", missing=missing
    )


def graded_setup(wheel: str, published: bool) -> str:
    """The graded flavour's setup cell: pip installs the student wheel from `wheel` (an address,
    or a file name the student uploads when `published` is False), and no course repository."""
    to_do = f"{AGAIN} that the package is not at that address." if published else UPLOAD
    missing = MISSING.format(to_do="to_do")
    return GRADED.format(
        helpers=_helpers(),
        wheel=wheel,
        to_do=to_do.format(wheel=wheel),
        missing=missing,
        recorded=RECORDED.as_posix(),
    )


def tags(repository: Path = ROOT) -> set[str]:
    """The tags of a git repository (none where it is not one): the refs a setup cell can clone
    once pushed. A branch would do for git, but a branch moves; the notebooks pin a tag."""
    done = subprocess.run(["git", "tag", "--list"], cwd=repository, capture_output=True, text=True)
    return set(done.stdout.split()) if done.returncode == 0 else set()
