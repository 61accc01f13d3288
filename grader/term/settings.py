"""COURSE/course.toml, read into a typed, frozen Term (rules.py) and checked whole: a key that
is unknown or holds what it may not stops the command before any work, with one line naming the
key and what it allows. Each key is declared once below (`KEYS`), with its default and what it
means, as deadlines.py's docstring shows them in use. A command reads it once, when it opens the
course (course_open.py): a file edited while it runs applies from the next command.
"""

from __future__ import annotations

import json
import re
import textwrap
import tomllib
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from transformer_lab.catalogue import EXTRA_CREDIT

from ..course import COURSE_FILE, GradingError, Layout
from .rules import Late, Term

# The lecture's optional challenge, "for anyone who finishes the core path early": skipping it
# must cost nothing, so by default its points are extra credit.
PENALTIES = ("none", "zero", "percent_per_day")

# key -> (default, what it means): every key course.toml may hold.
KEYS = {
    "assigned": ("every released notebook", "the notebooks that count, a list of names"),
    "extra_credit": (list(EXTRA_CREDIT), "assigned notebooks whose points add beyond the maximum"),
    "timezone": ("this machine's", "the zone of times written without an offset (IANA name)"),
    "publish_url": (
        "none: the published notebooks carry no Colab badge",
        "where publish/ is pushed, github.com/ORG/REPO/blob/BRANCH[/FOLDER]: each published "
        "notebook's Colab badge opens it and its setup cell installs the wheel from it; the first "
        "`make release PUBLISH_URL=...` writes it here, and every later release builds with it",
    ),
    "due": ({}, "[due] notebook = a date and time; a notebook not listed has no due date"),
    "extensions": ({}, "[extensions.STUDENT] notebook = days, or a later date and time"),
    "late": ({}, f"[late] penalty = {' | '.join(PENALTIES)}, percent_per_day = 10"),
    "roster": ({}, "[roster] id = the LMS export's column that is the student's id"),
    "collect": (
        {},
        "[collect] pattern = a regular expression naming (?P<student>...), time_format = "
        "strptime's format of its (?P<time>...), stamped = true or false",
    ),
}
# key -> how a setting is written: the commented starting file shows each.
EXAMPLES = {
    "assigned": 'assigned = ["01_attention", "02_causal_mask", "04_training", "06_stretch"]',
    "extra_credit": 'extra_credit = ["06_stretch"]',
    "timezone": 'timezone = "Europe/Berlin"',
    "publish_url": 'publish_url = "github.com/ORG/REPO/blob/main"',
    "due": (
        "[due]\n01_attention = 2027-01-15T23:59:00+01:00\n"
        '02_causal_mask = "2027-01-22T23:59:00+01:00"'
    ),
    "extensions": "[extensions.alice]\n01_attention = 2",
    "late": '[late]\npenalty = "percent_per_day"\npercent_per_day = 10',
    "roster": '[roster]\nid = "SIS Login ID"',
    "collect": (
        "[collect]\npattern = '_(?P<student>[^_]+)_attempt_(?P<time>\\d{4}(-\\d\\d){5})_'\n"
        'time_format = "%Y-%m-%d-%H-%M-%S"\nstamped = false'
    ),
}
STARTING_HEADER = """# The term's settings, read by python -m grader at the start of each command.
# Every setting is commented out, so each has its default; uncomment and edit what this term
# needs. A setting that is not right stops the next command in one line that names it.
# grader/README.md says more of each ("Which notebooks count", "Due dates and late penalties",
# "The roster and LMS names"). Settings without a [table] come first.
"""
SECTIONS = {
    "late": {"penalty", "percent_per_day"},
    "roster": {"id"},
    "collect": {"pattern", "time_format", "stamped"},
}


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
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise GradingError(f'course.toml: {key} = ["01_attention", ...], a list of notebooks')
    unknown = sorted(set(names) - set(released))
    if unknown and key in given and released:  # a default may name one this release lacks
        raise GradingError(
            f"course.toml: {key} names {', '.join(unknown)}, not released "
            f"(released: {', '.join(released)})"
        )
    return tuple(name for name in released if name in names)


def _zone(name) -> ZoneInfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise GradingError(f"course.toml: unknown timezone {name!r}") from None


def _table(given: dict, key: str) -> dict:
    table = given.get(key, {})
    if not isinstance(table, dict):
        raise GradingError(f"course.toml: {key} is a table: {KEYS[key][1]}")
    allowed = SECTIONS.get(key)
    unknown = sorted(set(table) - allowed) if allowed else []
    if unknown:
        raise GradingError(
            f"course.toml: [{key}] {unknown[0]} is not a setting; [{key}] holds "
            f"{', '.join(sorted(allowed))}"
        )
    return table


def _extensions(given: dict, due: dict, zone) -> dict:
    found = {}
    for student, notebooks in _table(given, "extensions").items():
        if not isinstance(notebooks, dict):
            raise GradingError(f"course.toml: [extensions.{student}] notebook = days or a date")
        for assignment, value in notebooks.items():
            where = f"extension {student}/{assignment}"
            if isinstance(value, bool) or not isinstance(value, (int, float, str, datetime)):
                raise GradingError(f"course.toml: {where}: days or a date")
            if isinstance(value, (int, float)):
                found[student.casefold(), assignment] = float(value)
                continue
            if assignment not in due:
                raise GradingError(
                    f"course.toml: an extension for {student} on {assignment}, not due"
                )
            found[student.casefold(), assignment] = aware(value, zone, where)
    return found


def _late(given: dict) -> Late:
    late = _table(given, "late")
    method = late.get("penalty")
    if method is not None and method not in PENALTIES:
        raise GradingError(
            f"course.toml: [late] penalty = {method!r}: none, zero or percent_per_day"
        )
    percent = late.get("percent_per_day", 10)
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or percent < 0:
        raise GradingError("course.toml: [late] percent_per_day = a number of percent, 0 or more")
    return Late(method, float(percent))


def _collect(given: dict) -> dict:
    settings = _table(given, "collect")
    pattern, time_format = settings.get("pattern"), settings.get("time_format")
    stamped = settings.get("stamped", False)
    if not isinstance(stamped, bool):
        raise GradingError("course.toml: [collect] stamped = true or false")
    if time_format is not None and not isinstance(time_format, str):
        raise GradingError('course.toml: [collect] time_format = "%Y-%m-%d-%H-%M-%S", a string')
    return {
        "collect_pattern": compile_pattern(pattern) if pattern else None,
        "time_format": time_format,
        "stamped": stamped,
    }


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


def _publish_url(given: dict) -> str | None:
    url = given.get("publish_url")
    if url is not None and (not isinstance(url, str) or published_folder(url) is None):
        raise GradingError(
            'course.toml: publish_url = "github.com/ORG/REPO/blob/BRANCH", the GitHub folder '
            "publish/ is pushed to"
        )
    return url


def publish_url(layout: Layout) -> str | None:
    """The publish URL course.toml keeps (the release's: it reads this key alone, so that a
    setting the release is about to make right never stops it); None where it keeps none."""
    if not layout.settings.is_file():
        return None
    return _publish_url(_toml(layout.settings.read_text(encoding="utf-8")))


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
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise GradingError(
            f"course.toml: {unknown[0]} is not a setting; it holds {', '.join(KEYS)}"
        )
    zone = _zone(given.get("timezone"))
    _publish_url(given)  # the release's (publish_url above): checked here with the rest
    assigned = _names(given, "assigned", list(released), released)
    extra = _names(given, "extra_credit", list(EXTRA_CREDIT), released)
    due = {name: aware(when, zone, f"[due] {name}") for name, when in _table(given, "due").items()}
    roster_id = _table(given, "roster").get("id")
    if roster_id is not None and not isinstance(roster_id, str):
        raise GradingError('course.toml: [roster] id = "SIS Login ID", a column of the export')
    return Term(
        released=released,
        assigned=assigned,
        extra_credit=tuple(n for n in extra if n in assigned),
        zone=zone,
        due=due,
        extensions=_extensions(given, due, zone),
        late=_late(given),
        roster_id=roster_id,
        **_collect(given),
        points=dict(points or {}),
    )


def read_term(layout: Layout) -> Term:
    """The course's Term: course.toml and the release, read and checked now; a course with no
    course.toml has every default. Before a release, the notebooks it names are not checked
    (nothing is assigned)."""
    text = layout.settings.read_text(encoding="utf-8") if layout.settings.is_file() else ""
    names = tuple(layout.released())
    return read(text, names, {name: _points(layout.release_notebook(name)) for name in names})


def _points(release) -> float:
    return float(sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in release.cells))


def starting_file() -> str:
    """A course.toml to start from, which the first release writes where there is none: each
    setting commented out, with its meaning, its default and how it is written; read as is, it
    is every default."""
    lines = [STARTING_HEADER]
    for key, (default, meaning) in KEYS.items():
        said = f"{key}: {meaning}; default: {_default(default)}."
        lines += textwrap.wrap(said, 96, initial_indent="# ", subsequent_indent="#   ")
        lines += [f"# {line}" for line in EXAMPLES[key].splitlines()]
        lines.append("")
    return "\n".join(lines)


def _default(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return value if isinstance(value, str) else "none set"
