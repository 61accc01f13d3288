"""`python -m grader release` (`make release`): the term's release of the notebooks built from
solutions/, errata included. The build is the maintainer's (maintainer/notebook_build.py: the
graded source notebooks, and publish/'s own files, the student wheel and its README); it hands
them over as a `Built`, and the release carries them into the course folder:

  1. staged beside the course folder (nbgrader_apps.staged): the course's source/, release/,
     publish/, gradebook and course.toml copied, and nothing in the course folder written;
  2. what changes against the gradebook, for each notebook (errata.plan); a graded cell added or
     removed under submissions refused under --errata refuse, else its hand grades set aside;
  3. nbgrader's release, the release history, publish/ (the release, flat, beside the wheel);
  4. the errata's submissions regraded as autograde grades them (scores.grade, the one
     EngineOptions of the command), each hand grade of an unchanged answer carried back;
  5. swapped in only when all of it succeeded, and only if it changes anything; then the scores
     table written as autograde writes it (scores.report) and the release's lines in the log.

A failure, a refusal or Ctrl-C leaves the course folder as it was. The first release writes a
commented course.toml, and the publish URL a release is built with is kept in it
(`publish_url_for`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..course import ROOT, GradingError, Layout
from ..engine import autograde as engine
from ..engine.options import EngineOptions
from . import errata, scores
from .course_open import Course
from .nbgrader_apps import release as nbgrader_release
from .nbgrader_apps import staged
from .settings import publish_url as kept_publish_url
from .settings import starting_file, with_publish_url

COLAB = "https://colab.research.google.com"
UNCHANGED = "Nothing in the course folder was changed."


@dataclass(frozen=True)
class Built:
    """What the build hands over: the graded source notebook of each notebook (name -> nbformat
    notebook), publish/'s own files (file name -> bytes: the student wheel, the README) and the
    publish URL the notebooks were built with."""

    sources: dict
    published: dict[str, bytes]
    publish_url: str | None = None

    def write(self, folder: Path) -> None:
        """Into a hand-over folder, laid out as a course's source/ and publish/."""
        layout = Layout(Path(folder))
        for name, nb in self.sources.items():
            path = layout.notebook("source", name)
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
        for name, data in self.published.items():
            layout.published(name).parent.mkdir(parents=True, exist_ok=True)
            layout.published(name).write_bytes(data)
        said = {"notebooks": list(self.sources), "publish_url": self.publish_url}
        layout.built().write_text(json.dumps(said), encoding="utf-8")

    @classmethod
    def read(cls, folder: Path) -> Built:
        layout = Layout(Path(folder))
        said = json.loads(layout.built().read_text(encoding="utf-8"))
        sources = {n: nbformat.read(layout.notebook("source", n), 4) for n in said["notebooks"]}
        published = {p.name: p.read_bytes() for p in layout.step("publish").iterdir()}
        return cls(sources, published, said["publish_url"])


def build_and_release(
    course: Course, notebooks, publish_url: str | None, route: str, options: EngineOptions
) -> list[str]:
    """`python -m grader release`: the notebooks (all, or these) built from solutions/ by the
    maintainer's build, in a process of its own, then released. What to print."""
    with tempfile.TemporaryDirectory(prefix="tl-built-") as tmp:
        build = [sys.executable, "-m", "maintainer.notebook_build", "--no-workshop"]
        build += ["--course", str(course.layout.root), "--hand-over", tmp]
        build += ["--only", *notebooks] if notebooks else []
        build += ["--publish-url", publish_url] if publish_url else []
        try:
            done = subprocess.run(build, cwd=ROOT, capture_output=True, text=True)
        except KeyboardInterrupt:
            raise GradingError(f"release interrupted (Ctrl-C). {UNCHANGED}") from None
        if done.returncode:
            raise GradingError(done.stderr.strip() or f"the build failed ({done.returncode})")
        built = Built.read(Path(tmp))
    return release(course, built, route, options)


def publish_url_for(layout: Layout, given: str | None) -> str | None:
    """The publish URL a release builds with: the one given, else the one course.toml keeps
    (written by the first release given one), so that a release never changes the published
    notebooks' badge and setup cell by leaving it out. Where none was ever kept and publish/
    carries badges (built before course.toml kept it), refused in one line."""
    if given:
        return given
    kept = kept_publish_url(layout)
    if kept:
        return kept
    badge = _badge_opens(layout)
    if badge:
        raise GradingError(
            f"release refused: the published notebooks' Colab badge opens {badge}, and no "
            "publish URL is given or kept in course.toml; give it once, `make release "
            f"PUBLISH_URL={badge}`, and course.toml keeps it for every later release (to publish "
            f"without a badge, remove {layout.step('publish')} first). {UNCHANGED}"
        )
    return None


def _badge_opens(layout: Layout) -> str | None:
    """The publish URL that a published notebook's Colab badge opens (github.com/ORG/REPO/blob/
    BRANCH[/FOLDER]); None where publish/ holds no badge."""
    opens = re.compile(rf"\({re.escape(COLAB)}/github/(\S+)/[^/\s]+\.ipynb\)")
    for path in sorted(layout.step("publish").glob("*.ipynb")):
        found = opens.search(path.read_text(encoding="utf-8"))
        if found:
            return f"github.com/{found[1]}"
    return None


def release(course: Course, built: Built, route: str, options: EngineOptions) -> list[str]:
    """The built notebooks released into the course folder, as the module's docstring says;
    `route`: an errata carried out or refused (errata's CARRY, REFUSE). What to print."""
    layout = course.layout
    try:
        with staged(layout) as staging:
            done = _release_staged(staging, built, route, options)
            if _changes_nothing(staging, built.sources, done[0]):
                raise _Unchanged  # leaves the staging folder, swapping nothing in
    except _Unchanged:
        return unchanged(built.sources)
    except KeyboardInterrupt:
        raise GradingError(f"release interrupted (Ctrl-C). {UNCHANGED}") from None
    except GradingError as err:
        said = str(err)
        after = "\n" if "\n" in said else " "  # a one-line refusal stays one line
        raise GradingError(f"{said}{after}{UNCHANGED}") from None
    try:
        released = Course.open(layout.root)
    except GradingError as err:  # course.toml: the release is in place, its report waits
        return [f"released; not reported, nor logged: {err}"]
    outcomes, regraded_with = done[1], done[4]
    if outcomes:
        names = sorted({o.assignment for o in outcomes})
        scores.report(released, outcomes, regraded_with, None, names)
    return errata.report(released, *done)


def unchanged(names) -> list[str]:
    """What a release that changes nothing says."""
    return [f"{name}: unchanged since the last release; nothing written" for name in names]


class _Unchanged(Exception):
    """A release that would write what the course folder holds already: nothing is swapped in."""


def _changes_nothing(staging, sources: dict, changes: list) -> bool:
    """Whether the staged release is the course's, file for file and byte for byte (the
    gradebook aside, which nbgrader writes again either way), and the gradebook knows each
    notebook with its graded cells as they are."""
    known = {c.notebook for c in changes if not c.graded}
    if known != set(sources):
        return False
    parts = [(mine, staged) for mine, staged in staging.parts if mine != staging.course.gradebook]
    return all(_files(mine) == _files(staged) for mine, staged in parts)


def _files(path: Path) -> dict[str, bytes] | None:
    """A file's bytes, or a folder's files by their path in it; None where there is nothing."""
    if path.is_file():
        return {"": path.read_bytes()}
    if not path.is_dir():
        return None
    return {str(f.relative_to(path)): f.read_bytes() for f in path.rglob("*") if f.is_file()}


def _release_staged(staging, built: Built, route: str, options: EngineOptions):
    """release's work in the staging folder: (the changes, the regrade's outcomes, the hand
    grades carried, its seconds, the options it ran with)."""
    stage, names = staging.layout, list(built.sources)
    changes = errata.plan(stage, built.sources)
    refused = errata.refusal(changes) if route == errata.REFUSE else ""
    if refused:
        raise GradingError(refused)
    for name, nb in built.sources.items():
        path = stage.notebook("source", name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    rebuilt = [change for change in changes if change.rebuilds]
    if rebuilt:
        engine.isolation(options.sandboxed)  # no sandbox: stops here, before anything, said why
    for change in rebuilt:
        staging.take_notebook(change.notebook, change.submissions)
    carried = errata.set_aside(stage, rebuilt)
    nbgrader_release(stage, names)
    errata.keep_history(staging, names)
    publish(stage, names, built.published)
    started = time.monotonic()
    regraded = [c.notebook for c in rebuilt]
    forced = errata.for_regrade(options)
    outcomes = []
    if regraded:
        outcomes = scores.grade(Course.open(stage.root), forced, None, regraded, carried)
    seconds = time.monotonic() - started
    _keep_settings(stage, built.publish_url)
    return changes, outcomes, carried, seconds, forced


def publish(stage: Layout, names: list[str], published: dict[str, bytes]) -> None:
    """publish/: the released notebooks, flat, beside the build's own files (the wheel their
    setup cell installs, the README on where they go)."""
    stage.step("publish").mkdir(parents=True, exist_ok=True)
    for name in names:
        stage.published(f"{name}.ipynb").write_bytes(stage.notebook("release", name).read_bytes())
    for name, data in published.items():
        stage.published(name).write_bytes(data)


def _keep_settings(stage: Layout, publish_url: str | None) -> None:
    """A commented course.toml where there is none; the publish URL built with kept in it, so
    that a later release without one rebuilds the same published notebooks. A course.toml that
    keeps it already is left byte for byte as it is."""
    path = stage.settings
    text = path.read_text(encoding="utf-8") if path.is_file() else starting_file()
    kept = with_publish_url(text, publish_url) if publish_url else text
    if kept != text or not path.is_file():
        path.write_text(kept, encoding="utf-8")
