""" "Open in Colab", network aside: each workshop notebook, its exercises solved, runs from top to
bottom alone, as in a fresh Colab runtime (`maintainer/fresh_runtime.py`: an empty working
folder, a fresh HOME and kernel, a stand-in `google.colab` module imported at kernel start, as
Colab does), the setup cell cloning the course at its pinned ref and pip-installing it, from a
local copy of this checkout instead of GitHub. No notebook may need a file that another one wrote.
The start of such a runtime is what `make core-minutes` counts for each notebook: its recorded
measurement must be of the setup cell the build writes now.

The student's own model travels as on Colab, through their Google Drive, mounted by each
notebook's setup cell (`USE_DRIVE = True`, the default): the stand-in's
`google.colab.drive.mount(path)` links a folder that outlives every runtime (the student's Drive)
at `path`, so that 05, on a machine of its own, finds what 04 saved there."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import papermill
import pytest
from conftest import checkpoints_without_a_tick

from maintainer import fresh_runtime, notebook_build

pytestmark = pytest.mark.heavy(order=2)
WHERE = "import checkpoints, transformer_lab\nprint('imported from', transformer_lab.__file__)\n"


@pytest.fixture(scope="module")
def course_repository(tmp_path_factory) -> Path:
    return fresh_runtime.course_repository(tmp_path_factory.mktemp("origin"))


def run_alone(
    path: Path, repository: Path, tmp_path: Path, env: dict | None = None
) -> tuple[Path, dict[str, str]]:
    """Run the solved workshop notebook `path` in a fresh runtime under `tmp_path`, in smoke
    mode; the executed notebook and the runtime's environment. Papermill drives the kernel from
    this process, with the runtime's environment and nothing else of ours: the kernel it starts
    sees only that."""
    config = {"repository": repository.as_uri(), "ref": fresh_runtime.REF}
    nb = fresh_runtime.solved_workshop(path, config)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))
    content = tmp_path / "content"  # Colab's empty working folder
    content.mkdir(parents=True)
    notebook = content / f"{path.stem}.ipynb"
    nbformat.write(nb, notebook)
    env = fresh_runtime.runtime_env(tmp_path) | (env or {})
    with pytest.MonkeyPatch.context() as patch:
        for name in os.environ:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        papermill.execute_notebook(
            notebook,
            notebook,
            parameters={"MODE": "smoke"},
            cwd=content,
            kernel_name="python3",
            progress_bar=False,
            execution_timeout=600,
        )
    return notebook, env


def printed(notebook: Path) -> str:
    """Everything the notebook's cells printed, in order."""
    cells = nbformat.read(notebook, 4).cells
    return "".join(o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs)


SOURCES = {p.stem: p for p in notebook_build.sources()}
# Each notebook runs once, with its defaults. 04 and 05 as a student whose Drive mounts, each on a
# machine of its own; the rest as one whose Drive does not (the stand-in's sign-in fails), 06
# among them: it looks for the student's model as 05 does, so it shows the other answer (no
# Drive mounted, the course's model).
THROUGH_DRIVE = ("04_training", "05_heads")


@pytest.fixture(scope="module")
def runs(course_repository, tmp_path_factory) -> dict[str, tuple[Path, dict[str, str]]]:
    """Every notebook's run: the executed notebook and its runtime's environment."""
    storage = tmp_path_factory.mktemp("google-drive")  # the student's Drive outlives runtimes
    done = {}
    for name, path in SOURCES.items():
        here = tmp_path_factory.mktemp(name)
        if name in THROUGH_DRIVE:
            done[name] = run_alone(path, course_repository, here, {"STANDIN_DRIVE": str(storage)})
        else:
            done[name] = run_alone(path, course_repository, here)
    return done


@pytest.mark.parametrize("name", SOURCES)
def test_each_notebook_runs_alone_in_a_fresh_runtime(name, runs):
    notebook, env = runs[name]
    content = notebook.parent
    clone = Path(env["HOME"]) / "transformer-lab"
    assert (clone / "notebooks").is_dir()  # the setup cell cloned the course
    executed = nbformat.read(notebook, 4)
    # one print, but its pieces may reach the notebook as several outputs on a busy machine
    last = "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert env["PIP_TARGET"] in last  # and the notebook ran on the course it installed
    installed = sorted(p.name for p in Path(env["PIP_TARGET"]).iterdir())
    assert not {"torch", "numpy", "matplotlib"} & set(installed), installed  # the runtime's own
    assert sorted(p.name for p in content.iterdir()) == [notebook.name]  # nothing left behind
    assert not checkpoints_without_a_tick(executed)  # and every checkpoint passed
    if name not in THROUGH_DRIVE:  # the sign-in failed in the setup cell: nothing is mounted
        assert not Path(env["TRANSFORMER_LAB_DRIVE"]).exists()


# The figures of the notebooks, by the function that draws each: the one cell that calls it
# must show it, once, as a PNG. A figure made but not shown, or shown where no inline backend
# renders it, fails.
FIGURES = {
    "01_attention": ("plot_score_spread",),
    "02_causal_mask": ("plot_leak", "plot_masks"),
    "04_training": ("plot_loss_curves", "plot_budgets"),
    "05_heads": ("plot_head_costs",),
    "06_stretch": ("plot_step_times",),
}


@pytest.mark.parametrize("name", FIGURES)
def test_each_figure_is_drawn_in_the_executed_notebook(name, runs):
    cells = [c for c in nbformat.read(runs[name][0], 4).cells if c.cell_type == "code"]
    for function in FIGURES[name]:
        calling = [c for c in cells if f"{function}(" in c.source]
        assert len(calling) == 1, f"{name}: {len(calling)} cells call {function}"
        shown = [o for o in calling[0].outputs if "image/png" in o.get("data", {})]
        assert len(shown) == 1, f"{name}: the cell that calls {function} shows {len(shown)} PNGs"


def test_the_model_04_trained_reaches_05_through_the_drive(runs):
    said = {name: printed(notebook) for name, (notebook, _) in runs.items()}
    storage = Path(runs["04_training"][1]["STANDIN_DRIVE"])
    in_drive = storage / "MyDrive" / "transformer-lab" / "mini_gpt.pt"
    home = Path(runs["04_training"][1]["HOME"])
    trained = home / "transformer-lab" / "notebooks" / "mini_gpt.pt"
    assert in_drive.read_bytes() == trained.read_bytes()  # 04 copied what it trained
    assert "MyDrive/transformer-lab/mini_gpt.pt" in said["04_training"]  # and says where
    clone = Path(runs["05_heads"][1]["HOME"]) / "transformer-lab" / "notebooks"
    assert not (clone / "mini_gpt.pt").exists()  # nothing of 04's beside it
    mine = (
        "the mini-GPT you trained in notebook 04 at the smoke budget (30 steps), "
        "from your Google Drive"
    )
    assert mine in said["05_heads"], said["05_heads"][-2000:]
    # 05 sets nothing recorded beside the student's own model: only its own distances.
    assert "your own model" in said["05_heads"] and "Recorded for run" not in said["05_heads"]
    # 06, whose Drive could not be mounted, says so and studies the course's model.
    assert "could not be mounted" in said["06_stretch"]  # the setup cell
    assert "was not searched" in said["06_stretch"]  # the model's origin says why
    assert "course's mini-GPT" in said["06_stretch"] and "(3,000 steps)" in said["06_stretch"]


def test_the_recorded_start_of_a_fresh_runtime_is_of_the_setup_cell_built_now():
    """`make core-minutes` counts a fresh runtime's start as measured here (kernel, setup cell),
    online as on Colab (pip builds the package in isolation, fetching its build backend); a
    changed setup cell wants a new measurement, or the minutes count an old one."""
    recorded = fresh_runtime.recorded()
    assert recorded["setup_digest"] == fresh_runtime.setup_digest(), (
        "the setup cell changed since its start was measured: run `make core-minutes`"
    )
    assert recorded["kernel_start_s"] > 0 and recorded["setup_cell_s"] > 0
    assert recorded["install"] == fresh_runtime.INSTALL
