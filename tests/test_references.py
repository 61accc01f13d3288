"""What a notebook's prose points the student at is there: a heading quoted after "under", "the
cell of", "section" or "heading" ("the cell under "Each head switched off"") is a heading of
the same notebook as the student meets it (badge, setup and closing cells included), or of
notebook NN where the sentence says "notebook NN's" before it. Tried on every notebook, and on
prose that points at headings that are not there."""

import re
from functools import cache

import jupytext
import pytest

from maintainer.notebook_build import HEADING, source_notebook, sources

# A pointer at a place in a notebook, then the heading it names, in straight or curly quotes;
# "notebook 04's" names the notebook the rest of its sentence points into.
POINTER = re.compile(
    r"(?:\b(?:under|cell of|section|heading)|\bnotebook (\d\d)'s)\s+[\"“]([^\"”]+)[\"”]"
)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*])")


def headings(cells) -> list[str]:
    found = []
    for cell in cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                heading = HEADING.match(line)
                if heading:
                    found.append(heading.group(2).strip())
    return found


@cache
def every_notebook() -> dict[str, tuple[str, ...]]:
    """'04' -> the headings of notebook 04, for each notebook."""
    return {path.stem[:2]: tuple(headings(source_notebook(path).cells)) for path in sources()}


def dangling(cells, number: str, notebooks: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """(notebook, heading) for each quoted heading that the prose of notebook `number` (`cells`)
    points at and that is no heading of the notebook pointed into, nor its first words."""
    there = dict(notebooks) | {number: tuple(headings(cells))}
    prose = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    prose = re.sub(r"\s*\n\s*", " ", prose)  # a pointer may break across lines
    missing = []
    for sentence in SENTENCE_END.split(prose):
        into = number
        for other, named in POINTER.findall(sentence):
            into = other or into
            if not any(_names(named, h) for h in there.get(into, ())):
                missing.append((into, named))
    return missing


def _names(named: str, heading: str) -> bool:
    """The heading, or its first words up to a break ("After the lab" of "After the lab: ...")."""
    rest = heading.removeprefix(named)
    return heading.startswith(named) and not rest[:1].isalnum()


@pytest.mark.parametrize("path", sources(), ids=lambda path: path.stem)
def test_every_heading_a_notebook_points_at_is_there(path):
    assert dangling(source_notebook(path).cells, path.stem[:2], every_notebook()) == []


# The pointers of POINTING at headings that are not there, as `dangling` names them.
DANGLING = [
    ("05", "The model you are looking at"),
    ("05", "All 16 heads on real text"),
    ("04", "Exercise 5"),
]
POINTING = """\
# %% [markdown]
# ## Exercise 5 · Looking at the heads (7 min)

# %% [markdown]
# ## All 16 heads on validation text

# %% [markdown]
# ## After the lab
#
# The cell under "The model you are looking at" loads the model. In the cell of "All 16
# heads on real text", `return_attention=True` gives $A$. The cell under "All 16 heads on
# validation text" draws them, and the section “Exercise 5” asks for $D$. Measured in notebook
# 04's "After the lab", section "The ablation ladder"; in notebook 04's "After the lab", section
# "Exercise 5", nothing.
"""


def test_a_pointer_at_a_heading_that_is_not_there_is_named():
    """05's two pointers as a reviewer found them, one at a heading never written, one at a
    heading renamed since, and one into another notebook at a heading that notebook lacks; the
    pointers at headings that are there pass."""
    cells = jupytext.reads(POINTING, fmt="py:percent").cells
    notebooks = {"04": ("After the lab · for reading afterwards", "The ablation ladder")}
    assert dangling(cells, "05", notebooks) == DANGLING
