"""What can change a notebook's scores, hashed: part of each submission's rerun key, so that
autograde grades a submission again when one of these changed, and only then.

    the engine           grader/engine/ but review.py, and what its jobs import of grader/
                         (course.py)
    the package          transformer_lab/ but its reading/ wing: the models, the loop, the
                         data and what the checks and the release's graded code import of it
    the notebook's checks  the checkpoints modules its release imports, and theirs in turn
                         (_core.py, _watch.py, _devices.py, __init__.py), each with its hidden
                         cases (NAME_hidden.py): a check edited regrades its notebook, not the
                         others
    the release          the notebook as released (locked cells, hidden tests, points)
    the data it reads    for a notebook that loads the course's recorded mini-GPT, the runs of
                         data/baselines.json that choose it (their provenance) and the model
                         files; the recorded figures (results) are only shown, never checked

An edit that changes no behaviour regrades no one. A Python file counts by its syntax tree with
its docstrings removed (ast.dump: comments, formatting, blank lines and docstrings do not count;
a changed message string, number, name or statement does). The release counts by what grading
runs and scores: each code cell's syntax tree (its source where it is not Python) and each cell's
nbgrader metadata (grade id, points, locked, solution; and the checksum of a written answer, by
which nbgrader scores an answer left as released 0), and the cells' order and kinds (preflight
finds a cell by its place); its markdown text and notebook metadata (a title, a hint, the badge)
do not. Data files (the recorded model) count by their bytes.

Not in it, so editing them regrades no one: the after-the-lab reading (transformer_lab/reading/:
the readings of the record, the ladder, the figures, their templates), which the notebooks show
and no check imports (tests/test_no_import_cycle.py holds it to the top floor); the term
(grader/term/: rosters, due dates, reports, grade sheets, nbgrader's release, feedback and
export); review.py, whose flags never change a score and are computed again for every
submission at every run, kept or regraded; options.py, whose limits and sandbox are in the key
as their values (EngineOptions.settings), and whose words are the report's;
grader/nbgrader_config.py, which names the term's plugins and the feedback's preprocessors,
while what of it grading reads is keyed where it takes effect (the stubs in the release, the
cell timeout in the run's settings); and baselines.json for a notebook that only shows its
numbers.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from pathlib import Path

from ..cells import parse_cell

ENGINE = ("grader/__init__.py", "grader/course.py", "grader/engine/*.py")
# review.py's flags are computed again at every run; of options.py, what can change a score is
# in every key already, as its values (EngineOptions.settings), and the rest is the report's
NOT_SCORING = ("grader/engine/review.py", "grader/engine/options.py")
PACKAGE = ("transformer_lab/**/*.py",)
READING = "transformer_lab/reading"  # shown, never scored: the package's top floor
CHECKS = "checkpoints"
# A notebook that calls one of these reads data/: the recorded runs choose a model file.
MODEL_LOADERS = ("load_trained_gpt",)
BASELINES = "data/baselines.json"


def digests(releases: dict, root: Path) -> dict[str, str]:
    """notebook -> SHA-256 of everything that can change its scores (see the docstring)."""
    unkeyed = {root / name for name in NOT_SCORING}
    shared = [p for pattern in ENGINE + PACKAGE for p in sorted(root.glob(pattern))]
    reading = root / READING
    shared = [p for p in shared if p not in unkeyed and not p.is_relative_to(reading)]
    entries: dict[Path, bytes] = {}  # each file parsed once, whichever notebooks read it
    found = {}
    for name, release in releases.items():
        code = _code(release)
        digest = hashlib.sha256()
        for path in shared + checks_read(code, root):
            if path not in entries:
                entries[path] = _entry(path, root)
            digest.update(entries[path])
        digest.update(_release_entry(release))
        if _calls(code, MODEL_LOADERS):
            digest.update(recorded_models(root))
        found[name] = digest.hexdigest()
    return found


def _code(notebook) -> list[ast.Module]:
    """The syntax trees of the notebook's code cells (those that parse)."""
    trees = [parse_cell(cell.source) for cell in notebook.cells if cell.cell_type == "code"]
    return [tree for tree in trees if tree is not None]


def _entry(path: Path, top: Path) -> bytes:
    """The file's name in the checkout and what of it can change a score: a Python file's
    syntax tree without docstrings, any other file's bytes."""
    content = path.read_bytes()
    if path.suffix == ".py":
        content = behaviour(content.decode("utf-8")).encode()
    return f"{path.relative_to(top)}\0{len(content)}\0".encode() + hashlib.sha256(content).digest()


@functools.lru_cache(maxsize=1024)  # a pure function of the text: each file parsed once a run
def behaviour(source: str) -> str:
    """Python source as the rerun key counts it: ast.dump of its tree (no comments, layout or
    line numbers), each module's, class's and function's docstring removed; the source itself
    where it does not parse."""
    tree = parse_cell(source)
    if tree is None:
        return source
    _drop_docstrings(tree)
    return ast.dump(tree)


DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # where statements nest


def _drop_docstrings(node: ast.AST) -> None:
    """Through the statements only (a docstring is one), not every expression: a tree of a
    large module has ten times more expression nodes than statements."""
    body = getattr(node, "body", None)
    if isinstance(node, DOCUMENTED) and body and _is_docstring(body[0]):
        node.body = body[1:]
    for block in BLOCKS:
        for child in getattr(node, block, None) or ():
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                _drop_docstrings(child)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


GRADED_FIELDS = ("grade_id", "grade", "solution", "locked", "points", "task", "cell_type")


def _release_entry(release) -> bytes:
    """The release as grading runs and scores it: each cell's kind, its nbgrader metadata, a
    code cell's syntax tree, a written answer's checksum; no markdown text, no notebook
    metadata."""
    cells = []
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        said = {key: meta[key] for key in GRADED_FIELDS if key in meta}
        if meta.get("grade") and meta.get("solution"):
            said["checksum"] = meta.get("checksum")
        code = behaviour(cell.source) if cell.cell_type == "code" else ""
        cells.append([cell.cell_type, said, code])
    return json.dumps(cells, sort_keys=True).encode()


def checks_read(code: list[ast.Module], root: Path) -> list[Path]:
    """The checkpoints modules the notebook's code imports, with theirs, sorted."""
    folder = root / CHECKS
    todo = [name for tree in code for name in _checkpoints_imported(tree, folder, None)]
    todo.append("__init__")  # importing any of them runs the package's __init__ first
    found = set()
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        todo += [n for n in _checkpoints_imported(tree, folder, name) if n not in found]
    # A check's hidden cases sit beside it (attention_hidden.py): the release holds no hidden
    # test to import them, yet autograde runs them.
    found |= {f"{n}_hidden" for n in found if (folder / f"{n}_hidden.py").is_file()}
    return sorted(folder / f"{name}.py" for name in found)


def _checkpoints_imported(tree: ast.Module, folder: Path, inside: str | None) -> list[str]:
    """Modules of checkpoints/ that `tree` imports: absolutely, or relatively when `inside` is
    one of them."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[1] for a in node.names if a.name.startswith(CHECKS + ".")]
        elif isinstance(node, ast.ImportFrom):
            relative = node.level == 1 and inside is not None
            if node.module == CHECKS or (relative and node.module is None):
                names += [a.name for a in node.names]  # a module, or a name from __init__
            elif node.module and (node.module.startswith(CHECKS + ".") or relative):
                names.append(node.module.removeprefix(CHECKS + "."))
    return [n for n in names if (folder / f"{n}.py").is_file()]


def _calls(code: list[ast.Module], functions: tuple[str, ...]) -> bool:
    for tree in code:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func
                name = (
                    called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                )
                if name in functions:
                    return True
    return False


def recorded_models(root: Path) -> bytes:
    """The part of data/ that chooses and holds the recorded mini-GPT: each run but its results
    (its mode and device class, its provenance: the model file and that file's SHA-256) and the
    model files themselves. A refreshed figure (a run's results) leaves it as it is."""
    path = root / BASELINES
    if not path.is_file():
        return b"no baselines"
    runs = json.loads(path.read_text(encoding="utf-8")).get("runs", {})
    chosen = {key: {k: v for k, v in run.items() if k != "results"} for key, run in runs.items()}
    provenance = [run.get("provenance", {}) for run in chosen.values()]
    models = sorted({p["model"]["file"] for p in provenance if "model" in p})
    parts = [json.dumps(chosen, sort_keys=True).encode()]
    parts += [_entry(path.parent / name, root) for name in models if (path.parent / name).is_file()]
    return b"\0".join(parts)
