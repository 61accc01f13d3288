"""`make core-minutes`: minutes of each exercise's core path on both paths, beside the lecture's.

The core path is what a student meets unfolded in a notebook (the build's badge, setup cell and
closing cell included, the pipeline's cells left out): the markdown outside `<details>` folds and
outside any section whose heading begins with "Optional" or "After the lab" (that section runs to
the next heading of its level or above; its code cells are left out too), each exercise's hint
fold (a student who writes the stub opens it), and the provided code with what it shows: the
text it prints (the package's lines as well as its own `print`s), its tables and its figures,
as a run of the notebook recorded them (`maintainer/core_measurements.py`,
docs/shown_outputs.json). The lines between `### BEGIN SOLUTION` and `### END SOLUTION` are the
lines the student writes; hidden tests are never shown; each checkpoint is met twice (one retry).
Each notebook starts a fresh runtime (Colab gives every notebook its own machine): finding and
opening it, connecting, and releasing it at the end (stated figures), the kernel's start and the
setup cell measured by `maintainer/fresh_runtime.py`; and Google's consent to the student's Drive,
met in the setup cell (`tl.use_drive`).

An exercise runs from its "## Exercise N · ... (M min)" heading to the next exercise's. What
comes before a notebook's first exercise (title, setup cell, introduction) and the runtime's
start are the notebook's **opening**: part of no exercise, so held by the totals only. The
notebook's compute is its first exercise's. The estimate adds up stated rates (below) and the
compute measured: the CPU path at the mode `auto` picks on a CPU, on one core as Colab's CPU
runtime has (docs/one_core_compute.json), and where that is not measured yet the best figure
recorded, labelled; the T4 path at the mode `auto` picks on a GPU, estimated from the FLOP count
of the training (only 04 trains; the rest run on a CPU runtime on either path).

    python -m maintainer.core_minutes            # print the table
    python -m maintainer.core_minutes --write    # and write docs/core_path.md
    make core-minutes                            # measure, then --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from transformer_lab.catalogue import TRAINING_NOTEBOOK
from transformer_lab.model import GPTConfig
from transformer_lab.runtime import BUDGETS, resolve_mode
from transformer_lab.train import T_DEFAULT

from . import ROOT, fresh_runtime
from .notebook_build import HEADING, READ_AFTERWARDS, source_notebook, sources

DOC = ROOT / "docs" / "core_path.md"
BASELINES = ROOT / "data" / "baselines.json"
SHOWN = ROOT / "docs" / "shown_outputs.json"  # what each code cell shows: core_measurements
ONE_CORE = ROOT / "docs" / "one_core_compute.json"  # each notebook's compute on one CPU core

# The rates of the estimate, each stated once with where it comes from (docs/core_path.md).
READ_WPM = 180  # Brysbaert (2019): 238 wpm for non-fiction; prose dense with equations is slower
CODE_LINES_PER_MIN = 40  # provided code is run and glanced at, not studied: 1.5 s a line
MINUTES_PER_WRITTEN_LINE = 0.75  # a line of a stub, with its equation and hint at hand
PROMPT_MINUTES = 1.0  # a "Predict first" or a numbered question left in the path: stop and think
ANSWER_MINUTES = 2.0  # a written answer of two or three sentences (notebook 04's prediction)
FIGURE_MINUTES = 0.5  # a figure: its title, axes and legend, and the point it marks
TABLE_MINUTES = 0.5  # a displayed table: a results table of a few rows
RETRY_MINUTES = 1.0  # one failing run of a checkpoint: read the named mistake, fix, run again
# Google's consent to mount the Drive, in each notebook's setup cell: Colab's "Permit this
# notebook to access your Google Drive files?", then Google's account chooser and its list of
# scopes, read and allowed, in a window of its own: six clicks or so. An estimate (no Colab here).
DRIVE_PROMPT_MINUTES = 1.0
# A fresh runtime's start, the parts that cannot be measured here (no Colab, no browser): each a
# judgement, in seconds, with what it is. The kernel's start and the setup cell are measured.
START_STATED = (
    (15, "find the notebook's link (the course's page) and open it"),
    (10, "Colab loads the notebook from GitHub and shows it"),
    (10, 'the first run\'s warning, "This notebook was not authored by Google": Run anyway'),
    (
        20,
        "Colab connects a fresh runtime (a CPU one, or a T4), and the downloads the measurement "
        "makes from local copies: the clone from GitHub, pip's build backend, the 1.1 MB corpus",
    ),
    (10, "at the end, Runtime → Disconnect and delete runtime, confirmed"),
)
# A notebook that tells the student to open the next one early hides that one's runtime start
# behind its own time. "While you work here" (in a notebook's last exercise): the start's
# waits, Colab loading the notebook and connecting a runtime (START_WAITS, of START_STATED), the
# kernel's start and the setup cell; the clicks stay counted. "While it trains" (04's training):
# the whole start and the next notebook's Drive consent, up to the training's length on that path.
WHILE_READING = re.compile(r"\*\*Next, while you work here:\*\* open notebook (\d\d)")
WHILE_TRAINING = re.compile(r"\*\*Next, while it trains:\*\* open notebook (\d\d)")
START_WAITS = (10, 20)
# A T4 peaks at 65 TFLOP/s in fp16 on its tensor cores; a d_model-128 model's small matrices, the
# per-step kernel launches and the LSTM's 128 sequential steps keep it to a few per cent of that.
T4_SUSTAINED_FLOPS = 2e12
STUDENT_MODELS = ("gpt", "lstm")  # what notebook 04 trains for a student (one seed each)
# Where the CPU path's compute of a notebook comes from, best first (docs/core_path.md says each).
ONE_CORE_MEASURED = "one core"
ONE_THREAD_SCALED = "one thread, scaled"
TWO_CORES = "2 cores"
# What is held: the lecture's 50 minutes on the T4 path, the 55-minute slot on the CPU path, and
# each exercise to its own minutes (scaled by 55/50 on the CPU path) plus this tolerance: the
# rates are judgements to about a prompt's worth, and the totals hold without it.
LECTURE_TOTAL, SLOT = 50, 55
EXERCISE_TOLERANCE = 0.5
# A notebook's title, setup cell and introduction, and its runtime's start: no exercise's.
OPENING = "opening"

FOLD = re.compile(r"<details>(.*?)(?:</details>|\Z)", re.DOTALL)  # unclosed: to the cell's end
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
HINT = re.compile(r"\s*Hint\b")  # the summary of an exercise's hint fold
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", re.M | re.S)
HIDDEN = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*", re.M | re.S
)
PROMPT = re.compile(r"^\*\*(?:\d+\.|Predict first)", re.MULTILINE)
EXERCISE = re.compile(r"^#{1,6} (Exercise \d+) · .*\((\d+) min\b", re.MULTILINE)
LECTURE_MINUTES = EXERCISE
WORD = re.compile(r"\S*[A-Za-z0-9]\S*")
DRIVE = re.compile(r"\btl\.use_drive\(")  # the setup cell's call, where Google asks consent


@dataclass(frozen=True)
class Shown:
    """What one code cell shows when it runs: the words it prints, its tables and figures."""

    words: int = 0
    tables: int = 0
    figures: int = 0


@dataclass(frozen=True)
class CorePath:
    """What a student reads, writes, looks at and stops to think about on a core path."""

    words: int = 0
    hint_words: int = 0  # the words of the exercises' hint folds, opened
    lines_read: int = 0
    lines_written: int = 0
    prompts: int = 0
    answers: int = 0
    printed_words: int = 0  # what the code cells print, the package's lines included
    figures: int = 0
    tables: int = 0
    checkpoints: int = 0  # each met once more: one retry
    drive_prompts: int = 0

    @property
    def minutes(self) -> float:
        """Reading, writing, looking and thinking, without the runtime's start and compute."""
        return (
            (self.words + self.hint_words + self.printed_words) / READ_WPM
            + self.lines_read / CODE_LINES_PER_MIN
            + self.lines_written * MINUTES_PER_WRITTEN_LINE
            + self.prompts * PROMPT_MINUTES
            + self.answers * ANSWER_MINUTES
            + self.figures * FIGURE_MINUTES
            + self.tables * TABLE_MINUTES
            + self.checkpoints * RETRY_MINUTES
            + self.drive_prompts * DRIVE_PROMPT_MINUTES
        )

    def __add__(self, other: CorePath) -> CorePath:
        return CorePath(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


def cell_digest(cell) -> str:
    """What a recorded output belongs to: the cell's source, as solutions/ writes it."""
    return hashlib.sha256(cell.source.encode()).hexdigest()[:16]


def _code_lines(text: str) -> int:
    """Lines that hold code: not blank, not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def _unfolded(markdown: str) -> tuple[str, str]:
    """(the markdown as shown, each fold reduced to its summary line; the text of its hints)."""
    hints = []

    def summary(fold: re.Match) -> str:
        shown = SUMMARY.search(fold.group(1))
        if shown and HINT.match(shown.group(1)):
            hints.append(fold.group(1)[shown.end() :])
        return shown.group(1) if shown else ""

    return FOLD.sub(summary, markdown), "\n".join(hints)


def _is_nbgrader(cell, key: str) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get(key))


def _code_counts(source: str) -> CorePath:
    """A provided code cell's text: the lines read and written."""
    source = HIDDEN.sub("", source)
    return CorePath(
        lines_read=_code_lines(SOLUTION.sub("", source)),
        lines_written=_code_lines("\n".join(SOLUTION.findall(source))),
    )


@dataclass
class _Reader:
    """Reads a notebook's cells in order, as a student meets them; `skipped_level` is the level
    of the Optional / After the lab heading we are under, if any. `shown`: what each code cell
    shows, by its digest."""

    shown: dict[str, Shown]
    skipped_level: int | None = None
    asked_drive: bool = False

    def markdown(self, cell) -> CorePath:
        if self.skipped_level is None and _is_nbgrader(cell, "solution"):
            return CorePath(answers=1)  # the student sees an empty answer cell and writes in it
        text, hints = _unfolded(cell.source)
        shown = []
        for line in text.splitlines():
            heading = HEADING.match(line)
            level = len(heading.group(1)) if heading else None
            if heading and (self.skipped_level is None or level <= self.skipped_level):
                self.skipped_level = level if READ_AFTERWARDS.match(heading.group(2)) else None
            if self.skipped_level is None:
                shown.append(line)
        if self.skipped_level is not None:
            hints = ""  # a hint set aside with its section is not opened on the core path
        text = "\n".join(shown)
        return CorePath(
            words=len(WORD.findall(text)),
            hint_words=len(WORD.findall(hints)),
            prompts=len(PROMPT.findall(text)),
        )

    def code(self, cell) -> CorePath:
        if self.skipped_level is not None:
            return CorePath()
        counted = _code_counts(cell.source)
        if cell.metadata.get("cellView") == "form":  # Colab shows its title line alone
            counted = CorePath(lines_read=1)
        shown = self.shown.get(cell_digest(cell), Shown())
        drive = not self.asked_drive and bool(DRIVE.search(cell.source))
        self.asked_drive |= drive  # once a notebook: the later uses follow that decision
        checkpoint = int(_is_nbgrader(cell, "grade"))
        return counted + CorePath(
            printed_words=shown.words,
            figures=shown.figures,
            tables=shown.tables,
            checkpoints=checkpoint,
            drive_prompts=int(drive),
        )


def _walk(cells, shown: dict[str, Shown]) -> tuple[list[list], list]:
    """(each part of a notebook: [name, lecture minutes, core path]; the code cells of its core
    path), reading the cells in order."""
    reader, parts, core = _Reader(shown), [[OPENING, None, CorePath()]], []
    for cell in cells:
        found = EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if found and reader.skipped_level is None:
            parts.append([found.group(1), int(found.group(2)), CorePath()])
        if cell.cell_type == "markdown":
            counted = reader.markdown(cell)
        else:
            counted = reader.code(cell)
            if reader.skipped_level is None:
                core.append(cell)
        parts[-1][2] = parts[-1][2] + counted
    return parts, core


def exercises_of(cells, shown: dict[str, Shown] | None = None) -> list[tuple]:
    """(part, its lecture minutes, its core path) for each part of a notebook's cells, in order:
    the OPENING (what comes before the first exercise, no minutes of its own), then each
    exercise. A notebook with no exercise (the optional challenge) is one part, named "-", with
    no minutes. `shown`: what each code cell shows, by its digest (none: nothing)."""
    parts, _ = _walk(cells, shown or {})
    if len(parts) == 1:
        parts[0][0] = "-"
    return [tuple(part) for part in parts]


def core_code_cells(cells) -> list:
    """The code cells a student runs on the core path, in order."""
    return _walk(cells, {})[1]


def core_path_of(cells, shown: dict[str, Shown] | None = None) -> CorePath:
    """The core path of a notebook's cells, all exercises together."""
    total = CorePath()
    for _, _, path in exercises_of(cells, shown):
        total = total + path
    return total


def lecture_minutes(path: Path) -> int | None:
    """The lecture's minutes for a notebook: the sum of its Exercise headings' "(N min)"; None
    for a notebook with no exercise of the core path (the optional challenge)."""
    cells = source_notebook(path).cells
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    found = [int(minutes) for _, minutes in LECTURE_MINUTES.findall(markdown)]
    return sum(found) if found else None


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def baselines() -> dict:
    return json.loads(BASELINES.read_text(encoding="utf-8"))


def recorded_shown() -> dict:
    """docs/shown_outputs.json: what each code cell of the core path showed, by notebook."""
    recorded = _read(SHOWN)
    if recorded is None:
        raise SystemExit(f"{SHOWN.relative_to(ROOT)} is missing: run `make core-minutes`")
    return recorded


def shown_of(name: str, recorded: dict) -> dict[str, Shown]:
    return {d: Shown(**c) for d, c in recorded["notebooks"].get(name, {}).items()}


def unrecorded(path: Path, recorded: dict) -> list[str]:
    """The code cells of a notebook's core path whose output the record lacks (new or changed
    since it was measured), by their first line."""
    shown = recorded["notebooks"].get(path.stem, {})
    cells = core_code_cells(source_notebook(path).cells)
    return [c.source.partition("\n")[0] for c in cells if cell_digest(c) not in shown]


def cpu_run(recorded: dict) -> tuple[str, dict]:
    """The recorded run at the mode `auto` picks on a CPU: (its key, the run)."""
    key = f"{resolve_mode('auto', 'cpu')}/cpu"
    if key not in recorded["runs"]:
        raise SystemExit(f"{BASELINES} holds no {key} run: run `make regenerate-baselines` first")
    return key, recorded["runs"][key]


def _seed_seconds(row: dict) -> list[float]:
    """The training seconds of every run a results row records (none for the n-grams)."""
    if "seeds" in row:
        return [seed["train_seconds"] for seed in row["seeds"].values()]
    return [row["train_seconds"]] if row.get("train_seconds") else []


def _seed(row: dict) -> float:
    """A seed's training seconds: the fastest recorded seed. Every seed does the same work, so a
    slower one measures what else the machine was doing (timeit's rule)."""
    return min(seed["train_seconds"] for seed in row["seeds"].values())


def ladder_full(recorded: dict) -> dict | None:
    """The ablation ladder's full model at the mode `auto` picks on a CPU (trained with one torch
    thread a run), with the ladder's provenance; None where the ladder is not recorded."""
    ladder = recorded.get("ablations", {}).get(f"{resolve_mode('auto', 'cpu')}/cpu")
    if ladder is None:
        return None
    return ladder["rungs"]["full"] | {"provenance": ladder["provenance"]}


def training_flops(run: dict) -> float:
    """FLOPs of 04's training at the mode `auto` picks on a GPU: 6 per parameter per token, plus
    the GPT's attention (QK^T and AV, forward and backward, the causal half: 6 T d_model a layer
    per token), as docs/performance.md counts them."""
    budget = BUDGETS[resolve_mode("auto", "cuda")]
    tokens = budget.batch_size * budget.steps * T_DEFAULT
    config = GPTConfig()
    rows = run["results"]["rows"]
    per_token = sum(6 * rows[m]["parameters"] for m in STUDENT_MODELS)
    per_token += 6 * config.n_layers * T_DEFAULT * config.d_model
    return per_token * tokens


@dataclass(frozen=True)
class Compute:
    cpu_s: float  # the CPU path: measured on one core, or the best figure recorded (cpu_from)
    t4_s: float  # estimated: training from its FLOPs, the rest as measured on the CPU
    cpu_from: str = ""  # ONE_CORE_MEASURED, ONE_THREAD_SCALED or TWO_CORES


@dataclass(frozen=True)
class Measured:
    """What the estimate reads besides solutions/: the pipeline's record (data/baselines.json),
    the fresh runtime's start, what each cell shows and, once measured, the compute on one core."""

    recorded: dict
    start: dict
    shown: dict
    one_core: dict | None

    @classmethod
    def now(cls) -> Measured:
        return cls(baselines(), fresh_runtime.recorded(), recorded_shown(), _read(ONE_CORE))


def _two_cores(name: str, run: dict) -> tuple[float, float]:
    """(a notebook's seconds on the pipeline's 2 cores, of which training that no student does:
    04's further seeds)."""
    seconds = run["provenance"]["notebook_seconds"][name]
    if name != TRAINING_NOTEBOOK:
        return seconds, 0.0
    rows = run["results"]["rows"]
    every = sum(sum(_seed_seconds(row)) for row in rows.values())
    one = sum(_seed(rows[m]) for m in STUDENT_MODELS)
    return seconds, every - one


def cpu_seconds(name: str, measured: Measured) -> tuple[float, str]:
    """A notebook's compute on the CPU path and where the figure comes from: measured on one
    core; for 04 without it, the ladder's full model (one torch thread) with the LSTM and the
    rest scaled from 2 cores to 1 by the GPT's ratio; else the pipeline's 2 cores."""
    one_core = (measured.one_core or {}).get("notebooks", {})
    if name in one_core:
        return one_core[name]["core_s"], ONE_CORE_MEASURED
    _, run = cpu_run(measured.recorded)
    seconds, not_a_students = _two_cores(name, run)
    full = ladder_full(measured.recorded) if name == TRAINING_NOTEBOOK else None
    if full is None:
        return seconds - not_a_students, TWO_CORES
    gpt = _seed(run["results"]["rows"]["gpt"])
    ratio = _seed(full) / gpt
    return _seed(full) + (seconds - not_a_students - gpt) * ratio, ONE_THREAD_SCALED


def compute(name: str, measured: Measured) -> Compute:
    """A notebook's compute on the CPU path and the T4 path (estimated)."""
    cpu, where = cpu_seconds(name, measured)
    if name != TRAINING_NOTEBOOK:
        return Compute(cpu, cpu, where)  # no training: a CPU runtime on either path
    _, run = cpu_run(measured.recorded)
    seconds, _ = _two_cores(name, run)
    rows = run["results"]["rows"]
    rest = seconds - sum(sum(_seed_seconds(row)) for row in rows.values())  # n-grams, scoring
    return Compute(cpu, training_flops(run) / T4_SUSTAINED_FLOPS + rest, where)


def start_seconds(start: dict | None = None) -> float:
    """A fresh runtime's start: the stated parts, then the kernel's start and the setup cell as
    `maintainer/fresh_runtime.py` measured them (docs/fresh_runtime.json)."""
    start = start or fresh_runtime.recorded()
    stated = sum(seconds for seconds, _ in START_STATED)
    return stated + start["kernel_start_s"] + start["setup_cell_s"]


@dataclass(frozen=True)
class Estimate:
    """One part of a notebook on both paths: its core path, the runtime's start (the opening's)
    and the notebook's compute (its first exercise's)."""

    name: str  # the notebook
    exercise: str
    path: CorePath
    lecture: int | None
    compute: Compute = field(default_factory=lambda: Compute(0.0, 0.0))
    start_s: float = 0.0
    # Seconds of the opening hidden behind the notebook before, which opened this one early
    # (T4 path, CPU path): WHILE_READING, WHILE_TRAINING.
    hidden: tuple[float, float] = (0.0, 0.0)

    @property
    def minutes_t4(self) -> float:
        return self.path.minutes + (self.start_s + self.compute.t4_s - self.hidden[0]) / 60

    @property
    def minutes_cpu(self) -> float:
        return self.path.minutes + (self.start_s + self.compute.cpu_s - self.hidden[1]) / 60

    @property
    def held(self) -> bool:
        """An exercise of the core path: held to its own minutes."""
        return self.lecture is not None

    @property
    def in_totals(self) -> bool:
        """Counted in the core path's totals: its exercises and the openings of their notebooks."""
        return self.held or self.exercise == OPENING

    @property
    def limit_t4(self) -> float:
        return self.lecture + EXERCISE_TOLERANCE

    @property
    def limit_cpu(self) -> float:
        return self.lecture * SLOT / LECTURE_TOTAL + EXERCISE_TOLERANCE


def estimates_of(path: Path, measured: Measured) -> list[Estimate]:
    """The estimates of one solution file's parts, in order: the start on the first part (the
    opening), the notebook's compute on its first exercise. Refused where the record of what its
    cells show lacks one of them."""
    missing = unrecorded(path, measured.shown)
    if missing:
        raise SystemExit(
            f"{SHOWN.relative_to(ROOT)} does not record what {len(missing)} code cell(s) of "
            f"{path.stem}'s core path show (new or changed since): {missing[0]!r}. "
            "Run `make core-minutes`."
        )
    shown = shown_of(path.stem, measured.shown)
    parts = exercises_of(source_notebook(path).cells, shown)
    computing = min(1, len(parts) - 1)
    start = start_seconds(measured.start)
    return [
        Estimate(
            path.stem,
            name,
            counted,
            minutes,
            compute(path.stem, measured) if i == computing else Compute(0.0, 0.0),
            start if i == 0 else 0.0,
        )
        for i, (name, minutes, counted) in enumerate(parts)
    ]


def totals(rows: list[Estimate]) -> tuple[float, float]:
    """The core path's minutes on the T4 and the CPU path: its exercises and their openings."""
    counted = [e for e in rows if e.in_totals]
    return sum(e.minutes_t4 for e in counted), sum(e.minutes_cpu for e in counted)


def estimates(measured: Measured | None = None) -> list[Estimate]:
    measured = measured or Measured.now()
    rows = [e for p in sources() for e in estimates_of(p, measured)]
    return opened_early(rows, sources(), measured)


def opened_early(rows: list[Estimate], paths: list[Path], measured: Measured) -> list[Estimate]:
    """`rows` with the opening of each notebook that the one before tells the student to open
    early (in its shown markdown) partly hidden behind that one's time (WHILE_READING,
    WHILE_TRAINING)."""
    start = measured.start
    waits = sum(START_WAITS) + start["kernel_start_s"] + start["setup_cell_s"]
    whole = start_seconds(start) + DRIVE_PROMPT_MINUTES * 60
    rows = list(rows)
    for path in paths:
        shown = FOLD.sub("", "\n".join(_markdown(path)))
        compute = next((e.compute for e in rows if e.name == path.stem and e.compute.cpu_s), None)
        early = [(n, (waits, waits)) for n in WHILE_READING.findall(shown)]
        if compute is not None:
            during = (min(whole, compute.t4_s), min(whole, compute.cpu_s))
            early += [(n, during) for n in WHILE_TRAINING.findall(shown)]
        for number, hidden in early:
            for i, e in enumerate(rows):
                if e.name.startswith(f"{number}_") and e.exercise == OPENING:
                    rows[i] = replace(e, hidden=hidden)
    return rows


def _markdown(path: Path) -> list[str]:
    cells = source_notebook(path).cells
    return [c.source for c in cells if c.cell_type == "markdown"]


def overruns(rows: list[Estimate]) -> list[str]:
    """What does not fit, one line each: an exercise past its minutes on either path (with the
    tolerance), or a path past its total (the lecture's 50 on a T4, the 55-minute slot on a CPU)."""
    found = []
    for e in (e for e in rows if e.held):
        for where, minutes, limit in (
            ("T4", e.minutes_t4, e.limit_t4),
            ("CPU", e.minutes_cpu, e.limit_cpu),
        ):
            if minutes > limit:
                found.append(
                    f"{e.exercise} ({e.name}), {where} path: {minutes:.1f} min > {limit:.1f}"
                )
    t4, cpu = totals(rows)
    for where, total, limit in (("T4", t4, LECTURE_TOTAL), ("CPU", cpu, SLOT)):
        if total > limit:
            found.append(f"the core path, {where} path: {total:.1f} min > {limit}")
    return found


def _start_cell(e: Estimate) -> str:
    if not any(e.hidden):
        return f"{e.start_s:.0f} s"
    return f"{e.start_s:.0f} s ({e.hidden[0]:.0f} / {e.hidden[1]:.0f} s hidden)"


def _minutes_cell(minutes: float, limit: float | None) -> str:
    return f"{minutes:.1f}" if limit is None or minutes <= limit else f"**{minutes:.1f}**"


def _row(e: Estimate) -> str:
    p, held = e.path, e.held
    limits = f"{e.lecture} ({e.limit_t4:.1f} / {e.limit_cpu:.1f})" if held else "optional"
    if e.exercise == OPENING:
        limits = "in the totals" if e.in_totals else "optional"
    cpu = f"{e.compute.cpu_s:,.0f} s"
    if e.compute.cpu_from:
        cpu += f" ({e.compute.cpu_from})"
    return (
        f"| `{e.name}` | {e.exercise} | {p.words:,} | {p.hint_words} | {p.lines_read} | "
        f"{p.lines_written} | {p.prompts} | {p.answers} | {p.printed_words} | {p.figures} | "
        f"{p.tables} | {p.checkpoints} | {p.drive_prompts} | {_start_cell(e)} | {cpu} | "
        f"{e.compute.t4_s:,.0f} s | {_minutes_cell(e.minutes_t4, e.limit_t4 if held else None)} | "
        f"{_minutes_cell(e.minutes_cpu, e.limit_cpu if held else None)} | {limits} |"
    )


def table(rows: list[Estimate]) -> str:
    header = (
        "| notebook | exercise | words | hint words | lines read | lines written | prompts | "
        "answers | printed words | figures | tables | checkpoints | Drive prompts | start | "
        "compute CPU (from) | compute T4 (est.) | minutes, T4 path | minutes, CPU path | "
        "lecture minutes (held to, T4 / CPU) |\n"
        "|---|---|" + "---:|" * 16 + "---|\n"
    )
    t4, cpu = totals(rows)
    total = (
        "| **core path, 01–05** |" + " |" * 15 + f" {_minutes_cell(t4, LECTURE_TOTAL)} | "
        f"{_minutes_cell(cpu, SLOT)} | "
        f"{sum(e.lecture for e in rows if e.held)} ({LECTURE_TOTAL} / {SLOT}) |"
    )
    return header + "\n".join([*map(_row, rows), total]) + "\n"


def _provenance(provenance: dict) -> str:
    where = provenance.get("cpu") or f"device `{provenance['device']}`"
    return (
        f"{where}, torch {provenance['torch']}, {provenance['date'][:10]}, commit "
        f"{provenance['git_commit'][:10]}"
    )


def compute_sources(rows: list[Estimate], measured: Measured) -> str:
    """Where the CPU path's compute of each notebook comes from, one item a source in use."""
    used = {e.compute.cpu_from: [] for e in rows if e.compute.cpu_from}
    for e in rows:
        if e.compute.cpu_from:
            used[e.compute.cpu_from].append(f"`{e.name}`")
    key, run = cpu_run(measured.recorded)
    training = ""
    if f"`{TRAINING_NOTEBOOK}`" in used.get(TWO_CORES, []):
        training = (
            f"; for `{TRAINING_NOTEBOOK}` one seed of each model (the fastest recorded seed), the "
            "further seeds taken out"
        )
    said = {
        ONE_CORE_MEASURED: lambda: (
            f"the core path's cells of the notebook, run as a student runs them (a fresh runtime "
            f"each, the Drive carrying the pieces, the `{(measured.one_core or {}).get('mode')}` "
            f"budget `auto` picks on a CPU) on one CPU core, as Colab's CPU runtime has: "
            f"{(measured.one_core or {}).get('where')}"
        ),
        ONE_THREAD_SCALED: lambda: _scaled(measured),
        TWO_CORES: lambda: (
            f"**not one core**: the notebook's wall time in the pipeline's `{key}` run, on 2 "
            f"cores ({_provenance(run['provenance'])}){training}. One core takes longer, so "
            "this is a floor until `make core-minutes ONE_CORE=1` measures it"
        ),
    }
    return "\n".join(
        f"  - **{source}** ({', '.join(names)}): {said[source]()};"
        for source, names in used.items()
    )


def _scaled(measured: Measured) -> str:
    full = ladder_full(measured.recorded)
    _, run = cpu_run(measured.recorded)
    gpt, lstm = (_seed(run["results"]["rows"][m]) for m in STUDENT_MODELS)
    seconds, not_a_students = _two_cores(TRAINING_NOTEBOOK, run)
    rest = seconds - not_a_students - gpt - lstm
    return (
        f"**one torch thread, and scaled**: the mini-GPT's seed as the ablation ladder trained "
        f"its `full` rung, one torch thread a run, two runs at a time (the fastest of "
        f"{len(full['seeds'])} seeds, {_seed(full):,.0f} s: each does the same work, so a slower "
        f"one measures what else ran; {_provenance(full['provenance'])}); "
        f"the LSTM's seed ({lstm:,.0f} s) and the rest of the notebook ({rest:,.0f} s) as the "
        f"pipeline measured them on 2 cores, **scaled** to one by the mini-GPT's ratio, "
        f"{_seed(full):,.0f} / {gpt:,.0f} s = {_seed(full) / gpt:.2f}. Not a measurement of "
        "the notebook: `make core-minutes ONE_CORE=1` replaces it"
    )


DOC_TEXT = """# The core path of each exercise, in minutes

Written by `make core-minutes` from solutions/, data/baselines.json and what it measures
({files}): do not edit it by hand. `tests/test_core_minutes.py` holds every exercise and both
paths to the limits below, and this page to what the command writes now.

The lecture gives the lab 50 minutes of exercises in a 55-minute slot, per exercise: the
"(N min)" of each notebook's Exercise headings. **Held**: the T4 path (04 trains on a T4, the
other notebooks run on the CPU runtime they ask for) to the lecture's {total} minutes, the CPU
path (every notebook on a CPU, 04 at the budget `auto` picks there) to the {slot}-minute slot, and
each exercise to its own minutes on the T4 path and to its minutes times {slot}/{total} on the CPU
path, each with a tolerance of {tolerance} min (the rates below are judgements to about that; the
totals hold without it). A figure in bold is past its limit.

The **core path** is what a student meets unfolded: the markdown outside `<details>` folds and
outside the sections headed "Optional" or "After the lab" (read afterwards), and the code cells
outside those sections. An exercise runs from its heading to the next exercise's heading. What
comes before a notebook's first exercise (its title, setup cell, introduction) and its
runtime's start are the notebook's **opening**: part of no exercise, so it has no minutes of its
own and is held by the totals, which count it. The notebook's compute is its first exercise's.
The count, and the rate of each part:

- **words** of markdown shown, read at {read_wpm} words a minute: Brysbaert (2019, *Journal of
  Memory and Language* 109, 104047) puts silent reading of English non-fiction at 238, and this
  prose is dense with equations and symbols;
- **hint words**: the words of each exercise's folded "Hint", read at the same rate: a student
  who writes the stub opens it (the other folds stay shut);
- **lines read**: lines of provided code, at {code_rate} a minute (run and glanced at, not
  studied: a judgement); a cell Colab shows as a form (the setup cell, the imports, and provided
  cells whose title line says what they run), by its title line alone;
- **lines written**: the lines of the exercises' solutions, {per_line} min each (with the
  equation and the hint at hand: a judgement);
- **prompts**: "Predict first" and numbered questions left in the path, {prompt} min each;
- **answers**: written answers (graded by hand), {answer} min each;
- **printed words**: every word the core path's code cells print, the package's lines (the
  checkpoints' verdicts, which pieces are whose, the training's lines) as well as the cells' own
  `print`s, read at {read_wpm} words a minute; **tables** (displayed Markdown tables), {table_rate}
  min each; **figures**, {figure} min each (judgements). Counted from a run of every notebook as
  a student runs it (`python -m maintainer.core_measurements shown`: the workshop notebooks,
  solved, each in a fresh runtime, the Drive carrying the pieces from one to the next), at the
  `{shown_budget}` budget, whose lines are those of any budget but for a few words: {shown_where};
- **checkpoints**: each graded checkpoint met once more, one retry: {retry} min (read the mistake
  it names, fix a line, run it again: a judgement);
- **Drive prompts**: Google's consent to mount the student's Drive, met once a notebook in its
  setup cell (`tl.use_drive`, in every notebook of the lab): Colab's "Permit this notebook to
  access your Google Drive files?", then Google's account chooser and its list of what the
  notebook may do, read and allowed, about six clicks: {drive} min, an estimate, not a
  measurement (no Colab here);
- **start** of a fresh runtime, once a notebook (Colab gives each its own machine), {start:.0f} s:
{stated}
  - the kernel's start, {kernel:.1f} s, and the setup cell (the clone, then `pip install
    --no-deps` building the package in isolation as Colab's pip does, its build backend
    installed afresh), {setup:.1f} s, both measured by `maintainer/fresh_runtime.py` from local
    copies (their downloads are in the line above), the median of {repeats}: {measured_where};
  - **hidden** (T4 / CPU path): where the notebook before says to open this one early, the
    part of its start that passes while the student is busy there. "While you work here" (the
    last exercise of 01-03): Colab loading the notebook and connecting, the kernel's start and
    the setup cell; the clicks still count. "While it trains" (04's training): the whole start
    and the Drive consent, up to the training's length on that path;
- **compute**, CPU path: the notebook's compute at the mode `auto` picks on a CPU (`{cpu_mode}`);
  for `{training}`, one seed's training of the mini-GPT and the LSTM and the rest of the
  notebook. From, by notebook (the table says which):
{sources}
- **compute**, T4 path (**an estimate**, not a measurement: no T4 run is recorded): the training
  at the `{gpu_mode}` budget that `auto` picks on a GPU, {tokens:,} tokens for each model,
  {flops:.3g} FLOPs (6 per parameter per token, plus the GPT's attention), at an assumed
  sustained {t4:.0f} TFLOP/s, plus the rest of the notebook as the pipeline measured it on 2 CPU
  cores. Notebooks without training run on a CPU runtime on either path and take their CPU
  figure.

{table}

{verdict}

## What this count changed (December 2026)

A reviewer read the core path at about 58 minutes on the T4 path where the count said under 50.
The count now holds what it left out, and the notebooks were cut to fit (prose and demonstrations
the exercises do not need moved to "After the lab" or into folds; the imports and provided cells
whose code the exercises do not need shown as Colab forms, a title line with the code one click
away). Before, and now:

- **start**: before, connecting (a stated 20 s) and the setup cell measured offline, the package
  built without isolation; now, five stated parts (finding the link, Colab's loading, the
  "not authored by Google" warning, connecting, releasing the runtime) and the setup cell
  measured online with pip's build isolation, as on Colab;
- **Drive prompts**: before, 0.75 min each; now {drive} min, in every notebook whose setup cell
  calls `tl.use_drive` (each of 01–06);
- **hint words**: before, not counted (a fold showed its summary only); now each exercise's hint
  is read;
- **printed words, tables and figures**: before, 0.15 min a `print(` in the code, a `print(model)`
  as its lines of code, a `display(` and a `plt.show()` each; the lines the package printed
  inside a call were not counted; now every word, table and figure a run of the core path shows;
- **compute, CPU path**: before, the pipeline's wall time on 2 cores; now one core, as Colab's
  CPU runtime has, measured by `make core-minutes ONE_CORE=1`, and until then the best figure
  recorded, labelled with what it is.
"""


def render(rows: list[Estimate], measured: Measured | None = None) -> str:
    measured = measured or Measured.now()
    _, run = cpu_run(measured.recorded)
    gpu_mode = resolve_mode("auto", "cuda")
    budget = BUDGETS[gpu_mode]
    found = overruns(rows)
    verdict = (
        "Past its limit:\n\n" + "\n".join(f"- {line}" for line in found)
        if found
        else ("Every exercise and both paths fit.")
    )
    start = measured.start
    files = [fresh_runtime.MEASURED, SHOWN, *([ONE_CORE] if measured.one_core else [])]
    return DOC_TEXT.format(
        files=", ".join(f"`{path.relative_to(ROOT)}`" for path in files),
        total=LECTURE_TOTAL,
        slot=SLOT,
        tolerance=EXERCISE_TOLERANCE,
        read_wpm=READ_WPM,
        code_rate=CODE_LINES_PER_MIN,
        per_line=MINUTES_PER_WRITTEN_LINE,
        prompt=PROMPT_MINUTES,
        answer=ANSWER_MINUTES,
        figure=FIGURE_MINUTES,
        table_rate=TABLE_MINUTES,
        shown_budget=measured.shown["budget"],
        shown_where=measured.shown["where"],
        retry=RETRY_MINUTES,
        drive=DRIVE_PROMPT_MINUTES,
        start=start_seconds(start),
        stated="\n".join(
            f"  - {what}: {seconds} s (stated: no Colab here);" for seconds, what in START_STATED
        ),
        kernel=start["kernel_start_s"],
        setup=start["setup_cell_s"],
        repeats=start["repeats"],
        measured_where=start["where"],
        cpu_mode=resolve_mode("auto", "cpu"),
        training=TRAINING_NOTEBOOK,
        sources=compute_sources(rows, measured),
        gpu_mode=gpu_mode,
        tokens=budget.batch_size * budget.steps * T_DEFAULT,
        flops=training_flops(run),
        t4=T4_SUSTAINED_FLOPS / 1e12,
        table=table(rows).rstrip("\n"),
        verdict=verdict,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    measured = Measured.now()
    rows = estimates(measured)
    print(table(rows), end="")
    for line in overruns(rows):
        print(f"past its limit: {line}")
    if args.write:
        DOC.write_text(render(rows, measured), encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
