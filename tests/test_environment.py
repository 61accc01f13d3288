"""pyproject.toml and environment.yml must name the same dependencies at the same floors."""

import re
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge's name -> PyPI's


def _split(requirement: str) -> tuple[str, str]:
    name, spec = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", requirement).groups()
    return CONDA_NAMES.get(name.lower(), name.lower()), spec.replace(" ", "")


def test_pyproject_and_environment_name_the_same_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_side = dict(map(_split, project["dependencies"] + project["optional-dependencies"]["dev"]))
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_side = dict(
        _split(dep)
        for dep in env["dependencies"]
        if isinstance(dep, str) and not dep.startswith(("python", "pip"))
    )
    assert conda_side == pip_side
