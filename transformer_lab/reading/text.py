"""The package's Markdown templates (templates/*.md.j2), rendered: what the notebooks say about
the recorded numbers is written there, by whoever writes the course's text, and filled with
numbers the code computes. Jinja2, as nbconvert uses it.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).with_name("templates")
# A line that starts a block of its own in Markdown: a table row, a heading, an indented
# (preformatted) line, or a list item. Any other line continues the paragraph or item above it;
# nothing continues a table row, a heading or a preformatted line.
_STARTS_A_BLOCK = ("|", "#", " ", "- ")
_TAKES_NO_CONTINUATION = ("|", "#", " ")

# How the templates write numbers: a filter per kind of quantity, so that a number's precision
# is the same in every sentence.
FILTERS = {
    "nats": "{:.4f}".format,  # a test loss
    "gap": "{:.3f}".format,  # a difference of test losses, a margin, an interval's half-width
    "ratio": "{:.1f}".format,
    "seconds": "{:,.0f}".format,
    "count": "{:,}".format,
    "distance": "{:5.1f}".format,  # a head's mean attention distance, in characters
}


def _unwrap(text: str) -> str:
    """Each paragraph of `text` on one line, as Markdown reads it: the templates wrap their prose
    for the people who edit it; the notebooks print it, and the tests read it, a line a point."""
    lines: list[str] = []
    for line in text.strip("\n").splitlines():
        line = line.rstrip()
        above = lines[-1] if lines else ""
        continues = above and not above.startswith(_TAKES_NO_CONTINUATION)
        if continues and line and not line.startswith(_STARTS_A_BLOCK):
            lines[-1] += " " + line
        else:
            lines.append(line)
    return "\n".join(lines)


def _environment(folder: Path = TEMPLATES) -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,  # a misspelt name fails the test, not the sentence
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    environment.filters.update(FILTERS)
    return environment


_TEMPLATES = _environment()


def render(template: str, **context) -> str:
    """The Markdown of templates/`template` filled with `context`, each paragraph on a line."""
    return _unwrap(_TEMPLATES.get_template(template).render(**context))
