"""The setup cell, as a student on Colab meets it when something is wrong: a clone or an install
that fails says in one line what happened and what to do, no traceback, in a real IPython kernel
with a stand-in `google.colab`; a failed try leaves nothing that stops the next one. The
notebook's own setup decides about the Drive there, in one line. And the ref the notebooks pin
names a tag of this repository, since that is what their setup clones."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from paths import ROOT

from maintainer import fresh_runtime, notebook_build, setup_cell, student_package
from transformer_lab import saving

pytestmark = pytest.mark.waits  # for clones and installs that fail
REF = notebook_build.settings()["ref"]


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tiny_repository(tmp_path_factory) -> Path:
    """A repository tagged `v1` that holds no Python project: it clones, and pip refuses it."""
    repo = tmp_path_factory.mktemp("tiny")
    (repo / "notebooks").mkdir()
    (repo / "notebooks" / "README.md").write_text("nothing to install\n")
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tiny", cwd=repo)
    _git("tag", "v1", cwd=repo)
    return repo


def cases(tiny: Path) -> dict[str, str]:
    """Each way a setup cell meets a failure, as the cell the build writes."""
    return {
        "no repository": setup_cell.workshop_setup("file:///nowhere/transformer-lab", REF),
        "no such ref": setup_cell.workshop_setup(tiny.as_uri(), "v9"),
        "nothing to install": setup_cell.workshop_setup(tiny.as_uri(), "v1"),
        "wheel not uploaded": setup_cell.graded_setup(student_package.wheel_name(), False),
        "wheel not published": setup_cell.graded_setup(
            notebook_build.published_wheel("github.com/acme/nowhere/blob/main"), True
        ),
    }


@pytest.fixture(scope="module")
def failures(tiny_repository, tmp_path_factory) -> dict[str, tuple[list, Path]]:
    """Every case in one kernel, each with a HOME of its own: (its error outputs, its HOME)."""
    root = tmp_path_factory.mktemp("runtime")
    standin = root / "standin" / "google" / "colab"
    standin.mkdir(parents=True)
    (standin.parent / "__init__.py").write_text("")
    (standin / "__init__.py").write_text('"""Stand-in for Colab."""\n')
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("import os, google.colab"))
    homes = {}
    for i, (name, setup) in enumerate(cases(tiny_repository).items()):
        homes[name] = home = root / f"home{i}"
        home.mkdir()
        nb.cells.append(nbformat.v4.new_code_cell(f"os.environ['HOME'] = {str(home)!r}"))
        nb.cells.append(nbformat.v4.new_code_cell(setup, metadata={"case": name}))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "PYTHONPATH": str(root / "standin"),
        "PIP_NO_INDEX": "1",  # no network: an address that is not there fails at once
        "LANG": "C.UTF-8",
    }
    client = NotebookClient(nb, timeout=300, allow_errors=True, resources={"metadata": {}})
    client.execute(env=env, cwd=str(root))
    found = {}
    for cell in nb.cells:
        if "case" in cell.metadata:
            errors = [o for o in cell.outputs if o.output_type == "error"]
            found[cell.metadata["case"]] = (errors, homes[cell.metadata["case"]])
    return found


SAID = {  # what the line must hold: what failed, what the tool said, what to do
    "no repository": (
        f"could not fetch {REF} of the course from file:///nowhere/transformer-lab (fatal: ",
        "does not appear to be a git repository",
    ),
    "no such ref": ("could not fetch v9 of the course from", "v9 not found"),
    "nothing to install": ("could not install the course's package (ERROR: ", "not installable"),
    "wheel not uploaded": (
        f"could not install the course's package from {student_package.wheel_name()}",
        f"Upload {student_package.wheel_name()}",
    ),
    "wheel not published": (
        "from https://github.com/acme/nowhere/raw/main/",
        "tell your instructor that the package is not at that address",
        "Failed to connect to github.com",
    ),
}


@pytest.mark.parametrize("case", SAID)
def test_a_failing_setup_says_what_happened_and_what_to_do_in_one_line(case, failures):
    errors, home = failures[case]
    assert len(errors) == 1, f"{case}: the cell did not stop"
    shown = errors[0]["traceback"]
    assert len(shown) == 1 and "\n" not in shown[0], shown  # one line, no traceback
    assert shown[0].startswith("Setup failed: "), shown[0]
    for words in SAID[case]:
        assert words in shown[0], shown[0]
    assert "Traceback" not in shown[0] and "\x1b[" not in shown[0]  # no colour codes either
    # Nothing left that would make a second run skip the failed step.
    assert not (home / "transformer-lab").exists()


def test_on_colab_the_setup_cell_decides_the_drive_and_says_so_in_one_line(tmp_path):
    """Notebook 01's parameters cell, then its call to `tl.use_drive`, in a real kernel with a
    stand-in `google.colab` whose Drive mount links a folder: the default mounts the Drive there
    and says where, in one line; `USE_DRIVE = False` says so and how to change it."""
    standin, storage, mountpoint = tmp_path / "standin", tmp_path / "storage", tmp_path / "drive"
    (standin / "google" / "colab").mkdir(parents=True)
    (standin / "google" / "__init__.py").write_text("")
    (standin / "google" / "colab" / "__init__.py").write_text('"""Stand-in for Colab."""\n')
    (standin / "google" / "colab" / "drive.py").write_text(fresh_runtime.STANDIN_DRIVE)
    source = notebook_build.source_notebook(ROOT / "solutions" / "01_attention.py")
    parameters = next(c for c in source.cells if "parameters" in c.metadata.get("tags", []))
    nb = nbformat.v4.new_notebook()
    for code in (
        parameters.source,
        "import transformer_lab as tl\ntl.use_drive(USE_DRIVE)",
        "USE_DRIVE = False\ntl.use_drive(USE_DRIVE)",
    ):
        nb.cells.append(nbformat.v4.new_code_cell(code))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(standin),
        "STANDIN_DRIVE": str(storage),  # the student's Drive
        "TRANSFORMER_LAB_DRIVE": str(mountpoint),  # where Colab mounts it
        "LANG": "C.UTF-8",
    }
    NotebookClient(nb, timeout=120, resources={"metadata": {}}).execute(env=env, cwd=str(tmp_path))
    said = ["".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells]
    assert said[0] == ""
    # the setup cell prints the package's one line (its words: test_saving.py): mounted...
    assert said[1] == saving._said(mountpoint, None) + "\n"
    assert (mountpoint / "MyDrive").is_dir()  # mounted by the setup cell, before any exercise
    assert said[2] == saving._said(None, saving.DECLINED) + "\n"  # ...then declined


def test_the_ref_check_reads_the_tags_of_a_repository(tiny_repository, tmp_path):
    assert setup_cell.tags(tiny_repository) == {"v1"}
    assert setup_cell.tags(tmp_path) == set()  # not a repository: no tag


def test_the_notebooks_ref_names_a_tag_of_this_repository():
    """A clone that carries tags must carry the notebooks' ref among them. A clone with no tag
    at all (one made before the first release, or without its tags) cannot tell: skipped."""
    tags = setup_cell.tags(ROOT)
    if not tags:
        pytest.skip(f"this clone has no tags: tag the release commit `{REF}` and push it")
    assert REF in tags, (
        f"the notebooks' setup cell clones {REF}, which names no tag of this repository: "
        f"`git tag {REF}` the commit the notebooks were built from and push it"
    )


@pytest.mark.parametrize("path", notebook_build.sources(), ids=lambda p: p.stem)
def test_only_a_notebook_that_trains_asks_colab_for_a_t4_and_each_ends_by_freeing_it(path):
    """Colab writes a T4 runtime as `accelerator` GPU and `colab.gpuType` T4, a CPU one as
    neither; the lecture's last step closes every notebook, outside any folded section."""
    workshop = notebook_build.source_notebook(path)
    for nb in (workshop, notebook_build.source_notebook(path, graded=True)):
        trains = path.stem == "04_training"
        assert ("accelerator" in nb.metadata) == trains, path.stem
        assert nb.metadata["colab"].get("gpuType") == ("T4" if trains else None), path.stem
        last = nb.cells[-1]
        # the closing cell, with the word on the one GPU where the notebook trains
        assert last.cell_type == "markdown" and last.source == notebook_build.closing(trains)
        assert not last.metadata.get("heading_collapsed")  # a heading of its own, never folded
