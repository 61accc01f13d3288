"""Collect: turn a folder or zip of downloaded notebooks into nbgrader's submitted/ layout.

Accepted shapes (mixed freely):
    SUBMISSIONS/alice/01_attention.ipynb              a folder per student
    SUBMISSIONS/bob.zip                               a zip per student
    SUBMISSIONS/carol_Copy of 02_causal_mask (1).ipynb  one file per notebook, student first
and the same inside one zip. Colab's names ("Copy of X", "X (1)", "X - Copy") are normalised;
a file whose name names no notebook is identified by its content. Where a student handed in
the same notebook twice, the newer file wins. Every file ends up in submitted/ or in the report
with the reason it was skipped.

Canvas's and Moodle's download names are taken apart, and a pattern of the course's own
(course.toml's [collect] pattern, or --pattern) names the student for any other LMS; with a
roster (roster.py) a file goes only to a student on it. Each submission's time goes to
submitted/STUDENT/NN_topic/timestamp.txt, where nbgrader's late penalty reads it: the time the
name carries (the pattern's `time` group), else the zip entry's, else the file's.
"""

from __future__ import annotations

import re
import shutil
import struct
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from . import deadlines, preflight
from .course import GradingError, assignments, course_settings, release_notebook
from .roster import Named, Roster, lms_name

COPY_MARKS = re.compile(r"copy of |\(\d+\)|[ _-]+copy\b(?! of)", re.IGNORECASE)
SEPARATORS = " _-.\t"


@dataclass
class Found:
    """One file met while collecting, and where it went."""

    source: str  # path inside the submissions folder or zip
    student: str | None = None
    assignment: str | None = None
    note: str = ""
    mtime: float = 0.0  # when it was handed in, as far as can be told (seconds since the epoch)
    raw: bytes = b""
    time_from: str = "file"  # where mtime came from: file | zip entry | name


def student_id(text: str) -> str:
    return re.sub(r"[^\w.@-]+", "_", text).strip("_.-")


def _files(root: Path, zone=None) -> list[tuple[PurePosixPath, bytes, float]]:
    """(path, bytes, mtime) of every file under a folder or inside a zip, zips inside opened."""
    out = []
    if root.is_file() and zipfile.is_zipfile(root):
        out += _zip_members(zipfile.ZipFile(root), PurePosixPath(), zone)
    elif root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
                out += _zip_members(zipfile.ZipFile(path), rel.with_suffix(""), zone)
            else:
                out.append((rel, path.read_bytes(), path.stat().st_mtime))
    else:
        raise GradingError(f"{root} is neither a folder nor a zip file of submissions")
    return out


def _unix_time(extra: bytes) -> float | None:
    """The UTC modification time of the zip's "extended timestamp" field (0x5455), which
    Info-ZIP and most Unix tools add; the entry's own time is local and has no zone."""
    at = 0
    while at + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[at : at + 4])
        body = extra[at + 4 : at + 4 + size]
        if tag == 0x5455 and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack("<i", body[1:5])[0])
        at += 4 + size
    return None


def _zip_time(info: zipfile.ZipInfo, zone=None) -> float:
    unix = _unix_time(info.extra)
    if unix is not None:
        return unix
    return deadlines.aware(datetime(*info.date_time), zone).timestamp()


def _zip_members(archive: zipfile.ZipFile, prefix: PurePosixPath, zone=None):
    out = []
    for info in archive.infolist():
        name = PurePosixPath(info.filename)
        if info.is_dir() or name.parts[0] == "__MACOSX" or name.name.startswith("._"):
            continue
        out.append((prefix / name, archive.read(info), _zip_time(info, zone)))
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
    best = None
    for name in names:
        number, topic = name.split("_", 1)
        pattern = rf"(?<!\d){number}(?!\d)[ _-]*({re.escape(topic).replace('_', '[ _-]*')})?"
        for hit in re.finditer(pattern, clean, re.IGNORECASE):
            # "jdoe05_06_stretch" holds 05 and 06: the notebook is the one named with its
            # topic, standing alone, and last, so the digits ending an id are left to the id.
            alone = hit.start() == 0 or clean[hit.start() - 1] in SEPARATORS
            rank = (hit.group(1) is not None, alone, hit.end())
            if best is None or rank > best[0]:
                best = (rank, name, hit.start())
    if best is None:
        return None, clean
    return best[1], clean[: best[2]].strip(SEPARATORS)


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


@dataclass
class Naming:
    """How collect reads names: the roster, the course's own pattern, its time zone."""

    roster: Roster | None = None
    pattern: re.Pattern | None = None
    time_format: str | None = None  # strptime's, for the pattern's `time` group; None: ISO 8601
    zone: object = None  # of times without one; None: this machine's

    @classmethod
    def of(cls, course: Path, pattern: str | None = None) -> Naming:
        settings = course_settings(course).get("collect", {})
        pattern = pattern or settings.get("pattern")
        compiled = None
        if pattern:
            try:
                compiled = re.compile(pattern, re.IGNORECASE)
            except re.error as err:
                raise GradingError(f"collect pattern {pattern!r}: {err}") from None
            if "student" not in compiled.groupindex:
                raise GradingError(f"collect pattern {pattern!r} has no (?P<student>...) group")
        zone = deadlines.course_timezone(course)
        return cls(Roster.of(course), compiled, settings.get("time_format"), zone)

    def named(self, path: PurePosixPath) -> Named | None:
        """Who the path's name says handed it in, and what of it names the notebook; None for
        a flat file named in no LMS's way (its student is what precedes the notebook's name)."""
        stem, top = path.stem, path.parts[0] if len(path.parts) > 1 else None
        if self.pattern:
            hit = self.pattern.search(stem)
            if hit:
                rest = stem[: hit.start()] + " " + stem[hit.end() :]
                return Named(hit["student"], "pattern", rest=rest, time=_group(hit, "time"))
            hit = self.pattern.search(top) if top else None
            if hit:
                return Named(hit["student"], "pattern", rest=stem, time=_group(hit, "time"))
        named = lms_name(stem)
        if named is not None:
            return named
        named = lms_name(top) if top else None
        if named is not None:
            named.rest = stem  # Moodle's folder per submission: the name is the folder's
            return named
        return Named(top, "folder", rest=stem) if top else None

    def when(self, text: str) -> float:
        try:
            if self.time_format:
                moment = datetime.strptime(text, self.time_format)
            else:
                moment = datetime.fromisoformat(text)
        except ValueError:
            raise GradingError(
                f"the time {text!r} in a file name does not read as "
                f"{self.time_format or 'ISO 8601'} ([collect] time_format in course.toml)"
            ) from None
        return deadlines.aware(moment, self.zone).timestamp()


def _group(hit: re.Match, name: str) -> str:
    return (hit[name] or "") if name in hit.re.groupindex else ""


def _whose(item: Found, path: PurePosixPath, names: list[str], naming: Naming) -> str:
    """Sets the item's student (None, with the reason in its note, where there is none) and
    returns what of the name is left to name the notebook."""
    named = naming.named(path)
    roster = naming.roster
    if named is None and roster is not None:
        item.student, why = roster.starting(path.stem)
        rest = path.stem[len(item.student) :] if item.student else path.stem
    elif named is None:  # as before rosters: the student is what precedes the notebook's name
        assignment, before = _name_match(path.stem, names)
        item.student, why, rest = student_id(before) or None, "", path.stem
    else:
        if roster is not None:
            item.student, why = roster.match(named)
        else:
            item.student, why = student_id(named.text) or None, ""
        rest = named.rest
        if named.time:
            item.mtime, item.time_from = naming.when(named.time), "name"
    if why:
        item.note = f"skipped: {why}; add them to the roster (make roster) or rename the file"
    return rest


def identify(files, names: list[str], releases: dict, naming: Naming | None = None) -> list[Found]:
    naming = naming or Naming()
    found = []
    for path, raw, mtime in _strip_common_root(files):
        item = Found(str(path), mtime=mtime, raw=raw)
        found.append(item)
        if path.suffix.lower() != ".ipynb":
            item.note = "skipped: not a notebook (.ipynb)"
            continue
        rest = _whose(item, path, names, naming)
        assignment, _ = _name_match(rest, names)
        if assignment is None and rest != path.stem:
            assignment, _ = _name_match(path.stem, names)
        if assignment is None:
            assignment = _by_content(raw, releases)
            if assignment:
                item.note = item.note or "notebook recognised by its content"
        item.assignment = assignment
        if item.note.startswith("skipped"):
            continue
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


def collect(submissions: Path, course: Path, pattern: str | None = None) -> list[Found]:
    """Copy every recognised notebook to submitted/STUDENT/NN_topic/NN_topic.ipynb, with the
    time it was handed in as nbgrader's timestamp.txt beside it."""
    names = assignments(course)
    releases = {name: release_notebook(course, name) for name in names}
    naming = Naming.of(course, pattern)
    found = identify(_files(Path(submissions), naming.zone), names, releases, naming)
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
        deadlines.write_timestamp(folder, datetime.fromtimestamp(item.mtime).astimezone())
    return found


def missing(found: list[Found], course: Path) -> dict[str, list[str]]:
    """Who on the roster handed in nothing: per notebook this batch holds, and under "" those
    with no notebook at all in it. {} without a roster."""
    roster = Roster.of(course)
    if roster is None:
        return {}
    handed = {(f.student, f.assignment) for f in found if f.student and f.assignment}
    batch = sorted({a for _, a in handed})
    out = {"": [s for s in roster.ids if not any((s, a) in handed for a in batch)]}
    for assignment in batch:
        out[assignment] = [s for s in roster.ids if (s, assignment) not in handed]
    return out


def report(found: list[Found], absent: dict[str, list[str]] | None = None) -> str:
    lines = ["| file | student | notebook | handed in | note |", "|---|---|---|---|---|"]
    for item in sorted(found, key=lambda f: (f.student or "~", f.assignment or "", f.source)):
        when = ""
        if item.student and item.assignment and not item.note.startswith("skipped"):
            moment = datetime.fromtimestamp(item.mtime).astimezone()
            when = f"{moment:%Y-%m-%d %H:%M %z} ({item.time_from})"
        lines.append(
            f"| {item.source} | {item.student or '–'} | {item.assignment or '–'} | {when} "
            f"| {item.note} |"
        )
    if absent:
        lines += ["", "On the roster, handed in nothing:", ""]
        for assignment, students in absent.items():
            label = assignment or "any notebook of this batch"
            lines.append(f"- {label} ({len(students)}): {', '.join(students) or 'nobody'}")
    return "\n".join(lines) + "\n"
