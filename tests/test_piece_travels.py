"""A passing checkpoint means the piece trains, tried with code as students write it, in real
kernels: notebook 01's checkpoint keeps the attention with the helper, the constant and the
import it reads, and says in the same cell which name could not come with it; a later notebook
loads what travelled as the student's own; notebook 04, trained on an attention that prints,
says before its first step what a seed will take, shows one line instead of the prints, and
names whose attention trained."""

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from notebook_harness import code_cells

from checkpoints.hints import HINTS

pytestmark = pytest.mark.heavy(order=17)

# Notebook 01 as a student writes it: a helper in the cell above, a constant, numpy under a name,
# and a debugging print left in.
HELPERS = """
NEG_INF = float("-inf")


def softmax_rows(scores):
    return torch.softmax(scores, dim=-1)
"""
ATTENTION = """
def scaled_dot_product_attention(Q, K, V, allowed=None):
    scores = Q @ K.transpose(-2, -1) / np.sqrt(Q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~allowed, NEG_INF)
    print("scores", tuple(scores.shape))
    A = softmax_rows(scores)
    return A @ V, A
"""
# Then a version that reads a tensor of the notebook: it cannot be written as source.
WITH_A_TENSOR = ATTENTION.replace("np.sqrt(Q.shape[-1])", "np.sqrt(Q.shape[-1]) * ONE")
# Then an edit that fails: no 1/sqrt(d_k).
UNSCALED = ATTENTION.replace(" / np.sqrt(Q.shape[-1])", "")


def execute(cells: list, cwd: Path):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=cells)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env.pop("NBGRADER_EXECUTION", None)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute(env=env)
    return nb


def text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.fixture(scope="module")
def notebook_01(tmp_path_factory):
    """01's cells in a kernel: the travelling attention checked, its kept module copied aside,
    then the version that reads a tensor checked, then an edit that fails, checked twice."""
    folder = tmp_path_factory.mktemp("notebook-01")
    code = nbformat.v4.new_code_cell
    fails = {"tags": ["raises-exception"]}  # nbclient goes on after these cells
    nb = execute(
        [
            code("USE_DRIVE = False"),
            code("import math\nimport numpy as np\nimport torch\n"),
            code("from checkpoints import attention as check"),
            code(HELPERS),
            code(ATTENTION),
            code("check.exercise_1(scaled_dot_product_attention)"),
            code('import shutil\nshutil.copy("my_transformer.py", "travelled.py")'),
            code("ONE = torch.ones(())"),
            code(WITH_A_TENSOR),
            code("check.exercise_1(scaled_dot_product_attention)"),
            code(UNSCALED),
            code("check.exercise_1(scaled_dot_product_attention)", metadata=fails),
            code("check.exercise_1(scaled_dot_product_attention)", metadata=fails),
        ],
        folder,
    )
    return folder, nb


def under_the_error(cell) -> list[str]:
    """The lines a cell printed after its error."""
    at = next(i for i, o in enumerate(cell.outputs) if o.output_type == "error")
    return "".join(o.get("text", "") for o in cell.outputs[at + 1 :]).splitlines()


def test_01_keeps_the_helpers_it_reads_and_says_so_in_the_same_cell(notebook_01):
    folder, nb = notebook_01
    said = text(nb.cells[5])
    assert "✅ Exercise 1" in said and "float16" in said  # trained in both precisions
    assert "Kept your scaled_dot_product_attention" in said
    assert "did not come" not in said and "⚠️" not in said  # every name it reads travelled
    kept = (folder / "travelled.py").read_text()
    for needed in ("import numpy as np", "NEG_INF = float('-inf')", "def softmax_rows(scores):"):
        assert needed in kept


def test_01_s_failing_edit_names_the_version_that_stands_then_opens_the_hint(notebook_01):
    _, nb = notebook_01
    first, second = nb.cells[11], nb.cells[12]
    assert [o.ename for o in first.outputs if o.output_type == "error"] == ["CheckFailed"]
    kept = [line for line in under_the_error(first) if line.startswith("ℹ️")]
    assert len(kept) == 1 and "cell [10]" in kept[0]  # the last pass: the cell of [9]
    assert not any(line.startswith("💡") for line in under_the_error(first))
    said = under_the_error(second)
    assert [line.startswith("💡") for line in said if HINTS["ex1"][0] in line] == [True]
    assert sum(line.startswith("ℹ️") for line in said) == 1


def test_01_names_what_did_not_travel_before_the_student_leaves(notebook_01):
    _, nb = notebook_01
    said = text(nb.cells[9])
    assert "'ONE'" in said and "Tensor" in said  # the name that did not travel, and what it is
    assert "⚠️" in said and "NameError: name 'ONE'" in said  # the error's own words
    # the line as it stands in my_transformer.py, where the student can open it
    [line] = [line.strip() for line in WITH_A_TENSOR.splitlines() if "ONE" in line]
    assert f"my_transformer.py: `{line}`" in said


@pytest.fixture(scope="module")
def notebook_04(notebook_01, tmp_path_factory):
    """04's cells at the smoke budget up to its results table, on the attention that travelled
    from 01 (it prints at every call)."""
    folder = tmp_path_factory.mktemp("notebook-04")
    shutil.copy(notebook_01[0] / "travelled.py", folder / "my_transformer.py")
    cells = code_cells("04_training", MODE='"smoke"', USE_DRIVE="False")
    last = next(i for i, c in enumerate(cells) if "results_markdown(table)" in c.source)
    return execute(cells[: last + 1], folder)


def test_04_loads_the_attention_that_travelled_as_the_student_s(notebook_04):
    setup = text(notebook_04.cells[1])
    assert "attention: yours" in setup
    assert "(kept in my_transformer.py" in setup
    assert "cell [6] (kept" in setup  # the version that passed in 01's cell [6], not a later one
    note = text(notebook_04.cells[-1])
    assert "your attention" in note and "the course's mask" in note  # whose pieces trained


def test_04_says_the_cost_first_and_shows_one_line_for_thousands_of_prints(notebook_04):
    training = next(c for c in notebook_04.cells if "GPT_LABEL = " in c.source)
    lines = text(training).splitlines()
    assert lines[0].startswith("This cell will")  # the cost, said before the first step
    assert lines[1].startswith("Your pieces ")
    held = [line for line in lines if line.startswith("Your attention printed ")]
    assert len(held) == 1, lines
    count = int(held[0].split(" printed ")[1].split(" lines")[0].replace(",", ""))
    assert count >= 30 * 4  # every layer of the 30 steps, then the estimates and the scoring
    assert repr(f"scores {(8, 4, 128, 128)}") in held[0]  # the first print, as printed
    assert len(lines) < 10 and sum("scores (" in line for line in lines) == 1, lines
