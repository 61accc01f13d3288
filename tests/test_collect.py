"""Collect keeps every file and chooses by a stated rule: the same zip again changes nothing, a
broken or earlier upload never replaces the one that counts, an emailed fix counts from the time
the instructor gives, a pin chooses, and every step is in the term's log with the course's
times. The LMS zips are built as the LMSs build them (maintainer/fabricated_class.py): a Canvas
zip's entries all carry the moment it was built, so a hand-in time comes only from a source
that records one (--submitted-at, Canvas's own times with --times, a course whose downloads are
stamped), Canvas's LATE mark is kept, and the newer upload is the one with the larger
attachment id. No grading here (no sandbox needed): what is asserted is what the instructor
sees, the file in submitted/, its timestamp.txt, the line printed, the log's row."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.__main__ import main
from grader.course import GradingError
from grader.engine import preflight
from grader.term import collect, collected
from grader.term.course_open import Course
from maintainer.fabricated_class import (
    canvas_name,
    canvas_zip,
    fabricate,
    moodle_name,
    moodle_zip,
    perfect,
)

NAME = "01_attention"
ROSTER = "id,first_name,last_name,email,lms_user_id\nalice,Alice,Archer,,111\nbob,Bob,Stone,,\n"
COURSE_TOML = """timezone = "Europe/Berlin"

[due]
01_attention = 2027-01-15T23:59:00+01:00
"""
CORRUPT = b'{"cells": [ truncated by the download'
# When Canvas built each zip (its server's local time; this machine's here): after the due date,
# so that a collect reading entry times as hand-in times would make everyone late.
BUILT = datetime(2027, 1, 25, 9, 0)


@pytest.fixture
def course(released, tmp_path) -> Path:
    course = Path(shutil.copytree(released, tmp_path / "course"))
    (course / "course.toml").write_text(COURSE_TOML)
    (course / "roster.csv").write_text(ROSTER)
    return course


def good(course: Path, mark: str = "") -> bytes:
    """A solved notebook; `mark` makes another file of the same notebook (another hash)."""
    nb = perfect(course, NAME)
    nb["metadata"]["mark"] = mark
    return json.dumps(nb).encode()


def canvas(path: Path, *files: tuple[str, bytes]) -> Path:
    return canvas_zip(path, list(files), BUILT)


def submitted(course: Path, student: str = "alice") -> tuple[bytes, str | None]:
    """The file that counts, and its timestamp.txt (None: no time recorded, no penalty)."""
    folder = course / "submitted" / student / NAME
    stamp = folder / "timestamp.txt"
    text = stamp.read_text().strip() if stamp.is_file() else None
    return (folder / f"{NAME}.ipynb").read_bytes(), text


def log_sections(course: Path) -> list[str]:
    return (course / "reports" / "term_log.md").read_text().split("\n## ")[1:]


def rows(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in `text` (a report, a listing), by column."""
    table = [line for line in text.splitlines() if line.startswith("| ")]
    head, *body = ([cell.strip() for cell in line.strip("|").split(" | ")] for line in table)
    return [dict(zip(head, row, strict=True)) for row in body]


# Alice's uploads, in Canvas's order: each upload a new attachment id, a repeated name "-1".
ALICE, ALICE2, ALICE3 = (
    canvas_name("Archer, Alice", 111, 9000 + n, f"{NAME}{tail}.ipynb")
    for n, tail in ((1, ""), (2, "-1"), (3, "-2"))
)
BOB_LATE = canvas_name("Stone, Bob", 222, 9005, f"{NAME}.ipynb", late=True)
NOT_RECORDED = "at a time not recorded (Canvas: not late)"


def test_the_same_zip_again_changes_nothing_and_says_so(course, tmp_path):
    batch = canvas(tmp_path / "canvas.zip", (ALICE, good(course)))
    first = collect.collect(Course.open(course), batch)
    before = submitted(course), (course / "collected" / "index.jsonl").read_text()
    again = collect.collect(Course.open(course), batch)
    assert [f.status for f in first] == ["counts"] and [f.status for f in again] == ["unchanged"]
    assert again.summary.startswith("collect canvas.zip: 1 file, nothing changed: unchanged 1\n")
    assert (submitted(course), (course / "collected" / "index.jsonl").read_text()) == before
    sections = log_sections(course)
    assert len(sections) == 2 and again.summary.splitlines()[0].partition(": ")[2] in sections[1]
    assert f"| {ALICE} | alice | {NAME} | {NOT_RECORDED} |" in sections[1]


def test_the_same_folder_again_changes_nothing(course, tmp_path):
    folder = tmp_path / "downloads"
    (folder / "bob").mkdir(parents=True)
    (folder / "bob" / f"{NAME}.ipynb").write_bytes(good(course))
    os.utime(folder / "bob" / f"{NAME}.ipynb", ns=(0, 1_800_000_000_123_456_789))  # sub-second
    assert [f.status for f in collect.collect(Course.open(course), folder)] == ["counts"]
    index = (course / "collected" / "index.jsonl").read_text()
    again = collect.collect(Course.open(course), folder)
    assert [f.status for f in again] == ["unchanged"]
    assert (course / "collected" / "index.jsonl").read_text() == index


def test_a_broken_file_never_replaces_one_that_can_be_graded(course, tmp_path):
    collect.collect(Course.open(course), canvas(tmp_path / "a.zip", (ALICE, good(course))))
    kept = submitted(course)
    (item,) = collect.collect(Course.open(course), canvas(tmp_path / "b.zip", (ALICE2, CORRUPT)))
    assert item.status == "refused"
    assert submitted(course) == kept
    assert (course / "collected" / f"{item.sha256}.ipynb").read_bytes() == CORRUPT  # kept
    assert item.note.startswith("refused: it cannot be graded (not valid notebook JSON")
    # Collected again, it changes nothing, and the note says which file counts.
    (again,) = collect.collect(Course.open(course), canvas(tmp_path / "c.zip", (ALICE2, CORRUPT)))
    stays = collected.sha256(kept[0])[:12]
    assert again.status == "unchanged" and submitted(course) == kept
    assert again.note.endswith(f"{stays}, handed in {NOT_RECORDED}, counts")


def test_the_refusal_is_one_printed_line_that_says_why(course, tmp_path, capsys):
    collect.collect(Course.open(course), canvas(tmp_path / "a.zip", (ALICE, good(course))))
    stays = collected.sha256(good(course))[:12]
    canvas(tmp_path / "b.zip", (ALICE2, CORRUPT))
    main(["--course", str(course), "collect", str(tmp_path / "b.zip")])
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f": {collect.FileStatus.REFUSED} 1")
    assert out[1].startswith("hand-in times: ")
    # The note's words: test_a_broken_file_never_replaces_one_that_can_be_graded.
    assert out[2].startswith(f"refused: {ALICE2} (alice / {NAME}): ") and stays in out[2]
    assert len(out) == 5  # summary, times, the refusal, nobody missing, where the table is


def test_an_earlier_upload_is_kept_and_refused(course, tmp_path):
    # The later download, collected first; the earlier one, built later still, comes after.
    newer = canvas(tmp_path / "new.zip", (ALICE2, good(course, "second")))
    collect.collect(Course.open(course), newer)
    older = canvas_zip(tmp_path / "old.zip", [(ALICE, good(course, "first"))], datetime.now())
    (item,) = collect.collect(Course.open(course), older)
    stays = collected.sha256(good(course, "second"))[:12]
    assert item.status == "refused"
    assert item.note == (
        f"refused: an earlier upload than the file that counts, {stays} (Canvas's attachment "
        "9001, before 9002)"
    )
    assert submitted(course) == (good(course, "second"), None)


def test_the_newer_upload_wins_by_attachment_id_not_by_equal_times(course, tmp_path):
    """One zip, two uploads of one notebook, every entry the same time: Canvas's order decides,
    whatever order the entries come in and whichever hash is larger."""
    for n, files in enumerate(
        [
            [(ALICE2, good(course, "second")), (ALICE, good(course, "first"))],
            [(ALICE, good(course, "second")), (ALICE2, good(course, "first"))],
        ]
    ):
        copy = Path(shutil.copytree(course, course.parent / f"copy{n}"))
        found = {
            f.source: f
            for f in collect.collect(Course.open(copy), canvas(tmp_path / f"{n}.zip", *files))
        }
        newest = dict(files)[ALICE2]
        assert submitted(copy)[0] == newest
        assert found[ALICE].note == f"refused: {ALICE2!r} is a newer copy of the same notebook"


def test_the_order_of_collects_does_not_matter(released, tmp_path):
    batches = {
        "old": [(ALICE, good(released, "first"))],
        "new": [(ALICE2, good(released, "second"))],
        "broken": [(ALICE3, CORRUPT)],
    }
    results = []
    for order in (["old", "new", "broken"], ["broken", "new", "old"], ["new", "old", "broken"]):
        course = Path(shutil.copytree(released, tmp_path / "-".join(order)))
        (course / "roster.csv").write_text(ROSTER)
        for name in order:
            collect.collect(
                Course.open(course), canvas_zip(tmp_path / f"{name}.zip", batches[name], BUILT)
            )
        results.append(submitted(course))
    assert results == [(good(released, "second"), None)] * 3


def test_an_emailed_fix_counts_from_the_time_given(course, tmp_path):
    corrupt = canvas(tmp_path / "canvas.zip", (ALICE, CORRUPT))
    batch = collect.collect(Course.open(course), corrupt)
    (broken,) = batch
    assert submitted(course)[0] == CORRUPT  # nothing else: graded, so that it is quarantined
    # What collect knows, it says: not "counts", and what to do.
    assert broken.status == collect.FileStatus.BROKEN
    why = collected.Store(Course.open(course)).known("alice", NAME, broken.sha256).broken
    assert why == preflight.read_notebook(CORRUPT)[1]  # preflight's reason, kept with the file
    assert batch.summary.splitlines()[0].endswith(f": {broken.status} 1")
    assert batch.summary.splitlines()[2].startswith(
        f"{broken.status}: {ALICE} (alice / {NAME}): {why}"
    )
    assert broken.note.endswith(
        "it stands in submitted/ so that autograde reports it, never as a 0; ask for a good "
        "copy and collect it with --student alice --submitted-at TIME"
    )
    fix = tmp_path / "attachment.ipynb"
    fix.write_bytes(good(course))
    (item,) = collect.collect(
        Course.open(course), fix, student="Alice", submitted_at="2027-01-15T18:00"
    )
    assert (item.student, item.status, item.time_from) == ("alice", "counts", "given")
    assert submitted(course) == (good(course), "2027-01-15 17:00:00.000000 UTC")
    (row,) = rows((course / "reports" / "collect.md").read_text())
    assert (row["file"], row["student"], row["handed in"]) == (
        "attachment.ipynb",
        "alice",
        collected.handed_in(item, Course.open(course).term.zone),
    )
    (again,) = collect.collect(Course.open(course), corrupt)
    assert again.status == "unchanged"
    assert submitted(course) == (good(course), "2027-01-15 17:00:00.000000 UTC")
    listing = rows(collected.pin_command(Course.open(course), "alice", NAME, None, False))
    assert [(r["kept as"], r["can be graded"]) for r in listing] == [
        (broken.sha256[:12], f"no: {why}"),
        (item.sha256[:12], "yes"),
    ]
    assert (listing[1]["time from"], listing[1]["came from"]) == ("given", "attachment.ipynb")


def test_the_instructors_time_and_student_are_checked(course, tmp_path):
    fix = tmp_path / "attachment.ipynb"
    fix.write_bytes(good(course))
    with pytest.raises(GradingError, match="--submitted-at '3 Oct' is not a date and time"):
        collect.collect(Course.open(course), fix, student="alice", submitted_at="3 Oct")
    with pytest.raises(GradingError, match="--student mallory: 'mallory' is not on the roster"):
        collect.collect(Course.open(course), fix, student="mallory")
    assert not (course / "collected").exists()


def test_student_takes_a_login_or_an_email(course, tmp_path):
    """The roster from Canvas's export has SIS ids for ids; the instructor types a login."""
    (course / "roster.csv").write_text(
        "id,first_name,last_name,email,lms_user_id,sis_user_id,sis_login_id,section\n"
        "S001,Alice,Archer,alice@example.edu,111,S001,aarcher,Lab A\n"
        "S002,Bob,Stone,bob@example.edu,222,S002,bstone,Lab A\n"
    )
    fix = tmp_path / "attachment.ipynb"
    for n, typed in enumerate(["aarcher", "AARCHER", "alice@example.edu", "archeralice", "S001"]):
        fix.write_bytes(good(course, str(n)))
        (item,) = collect.collect(
            Course.open(course), fix, student=typed, submitted_at="2027-01-15T18:00"
        )
        assert item.student == "S001", typed
    with pytest.raises(GradingError, match="--student stone: 'stone' is not on the roster"):
        collect.collect(Course.open(course), fix, student="stone")


def test_a_pin_chooses_and_unpinning_returns_to_the_rule(course, tmp_path):
    collect.collect(Course.open(course), canvas(tmp_path / "a.zip", (ALICE, good(course, "first"))))
    collect.collect(
        Course.open(course), canvas(tmp_path / "b.zip", (ALICE2, good(course, "second")))
    )
    first = collected.sha256(good(course, "first"))
    said = collected.pin_command(Course.open(course), "alice", NAME, first[:8], False)
    assert said.startswith(f"alice / {NAME}: {first[:12]} counts (pinned with collect-pin)")
    assert collected.Store(Course.open(course)).choice("alice", NAME)[1] == collected.PINNED
    assert submitted(course) == (good(course, "first"), None)
    third = canvas(tmp_path / "c.zip", (ALICE3, good(course, "3")))
    (item,) = collect.collect(Course.open(course), third)
    assert item.note.startswith(f"refused: {first[:12]} is pinned with collect-pin")
    assert submitted(course)[0] == good(course, "first")
    collected.pin_command(Course.open(course), "alice", NAME, None, True)
    assert submitted(course)[0] == good(course, "3")
    steps = [section.split("\n")[0].split(" · ")[1] for section in log_sections(course)]
    pin, unpin = f"collect-pin alice {NAME}", f"collect-pin alice {NAME} --unpin"
    assert steps[2:] == [pin, f"collect {third}", unpin]
    with pytest.raises(GradingError, match="no kept file of alice / 01_attention has a hash"):
        collected.pin_command(Course.open(course), "alice", NAME, "zzzz", False)


def test_a_file_or_time_put_in_submitted_by_hand_is_kept(course, tmp_path):
    """The old way of taking an emailed fix: copy it into submitted/, edit timestamp.txt."""
    folder = course / "submitted" / "alice" / NAME
    folder.mkdir(parents=True)
    (folder / f"{NAME}.ipynb").write_bytes(good(course, "by hand"))
    (folder / "timestamp.txt").write_text("2027-01-15 22:00:00.000000 UTC\n")
    zipped = canvas(tmp_path / "canvas.zip", (ALICE, CORRUPT))
    found = collect.collect(Course.open(course), zipped)
    assert found[0].status == "refused"
    assert submitted(course) == (good(course, "by hand"), "2027-01-15 22:00:00.000000 UTC")
    assert f"recorded from submitted/alice/{NAME}/{NAME}.ipynb" in found.summary
    (folder / "timestamp.txt").write_text("2027-01-15 21:00:00.000000 UTC\n")  # edited
    assert collect.collect(Course.open(course), zipped)[0].status == "unchanged"
    assert submitted(course) == (good(course, "by hand"), "2027-01-15 21:00:00.000000 UTC")


def test_handed_in_nothing_counts_every_collect(course, tmp_path):
    (course / "roster.csv").write_text(ROSTER + "carol,Carol,Reed,,\n")
    collect.collect(Course.open(course), canvas(tmp_path / "a.zip", (ALICE, good(course))))
    one = canvas(tmp_path / "b.zip", ("stonebob_222_9009_04_training.ipynb", b"{}"))
    printed = collect.collect(Course.open(course), one).summary
    assert "on the roster, nothing handed in at all: 1 (carol)" in printed  # not alice
    missing = {"": ["carol"], NAME: ["bob", "carol"], "04_training": ["alice", "carol"]}
    assert collect.missing(Course.open(course)) == missing
    report = (course / "reports" / "collect.md").read_text()
    assert "\n- any notebook (1): carol\n" in report
    assert f"- {NAME} (2): bob, carol" in report


def test_a_stamped_course_takes_entry_times_in_its_zone(course, tmp_path):
    # A zip with Info-ZIP's UTC "extended timestamp": 23:30 UTC is 00:30 CET, 31 min late.
    moment = datetime(2027, 1, 15, 23, 30, tzinfo=UTC)
    info = zipfile.ZipInfo("bob_01_attention.ipynb", date_time=(1999, 1, 1, 0, 0, 0))
    info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(moment.timestamp()))
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as archive:
        archive.writestr(info, good(course))
    # Unless the course says its downloads are stamped, an entry's time is no hand-in time.
    found = collect.collect(Course.open(course), tmp_path / "z.zip")
    assert [(f.status, f.time_from) for f in found] == [("counts", "none")]
    printed = found.summary.splitlines()
    assert printed[1] == "hand-in times: none recorded 1 (no penalty here; see [collect] stamped)"
    (row,) = rows(log_sections(course)[-1])
    assert (row["student"], row["handed in"]) == ("bob", collected.handed_in(found[0], None))
    assert submitted(course, "bob")[1] is None
    (course / "course.toml").write_text(COURSE_TOML + "\n[collect]\nstamped = true\n")
    found = collect.collect(Course.open(course), tmp_path / "z.zip")
    assert [(f.status, f.time_from) for f in found] == [("counts", "zip entry")]
    row = "2027-01-16 00:30 CET (zip entry), 31 min late (due 2027-01-15 23:59 CET)"
    assert row in (course / "reports" / "collect.md").read_text()
    assert row in log_sections(course)[-1]
    assert log_sections(course)[-1].startswith(datetime.now().strftime("%Y-%m-"))
    assert submitted(course, "bob")[1] == "2027-01-15 23:30:00.000000 UTC"


def test_a_long_batch_prints_a_short_summary(course, tmp_path):
    strangers = [(f"x{i}_9{i}_1{i}_01_attention.ipynb", b"{}") for i in range(15)]
    printed = collect.collect(
        Course.open(course), canvas(tmp_path / "many.zip", *strangers)
    ).summary
    assert printed.count("\nskipped: ") == collect.SHOWN + 1
    assert "\nskipped: 5 more in the report\n" in printed
    assert (course / "reports" / "collect.md").read_text().count("| skipped |") == 15


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("ann-copy-01_attention", ("01_attention", "ann-copy")),
        ("ann-copy 01_attention", ("01_attention", "ann-copy")),
        ("ann-copy_Copy of 01_attention (1)", ("01_attention", "ann-copy")),
        ("ann_copy_01_attention - Copy", ("01_attention", "ann_copy")),
        ("bob_Copy of 01_attention", ("01_attention", "bob")),
    ],
)
def test_only_colabs_own_copy_names_are_cleaned(stem, expected):
    assert collect._name_match(stem, [NAME, "04_training"]) == expected


def test_an_id_with_copy_in_it_keeps_it(course, tmp_path):
    (course / "roster.csv").unlink()
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "ann-copy-01_attention.ipynb").write_bytes(good(course))
    (item,) = collect.collect(Course.open(course), folder)
    assert item.student == "ann-copy"
    assert (course / "submitted" / "ann-copy" / NAME / f"{NAME}.ipynb").is_file()


def test_the_fabricated_class_is_sorted_and_what_is_skipped_says_why(released, tmp_path):
    """The downloads test_grading.py grades: Colab's copy names, a zip per student with two
    versions, a stray file and a notebook nobody's."""
    course = Path(shutil.copytree(released, tmp_path / "course"))
    downloads = tmp_path / "downloads"
    fabricate(course, downloads)
    notes = {f.source: f for f in collect.collect(Course.open(course), downloads)}
    colab = notes[f"colab_Copy of {NAME} (1).ipynb"]
    assert (colab.student, colab.note) == ("colab", "a copy's name, filed as 01_attention.ipynb")
    assert notes["perfect/02_causal_mask.ipynb"].note == ""  # its own name: nothing to say
    assert (course / "submitted" / "colab" / NAME / f"{NAME}.ipynb").is_file()
    assert notes["erin/01_attention (2).ipynb"].student == "erin"
    assert "newer copy" in notes["erin/01_attention.ipynb"].note
    stray = notes["notes.txt"]
    assert (stray.status, stray.codes) == ("skipped", [collect.NOT_A_NOTEBOOK])
    nobody = notes["01_attention.ipynb"]  # no student id in its name
    assert (nobody.status, nobody.student, nobody.assignment) == ("skipped", None, NAME)


def test_a_canvas_zip_as_canvas_builds_it_makes_no_one_late(course, tmp_path):
    """Every entry carries the moment the zip was built, after the due date: none of it is a
    hand-in time. Bob's LATE is Canvas's own mark, kept; no penalty is computed here."""
    (course / "roster.csv").write_text(ROSTER + "carol,Carol,Reed,,333\n")
    batch = canvas(tmp_path / "canvas.zip", (ALICE, good(course)), (BOB_LATE, good(course, "b")))
    found = collect.collect(Course.open(course), batch)
    assert [(f.student, f.status, f.time_from, f.lms_late) for f in found] == [
        ("alice", "counts", "none", False),
        ("bob", "counts", "none", True),
    ]
    assert submitted(course, "alice")[1] is None and submitted(course, "bob")[1] is None
    assert found.summary.splitlines()[1] == (
        "hand-in times: Canvas's files: none recorded 2 (Canvas's zip stamps none; lateness is "
        "Canvas's, 1 marked LATE; give --times for Canvas's own times)"
    )
    table = rows((course / "reports" / "collect.md").read_text())
    zone = Course.open(course).term.zone
    assert [(r["file"], r["handed in"]) for r in table] == [
        (ALICE, NOT_RECORDED),
        (BOB_LATE, collected.handed_in(found[1], zone)),  # Canvas's LATE, and no lateness of ours
    ]
    assert collected.lms_late(Course.open(course), "bob", NAME) is True
    assert collected.lms_late(Course.open(course), "alice", NAME) is False
    assert collected.lms_late(Course.open(course), "carol", NAME) is None
    (kept,) = rows(collected.pin_command(Course.open(course), "bob", NAME, None, False))
    assert (kept["handed in"], kept["time from"], kept["came from"]) == (
        "–",
        "none (Canvas: LATE)",
        f"canvas.zip: {BOB_LATE}",
    )


TIMES = """user_id,assignment_id,submitted_at,attachment_ids
111,7001,2027-01-16T11:00:00Z,9001
222,7001,2027-01-15T20:00:00Z,9004
222,7002,2027-01-15T20:00:00Z,
"""


def test_canvas_s_own_times_come_from_its_submissions_api(course, tmp_path):
    (course / "canvas_assignments.json").write_text('{"01_attention": 7001, "04_training": 7002}')
    (tmp_path / "times.csv").write_text(TIMES)
    # Bob's upload 9005 came after the export of times (which lists 9004): it gets no time.
    batch = canvas(tmp_path / "canvas.zip", (ALICE, good(course)), (BOB_LATE, good(course, "b")))
    main(["--course", str(course), "collect", str(batch), "--times", str(tmp_path / "times.csv")])
    assert submitted(course) == (good(course), "2027-01-16 11:00:00.000000 UTC")
    assert submitted(course, "bob")[1] is None
    table = (course / "reports" / "collect.md").read_text()
    row = "2027-01-16 12:00 CET (LMS times), 12 h 1 min late (due 2027-01-15 23:59 CET)"
    assert f"| {ALICE} | alice | {NAME} | {row} |" in table
    store = collected.Store(Course.open(course))
    assert [store.choice(s, NAME)[0].time_from for s in ("alice", "bob")] == ["LMS times", "none"]
    (tmp_path / "bad.csv").write_text("user_id,submitted_at\n111,2027-01-16T11:00:00Z\n")
    with pytest.raises(GradingError, match="needs the columns user_id, assignment_id"):
        collect.collect(Course.open(course), batch, times=tmp_path / "bad.csv")
    (tmp_path / "bad.csv").write_text("user_id,assignment_id,submitted_at\n111,7009,\n")
    with pytest.raises(GradingError, match="line 2: assignment id '7009' is in no canvas_assi"):
        collect.collect(Course.open(course), batch, times=tmp_path / "bad.csv")


def test_a_zip_of_canvas_s_zips_is_read(course, tmp_path):
    one = canvas(tmp_path / "course-01_attention_submissions.zip", (ALICE, good(course)))
    other = canvas(tmp_path / "course-04_training_submissions.zip", (BOB_LATE, good(course, "b")))
    with zipfile.ZipFile(tmp_path / "all.zip", "w") as archive:
        for inner in (one, other):
            archive.write(inner, f"downloads/{inner.name}")
    found = collect.collect(Course.open(course), tmp_path / "all.zip")
    assert sorted((f.student, f.status) for f in found) == [("alice", "counts"), ("bob", "counts")]
    assert submitted(course, "bob")[0] == good(course, "b")


def test_a_moodle_zip_s_times_are_its_file_pool_s_not_hand_in_times(course, tmp_path):
    """Moodle's entry time is when its file pool first stored the bytes: not recorded as a
    hand-in time, but it still orders two files of one student (the later stored counts)."""
    (course / "roster.csv").write_text(ROSTER)
    first = moodle_name("Alice Archer", 4401, f"{NAME}.ipynb")
    second = moodle_name("Alice Archer", 4401, f"{NAME} (1).ipynb")
    moodle_zip(
        tmp_path / "moodle.zip",
        [
            (second, good(course, "second"), datetime(2027, 1, 16, 9, 0)),
            (first, good(course, "first"), datetime(2027, 1, 16, 8, 0)),
        ],
    )
    found = {f.source: f for f in collect.collect(Course.open(course), tmp_path / "moodle.zip")}
    assert submitted(course) == (good(course, "second"), None)
    assert found[first].status == "refused"  # the note's words: the test above, by attachment
    assert [(f.status, f.time_from, f.submitted_at) for f in found.values()] == [
        ("counts", "none", None),
        ("refused", "none", None),
    ]
