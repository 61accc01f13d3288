"""No import circle among the project's modules (grader/, the package, the checks, the
maintainers' tools): a module never needs, however indirectly, one that needs it. Every import
counts, wherever it stands (at the top, in a function, under TYPE_CHECKING): an import moved
into a function hides a circle from Python, not from here."""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

FOLDERS = ("grader", "transformer_lab", "checkpoints", "maintainer")


def modules(folders: list[Path]) -> dict[str, Path]:
    """Dotted name -> file of every module of these package folders (a package: its
    __init__.py)."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder.parent).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere in its file: `from a import b`
    is module a.b where there is one, else a's __init__."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, [base, node.module or ""]))
            found |= {
                f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                for a in node.names
            }
    return {m for m in found if m in known and m != name}


def import_cycles(folders: list[Path]) -> list[list[str]]:
    """Each set of modules that import one another in a circle (a strongly connected part of
    the import graph, Tarjan's walk), sorted; [] where there is none."""
    known = modules(folders)
    graph = {name: sorted(imported(name, path, known)) for name, path in known.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(name: str) -> None:
        order[name] = low[name] = len(order)
        stack.append(name)
        for other in graph[name]:
            if other not in order:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], order[other])
        if low[name] == order[name]:
            part = stack[stack.index(name) :]
            del stack[stack.index(name) :]
            if len(part) > 1:
                cycles.append(sorted(part))

    for name in sorted(graph):
        if name not in order:
            visit(name)
    return sorted(cycles)


def test_the_project_has_no_import_cycle():
    assert import_cycles([ROOT / folder for folder in FOLDERS]) == []


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .c import value\n")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def late():\n    from .sub import c\n")
    (package / "sub" / "c.py").write_text("import pkg.a\nvalue = 1\n")
    (package / "d.py").write_text("from .sub import value\n")  # the package's __init__: no cycle
    assert import_cycles([package]) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    (package / "sub" / "c.py").write_text("value = 1\n")
    assert import_cycles([package]) == []


READING = "transformer_lab.reading"
BELOW_THE_READING = ("transformer_lab", "checkpoints", "grader")


def reading_importers(folders: list[Path]) -> list[str]:
    """Modules below the reading (the rest of the package, the checks, the grader) that import
    any module of transformer_lab/reading/, sorted."""
    known = modules(folders)
    below = [n for n in known if not (n == READING or n.startswith(READING + "."))]
    return sorted(
        name
        for name in below
        if any(
            m == READING or m.startswith(READING + ".") for m in imported(name, known[name], known)
        )
    )


def test_the_reading_is_the_package_s_top_floor():
    """Nothing below imports the after-the-lab reading, so the rerun key can leave it out."""
    assert reading_importers([ROOT / folder for folder in BELOW_THE_READING]) == []


def test_an_import_of_the_reading_from_below_is_found(tmp_path):
    for folder in BELOW_THE_READING:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "transformer_lab" / "reading").mkdir()
    (tmp_path / "transformer_lab" / "reading" / "__init__.py").write_text("")
    (tmp_path / "transformer_lab" / "reading" / "ladder.py").write_text("")
    (tmp_path / "checkpoints" / "heads.py").write_text(
        "def f():\n    from transformer_lab.reading import ladder\n"
    )
    assert reading_importers([tmp_path / f for f in BELOW_THE_READING]) == ["checkpoints.heads"]
