"""The lab's exercises, each named once: one table that the checks, the student's seam, the
re-checks of later notebooks, the bug zoo, the copy corpus and the grader's term all read, as
CS336 keeps its seam between student code and tests in one file (tests/adapters.py).

An exercise's `name` is the prefix of its mistake codes (`ex1.no_sqrt_dk`) and of its grade id
(`ex1_check`); its `title` is what a student reads. Adding an exercise is adding a row here (and
its cells to a solution notebook, its checks and its mistakes to checkpoints/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

# The notebooks, in the order a student meets them.
NOTEBOOKS = (
    "01_attention",
    "02_causal_mask",
    "03_positions",
    "04_training",
    "05_heads",
    "06_stretch",
)
TRAINING_NOTEBOOK = "04_training"  # the one that trains: its run is the longest to grade
EXTRA_CREDIT = ("06_stretch",)  # the stretch notebook: points on top of the course's total


def resolve(package: str, where: str):
    """What `where`, "module:name" (a dotted name for a method), names in `package`, imported
    only now: the table names functions without importing them."""
    module, _, name = where.partition(":")
    found = import_module(f"{package}.{module}")
    for part in name.split("."):
        found = getattr(found, part)
    return found


def _course_mask(T: int):
    """The course's causal_mask(T), in the form the student writes it (one argument)."""
    from .attention import causal_mask

    return causal_mask(T)


@dataclass(frozen=True)
class Exercise:
    """One graded exercise of the lab."""

    name: str  # "ex1": the prefix of its codes and its grade id
    title: str  # what a student reads: "Exercise 1"
    notebook: str  # "01_attention"
    cell: str  # grade id of the cell the student writes: "ex1_attention"
    checkpoint: str  # its visible check, "module:function" in checkpoints/
    ticks: int  # the ✅ a right answer prints in its checkpoint cell, hidden tests included
    runs_after: tuple[str, ...] = ()  # grade ids of the cells its checkpoint needs run first
    written: tuple[str, ...] = ()  # grade ids of its written answers, graded by hand
    piece: str | None = None  # the piece of the model it is, where later notebooks run it
    function: str | None = None  # the name the student's function has
    # the course's own function for the same job, "module:name" in this package: imported when
    # asked for (`course`), so that reading the table imports no PyTorch
    course_at: str | None = None

    @property
    def course(self) -> Callable | None:
        """The course's own function for the same job, where there is one."""
        if self.course_at is None:
            return None
        return resolve(__package__, self.course_at)

    @property
    def number(self) -> str:
        """The notebook's number, as a student reads it: "01"."""
        return self.notebook[:2]

    @property
    def check(self) -> str:
        """Grade id of its checkpoint cell."""
        return f"{self.name}_check"

    @property
    def cells(self) -> tuple[str, ...]:
        """Grade ids of the cells the student writes: code, then written answers."""
        return (self.cell, *self.written)


EXERCISES = (
    Exercise("ex0", "Exercise 0", "01_attention", "ex0_read_the_model", "attention:exercise_0", 1),
    Exercise(
        "ex1",
        "Exercise 1",
        "01_attention",
        "ex1_attention",
        "attention:exercise_1",
        2,
        piece="attention",
        function="scaled_dot_product_attention",
        course_at="attention:scaled_dot_product_attention",
    ),
    Exercise(
        "ex2",
        "Exercise 2",
        "02_causal_mask",
        "ex2_causal_mask",
        "causal_mask:exercise_2",
        3,  # its leak test's, its own and the hidden tests'
        piece="mask",
        function="causal_mask",
        course_at="catalogue:_course_mask",
    ),
    Exercise(
        "ex3",
        "Exercise 3",
        "03_positions",
        "ex3_embed",
        "positions:exercise_3",
        2,
        piece="embedding",
        function="embed_with_positions",
        course_at="model:embed_with_positions",
    ),
    Exercise(
        "ex4",
        "Exercise 4",
        "04_training",
        "ex4_metrics",
        "training:exercise_4",
        2,
        written=("ex4_prediction",),
    ),
    Exercise("ex5", "Exercise 5", "05_heads", "ex5_mean_distance", "heads:exercise_5", 2),
    Exercise(
        "ex6a",
        "Challenge A (MyMultiHeadAttention)",
        "06_stretch",
        "ex6a_multi_head",
        "stretch:challenge_a",
        2,
        course_at="model:MultiHeadAttention.forward",
    ),
    Exercise(
        "ex6b",
        "Challenge B (MyBlock)",
        "06_stretch",
        "ex6b_block",
        "stretch:challenge_b",
        2,
        runs_after=("ex6a_multi_head",),
        course_at="model:Block.forward",
    ),
)
BY_NAME = {exercise.name: exercise for exercise in EXERCISES}
# The exercises whose piece the model of 02-06 is built from: attention, mask, embedding.
PIECES = {exercise.piece: exercise for exercise in EXERCISES if exercise.piece}


def of_cell(grade_id: str) -> Exercise:
    """The exercise a graded cell belongs to (its code, written answer or checkpoint cell)."""
    for exercise in EXERCISES:
        if grade_id in (*exercise.cells, exercise.check):
            return exercise
    raise KeyError(f"no exercise has a cell {grade_id!r}")
