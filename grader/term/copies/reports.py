"""What the instructor reads: the flags, the review column, and reports/copies.md with a page
per pair."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import nbformat

from ...outcome import COPY, SCORED, Flag
from ..course_open import Course
from .fingerprints import Passage
from .kinds import CODE, NOTEBOOK, TEXT
from .matching import Match, class_matches, class_parts, flagged, matched_lines
from .sources import published


def describe(m: Match) -> str:
    """The source as the instructor reads it."""
    if m.source == "classmate":
        return f"classmate {m.name}'s"
    return m.name


def _whose(m: Match) -> str:
    return {"solution": "the solution's", "reference": "the function's"}.get(
        m.source, f"{m.name}'s"
    )


def flag(m: Match) -> Flag:
    """Both sides of the match and its longest run, as MOSS and JPlag report one."""
    return Flag(
        COPY,
        m.part,
        describe(m),
        share=m.share,
        held=m.held_share,
        alike=m.tokens,
        longest=m.longest,
        answer="written answer" if m.kind is TEXT else "own code",
        whose=_whose(m),
    )


def review_cell(assignment: str, flags: list[Flag]) -> str:
    """One notebook's entry in the report's review column: each copy's part, share, source and
    the share of the source it holds (`01_attention: ex1_attention 52% the course's solution
    (...), holding 100% of it`), then how many other flags the notes below the table quote."""
    found = [f for f in flags if f.kind == COPY and not f.written]
    said = [f"{f.part} {f.share:.0%} {f.source}, holding {f.held:.0%} of it" for f in found]
    others = len(flags) - len(found)
    said += [f"{others} other{'s' * (others > 1)}"] if others else []
    return f"{assignment}: " + "; ".join(said)


def read_notebooks(course: Course, keys: Iterable[tuple[str, str]]) -> dict:
    """(student, assignment) -> the notebook as graded (autograded/), where it can be read.
    Not validated again: autograde wrote it, and nbformat's schema check is most of the time
    a read takes."""
    found = {}
    for student, assignment in keys:
        path = course.layout.notebook("autograded", assignment, student)
        try:
            found[student, assignment] = nbformat.v4.reads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not graded (quarantined, failed): nothing of it ran
    return found


def class_report_matches(course: Course, keys: Iterable[tuple[str, str]]) -> list[Match]:
    notebooks = read_notebooks(course, keys)
    releases = {a: course.layout.release_notebook(a) for a in {a for _, a in notebooks}}
    return class_matches(class_parts(notebooks, releases))


def with_copies(course: Course, outcomes: list) -> list:
    """The outcomes, each with its copy flags (replacing those of an earlier run): the whole
    class is compared, so a run limited to some students still flags their classmates."""
    keys = [(o.student, o.assignment) for o in outcomes if o.status in SCORED]
    by: dict[tuple[str, str], list[Flag]] = defaultdict(list)
    for m in flagged(class_report_matches(course, keys)):
        by[m.student, m.assignment].append(flag(m))
    for o in outcomes:
        o.flags = [f for f in o.flags if f.kind != COPY] + by[o.student, o.assignment]
    return outcomes


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; width: 100%; table-layout: fixed; }}
td, th {{ vertical-align: top; border: 1px solid #ccc; padding: 0.4em; text-align: left; }}
pre {{ margin: 0; font-size: 12px; white-space: pre-wrap; }}
.hit {{ background: #ffe08a; display: block; }}
</style></head><body>
<h1>{title}</h1>
<p>{summary}</p>
<p>Highlighted: the lines whose normalised code (names, layout, comments and order of
statements set aside) the two sides share. A flag never changes a score.</p>
{sections}
</body></html>
"""


def _highlighted(text: str, lines: set[int]) -> str:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        escaped = html.escape(line) or " "
        out.append(f'<span class="hit">{escaped}</span>' if number in lines else escaped + "\n")
    return "<pre>" + "".join(out) + "</pre>"


def _source_piece(m: Match, parts: dict) -> Passage | None:
    if m.source == "classmate":
        return parts[m.assignment][m.part].get(m.name)
    return next((p for _, p in published(m.part, m.kind) if p.label == m.name), None)


def _page_name(m: Match) -> str:
    other = m.name if m.source == "classmate" else m.source
    a, b = sorted([m.student, other]) if m.source == "classmate" else (m.student, other)
    return re.sub(r"[^\w.-]", "_", f"{m.assignment}--{a}--{b}") + ".html"


def _page(m: Match, found: list[Match], parts: dict) -> str:
    """Both sides of every part the pair shares, each with its matching lines highlighted."""
    pair = {(m.student, m.name)}
    if m.source == "classmate":
        pair.add((m.name, m.student))
    sections = []
    for x in found:
        if x.assignment != m.assignment or (x.student, x.name) not in pair or x.part == NOTEBOOK:
            continue
        if x.source == "classmate" and x.student != m.student:
            continue  # the other direction of a classmate pair: same lines, shown once
        theirs = _source_piece(x, parts)
        if theirs is None:
            continue
        mine = parts[x.assignment][x.part][x.student]
        sections.append(
            f"<h2>{html.escape(x.part)}: {x.share:.0%} of {html.escape(x.student)}'s is in "
            f"{html.escape(describe(x))}, {x.held_share:.0%} of {html.escape(_whose(x))} is in "
            f"{html.escape(x.student)}'s ({x.tokens} tokens alike, longest run {x.longest})</h2>"
            f"<table><tr><th>{html.escape(x.student)}</th><th>{html.escape(x.name)}</th></tr>"
            f"<tr><td>{_highlighted(mine.text, matched_lines(mine, x.shared))}</td>"
            f"<td>{_highlighted(theirs.text, matched_lines(theirs, x.shared))}</td></tr></table>"
        )
    title = f"{m.assignment}: {m.student} and {m.name}"
    return PAGE.format(
        title=html.escape(title), summary=html.escape(flag(m).text()), sections="\n".join(sections)
    )


def pairs_report(course: Course) -> list[Path]:
    """reports/copies.md, the flagged pairs ranked by share, and reports/copies/*.html, one
    page per pair with the matching parts side by side. These name students: for the
    instructor, not for the class."""
    layout = course.layout
    keys = [(s, a) for s, a, _ in layout.students_notebooks("autograded")]
    notebooks = read_notebooks(course, keys)
    releases = {a: layout.release_notebook(a) for a in {a for _, a in notebooks}}
    parts = class_parts(notebooks, releases)
    found = class_matches(parts)
    shown = sorted(flagged(found), key=lambda m: (-m.strength, -m.tokens, m.assignment, m.student))
    pages = layout.report("copies")
    pages.mkdir(parents=True, exist_ok=True)
    for old in pages.glob("*.html"):
        old.unlink()  # a pair no longer flagged keeps no page
    pub, mate = CODE.published, CODE.classmate
    lines = [
        "# Copies",
        "",
        "Each student's own code, per exercise and per notebook, against the course's solutions, "
        "each function of the package's references and every classmate (grader/term/copies/), "
        "what the course hands out (the release's cells, the code its hints spell out, the "
        "lecture's listings) set aside on both sides. Two shares, as MOSS and JPlag show them: "
        "how much of the student's own code the source covers (*of theirs*), and how much of the "
        "source's own code the student's holds (*of the source*), with the longest run of tokens "
        f"both hold. Flagged against a published source from {pub.mine:.0%} of theirs or "
        f"{pub.held:.0%} of the source, with {pub.tokens} tokens alike in a run of {pub.run}; "
        f"against a classmate's (code the class shares weighs less) from {mate.mine:.0%} or "
        f"{mate.held:.0%}, {mate.tokens} tokens, a run of {mate.run} (a written answer: "
        f"{TEXT.published.mine:.0%}, {TEXT.published.tokens} "
        "words). Strongest first. A flag never changes a score: open the page and decide.",
        "",
        "| rank | notebook | part | student | found in | of theirs | of the source | tokens alike "
        "| longest run | side by side |",
        "|---:|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    written = set()
    for rank, m in enumerate(shown, start=1):
        name = _page_name(m)
        if name not in written:
            layout.report("copies", name).write_text(_page(m, found, parts), encoding="utf-8")
            written.add(name)
        lines.append(
            f"| {rank} | {m.assignment} | {m.part} | {m.student} | {describe(m)} | "
            f"{m.share:.0%} | {m.held_share:.0%} | {m.tokens} | {m.longest} | "
            f"[page](copies/{name}) |"
        )
    if not shown:
        lines.append("| – | – | – | – | nothing flagged | – | – | – | – | – |")
    layout.report("copies.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [layout.report("copies.md"), *sorted(layout.report("copies", n) for n in written)]
