"""course.toml read into a Term and checked whole (grader/term/settings.py): each key declared
once, a bad value named with what it allows, `make autograde` stopped by a bad course.toml before
any job starts, and a course opened once per command (grader/term/course_open.py): an edit made
while it runs applies from the next."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from conftest import executing

from grader.course import GradingError
from grader.engine import autograde as grading
from grader.term import deadlines, settings
from grader.term.course_open import Course
from grader.term.scores import autograde
from maintainer.fabricated_class import perfect, write

RELEASED = ("01_attention", "02_causal_mask", "06_stretch")
WHOLE = """timezone = "Europe/Berlin"
assigned = ["01_attention", "06_stretch"]

[due]
01_attention = 2027-01-15T23:59:00

[extensions.Ann]
01_attention = 2
[extensions.bea]
01_attention = "2027-01-20T12:00:00+00:00"

[late]
penalty = "percent_per_day"
percent_per_day = 20

[roster]
id = "SIS Login ID"

[collect]
pattern = '_(?P<student>[^_]+)_attempt_'
stamped = true
"""


def test_every_key_reads_into_a_typed_term():
    term = settings.read(WHOLE, RELEASED)
    assert term.assigned == ("01_attention", "06_stretch")
    assert term.extra_credit == ("06_stretch",)  # the default, among the assigned
    due = term.due["01_attention"]
    assert due.utcoffset() == timedelta(hours=1) and due.hour == 23  # Berlin in winter
    assert term.extension("ANN", "01_attention") == timedelta(days=2)  # ids in any case
    assert term.extension("bea", "01_attention") == datetime(2027, 1, 20, 12, tzinfo=UTC) - due
    assert term.extension("cy", "01_attention") is None
    assert (term.late.penalty, term.late.percent_per_day) == ("percent_per_day", 20.0)
    assert term.roster_id == "SIS Login ID" and term.stamped is True
    assert term.collect_pattern.search("x_bob_attempt_").group("student") == "bob"
    with pytest.raises(AttributeError):
        term.stamped = False  # frozen


def test_an_empty_course_toml_has_every_default():
    term = settings.read("", RELEASED)
    assert term.assigned == RELEASED and term.extra_credit == ("06_stretch",)
    assert (term.zone, term.due, term.late.penalty, term.roster_id) == (None, {}, None, None)
    assert set(settings.KEYS) == {
        "assigned", "extra_credit", "timezone", "due", "extensions", "late", "roster", "collect",
        "publish_url",
    }  # fmt: skip


BAD = {
    "an unknown key": ("deadline = 2027-01-15", "course.toml: deadline is not a setting"),
    "a misspelt table key": ("[late]\npenalty_method = 'zero'", "[late] penalty_method is not"),
    "a penalty of no kind": ("[late]\npenalty = 'half'", "'half': none, zero or percent_per_day"),
    "a negative percent": ("[late]\npercent_per_day = -5", "percent_per_day = a number"),
    "a notebook not released": ('assigned = ["07_rnn"]', "assigned names 07_rnn, not released"),
    "a zone of no name": ('timezone = "Mars/Olympus"', "unknown timezone 'Mars/Olympus'"),
    "a due date that is no date": ("[due]\n01_attention = 'Friday'", "[due] 01_attention ="),
    "an extension in hours": ("[extensions.ann]\n01_attention = true", "days or a date"),
    "stamped as text": ("[collect]\nstamped = 'yes'", "[collect] stamped = true or false"),
    "a pattern without a student": ("[collect]\npattern = '_(?P<who>x)'", "(?P<student>...)"),
    "a roster id that is a number": ("[roster]\nid = 3", "[roster] id = "),
    "not TOML": ("assigned = [", "course.toml: "),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_setting_is_one_line_naming_it_and_what_it_allows(case):
    text, said = BAD[case]
    with pytest.raises(GradingError) as error:
        settings.read(text, RELEASED)
    assert said in str(error.value) and "\n" not in str(error.value)


def test_a_bad_course_toml_stops_autograde_before_any_job(released, tmp_path, monkeypatch):
    course = Path(shutil.copytree(released, tmp_path / "course"))
    (course / "course.toml").write_text('[late]\npenalty = "half"\n')
    started = []
    monkeypatch.setattr(grading, "grade", lambda *a, **k: started.append(a) or [])
    with pytest.raises(GradingError, match=r"\[late\] penalty = 'half'"):
        autograde(Course.open(course), progress=False, sandboxed=False)
    assert started == []  # the engine never started


def _released(course: Path) -> Path:
    """A course folder whose release holds RELEASED, empty notebooks."""
    for name in RELEASED:
        (course / "release" / name).mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), course / "release" / name / f"{name}.ipynb")
    return course


def test_an_opened_course_keeps_its_term_and_the_next_one_reads_the_file_again(
    tmp_path, monkeypatch
):
    _released(tmp_path)
    (tmp_path / "course.toml").write_text('timezone = "UTC"\n')
    reads = []
    read = settings.read
    monkeypatch.setattr(settings, "read", lambda *a: reads.append(a) or read(*a))
    course = Course.open(tmp_path)
    assert len(reads) == 1 and course.term.released == RELEASED
    (tmp_path / "course.toml").write_text('timezone = "Asia/Tokyo"\n')
    assert str(course.term.zone) == "UTC" and len(reads) == 1  # what the command began with
    assert str(Course.open(tmp_path).term.zone) == "Asia/Tokyo" and len(reads) == 2
    with pytest.raises(AttributeError):
        course.term = Course.open(tmp_path).term  # frozen


def test_autograde_reads_course_toml_once_and_keeps_it_for_the_run(released, tmp_path, monkeypatch):
    """The term's autograde settles, flags and reports by one reading of course.toml: a file
    changed while the class is graded changes nothing in that run; the next run reads it."""
    course = Path(shutil.copytree(released, tmp_path / "course"))
    toml = course / "course.toml"
    toml.write_text('[due]\n01_attention = 2027-01-15T23:59:00+00:00\n\n[late]\npenalty = "zero"\n')
    folder = course / "submitted" / "ann" / "01_attention"
    write(folder / "01_attention.ipynb", perfect(course, "01_attention"))
    two_days_late = datetime(2027, 1, 17, tzinfo=UTC)
    deadlines.write_timestamp(Course.open(course), "ann", "01_attention", two_days_late)
    reads = []
    read_text = Path.read_text

    def reading(path, *args, **kwargs):
        reads.extend([path] if path.name == "course.toml" else [])
        return read_text(path, *args, **kwargs)

    def edited_while_graded(text, *rest):  # the instructor drops the late policy meanwhile
        toml.write_text('[late]\npenalty = "none"\n')
        return executing()(text, *rest)

    monkeypatch.setattr(Path, "read_text", reading)
    monkeypatch.setattr(grading, "run_job", edited_while_graded)
    (first,) = autograde(Course.open(course), workers=1, progress=False, sandboxed=False)
    assert first.late_penalty == first.score == 4  # "zero", as the run began: all of it taken
    assert len(reads) == 1
    (second,) = autograde(Course.open(course), workers=1, progress=False, sandboxed=False)
    assert (second.score, second.late_penalty) == (4, 0)  # the next run: "none"
