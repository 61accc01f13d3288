"""A notebook cell's code as Python, IPython's magics aside: read by the engine (review flags,
the rerun key) and by the term (copies)."""

from __future__ import annotations

import ast
import re


def parse_cell(source: str) -> ast.Module | None:
    """The cell's syntax tree; IPython's `%magic` and `!shell` lines read as `pass`. None where
    the cell is not Python: it raised a SyntaxError when it ran, so it did nothing."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        pass
    magic = re.compile(r"^([ \t]*)[%!].*$", re.MULTILINE)
    try:
        return ast.parse(magic.sub(r"\1pass", source))
    except (SyntaxError, ValueError):
        return None
