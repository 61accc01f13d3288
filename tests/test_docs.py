"""The docs against the code, where they drift: every Markdown file of the repository (but the
changelog, a record of what was) is read for the repository paths, make targets and `python -m`
commands it names, and the figures it shares with the code (budget tables, the Python floor, the
Debian packages, minutes a seed, the suite's minutes, the test files) are compared. Paths and
commands are read from code only (fenced blocks and `inline code`), where a reader copies them
from. The docstrings of the project's packages are read for the `module.name` they cite."""

from __future__ import annotations

import glob
import json
import math
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from paths import ROOT

from maintainer.pipeline import TRAINING_NOTEBOOK, budgets_for
from transformer_lab.baselines import load_baselines
from transformer_lab.data import TEST_CHARS
from transformer_lab.runtime import BUDGETS

# The changelog names files and targets as they were when each line was written.
HISTORY = {"CHANGELOG.md"}
# What git sees: tracked, or new and not ignored.
TRACKED = subprocess.run(
    ["git", "ls-files", "-co", "--exclude-standard"],
    cwd=ROOT,
    capture_output=True,
    text=True,
    check=True,
).stdout.splitlines()
TRACKED = [name for name in TRACKED if (ROOT / name).is_file()]  # not those deleted since
DOCS = [ROOT / name for name in TRACKED if name.endswith(".md") and name not in HISTORY]
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
    assert {"README.md", "tests/README.md", "checkpoints/README.md", "docs/core_path.md"} <= {
        str(path.relative_to(ROOT)) for path in DOCS
    }


# A repository path: one that starts at a top-level folder of the checkout; in a folder's own
# README also a path from that folder (`engine/job.py` in grader/README.md) and a bare module
# name, of that folder (`test_data.py` in tests/README.md) or, failing that, of the repository
# (`_core.py` where the text says `checkpoints/`).
TOP = sorted({name.split("/")[0] for name in TRACKED if "/" in name})
IN_THE_REPO = re.compile(rf"(?<![\w./~$-])((?:{'|'.join(map(re.escape, TOP))})/[\w./*-]*)")
FROM_HERE = re.compile(r"(?<![\w./~$-])([\w*-]+(?:/[\w*-]+)*\.py)\b")
# Named on purpose though absent: where a file goes (a course folder inside the checkout, which
# the sandbox hides) or a pattern (NN_topic: any notebook).
NOT_FILES = {"grader/course", "notebooks/NN_topic.ipynb", "NN_topic.py"}


def from_folder(folder: Path, name: str) -> str | None:
    """The repository path a doc in `folder` means by `name`, None where it names no file of
    the repository (a course's file, a top-level path read already)."""
    here = str(folder.relative_to(ROOT))
    first = name.split("/")[0]
    if "/" in name:
        return f"{here}/{name}" if first not in TOP and (folder / first).is_dir() else None
    if (folder / name).exists() or "*" in name:
        return f"{here}/{name}"
    elsewhere = sorted(t for t in TRACKED if Path(t).name == name)
    return elsewhere[0] if elsewhere else f"{here}/{name}"


def paths_named(path: Path) -> list[str]:
    """The repository paths a doc names in its code, relative to the checkout."""
    found = []
    for snippet in code(path):
        found += [m.rstrip(".") for m in IN_THE_REPO.findall(snippet)]
        if path.parent != ROOT:
            found += filter(None, (from_folder(path.parent, m) for m in FROM_HERE.findall(snippet)))
    return [p for p in found if p not in NOT_FILES and Path(p).name not in NOT_FILES]


def test_every_path_named_in_the_docs_exists():
    named_paths = {str(path.relative_to(ROOT)): paths_named(path) for path in DOCS}
    assert "tests/test_whole_term.py" in named_paths["tests/README.md"]
    assert "checkpoints/_devices.py" in named_paths["checkpoints/README.md"]
    assert "grader/engine/rerun_key.py" in named_paths["grader/README.md"]
    missing = {
        doc: sorted({p for p in paths if not glob.glob(str(ROOT / p))})
        for doc, paths in named_paths.items()
    }
    missing = {doc: paths for doc, paths in missing.items() if paths}
    assert not missing, f"paths named in the docs that the repository does not have: {missing}"


def test_tests_readme_names_every_test_file():
    named_there = set(paths_named(ROOT / "tests" / "README.md"))
    files = {name for name in TRACKED if re.fullmatch(r"tests/test_\w+\.py", name)}
    assert sorted(files - named_there) == [], "test files tests/README.md does not describe"


def test_every_make_target_named_in_the_docs_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.MULTILINE))
    mentioned = named(MAKE)
    assert {"autograde", "release", "regenerate-baselines"} <= {t for (t,) in mentioned}
    missing = {target: where for (target,), where in mentioned.items() if target not in targets}
    assert not missing, f"make targets named in the docs but not in the Makefile: {missing}"


def test_every_python_m_module_named_in_the_docs_imports_and_runs_as_a_program():
    modules = sorted({module for module, _ in named(PYTHON_M)})
    assert {"grader", "grader.engine.job", "maintainer.bench", "transformer_lab"} <= set(modules)
    # From the checkout, as the docs run them, and in a process of its own: importing a module
    # may change the interpreter (grader.engine.job marks a package absent).
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


PYTHON_C = re.compile(r"\bpython -c \"([^\"]+)\"")


def test_every_python_c_line_in_the_docs_runs():
    lines = sorted(named(PYTHON_C))
    assert lines, "the docs show no `python -c` line: is PYTHON_C still what they write?"
    for (source,) in lines:
        done = subprocess.run(
            [sys.executable, "-c", source], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"python -c {source!r} fails: {done.stderr[-500:]}"


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


NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def test_the_readme_counts_the_debian_packages_ci_installs():
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    said = re.search(r"need (\w+) Debian packages?, `sudo apt-get install ([^`]+)`", text)
    assert said, "the README's sentence on the Debian packages the grading tests need"
    packages = said.group(2).split()
    assert NUMBERS[said.group(1)] == len(packages)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert sorted(packages) == sorted(re.findall(r'need="\$need ([\w-]+)"', ci))


def make_help(target: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(rf"^{target}:.*## (.*)$", makefile, re.MULTILINE).group(1)


def test_the_minutes_of_training_a_seed_are_the_makefiles_and_the_recorded_runs():
    """The README and `make help` state the same minutes a seed of the main job on two CPU
    cores, and they are what data/baselines.json recorded, rounded up."""
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    readme = re.findall(r"about (\d+) minutes a seed on two CPU cores", text)
    makefile = re.findall(r"~(\d+) min a seed", make_help("regenerate-baselines"))
    run = load_baselines()["runs"]["quick/cpu"]["provenance"]
    recorded = sum(run["notebook_seconds"].values()) / len(run["seeds"]) / 60
    assert readme == makefile == [str(math.ceil(recorded))]


def test_the_suite_takes_the_minutes_make_help_says():
    said = " ".join((ROOT / "tests" / "README.md").read_text(encoding="utf-8").split())
    readme = re.search(r"`make test` \(([\d.]+) to ([\d.]+) minutes on 2 CPU cores", said)
    makefile = re.search(r"\(([\d.]+)-([\d.]+) minutes on 2\)", make_help("test"))
    assert readme and makefile and readme.groups() == makefile.groups()


# --- the docstrings' names ---------------------------------------------------------------------

PACKAGES = ("grader", "transformer_lab", "maintainer", "checkpoints")
# `module.name` in a docstring, module a file stem of the project's packages.
DOTTED = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b")
FILE_TYPES = {"py", "md", "json", "toml", "ipynb", "csv", "txt", "pt", "html", "zip", "yml", "j2"}


def _modules() -> dict[str, list[Path]]:
    """file stem -> the project's modules of that name (a package by its __init__.py)."""
    found: dict[str, list[Path]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            stem = path.parent.name if path.name == "__init__.py" else path.stem
            found.setdefault(stem, []).append(path)
    return found


def _defined(path: Path) -> set[str]:
    """The names a module defines at its top level, and its submodules' names for a package."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if path.name == "__init__.py":
        names |= {p.stem for p in path.parent.glob("*.py")} | {
            p.name for p in path.parent.iterdir() if (p / "__init__.py").is_file()
        }
    return names


def _docstrings(path: Path):
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def unresolved(paths, modules, root: Path = ROOT) -> list[str]:
    """`module.name` references in the docstrings of `paths` whose module is the project's
    and defines no such name."""
    missing = []
    for path in paths:
        for text in _docstrings(path):
            for module, name in DOTTED.findall(text):
                if name in FILE_TYPES or module not in modules:
                    continue
                if not any(name in _defined(m) for m in modules[module]):
                    missing.append(f"{path.relative_to(root)}: {module}.{name}")
    return missing


def test_the_docstrings_name_functions_that_exist():
    modules = _modules()
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert not unresolved(paths, modules)


def test_a_docstring_naming_a_function_that_is_gone_is_found(tmp_path):
    stale = tmp_path / "stale.py"
    stale.write_text('"""The key is made by autograde.grading_digest."""\n', encoding="utf-8")
    fine = tmp_path / "fine.py"
    fine.write_text('"""The key is made by rerun_key.digests (job.py)."""\n', encoding="utf-8")
    found = unresolved([stale, fine], _modules(), root=tmp_path)
    assert found == ["stale.py: autograde.grading_digest"]
