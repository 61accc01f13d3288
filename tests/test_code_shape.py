"""No function longer than 60 lines in the package, the checks, the grader or the maintainer
tools: one that needs comments to say where its parts begin wants to be several functions.
Nothing is exempt."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from conftest import place
from paths import ROOT

FOLDERS = ("transformer_lab", "checkpoints", "grader", "maintainer")
LIMIT = 60  # lines from `def` to the function's last line, docstring and comments included


def long_functions(root: Path = ROOT) -> dict[tuple[str, str], int]:
    """(file, function) -> lines, for every function or method over LIMIT, nested ones too."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > LIMIT:
                        found[str(path.relative_to(root)), node.name] = lines
    return found


def test_the_scan_sees_every_folder():
    for folder in FOLDERS:
        assert list((ROOT / folder).rglob("*.py")), f"no Python files in {folder}/"


def test_the_scan_finds_a_function_one_line_over_the_limit_nested_or_not(tmp_path):
    def function(name: str, lines: int) -> str:
        return f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 1))

    inner = textwrap.indent(function("inner", LIMIT + 1), "    ")
    source = "\n".join(
        [function("at_limit", LIMIT), function("over", LIMIT + 1), "def outer():", inner]
    )
    (tmp_path / "grader" / "engine").mkdir(parents=True)
    (tmp_path / "grader" / "engine" / "long.py").write_text(source, encoding="utf-8")
    assert long_functions(tmp_path) == {
        ("grader/engine/long.py", "over"): LIMIT + 1,
        ("grader/engine/long.py", "outer"): LIMIT + 2,
        ("grader/engine/long.py", "inner"): LIMIT + 1,
    }


def test_no_function_is_longer_than_the_limit():
    found = long_functions()
    long = sorted(f"{path}: {name} ({lines} lines)" for (path, name), lines in found.items())
    assert not long, f"split these into functions named for what they do: {long}"


def own_roots(folder: Path) -> list[str]:
    """The test files that find the checkout by themselves (`__file__`) or take a ROOT from
    anywhere but paths.py."""
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "paths.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            by_itself = isinstance(node, ast.Name) and node.id == "__file__"
            imported = isinstance(node, ast.ImportFrom) and node.module != "paths"
            if by_itself or (imported and "ROOT" in {alias.name for alias in node.names}):
                found.append(path.name)
                break
    return found


def heavy_orders(folder: Path) -> dict[str, object]:
    """file -> the order of its `pytestmark = pytest.mark.heavy(order=N)`, for each heavy file."""
    orders = {}
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            value = node.value if isinstance(node, ast.Assign) else None
            marks = value.elts if isinstance(value, ast.List) else [value]  # one mark or a list
            for mark in marks:
                if isinstance(mark, ast.Call) and ast.unparse(mark.func) == "pytest.mark.heavy":
                    orders[path.name] = {k.arg: ast.literal_eval(k.value) for k in mark.keywords}
    return {name: kwargs.get("order") for name, kwargs in orders.items()}


def test_the_scans_of_the_tests_see_a_root_of_its_own_and_a_shared_order(tmp_path):
    (tmp_path / "paths.py").write_text("ROOT = Path(__file__).parent\n")
    (tmp_path / "test_a.py").write_text("from paths import ROOT\nX = ROOT\n")
    (tmp_path / "test_b.py").write_text("HERE = Path(__file__).resolve().parents[1]\n")
    (tmp_path / "test_c.py").write_text("from maintainer.fabricated_class import ROOT\n")
    (tmp_path / "test_d.py").write_text("pytestmark = pytest.mark.heavy(order=2)\n")
    (tmp_path / "test_e.py").write_text("pytestmark = pytest.mark.heavy(order=2)\n")
    both = "pytestmark = [pytest.mark.heavy(order=3), pytest.mark.waits]\n"
    (tmp_path / "test_f.py").write_text(both)
    assert own_roots(tmp_path) == ["test_b.py", "test_c.py"]
    assert heavy_orders(tmp_path) == {"test_d.py": 2, "test_e.py": 2, "test_f.py": 3}


def test_every_test_file_takes_root_from_paths():
    assert own_roots(ROOT / "tests") == []


def test_the_files_that_wait_run_beside_the_longest_file():
    """`make test` hands out files in this order: the longest first, then the ones that mostly
    wait, so that they run beside it, then the other heavy files by order, the rest last."""

    class Item:
        def __init__(self, name: str, *marks):
            self.name, self.marks = name, {m.name: m for m in marks}

        def get_closest_marker(self, name: str):
            return self.marks.get(name)

    items = [
        Item("plain"),
        Item("second", pytest.mark.heavy(order=2).mark),
        Item("waits", pytest.mark.waits.mark),
        Item("heavy and waits", pytest.mark.heavy(order=3).mark, pytest.mark.waits.mark),
        Item("longest", pytest.mark.heavy(order=1).mark),
    ]
    ordered = [item.name for item in sorted(items, key=place)]
    assert ordered == ["longest", "waits", "heavy and waits", "second", "plain"]


def test_each_heavy_file_has_an_order_of_its_own():
    orders = heavy_orders(ROOT / "tests")
    assert {"test_grading.py", "test_fresh_runtime.py", "test_bench.py"} <= set(orders)
    assert all(isinstance(order, int) for order in orders.values()), orders
    assert sorted(orders.values()) == list(range(1, len(orders) + 1)), orders


SENTENCE_WORDS = 4  # a string literal of this many words or more is a sentence
SENTENCE_SHARE = 0.12  # of the suite's asserts, at most


def sentence_asserts(folder: Path) -> tuple[int, int]:
    """(asserts comparing a sentence, all asserts) over the test files of `folder`: an assert
    compares a sentence when its test, not its message, holds a string literal of
    SENTENCE_WORDS words or more."""
    sentences = total = 0
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assert):
                total += 1
                sentences += any(
                    isinstance(n, ast.Constant)
                    and isinstance(n.value, str)
                    and len(n.value.split()) >= SENTENCE_WORDS
                    for n in ast.walk(node.test)
                )
    return sentences, total


def test_the_count_tells_a_sentence_from_a_code_and_a_message(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "def test_a():\n"
        "    assert 'the check says so' in said\n"
        "    assert failure.code == 'ex1.no_sqrt_dk'\n"
        "    assert ok, 'a message of many words is no comparison'\n"
        "    assert f'{n} of these and more' == said\n",
        encoding="utf-8",
    )
    assert sentence_asserts(tmp_path) == (2, 4)


def test_few_asserts_compare_a_sentence():
    """Rewording a message fails the one test of its words, where it is made; elsewhere a
    test holds the code, the status or the value that carries the behaviour."""
    sentences, total = sentence_asserts(ROOT / "tests")
    assert sentences <= SENTENCE_SHARE * total, (
        f"{sentences} of {total} asserts compare a sentence of {SENTENCE_WORDS} words or more "
        f"(at most {SENTENCE_SHARE:.0%}): assert the code or the value instead"
    )
