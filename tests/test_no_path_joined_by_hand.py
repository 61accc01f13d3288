"""No module of grader/ or maintainer/ but grader/course.py joins a path of the course folder by
hand: every one is the Layout's (grader.course.Layout), as nbgrader's CourseDirectory makes each
of its own. Read from the syntax, not the text: a join (`a / b`, `Path(a, b)`, `a.joinpath(b)`,
`os.path.join(a, b)`) onto a path of the course (the course, its Layout, what a Layout method
gives, or a name bound to one of them), a join of a name the course folder holds (a step, or a
file or folder the Layout names: `"roster.csv"`, `ROSTER_FILE`, `"exchange"`) onto anything, and
a student's path read back by hand (`.parent.parent.name`, `glob("submitted/...")`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from paths import ROOT

from grader.course import STEPS

FOLDERS = ("grader", "maintainer")
LAYOUT = Path("grader") / "course.py"
COURSE_NAMES = {"course", "layout", "COURSE"}  # what a course folder, or its Layout, is called
PATH_CALLS = {"Path", "PurePath", "PurePosixPath", "Layout"}


def layout_vocabulary(course_py: Path) -> tuple[set[str], set[str]]:
    """(the Layout's methods and properties that give a path, the names of files and folders it
    makes): read from grader/course.py, so that a path added there is guarded at once."""
    tree = ast.parse(course_py.read_text(encoding="utf-8"))
    (layout,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Layout"]
    methods = {
        node.name
        for node in layout.body
        if isinstance(node, ast.FunctionDef) and node.returns is not None
        if ast.unparse(node.returns) == "Path"
    }
    texts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    names = {t for t in texts if isinstance(t, str) and re.fullmatch(r"[\w-]+(\.\w+)*", t)}
    return methods | {"root"}, (names & {*STEPS, "exchange"}) | {n for n in names if "." in n}


def _text(node: ast.AST, constants: dict[str, str]) -> str | None:
    """A join part's text where the syntax says it: a string, an f-string's fixed parts, or a
    module-level string constant of grader/ or maintainer/."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


class Scan:
    """What one module joins by hand (`found`: line numbers)."""

    def __init__(self, tree: ast.Module, constants: dict, methods: set, names: set):
        self.constants, self.methods, self.names = constants, methods, names
        self.found: set[int] = set()
        for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]:
            self._scope(scope)

    def course_path(self, node: ast.AST, bound: set[str]) -> bool:
        """Whether `node` is the course folder or a path in it."""
        if isinstance(node, ast.Name):
            return node.id in COURSE_NAMES | bound
        if isinstance(node, ast.Attribute):
            if node.attr in ("course", "layout"):
                return True
            return node.attr in self.methods and self.course_path(node.value, bound)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in self.methods:
                return self.course_path(func.value, bound)
            called = getattr(func, "id", getattr(func, "attr", ""))
            called = "Layout" if ast.unparse(func) == "Layout.of" else called
            return called in PATH_CALLS and any(self.course_path(a, bound) for a in node.args)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.course_path(node.left, bound)
        return False

    def _scope(self, scope: ast.AST) -> None:
        nodes, bound = list(ast.walk(scope)), set()
        while True:  # names bound to a course path, through any number of assignments
            more = {name for node in nodes for name in self._binds(node, bound)}
            if more <= bound:
                break
            bound |= more
        for node in nodes:
            base, parts = self._join(node)
            if base is not None and (
                self.course_path(base, bound) or any(map(self._names_the_course, parts))
            ):
                self.found.add(node.lineno)
            elif self._read_back(node):
                self.found.add(node.lineno)

    def _binds(self, node: ast.AST, bound: set[str]) -> list[str]:
        """The names `node` binds to a course path: assigned one, or each path a course path's
        glob or iterdir lists (`for folder in layout.step("submitted").glob("*/*")`)."""
        if isinstance(node, ast.Assign) and self.course_path(node.value, bound):
            targets = node.targets
        elif isinstance(node, ast.For) and any(
            isinstance(n, ast.Call)
            and getattr(n.func, "attr", "") in ("glob", "rglob", "iterdir")
            and self.course_path(n.func.value, bound)
            for n in ast.walk(node.iter)
        ):
            targets = [node.target]
        else:
            return []
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]

    @staticmethod
    def _join(node: ast.AST) -> tuple[ast.AST | None, list[ast.AST]]:
        """(what is joined onto, the parts joined) of a join, else (None, [])."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return node.left, [node.right]
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "joinpath":
                return func.value, node.args
            called = getattr(func, "id", getattr(func, "attr", ""))
            if called in PATH_CALLS - {"Layout"} | {"join"} and len(node.args) > 1:
                return node.args[0], node.args[1:]
        return None, []

    def _names_the_course(self, part: ast.AST) -> bool:
        text = _text(part, self.constants)
        return text is not None and (text in self.names or text.split("/")[0] in STEPS)

    def _read_back(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "name":
            parent = node.value
            return (
                isinstance(parent, ast.Attribute)
                and parent.attr == "parent"
                and (isinstance(parent.value, ast.Attribute) and parent.value.attr == "parent")
            )
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("glob", "rglob"):
            text = _text(node.args[0], self.constants) if node.args else None
            return text is not None and "/" in text and text.split("/")[0] in STEPS
        return False


def _constants(paths: list[Path]) -> dict[str, str]:
    """Module-level string constants, by name, of every file scanned."""
    found = {}
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        found[target.id] = node.value.value
    return found


def hand_joined(paths: list[Path], root: Path = ROOT) -> list[str]:
    """file:line of each line that joins a path of the course folder by hand."""
    methods, names = layout_vocabulary(ROOT / LAYOUT)
    constants = _constants(paths)
    found = []
    for path in paths:
        scan = Scan(ast.parse(path.read_text(encoding="utf-8")), constants, methods, names)
        found += [f"{path.relative_to(root)}:{line}" for line in sorted(scan.found)]
    return found


def test_the_layout_s_vocabulary_is_read_from_it():
    methods, names = layout_vocabulary(ROOT / LAYOUT)
    assert {"step", "notebook", "report", "roster", "lms_ids", "exchange", "timestamp"} <= methods
    expected = {"gradebook.db", "course.toml", "roster.csv", "canvas_assignments.json"}
    expected |= {"exchange", "timestamp.txt", "index.jsonl", "job.json"}
    assert expected <= names


def test_no_module_but_the_layout_joins_a_path_of_the_course_folder():
    paths = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    paths = [p for p in paths if p != ROOT / LAYOUT]
    assert hand_joined(paths) == []


BY_HAND = """ROSTER_FILE = "roster.csv"


def joins(course, layout, student, name, checkout):
    folder = Path(course) / "autograded" / student
    roster = Path(course) / ROSTER_FILE
    reports = layout.step("reports")
    table = reports / "autograde.md"
    page = course.layout.report("feedback_bundles") / f"{name}.zip"
    stamp = os.path.join(checkout, "timestamp.txt")
    kept = layout.root.joinpath("collected", "index.jsonl")
    for p in course.glob("submitted/*/*/*.ipynb"):
        who = p.parent.parent.name
    for folder in sorted(Layout.of(course).step("submitted").glob("*/*")):
        notebook = folder / f"{folder.name}.ipynb"
    fine = Layout(course).report("grades.csv")
    also_fine = checkout / "data" / f"{name}.json"
    return course.layout.notebook("submitted", name, student)
"""


def test_each_kind_of_join_by_hand_is_found(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(BY_HAND, encoding="utf-8")
    lines = [f"bad.py:{n}" for n in (5, 6, 8, 9, 10, 11, 12, 13, 15)]
    assert hand_joined([bad], tmp_path) == lines
