"""The store of every collected file (grader/term/collected.py), called directly: a file kept
once by its hash whatever the arrivals, the time a file keeps (the earliest seen, unless the
instructor gave one), the rule that says which file counts (a pin, else the newest that can be
graded, else the newest; ties to the instructor's time, then to the hash; never another notebook
handed in for it), the index read back as written, and the pin's and the listing's words. No
release, no preflight, no collect: the files are a few bytes, whether each can be graded is said
by the test. Collect end to end (zips, Colab's names, refusals, the order of collects,
collect-pin's command and the term's log) is test_collect.py's."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.course import GradingError
from grader.term import collected
from grader.term.collected import GIVEN, IN_SUBMITTED, Kept, Store
from grader.term.course_open import Course

NB = "01_attention"
EARLY = datetime(2027, 1, 15, 17, 0, tzinfo=UTC)
MIDDLE = datetime(2027, 1, 15, 20, 0, tzinfo=UTC)
LATE = datetime(2027, 1, 16, 12, 0, tzinfo=UTC)
COLLECTED = datetime(2027, 1, 20, 9, 0, tzinfo=UTC)
# Files of a few bytes: the store keeps bytes, it never reads them as notebooks. Their hashes
# start c3aa97.., 0899ee.. and d916c6..; V3's shares "d9" with V11's (d908b7..).
V1, V2, V3, V11 = (b'{"version": %d}' % n for n in (1, 2, 3, 11))
CANVAS = "/downloads/canvas.zip"
BROKEN = "not valid notebook JSON"


def arrival(raw: bytes, when: datetime, time_from: str = "zip entry", broken: str = "") -> Kept:
    """One arrival of alice's notebook, as collect describes it."""
    source = f"archeralice_111_9001_{NB}.ipynb"
    digest = collected.sha256(raw)
    return Kept(
        digest,
        "alice",
        NB,
        when.timestamp(),
        time_from,
        source,
        CANVAS,
        COLLECTED.timestamp(),
        broken,
    )


def kept(store: Store, *files: tuple[bytes, Kept]) -> Store:
    for raw, item in files:
        store.add(raw, item)
    return store


def index_lines(course: Path) -> list[dict]:
    text = (course / "collected" / "index.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def counts(store: Store) -> tuple[str, str]:
    """The hash of the file that counts for alice's notebook, and why."""
    chosen, why = store.choice("alice", NB)
    return chosen.sha256, why


def test_a_file_seen_again_is_one_copy_with_the_earliest_time(tmp_path):
    store = kept(Store(Course.open(tmp_path)), (V1, arrival(V1, MIDDLE)))
    assert not store.changes(arrival(V1, MIDDLE))  # the same zip again: collect adds nothing
    assert not store.changes(arrival(V1, LATE))  # a later copy of it: its first time stays
    earlier = arrival(V1, EARLY)
    assert store.changes(earlier)
    store.add(V1, earlier)
    folder = tmp_path / "collected"
    assert sorted(p.name for p in folder.iterdir()) == [
        f"{collected.sha256(V1)}.ipynb",
        "index.jsonl",
    ]
    assert (folder / f"{collected.sha256(V1)}.ipynb").read_bytes() == V1
    assert [line["submitted_at"] for line in index_lines(tmp_path)] == [
        "2027-01-15T20:00:00+00:00",
        "2027-01-15T17:00:00+00:00",
    ]
    assert store.known("alice", NB, collected.sha256(V1)).submitted_at == EARLY.timestamp()
    assert len(store.files["alice", NB]) == 1


def test_the_instructors_time_wins_and_the_latest_word_of_it(tmp_path):
    store = kept(Store(Course.open(tmp_path)), (V1, arrival(V1, EARLY)))
    given = arrival(V1, LATE, GIVEN)
    assert store.changes(given)  # later than the zip's time, and still the one that counts
    store.add(V1, given)
    assert not store.changes(arrival(V1, EARLY))  # the zip again cannot undo it
    store.add(V1, arrival(V1, EARLY))
    mine = store.known("alice", NB, collected.sha256(V1))
    assert (mine.submitted_at, mine.time_from) == (LATE.timestamp(), GIVEN)
    # timestamp.txt edited by hand since: the instructor's latest word, earlier or not.
    store.add(V1, arrival(V1, MIDDLE, IN_SUBMITTED))
    assert (mine.submitted_at, mine.time_from) == (MIDDLE.timestamp(), IN_SUBMITTED)


def test_the_newest_that_can_be_graded_counts_over_a_newer_broken_one(tmp_path):
    store = kept(
        Store(Course.open(tmp_path)),
        (V1, arrival(V1, EARLY)),
        (V2, arrival(V2, MIDDLE)),
        (V3, arrival(V3, LATE, broken=BROKEN)),
    )
    assert counts(store) == (collected.sha256(V2), collected.NEWEST)


def test_where_none_can_be_graded_the_newest_counts(tmp_path):
    store = kept(
        Store(Course.open(tmp_path)),
        (V1, arrival(V1, MIDDLE, broken=BROKEN)),
        (V2, arrival(V2, EARLY, broken=BROKEN)),
    )
    assert counts(store) == (collected.sha256(V1), collected.NONE_GRADABLE)
    assert store.choice("bob", NB) is None  # nothing of bob's: nothing counts


def test_a_tie_goes_to_the_instructors_time_then_to_the_larger_hash(tmp_path):
    # V3 (d916..) > V1 (c3aa..) > V2 (0899..), all handed in at the same second; the larger
    # hash kept second, so that the order kept in cannot decide.
    store = kept(Store(Course.open(tmp_path)), (V1, arrival(V1, MIDDLE)), (V3, arrival(V3, MIDDLE)))
    assert counts(store)[0] == collected.sha256(V3)
    store.add(V2, arrival(V2, MIDDLE, GIVEN))
    assert counts(store)[0] == collected.sha256(V2)


def test_a_pin_chooses_even_a_broken_file_until_unpinned(tmp_path):
    store = kept(
        Store(Course.open(tmp_path)),
        (V1, arrival(V1, EARLY, broken=BROKEN)),
        (V2, arrival(V2, LATE)),
    )
    store.pin("alice", NB, collected.sha256(V1))
    assert counts(store) == (collected.sha256(V1), collected.PINNED)
    store.pin("alice", NB, None)
    assert counts(store) == (collected.sha256(V2), collected.NEWEST)
    store.pin("alice", NB, collected.sha256(V3))  # never kept (an index edited by hand)
    assert counts(store) == (collected.sha256(V2), collected.NEWEST)
    pins = [(line["kind"], line["sha256"]) for line in index_lines(tmp_path)[2:]]
    assert pins == [("pin", collected.sha256(V1)), ("pin", None), ("pin", collected.sha256(V3))]


def test_the_index_read_again_is_the_store_as_written(tmp_path):
    store = kept(
        Store(Course.open(tmp_path)),
        (V3, arrival(V3, LATE)),
        (V1, arrival(V1, EARLY)),
        (V2, replace(arrival(V2, MIDDLE, broken=BROKEN), submitted_at=MIDDLE.timestamp() + 0.6)),
        (V1, arrival(V1, LATE, GIVEN)),
    )
    store.pin("alice", NB, collected.sha256(V2))
    again = Store(Course.open(tmp_path))
    assert again.files == store.files
    assert again.pins == store.pins
    assert counts(again) == (collected.sha256(V2), collected.PINNED)
    # Whole seconds: the time kept is the time read back.
    assert again.known("alice", NB, collected.sha256(V2)).submitted_at == MIDDLE.timestamp() + 1
    assert again.known("alice", NB, collected.sha256(V1)).time_from == GIVEN
    store.pin("alice", NB, None)
    assert counts(Store(Course.open(tmp_path))) == (
        collected.sha256(V1),
        collected.NEWEST,
    )


def test_an_unreadable_index_line_is_named(tmp_path):
    kept(Store(Course.open(tmp_path)), (V1, arrival(V1, EARLY)))
    index = tmp_path / "collected" / "index.jsonl"
    with index.open("a") as f:
        f.write('{"kind": "file", "student": "alice"\n')  # cut short by a full disk
    said = f"{index}, line 2: unreadable (Expecting ',' delimiter: line 1 column 36 (char 35)); "
    with pytest.raises(GradingError, match=re.escape(said + "restore it from a backup")):
        Store(Course.open(tmp_path))


def test_a_hash_prefix_must_name_exactly_one_file(tmp_path):
    store = kept(Store(Course.open(tmp_path)), (V3, arrival(V3, EARLY)), (V11, arrival(V11, LATE)))
    assert collected.find(store, "alice", NB, "D916").sha256 == collected.sha256(V3)
    with pytest.raises(GradingError) as raised:
        collected.find(store, "alice", NB, "d9")
    assert str(raised.value) == (
        f"2 kept files of alice / {NB} have a hash starting with 'd9'; "
        f"`python -m grader collect-pin alice {NB}` lists them"
    )


def test_the_student_is_found_whatever_the_case(tmp_path):
    store = kept(Store(Course.open(tmp_path)), (V1, arrival(V1, EARLY)))
    assert collected.whose(store, "ALICE", NB) == ("alice", NB)
    with pytest.raises(GradingError) as raised:
        collected.whose(store, "alice", "04_training")
    assert str(raised.value) == "nothing of alice / 04_training was ever collected"


def test_submitted_is_made_to_hold_the_file_that_counts_once(tmp_path):
    store = kept(Store(Course.open(tmp_path)), (V1, arrival(V1, EARLY)), (V2, arrival(V2, LATE)))
    folder = tmp_path / "submitted" / "alice" / NB
    assert [(k.sha256, there) for k, there in collected.materialize(store)] == [
        (collected.sha256(V2), None)
    ]
    assert collected.materialize(store) == []  # it holds it already
    store.pin("alice", NB, collected.sha256(V1))
    assert [(k.sha256, there) for k, there in collected.materialize(store)] == [
        (collected.sha256(V1), collected.sha256(V2))
    ]
    assert (folder / f"{NB}.ipynb").read_bytes() == V1
    assert (folder / "timestamp.txt").read_text() == "2027-01-15 17:00:00.000000 UTC\n"
    assert sorted(p.name for p in folder.iterdir()) == [f"{NB}.ipynb", "timestamp.txt"]


def test_the_listing_shows_every_file_oldest_first_in_the_course_zone(tmp_path):
    (tmp_path / "course.toml").write_text('timezone = "Europe/Berlin"\n')
    emailed = replace(
        arrival(V3, LATE, GIVEN, broken=BROKEN),
        source="attachment.ipynb",
        batch="/home/t/attachment.ipynb",
    )
    store = kept(Store(Course.open(tmp_path)), (V3, emailed), (V1, arrival(V1, EARLY)))
    assert collected.listing(store, "alice", NB).splitlines() == [
        "| kept as | handed in | time from | came from | collected | can be graded | counts |",
        "|---|---|---|---|---|---|---|",
        "| c3aa9744214c | 2027-01-15 18:00 CET | zip entry "
        f"| canvas.zip: archeralice_111_9001_{NB}.ipynb | 2027-01-20 10:00 CET | yes "
        "| yes (the newest that can be graded) |",
        "| d916c65e2a44 | 2027-01-16 13:00 CET | given | attachment.ipynb | 2027-01-20 10:00 CET "
        f"| no: {BROKEN} |  |",
    ]


def canvas_upload(raw: bytes, attachment: int, late: bool = False) -> Kept:
    """An arrival from Canvas's zip: no hand-in time, Canvas's attachment id, its LATE mark."""
    return replace(
        arrival(raw, EARLY),
        submitted_at=None,
        time_from=collected.NO_TIME,
        order=attachment,
        order_from=collected.ATTACHMENT,
        lms_late=late,
    )


def test_canvas_s_order_of_uploads_decides_whatever_the_times(tmp_path):
    # The later upload, V2 (0899..), has the smaller hash and a time none: the id decides.
    store = kept(
        Store(Course.open(tmp_path)), (V2, canvas_upload(V2, 9002)), (V1, canvas_upload(V1, 9001))
    )
    assert counts(store) == (collected.sha256(V2), collected.NEWEST)
    # Canvas's own times (--times) for the earlier upload alone do not turn the order round.
    store.add(V1, replace(canvas_upload(V1, 9001), submitted_at=LATE.timestamp()))
    assert counts(store)[0] == collected.sha256(V2)
    # An emailed fix with the instructor's time is newer than uploads that carry no time.
    store.add(V3, replace(arrival(V3, LATE, GIVEN), submitted_at=LATE.timestamp() + 3600))
    assert counts(store)[0] == collected.sha256(V3)


def test_a_file_with_no_time_gets_one_later_and_keeps_its_mark(tmp_path):
    store = kept(Store(Course.open(tmp_path)), (V1, canvas_upload(V1, 9001, late=True)))
    mine = store.known("alice", NB, collected.sha256(V1))
    assert store.changes(replace(canvas_upload(V1, 9001), submitted_at=LATE.timestamp()))
    assert not store.changes(canvas_upload(V1, 9001, late=True))  # the same zip again
    store.add(V1, replace(canvas_upload(V1, 9001, late=True), submitted_at=LATE.timestamp()))
    assert (mine.submitted_at, mine.lms_late) == (LATE.timestamp(), True)
    again = Store(Course.open(tmp_path))
    assert again.files == store.files  # None and the mark read back as written
    assert index_lines(tmp_path)[0]["submitted_at"] is None


def test_no_time_recorded_writes_no_timestamp(tmp_path):
    """nbgrader takes no penalty where timestamp.txt is absent; collect writes none it does not
    know, and says what the LMS says instead."""
    store = kept(Store(Course.open(tmp_path)), (V1, canvas_upload(V1, 9001, late=True)))
    collected.materialize(store)
    folder = tmp_path / "submitted" / "alice" / NB
    assert sorted(p.name for p in folder.iterdir()) == [f"{NB}.ipynb"]
    assert collected.materialize(store) == []  # it holds it already, with no time
    (folder / "timestamp.txt").write_text("2027-01-15 21:00:00.000000 UTC\n")  # not collect's
    assert [k.sha256 for k, _ in collected.materialize(store)] == [collected.sha256(V1)]
    assert sorted(p.name for p in folder.iterdir()) == [f"{NB}.ipynb"]
    assert collected.handed_in(canvas_upload(V1, 9001, late=True), None) == (
        "at a time not recorded (Canvas: LATE)"
    )


def test_another_notebook_handed_in_for_this_one_never_counts(tmp_path):
    """Kept with the notebook it is: never chosen, even newest or pinned; a notebook that has
    nothing else is "wrong", materialised nowhere; named so again when a later collect learns
    what a file first filed by its name really is."""
    store = kept(Store(Course.open(tmp_path)), (V1, replace(canvas_upload(V1, 9002), wrong="X")))
    assert store.choice("alice", NB) is None and store.pairs() == []
    assert list(store.wrong()) == [("alice", NB)] and collected.materialize(store) == []
    assert not (tmp_path / "submitted").exists()
    with pytest.raises(GradingError, match="only X was handed in for it"):
        collected.whose(store, "alice", NB)
    store.add(V2, canvas_upload(V2, 9001))  # an earlier upload, the right notebook
    store.pin("alice", NB, collected.sha256(V1))  # a pin cannot make it count either
    assert counts(store) == (collected.sha256(V2), collected.NEWEST)
    assert store.wrong() == {} and store.pairs() == [("alice", NB)]
    assert "| no: it is X |  |\n" in collected.listing(store, "alice", NB)
    with pytest.raises(GradingError, match=f"{collected.sha256(V1)[:12]} is X, handed in for"):
        collected.find(store, "alice", NB, collected.sha256(V1)[:6])
    assert store.changes(replace(canvas_upload(V2, 9001), wrong="X"))
    store.add(V2, replace(canvas_upload(V2, 9001), wrong="X"))
    assert Store(Course.open(tmp_path)).wrong()["alice", NB].wrong == "X"
