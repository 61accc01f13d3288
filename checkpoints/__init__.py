"""The checks the lab notebooks call: one module per notebook, the seam between student code
and tests.

A passing check prints one line starting with a tick. A failing check raises CheckFailed with the
likely mistake and where to look; an exercise still holding its stub raises NotDoneYet. Either
way, in a notebook, the check also leaves its result as data (`results.read` gives it back),
with a code declared in `codes`.
"""

from ._core import CheckFailed, NotDoneYet

__all__ = ["CheckFailed", "NotDoneYet"]
