"""The docs against the code, where they drift: the make targets and `python -m` commands they
name, the budget tables, the Python floor. Commands are read from code only (fenced blocks and
`inline code`), where a reader copies them from."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from maintainer.pipeline import TRAINING_NOTEBOOK, budgets_for
from transformer_lab.data import TEST_CHARS
from transformer_lab.runtime import BUDGETS

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [ROOT / "README.md", ROOT / "grader" / "README.md", ROOT / "solutions" / "README.md"]
    + list((ROOT / "docs").rglob("*.md"))
)
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`([^`\n]+)`")
MAKE = re.compile(r"\bmake ([a-z][a-z-]*)")
PYTHON_M = re.compile(r"\bpython -m ([A-Za-z_][\w.]*)(?: ([a-z][\w-]*))?")


def code(path: Path) -> list[str]:
    """The code in a markdown file: its fenced blocks, then its inline spans outside them."""
    text = path.read_text(encoding="utf-8")
    return FENCED.findall(text) + INLINE.findall(FENCED.sub("", text))


def named(pattern: re.Pattern) -> dict[tuple, list[str]]:
    """What `pattern` finds in the docs' code -> the docs that name it."""
    found: dict[tuple, list[str]] = {}
    for path in DOCS:
        for snippet in code(path):
            for match in pattern.finditer(snippet):
                found.setdefault(match.groups(), []).append(str(path.relative_to(ROOT)))
    return found


def test_the_docs_are_all_there():
    assert all(path.is_file() for path in DOCS)


def test_every_make_target_named_in_the_docs_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.MULTILINE))
    mentioned = named(MAKE)
    assert {"autograde", "release", "regenerate-baselines"} <= {t for (t,) in mentioned}
    missing = {target: where for (target,), where in mentioned.items() if target not in targets}
    assert not missing, f"make targets named in the docs but not in the Makefile: {missing}"


def test_every_python_m_module_named_in_the_docs_imports_and_runs_as_a_program():
    modules = sorted({module for module, _ in named(PYTHON_M)})
    assert {"grader", "grader.job", "maintainer.bench", "transformer_lab"} <= set(modules)
    # From the checkout, as the docs run them, and in a process of its own: importing a module
    # may change the interpreter (grader.job marks a package absent).
    probe = (
        "import importlib, importlib.util, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    module = importlib.import_module(name)\n"
        "    if hasattr(module, '__path__'):\n"
        "        out[name] = importlib.util.find_spec(name + '.__main__') is not None\n"
        "    else:\n"
        "        source = importlib.util.find_spec(name).loader.get_source(name)\n"
        "        out[name] = 'if __name__ == \"__main__\":' in source\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *modules], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    runnable = json.loads(done.stdout.splitlines()[-1])
    assert [m for m in modules if not runnable[m]] == [], "named with -m, but not a program"


def test_every_subcommand_named_in_the_docs_exists():
    """`python -m grader autograde`: the word after the module is one of the commands its
    `--help` lists (one program run a module)."""
    pairs = {(module, word): where for (module, word), where in named(PYTHON_M).items() if word}
    assert ("grader", "autograde") in pairs and ("transformer_lab", "train") in pairs
    commands = {}
    for module in {module for module, _ in pairs}:
        help_ = [sys.executable, "-m", module, "--help"]
        done = subprocess.run(help_, cwd=ROOT, capture_output=True, text=True, timeout=120)
        listed = re.search(r"\{([\w,-]+)\}", done.stdout)
        commands[module] = set(listed.group(1).split(",")) if listed else set()
    gone = {
        f"python -m {module} {word}": where
        for (module, word), where in sorted(pairs.items())
        if word not in commands[module]
    }
    assert not gone, f"commands the docs name that the code does not have: {gone}"


def table(text: str, start: str) -> list[list[str]]:
    """The first markdown table from where `start` is (a heading, or the table's first line):
    its rows of cells, the header first, the separator left out."""
    block = []
    for line in text[text.index(start) :].splitlines():
        if line.startswith("|"):
            block.append(line)
        elif block:
            break
    assert block, f"no table after {start!r}"
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in block]
    return [rows[0]] + [row for row in rows[1:] if not set("".join(row)) <= set("-: ")]


def seconds(cell: str) -> int:
    return int(re.match(r"([\d,]+) s\b", cell).group(1).replace(",", ""))


# What each column of docs/performance.md's budget table stands for: (mode, device) pairs.
COLUMNS = {
    "CPU, quick": [("quick", "cpu")],
    "CPU, full": [("full", "cpu")],
    "CUDA GPU, any mode": [("quick", "cuda"), ("full", "cuda")],
}


def test_the_budget_table_of_performance_md_is_the_pipelines():
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    header, *rows = table(text, "## Time budgets the pipeline enforces")
    assert header[1:] == list(COLUMNS)
    other = "01_attention"  # any notebook but the training one
    for row in rows:
        name = TRAINING_NOTEBOOK if row[0] == f"`{TRAINING_NOTEBOOK}`" else other
        assert name == TRAINING_NOTEBOOK or row[0] == "every other notebook", row
        for column, cell in zip(header[1:], row[1:], strict=True):
            for mode, device in COLUMNS[column]:
                one, two = (
                    budgets_for(mode, device, seeds, [TRAINING_NOTEBOOK, other])[name]
                    for seeds in ([0], [0, 1])
                )
                assert seconds(cell) == one, (row[0], column)
                # "a seed": the budget grows with the seeds; otherwise it does not.
                assert two == (2 * one if cell.endswith("a seed") else one), (row[0], column)
    assert {row[0] for row in rows} == {f"`{TRAINING_NOTEBOOK}`", "every other notebook"}
    assert "Smoke runs have no budgets" in text
    assert budgets_for("smoke", "cpu", [0], [TRAINING_NOTEBOOK, other]) == {}


def test_the_readme_budget_table_is_the_packages():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    header, *rows = table(text, "| budget | batch | steps |")
    assert header[:4] == ["budget", "batch", "steps", "test characters"]
    shown = {row[0].strip("`"): row[1:4] for row in rows}
    assert set(shown) == set(BUDGETS)
    for name, budget in BUDGETS.items():
        characters = budget.test_characters or TEST_CHARS
        expected = [f"{budget.batch_size:,}", f"{budget.steps:,}", f"{characters:,}"]
        assert shown[name] == expected, name


def test_the_readme_names_the_python_floor():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    floor = re.search(r">=\s*(\d+\.\d+)", pyproject["project"]["requires-python"]).group(1)
    said = re.findall(r"Python (\d+\.\d+)\+", (ROOT / "README.md").read_text())
    assert said and set(said) == {floor}
