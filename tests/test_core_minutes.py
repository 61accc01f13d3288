"""The core path of each notebook fits the lecture's minutes, by `make core-minutes`' estimate,
and docs/core_path.md is what that command writes now. The estimator's parts are tried on small
fabricated notebooks: what is folded or set aside is not counted, solution lines are written."""

from __future__ import annotations

import re

import jupytext
import pytest
from paths import ROOT, SHARED

from maintainer import core_minutes
from maintainer.core_minutes import CorePath, core_path_of

LECTURE = SHARED / "lecture" / "lab5_the_transformer.txt"
ESTIMATES = {e.name: e for e in core_minutes.estimates()}
CORE = [name for name, e in ESTIMATES.items() if e.lecture is not None]


def cells(text: str):
    return jupytext.reads(text, fmt="py:percent").cells


PLAIN = """\
# %% [markdown]
# ## Exercise 9 · Something (5 min)
#
# one two three four

# %%
x = 1
"""


def test_the_notebooks_of_the_core_path_are_01_to_05():
    assert CORE == ["01_attention", "02_causal_mask", "03_positions", "04_training", "05_heads"]
    assert ESTIMATES["06_stretch"].lecture is None  # the optional challenge: no budget


@pytest.mark.parametrize("name", CORE)
def test_each_core_path_fits_the_lecture_minutes_on_a_t4(name):
    estimate = ESTIMATES[name]
    assert estimate.minutes_t4 <= estimate.lecture, (
        f"{name}: the core path takes {estimate.minutes_t4:.1f} min by the estimate, the lecture "
        f"gives it {estimate.lecture}: fold or move to 'After the lab' what the live session "
        "does not need (`make core-minutes` shows the parts)"
    )


def test_docs_core_path_md_is_what_the_command_writes_now():
    written = core_minutes.DOC.read_text(encoding="utf-8")
    assert written == core_minutes.render(list(ESTIMATES.values())), (
        "docs/core_path.md is out of date: run `make core-minutes`"
    )


@pytest.mark.skipif(not LECTURE.is_file(), reason="the lecture text is not beside the checkout")
def test_the_lecture_minutes_are_the_lectures_exercise_table():
    table = re.findall(r"^Exercise (\d+) · .*\t(\d+) min$", LECTURE.read_text(), re.MULTILINE)
    by_exercise = {int(n): int(m) for n, m in table}
    assert sum(by_exercise.values()) == 50  # "The notebook budgets 50 minutes for them"
    in_notebooks = [0, 1], [2], [3], [4], [5]
    for name, exercises in zip(CORE, in_notebooks, strict=True):
        assert ESTIMATES[name].lecture == sum(by_exercise[n] for n in exercises), name


def test_lecture_minutes_come_from_the_exercise_headings(tmp_path):
    path = tmp_path / "99_x.py"
    path.write_text(PLAIN + "# %% [markdown]\n# ## Exercise 10 · More (7 min, with a run)\n")
    assert core_minutes.lecture_minutes(path) == 12
    path.write_text("# %% [markdown]\n# ## Challenge A · The layer (10 min)\n")
    assert core_minutes.lecture_minutes(path) is None


def test_words_and_provided_lines_are_counted():
    counted = core_path_of(cells(PLAIN))
    assert counted == CorePath(words=9, lines_read=1)  # "Exercise 9 · Something (5 min)": 5


def test_a_folded_part_is_not_counted_but_its_summary_is():
    folded = PLAIN.replace(
        "# one two three four",
        "# one two three four\n#\n# <details><summary>Hint</summary>\n#\n# five six seven\n#\n"
        "# </details>",
    )
    assert core_path_of(cells(folded)).words == core_path_of(cells(PLAIN)).words + 1


@pytest.mark.parametrize("title", ["Optional · Padding", "After the lab: what was measured"])
def test_an_optional_or_after_the_lab_section_is_not_counted_with_its_code(title):
    aside = (
        f"# %% [markdown]\n# ## {title}\n#\n# many words here\n#\n# ### Check yourself\n#\n"
        "# **1.** a question?\n\n# %%\ny = 2\nz = 3\n"
    )
    assert core_path_of(cells(PLAIN + "\n" + aside)) == core_path_of(cells(PLAIN))
    # a heading of the same level ends the section: counting resumes
    resumed = PLAIN + "\n" + aside + "\n# %% [markdown]\n# ## Next part\n\n# %%\nw = 4\n"
    counted = core_path_of(cells(resumed))
    assert (counted.words, counted.lines_read) == (9 + 2, 1 + 1)


def test_solution_lines_are_written_hidden_tests_are_not_shown():
    exercise = """\
# %% nbgrader={"grade": false, "grade_id": "ex9", "locked": false, "solution": true}
def f(x):
    \"\"\"Docstring.\"\"\"
    ### BEGIN SOLUTION
    y = x + 1  # a comment
    # only a comment

    return y
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex9_check", "locked": true, "solution": false}
check(f)
### BEGIN HIDDEN TESTS
check_more(f)
check_again(f)
### END HIDDEN TESTS
"""
    counted = core_path_of(cells(exercise))
    assert (counted.lines_written, counted.lines_read) == (2, 3)  # def, docstring, check(f)


def test_prompts_and_written_answers_are_counted():
    prompts = (
        "# %% [markdown]\n# **Predict first.** What?\n#\n# **1.** Why?\n#\n"
        "# <details><summary>Answer</summary>\n#\n# **2.** folded, not a prompt\n#\n# </details>\n"
        '\n# %% [markdown] nbgrader={"grade": true, "grade_id": "p", "solution": true}\n'
        "# ### BEGIN SOLUTION\n# an answer\n# ### END SOLUTION\n"
    )
    counted = core_path_of(cells(prompts))
    assert (counted.prompts, counted.answers) == (2, 1)
    assert counted.minutes == pytest.approx(
        counted.words / core_minutes.READ_WPM
        + 2 * core_minutes.PROMPT_MINUTES
        + core_minutes.ANSWER_MINUTES
    )


def test_the_t4_path_of_the_training_notebook_is_estimated_from_its_flops():
    _, run = core_minutes.cpu_run(core_minutes.baselines())
    # the GPT at the full budget, as docs/performance.md counts it: 5,342,598 FLOPs a token
    # over 24,576,000 tokens, and the LSTM's 2,103,558 over the same tokens
    assert core_minutes.training_flops(run) == (5_342_598 + 2_103_558) * 24_576_000
    training = ESTIMATES["04_training"].compute
    estimated = core_minutes.training_flops(run) / core_minutes.T4_SUSTAINED_FLOPS
    assert training.t4_s - estimated == pytest.approx(
        training.cpu_s
        - sum(
            run["results"]["rows"][m]["seeds"]["0"]["train_seconds"]
            for m in core_minutes.STUDENT_MODELS
        )
    )


@pytest.mark.parametrize("name", ["01_attention", "02_causal_mask", "03_positions", "05_heads"])
def test_the_workshop_notebook_opens_with_its_after_the_lab_section_folded(name):
    """What the estimate leaves out is what a student sees folded, in JupyterLab and Colab."""
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", 4)
    after = [c for c in nb.cells if c.cell_type == "markdown" and "## After the lab" in c.source]
    assert after, f"{name} has no After the lab section"
    for cell in after:
        assert cell.metadata.get("jp-MarkdownHeadingCollapsed") is True
        assert cell.metadata["id"] in nb.metadata["colab"]["collapsed_sections"]
    folded = {c.id for c in nb.cells if c.metadata.get("jp-MarkdownHeadingCollapsed")}
    assert all(
        re.match(r"## (After the lab|Optional)", c.source) for c in nb.cells if c.id in folded
    )
