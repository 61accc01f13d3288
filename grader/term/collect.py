"""Collect: turn a folder or zip of downloaded notebooks into nbgrader's submitted/ layout.

Accepted shapes (mixed freely):
    SUBMISSIONS/alice/01_attention.ipynb              a folder per student
    SUBMISSIONS/bob.zip                               a zip per student
    SUBMISSIONS/carol_Copy of 02_causal_mask (1).ipynb  one file per notebook, student first
and the same inside one zip. Colab's and Drive's names ("Copy of X", "X (1)", "X - Copy") are
normalised, and nothing else ("ann-copy" is an id); a file whose name names no notebook is
identified by its content.

Every notebook placed is kept in COURSE/collected/ (collected.py), and which of a student's
files counts follows collected.py's rule, never the order of collects: collecting the same zip
again changes nothing, and a file older than the one that counts, or one that cannot be graded,
is kept but refused. A file emailed to the instructor is collected with `--student` and
`--submitted-at`. Every file ends up counted, refused or skipped, with the reason, in
reports/collect.md and in the term's log (term_log.py).

Canvas's and Moodle's download names are taken apart, and a pattern of the course's own
(course.toml's [collect] pattern, or --pattern) names the student for any other LMS; with a
roster (roster.py) a file goes only to a student on it. A hand-in time is taken only from a
source that records it, and goes to submitted/STUDENT/NN_topic/timestamp.txt, where nbgrader's
late penalty reads it: the time the instructor gives (--submitted-at), else the LMS's own
submission times (--times, canvas.py), else the time the name carries (the pattern's `time`
group), else, where course.toml says the course's downloads are stamped ([collect] stamped =
true), the zip entry's or the file's. Canvas and Moodle never stamp theirs: Canvas's entries all
carry the moment its zip was built, Moodle's the moment its file pool first stored the bytes
(grader/README.md, "Where the times come from"). A file with no recorded time gets no
timestamp.txt and so no penalty here: its lateness is the LMS's (Canvas's LATE mark, kept).

What a file was handed in for is known where the instructor says (--notebook: Canvas's zip of
one assignment) or Canvas's own record of the upload does (--times with attachment_ids: the
one place Canvas names an upload's assignment; canvas.py). Such a file is then identified by
its content alone: another notebook is kept under the one it was handed in for as the "wrong
notebook", named with the student in every report, and graded as neither. Without either, a
file is the notebook its name, else its content, says.
"""

from __future__ import annotations

import io
import re
import struct
import time
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath

from transformer_lab.hand_in import DOWNLOAD, MIME, receipt_problem, receipts

from ..course import GradingError
from ..engine import preflight
from . import canvas, collected, term_log
from .collected import (
    ATTACHMENT,
    EMPTY,
    GIVEN,
    NO_TIME,
    NOT_THIS_RELEASE,
    WORKSHOP_COPY,
    Kept,
    Store,
)
from .course_open import Course
from .names import namer
from .roster import Named, Roster, lms_name
from .settings import aware, compile_pattern

# Only the forms Colab, Drive and Windows give copies: "Copy of X", "X (1)", "X - Copy"; an id
# such as "ann-copy" is left whole.
COPY_MARKS = re.compile(r"(?<![^\W_])copy of |\(\d+\)| +- +copy\b", re.IGNORECASE)
SEPARATORS = " _-.\t"
SHOWN = 10  # lines of each kind the terminal gets; the report has them all
# Stable codes of what collect finds in a file, in Found.codes and last in its note in brackets,
# as a check's mistake code ends its message (checkpoints/_core.py): a file that is not what
# was handed out (the workshop's copy, another release's notebook: collected.WORKSHOP_COPY and
# NOT_THIS_RELEASE; no notebook at all; an empty one: collected.EMPTY), and what its own "Before
# you hand in" left in it. Kept.codes records them in the store.
NOT_A_NOTEBOOK = "not_a_notebook"
NOT_READY, CHANGED_AFTER_CHECK = "not_ready", "changed_after_check"
WRONG_FILE = (WORKSHOP_COPY, NOT_THIS_RELEASE)  # graded as it is: named on the terminal too
AS_IS = "graded as it is, against this release's checks and points"


class FileStatus(StrEnum):
    """What collect did with a file it met (a string: the report writes it as is)."""

    COUNTS = "counts"  # placed, and the file that counts for its student's notebook
    BROKEN = "cannot be graded"  # placed, and counts only for want of a better one
    REFUSED = "refused"  # placed in the store, but another file counts
    UNCHANGED = "unchanged"  # collected before (or twice in this batch): nothing new
    NEW = "new"  # placed now, its verdict still to come
    WRONG = "wrong notebook"  # placed in the store, handed in for a notebook it is not
    SKIPPED = "skipped"  # not a notebook of the course, or not a student's


# placed by this collect
KEPT_NOW = (FileStatus.COUNTS, FileStatus.BROKEN, FileStatus.WRONG, FileStatus.REFUSED)
ASK_FOR_A_COPY = (
    "it stands in submitted/ so that autograde reports it, never as a 0; ask for a good copy and "
    "collect it with --student {student} --submitted-at TIME"
)


@dataclass
class Found:
    """One file met while collecting, and where it went."""

    source: str  # path inside the submissions folder or zip
    student: str | None = None
    assignment: str | None = None
    note: str = ""
    mtime: float = 0.0  # the file's own time, or its zip entry's (seconds since the epoch)
    raw: bytes = b""
    mtime_from: str = "file"  # file | zip entry
    submitted_at: float | None = None  # when it was handed in, from a source that records it
    time_from: str = NO_TIME  # given | LMS times | name | zip entry | file | none
    order: float | None = None  # its place among uploads: Canvas's attachment id, else mtime
    order_from: str = ""
    lms_late: bool | None = None  # Canvas's LATE mark; None where the LMS marks nothing
    lms_user: str = ""  # the LMS's user id in the name (Canvas's)
    sha256: str = ""  # of a notebook placed: its name in collected/
    status: FileStatus = FileStatus.SKIPPED
    wrong: str = ""  # the notebook it is, where it was handed in for another (`assignment`)
    codes: list[str] = field(default_factory=list)  # what collect found in it (codes above)
    marks: list[tuple[str, str]] = field(default_factory=list)  # (code, what its note says)


def student_id(text: str) -> str:
    return re.sub(r"[^\w.@-]+", "_", text).strip("_.-")


def _files(root: Path, zone=None) -> list[tuple[PurePosixPath, bytes, float, str]]:
    """(path, bytes, mtime, where mtime comes from) of every file under a folder, inside a zip
    (zips inside opened, to any depth: a zip of Canvas's per-assignment zips), or of one file."""
    out = []
    if root.is_file() and zipfile.is_zipfile(root):
        out += _zip_members(zipfile.ZipFile(root), PurePosixPath(), zone)
    elif root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
                out += _zip_members(zipfile.ZipFile(path), rel.with_suffix(""), zone)
            else:
                out.append((rel, path.read_bytes(), path.stat().st_mtime, "file"))
    elif root.is_file():  # one notebook, emailed
        out.append((PurePosixPath(root.name), root.read_bytes(), root.stat().st_mtime, "file"))
    else:
        raise GradingError(f"{root}: no such folder, zip or notebook")
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
    return aware(datetime(*info.date_time), zone).timestamp()


def _zip_members(archive: zipfile.ZipFile, prefix: PurePosixPath, zone=None):
    out = []
    for info in archive.infolist():
        name = PurePosixPath(info.filename)
        if info.is_dir() or name.parts[0] == "__MACOSX" or name.name.startswith("._"):
            continue
        raw = archive.read(info)
        if name.suffix.lower() == ".zip" and zipfile.is_zipfile(io.BytesIO(raw)):
            inner = zipfile.ZipFile(io.BytesIO(raw))
            out += _zip_members(inner, prefix / name.with_suffix(""), zone)
            continue
        out.append((prefix / name, raw, _zip_time(info, zone), "zip entry"))
    return out


def _strip_common_root(files):
    """A zip of one top folder ("submissions/alice/...") is read as its content."""
    while files and all(len(p.parts) > 2 for p, *_ in files):
        tops = {p.parts[0] for p, *_ in files}
        if len(tops) != 1:
            break
        files = [(PurePosixPath(*p.parts[1:]), *rest) for p, *rest in files]
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
    student: str | None = None  # whose every file is, where the instructor says (--student)
    stamped: bool = False  # course.toml's [collect] stamped: a file's own time is its hand-in
    times: canvas.Times | None = None  # the LMS's submission times (--times)
    notebook: str | None = None  # what every file was handed in for, where the instructor says

    @classmethod
    def of(cls, course: Course, pattern: str | None = None) -> Naming:
        term = course.term
        compiled = compile_pattern(pattern) if pattern else term.collect_pattern
        return cls(Roster.of(course), compiled, term.time_format, term.zone, stamped=term.stamped)

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

    def handed_in_for(self, item: Found) -> str | None:
        """The notebook the file was handed in for: the instructor's word (--notebook), else
        Canvas's record of the upload (--times with attachment_ids); None where neither says."""
        if self.notebook or self.times is None or item.order_from != ATTACHMENT:
            return self.notebook
        return self.times.handed_in_for(item.order)

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
        return aware(moment, self.zone).timestamp()


def _group(hit: re.Match, name: str) -> str:
    return (hit[name] or "") if name in hit.re.groupindex else ""


def _find_student(item: Found, path: PurePosixPath, names: list[str], naming: Naming) -> str:
    """Sets the item's student (None, with the reason in its note, where there is none) and
    returns what of the name is left to name the notebook."""
    item.order, item.order_from = item.mtime, item.mtime_from
    if naming.student:
        item.student = naming.student
        return path.stem
    named = naming.named(path)
    if named is not None and named.how == "canvas":
        item.order, item.order_from = named.attachment, ATTACHMENT
        item.lms_late, item.lms_user = named.late, named.lms_id
    elif naming.stamped and (named is None or named.how not in ("canvas", "moodle")):
        item.submitted_at, item.time_from = item.mtime, item.mtime_from
    roster = naming.roster
    if named is None and roster is not None:
        item.student, why = roster.id_at_start(path.stem)
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
            item.submitted_at, item.time_from = naming.when(named.time), "name"
    if why:
        item.note = f"skipped: {why}; add them to the roster (make roster) or rename the file"
    return rest


def identify(files, names: list[str], releases: dict, naming: Naming | None = None) -> list[Found]:
    naming = naming or Naming()
    found = []
    for path, raw, mtime, mtime_from in _strip_common_root(files):
        item = Found(str(path), mtime=mtime, raw=raw, mtime_from=mtime_from)
        found.append(item)
        if path.suffix.lower() != ".ipynb":
            _not_a_notebook(item, path, names, naming)
            continue
        if not raw.strip():
            item.codes.append(EMPTY)
        rest = _find_student(item, path, names, naming)
        meant = naming.handed_in_for(item)
        if meant:  # what it is, by its content alone: what it is called says nothing then
            content = _by_content(raw, releases)
            item.assignment, item.wrong = meant, content if content not in (None, meant) else ""
        else:
            item.assignment = _named_or_recognised(item, path, rest, names, releases)
        assignment = item.assignment
        if item.note.startswith("skipped"):
            continue
        if item.student is None:
            item.note = (
                "skipped: no student id in its name; put each student's files in a folder "
                "named after the student, or name them STUDENT_NN_topic.ipynb"
            )
        elif assignment is None:
            item.note = "skipped: neither its name nor its content matches a released notebook"
            if EMPTY in item.codes:
                item.note += f" (it is empty) [{EMPTY}]"
        elif COPY_MARKS.search(path.stem) and not item.wrong:
            item.note = item.note or f"a copy's name, filed as {assignment}.ipynb"
        if item.student and assignment and not item.wrong:
            item.marks = marks(raw, releases[assignment], assignment)
            item.codes += [code for code, _ in item.marks]
        if naming.times is not None and item.lms_user and assignment:
            when = naming.times.of(item.lms_user, assignment, item.order)
            if when is not None:
                item.submitted_at, item.time_from = when, canvas.TIME_FROM
    return found


def _not_a_notebook(item: Found, path: PurePosixPath, names: list[str], naming: Naming) -> None:
    """A file that is no notebook (a .py, a PDF): skipped and not kept, but said with the student
    and notebook its name gives (Canvas's names any upload), so that the student can be asked
    for the notebook itself, and recorded under them (_record_others): they handed in that file,
    not nothing. A flat name that names no notebook names no one ("notes.txt")."""
    rest = _find_student(item, path, names, naming)
    item.assignment = naming.handed_in_for(item) or _name_match(rest, names)[0]
    if item.assignment is None and naming.named(path) is None and not naming.student:
        item.student, item.note = None, ""
    kind = f"a {path.suffix} file" if path.suffix else "a file with no extension"
    asked = item.student and item.assignment  # handed in for a notebook, not beside one
    ask = f": ask {item.student} for the notebook itself ({DOWNLOAD})" if asked else ""
    why = item.note.removeprefix("skipped: ")  # not on the roster, say
    said = [f"skipped: not a notebook (.ipynb), {kind}{ask}", *([why] if why else [])]
    item.note = "; ".join(said) + f" [{NOT_A_NOTEBOOK}]"
    item.codes.append(NOT_A_NOTEBOOK)


def marks(raw: bytes, release, name: str) -> list[tuple[str, str]]:
    """(code, what to say) of each thing to note in a notebook handed in as `name`: not made
    from this release (`release`), and what its own "Before you hand in" left in it."""
    nb, _ = preflight.read_notebook(raw)
    if nb is None:
        return []
    made = not_the_release(nb, release, name)
    return ([made] if made else []) + _receipt_marks(nb)


def _stamps(cells) -> dict[str, str | None]:
    """grade id -> the checksum nbgrader's release wrote on its first cell (None: none)."""
    found = {}
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id") and meta["grade_id"] not in found:
            found[meta["grade_id"]] = meta.get("checksum")
    return found


def not_the_release(nb, release, name: str) -> tuple[str, str] | None:
    """(code, what to say) where the graded cells' labels say a notebook was not made from this
    release: nbgrader's labels without the checksum nbgrader's release writes on each are the
    workshop's (maintainer/notebook_build.py labels it from the source, never releases it); a
    checksum other than this release's is another release's (another course's or term's, or this
    one's before an errata). None where it was, or where its labels are gone."""
    mine, ours = _stamps(nb.cells), _stamps(release.cells)
    if mine and not any(mine.values()):
        return WORKSHOP_COPY, (
            f"the workshop's notebook (notebooks/{name}.ipynb, solutions folded in), not the "
            f"release: {AS_IS} [{WORKSHOP_COPY}]"
        )
    other = [grade_id for grade_id, stamp in mine.items() if stamp and stamp != ours.get(grade_id)]
    if not other:
        return None
    return NOT_THIS_RELEASE, (
        f"not made from this release: another release's {', '.join(other)} (another course's "
        f"or term's, or this one's before an errata): {AS_IS} [{NOT_THIS_RELEASE}]"
    )


def _receipt_marks(nb) -> list[tuple[str, str]]:
    """What the notebook's last "Before you hand in" left in its outputs (transformer_lab/
    hand_in.py): that it said not ready, and what; that graded cells changed after it."""
    said = max(receipts(nb), key=lambda r: str(r.get("checked", "")), default=None)
    found = []
    if said is not None and said.get("ready") is False:
        found.append((NOT_READY, _not_ready(nb, said)))
    changed = receipt_problem(nb)
    if changed:
        found.append((CHANGED_AFTER_CHECK, f"{changed} [{CHANGED_AFTER_CHECK}]"))
    return found


def _not_ready(nb, receipt: dict) -> str:
    """What a receipt that says not ready records: the ❌ lines printed beside it, and each check
    that did not pass with its code (a mistake code, "not run" or "raised")."""
    checks = receipt.get("checks") if isinstance(receipt.get("checks"), dict) else {}
    failed = [f"{grade_id} {code}" for grade_id, code in checks.items() if code]
    parts = _crosses(nb, receipt) + (["checks: " + ", ".join(failed)] if failed else [])
    return (
        f'its "Before you hand in" said not ready ({receipt.get("checked") or "no time"}): '
        f"{'; '.join(parts) or 'nothing more'} [{NOT_READY}]"
    )


def _crosses(nb, receipt: dict) -> list[str]:
    """The ❌ lines the hand-in cell printed above its receipt, as the cell's outputs saved them."""
    for cell in nb.cells:
        outputs = cell.get("outputs", []) if cell.get("cell_type") == "code" else []
        if not any(out.get("data", {}).get(MIME) is receipt for out in outputs):
            continue
        streams = [out for out in outputs if out.get("output_type") == "stream"]
        text = "".join("".join(out.get("text", "")) for out in streams)
        return [
            line.strip().replace("|", "\\|")
            for line in text.splitlines()
            if line.lstrip().startswith("❌")
        ]
    return []


def _named_or_recognised(item: Found, path: PurePosixPath, rest: str, names, releases):
    """The notebook a file's name says, else the one its content is (noted so), else None."""
    assignment, _ = _name_match(rest, names)
    if assignment is None and rest != path.stem:
        assignment, _ = _name_match(path.stem, names)
    if assignment is None:
        assignment = _by_content(item.raw, releases)
        if assignment:
            item.note = item.note or "notebook recognised by its content"
    return assignment


class Batch(list):
    """The files one collect met (Found), and what it has to say on the terminal."""

    summary: str = ""


def collect(
    course: Course,
    submissions: Path,
    pattern: str | None = None,
    student: str | None = None,
    submitted_at: str | None = None,
    times: Path | None = None,
    notebook: str | None = None,
) -> Batch:
    """Keep every recognised notebook in collected/, put the one that counts of each student's
    notebook in submitted/STUDENT/NN_topic/ with its time (timestamp.txt), and write what
    happened to reports/collect.md and the term's log. `student` and `submitted_at` (ISO 8601,
    in the course's zone unless it carries an offset) are the instructor's word for every file
    of this batch: an emailed notebook; `notebook` what every file was handed in for (Canvas's
    zip of one assignment). `times` is the LMS's own record of when each was handed in (canvas.py:
    Canvas's submissions API as CSV), and of what for where it lists the uploads."""
    submissions = Path(submissions)
    names = course.layout.assignments()
    if notebook is not None and notebook not in names:
        raise GradingError(
            f"--notebook {notebook}: not a released notebook; give one of {', '.join(names)}"
        )
    releases = {name: course.layout.release_notebook(name) for name in names}
    naming = Naming.of(course, pattern)
    naming.student = student and _on_roster(student, naming.roster)
    naming.notebook = notebook
    naming.times = times and canvas.read_times(course, Path(times), names)
    given = submitted_at and given_time(submitted_at, naming.zone)
    found = Batch(identify(_files(submissions, naming.zone), names, releases, naming))
    if given:
        for item in found:
            item.submitted_at, item.time_from = given, GIVEN

    broken = collected.checker(course)
    store = Store(course)
    adopted = collected.adopt(store, broken)
    _keep(found, store, str(submissions.resolve()), broken)
    _record_others(found, store, str(submissions.resolve()))
    changed = collected.materialize(store)
    found.summary = write_collect_table(course, submissions, found, adopted, changed)
    return found


def _on_roster(student: str, roster: Roster | None) -> str:
    """--student: the roster's id of the student named by id, SIS login, email or Canvas login."""
    if roster is None:
        return student_id(student)
    found, why = roster.find(student)
    if found is None:
        raise GradingError(f"--student {student}: {why} (make roster)")
    return found


def given_time(text: str, zone=None) -> float:
    """--submitted-at: ISO 8601, in the course's zone where it carries no offset."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise GradingError(
            f"--submitted-at {text!r} is not a date and time in ISO 8601 (2027-01-15T14:00, "
            "in the course's zone, or with an offset: 2027-01-15T14:00+01:00)"
        ) from None
    return aware(moment, zone).timestamp()


def _keep(found: list[Found], store: Store, batch: str, broken) -> None:
    """Each notebook placed into the store, and its status: counts, refused or unchanged."""
    placed = [f for f in found if f.student and f.assignment and not f.note.startswith("skipped")]
    before = {(f.student, f.assignment): store.choice(f.student, f.assignment) for f in placed}
    now, first = time.time(), {}
    for item in placed:
        item.sha256 = collected.sha256(item.raw)
        key = (item.student, item.assignment, item.sha256)
        if key in first:  # the same file twice in one batch
            item.status = FileStatus.UNCHANGED
            item.note = f"the same file as {first[key].source!r}"
            continue
        first[key] = item
        old = store.known(*key)
        # Another notebook is graded as neither, so preflight has nothing to judge it against.
        why = old.broken if old else "" if item.wrong else broken(item.raw, item.assignment)
        kept = _kept(item, batch, now, why)
        if not store.changes(kept):
            item.status, item.note = FileStatus.UNCHANGED, _again(old, store)
            continue
        store.add(item.raw, kept)
        item.status = FileStatus.NEW
    batch_files = {(f.student, f.assignment, f.sha256): f for f in placed}
    who = namer(store.course, None)
    for item in placed:
        if item.status == FileStatus.NEW and item.wrong:
            item.status, item.note = FileStatus.WRONG, wrong_note(item, who)
        elif item.status == FileStatus.NEW:
            item.status, why = _verdict(item, store, before, batch_files)
            said = (why, item.note, *(text for _, text in item.marks))
            item.note = "; ".join(n for n in said if n)


def _record_others(found: list[Found], store: Store, batch: str) -> None:
    """Each file that is no notebook and names its student, in the store's record."""
    for item in found:
        if NOT_A_NOTEBOOK in item.codes and item.student:
            item.sha256 = collected.sha256(item.raw)
            other = collected.Other(item.student, item.assignment, item.source, batch, item.sha256)
            store.add_other(other)


def _kept(item: Found, batch: str, now: float, broken: str) -> Kept:
    """The store's record of this arrival."""
    return Kept(
        item.sha256,
        item.student,
        item.assignment,
        item.submitted_at,
        item.time_from,
        item.source,
        batch,
        now,
        broken,
        item.order,
        item.order_from,
        item.lms_late,
        item.wrong,
        list(item.codes),
    )


def wrong_note(item: Found, who=str) -> str:
    """What collect says of another notebook handed in for this one (`who`: how to name the
    student, names.namer)."""
    return (
        f"{collected.wrong_said(item, who)}; kept, and graded as neither: ask for "
        f"{item.assignment}, then collect it (emailed: --student {item.student} --notebook "
        f"{item.assignment})"
    )


def _again(old: Kept, store: Store) -> str:
    """The note on a file collected before: where from, and whether it is the one that counts."""
    note = f"collected before, from {Path(old.batch).name}"
    if old.wrong:
        return f"{note}; it is {old.wrong}, handed in for {old.assignment}: graded as neither"
    chosen, _ = store.choice(old.student, old.assignment)
    if chosen.sha256 == old.sha256:
        return note
    when = collected.handed_in(chosen, store.course.term.zone)
    return f"{note}; {chosen.short}, handed in {when}, counts"


def _verdict(item: Found, store: Store, before: dict, batch_files: dict) -> tuple[FileStatus, str]:
    """Whether a new file counts now, and why (not)."""
    chosen, why = store.choice(item.student, item.assignment)
    kept = store.known(item.student, item.assignment, item.sha256)
    zone = store.course.term.zone
    if chosen.sha256 == item.sha256:
        status = FileStatus.COUNTS
        if kept.broken:  # nothing better: it stands, so that autograde quarantines it, seen
            status = FileStatus.BROKEN
            item.note = f"{kept.broken}; {ASK_FOR_A_COPY.format(student=item.student)}"
        previous = before[item.student, item.assignment]
        if previous is None or previous[0].sha256 == item.sha256:
            return status, ""
        was = previous[0]
        return status, f"replaces {was.short} (handed in {collected.handed_in(was, zone)})"
    stays = f"{chosen.short}, handed in {collected.handed_in(chosen, zone)}"
    if why == collected.PINNED:
        return FileStatus.REFUSED, f"refused: {chosen.short} is pinned with collect-pin"
    if kept.broken:
        why = f"it cannot be graded ({kept.broken})"
        return FileStatus.REFUSED, f"refused: {why}; the file that counts stays {stays}"
    newer = batch_files.get((item.student, item.assignment, chosen.sha256))
    if newer is not None:
        return FileStatus.REFUSED, f"refused: {newer.source!r} is a newer copy of the same notebook"
    if kept.order_from == chosen.order_from == ATTACHMENT:
        return FileStatus.REFUSED, (
            f"refused: an earlier upload than the file that counts, {chosen.short} (Canvas's "
            f"attachment {kept.order:.0f}, before {chosen.order:.0f})"
        )
    return FileStatus.REFUSED, f"refused: older than the file that counts, {stays}"


def missing(course: Course) -> dict[str, list[str]]:
    """Who on the roster handed in nothing, in any collect so far: per assigned notebook anyone
    handed in (course.toml's), and under "" those who handed in no file at all. Another notebook
    handed in for one, or a file that is no notebook (a .py), is not nothing: the report names
    it apart (wrong_notebooks, no_notebook). {} without a roster."""
    roster = Roster.of(course)
    if roster is None:
        return {}
    store = Store(course)
    handed = set(store.pairs()) | set(store.wrong())
    students, notebooks = {s for s, _ in handed}, {a for _, a in handed}
    students |= {student for student, _, _ in store.others}
    handed |= {(student, a) for student, a, _ in store.others if a is not None}
    out = {"": [s for s in roster.ids if s not in students]}
    for assignment in (a for a in course.term.assigned if a in notebooks):
        out[assignment] = [s for s in roster.ids if (s, assignment) not in handed]
    return out


def _handed_in(item: Found, course: Course) -> str:
    if item.status == FileStatus.SKIPPED:
        return ""
    zone = course.term.zone
    text = collected.handed_in(item, zone)
    due = course.term.due_for(item.student, item.assignment)
    if due is None or item.status != FileStatus.COUNTS or item.submitted_at is None:
        return text
    if item.submitted_at <= due.timestamp():
        return text
    late = term_log.describe(item.submitted_at - due.timestamp())
    return f"{text}, {late} late (due {term_log.shown(due, zone)})"


def collect_table(
    found: list[Found],
    course: Course,
    absent: dict[str, list[str]],
    wrong: list[str],
    others: list[str] = (),
) -> str:
    """The full table of one collect, who handed in nothing, who handed in the wrong
    notebook (`wrong`: a line each) and who no notebook, only another file (`others`)."""
    lines = ["| file | student | notebook | handed in | kept as | status | note |"]
    lines.append("|---|---|---|---|---|---|---|")
    for item in sorted(found, key=lambda f: (f.student or "~", f.assignment or "", f.source)):
        lines.append(
            f"| {item.source} | {item.student or '–'} | {item.assignment or '–'} "
            f"| {_handed_in(item, course)} | {item.sha256[:12]} | {item.status} "
            f"| {item.note} |"
        )
    if absent:
        lines += ["", "On the roster, handed in nothing (in any collect so far):", ""]
        for assignment, students in absent.items():
            label = assignment or "any notebook"
            lines.append(f"- {label} ({len(students)}): {', '.join(students) or 'nobody'}")
    if wrong:
        lines += ["", "The wrong notebook handed in (in any collect so far; graded as neither):"]
        lines.append("")
        lines += [f"- {line}" for line in wrong]
    if others:
        lines += ["", "No notebook, only another file (in any collect so far; nothing to grade):"]
        lines.append("")
        lines += [f"- {line}" for line in others]
    return "\n".join(lines) + "\n"


def time_sources(found: list[Found]) -> list[str]:
    """Where this batch's hand-in times came from, in a line per kind of file: the LMS's files
    (and what stands for a time where none is recorded), then every other's."""
    placed = [f for f in found if f.status != FileStatus.SKIPPED]
    canvas = [f for f in placed if f.order_from == ATTACHMENT]
    lines = []
    if canvas:
        untimed = [f for f in canvas if f.submitted_at is None]
        late = sum(bool(f.lms_late) for f in untimed)
        parts = [_sources(f for f in canvas if f.submitted_at is not None)]
        if untimed:
            parts.append(
                f"none recorded {len(untimed)} (Canvas's zip stamps none; lateness is Canvas's, "
                f"{late} marked LATE; give --times for Canvas's own times)"
            )
        lines.append("Canvas's files: " + ", ".join(p for p in parts if p))
    rest = [f for f in placed if f.order_from != ATTACHMENT]
    if rest:
        text = _sources(f for f in rest if f.submitted_at is not None)
        none = sum(f.submitted_at is None for f in rest)
        if none:
            text += (
                ", " * bool(text) + f"none recorded {none} (no penalty here; see [collect] stamped)"
            )
        lines.append(("other files: " if canvas else "") + text)
    return lines


def _sources(items) -> str:
    counts = {}
    for item in items:
        counts[item.time_from] = counts.get(item.time_from, 0) + 1
    return ", ".join(f"{source} {n}" for source, n in sorted(counts.items()))


def summary(found: list[Found], adopted: list[Kept], changed: list, zone=None) -> str:
    """A few lines for the terminal: what came in, and each refusal and skip (SHOWN of each)."""
    counts = {s: sum(f.status == s for f in found) for s in (*KEPT_NOW, FileStatus.UNCHANGED)}
    counts[FileStatus.SKIPPED] = len(found) - sum(counts.values())
    head = f"{len(found)} file{'s' * (len(found) != 1)}"
    if not (any(counts[s] for s in KEPT_NOW) or adopted or changed):
        head += ", nothing changed"
    lines = [head + ": " + ", ".join(f"{label} {n}" for label, n in counts.items() if n)]
    lines += [f"hand-in times: {line}" for line in time_sources(found)]
    for status in (FileStatus.WRONG, FileStatus.BROKEN, FileStatus.REFUSED, FileStatus.SKIPPED):
        mine = [f for f in found if f.status == status]
        lines += [_said(item) for item in mine[:SHOWN]]
        if len(mine) > SHOWN:
            lines.append(f"{status}: {len(mine) - SHOWN} more in the report")
    lines += _wrong_files(found)
    for kept in adopted:
        lines.append(
            f"recorded from {kept.source}: {kept.short}, handed in "
            f"{collected.handed_in(kept, zone)}: a file or time put there by hand"
        )
    if changed:
        lines.append(f"submitted/: {len(changed)} notebooks written or replaced")
    return "\n".join(lines)


def _wrong_files(found: list[Found]) -> list[str]:
    """A line for each file that counts though it is not the release handed out (the workshop's
    copy, another release's notebook), SHOWN of them: it is graded as it is."""
    counted = [f for f in found if f.status == FileStatus.COUNTS]
    said = [(f, text) for f in counted for code, text in f.marks if code in WRONG_FILE]
    lines = [
        f"{FileStatus.COUNTS}: {f.source} ({f.student} / {f.assignment}): {t}" for f, t in said
    ]
    if len(lines) > SHOWN:
        lines[SHOWN:] = [f"not the release handed out: {len(lines) - SHOWN} more in the report"]
    return lines


def _said(item: Found) -> str:
    """A file's line on the terminal: its status, its name, whose it is and why."""
    if item.status == FileStatus.WRONG:  # "wrong notebook for 04_training: NAME: who ..."
        head, _, rest = item.note.partition(": ")
        return f"{head}: {item.source}: {rest}"
    whose = f" ({item.student} / {item.assignment})" if item.student else ""
    return f"{item.status}: {item.source}{whose}: {item.note.removeprefix(f'{item.status}: ')}"


def wrong_notebooks(course: Course, who=str) -> list[str]:
    """A line for each notebook of a student for which only another notebook was handed in,
    over every collect so far: 'wrong notebook for 04_training: bob (Bob Stone) handed in
    02_causal_mask (kept as 3f2a9c1d0b7e)'."""
    return [
        f"{collected.wrong_said(kept, who)} (kept as {kept.short})"
        for kept in Store(course).wrong().values()
    ]


def no_notebook(course: Course, who=str) -> list[str]:
    """A line for each student and notebook for which only files that are no notebook were
    handed in, over every collect so far: 'dave (Dave Doe) / 01_attention: no notebook, only
    dave_01_attention.py'. A file that names no notebook is said where the student handed in
    no notebook at all."""
    store = Store(course)
    students = {student for student, _ in store.files}
    only: dict[tuple[str, str | None], list[str]] = {}
    for (student, assignment, _), other in sorted(store.others.items(), key=_by_whose):
        if (student, assignment) not in store.files and (assignment or student not in students):
            only.setdefault((student, assignment), []).append(other.source)
    return [
        f"{who(student)} / {assignment or 'no notebook named'}: no notebook, only "
        f"{', '.join(sources)}"
        for (student, assignment), sources in only.items()
    ]


def _by_whose(entry: tuple) -> tuple[str, str, str]:
    (student, assignment, _), other = entry
    return student, assignment or "", other.source


def write_collect_table(course: Course, batch: Path, found: list[Found], adopted, changed) -> str:
    """reports/collect.md (this collect) and a section of the term's log; the terminal's text."""
    absent = missing(course)
    wrong = wrong_notebooks(course, namer(course, None))
    others = no_notebook(course, namer(course, None))
    short = summary(found, adopted, changed, course.term.zone)
    if absent:
        nobody = absent[""]
        names = ", ".join(nobody[:SHOWN]) + (", ..." if len(nobody) > SHOWN else "")
        short += f"\non the roster, nothing handed in at all: {len(nobody)}"
        short += f" ({names})" if nobody else ""
    short += "".join(f"\n{line}" for line in others[:SHOWN])
    if len(others) > SHOWN:
        short += f"\nno notebook, only another file: {len(others) - SHOWN} more in the report"
    body = f"{short}\n\n{collect_table(found, course, absent, wrong, others)}"
    table = course.layout.report("collect.md")
    table.parent.mkdir(parents=True, exist_ok=True)
    now = term_log.shown(datetime.now().astimezone(), course.term.zone)
    table.write_text(f"# collect {batch}, {now}\n\n{body}", encoding="utf-8")
    log = term_log.append(course, f"collect {batch}", body)
    where = f"the full table: {table}; the term's log: {log}"
    return f"collect {batch.name}: {short}\n{where}"
