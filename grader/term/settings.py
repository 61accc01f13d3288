"""COURSE/course.toml, read into a typed, frozen Term (rules.py) and checked whole. Each key is
declared once, as one `Setting` of `SETTINGS`: its default, what it means, what it holds, an
example and its check, as otter-grader declares each option of its configuration once. From
those entries come the commented course.toml the first release writes (`starting_file`), the
one-line refusal of a key that is unknown or holds what it may not (`SettingError`, naming the
key and what it holds), and grader/README.md's table of settings (`readme_table`, printed by
`python -m grader.term.settings --readme-table`). A command reads the file once, when it opens
the course (course_open.py): a file edited while it runs applies from the next command.
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from types import MappingProxyType
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from transformer_lab.catalogue import EXTRA_CREDIT

from ..course import COURSE_FILE, MEMORY_GB, GradingError, Layout
from ..engine.options import NOTEBOOK_TIMEOUT
from .rules import Late, Term

PENALTIES = ("none", "zero", "percent_per_day")
# A part of a setting's name in capitals stands for any name; examples write these.
SAMPLES = {"NOTEBOOK": "01_attention", "STUDENT": "alice"}


@dataclass(frozen=True)
class Setting:
    """One key course.toml may hold. `name` is its path, dotted: `late.penalty` is `penalty`
    of the table [late]; `due.NOTEBOOK` is any key of [due]."""

    name: str
    default: object  # the value read where the file sets none, or what applies then, in words
    description: str  # what it means
    allows: str  # what it may hold, as its refusal says it
    example: str  # a value as course.toml writes it
    check: Callable[[object], bool]  # whether a value is one it may hold

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))

    @property
    def key(self) -> str:
        """The key as an instructor writes it: `timezone`, `[late] penalty`."""
        return _said(self.path)

    def line(self) -> str:
        """Its example, as written in its table."""
        return f"{SAMPLES.get(self.path[-1], self.path[-1])} = {self.example}"


def _is_notebooks(value) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def _is_zone(name) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        return False
    return True


def _is_moment(value) -> bool:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return False
    return isinstance(value, datetime)


def _is_number(value, least: float = 0.0, *, whole: bool = False, above: bool = False) -> bool:
    """A number (never a bool: TOML's true is no count), at least `least`, or above it."""
    kinds = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        return False
    return value > least if above else value >= least


def _is_pattern(pattern) -> bool:
    try:
        compile_pattern(pattern)
    except GradingError:
        return False
    return True


def _is_text(value) -> bool:
    return isinstance(value, str)


def _is_bool(value) -> bool:
    return isinstance(value, bool)


COMMAND = "the command's default"
SETTINGS = (
    Setting(
        "assigned",
        "every released notebook",
        "the notebooks that count this term",
        "a list of released notebooks",
        '["01_attention", "02_causal_mask", "04_training", "06_stretch"]',
        _is_notebooks,
    ),
    Setting(
        "extra_credit",
        # The lecture's optional challenge, "for anyone who finishes the core path early":
        # skipping it must cost nothing, so by default its points are extra credit.
        tuple(EXTRA_CREDIT),
        "assigned notebooks whose points add to a total and nothing to its maximum; [] for none",
        "a list of released notebooks",
        '["06_stretch"]',
        _is_notebooks,
    ),
    Setting(
        "timezone",
        "this machine's zone",
        "the zone of every time written without an offset",
        "an IANA zone name",
        '"Europe/Berlin"',
        _is_zone,
    ),
    Setting(
        "publish_url",
        "none, so the published notebooks carry no Colab badge",
        "where publish/ is pushed: each published notebook's Colab badge opens it and its setup "
        "cell installs the wheel from it; the first make release PUBLISH_URL=... writes it here, "
        "and every later release builds with it",
        "a GitHub folder, github.com/ORG/REPO/blob/BRANCH[/FOLDER]",
        '"github.com/ORG/REPO/blob/main"',
        lambda url: isinstance(url, str) and published_folder(url) is not None,
    ),
    Setting(
        "due.NOTEBOOK",
        "none, so a notebook not listed is never late",
        "when the notebook is due",
        "a date and time, TOML's or an ISO 8601 string",
        "2027-01-15T23:59:00+01:00",
        _is_moment,
    ),
    Setting(
        "extensions.STUDENT.NOTEBOOK",
        "none",
        "more time for one student (a roster id, in any case) on one notebook",
        "days (0 or more), or a later date and time",
        "2",
        lambda value: _is_number(value) or _is_moment(value),
    ),
    Setting(
        "late.penalty",
        "none set, so the plugin nbgrader_config.py sets applies",
        "what handing in after the due date costs: nothing, the whole score, or a share a day",
        f"{', '.join(PENALTIES[:-1])} or {PENALTIES[-1]}",
        '"percent_per_day"',
        lambda method: method in PENALTIES,
    ),
    Setting(
        "late.percent_per_day",
        10,
        "with penalty percent_per_day, the share of the score taken per day, or started day, late",
        "a number of percent, 0 or more",
        "10",
        _is_number,
    ),
    Setting(
        "roster.id",
        "the LMS's own, SIS User ID (Canvas) or ID number (Moodle)",
        "the column of an LMS's export that is the student's id",
        "a column name",
        '"SIS Login ID"',
        _is_text,
    ),
    Setting(
        "collect.pattern",
        "none, so Canvas's and Moodle's names are read as they come",
        "how another LMS's file names name the student, and optionally the time handed in "
        "(searched in the name; collect --pattern overrides it)",
        "a regular expression with a (?P<student>...) group",
        r"'_(?P<student>[^_]+)_attempt_(?P<time>\d{4}(-\d\d){5})_'",
        _is_pattern,
    ),
    Setting(
        "collect.time_format",
        "ISO 8601",
        "how the pattern's (?P<time>...) group writes a time",
        "a strptime format",
        '"%Y-%m-%d-%H-%M-%S"',
        _is_text,
    ),
    Setting(
        "collect.stamped",
        False,
        "whether a download's own file or zip-entry time is when it was handed in (a submission "
        "server of your own; never Canvas's or Moodle's files)",
        "true or false",
        "false",
        _is_bool,
    ),
    Setting(
        "autograde.workers",
        f"{COMMAND}, one job a core",
        "grading jobs run at a time on this machine (--workers overrides it)",
        "a whole number, 1 or more",
        "4",
        lambda n: _is_number(n, 1, whole=True),
    ),
    Setting(
        "autograde.cell_timeout",
        f"{COMMAND}, nbgrader_config.py's Execute.timeout",
        "seconds one cell may run before it is stopped (--cell-timeout overrides it)",
        "a whole number of seconds, more than 0",
        "60",
        lambda n: _is_number(n, 0, whole=True, above=True),
    ),
    Setting(
        "autograde.notebook_timeout",
        f"the engine's, {NOTEBOOK_TIMEOUT}",
        "seconds one notebook's job may run in all, the backstop for a kernel that ignores "
        "interrupts (--notebook-timeout overrides it)",
        "a whole number of seconds, more than 0",
        "600",
        lambda n: _is_number(n, 0, whole=True, above=True),
    ),
    Setting(
        "autograde.memory_gb",
        f"the engine's, {MEMORY_GB:g}",
        "a grading job's address-space cap in GB, its kernel's included (--memory-gb overrides it)",
        "a number of GB, more than 0",
        "4",
        lambda n: _is_number(n, 0, above=True),
    ),
    Setting(
        "autograde.sandbox",
        f"{COMMAND}, true",
        "whether notebooks run inside bubblewrap; false runs them with your own rights, for "
        "trusted notebooks only (--sandbox or --no-sandbox overrides it)",
        "true or false",
        "true",
        _is_bool,
    ),
    Setting(
        "autograde.scheduler",
        "none, so the jobs run on this machine",
        "the Dask cluster to run the jobs on (--scheduler overrides it)",
        "a scheduler's address, tcp://HOST:PORT",
        '"tcp://10.0.0.5:8786"',
        lambda address: isinstance(address, str) and address.startswith("tcp://"),
    ),
)
SETTING = {setting.name: setting for setting in SETTINGS}
STARTING_HEADER = """# The term's settings, read by python -m grader at the start of each command.
# Every setting is commented out, so each has its default; uncomment and edit what this term
# needs. A setting that is not right stops the next command in one line that names it.
# grader/README.md's "Every setting of course.toml" lists them all. Settings without a [table]
# come first; a part of a name in capitals (NOTEBOOK, STUDENT) stands for any name.
"""


class SettingError(GradingError):
    """A key of course.toml that is no setting, or holds what it may not: `key` as written
    (`[late] penalty`), `value` what the file gives it; the message names both in one line."""

    def __init__(self, key: str, value, message: str):
        super().__init__(message)
        self.key, self.value = key, value


def _said(path: tuple[str, ...]) -> str:
    *table, leaf = path
    return f"[{'.'.join(table)}] {leaf}" if table else leaf


def _written(value) -> str:
    """A value as course.toml writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return json.dumps(value, ensure_ascii=False)  # JSON's string is TOML's too
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_written, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_written(v)}" for k, v in value.items()) + "}"
    return value.isoformat()  # a date or a time


def _fits(path: tuple[str, ...], here: tuple[str, ...]) -> bool:
    """Whether a setting's path runs through `here`: a part in capitals stands for any name."""
    parts = zip(path, here, strict=False)
    return len(path) >= len(here) and all(p == h or p.isupper() for p, h in parts)


def _holds(at: tuple[str, ...]) -> str:
    """What course.toml (`at` ()) or its table `at` holds, as a refusal says it."""
    parts = {}
    for setting in SETTINGS:
        if len(setting.path) > len(at) and _fits(setting.path, at):
            part, leaf = setting.path[len(at)], len(setting.path) == len(at) + 1
            if not leaf:
                parts[part] = f"[{'.'.join((*at, part))}]"
            else:  # a name in capitals stands for any: say what each holds
                parts[part] = f"{part} = {setting.allows}" if part.isupper() else part
    where = f"[{'.'.join(at)}]" if at else "course.toml"
    return f"{where} holds {', '.join(parts.values())}"


def _refused(setting: Setting, here: tuple[str, ...], value) -> SettingError:
    key = _said(here)
    return SettingError(
        key,
        value,
        f"{COURSE_FILE}: {key} = {_written(value)}, but it holds {setting.allows} "
        f"(e.g. {setting.line()})",
    )


def _check(table: dict, at: tuple[str, ...] = ()) -> None:
    """Every key of course.toml's `table` (at `at`) is a setting and holds what it may."""
    for part, value in table.items():
        here = (*at, part)
        through = [s for s in SETTINGS if _fits(s.path, here)]
        if not through:
            raise SettingError(
                _said(here), value, f"{COURSE_FILE}: {_said(here)} is not a setting; {_holds(at)}"
            )
        setting = next((s for s in through if len(s.path) == len(here)), None)
        if setting and not setting.check(value):
            raise _refused(setting, here, value)
        if not setting and not isinstance(value, dict):
            raise SettingError(
                _said(here),
                value,
                f"{COURSE_FILE}: {_said(here)} = {_written(value)} is not a table; {_holds(here)}",
            )
        if not setting:
            _check(value, here)


def aware(moment, zone=None, key: str = "") -> datetime:
    """A datetime with its zone: a TOML datetime, an ISO string, or a naive time in `zone`."""
    where = f"course.toml: {key} = " if key else "course.toml: "
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment)
        except ValueError:
            raise GradingError(f"{where}{moment!r} is not ISO 8601 (date and time)") from None
    if not isinstance(moment, datetime):
        raise GradingError(f"{where}{moment!r} is not a date and time")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone) if zone else moment.astimezone()
    return moment


def _names(given: dict, key: str, default, released: tuple[str, ...]) -> tuple[str, ...]:
    names = given.get(key, default)
    unknown = sorted(set(names) - set(released))
    if unknown and key in given and released:  # a default may name one this release lacks
        raise SettingError(
            key,
            unknown,
            f"{COURSE_FILE}: {key} names {', '.join(unknown)}, not released "
            f"(released: {', '.join(released)})",
        )
    return tuple(name for name in released if name in names)


def _extensions(given: dict, due: dict, zone) -> dict:
    found = {}
    for student, notebooks in given.get("extensions", {}).items():
        for notebook, value in notebooks.items():
            key = _said(("extensions", student, notebook))
            if isinstance(value, (int, float)):
                found[student.casefold(), notebook] = float(value)
            elif notebook in due:
                found[student.casefold(), notebook] = aware(value, zone, key)
            else:
                raise SettingError(
                    key,
                    value,
                    f"{COURSE_FILE}: {key} = {_written(value)}, but {notebook} has no due date "
                    f"([due] {notebook}); give days, or a due date first",
                )
    return found


def compile_pattern(pattern: str) -> re.Pattern:
    """collect's file-name pattern, checked: it must name the student."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except (re.error, TypeError) as err:
        raise GradingError(f"collect pattern {pattern!r}: {err}") from None
    if "student" not in compiled.groupindex:
        raise GradingError(f"collect pattern {pattern!r} has no (?P<student>...) group")
    return compiled


def published_folder(url: str) -> str | None:
    """ORG/REPO/blob/BRANCH[/FOLDER] of a publish URL (github.com/ORG/REPO/blob/BRANCH[/FOLDER],
    https:// optional); None where it names no GitHub folder."""
    where = url.strip().rstrip("/").removeprefix("https://").removeprefix("http://")
    if not where.startswith("github.com/") or "/blob/" not in where:
        return None
    return where.removeprefix("github.com/")


def publish_url(layout: Layout) -> str | None:
    """The publish URL course.toml keeps (the release's: it reads this key alone, so that a
    setting the release is about to make right never stops it); None where it keeps none."""
    if not layout.settings.is_file():
        return None
    url = _toml(layout.settings.read_text(encoding="utf-8")).get("publish_url")
    setting = SETTING["publish_url"]
    if url is not None and not setting.check(url):
        raise _refused(setting, setting.path, url)
    return url


def _toml(text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise GradingError(f"{COURSE_FILE}: {err}") from None


# A line that sets publish_url, and one that opens a table (commented or not: a table
# uncommented later must not take in a key written below it).
PUBLISH_LINE = re.compile(r"^[ \t]*publish_url[ \t]*=.*$", re.MULTILINE)
PUBLISH_EXAMPLE = re.compile(r"^#[ \t]*publish_url[ \t]*=.*$", re.MULTILINE)
TABLE_LINE = re.compile(r"^[ \t]*\[", re.MULTILINE)
ANY_TABLE_LINE = re.compile(r"^#?[ \t]*\[", re.MULTILINE)


def with_publish_url(text: str, url: str) -> str:
    """course.toml's text with publish_url set to `url`, all else as it was: the line that sets
    it, or its commented example, becomes the setting; else the setting goes above the first
    table, where a key without one must stand."""
    _toml(text)  # a file that does not read is said as such, not as a place it lacks
    written = _placed(text, f"publish_url = {json.dumps(url.strip())}")  # JSON's is TOML's too
    try:
        if tomllib.loads(written).get("publish_url") == url.strip():
            return written
    except tomllib.TOMLDecodeError:
        pass
    raise GradingError(
        f'{COURSE_FILE}: could not write publish_url = "{url.strip()}" into it; write it there, '
        "above the first [table], and release again"
    )


def _placed(text: str, line: str) -> str:
    table = TABLE_LINE.search(text)
    end = table.start() if table else len(text)
    for pattern in (PUBLISH_LINE, PUBLISH_EXAMPLE):
        found = pattern.search(text, 0, end)
        if found:
            return text[: found.start()] + line + text[found.end() :]
    at = ANY_TABLE_LINE.search(text)
    if at is None:
        return f"{text.rstrip()}\n\n{line}\n".lstrip()
    return f"{text[: at.start()]}{line}\n\n{text[at.start() :]}"


def read(text: str, released: tuple[str, ...], points: dict[str, float] | None = None) -> Term:
    """course.toml's text, checked whole, into a Term; `points`: each released notebook's."""
    given = _toml(text)
    _check(given)
    zone = ZoneInfo(given["timezone"]) if "timezone" in given else None
    assigned = _names(given, "assigned", released, released)
    extra = _names(given, "extra_credit", SETTING["extra_credit"].default, released)
    due = {name: aware(when, zone) for name, when in given.get("due", {}).items()}
    late, collect = given.get("late", {}), given.get("collect", {})
    pattern = collect.get("pattern")
    return Term(
        released=released,
        assigned=assigned,
        extra_credit=tuple(n for n in extra if n in assigned),
        zone=zone,
        due=due,
        extensions=_extensions(given, due, zone),
        late=Late(
            late.get("penalty"),
            float(late.get("percent_per_day", SETTING["late.percent_per_day"].default)),
        ),
        roster_id=given.get("roster", {}).get("id"),
        collect_pattern=compile_pattern(pattern) if pattern else None,
        time_format=collect.get("time_format"),
        stamped=collect.get("stamped", SETTING["collect.stamped"].default),
        autograde=_autograde(given.get("autograde", {})),
        points=dict(points or {}),
    )


def _autograde(table: dict) -> MappingProxyType:
    """[autograde] as the file sets it, and only that: the command's own defaults fill the
    rest, and its options override both. A memory cap is a float, as --memory-gb gives it."""
    return MappingProxyType({k: float(v) if k == "memory_gb" else v for k, v in table.items()})


def read_term(layout: Layout) -> Term:
    """The course's Term: course.toml and the release, read and checked now; a course with no
    course.toml has every default. Before a release, the notebooks it names are not checked
    (nothing is assigned)."""
    text = layout.settings.read_text(encoding="utf-8") if layout.settings.is_file() else ""
    names = tuple(layout.released())
    return read(text, names, {name: _points(layout.release_notebook(name)) for name in names})


def _points(release) -> float:
    return float(sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in release.cells))


def _default(setting: Setting) -> str:
    return setting.default if isinstance(setting.default, str) else _written(setting.default)


def starting_file() -> str:
    """A course.toml to start from, which the first release writes where there is none: each
    setting commented out, with its meaning, what it holds, its default and an example, a
    table's examples under its header; read as is, it is every default."""
    lines = [STARTING_HEADER]
    for table, group in groupby(SETTINGS, key=lambda s: s.path[:-1] or s.path):
        group = list(group)
        for setting in group:
            said = f"{setting.key}: {setting.description}. It holds {setting.allows}; default: "
            lines += textwrap.wrap(
                f"{said}{_default(setting)}.", 96, initial_indent="# ", subsequent_indent="#   "
            )
        if len(group[0].path) > 1:
            lines.append(f"# [{'.'.join(SAMPLES.get(part, part) for part in table)}]")
        lines += [f"# {setting.line()}" for setting in group]
        lines.append("")
    return "\n".join(lines)


def readme_table() -> str:
    """grader/README.md's table of every setting, one row each."""
    rows = [
        "| setting | holds | default | what it means | example |",
        "|---|---|---|---|---|",
    ]
    for setting in SETTINGS:
        cells = (
            f"`{setting.key}`",
            setting.allows,
            _default(setting),
            setting.description,
            f"`{setting.line()}`",
        )
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Print what the settings render, for a maintainer to paste where it goes."""
    parser = argparse.ArgumentParser(
        prog="python -m grader.term.settings", description=main.__doc__
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--readme-table", action="store_true", help="grader/README.md's table of settings"
    )
    which.add_argument(
        "--starting-file", action="store_true", help="the course.toml the first release writes"
    )
    args = parser.parse_args(argv)
    print(readme_table() if args.readme_table else starting_file(), end="")


if __name__ == "__main__":
    main()
