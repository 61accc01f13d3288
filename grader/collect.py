"""Collect: turn a folder or zip of downloaded notebooks into nbgrader's submitted/ layout.

Accepted shapes (mixed freely):
    SUBMISSIONS/alice/01_attention.ipynb              a folder per student
    SUBMISSIONS/bob.zip                               a zip per student
    SUBMISSIONS/carol_Copy of 02_causal_mask (1).ipynb  one file per notebook, student first
and the same inside one zip. Colab's names ("Copy of X", "X (1)", "X - Copy") are normalised;
a file whose name names no notebook is identified by its content. Where a student handed in
the same notebook twice, the newer file wins. Every file ends up in submitted/ or in the report
with the reason it was skipped.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from . import preflight
from .course import GradingError, assignments, release_notebook

COPY_MARKS = re.compile(r"copy of |\(\d+\)|[ _-]+copy\b(?! of)", re.IGNORECASE)
SEPARATORS = " _-.\t"


@dataclass
class Found:
    """One file met while collecting, and where it went."""

    source: str  # path inside the submissions folder or zip
    student: str | None = None
    assignment: str | None = None
    note: str = ""
    mtime: float = 0.0
    raw: bytes = b""


def student_id(text: str) -> str:
    return re.sub(r"[^\w.@-]+", "_", text).strip("_.-")


def _files(root: Path) -> list[tuple[PurePosixPath, bytes, float]]:
    """(path, bytes, mtime) of every file under a folder or inside a zip, zips inside opened."""
    out = []
    if root.is_file() and zipfile.is_zipfile(root):
        out += _zip_members(zipfile.ZipFile(root), PurePosixPath())
    elif root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
                out += _zip_members(zipfile.ZipFile(path), rel.with_suffix(""))
            else:
                out.append((rel, path.read_bytes(), path.stat().st_mtime))
    else:
        raise GradingError(f"{root} is neither a folder nor a zip file of submissions")
    return out


def _zip_members(archive: zipfile.ZipFile, prefix: PurePosixPath):
    out = []
    for info in archive.infolist():
        name = PurePosixPath(info.filename)
        if info.is_dir() or name.parts[0] == "__MACOSX" or name.name.startswith("._"):
            continue
        mtime = datetime(*info.date_time).timestamp()
        out.append((prefix / name, archive.read(info), mtime))
    return out


def _strip_common_root(files):
    """A zip of one top folder ("submissions/alice/...") is read as its content."""
    while files and all(len(p.parts) > 2 for p, _, _ in files):
        tops = {p.parts[0] for p, _, _ in files}
        if len(tops) != 1:
            break
        files = [(PurePosixPath(*p.parts[1:]), raw, t) for p, raw, t in files]
    return files


def _name_match(stem: str, names: list[str]) -> tuple[str | None, str]:
    """The assignment a file name names, and what of the name is left (the student part)."""
    clean = COPY_MARKS.sub(" ", stem).strip(SEPARATORS)
    for name in names:
        number, topic = name.split("_", 1)
        pattern = rf"(?<!\d){number}(?!\d)[ _-]*({re.escape(topic).replace('_', '[ _-]*')})?"
        hit = re.search(pattern, clean, re.IGNORECASE)
        if hit:
            return name, clean[: hit.start()].strip(SEPARATORS)
    return None, clean


def _by_content(raw: bytes, releases: dict) -> str | None:
    nb, _ = preflight.read_notebook(raw)
    if nb is None:
        return None
    best, share = None, 0.0
    for name, release in releases.items():
        wanted = {preflight.normal_source(c) for c in release.cells}
        s = sum(preflight.normal_source(c) in wanted for c in nb.cells) / len(release.cells)
        if s > share:
            best, share = name, s
    return best if share >= preflight.MIN_SHARE_OF_RELEASE else None


def identify(files, names: list[str], releases: dict) -> list[Found]:
    found = []
    for path, raw, mtime in _strip_common_root(files):
        item = Found(str(path), mtime=mtime, raw=raw)
        found.append(item)
        if path.suffix.lower() != ".ipynb":
            item.note = "skipped: not a notebook (.ipynb)"
            continue
        assignment, rest = _name_match(path.stem, names)
        if len(path.parts) > 1:
            item.student = student_id(path.parts[0])
        elif rest:
            item.student = student_id(rest)
        if assignment is None:
            assignment = _by_content(raw, releases)
            if assignment:
                item.note = "notebook recognised by its content"
        item.assignment = assignment
        if item.student is None:
            item.note = (
                "skipped: no student id in its name; put each student's files in a folder "
                "named after the student, or name them STUDENT_NN_topic.ipynb"
            )
        elif assignment is None:
            item.note = "skipped: neither its name nor its content matches a released notebook"
        elif path.stem != assignment:
            item.note = item.note or f"renamed from {path.name!r}"
    return found


def collect(submissions: Path, course: Path) -> list[Found]:
    """Copy every recognised notebook to submitted/STUDENT/NN_topic/NN_topic.ipynb."""
    names = assignments(course)
    releases = {name: release_notebook(course, name) for name in names}
    found = identify(_files(Path(submissions)), names, releases)
    newest: dict[tuple[str, str], Found] = {}
    for item in found:
        if item.student is None or item.assignment is None:
            continue
        key = (item.student, item.assignment)
        other = newest.get(key)
        if other is None or item.mtime > other.mtime:
            newest[key] = item
    for item in found:
        chosen = newest.get((item.student, item.assignment))
        if chosen is not None and chosen is not item:
            item.note = f"skipped: {chosen.source!r} is a newer copy of the same notebook"
    for (student, assignment), item in newest.items():
        folder = Path(course) / "submitted" / student / assignment
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / f"{assignment}.ipynb").write_bytes(item.raw)
    return found


def report(found: list[Found]) -> str:
    lines = ["| file | student | notebook | note |", "|---|---|---|---|"]
    for item in sorted(found, key=lambda f: (f.student or "~", f.assignment or "", f.source)):
        lines.append(
            f"| {item.source} | {item.student or '–'} | {item.assignment or '–'} | {item.note} |"
        )
    return "\n".join(lines) + "\n"
