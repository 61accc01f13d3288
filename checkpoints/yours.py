"""The student's pieces from notebooks 01-03, found again and checked again (notebooks 02-06).

transformer_lab/student.py finds the student's module (my_transformer.py) and imports each
function; here each one that imports runs its own checkpoint again, quietly, before a notebook
builds its model on it: a piece that fails is replaced by the course's, and the line that names
the pieces says why. Grading uses the course's pieces without looking: every notebook is graded
alone, on the code written in it.
"""

from __future__ import annotations

from transformer_lab import student
from transformer_lab.student import Pieces

from ._core import check_again, grading


def checked(pieces: Pieces) -> Pieces:
    """`pieces`, each of the student's that fails its checkpoint again (`check_again`, the one
    re-check that 01-03 ran when they kept it) replaced by the course's. The checkpoint is the
    one the catalogue names ("attention:exercise_1"), imported by name, not by an import
    statement, because grading never runs it (`load` below): the rerun key, which reads a
    notebook's imports, then regrades a notebook only for the checks of its own exercises."""
    for piece in pieces:
        failure = check_again(piece) if piece.yours else None
        if failure is not None:
            why = (
                f"your {piece.exercise.function} ({piece.why}) fails {piece.exercise.title}'s "
                f"checkpoint again: {failure}"
            )
            pieces = pieces._replace(**{piece.name: piece.instead(why)})
    return pieces


def load(use_drive: bool | None = None, notebook: str = "04", use: str = "yours") -> Pieces:
    """The pieces a model of notebook `notebook` runs on, and one printed line for each piece
    written before it (02 names the attention; 04, 05 and 06 name all three). use="course":
    the course's, as the notebook's first cell chose (04's PIECES, for a slow piece)."""
    if use not in ("yours", "course"):
        raise ValueError(f'PIECES must be "yours" or "course", got {use!r}')
    if grading():
        pieces = student.course_pieces("while grading, every notebook runs on its own code only")
    elif use == "course":
        pieces = student.course_pieces('PIECES = "course" in the first cell chose them')
    else:
        pieces = checked(student.load(use_drive))
    print("\n".join(piece.line for piece in pieces if piece.exercise.number < notebook))
    return pieces
