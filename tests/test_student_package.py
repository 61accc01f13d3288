"""A graded runtime holds no solutions: the wheel `make release` builds for it holds the helper
package, the checks and the recorded data, and no solution region, hidden test, solutions/ file
or notebook; its setup cell, run as on Colab, installs that wheel and the notebook finds the
package, the checks and the recorded model in it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from paths import ROOT

from maintainer import student_package
from maintainer.setup_cell import graded_setup

FORBIDDEN_TEXT = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS")


def forbidden(wheel: Path) -> list[str]:
    """Entries of the wheel that give an answer away: a solutions/ file, a notebook (the
    workshop's fold solutions), a hidden check (checkpoints/*_hidden.py), or a file holding a
    solution region or hidden tests."""
    found = []
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            given = name.startswith("solutions/") or "/solutions/" in name
            if given or name.endswith((".ipynb", "_hidden.py")):
                found.append(name)
                continue
            text = archive.read(name).decode("utf-8", errors="replace")
            found += [f"{name}: {marker}" for marker in FORBIDDEN_TEXT if marker in text]
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return student_package.build_wheel(tmp_path_factory.mktemp("publish"))


def test_the_wheel_holds_the_package_the_checks_and_the_recorded_data_only(wheel):
    assert wheel.name == student_package.wheel_name()
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        tops = {name.split("/")[0] for name in names}
        info = wheel.name.removesuffix("-py3-none-any.whl") + ".dist-info"
        assert tops == {"transformer_lab", "checkpoints", info}
        for path in student_package.recorded_files():
            inside = f"{student_package.RECORDED.as_posix()}/{path.name}"
            assert archive.read(inside) == path.read_bytes(), inside
    assert "transformer_lab/recorded/mini_gpt-quick-cpu.pt" in names
    for package in student_package.PACKAGES:  # every module and template a notebook imports
        for path in (ROOT / package).rglob("*"):
            hidden = path.name.endswith("_hidden.py")
            if path.suffix in (".py", ".j2") and "__pycache__" not in path.parts and not hidden:
                assert path.relative_to(ROOT).as_posix() in names, path
    assert not forbidden(wheel)


def test_the_same_sources_build_the_same_wheel(wheel, tmp_path):
    """A rebuilt release publishes the same bytes: nothing a student installs changes unseen."""
    again = student_package.build_wheel(tmp_path)
    assert again.read_bytes() == wheel.read_bytes()


def test_the_check_finds_a_solution_file_a_notebook_and_a_solution_region(tmp_path, wheel):
    """The check can fail: a wheel with a solutions/ file, a workshop notebook and a check
    module that kept a solution region is refused for each."""
    planted = tmp_path / wheel.name
    planted.write_bytes(wheel.read_bytes())
    with zipfile.ZipFile(planted, "a") as archive:
        archive.writestr("solutions/01_attention.py", "x = 1\n")
        archive.writestr("notebooks/01_attention.ipynb", "{}")
        archive.writestr("checkpoints/extra.py", "### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
        archive.writestr("checkpoints/more.py", "### BEGIN HIDDEN TESTS\n")
        archive.writestr("checkpoints/attention_hidden.py", "def exercise_1(fn): ...\n")
    found = forbidden(planted)
    assert "solutions/01_attention.py" in found and "notebooks/01_attention.ipynb" in found
    assert "checkpoints/extra.py: ### BEGIN SOLUTION" in found
    assert "checkpoints/more.py: ### BEGIN HIDDEN TESTS" in found
    assert "checkpoints/attention_hidden.py" in found


def test_release_puts_the_wheel_beside_the_notebooks_and_their_setup_installs_it(tmp_path):
    """`make release` with a publish URL: the wheel in publish/, the setup cell of each graded
    notebook pip-installing it from that folder's raw address, and cloning nothing."""
    from maintainer import notebook_build

    course = tmp_path / "course"
    url = "github.com/acme/course/blob/main/graded"
    notebook_build.build(None, course, only=["02_causal_mask"], publish_url=url)
    publish = course / "publish"
    assert (publish / student_package.wheel_name()).is_file()
    text = (publish / "02_causal_mask.ipynb").read_text(encoding="utf-8")
    address = f"https://github.com/acme/course/raw/main/graded/{student_package.wheel_name()}"
    assert address in text
    assert "git clone" not in text and '"git"' not in text
    assert address in (publish / "README.md").read_text(encoding="utf-8")


def run_setup(setup: str, home: Path, cwd: Path, after: str) -> subprocess.CompletedProcess:
    """The setup cell in a fresh Python as on Colab (google.colab imported first), then `after`.
    pip installs where the cell says; nothing of the test's environment is changed."""
    standin = home.parent / "standin"
    (standin / "google" / "colab").mkdir(parents=True, exist_ok=True)
    (standin / "google" / "__init__.py").write_text("")
    (standin / "google" / "colab" / "__init__.py").write_text('"""Stand-in for Colab."""\n')
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": str(standin),
        "PIP_QUIET": "1",
        "PIP_NO_INDEX": "1",  # nothing comes from the network: torch and the rest are here
        "LANG": "C.UTF-8",
    }
    code = "import google.colab\n" + setup + "\n" + after
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


AFTER = """
import checkpoints, transformer_lab
from transformer_lab.saving import load_trained_gpt
print("package", transformer_lab.__file__)
print("checks", checkpoints.__file__)
print("model", load_trained_gpt("cpu", use_drive=False).origin)
"""


def test_the_graded_setup_installs_the_wheel_and_the_notebook_finds_the_recorded_model(
    tmp_path, wheel
):
    home, content = tmp_path / "home", tmp_path / "content"
    home.mkdir()
    content.mkdir()
    done = run_setup(graded_setup(str(wheel), published=True), home, content, AFTER)
    assert done.returncode == 0, done.stderr[-3000:]
    installed = home / "transformer-lab"
    assert f"package {installed}/transformer_lab/__init__.py" in done.stdout
    assert f"checks {installed}/checkpoints/__init__.py" in done.stdout
    assert "course's mini-GPT" in done.stdout and "full budget" in done.stdout, done.stdout
    on_disk = {p.relative_to(installed).parts[0] for p in installed.iterdir()}
    assert "solutions" not in on_disk and "notebooks" not in on_disk and "data" not in on_disk
    assert not list(installed.rglob("*.ipynb"))
    assert sorted(p.name for p in content.iterdir()) == []  # nothing written where students work
