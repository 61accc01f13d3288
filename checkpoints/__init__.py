"""The checks the lab notebooks call: one module per notebook, the seam between student code
and tests.

A passing check prints one line starting with a tick. A failing check raises CheckFailed with the
likely mistake and where to look; an exercise still holding its stub raises NotDoneYet.
"""

from ._core import CheckFailed, NotDoneYet, split_code

__all__ = ["CheckFailed", "NotDoneYet", "split_code"]
