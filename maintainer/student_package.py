"""The graded runtime's package: a wheel of exactly what a graded notebook needs.

A graded Colab runtime gets the helper package (transformer_lab/), the checks students may run
(checkpoints/) and the recorded data (data/baselines.json and the models it names), built into one
wheel by `make release` beside the notebooks in COURSE/publish/, and installed by the setup cell
with pip from where that folder is published. Nothing else of the course repository reaches it:
no solutions/, no workshop notebook with its folded solutions, no nbgrader source with its hidden
tests. The recorded data travels inside the package, as transformer_lab/recorded/ (package data
declared in pyproject.toml), and the setup cell points $TRANSFORMER_LAB_BASELINES at it.

    python -m maintainer.student_package DIR     # build the wheel into DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from . import ROOT

PACKAGES = ("transformer_lab", "checkpoints")
RECORDED = Path("transformer_lab") / "recorded"  # inside the wheel: the recorded data
# What the wheel is built from besides the packages: its metadata (the readme is its description).
METADATA = ("pyproject.toml", "README.md", "LICENSE")
# The grader's hidden checks (checkpoints/*_hidden.py) stay in the course's checkout: a graded
# runtime that held them would show a student every further case the autograder tries.
LEFT_OUT = ("__pycache__", "*.pyc", "*_hidden.py")
# A fixed time for the wheel's entries: the same sources give the same bytes, release after
# release (bdist_wheel reads it), so a rebuilt release changes no rerun key by itself.
SOURCE_DATE_EPOCH = "1700000000"


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def wheel_name() -> str:
    """The file name `build_wheel` writes, known before it runs (the setup cell names it)."""
    meta = project()
    return f"{meta['name']}-{meta['version']}-py3-none-any.whl"


def runtime_modules() -> list[str]:
    """The import names of the package's dependencies (pyproject's), which the setup cell
    installs only where the runtime lacks them: Colab has torch, numpy and matplotlib."""
    names = []
    for requirement in project()["dependencies"]:
        name = requirement.split(";")[0]
        for sign in "<>=!~[ ":
            name = name.split(sign)[0]
        names.append(name.strip())
    return names


def recorded_files(data: Path = ROOT / "data") -> list[Path]:
    """data/baselines.json and every model file it names: what a notebook reads from data/."""
    runs = json.loads((data / "baselines.json").read_text(encoding="utf-8"))["runs"].values()
    models = {run["provenance"]["model"]["file"] for run in runs if "model" in run["provenance"]}
    return [data / "baselines.json", *(data / name for name in sorted(models))]


def stage(into: Path) -> Path:
    """The wheel's sources, copied: the two packages (no caches, no hidden checks), the recorded
    data, metadata."""
    for name in PACKAGES:
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns(*LEFT_OUT))
    (into / RECORDED).mkdir()
    for path in recorded_files():
        shutil.copy2(path, into / RECORDED / path.name)
    for name in METADATA:
        shutil.copy2(ROOT / name, into / name)
    return into


def build_wheel(out_dir: Path) -> Path:
    """Build the graded runtime's wheel into out_dir; its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tl-wheel-") as tmp:
        source = stage(Path(tmp) / "project")
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
        command += ["--no-build-isolation", "-w", str(out_dir), str(source)]
        env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH, PIP_NO_INPUT="1")
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f"building the student wheel failed:\n{done.stderr[-3000:]}")
    wheel = out_dir / wheel_name()
    if not wheel.is_file():
        raise RuntimeError(f"pip wheel wrote no {wheel.name} in {out_dir}")
    return wheel


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="the folder to build the wheel in")
    print(f"built {build_wheel(parser.parse_args(argv).dir)}")


if __name__ == "__main__":
    main()
