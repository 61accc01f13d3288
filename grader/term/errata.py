"""Errata: a release that changes a notebook the class has handed in. Before it writes anything,
`make release` works out what changes for each notebook against the gradebook (`plan`): graded
cells added or removed, points changed, checks whose code changed, and the submissions the
gradebook holds. nbgrader makes most of that in place (points, a check's code: the next
autograde regrades, keeping each hand grade of an unchanged answer). A graded cell added or
removed it cannot make once there are submissions ("Cannot add or remove cells ... because there
are submissions", nbgrader issue #1699); the kit carries it out, in the release's staging folder
(nbgrader_apps.staged), so that a failure changes nothing:

  1. every hand grade, override, extra credit, comment and flag of the notebook is saved to
     COURSE/hand_grades.jsonl, keyed by student, grade id and the digest of the answer it judged
     (`set_aside`), and the notebook is removed from the gradebook (Gradebook.remove_assignment);
  2. nbgrader releases it again;
  3. every submission of it is regraded against the new release, as autograde grades
     (scores.grade; preflight matches an old release's cells by grade id), each saved hand grade
     put back where its answer is unchanged, the rest asked for again and named (`report`);
     lateness settled again, and the scores table written as autograde writes it.

With ERRATA=refuse, such a change is refused instead, in one line naming the submissions and the
routes (`refusal`), before anything is written.

A hand score left standing on a cell whose points the release changed (in place or rebuilt) is
named in the release's output and the term's log with the maximum it was given against and the
new one, and written to the record (overrides.rescaled): 1 of 2 need not mean 1 of 3.

A submission made from an older release is not its student's fault: each release's cells are kept
by notebook, dated, in COURSE/reports/releases.jsonl (`keep_history`, never rewritten), and each
release notebook names the releases of it before it in its metadata (review.HISTORY), so that
grading knows the release a submission was made from (review.made_from) and does not flag the
cells that release shipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import nbformat

from ..cells import answers
from ..course import Layout
from ..engine import kept_grades, review
from ..engine.options import EngineOptions
from ..outcome import SCORED
from . import hand_grading, overrides, term_log
from .course_open import Course
from .names import namer
from .nbgrader_apps import gradebook

CARRY, REFUSE = "carry", "refuse"
HISTORY = "releases.jsonl"  # in reports/: each release's cells by notebook, dated, one line each


@dataclass(frozen=True)
class Change:
    """What a release changes of one notebook, against the gradebook."""

    notebook: str
    added: dict[str, float]  # graded cells added: grade id -> points
    removed: dict[str, float]  # graded cells removed: grade id -> points they had
    points: dict[str, tuple[float, float]]  # grade id -> (points before, after)
    checks: list[str]  # checks whose code changed
    others: list[str]  # nbgrader's other cells (exercises, locked cells) added or removed
    submissions: list[str]  # students the gradebook holds a submission of

    @property
    def rebuilds(self) -> bool:
        """Whether nbgrader cannot make it in place: cells added or removed under submissions."""
        return bool(self.submissions and (self.added or self.removed or self.others))

    @property
    def graded(self) -> bool:
        """Whether it changes what is graded (else only text: nothing regrades)."""
        return bool(self.added or self.removed or self.others or self.points or self.checks)

    def text(self) -> str:
        parts = [f"{_cells(self.added)} added"] * bool(self.added)
        parts += [f"{_cells(self.removed)} removed"] * bool(self.removed)
        parts += [f"{i} {a:g} → {b:g} points" for i, (a, b) in sorted(self.points.items())]
        parts += [f"{', '.join(self.checks)}'s code changed"] * bool(self.checks)
        parts += [f"{', '.join(self.others)} added or removed"] * bool(self.others)
        said = f"{self.notebook}: {'; '.join(parts) or 'no graded cell changed'}"
        n = len(self.submissions)
        if self.rebuilds:
            return said + f"; its {_n(n, 'submission')}: rebuilt in the gradebook and regraded"
        if self.graded and n:
            return said + (
                f"; the next `make autograde` regrades its {_n(n, 'submission')}, keeping each "
                "hand grade of an unchanged answer"
            )
        return said


def _n(n: int, what: str) -> str:
    """'1 submission', '3 submissions'."""
    return f"{n} {what}{'s' * (n != 1)}"


def _cells(cells: dict[str, float]) -> str:
    return ", ".join(f"{i} ({p:g} point{'s' * (p != 1)})" for i, p in cells.items())


def _graded(nb) -> dict[str, dict]:
    """nbgrader's cells of a source notebook, as its SaveCells sees them: grade id -> metadata,
    with the cell's source."""
    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if any(meta.get(k) for k in ("grade", "solution", "locked", "task")):
            found[meta["grade_id"]] = {**meta, "source": cell.source}
    return found


def plan(layout: Layout, sources: dict) -> list[Change]:
    """Each notebook's Change against the gradebook of `layout` (a staging copy: nothing is
    written), for the notebooks it knows; a notebook new to it changes nothing there."""
    from nbgrader.api import Gradebook, MissingEntry

    if not layout.gradebook.is_file():
        return []
    changes = []
    with Gradebook(layout.db_url) as gb:
        for name, nb in sources.items():
            try:
                known = gb.find_notebook(name, name)
            except MissingEntry:
                continue
            changes.append(_change(name, known, _graded(nb)))
    return changes


def _change(name: str, known, new: dict[str, dict]) -> Change:
    old = {c.name: c.max_score for c in known.grade_cells}
    now = {i: float(m["points"]) for i, m in new.items() if m.get("grade")}
    cells = {c.name for c in known.source_cells}
    sources = {c.name: c.source for c in known.source_cells}
    checks = [
        i
        for i, m in new.items()
        if m.get("grade") and not m.get("solution") and i in sources and sources[i] != m["source"]
    ]
    return Change(
        name,
        added={i: p for i, p in now.items() if i not in old},
        removed={i: p for i, p in old.items() if i not in now},
        points={i: (old[i], p) for i, p in now.items() if i in old and old[i] != p},
        checks=sorted(checks),
        others=sorted((cells ^ set(new)) - set(old) - set(now)),
        submissions=sorted(s.student.id for s in known.submissions),
    )


def refusal(changes: list[Change]) -> str:
    """The one line that refuses a release under ERRATA=refuse; empty where nothing needs the
    kit."""
    rebuilt = [c for c in changes if c.rebuilds]
    if not rebuilt:
        return ""
    what = "; ".join(f"{c.text().split('; its ')[0]} under {_whose(c)}" for c in rebuilt)
    names = ", ".join(c.notebook for c in rebuilt)
    return (
        f"release refused (ERRATA=refuse): {what}, and nbgrader cannot add or remove a graded "
        f"cell once there are submissions. Either `make release` (ERRATA=carry, the default) "
        f"saves their hand grades, rebuilds {names} in the gradebook, regrades those submissions "
        "and puts back each hand grade whose answer is unchanged; or undo the change in "
        "solutions/."
    )


def _whose(change: Change) -> str:
    shown = change.submissions[:10]
    more = len(change.submissions) - len(shown)
    return f"{_n(len(change.submissions), 'submission')} ({', '.join(shown)}{' …' * bool(more)})"


def set_aside(layout: Layout, changes: list[Change]) -> dict[tuple[str, str], list]:
    """Every hand grade of the notebooks to rebuild, saved to the record with the digest of the
    answer it judged (the notebook last graded, in autograded/), and those notebooks removed from
    the gradebook: (student, notebook) -> its hand grades, to carry over the regrade."""
    from nbgrader.api import Gradebook

    carried: dict[tuple[str, str], list] = {}
    if not changes:
        return carried
    with Gradebook(layout.db_url) as gb:
        for change in changes:
            name = change.notebook
            for student in change.submissions:
                graded = layout.notebook("autograded", name, student)
                previous = nbformat.read(graded, 4) if graded.is_file() else None
                carried[student, name] = kept_grades.before(gb, student, name, previous)
            gb.remove_assignment(name)
    kept_grades.record(layout, kept_grades.SAVED, [h for hands in carried.values() for h in hands])
    return carried


def for_regrade(options: EngineOptions) -> EngineOptions:
    """The command's options as an errata's regrade takes them: every submission of a rebuilt
    notebook graded again (its gradebook entry is new), without a progress bar in the
    release's output."""
    return replace(options, force=True, progress=False)


def report(course: Course, changes, outcomes, carried: dict, seconds: float, options):
    """After the release is in place, its scores table written (scores.report): what the
    release did, in the term's log; the lines to print."""
    lines = [c.text() for c in changes]
    if outcomes:
        lines += _regraded(course, outcomes, carried, seconds, options)
    said = _rescaled(course, changes)
    lines += [said] if said else []
    if changes:
        term_log.append(course, "release", "\n".join(lines))
    return lines


def _regraded(course: Course, outcomes, carried: dict, seconds: float, options) -> list:
    names = sorted({o.assignment for o in outcomes})
    with gradebook(course) as gb:
        who = namer(course, gb)
    graded = [o for o in outcomes if o.status in SCORED]
    lines = [
        f"regraded {_n(len(outcomes), 'submission')} of {', '.join(names)} in {seconds:.0f} s: "
        f"{len(graded)} graded, {len(outcomes) - len(graded)} quarantined or failed "
        "(reports/autograde.md)",
        f"options: {options.said()}",
    ]
    said = hand_grading.regraded(outcomes, who)
    lines += [said] if said else []
    lost = _on_record_only(course.layout, carried, {(o.student, o.assignment) for o in graded})
    if lost:
        lines.append(
            "on record only (hand_grades.jsonl), their cell removed or the notebook not graded: "
            + ", ".join(f"{who(s)} / {n} {i}" for s, n, i in lost)
        )
    return lines


def _rescaled(course: Course, changes: list[Change]) -> str:
    """The hand scores left standing on cells whose points changed, named with both maxima and
    written to the record (overrides.rescaled): after a regrade, so that an override set aside
    by it is not among them. What to print; empty where there are none."""
    points = {c.notebook: c.points for c in changes if c.points and c.submissions}
    if not points:
        return ""
    with gradebook(course) as gb:
        found = overrides.rescaled(gb, points)
        who = namer(course, gb)
    overrides.record_rescaled(course, found)
    return overrides.said_rescaled(found, who)


def _on_record_only(layout: Layout, carried: dict, graded: set) -> list[tuple[str, str, str]]:
    """(student, notebook, grade id) of each hand score carried that found no grade to go back
    to: its cell is gone from the release, or the submission was not graded."""
    releases = {n: layout.release_notebook(n) for _, n in carried}
    ids = {n: set(answers(nb)) for n, nb in releases.items()}
    return [
        (s, n, h.grade_id)
        for (s, n), hands in sorted(carried.items())
        for h in hands
        if h.scored and ((s, n) not in graded or h.grade_id not in ids[n])
    ]


def keep_history(staging, names: list[str]) -> None:
    """Each notebook just released in `staging` (nbgrader_apps.Staging) recorded in the history,
    where its cells differ from the last recorded, and its release notebook's metadata naming the
    releases before it (review.HISTORY). The first release of a notebook is recorded; so is a
    release the course made before it kept a history, dated by its file, once one differs."""
    course, stage = staging.course, staging.layout
    staging.take(course.report(HISTORY), stage.report(HISTORY))
    records = released(stage)
    added = []
    for name in names:
        nb = stage.release_notebook(name)
        kept = [r for r in records + added if r["notebook"] == name]
        added += _new_records(course, name, _recorded_cells(nb), kept)
        before = [r for r in records + added if r["notebook"] == name][:-1]
        if before:  # the last is this release
            history = [review.summary(r["released"], r["cells"]) for r in before]
            nb.metadata.setdefault(review.HISTORY[0], {})[review.HISTORY[1]] = history
            nbformat.write(nb, stage.notebook("release", name))
    with stage.report(HISTORY).open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in added)


def released(layout: Layout) -> list[dict]:
    """Every release recorded, oldest first: {"notebook", "released", "cells"}; [] before any."""
    path = layout.report(HISTORY)
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [json.loads(line) for line in lines if line.strip()]


def _recorded_cells(nb) -> list[dict]:
    """A release notebook's cells as the history records them."""
    return [
        {
            "type": c.cell_type,
            "grade_id": c.metadata.get("nbgrader", {}).get("grade_id"),
            "source": c.source,
        }
        for c in nb.cells
    ]


def _new_records(course: Layout, name: str, shipped: list[dict], kept: list[dict]) -> list[dict]:
    """What to add to the history for notebook `name` released with cells `shipped`, its records
    so far `kept`: nothing where the last is the same; where there are none yet, the release the
    course holds (dated by its file) if it differs, then this one."""
    now = datetime.now(UTC).astimezone().isoformat(timespec="seconds")
    this = {"notebook": name, "released": now, "cells": shipped}
    if kept:
        return [] if kept[-1]["cells"] == shipped else [this]
    path = course.notebook("release", name)
    if not path.is_file():
        return [this]
    cells = _recorded_cells(nbformat.read(path, 4))
    if cells == shipped:
        return []
    made = datetime.fromtimestamp(path.stat().st_mtime, UTC).astimezone()
    return [
        {"notebook": name, "released": made.isoformat(timespec="seconds"), "cells": cells},
        this,
    ]
