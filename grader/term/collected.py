"""Every file ever collected, kept by its content, and the rule that says which one counts.

    COURSE/collected/<sha256>.ipynb     each file as handed in, named by its SHA-256
    COURSE/collected/index.jsonl        one line per arrival or pin, never rewritten

An arrival records whose notebook a file is, when it was handed in and where that time comes
from (None where no source recorded it: a Canvas or Moodle zip carries no hand-in time), the
LMS's order of uploads (Canvas's attachment id) or else the file's own time, the LMS's late mark
(Canvas's LATE), where the file came from (the batch and the name in it), when it was collected,
whether it can be graded (preflight would not quarantine it) and what collect found in it (its
codes: the workshop's copy, another release's notebook...). The same file arriving again
(the same zip collected twice) changes nothing and adds no line: a file keeps the earliest time
it was seen with, unless the instructor gives one (collect --submitted-at, or timestamp.txt
edited in submitted/), which wins.

Which of a student's files counts for a notebook:
  1. the one pinned with `python -m grader collect-pin STUDENT NOTEBOOK HASH`; else
  2. the newest among those that can be graded; else
  3. the newest of all (a broken file is graded only where there is nothing else, so that it is
     quarantined and seen, never silently dropped).
"Newest" follows the LMS where every file has its order (Canvas's attachment ids); else a file
with a hand-in time before one without, the later time first, then a time the instructor gave,
then the files' own order where they share one (a folder's file times), then the later collect,
then the hash. The order of collects never matters. submitted/STUDENT/NN_topic/ always holds the
file that counts and its time (timestamp.txt, none where no time is recorded: nbgrader then
takes no penalty).

A file that is no notebook (a .py, a PDF) is not kept, but its arrival is recorded (kind
"not a notebook": whose, for which notebook where its name says, its name, batch and hash), so
that its student is named as having handed in that file, never as having handed in nothing.

A file handed in for one notebook that is another (collect --notebook, or Canvas's own record
of the upload: collect.py) is kept under the notebook it was handed in for, with the notebook it
is (`wrong`). It never counts, for either: where nothing else handed in for that notebook can,
the notebook's status is "wrong notebook" (Store.wrong), seen in every report, never a 0.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..course import GradingError
from ..engine import preflight
from . import deadlines, term_log
from .course_open import Course

# Times the instructor set, which replace any time a name, zip entry or file gave: collect's
# --submitted-at, and a file or timestamp.txt found in submitted/ that collect did not write.
GIVEN, IN_SUBMITTED = "given", "submitted/"
INSTRUCTOR_TIMES = (GIVEN, IN_SUBMITTED)
NO_TIME = "none"  # no source recorded when it was handed in
ATTACHMENT = "attachment id"  # Canvas's order of uploads, the one order an LMS writes
EMPTY = "empty"  # the code of a file with nothing in it (a failed download or upload)
# The codes of a file not made from the release handed out, which counts and is graded as it is
# (collect.not_the_release): the scores table and the feedback page name them too.
WORKSHOP_COPY, NOT_THIS_RELEASE = "workshop_copy", "not_this_release"
# Why the file that counts counts (Store.choice), in collect.md's words.
PINNED, NEWEST = "pinned with collect-pin", "the newest that can be graded"
NONE_GRADABLE = "none can be graded: the newest"
OTHER = "not a notebook"  # the index's kind of a file that is no notebook: recorded, not kept


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def iso(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()


def _seconds(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text).timestamp()


@dataclass
class Kept:
    """One file of one student's notebook, as kept."""

    sha256: str
    student: str
    assignment: str
    submitted_at: float | None  # seconds since the epoch, when it was handed in; None: unknown
    time_from: str  # given | submitted/ | LMS times | name | zip entry | file | none
    source: str  # the name it had in its batch
    batch: str  # the folder, zip or file collected
    collected_at: float
    broken: str = ""  # why it cannot be graded; "" where it can
    order: float | None = None  # its place among uploads: Canvas's attachment id, a file's time
    order_from: str = ""  # attachment id | zip entry | file; "" where there is none
    lms_late: bool | None = None  # the LMS's own late mark (Canvas's LATE); None: it says none
    wrong: str = ""  # the notebook it is, where it was handed in for another: it never counts
    # What collect found in it (collect.py's codes: workshop_copy, not_ready...); a line of an
    # index written before codes were recorded has none.
    codes: list[str] = field(default_factory=list)

    def __post_init__(self):
        # Whole seconds: a time read back from index.jsonl is then exactly the time written.
        if self.submitted_at is not None:
            self.submitted_at = round(self.submitted_at)
        self.collected_at = round(self.collected_at)

    @property
    def short(self) -> str:
        return self.sha256[:12]


@dataclass(frozen=True)
class Other:
    """A file that is no notebook, handed in under a student's name: recorded, not kept."""

    student: str
    assignment: str | None  # the notebook its name names; None where it names none
    source: str  # the name it had in its batch
    batch: str
    sha256: str


class Store:
    """COURSE/collected/, read: every kept file per (student, notebook), the pins, and the
    files that are no notebook."""

    def __init__(self, course: Course):
        self.course = course
        self.files: dict[tuple[str, str], dict[str, Kept]] = {}
        self.pins: dict[tuple[str, str], str] = {}
        self.others: dict[tuple[str, str | None, str], Other] = {}  # by student, notebook, hash
        index = course.layout.collected_index
        lines = index.read_text(encoding="utf-8").splitlines() if index.is_file() else []
        for n, line in enumerate(lines, start=1):
            try:
                self._apply(json.loads(line))
            except (ValueError, KeyError, TypeError) as err:
                raise GradingError(
                    f"{index}, line {n}: unreadable ({err}); restore it from a backup"
                ) from None

    def _apply(self, event: dict) -> None:
        key = (event["student"], event["assignment"])
        if event["kind"] == OTHER:
            other = Other(**{k: v for k, v in event.items() if k not in ("kind", "at")})
            self.others[other.student, other.assignment, other.sha256] = other
            return
        if event["kind"] == "pin":
            if event["sha256"] is None:
                self.pins.pop(key, None)
            else:
                self.pins[key] = event["sha256"]
            return
        fields = {k: v for k, v in event.items() if k != "kind"}
        fields["submitted_at"] = _seconds(fields["submitted_at"])
        fields["collected_at"] = _seconds(fields["collected_at"])
        new = Kept(**fields)
        kept = self.files.setdefault(key, {})
        old = kept.get(new.sha256)
        if old is None:
            kept[new.sha256] = new
        else:
            for name, value in _merged(old, new).items():
                setattr(old, name, value)

    def _append(self, event: dict) -> None:
        path = self.course.layout.collected_index
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as index:
            index.write(json.dumps(event) + "\n")
        self._apply(event)

    def changes(self, item: Kept) -> bool:
        """Whether this arrival would change anything: a new file, or a new time for one."""
        old = self.known(item.student, item.assignment, item.sha256)
        return old is None or bool(_merged(old, item))

    def add(self, raw: bytes, item: Kept) -> None:
        """Keep a file (once per content) and record this arrival of it."""
        blob = self.course.layout.kept(item.sha256)
        blob.parent.mkdir(parents=True, exist_ok=True)
        if not blob.is_file():
            blob.write_bytes(raw)
        event = asdict(item)
        event["submitted_at"], event["collected_at"] = (
            iso(item.submitted_at),
            iso(item.collected_at),
        )
        self._append({"kind": "file", **event})

    def add_other(self, other: Other) -> bool:
        """Record a file that is no notebook, once per student, notebook and content; whether
        it was new."""
        if (other.student, other.assignment, other.sha256) in self.others:
            return False
        self._append({"kind": OTHER, **asdict(other), "at": datetime.now(UTC).isoformat()})
        return True

    def known(self, student: str, assignment: str, digest: str) -> Kept | None:
        return self.files.get((student, assignment), {}).get(digest)

    def pin(self, student: str, assignment: str, digest: str | None) -> None:
        self._append(
            {
                "kind": "pin",
                "student": student,
                "assignment": assignment,
                "sha256": digest,
                "at": datetime.now(UTC).isoformat(),
            }
        )

    def countable(self, student: str, assignment: str) -> list[Kept]:
        """The notebook's files that may count: all but another notebook handed in for it."""
        return [k for k in self.files.get((student, assignment), {}).values() if not k.wrong]

    def choice(self, student: str, assignment: str) -> tuple[Kept, str] | None:
        """The file that counts, and why (the rule of the module's docstring); None where no
        file of the notebook may count."""
        kept = {k.sha256: k for k in self.countable(student, assignment)}
        if not kept:
            return None
        pinned = self.pins.get((student, assignment))
        if pinned in kept:
            return kept[pinned], PINNED
        good = [k for k in kept.values() if not k.broken]
        best = newest(good or list(kept.values()))
        return best, NEWEST if good else NONE_GRADABLE

    def codes(self, student: str, assignment: str) -> list[str]:
        """What collect found in the file that counts for the notebook (Kept.codes): the file
        submitted/ holds, that autograde grades; none where no file may count."""
        chosen = self.choice(student, assignment)
        return chosen[0].codes if chosen else []

    def pairs(self) -> list[tuple[str, str]]:
        """(student, notebook) of every notebook with a file that may count."""
        return sorted(pair for pair in self.files if self.countable(*pair))

    def wrong(self) -> dict[tuple[str, str], Kept]:
        """(student, notebook) -> the newest file handed in for it, where every file handed in
        for it is another notebook."""
        return {
            pair: newest(list(kept.values()))
            for pair, kept in sorted(self.files.items())
            if not self.countable(*pair)
        }

    def blob(self, kept: Kept) -> Path:
        return self.course.layout.kept(kept.sha256)


def newest(kept: list[Kept]) -> Kept:
    """The newest of a notebook's files, by the rule of the module's docstring."""
    kinds = {k.order_from for k in kept}
    shared = len(kinds) == 1 and "" not in kinds

    def order(k: Kept) -> float:
        return k.order if shared and k.order is not None else float("-inf")

    def timed(k: Kept) -> tuple[bool, float]:
        return k.submitted_at is not None, k.submitted_at or 0.0

    def rest(k: Kept) -> tuple:
        return k.time_from in INSTRUCTOR_TIMES, order(k), k.collected_at, k.sha256

    if kinds == {ATTACHMENT}:  # the LMS's own order of uploads, whatever times are known
        return max(kept, key=lambda k: (order(k), timed(k), *rest(k)))
    return max(kept, key=lambda k: (timed(k), *rest(k)))


def _merged(old: Kept, new: Kept) -> dict:
    """What a file seen again changes: its time, where the instructor gives one or none was
    known or an earlier one comes (the instructor's latest word, else the earliest seen), and
    the LMS's order and mark where they were unknown."""
    changed = {}
    if new.time_from in INSTRUCTOR_TIMES or (
        old.time_from not in INSTRUCTOR_TIMES
        and new.submitted_at is not None
        and (old.submitted_at is None or new.submitted_at < old.submitted_at)
    ):
        if (new.submitted_at, new.time_from) != (old.submitted_at, old.time_from):
            changed |= {"submitted_at": new.submitted_at, "time_from": new.time_from}
    if old.order_from != ATTACHMENT and new.order_from == ATTACHMENT:
        changed |= {"order": new.order, "order_from": new.order_from}
    if old.lms_late is None and new.lms_late is not None:
        changed["lms_late"] = new.lms_late
    if new.wrong and not old.wrong:  # handed in for this notebook, named the wrong one since
        changed["wrong"] = new.wrong
    return changed


def handed_in(kept, zone) -> str:
    """'2027-01-15 20:00 CET (given)', or 'at a time not recorded (Canvas: LATE)': what the
    LMS says where no source recorded the time."""
    if kept.submitted_at is not None:
        return f"{term_log.shown(kept.submitted_at, zone)} ({kept.time_from})"
    mark = {True: " (Canvas: LATE)", False: " (Canvas: not late)"}.get(kept.lms_late, "")
    return f"at a time not recorded{mark}"


def wrong_said(kept, who=str) -> str:
    """'wrong notebook for 04_training: bob (Bob Stone) handed in 02_causal_mask', of a file
    handed in for one notebook that is another (`kept`: a Kept, or collect's Found; `who`: how
    to name the student, names.namer)."""
    return f"wrong notebook for {kept.assignment}: {who(kept.student)} handed in {kept.wrong}"


def lms_late(course: Course, student: str, assignment: str) -> bool | None:
    """The LMS's late mark of the file that counts (Canvas's LATE); None where it gives none."""
    store = Store(course)
    chosen = store.choice(student, assignment) if (student, assignment) in store.files else None
    return chosen[0].lms_late if chosen else None


def _in_submitted(course: Course) -> list[tuple[str, str, Path]]:
    """(student, notebook, path) of each released notebook in submitted/, as autograde sees it."""
    names = set(course.layout.assignments())
    found = course.layout.students_notebooks("submitted")
    return [(student, name, path) for student, name, path in found if name in names]


def adopt(store: Store, check) -> list[Kept]:
    """Record what submitted/ holds that the store does not know: a file put there by hand (an
    emailed fix, a course that predates collected/) or a timestamp.txt edited by hand. Both are
    the instructor's, so their time wins. `check(raw, assignment)` says why a file is broken."""
    adopted = []
    for student, assignment, path in _in_submitted(store.course):
        raw = path.read_bytes()
        digest = sha256(raw)
        stamp = deadlines.read_timestamp(store.course, student, assignment)
        when = stamp.replace(tzinfo=UTC).timestamp() if stamp else None
        known = store.known(student, assignment, digest)
        if known is not None and (stamp is None or _same(known.submitted_at, when)):
            continue
        source = path.relative_to(store.course.layout.root).as_posix()
        item = Kept(
            digest,
            student,
            assignment,
            when,
            IN_SUBMITTED,
            source,
            "submitted/",
            datetime.now(UTC).timestamp(),
            known.broken if known else check(raw, assignment),
        )
        store.add(raw, item)
        adopted.append(item)
    return adopted


def materialize(store: Store) -> list[tuple[Kept, str | None]]:
    """submitted/ made to hold the file that counts for each notebook, with its time; (the file
    now there, the hash of the one it replaced or None) for each folder that changed."""
    changed = []
    for student, assignment in store.pairs():
        chosen, _ = store.choice(student, assignment)
        course = store.course
        notebook = course.layout.notebook("submitted", assignment, student)
        there = sha256(notebook.read_bytes()) if notebook.is_file() else None
        stamp = deadlines.read_timestamp(course, student, assignment) if there else None
        when = stamp.replace(tzinfo=UTC).timestamp() if stamp else None
        if there == chosen.sha256 and _same(chosen.submitted_at, when):
            continue
        if notebook.parent.exists():
            shutil.rmtree(notebook.parent)
        notebook.parent.mkdir(parents=True)
        shutil.copyfile(store.blob(chosen), notebook)
        if chosen.submitted_at is not None:  # no time recorded, no timestamp.txt: no penalty
            moment = datetime.fromtimestamp(chosen.submitted_at, UTC)
            deadlines.write_timestamp(course, student, assignment, moment)
        changed.append((chosen, there))
    return changed


def _same(a: float | None, b: float | None) -> bool:
    return (a is None) == (b is None) and (a is None or abs(a - b) < 1)


def find(store: Store, student: str, assignment: str, prefix: str) -> Kept:
    """The kept file of this notebook whose hash starts with `prefix`."""
    kept = store.files.get((student, assignment), {})
    hits = [k for digest, k in kept.items() if digest.startswith(prefix.lower())]
    if len(hits) != 1:
        which, verb = (f"{len(hits)} kept files", "have") if hits else ("no kept file", "has")
        raise GradingError(
            f"{which} of {student} / {assignment} {verb} a hash starting with {prefix!r}; "
            f"`python -m grader collect-pin {student} {assignment}` lists them"
        )
    if hits[0].wrong:
        raise GradingError(
            f"{hits[0].short} is {hits[0].wrong}, handed in for {assignment}: it cannot count "
            f"for {assignment}"
        )
    return hits[0]


def whose(store: Store, student: str, assignment: str) -> tuple[str, str]:
    """The (student, notebook) the store knows, the student's case aside."""
    for pair in sorted(store.files):
        if pair[1] != assignment or pair[0].casefold() != student.casefold():
            continue
        if store.countable(*pair):
            return pair
        wrong = store.wrong()[pair]
        raise GradingError(
            f"{pair[0]} / {assignment}: only {wrong.wrong} was handed in for it (kept as "
            f"{wrong.short}), which cannot count for {assignment}; collect the right file with "
            f"--student {pair[0]} --notebook {assignment}"
        )
    raise GradingError(f"nothing of {student} / {assignment} was ever collected")


def checker(course: Course):
    """`broken(raw, assignment)`: why preflight would quarantine the file, "" if it would not."""
    releases = {}

    def broken(raw: bytes, assignment: str) -> str:
        if not raw.strip():  # JSON's "Expecting value" would name no cause
            return f"the file is empty ({len(raw)} bytes{', all blank' if raw else ''}) [{EMPTY}]"
        if assignment not in releases:
            releases[assignment] = course.layout.release_notebook(assignment)
        return preflight.preflight(raw, releases[assignment]).quarantined or ""

    return broken


def listing(store: Store, student: str, assignment: str) -> str:
    """Every kept file of one student's notebook, oldest first, and which counts."""
    zone = store.course.term.zone
    chosen, why = store.choice(student, assignment)
    lines = ["| kept as | handed in | time from | came from | collected | can be graded | counts |"]
    lines.append("|---|---|---|---|---|---|---|")
    files = store.files[student, assignment].values()
    for kept in sorted(files, key=lambda k: (k.submitted_at or 0, k.order or 0, k.collected_at)):
        when = term_log.shown(kept.submitted_at, zone) if kept.submitted_at is not None else "–"
        lines.append(
            f"| {kept.short} | {when} | {_time_from(kept)} "
            f"| {_came_from(kept)} | {term_log.shown(kept.collected_at, zone)} "
            f"| {_gradable(kept)} "
            f"| {'yes (' + why + ')' if kept is chosen else ''} |"
        )
    return "\n".join(lines) + "\n"


def _gradable(kept: Kept) -> str:
    """'yes', or why not: 'no: it is 02_causal_mask', 'no: not valid notebook JSON ...'."""
    if kept.wrong:
        return f"no: it is {kept.wrong}"
    return f"no: {kept.broken}" if kept.broken else "yes"


def _time_from(kept: Kept) -> str:
    """'given', or 'none (Canvas: LATE)' where the LMS only marks it."""
    mark = {True: " (Canvas: LATE)", False: " (Canvas: not late)"}.get(kept.lms_late, "")
    return kept.time_from + (mark if kept.submitted_at is None else "")


def _came_from(kept: Kept) -> str:
    """'canvas.zip: alice_01_attention.ipynb', or the file's name where it came alone."""
    batch = Path(kept.batch).name
    return kept.source if batch == kept.source else f"{batch}: {kept.source}"


def pin_command(course: Course, student: str, assignment: str, prefix: str | None, unpin: bool):
    """`collect-pin`: pin a kept file (or unpin), or list the kept files; the terminal's text."""
    store = Store(course)
    adopt(store, checker(course))
    student, assignment = whose(store, student, assignment)
    if not unpin and not prefix:
        return listing(store, student, assignment)
    store.pin(
        student, assignment, None if unpin else find(store, student, assignment, prefix).sha256
    )
    changed = materialize(store)
    chosen, why = store.choice(student, assignment)
    zone = course.term.zone
    said = (
        f"{student} / {assignment}: {chosen.short} counts ({why}), handed in "
        f"{handed_in(chosen, zone)}"
    )
    said += "; submitted/ holds it now" if changed else "; submitted/ held it already"
    body = f"{said}\n\n{listing(store, student, assignment)}"
    log = term_log.append(course, f"collect-pin {student} {assignment}" + " --unpin" * unpin, body)
    return f"{body}\nthe term's log: {log}"
