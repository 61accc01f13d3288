"""`make core-minutes`: the minutes of each notebook's core path, beside the lecture's.

The core path is what a student meets unfolded in a notebook (the build's badge and setup cell
included, the pipeline's cells left out): the markdown outside `<details>` folds and outside any
section whose heading begins with "Optional" or "After the lab" (that section runs to the next
heading of its level or above; its code cells are left out too), and the provided code. The
lines between `### BEGIN SOLUTION` and `### END SOLUTION` are the lines the student writes;
hidden tests are never shown. The estimate adds up stated rates (below), and the compute that
`data/baselines.json` recorded: the CPU path at the mode `auto` picks on a CPU, measured by the
pipeline; the T4 path at the mode `auto` picks on a GPU, estimated from the FLOP count of the
training. The lecture's minutes are the "(N min)" of the notebook's Exercise headings.

    python -m maintainer.core_minutes            # print the table
    python -m maintainer.core_minutes --write    # and write docs/core_path.md (`make core-minutes`)
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

from grader.course import TRAINING_NOTEBOOK
from transformer_lab.model import GPTConfig
from transformer_lab.runtime import BUDGETS, resolve_mode
from transformer_lab.train import T_DEFAULT

from . import ROOT
from .notebook_build import HEADING, READ_AFTERWARDS, source_notebook, sources

DOC = ROOT / "docs" / "core_path.md"
BASELINES = ROOT / "data" / "baselines.json"

# The rates of the estimate, each a judgement stated once.
READ_WPM = 180  # words a minute: prose dense with equations reads slower than plain text's ~240
CODE_LINES_PER_MIN = 40  # provided code is run and glanced at, not studied: 1.5 s a line
MINUTES_PER_WRITTEN_LINE = 0.75  # a line of a stub, with its equation and hint at hand
PROMPT_MINUTES = 1.0  # a "Predict first" or a numbered question left in the path: stop and think
ANSWER_MINUTES = 2.0  # a written answer of two or three sentences (notebook 04's prediction)
# A T4 peaks at 65 TFLOP/s in fp16 on its tensor cores; a d_model-128 model's small matrices, the
# per-step kernel launches and the LSTM's 128 sequential steps keep it to a few per cent of that.
T4_SUSTAINED_FLOPS = 2e12
STUDENT_MODELS = ("gpt", "lstm")  # what notebook 04 trains for a student (one seed each)

FOLD = re.compile(r"<details>(.*?)(?:</details>|\Z)", re.DOTALL)  # unclosed: to the cell's end
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", re.M | re.S)
HIDDEN = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*", re.M | re.S
)
PROMPT = re.compile(r"^\*\*(?:\d+\.|Predict first)", re.MULTILINE)
LECTURE_MINUTES = re.compile(r"^#{1,6} Exercise \d+ · .*\((\d+) min\b", re.MULTILINE)
WORD = re.compile(r"\S*[A-Za-z0-9]\S*")


@dataclass(frozen=True)
class CorePath:
    """What a student reads, writes and stops to think about on a notebook's core path."""

    words: int = 0
    lines_read: int = 0
    lines_written: int = 0
    prompts: int = 0
    answers: int = 0

    @property
    def minutes(self) -> float:
        """Reading, writing and thinking, without compute."""
        return (
            self.words / READ_WPM
            + self.lines_read / CODE_LINES_PER_MIN
            + self.lines_written * MINUTES_PER_WRITTEN_LINE
            + self.prompts * PROMPT_MINUTES
            + self.answers * ANSWER_MINUTES
        )


def _code_lines(text: str) -> int:
    """Lines that hold code: not blank, not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def _unfolded(markdown: str) -> str:
    """The markdown as shown: each fold reduced to its summary line."""

    def summary(fold: re.Match) -> str:
        shown = SUMMARY.search(fold.group(1))
        return shown.group(1) if shown else ""

    return FOLD.sub(summary, markdown)


def _is_nbgrader_solution(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("solution"))


def core_path_of(cells) -> CorePath:
    """Count the core path of a notebook's cells, in order (see the module's docstring)."""
    words = lines_read = lines_written = prompts = answers = 0
    skipped_level = None  # the level of the Optional / After the lab heading we are under
    for cell in cells:
        if cell.cell_type == "markdown":
            if skipped_level is None and _is_nbgrader_solution(cell):
                answers += 1  # the student sees an empty answer cell and writes into it
                continue
            shown = []
            for line in _unfolded(cell.source).splitlines():
                heading = HEADING.match(line)
                if heading and (skipped_level is None or len(heading.group(1)) <= skipped_level):
                    skipped = READ_AFTERWARDS.match(heading.group(2))
                    skipped_level = len(heading.group(1)) if skipped else None
                if skipped_level is None:
                    shown.append(line)
            text = "\n".join(shown)
            words += len(WORD.findall(text))
            prompts += len(PROMPT.findall(text))
        elif cell.cell_type == "code" and skipped_level is None:
            source = HIDDEN.sub("", cell.source)
            written = "\n".join(SOLUTION.findall(source))
            lines_written += _code_lines(written)
            lines_read += _code_lines(SOLUTION.sub("", source))
    return CorePath(words, lines_read, lines_written, prompts, answers)


def core_path(path: Path) -> CorePath:
    """The core path of a solution file, as its student notebook shows it."""
    return core_path_of(source_notebook(path).cells)


def lecture_minutes(path: Path) -> int | None:
    """The lecture's minutes for a notebook: the sum of its Exercise headings' "(N min)"; None
    for a notebook with no exercise of the core path (the optional challenge)."""
    cells = source_notebook(path).cells
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    found = [int(minutes) for minutes in LECTURE_MINUTES.findall(markdown)]
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
        return Compute(seconds, seconds)  # no training: a T4 runtime's CPU does this work
    one, every = _training_seconds(run)
    rest = seconds - every  # n-grams, scoring, samples (of every seed: an upper bound)
    return Compute(one + rest, training_flops(run) / T4_SUSTAINED_FLOPS + rest)


@dataclass(frozen=True)
class Estimate:
    name: str
    path: CorePath
    compute: Compute
    lecture: int | None

    @property
    def minutes_t4(self) -> float:
        return self.path.minutes + self.compute.t4_s / 60

    @property
    def minutes_cpu(self) -> float:
        return self.path.minutes + self.compute.cpu_s / 60


def estimates(recorded: dict | None = None) -> list[Estimate]:
    _, run = cpu_run(recorded or baselines())
    return [
        Estimate(p.stem, core_path(p), compute(p.stem, run), lecture_minutes(p)) for p in sources()
    ]


def table(rows: list[Estimate]) -> str:
    header = (
        "| notebook | words | lines read | lines written | prompts | answers | compute CPU | "
        "compute T4 (est.) | minutes, T4 path | minutes, CPU path | lecture minutes |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = [
        f"| `{e.name}` | {e.path.words:,} | {e.path.lines_read} | {e.path.lines_written} | "
        f"{e.path.prompts} | {e.path.answers} | {e.compute.cpu_s:,.0f} s | "
        f"{e.compute.t4_s:,.0f} s | {e.minutes_t4:.1f} | {e.minutes_cpu:.1f} | "
        f"{e.lecture if e.lecture is not None else 'optional'} |"
        for e in rows
    ]
    return header + "\n".join(lines) + "\n"


DOC_TEXT = """# The core path of each notebook, in minutes

Written by `make core-minutes` (`python -m maintainer.core_minutes --write`) from solutions/ and
data/baselines.json; do not edit it by hand. `tests/test_core_minutes.py` holds every notebook of
the core path at or under the lecture's minutes on the T4 path, and this page to what the command
writes now.

The lecture gives the lab 50 minutes of exercises in a 55-minute slot, per exercise: the
"(N min)" of each notebook's Exercise headings. The **core path** is what a student meets
unfolded: the markdown outside `<details>` folds and outside the sections headed "Optional" or
"After the lab" (read afterwards), and the code cells outside those sections. Within the core
path the estimate counts:

- **words** of markdown shown, read at {read_wpm} words a minute;
- **lines read**: lines of provided code (the setup cell included), at {code_rate} a minute;
- **lines written**: the lines of the exercises' solutions, {per_line} min each;
- **prompts**: "Predict first" and numbered questions left in the path, {prompt} min each;
- **answers**: written answers (graded by hand), {answer} min each;
- **compute**, CPU path: the notebook's wall time in the pipeline's `{cpu_key}` run (the mode
  `auto` picks on a CPU), measured there:
  {where}.
  For `{training}`, one seed's training of the GPT and the LSTM plus the rest of the notebook
  (n-grams, scoring, samples; of every recorded seed, so an upper bound);
- **compute**, T4 path (**an estimate**, not a measurement: no T4 run is recorded): the training
  at the `{gpu_mode}` budget that `auto` picks on a GPU, {tokens:,} tokens for each model,
  {flops:.3g} FLOPs (6 per parameter per token, plus the GPT's attention), at an assumed
  sustained {t4:.0f} TFLOP/s, plus the rest of the notebook as measured on the CPU. Notebooks
  without training take their CPU figure.

Not counted: the setup cell's clone and install on Colab, the Drive prompts of 04 and 05, and the
printed outputs a student reads (the model's layers in 01, the results table in 04).

{table}
"""


def render(rows: list[Estimate], recorded: dict | None = None) -> str:
    recorded = recorded or baselines()
    key, run = cpu_run(recorded)
    provenance = run["provenance"]
    where = (
        f"device `{provenance['device']}`, torch {provenance['torch']}, "
        f"{provenance['date'][:10]}, commit {provenance['git_commit'][:10]}"
    )
    gpu_mode = resolve_mode("auto", "cuda")
    budget = BUDGETS[gpu_mode]
    return DOC_TEXT.format(
        read_wpm=READ_WPM,
        code_rate=CODE_LINES_PER_MIN,
        per_line=MINUTES_PER_WRITTEN_LINE,
        prompt=PROMPT_MINUTES,
        answer=ANSWER_MINUTES,
        cpu_key=key,
        where=where,
        training=TRAINING_NOTEBOOK,
        gpu_mode=gpu_mode,
        tokens=budget.batch_size * budget.steps * T_DEFAULT,
        flops=training_flops(run),
        t4=T4_SUSTAINED_FLOPS / 1e12,
        table=table(rows).rstrip("\n"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    rows = estimates()
    print(table(rows), end="")
    if args.write:
        DOC.write_text(render(rows), encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
