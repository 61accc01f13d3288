"""Collect keeps every file and chooses by a stated rule: the same zip again changes nothing, a
broken or older file never replaces the one that counts, an emailed fix counts from the time
the instructor gives, a pin chooses, and every step is in the term's log with the course's
times. No grading here (no sandbox needed): what is asserted is what the instructor sees, the
file in submitted/, its timestamp.txt, the line printed, the log's row."""

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
from grader.term import collect, collected
from maintainer.fabricated_class import fabricate, perfect

NAME = "01_attention"
ROSTER = "id,first_name,last_name,email,lms_user_id\nalice,Alice,Archer,,111\nbob,Bob,Stone,,\n"
COURSE_TOML = """timezone = "Europe/Berlin"

[due]
01_attention = 2027-01-15T23:59:00+01:00
"""
CORRUPT = b'{"cells": [ truncated by the download'
EARLY, LATE = (2027, 1, 15, 18, 0, 0), (2027, 1, 16, 12, 0, 0)  # in Berlin: CET, UTC+1


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


def canvas_zip(path: Path, entries: list[tuple[str, tuple, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, when, raw in entries:
            archive.writestr(zipfile.ZipInfo(name, date_time=when), raw)
    return path


def submitted(course: Path, student: str = "alice") -> tuple[bytes, str]:
    folder = course / "submitted" / student / NAME
    return (folder / f"{NAME}.ipynb").read_bytes(), (folder / "timestamp.txt").read_text().strip()


def log_sections(course: Path) -> list[str]:
    return (course / "reports" / "term_log.md").read_text().split("\n## ")[1:]


ALICE = "archeralice_111_9001_01_attention.ipynb"


def test_the_same_zip_again_changes_nothing_and_says_so(course, tmp_path):
    batch = canvas_zip(tmp_path / "canvas.zip", [(ALICE, EARLY, good(course))])
    first = collect.collect(batch, course)
    before = submitted(course), (course / "collected" / "index.jsonl").read_text()
    again = collect.collect(batch, course)
    assert [f.status for f in first] == ["counts"] and [f.status for f in again] == ["unchanged"]
    assert again.summary.startswith("collect canvas.zip: 1 file, nothing changed: unchanged 1\n")
    assert (submitted(course), (course / "collected" / "index.jsonl").read_text()) == before
    sections = log_sections(course)
    assert len(sections) == 2 and "1 file, nothing changed" in sections[1]
    assert f"| {ALICE} | alice | {NAME} | 2027-01-15 18:00 CET (zip entry) |" in sections[1]


def test_the_same_folder_again_changes_nothing(course, tmp_path):
    folder = tmp_path / "downloads"
    (folder / "bob").mkdir(parents=True)
    (folder / "bob" / f"{NAME}.ipynb").write_bytes(good(course))
    os.utime(folder / "bob" / f"{NAME}.ipynb", ns=(0, 1_800_000_000_123_456_789))  # sub-second
    assert [f.status for f in collect.collect(folder, course)] == ["counts"]
    again = collect.collect(folder, course)
    assert again.summary.startswith("collect downloads: 1 file, nothing changed: unchanged 1\n")


def test_a_broken_file_never_replaces_one_that_can_be_graded(course, tmp_path):
    collect.collect(canvas_zip(tmp_path / "a.zip", [(ALICE, EARLY, good(course))]), course)
    kept = submitted(course)
    newer = "archeralice_111_9002_01_attention-1.ipynb"
    (item,) = collect.collect(canvas_zip(tmp_path / "b.zip", [(newer, LATE, CORRUPT)]), course)
    assert item.status == "refused"
    assert submitted(course) == kept
    assert (course / "collected" / f"{item.sha256}.ipynb").read_bytes() == CORRUPT  # kept
    assert item.note.startswith("refused: it cannot be graded (not valid notebook JSON")
    # Collected again, it changes nothing, and the note says which file counts.
    (again,) = collect.collect(canvas_zip(tmp_path / "c.zip", [(newer, LATE, CORRUPT)]), course)
    stays = collected.sha256(kept[0])[:12]
    assert again.status == "unchanged" and submitted(course) == kept
    assert again.note.endswith(f"{stays}, handed in 2027-01-15 18:00 CET (zip entry), counts")


def test_the_refusal_is_one_printed_line_that_says_why(course, tmp_path, capsys):
    collect.collect(canvas_zip(tmp_path / "a.zip", [(ALICE, EARLY, good(course))]), course)
    stays = collected.sha256(good(course))[:12]
    newer = "archeralice_111_9002_01_attention-1.ipynb"
    canvas_zip(tmp_path / "b.zip", [(newer, LATE, CORRUPT)])
    main(["--course", str(course), "collect", str(tmp_path / "b.zip")])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "collect b.zip: 1 file: refused 1"
    assert out[1].startswith(f"refused: {newer} (alice / {NAME}): it cannot be graded (not valid")
    assert f"the file that counts stays {stays}, handed in 2027-01-15 18:00 CET" in out[1]
    assert len(out) == 4  # the summary, the refusal, nobody missing, where the table is


def test_an_older_file_is_kept_and_refused(course, tmp_path):
    newer = canvas_zip(tmp_path / "new.zip", [(ALICE, LATE, good(course, "second"))])
    collect.collect(newer, course)
    older = canvas_zip(tmp_path / "old.zip", [(ALICE, EARLY, good(course, "first"))])
    (item,) = collect.collect(older, course)
    stays = collected.sha256(good(course, "second"))[:12]
    assert item.status == "refused"
    assert item.note.startswith(
        f"refused: older than the file that counts, {stays}, handed in 2027-01-16 12:00 CET"
    )
    assert submitted(course) == (good(course, "second"), "2027-01-16 11:00:00.000000 UTC")


def test_the_order_of_collects_does_not_matter(released, tmp_path):
    batches = {
        "old": [(ALICE, EARLY, good(released, "first"))],
        "new": [(ALICE, LATE, good(released, "second"))],
        "broken": [(ALICE, (2027, 1, 17, 9, 0, 0), CORRUPT)],
    }
    results = []
    for order in (["old", "new", "broken"], ["broken", "new", "old"], ["new", "old", "broken"]):
        course = Path(shutil.copytree(released, tmp_path / "-".join(order)))
        (course / "roster.csv").write_text(ROSTER)
        for name in order:
            collect.collect(canvas_zip(tmp_path / f"{name}.zip", batches[name]), course)
        results.append(submitted(course))
    assert results == [(good(released, "second"), "2027-01-16 12:00:00.000000 UTC")] * 3


def test_an_emailed_fix_counts_from_the_time_given(course, tmp_path):
    corrupt = canvas_zip(tmp_path / "canvas.zip", [(ALICE, EARLY, CORRUPT)])
    collect.collect(corrupt, course)
    assert submitted(course)[0] == CORRUPT  # nothing else: graded, so that it is quarantined
    fix = tmp_path / "attachment.ipynb"
    fix.write_bytes(good(course))
    (item,) = collect.collect(fix, course, student="Alice", submitted_at="2027-01-15T18:00")
    assert (item.student, item.status, item.time_from) == ("alice", "counts", "given")
    assert submitted(course) == (good(course), "2027-01-15 17:00:00.000000 UTC")
    assert (
        f"| attachment.ipynb | alice | {NAME} | 2027-01-15 18:00 CET (given) |"
        in (course / "reports" / "collect.md").read_text()
    )
    (again,) = collect.collect(corrupt, course)
    assert again.status == "unchanged"
    assert submitted(course) == (good(course), "2027-01-15 17:00:00.000000 UTC")
    listing = collected.pin_command(course, "alice", NAME, None, False)
    assert "| given | attachment.ipynb |" in listing
    assert "| no: not valid notebook JSON" in listing


def test_the_instructors_time_and_student_are_checked(course, tmp_path):
    fix = tmp_path / "attachment.ipynb"
    fix.write_bytes(good(course))
    with pytest.raises(GradingError, match="--submitted-at '3 Oct' is not a date and time"):
        collect.collect(fix, course, student="alice", submitted_at="3 Oct")
    with pytest.raises(GradingError, match="--student mallory: not on the roster"):
        collect.collect(fix, course, student="mallory")
    assert not (course / "collected").exists()


def test_a_pin_chooses_and_unpinning_returns_to_the_rule(course, tmp_path):
    collect.collect(canvas_zip(tmp_path / "a.zip", [(ALICE, EARLY, good(course, "first"))]), course)
    collect.collect(canvas_zip(tmp_path / "b.zip", [(ALICE, LATE, good(course, "second"))]), course)
    first = collected.sha256(good(course, "first"))
    said = collected.pin_command(course, "alice", NAME, first[:8], False)
    assert said.startswith(f"alice / {NAME}: {first[:12]} counts (pinned with collect-pin)")
    assert submitted(course) == (good(course, "first"), "2027-01-15 17:00:00.000000 UTC")
    third = canvas_zip(tmp_path / "c.zip", [(ALICE, (2027, 1, 17, 9, 0, 0), good(course, "3"))])
    (item,) = collect.collect(third, course)
    assert item.note.startswith(f"refused: {first[:12]} is pinned with collect-pin")
    assert submitted(course)[0] == good(course, "first")
    collected.pin_command(course, "alice", NAME, None, True)
    assert submitted(course)[0] == good(course, "3")
    steps = [section.split("\n")[0].split(" · ")[1] for section in log_sections(course)]
    pin, unpin = f"collect-pin alice {NAME}", f"collect-pin alice {NAME} --unpin"
    assert steps[2:] == [pin, f"collect {third}", unpin]
    with pytest.raises(GradingError, match="no kept file of alice / 01_attention has a hash"):
        collected.pin_command(course, "alice", NAME, "zzzz", False)


def test_a_file_or_time_put_in_submitted_by_hand_is_kept(course, tmp_path):
    """The old way of taking an emailed fix: copy it into submitted/, edit timestamp.txt."""
    folder = course / "submitted" / "alice" / NAME
    folder.mkdir(parents=True)
    (folder / f"{NAME}.ipynb").write_bytes(good(course, "by hand"))
    (folder / "timestamp.txt").write_text("2027-01-15 22:00:00.000000 UTC\n")
    zipped = canvas_zip(tmp_path / "canvas.zip", [(ALICE, EARLY, CORRUPT)])
    found = collect.collect(zipped, course)
    assert found[0].status == "refused"
    assert submitted(course) == (good(course, "by hand"), "2027-01-15 22:00:00.000000 UTC")
    assert f"recorded from submitted/alice/{NAME}/{NAME}.ipynb" in found.summary
    (folder / "timestamp.txt").write_text("2027-01-15 21:00:00.000000 UTC\n")  # edited
    assert collect.collect(zipped, course)[0].status == "unchanged"
    assert submitted(course) == (good(course, "by hand"), "2027-01-15 21:00:00.000000 UTC")


def test_handed_in_nothing_counts_every_collect(course, tmp_path):
    (course / "roster.csv").write_text(ROSTER + "carol,Carol,Reed,,\n")
    collect.collect(canvas_zip(tmp_path / "a.zip", [(ALICE, EARLY, good(course))]), course)
    one = canvas_zip(tmp_path / "b.zip", [("stonebob_222_9009_04_training.ipynb", LATE, b"{}")])
    printed = collect.collect(one, course).summary
    assert "on the roster, nothing handed in at all: 1 (carol)" in printed  # not alice
    report = (course / "reports" / "collect.md").read_text()
    assert "- any notebook (1): carol" in report
    assert f"- {NAME} (2): bob, carol" in report and "- 04_training (2): alice, carol" in report


def test_times_are_the_course_zones_and_say_where_they_come_from(course, tmp_path):
    # A zip with Info-ZIP's UTC "extended timestamp": 23:30 UTC is 00:30 CET, 31 min late.
    moment = datetime(2027, 1, 15, 23, 30, tzinfo=UTC)
    info = zipfile.ZipInfo("bob_01_attention.ipynb", date_time=(1999, 1, 1, 0, 0, 0))
    info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(moment.timestamp()))
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as archive:
        archive.writestr(info, good(course))
    collect.collect(tmp_path / "z.zip", course)
    row = "2027-01-16 00:30 CET (zip entry), 31 min late (due 2027-01-15 23:59 CET)"
    assert row in (course / "reports" / "collect.md").read_text()
    assert row in log_sections(course)[-1]
    assert log_sections(course)[-1].startswith(datetime.now().strftime("%Y-%m-"))


def test_a_long_batch_prints_a_short_summary(course, tmp_path):
    strangers = [(f"x{i}_9{i}_1{i}_01_attention.ipynb", EARLY, b"{}") for i in range(15)]
    printed = collect.collect(canvas_zip(tmp_path / "many.zip", strangers), course).summary
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
    (item,) = collect.collect(folder, course)
    assert item.student == "ann-copy"
    assert (course / "submitted" / "ann-copy" / NAME / f"{NAME}.ipynb").is_file()


def test_the_fabricated_class_is_sorted_and_what_is_skipped_says_why(released, tmp_path):
    """The downloads test_grading.py grades: Colab's copy names, a zip per student with two
    versions, a stray file and a notebook nobody's."""
    course = Path(shutil.copytree(released, tmp_path / "course"))
    downloads = tmp_path / "downloads"
    fabricate(course, downloads)
    notes = {f.source: f for f in collect.collect(downloads, course)}
    assert notes["colab_Copy of 01_attention (1).ipynb"].student == "colab"
    assert "renamed" in notes["colab_Copy of 01_attention (1).ipynb"].note
    assert (course / "submitted" / "colab" / NAME / f"{NAME}.ipynb").is_file()
    assert notes["erin/01_attention (2).ipynb"].student == "erin"
    assert "newer copy" in notes["erin/01_attention.ipynb"].note
    assert notes["notes.txt"].note.startswith("skipped: not a notebook")
    assert notes["01_attention.ipynb"].note.startswith("skipped: no student id")
