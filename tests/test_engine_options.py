"""The engine's one options object (grader/engine/options.py): built from course.toml's
[autograde] table (a plain dict here) and the command line, the command line winning over
course.toml and course.toml over the defaults, each given setting's source kept; a bad value
stopped with the source's name; the rerun key's settings read from it; and, through `python -m
grader autograde` with stand-in jobs, the options in force recorded in autograde.json and the
term's log, read back as values."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import executing, grader_cli

from grader.__main__ import build_parser
from grader.course import GradingError, Layout
from grader.engine import autograde as engine
from grader.engine.options import COMMAND_LINE, COURSE_TOML, NOTEBOOK_TIMEOUT, EngineOptions
from maintainer.fabricated_class import perfect, write

NB = "01_attention"


def cli(*args: str) -> argparse.Namespace:
    """The autograde command line as `python -m grader` parses it."""
    return build_parser().parse_args(["autograde", *args])


def test_nothing_given_is_every_default():
    options = EngineOptions.build({}, cli())
    assert options == EngineOptions()
    assert (options.notebook_timeout, options.sandboxed, options.scheduler) == (
        NOTEBOOK_TIMEOUT,
        True,
        None,
    )
    assert options.origin == ()


def test_course_toml_wins_over_the_defaults_and_the_command_line_over_both():
    given = {"workers": 3, "cell_timeout": 45, "memory_gb": 2.5, "sandbox": False}
    options = EngineOptions.build(given, cli("--workers", "5", "--sandbox", "--force"))
    assert (options.workers, options.cell_timeout, options.memory_gb) == (5, 45, 2.5)
    assert (options.sandboxed, options.force) == (True, True)
    assert dict(options.origin) == {
        "workers": COMMAND_LINE,
        "cell_timeout": COURSE_TOML,
        "memory_gb": COURSE_TOML,
        "sandboxed": COMMAND_LINE,
        "force": COMMAND_LINE,
    }


def test_no_sandbox_on_the_command_line_wins_over_course_toml():
    options = EngineOptions.build(
        {"sandbox": True, "scheduler": "tcp://h:8786"}, cli("--no-sandbox")
    )
    assert (options.sandboxed, options.scheduler) == (False, "tcp://h:8786")
    assert dict(options.origin) == {"sandboxed": COMMAND_LINE, "scheduler": COURSE_TOML}


def test_release_takes_the_engine_s_options_too():
    args = build_parser().parse_args(["release", "--no-sandbox", "--cell-timeout", "30"])
    options = EngineOptions.build({"workers": 1}, args)
    assert (options.sandboxed, options.cell_timeout, options.workers, options.force) == (
        False,
        30,
        1,
        False,
    )


@pytest.mark.parametrize(
    "given, args, named",
    [
        ({"workers": 0}, (), "course.toml: [autograde] workers"),
        ({}, ("--workers", "0"), "--workers"),
        ({"memory_gb": -1.0}, (), "course.toml: [autograde] memory_gb"),
        ({}, ("--scheduler", "localhost:8786"), "--scheduler"),
    ],
    ids=["workers 0 in course.toml", "workers 0 given", "negative memory", "no tcp://"],
)
def test_a_bad_value_stops_it_naming_where_it_came_from(given, args, named):
    with pytest.raises(GradingError) as refused:
        EngineOptions.build(given, cli(*args))
    assert str(refused.value).startswith(named + ": ")


def test_the_line_says_each_setting_and_where_the_given_ones_came_from():
    given = {"workers": 2, "cell_timeout": 120}
    options = EngineOptions.build(given, cli("--no-sandbox", "--notebook-timeout", "900"))
    assert options.said() == (
        "workers 2, cell timeout 120 s, notebook timeout 900 s, memory 4 GB, sandbox off, "
        "jobs on the local pool, force no (course.toml: workers, cell_timeout; command line: "
        "--notebook-timeout, --no-sandbox)"
    )
    assert EngineOptions(cell_timeout=30).said().endswith(" (none given)")


def test_the_rerun_key_reads_the_limits_and_the_sandbox_not_the_pool():
    base = EngineOptions(cell_timeout=30)
    assert base.settings("none") == EngineOptions(cell_timeout=30, workers=7).settings("none")
    assert base.settings("none") != EngineOptions(cell_timeout=31).settings("none")
    assert base.settings("none") != EngineOptions(cell_timeout=30, memory_gb=2).settings("none")
    assert base.settings("none") != base.settings("bubblewrap")


@pytest.fixture
def course(released, tmp_path) -> Path:
    """The release, one solved 01 handed in, and course.toml setting [autograde] workers."""
    course = Path(shutil.copytree(released, tmp_path / "course"))
    layout = Layout(course)
    write(layout.notebook("submitted", NB, "ann"), perfect(course, NB))
    toml = layout.settings.read_text(encoding="utf-8")
    layout.settings.write_text(f"{toml}\n[autograde]\nworkers = 1\n", encoding="utf-8")
    return course


def test_autograde_records_the_options_in_force(course, monkeypatch):
    monkeypatch.setattr(engine, "run_job", executing())
    args = ("--no-sandbox", "--cell-timeout", "40")
    done = grader_cli(course, "autograde", *args)
    assert done.returncode == 0, done.stderr
    saved = json.loads((course / "reports" / "autograde.json").read_text(encoding="utf-8"))
    assert saved["options"] | {"progress": None} == {
        "workers": 1, "cell_timeout": 40, "notebook_timeout": NOTEBOOK_TIMEOUT,
        "memory_gb": 4.0, "sandboxed": False, "scheduler": None, "force": False,
        "progress": None,
        "given": {"workers": COURSE_TOML, "sandboxed": COMMAND_LINE, "cell_timeout": COMMAND_LINE},
    }  # fmt: skip
    log = (course / "reports" / "term_log.md").read_text(encoding="utf-8")
    (line,) = re.findall(
        r"^Options: workers (\d+), cell timeout (\d+) s, .*sandbox (\w+)", log, re.M
    )
    assert line == ("1", "40", "off")
    table = (course / "reports" / "autograde.md").read_text(encoding="utf-8")
    assert f"\nOptions: {EngineOptions.build({'workers': 1}, cli(*args)).said()}.\n" in table
