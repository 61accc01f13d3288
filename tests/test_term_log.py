"""The term's log and its times (grader/term/term_log.py), called directly: a time shown in a
named zone with the zone's abbreviation, from a datetime or from seconds since the epoch, and in
this machine's zone where the course names none; the log's header written once and each step's
section appended after the last, stamped in the course's zone. The clock is frozen and the
machine's zone set here, so that every line is asserted whole. What collect, collect-pin and
autograde write into it is test_collect.py's and test_whole_term.py's."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from grader.term import term_log
from grader.term.course_open import Course

PARIS = ZoneInfo("Europe/Paris")
WINTER = datetime(2027, 1, 15, 22, 59, tzinfo=UTC)
SUMMER = datetime(2027, 7, 1, 10, 0, tzinfo=UTC)


@pytest.fixture
def new_york():
    """This machine's zone is New York's for the test (the process's TZ, read again)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "America/New_York")
        time.tzset()
        yield
    time.tzset()


class Clock(datetime):
    """term_log's datetime, whose now() is a time the test sets; its times stay Clocks, so that
    term_log knows them for datetimes."""

    at = WINTER

    @classmethod
    def now(cls, tz=None):
        return cls.combine(cls.at.date(), cls.at.timetz()).astimezone(tz)

    def astimezone(self, tz=None):
        moment = super().astimezone(tz)
        return Clock.combine(moment.date(), moment.timetz())


@pytest.fixture
def clock(monkeypatch) -> type[Clock]:
    monkeypatch.setattr(term_log, "datetime", Clock)
    monkeypatch.setattr(Clock, "at", WINTER)
    return Clock


def test_a_time_is_shown_in_the_zone_named_with_its_abbreviation():
    assert term_log.shown(WINTER, PARIS) == "2027-01-15 23:59 CET"
    assert term_log.shown(SUMMER, PARIS) == "2027-07-01 12:00 CEST"
    assert term_log.shown(WINTER, ZoneInfo("UTC")) == "2027-01-15 22:59 UTC"


def test_seconds_since_the_epoch_are_the_same_time():
    assert term_log.shown(WINTER.timestamp(), PARIS) == "2027-01-15 23:59 CET"
    assert term_log.shown(SUMMER.timestamp() + 59.9, PARIS) == "2027-07-01 12:00 CEST"


def test_no_zone_is_this_machines(new_york):
    assert term_log.shown(WINTER, None) == "2027-01-15 17:59 EST"
    assert term_log.shown(SUMMER.timestamp(), None) == "2027-07-01 06:00 EDT"


def test_steps_are_appended_oldest_first_under_one_header(tmp_path, clock):
    (tmp_path / "course.toml").write_text('timezone = "Asia/Tokyo"\n')
    path = term_log.append(
        Course.open(tmp_path), "collect canvas.zip", "collect canvas.zip: 1 file\n\n\n"
    )
    assert path == tmp_path / "reports" / "term_log.md"
    clock.at = SUMMER
    later = term_log.append(
        Course.open(tmp_path), "autograde --student bob", "3 notebooks: 1 graded"
    )
    assert later == path
    assert path.read_text(encoding="utf-8") == (
        term_log.HEADER
        + "## 2027-01-16 07:59 JST · collect canvas.zip\n\ncollect canvas.zip: 1 file\n\n"
        + "## 2027-07-01 19:00 JST · autograde --student bob\n\n3 notebooks: 1 graded\n\n"
    )


def test_a_course_without_a_zone_logs_in_this_machines(tmp_path, clock, new_york):
    path = term_log.append(Course.open(tmp_path), "autograde", "done")
    written = path.read_text(encoding="utf-8")
    heading, body = written.removeprefix(term_log.HEADER).removeprefix("## ").split("\n\n", 1)
    assert (heading.split(" · "), body) == (["2027-01-15 17:59 EST", "autograde"], "done\n\n")
