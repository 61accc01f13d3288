"""pyproject.toml and environment.yml name the same dependencies at the same floors, and the
package builds (as `pip install` builds it) without a deprecation, shipping its templates."""

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

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


# What a build of the package reads: its metadata, the README it shows, the licence it ships,
# and the two packages with their data.
BUILT_FROM = ("pyproject.toml", "README.md", "LICENSE", "transformer_lab", "checkpoints")


def _build_wheel(tree: Path) -> subprocess.CompletedProcess:
    """Build a wheel of `tree` as pip's build backend call does, every warning an error, so
    that a deprecation setuptools would print during `pip install` fails the build."""
    build = "from setuptools import build_meta; print(build_meta.build_wheel('dist'))"
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", build],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy_of_the_package(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for name in BUILT_FROM:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(source, tree / name)
    return tree


def test_the_package_builds_without_a_deprecation_and_ships_its_templates(tmp_path):
    tree = _copy_of_the_package(tmp_path)
    built = _build_wheel(tree)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (tree / "dist").glob("transformer_lab-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        fields = archive.read(metadata).decode()
    assert "License-Expression: MIT" in fields.splitlines()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    templates = {p.name for p in (ROOT / "transformer_lab" / "reading" / "templates").glob("*.j2")}
    assert templates and {f"transformer_lab/reading/templates/{t}" for t in templates} <= names


def test_the_old_licence_table_would_fail_the_build(tmp_path):
    """The check above can fail: the table form setuptools stops reading in 2027."""
    tree = _copy_of_the_package(tmp_path)
    pyproject = tree / "pyproject.toml"
    text = pyproject.read_text()
    assert 'license = "MIT"\n' in text
    pyproject.write_text(text.replace('license = "MIT"\n', 'license = { text = "MIT" }\n'))
    built = _build_wheel(tree)
    assert built.returncode != 0 and "project.license" in built.stderr
