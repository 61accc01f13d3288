"""`make core-minutes`: minutes of each exercise's core path on both paths, beside the lecture's.

The core path is what a student meets unfolded in a notebook (the build's badge, setup cell and
closing cell included, the pipeline's cells left out): the markdown outside `<details>` folds and
outside any section whose heading begins with "Optional" or "After the lab" (that section runs to
the next heading of its level or above; its code cells are left out too), and the provided code
with what it shows (figures, tables, printed text). The lines between `### BEGIN SOLUTION` and
`### END SOLUTION` are the lines the student writes; hidden tests are never shown; each
checkpoint is met twice (one retry). Each notebook starts a fresh runtime (Colab gives every
notebook its own machine): the start measured by `maintainer/fresh_runtime.py`, and Google's
consent to the student's Drive, met in the setup cell (`tl.use_drive`).

An exercise runs from its "## Exercise N · ... (M min)" heading to the next exercise's. What
comes before a notebook's first exercise (title, setup cell, introduction) and the runtime's
start are the notebook's **opening**: part of no exercise, so held by the totals only. The
notebook's compute is its first exercise's. The estimate adds up stated rates (below) and the
compute that `data/baselines.json` recorded: the CPU path at the mode `auto` picks on a CPU,
measured by the pipeline; the T4 path at the mode `auto` picks on a GPU, estimated from the FLOP
count of the training (only 04 trains; the rest run on a CPU runtime on either path).

    python -m maintainer.core_minutes            # print the table
    python -m maintainer.core_minutes --write    # and write docs/core_path.md
    make core-minutes                            # measure a fresh runtime's start, then --write
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path

from transformer_lab.catalogue import TRAINING_NOTEBOOK
from transformer_lab.model import GPTConfig
from transformer_lab.runtime import BUDGETS, resolve_mode
from transformer_lab.train import T_DEFAULT

from . import ROOT, fresh_runtime
from .notebook_build import HEADING, READ_AFTERWARDS, source_notebook, sources

DOC = ROOT / "docs" / "core_path.md"
BASELINES = ROOT / "data" / "baselines.json"

# The rates of the estimate, each stated once with where it comes from (docs/core_path.md).
READ_WPM = 180  # Brysbaert (2019): 238 wpm for non-fiction; prose dense with equations is slower
CODE_LINES_PER_MIN = 40  # provided code is run and glanced at, not studied: 1.5 s a line
MINUTES_PER_WRITTEN_LINE = 0.75  # a line of a stub, with its equation and hint at hand
PROMPT_MINUTES = 1.0  # a "Predict first" or a numbered question left in the path: stop and think
ANSWER_MINUTES = 2.0  # a written answer of two or three sentences (notebook 04's prediction)
FIGURE_MINUTES = 0.5  # a figure: its title, axes and legend, and the point it marks
TABLE_MINUTES = 0.5  # a displayed table: a results table of a few rows
PRINT_MINUTES = 0.15  # a printed line or block of a few lines: 9 s
RETRY_MINUTES = 1.0  # one failing run of a checkpoint: read the named mistake, fix, run again
# Google's consent to mount the Drive, in each notebook's setup cell: the account chooser, then
# the scopes read and allowed, 4-6 clicks. An estimate, not a measurement (no Colab here).
DRIVE_PROMPT_MINUTES = 0.75
# Not measurable here (no Colab): connecting to a fresh runtime and fetching the 1.1 MB corpus.
CONNECT_SECONDS = 20
# A T4 peaks at 65 TFLOP/s in fp16 on its tensor cores; a d_model-128 model's small matrices, the
# per-step kernel launches and the LSTM's 128 sequential steps keep it to a few per cent of that.
T4_SUSTAINED_FLOPS = 2e12
STUDENT_MODELS = ("gpt", "lstm")  # what notebook 04 trains for a student (one seed each)
# What is held: the lecture's 50 minutes on the T4 path, the 55-minute slot on the CPU path, and
# each exercise to its own minutes (scaled by 55/50 on the CPU path) plus this tolerance: the
# rates are judgements to about a prompt's worth, and the totals hold without it.
LECTURE_TOTAL, SLOT = 50, 55
EXERCISE_TOLERANCE = 0.5
# A notebook's title, setup cell and introduction, and its runtime's start: no exercise's.
OPENING = "opening"

FOLD = re.compile(r"<details>(.*?)(?:</details>|\Z)", re.DOTALL)  # unclosed: to the cell's end
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", re.M | re.S)
HIDDEN = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*", re.M | re.S
)
PROMPT = re.compile(r"^\*\*(?:\d+\.|Predict first)", re.MULTILINE)
EXERCISE = re.compile(r"^#{1,6} (Exercise \d+) · .*\((\d+) min\b", re.MULTILINE)
LECTURE_MINUTES = EXERCISE
WORD = re.compile(r"\S*[A-Za-z0-9]\S*")
FIGURE = re.compile(r"^\s*plt\.show\(\)", re.MULTILINE)  # every figure of the notebooks ends so
TABLE = re.compile(r"\bdisplay\(")
PRINTED_MODEL = re.compile(r"\bprint\(model\b(?!\.)")
PRINT = re.compile(r"\bprint\(")
DRIVE = re.compile(r"\btl\.use_drive\(")  # the setup cell's call, where Google asks consent


@dataclass(frozen=True)
class CorePath:
    """What a student reads, writes, looks at and stops to think about on a core path."""

    words: int = 0
    lines_read: int = 0
    lines_written: int = 0
    prompts: int = 0
    answers: int = 0
    figures: int = 0
    tables: int = 0
    printed: int = 0
    model_lines: int = 0  # the lines of a printed model (print(model)), read as code
    checkpoints: int = 0  # each met once more: one retry
    drive_prompts: int = 0

    @property
    def minutes(self) -> float:
        """Reading, writing, looking and thinking, without the runtime's start and compute."""
        return (
            self.words / READ_WPM
            + (self.lines_read + self.model_lines) / CODE_LINES_PER_MIN
            + self.lines_written * MINUTES_PER_WRITTEN_LINE
            + self.prompts * PROMPT_MINUTES
            + self.answers * ANSWER_MINUTES
            + self.figures * FIGURE_MINUTES
            + self.tables * TABLE_MINUTES
            + self.printed * PRINT_MINUTES
            + self.checkpoints * RETRY_MINUTES
            + self.drive_prompts * DRIVE_PROMPT_MINUTES
        )

    def __add__(self, other: CorePath) -> CorePath:
        return CorePath(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


def _code_lines(text: str) -> int:
    """Lines that hold code: not blank, not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def _unfolded(markdown: str) -> str:
    """The markdown as shown: each fold reduced to its summary line."""

    def summary(fold: re.Match) -> str:
        shown = SUMMARY.search(fold.group(1))
        return shown.group(1) if shown else ""

    return FOLD.sub(summary, markdown)


def _is_nbgrader(cell, key: str) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get(key))


@cache
def printed_model_lines() -> int:
    """The lines `print(model)` shows for the lab's mini-GPT: counted from the model itself."""
    from transformer_lab.model import MiniGPT

    return len(str(MiniGPT(GPTConfig())).splitlines())


def _code_counts(source: str) -> CorePath:
    """A provided code cell: the lines read and written, and what it shows."""
    source = HIDDEN.sub("", source)
    shown = SOLUTION.sub("", source)
    models = len(PRINTED_MODEL.findall(shown))
    return CorePath(
        lines_read=_code_lines(shown),
        lines_written=_code_lines("\n".join(SOLUTION.findall(source))),
        figures=len(FIGURE.findall(shown)),
        tables=len(TABLE.findall(shown)),
        printed=len(PRINT.findall(shown)) - models,
        model_lines=models * printed_model_lines(),
    )


@dataclass
class _Reader:
    """Reads a notebook's cells in order, as a student meets them; `skipped_level` is the level
    of the Optional / After the lab heading we are under, if any."""

    skipped_level: int | None = None
    asked_drive: bool = False

    def markdown(self, cell) -> CorePath:
        if self.skipped_level is None and _is_nbgrader(cell, "solution"):
            return CorePath(answers=1)  # the student sees an empty answer cell and writes in it
        shown = []
        for line in _unfolded(cell.source).splitlines():
            heading = HEADING.match(line)
            level = len(heading.group(1)) if heading else None
            if heading and (self.skipped_level is None or level <= self.skipped_level):
                self.skipped_level = level if READ_AFTERWARDS.match(heading.group(2)) else None
            if self.skipped_level is None:
                shown.append(line)
        text = "\n".join(shown)
        return CorePath(words=len(WORD.findall(text)), prompts=len(PROMPT.findall(text)))

    def code(self, cell) -> CorePath:
        if self.skipped_level is not None:
            return CorePath()
        counted = _code_counts(cell.source)
        if cell.metadata.get("cellView") == "form":  # Colab shows its title line alone
            counted = CorePath(lines_read=1)
        drive = not self.asked_drive and bool(DRIVE.search(cell.source))
        self.asked_drive |= drive  # once a notebook: the later uses follow that decision
        checkpoint = int(_is_nbgrader(cell, "grade"))
        return counted + CorePath(checkpoints=checkpoint, drive_prompts=int(drive))


def exercises_of(cells) -> list[tuple[str, int | None, CorePath]]:
    """(part, its lecture minutes, its core path) for each part of a notebook's cells, in order:
    the OPENING (what comes before the first exercise, no minutes of its own), then each
    exercise. A notebook with no exercise (the optional challenge) is one part, named "-", with
    no minutes."""
    reader, parts = _Reader(), [[OPENING, None, CorePath()]]
    for cell in cells:
        found = EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if found and reader.skipped_level is None:
            parts.append([found.group(1), int(found.group(2)), CorePath()])
        counted = reader.markdown(cell) if cell.cell_type == "markdown" else reader.code(cell)
        parts[-1][2] = parts[-1][2] + counted
    if len(parts) == 1:
        parts[0][0] = "-"
    return [tuple(part) for part in parts]


def core_path_of(cells) -> CorePath:
    """The core path of a notebook's cells, all exercises together."""
    total = CorePath()
    for _, _, path in exercises_of(cells):
        total = total + path
    return total


def core_path(path: Path) -> CorePath:
    """The core path of a solution file, as its student notebook shows it."""
    return core_path_of(source_notebook(path).cells)


def lecture_minutes(path: Path) -> int | None:
    """The lecture's minutes for a notebook: the sum of its Exercise headings' "(N min)"; None
    for a notebook with no exercise of the core path (the optional challenge)."""
    cells = source_notebook(path).cells
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    found = [int(minutes) for _, minutes in LECTURE_MINUTES.findall(markdown)]
    return sum(found) if found else None


def baselines() -> dict:
    return json.loads(BASELINES.read_text(encoding="utf-8"))


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


def _training_seconds(run: dict) -> tuple[float, float]:
    """(a student's training: the first seed of each model 04 trains, every training recorded)."""
    rows, first = run["results"]["rows"], str(run["provenance"]["seeds"][0])
    one = sum(rows[m]["seeds"][first]["train_seconds"] for m in STUDENT_MODELS)
    return one, sum(sum(_seed_seconds(row)) for row in rows.values())


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
    cpu_s: float  # measured: the pipeline's CPU run of the notebook, one training seed
    t4_s: float  # estimated: training from its FLOPs, the rest as measured on the CPU


def compute(name: str, run: dict) -> Compute:
    """A notebook's compute on the CPU path (measured) and the T4 path (estimated)."""
    seconds = run["provenance"]["notebook_seconds"][name]
    if name != TRAINING_NOTEBOOK:
        return Compute(seconds, seconds)  # no training: a CPU runtime on either path
    one, every = _training_seconds(run)
    rest = seconds - every  # n-grams, scoring, samples (of every seed: an upper bound)
    return Compute(one + rest, training_flops(run) / T4_SUSTAINED_FLOPS + rest)


def start_seconds(measured: dict | None = None) -> float:
    """A fresh runtime's start: connecting (a stated figure), then the kernel's start and the
    setup cell as `maintainer/fresh_runtime.py` measured them (docs/fresh_runtime.json)."""
    measured = measured or fresh_runtime.recorded()
    return CONNECT_SECONDS + measured["kernel_start_s"] + measured["setup_cell_s"]


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

    @property
    def minutes_t4(self) -> float:
        return self.path.minutes + (self.start_s + self.compute.t4_s) / 60

    @property
    def minutes_cpu(self) -> float:
        return self.path.minutes + (self.start_s + self.compute.cpu_s) / 60

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


def estimates_of(path: Path, run: dict, start_s: float) -> list[Estimate]:
    """The estimates of one solution file's parts, in order: the start on the first part (the
    opening), the notebook's compute on its first exercise."""
    parts = exercises_of(source_notebook(path).cells)
    computing = min(1, len(parts) - 1)
    return [
        Estimate(
            path.stem,
            name,
            counted,
            minutes,
            compute(path.stem, run) if i == computing else Compute(0.0, 0.0),
            start_s if i == 0 else 0.0,
        )
        for i, (name, minutes, counted) in enumerate(parts)
    ]


def totals(rows: list[Estimate]) -> tuple[float, float]:
    """The core path's minutes on the T4 and the CPU path: its exercises and their openings."""
    counted = [e for e in rows if e.in_totals]
    return sum(e.minutes_t4 for e in counted), sum(e.minutes_cpu for e in counted)


def estimates(recorded: dict | None = None, measured: dict | None = None) -> list[Estimate]:
    _, run = cpu_run(recorded or baselines())
    start = start_seconds(measured)
    return [e for p in sources() for e in estimates_of(p, run, start)]


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


def _minutes_cell(minutes: float, limit: float | None) -> str:
    return f"{minutes:.1f}" if limit is None or minutes <= limit else f"**{minutes:.1f}**"


def table(rows: list[Estimate]) -> str:
    header = (
        "| notebook | exercise | words | lines read | lines written | prompts | answers | "
        "figures | tables | printed (model lines) | checkpoints | Drive prompts | start | "
        "compute CPU | compute T4 (est.) | minutes, T4 path | minutes, CPU path | lecture "
        "minutes (held to, T4 / CPU) |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )
    lines = []
    for e in rows:
        p, held = e.path, e.held
        limits = f"{e.lecture} ({e.limit_t4:.1f} / {e.limit_cpu:.1f})" if held else "optional"
        if e.exercise == OPENING:
            limits = "in the totals" if e.in_totals else "optional"
        lines.append(
            f"| `{e.name}` | {e.exercise} | {p.words:,} | {p.lines_read} | {p.lines_written} | "
            f"{p.prompts} | {p.answers} | {p.figures} | {p.tables} | {p.printed} "
            f"({p.model_lines}) | {p.checkpoints} | {p.drive_prompts} | {e.start_s:.0f} s | "
            f"{e.compute.cpu_s:,.0f} s | {e.compute.t4_s:,.0f} s | "
            f"{_minutes_cell(e.minutes_t4, e.limit_t4 if held else None)} | "
            f"{_minutes_cell(e.minutes_cpu, e.limit_cpu if held else None)} | {limits} |"
        )
    t4, cpu = totals(rows)
    lines.append(
        f"| **core path, 01–05** | | | | | | | | | | | | | | | "
        f"{_minutes_cell(t4, LECTURE_TOTAL)} | {_minutes_cell(cpu, SLOT)} | "
        f"{sum(e.lecture for e in rows if e.held)} ({LECTURE_TOTAL} / {SLOT}) |"
    )
    return header + "\n".join(lines) + "\n"


DOC_TEXT = """# The core path of each exercise, in minutes

Written by `make core-minutes` from solutions/, data/baselines.json and a fresh runtime's start
measured then (`docs/fresh_runtime.json`); do not edit it by hand. `tests/test_core_minutes.py`
holds every exercise and both paths to the limits below, and this page to what the command
writes now.

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
- **lines read**: lines of provided code (the setup and closing cells included), at {code_rate}
  a minute (run and glanced at, not studied: a judgement);
- **lines written**: the lines of the exercises' solutions, {per_line} min each (with the
  equation and the hint at hand: a judgement);
- **prompts**: "Predict first" and numbered questions left in the path, {prompt} min each;
- **answers**: written answers (graded by hand), {answer} min each;
- **figures** (each `plt.show()`), {figure} min each; **tables** (each `display(...)`: the
  results tables), {table_rate} min each; **printed** (each `print(...)` a cell makes: a line or a
  few), {printed} min each, and the **printed model** of `print(model)`: its {model_lines} lines,
  counted from `str(MiniGPT())`, read as code (judgements);
- **checkpoints**: each graded checkpoint met once more, one retry: {retry} min (read the mistake
  it names, fix a line, run it again: a judgement);
- **Drive prompts**: Google's consent to mount the student's Drive, met once a notebook in its
  setup cell (`tl.use_drive`; the account chooser, then the scopes read and allowed, four to six
  clicks): {drive} min, an estimate, not a measurement (no Colab here);
- **start** of a fresh runtime, once a notebook (Colab gives each its own machine): connecting
  and fetching the 1.1 MB corpus, {connect} s (stated, not measured: no Colab here), then the
  kernel's start, {kernel:.1f} s, and the setup cell (clone and `pip install --no-deps`, from a
  local copy: no network), {setup:.1f} s, both measured by `maintainer/fresh_runtime.py` (the
  runtime `tests/test_fresh_runtime.py` runs every notebook in), the median of {repeats}:
  {measured_where};
- **compute**, CPU path: the notebook's wall time in the pipeline's `{cpu_key}` run (the mode
  `auto` picks on a CPU), measured there: {where}. For `{training}`, one seed's training of the
  GPT and the LSTM plus the rest of the notebook (n-grams, scoring, samples; of every recorded
  seed, so an upper bound);
- **compute**, T4 path (**an estimate**, not a measurement: no T4 run is recorded): the training
  at the `{gpu_mode}` budget that `auto` picks on a GPU, {tokens:,} tokens for each model,
  {flops:.3g} FLOPs (6 per parameter per token, plus the GPT's attention), at an assumed
  sustained {t4:.0f} TFLOP/s, plus the rest of the notebook as measured on the CPU. Notebooks
  without training run on a CPU runtime on either path and take their CPU figure.

{table}

{verdict}
"""


def render(rows: list[Estimate], recorded: dict | None = None, measured: dict | None = None) -> str:
    recorded, measured = recorded or baselines(), measured or fresh_runtime.recorded()
    key, run = cpu_run(recorded)
    provenance = run["provenance"]
    where = (
        f"device `{provenance['device']}`, torch {provenance['torch']}, "
        f"{provenance['date'][:10]}, commit {provenance['git_commit'][:10]}"
    )
    gpu_mode = resolve_mode("auto", "cuda")
    budget = BUDGETS[gpu_mode]
    found = overruns(rows)
    verdict = (
        "Past its limit:\n\n" + "\n".join(f"- {line}" for line in found)
        if found
        else ("Every exercise and both paths fit.")
    )
    return DOC_TEXT.format(
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
        printed=PRINT_MINUTES,
        model_lines=printed_model_lines(),
        retry=RETRY_MINUTES,
        drive=DRIVE_PROMPT_MINUTES,
        connect=CONNECT_SECONDS,
        kernel=measured["kernel_start_s"],
        setup=measured["setup_cell_s"],
        repeats=measured["repeats"],
        measured_where=measured["where"],
        cpu_key=key,
        where=where,
        training=TRAINING_NOTEBOOK,
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
    rows = estimates()
    print(table(rows), end="")
    for line in overruns(rows):
        print(f"past its limit: {line}")
    if args.write:
        DOC.write_text(render(rows), encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
