"""course.toml read into a Term and checked whole (grader/term/settings.py): each key declared
once, a bad value named with what it allows, `make autograde` stopped by a bad course.toml before
any job starts, and a course opened once per command (grader/term/course_open.py): an edit made
while it runs applies from the next."""

from __future__ import annotations

import re
import shutil
import tomllib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from conftest import executing
from paths import ROOT

from grader.course import GradingError
from grader.engine import autograde as grading
from grader.engine.options import EngineOptions
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
    assert term.autograde == {}
    assert [s.key for s in settings.SETTINGS] == [
        "assigned", "extra_credit", "timezone", "publish_url", "[due] NOTEBOOK",
        "[extensions.STUDENT] NOTEBOOK", "[late] penalty", "[late] percent_per_day", "[roster] id",
        "[collect] pattern", "[collect] time_format", "[collect] stamped", "[autograde] workers",
        "[autograde] cell_timeout", "[autograde] notebook_timeout", "[autograde] memory_gb",
        "[autograde] sandbox", "[autograde] scheduler",
    ]  # fmt: skip


def test_autograde_holds_only_what_the_file_sets_read_only():
    text = '[autograde]\nworkers = 2\nmemory_gb = 3\nsandbox = false\nscheduler = "tcp://h:8786"'
    term = settings.read(text, RELEASED)
    assert term.autograde == {
        "workers": 2, "memory_gb": 3.0, "sandbox": False, "scheduler": "tcp://h:8786"
    }  # fmt: skip
    assert isinstance(term.autograde["memory_gb"], float)  # as --memory-gb gives it
    with pytest.raises(TypeError):
        term.autograde["workers"] = 8  # read-only
    every = "[autograde]\ncell_timeout = 30\nnotebook_timeout = 900"
    assert settings.read(every, RELEASED).autograde == {"cell_timeout": 30, "notebook_timeout": 900}


def test_each_example_is_a_value_its_setting_holds_and_each_default_too():
    """A new entry's example and default are checked by its own check (the starting file shows
    the example, and reading an empty file gives the default)."""
    for setting in settings.SETTINGS:
        (value,) = tomllib.loads(setting.line()).values()
        assert setting.check(value), setting.key
        default = setting.default  # a value, or what applies, in words
        default = list(default) if isinstance(default, tuple) else default  # TOML's is a list
        assert isinstance(default, str) or setting.check(default), setting.key


EXAMPLE_LINE = re.compile(r"^# (?=\[[^\]]+\]$|\S+ = )", re.MULTILINE)  # not a line of words


def test_the_starting_file_is_every_default_and_uncommented_every_example():
    text = settings.starting_file()
    assert settings.read(text, RELEASED) == settings.read("", RELEASED)
    examples = EXAMPLE_LINE.sub("", text)
    given = tomllib.loads(examples)
    assert {"assigned", "timezone", "due", "extensions", "late", "collect"} <= set(given)
    term = settings.read(examples.replace('"04_training", ', ""), RELEASED)
    assert term.late.penalty == "percent_per_day" and term.extension("alice", "01_attention")
    assert set(term.autograde) == {s.path[1] for s in settings.SETTINGS if s.path[0] == "autograde"}


# case -> (course.toml, the key the refusal names, the value it names)
BAD = {
    "an unknown key": ("deadline = 2027-01-15", "deadline", date(2027, 1, 15)),
    "a misspelt table key": ("[late]\npenalty_method = 'zero'", "[late] penalty_method", "zero"),
    "a penalty of no kind": ("[late]\npenalty = 'half'", "[late] penalty", "half"),
    "a negative percent": ("[late]\npercent_per_day = -5", "[late] percent_per_day", -5),
    "a notebook not released": ('assigned = ["07_rnn"]', "assigned", ["07_rnn"]),
    "a list that is no list": ("assigned = '01_attention'", "assigned", "01_attention"),
    "a zone of no name": ('timezone = "Mars/Olympus"', "timezone", "Mars/Olympus"),
    "a due date that is no date": (
        "[due]\n01_attention = 'Friday'",
        "[due] 01_attention",
        "Friday",
    ),
    "an extension in hours": (
        "[extensions.ann]\n01_attention = true",
        "[extensions.ann] 01_attention",
        True,
    ),
    "a late date, nothing due": (
        "[extensions.ann]\n01_attention = 2027-01-20T00:00:00",
        "[extensions.ann] 01_attention",
        datetime(2027, 1, 20),
    ),
    "extensions not by student": ("[extensions]\nann = 2", "[extensions] ann", 2),
    "a table that is a number": ("late = 3", "late", 3),
    "stamped as text": ("[collect]\nstamped = 'yes'", "[collect] stamped", "yes"),
    "a pattern without a student": (
        "[collect]\npattern = '_(?P<who>x)'",
        "[collect] pattern",
        "_(?P<who>x)",
    ),
    "a roster id that is a number": ("[roster]\nid = 3", "[roster] id", 3),
    "no workers": ("[autograde]\nworkers = 0", "[autograde] workers", 0),
    "workers in part": ("[autograde]\nworkers = 1.5", "[autograde] workers", 1.5),
    "a cell timeout of none": ("[autograde]\ncell_timeout = 0", "[autograde] cell_timeout", 0),
    "a notebook timeout as text": (
        "[autograde]\nnotebook_timeout = '10m'",
        "[autograde] notebook_timeout",
        "10m",
    ),
    "no memory": ("[autograde]\nmemory_gb = -1", "[autograde] memory_gb", -1),
    "memory as a flag": ("[autograde]\nmemory_gb = true", "[autograde] memory_gb", True),
    "sandbox as text": ("[autograde]\nsandbox = 'no'", "[autograde] sandbox", "no"),
    "a scheduler of the web": (
        "[autograde]\nscheduler = 'http://h:8786'",
        "[autograde] scheduler",
        "http://h:8786",
    ),
    "an autograde option of none": ("[autograde]\nforce = true", "[autograde] force", True),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_setting_is_refused_naming_its_key_and_value(case):
    text, key, value = BAD[case]
    with pytest.raises(settings.SettingError) as error:
        settings.read(text, RELEASED)
    assert (error.value.key, error.value.value) == (key, value)
    assert "\n" not in str(error.value)


def test_course_toml_that_is_not_toml_is_refused_in_one_line():
    with pytest.raises(GradingError) as error:
        settings.read("assigned = [", RELEASED)
    assert not isinstance(error.value, settings.SettingError)  # no key to name
    assert str(error.value).startswith("course.toml: ") and "\n" not in str(error.value)


REFUSALS = {
    "deadline = 1": "course.toml: deadline is not a setting; course.toml holds assigned, "
    "extra_credit, timezone, publish_url, [due], [extensions], [late], [roster], [collect], "
    "[autograde]",
    "[late]\nmethod = 1": "course.toml: [late] method is not a setting; [late] holds penalty, "
    "percent_per_day",
    "[late]\npenalty = 'half'": 'course.toml: [late] penalty = "half", but it holds none, zero or '
    'percent_per_day (e.g. penalty = "percent_per_day")',
    "[extensions]\nann = 2": "course.toml: [extensions] ann = 2 is not a table; [extensions.ann] "
    "holds NOTEBOOK = days (0 or more), or a later date and time",
    'extra_credit = ["05_head"]': "course.toml: extra_credit names 05_head, not released "
    "(released: 01_attention, 02_causal_mask, 06_stretch)",
    "[extensions.ann]\n01_attention = 2027-01-20T00:00:00": "course.toml: [extensions.ann] "
    "01_attention = 2027-01-20T00:00:00, but 01_attention has no due date ([due] "
    "01_attention); give days, or a due date first",
}


@pytest.mark.parametrize("text", REFUSALS)
def test_each_refusal_says_the_key_and_what_it_holds(text):
    """The words of each refusal, made from the settings' entries: here only."""
    with pytest.raises(settings.SettingError) as error:
        settings.read(text, RELEASED)
    assert str(error.value) == REFUSALS[text]


def test_the_readme_table_of_settings_is_the_rendered_one(capsys):
    table = settings.readme_table()
    assert len(table.splitlines()) == 2 + len(settings.SETTINGS)
    assert all(f"| `{s.key}` |" in table for s in settings.SETTINGS)
    settings.main(["--readme-table"])
    assert capsys.readouterr().out == table
    readme = (ROOT / "grader" / "README.md").read_text(encoding="utf-8")
    assert table in readme, (
        "grader/README.md's table of settings is not the settings' own: paste the output of "
        '`python -m grader.term.settings --readme-table` under "Every setting of course.toml"'
    )


def test_a_bad_course_toml_stops_autograde_before_any_job(released, tmp_path, monkeypatch):
    course = Path(shutil.copytree(released, tmp_path / "course"))
    (course / "course.toml").write_text('[late]\npenalty = "half"\n')
    started = []
    monkeypatch.setattr(grading, "grade", lambda *a, **k: started.append(a) or [])
    with pytest.raises(settings.SettingError) as refused:
        autograde(Course.open(course), EngineOptions(sandboxed=False, progress=False))
    assert refused.value.key == "[late] penalty"
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
    one_trusted = EngineOptions(workers=1, sandboxed=False, progress=False)  # stand-in jobs
    (first,) = autograde(Course.open(course), one_trusted)
    assert first.late_penalty == first.score == 4  # "zero", as the run began: all of it taken
    assert len(reads) == 1
    (second,) = autograde(Course.open(course), one_trusted)
    assert (second.score, second.late_penalty) == (4, 0)  # the next run: "none"
