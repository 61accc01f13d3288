"""pyproject.toml and environment.yml must name the same dependencies at the same floors."""

import re
import tomllib

import yaml
from paths import ROOT

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


# Standard-library modules newer than some Python a floor might name.
NEW_IN = {"tomllib": (3, 11), "zoneinfo": (3, 9), "graphlib": (3, 9)}


def test_the_python_floor_holds():
    """requires-python, environment.yml and ruff's target agree, and no file needs more."""
    import ast

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    floor = tuple(
        map(int, re.search(r">=\s*(\d+)\.(\d+)", pyproject["project"]["requires-python"]).groups())
    )
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert f"python={floor[0]}.{floor[1]}" in env["dependencies"]
    assert pyproject["tool"]["ruff"]["target-version"] == f"py{floor[0]}{floor[1]}"
    for path in ROOT.glob("*/**/*.py"):
        if ".venv" in path.parts or "build" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), feature_version=floor)  # syntax
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for name in names:
                needs = NEW_IN.get(name.split(".")[0], (0, 0))
                assert needs <= floor, f"{path.relative_to(ROOT)} imports {name}: Python {needs}"
