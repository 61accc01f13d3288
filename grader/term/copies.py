"""Copies across the class: how much of each student's own code is found in the course's
published solutions, in the package's references, or in a classmate's notebook.

The method is the field's (MOSS, Dolos): each piece of code becomes a sequence of normalised
tokens, every run of K tokens is hashed, and winnowing (Schleimer, Wilkerson and Aiken, SIGMOD
2003) keeps the smallest hash of every window of W hashes, so that any run of K + W - 1 tokens
that two pieces share gives them a fingerprint in common. The measure is containment: the share
of the student's tokens covered by fingerprints the other source also holds (copydetect's
"token coverage"), so a copy of a part of a long reference scores as high as a copy of all of
it, and one student copying from another is seen from the copier's side.

Tokens are the student's syntax tree in preorder, as Dolos reads code: node types, operators,
numbers, attribute and keyword names, and the modules the code imports (`F.softmax` and
`torch.nn.functional.softmax` both name torch.nn.functional); every other name (arguments,
locals, functions, classes) is one token `<name>`, every string `<str>`; comments, docstrings,
annotations and layout are gone. A renamed, reformatted, uncommented copy gives the tokens of its
original, and reordered statements keep the fingerprints inside each statement. copydetect
(PyPI, 0.5.0) was weighed and not used: its pygments filter turns every identifier into `V`,
library names included, so `torch.softmax(x, dim=-1)` and `math.exp(x)` tokenise alike and the
short, converging answers of a lab exercise collide; its hashes are Python's salted `hash()`;
and it reads files, not cells. The winnowing here is its algorithm, tested on the property
above (tests/test_copies.py). The written prediction (a Markdown answer) is read the same way
with lowercased words for tokens.

The student's own code is what they wrote or changed: the exercise cells (nbgrader
`"solution": true`) minus the lines the release gives (the def line, the docstring, the stub),
and the code cells they added. Everything in the release and the workshop notebook is
boilerplate: its fingerprints never count. The sources are the solution regions of solutions/
(published: the workshop notebooks fold them under every stub), the package's attention.py and
model.py, and every classmate; a classmate is compared on what the published sources do not
already explain, so two students who both copied the solution are each named against it.

Converging honest answers are not accused. Against a classmate, a fingerprint held by more than
a tenth of the class weighs less (COMMON); against a published source every fingerprint counts
alike (where half the class copied the solution, its code is common because it was copied), and
the bar is higher. A match shorter than `min_tokens` (about four lines of code) is never flagged,
however alike: the one- and two-line exercises (the causal mask, the embedding, the block) are
answered the same way by honest students, so a copy of them cannot be told apart. The thresholds
and parameters are measured on a corpus of honest answers and copies (`python -m
maintainer.copy_corpus` prints the false positives and negatives per exercise and the time for a
class of 200). A flag never changes a score: it names the source and the share
for the instructor, and `make class-report` ranks the pairs and shows them side by side.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import hashlib
import html
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat

from ..cells import parse_cell
from ..course import ROOT, release_notebook


@dataclass(frozen=True)
class Kind:
    """How one kind of answer is fingerprinted and when its match is worth a look."""

    k: int  # tokens per hashed run: shorter runs are noise
    window: int  # winnowing window: every run of k + window - 1 shared tokens is seen
    min_tokens: int  # matched tokens below this are never flagged, however alike
    published: float  # share of the student's part found in a published source, to flag
    classmate: float  # share found in a classmate's (weighed by rarity), to flag

    def threshold(self, source: str) -> float:
        return self.classmate if source == "classmate" else self.published


# Measured with `python -m maintainer.copy_corpus` (its docstring says on what): honest code
# reaches 0.88 of a published source (Challenge A of the bug zoo: the solution with one line
# changed) and 0.59 of a classmate's; copies reach at least 0.93 and 0.73, a reworded copy of
# the example prediction 0.68, and no honest prediction shares a run of five words.
CODE = Kind(k=8, window=4, min_tokens=60, published=0.9, classmate=0.65)
TEXT = Kind(k=5, window=4, min_tokens=20, published=0.6, classmate=0.6)
COMMON = 0.1  # a fingerprint held by more than this share of the class weighs less
COMMON_FLOOR = 3  # ... and by more than this many students, whatever the class size
FLAG = "copy: "  # every flag of this module starts so (a rerun replaces them)
PUBLISHED = ("solution", "reference")
REFERENCES = ("transformer_lab/attention.py", "transformer_lab/model.py")
SOLUTIONS = "solutions"
WORKSHOP = "notebooks"
REGION = re.compile(r"^[ \t]*#* ?### (BEGIN|END) SOLUTION[ \t]*$", re.M)
NOTEBOOK = "notebook"  # the part that sums a notebook's code parts
ADDED = "added cells"  # the part that holds the code cells the student added
BUILTINS = frozenset(dir(builtins))


# --- tokens -------------------------------------------------------------------------------


def imports(trees: Iterable[ast.AST]) -> dict[str, str]:
    """The names the code binds to modules, and which: `F` -> torch.nn.functional."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name if alias.asname else alias.name.partition(".")[0]
                    found[alias.asname or top] = top
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def code_tokens(tree: ast.AST, modules: dict[str, str]) -> tuple[list[str], list[int]]:
    """(tokens, the line of each) of a syntax tree in preorder; see the module docstring."""
    tokens: list[str] = []
    lines: list[int] = []

    def emit(token: str, line: int) -> None:
        tokens.append(token)
        lines.append(line)

    def name(identifier: str) -> str:
        if identifier in modules:
            return modules[identifier]
        return identifier if identifier in BUILTINS else "<name>"

    def visit(node: ast.AST, line: int) -> None:
        line = getattr(node, "lineno", line)
        if isinstance(node, (ast.expr_context, ast.Import, ast.ImportFrom)):
            return  # what an import binds shows where the name is used
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring, or a string standing for a comment
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
        ):
            emit("<str>", line)
            return
        dotted = _dotted(node)
        if dotted and dotted.partition(".")[0] in modules:  # F.softmax: torch.nn.functional.softmax
            root, _, rest = dotted.partition(".")
            emit("Name", line)
            emit(f"{modules[root]}.{rest}", line)
            return
        emit(type(node).__name__, line)
        for key, value in ast.iter_fields(node):
            if key in ("annotation", "returns", "type_comment", "decorator_list", "type_params"):
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, ast.AST):
                    visit(item, line)
                elif item is None:
                    continue
                elif isinstance(node, ast.Name):
                    emit(name(item), line)
                elif key in ("attr", "arg") and isinstance(node, (ast.Attribute, ast.keyword)):
                    emit(item, line)  # an API's name and its keywords: what the code calls
                elif isinstance(item, str):
                    emit("<name>", line)  # arguments, functions, classes, globals
                else:
                    emit(repr(item), line)

    for statement in getattr(tree, "body", [tree]):
        visit(statement, 1)
    return tokens, lines


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an attribute chain that starts from a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not parts or not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def text_tokens(text: str) -> tuple[list[str], list[int]]:
    """Lowercased words and numbers, with their lines; Markdown and punctuation dropped."""
    tokens, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        for word in re.findall(r"[^\W_]+", line.lower()):
            tokens.append(word)
            lines.append(number)
    return tokens, lines


# --- fingerprints -------------------------------------------------------------------------


def _hash(run: tuple[str, ...]) -> int:
    """A run's hash, the same in every process (Python's own hash of a string is salted)."""
    return int.from_bytes(hashlib.blake2b("\x1f".join(run).encode(), digest_size=8).digest())


def winnow(hashes: list[int], window: int) -> list[int]:
    """Positions of the fingerprints: in every window of `window` hashes, the smallest (the
    rightmost of equals), each position once. Shorter than a window: every position."""
    if len(hashes) <= window:
        return list(range(len(hashes)))
    chosen: list[int] = []
    for start in range(len(hashes) - window + 1):
        low = min(hashes[start : start + window])
        at = max(i for i in range(start, start + window) if hashes[i] == low)
        if not chosen or chosen[-1] != at:
            chosen.append(at)
    return chosen


def fingerprints(tokens: list[str], kind: Kind) -> dict[int, list[int]]:
    """Winnowed hash -> the token positions its run starts at."""
    hashes = [_hash(tuple(tokens[i : i + kind.k])) for i in range(len(tokens) - kind.k + 1)]
    found: dict[int, list[int]] = defaultdict(list)
    for at in winnow(hashes, kind.window):
        found[hashes[at]].append(at)
    return dict(found)


@dataclass
class Piece:
    """Code (or a written answer) compared as one: an exercise's own lines, a source."""

    label: str  # what the instructor reads: "ex1_attention", "solutions/01_attention.py"
    text: str  # shown side by side
    tokens: list[str]
    lines: list[int]  # line of `text` each token comes from
    kind: Kind = CODE
    prints: dict[int, list[int]] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # enclosing def of each token (references)

    def fingerprint(self, boilerplate: frozenset[int] = frozenset()) -> Piece:
        prints = fingerprints(self.tokens, self.kind)
        self.prints = {h: at for h, at in prints.items() if h not in boilerplate}
        return self


def code_piece(label: str, source: str, own: set[int] | None, modules: dict[str, str]) -> Piece:
    """The tokens of `source` on the lines in `own` (every line when None)."""
    tree = parse_cell(source)
    tokens, lines = code_tokens(tree, modules) if tree else ([], [])
    kept = [i for i, line in enumerate(lines) if own is None or line in own]
    return Piece(label, source, [tokens[i] for i in kept], [lines[i] for i in kept])


def text_piece(label: str, text: str, own: set[int] | None) -> Piece:
    tokens, lines = text_tokens(text)
    kept = [i for i, line in enumerate(lines) if own is None or line in own]
    return Piece(label, text, [tokens[i] for i in kept], [lines[i] for i in kept], TEXT)


# --- the student's own code ---------------------------------------------------------------


def own_lines(source: str, given: str) -> set[int]:
    """Lines of `source` (from 1) that are not lines of `given`, compared without indentation."""
    mine = [line.strip() for line in source.splitlines()]
    theirs = [line.strip() for line in given.splitlines()]
    matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
    kept = set(range(1, len(mine) + 1))
    for block in matcher.get_matching_blocks():
        kept -= set(range(block.a + 1, block.a + block.size + 1))
    return {n for n in kept if mine[n - 1] and not mine[n - 1].startswith("#")}


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


@dataclass
class Given:
    """What the course hands out for one notebook: the stubs by grade id, every code cell of
    both flavours, and the fingerprints of all of it (boilerplate)."""

    stubs: dict[str, str]
    cells: set[str]
    modules: dict[str, str]
    code: frozenset[int]
    text: frozenset[int]


def given(release: nbformat.NotebookNode, workshop: nbformat.NotebookNode | None) -> Given:
    notebooks = [release] + ([workshop] if workshop is not None else [])
    cells = [c for nb in notebooks for c in nb.cells]
    code = [c.source for c in cells if c.cell_type == "code"]
    trees = [t for t in map(parse_cell, code) if t is not None]
    modules = imports(trees)
    code_prints = {h for t in trees for h in fingerprints(code_tokens(t, modules)[0], CODE)}
    text = [c.source for c in cells if c.cell_type == "markdown"]
    text_prints = {h for s in text for h in fingerprints(text_tokens(s)[0], TEXT)}
    stubs = {_grade_id(c): c.source for c in release.cells if _grade_id(c)}
    return Given(stubs, set(code), modules, frozenset(code_prints), frozenset(text_prints))


def own_parts(nb: nbformat.NotebookNode, handed: Given) -> dict[str, Piece]:
    """The student's own code by part: each exercise (grade id), the cells they added, and
    each written answer; fingerprinted, boilerplate removed."""
    mine = [c.source for c in nb.cells if c.cell_type == "code" and c.source not in handed.cells]
    modules = {**handed.modules, **imports(t for t in map(parse_cell, mine) if t is not None)}
    parts: dict[str, Piece] = {}
    added = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if meta.get("solution") and grade_id in handed.stubs:
            own = own_lines(cell.source, handed.stubs[grade_id])
            if cell.cell_type == "markdown":
                parts[grade_id] = text_piece(grade_id, cell.source, own)
            else:
                parts[grade_id] = code_piece(grade_id, cell.source, own, modules)
        elif cell.cell_type == "code" and not meta.get("locked"):
            if cell.source.strip() and cell.source not in handed.cells:
                added.append(cell.source)
    if added:
        parts[ADDED] = code_piece(ADDED, "\n\n".join(added), None, modules)
    for piece in parts.values():
        piece.fingerprint(handed.text if piece.kind is TEXT else handed.code)
    return {label: piece for label, piece in parts.items() if piece.tokens}


# --- the published sources ----------------------------------------------------------------


def _regions(source: str) -> tuple[str, set[int]]:
    """A solution cell without its markers, and the lines between them."""
    kept, inside, lines = [], False, set()
    for line in source.splitlines():
        marker = REGION.match(line)
        if marker:
            inside = marker.group(1) == "BEGIN"
            continue
        kept.append(line)
        if inside:
            lines.add(len(kept))
    return "\n".join(kept), lines


@cache
def solutions() -> dict[str, Piece]:
    """grade id -> the course's solution region of that exercise, from solutions/*.py."""
    import jupytext

    found = {}
    for path in sorted((ROOT / SOLUTIONS).glob("[0-9]*.py")):
        cells = jupytext.read(path).cells
        code = [parse_cell(c.source) for c in cells if c.cell_type == "code"]
        modules = imports(t for t in code if t is not None)
        label = f"the course's solution ({SOLUTIONS}/{path.name})"
        for cell in cells:
            meta = cell.metadata.get("nbgrader", {})
            if not meta.get("solution"):
                continue
            text, lines = _regions(cell.source)
            if cell.cell_type == "markdown":
                piece = text_piece(label, text, lines)
            else:
                piece = code_piece(label, text, lines, modules)
            found[meta["grade_id"]] = piece.fingerprint()
    return found


def _enclosing(tree: ast.Module) -> dict[int, str]:
    """line -> the qualified name of the def or class it lies in (innermost)."""
    where: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                for line in range(child.lineno, child.end_lineno + 1):
                    where[line] = name
                visit(child, name + ".")

    visit(tree, "")
    return where


@cache
def references() -> dict[str, Piece]:
    """The package's modules that hold answers to the exercises, whole."""
    found = {}
    for relative in REFERENCES:
        source = (ROOT / relative).read_text(encoding="utf-8")
        tree = ast.parse(source)
        piece = code_piece(f"the package's {relative}", source, None, imports([tree]))
        where = _enclosing(tree)
        piece.names = [where.get(line, "") for line in piece.lines]
        found[relative] = piece.fingerprint()
    return found


def published(part: str, kind: Kind) -> list[tuple[str, Piece]]:
    """(kind of source, piece) of each published source a part is compared with."""
    if part in solutions():
        sources = [("solution", solutions()[part])]
    else:  # the added cells, and the notebook: any exercise's solution
        sources = [("solution", p) for p in solutions().values() if p.kind is kind]
    if kind is CODE:
        sources += [("reference", p) for p in references().values()]
    return sources


# --- containment --------------------------------------------------------------------------


def _covered(piece: Piece, hashes: Iterable[int], weight) -> list[float]:
    """The weight of each token position that the fingerprints `hashes` cover (the heaviest
    fingerprint over it), 0 where none does."""
    covered = [0.0] * len(piece.tokens)
    k = piece.kind.k
    for h in hashes:
        w = weight(h)
        for start in piece.prints.get(h, ()):
            for p in range(start, min(start + k, len(covered))):
                if covered[p] < w:
                    covered[p] = w
    return covered


@dataclass
class Match:
    """How much of one student's part one source covers."""

    assignment: str
    part: str  # a grade id, ADDED, or NOTEBOOK (the code parts together)
    student: str
    source: str  # solution | reference | classmate
    name: str  # the classmate's id, or the source's label
    weight: float  # the covered tokens, each weighed by how rare its fingerprints are
    total: float  # all the student's fingerprinted tokens of the part, weighed alike
    tokens: int  # tokens covered
    kind: Kind = CODE
    shared: list[int] = field(default_factory=list)  # the fingerprints both hold
    detail: str = ""  # the reference's functions that match

    @property
    def share(self) -> float:
        return self.weight / self.total if self.total else 0.0

    @property
    def flagged(self) -> bool:
        return (
            self.share >= self.kind.threshold(self.source) and self.tokens >= self.kind.min_tokens
        )


def size(piece: Piece, weight, skip: frozenset[int] = frozenset()) -> float:
    """The weighed tokens of `piece` its fingerprints cover, those in `skip` left out."""
    return sum(_covered(piece, piece.prints.keys() - skip, weight))


def compare(piece: Piece, other: Piece, weight, total: float, skip=frozenset()) -> dict:
    """Match fields of `piece` found in `other`, the fingerprints in `skip` left out; `total`
    is size(piece, weight, skip)."""
    shared = [h for h in piece.prints if h in other.prints and h not in skip]
    covered = _covered(piece, shared, weight)
    return {
        "weight": sum(covered),
        "total": total,
        "tokens": sum(1 for w in covered if w),
        "kind": piece.kind,
        "shared": shared,
        "detail": ", ".join(_functions(other, shared)),
    }


def _functions(reference: Piece, shared: list[int]) -> list[str]:
    """The reference's functions that hold the match, most first; a run that also occurs
    elsewhere in the module (a shape line, a softmax) does not name another function."""
    if not reference.names:
        return []
    held = Counter(reference.names[p] for p in matched_at(reference, shared))
    held.pop("", None)
    return [n for n, count in held.most_common() if count >= max(held.values()) / 4]


def matched_at(piece: Piece, shared: list[int]) -> list[int]:
    """The token positions of `piece` that the fingerprints `shared` cover."""
    return [p for p, w in enumerate(_covered(piece, shared, _flat)) if w]


def matched_lines(piece: Piece, shared: list[int]) -> set[int]:
    return {piece.lines[p] for p in matched_at(piece, shared)}


def _flat(h: int) -> float:
    """Against a published source every fingerprint weighs the same: where much of the class
    copied the solution, its code is common because it was copied."""
    return 1.0


def _rarity(pieces: dict[str, Piece]):
    """A fingerprint's weight: 1, or less where more of the class holds it than COMMON says."""
    held: dict[int, int] = defaultdict(int)
    for piece in pieces.values():
        for h in piece.prints:
            held[h] += 1
    cap = max(COMMON_FLOOR, COMMON * len(pieces))
    return lambda h: min(1.0, cap / held[h]) if h in held else 1.0


def matches(assignment: str, part: str, pieces: dict[str, Piece]) -> tuple[list[Match], dict]:
    """Each student's part against its published sources and every classmate's same part;
    a classmate only on what the published sources do not explain. Also each student's
    (size, size of what the published sources do not explain), for the notebook's sums."""
    if not pieces:
        return [], {}
    kind = next(iter(pieces.values())).kind
    weight = _rarity(pieces)
    sources = published(part, kind)
    explained = frozenset(h for _, p in sources for h in p.prints)
    holders: dict[int, list[str]] = defaultdict(list)
    for student, piece in pieces.items():
        for h in piece.prints.keys() - explained:
            holders[h].append(student)
    found = []
    sizes = {s: (size(p, _flat), size(p, weight, explained)) for s, p in pieces.items()}
    for student, piece in pieces.items():  # a short part is compared for its notebook's sum
        whole, unexplained = sizes[student]
        for source, other in sources:
            match = compare(piece, other, _flat, whole)
            if match["tokens"]:
                found.append(Match(assignment, part, student, source, other.label, **match))
        near = {s for h in piece.prints.keys() - explained for s in holders[h]} - {student}
        for classmate in sorted(near):
            match = compare(piece, pieces[classmate], weight, unexplained, explained)
            found.append(Match(assignment, part, student, "classmate", classmate, **match))
    return found, sizes


def notebook_matches(found: list[Match], totals: dict) -> list[Match]:
    """Per student and source, the notebook's code parts together: a copy spread over several
    short exercises adds up. `totals[(assignment, student, source kind)]` is the weighed size
    of all the student's code in that notebook."""
    summed: dict[tuple, Match] = {}
    for m in found:
        if m.kind is not CODE or m.part == NOTEBOOK:
            continue
        key = (m.assignment, m.student, m.source, m.name)
        if key not in summed:
            total = totals[m.assignment, m.student, m.source == "classmate"]
            summed[key] = Match(m.assignment, NOTEBOOK, m.student, m.source, m.name, 0, total, 0)
        summed[key].weight += m.weight
        summed[key].tokens += m.tokens
    return list(summed.values())


# --- the class ----------------------------------------------------------------------------


def workshop(assignment: str) -> nbformat.NotebookNode | None:
    path = ROOT / WORKSHOP / f"{assignment}.ipynb"
    return nbformat.read(path, 4) if path.is_file() else None


def class_parts(notebooks: dict[tuple[str, str], nbformat.NotebookNode], releases: dict) -> dict:
    """assignment -> part -> student -> Piece, from (student, assignment) -> notebook."""
    handed = {a: given(releases[a], workshop(a)) for a in {a for _, a in notebooks}}
    parts: dict = defaultdict(lambda: defaultdict(dict))
    for (student, assignment), nb in sorted(notebooks.items()):
        for label, piece in own_parts(nb, handed[assignment]).items():
            parts[assignment][label][student] = piece
    return parts


def class_matches(parts: dict) -> list[Match]:
    """Every match of the class, part by part, then notebook by notebook."""
    found = []
    totals: dict[tuple, float] = defaultdict(float)
    for assignment, by_part in sorted(parts.items()):
        for part, pieces in sorted(by_part.items()):
            part_found, sizes = matches(assignment, part, pieces)
            found += part_found
            if pieces and next(iter(pieces.values())).kind is CODE:
                for student, (whole, unexplained) in sizes.items():
                    totals[assignment, student, False] += whole
                    totals[assignment, student, True] += unexplained
    return found + notebook_matches(found, totals)


def flagged(found: list[Match]) -> list[Match]:
    """The matches to show: per part, the closest published source that is flagged (the
    course's solution of Challenge A is itself close to the package's layer) and every flagged
    classmate; then a notebook's parts together, where no part alone says it."""
    best: dict[tuple, Match] = {}
    for m in found:
        key = (m.assignment, m.student, m.part, m.source in PUBLISHED or m.name)
        if m.flagged and (key not in best or m.share > best[key].share):
            best[key] = m
    parts = [m for m in best.values() if m.part != NOTEBOOK]
    seen = {(m.assignment, m.student, m.source in PUBLISHED or m.name) for m in parts}
    notebooks = [
        m
        for m in best.values()
        if m.part == NOTEBOOK
        and (m.assignment, m.student, m.source in PUBLISHED or m.name) not in seen
    ]
    return sorted(parts + notebooks, key=lambda m: (m.assignment, m.student, -m.share, m.part))


def describe(m: Match) -> str:
    """The source as the instructor reads it."""
    if m.source == "classmate":
        return f"classmate {m.name}'s"
    return m.name + (f" ({m.detail})" if m.detail else "")


def flag(m: Match) -> str:
    what = "written answer" if m.kind is TEXT else "own code"
    unit = "words" if m.kind is TEXT else "tokens"
    return (
        f"{FLAG}{m.part} matches {describe(m)}: {m.share:.0%} of the student's {what} "
        f"({m.tokens} {unit})"
    )


FLAGGED = re.compile(rf"^{FLAG}(?P<part>.+?) matches (?P<source>.+?): (?P<share>\d+%) of ")


def review_cell(assignment: str, flags: list[str]) -> str:
    """One notebook's entry in the report's review column: each copy's part, share and source
    (`01_attention: ex1_attention 100% the course's solution (...)`), then how many other
    flags the notes below the table quote."""
    found = [m for m in map(FLAGGED.match, flags) if m]
    said = [f"{m['part']} {m['share']} {m['source']}" for m in found]
    others = len(flags) - len(found)
    said += [f"{others} other{'s' * (others > 1)}"] if others else []
    return f"{assignment}: " + "; ".join(said)


def read_notebooks(course: Path, keys: Iterable[tuple[str, str]]) -> dict:
    """(student, assignment) -> the notebook as graded (autograded/), where it can be read.
    Not validated again: autograde wrote it, and nbformat's schema check is most of the time
    a read takes."""
    found = {}
    for student, assignment in keys:
        path = Path(course) / "autograded" / student / assignment / f"{assignment}.ipynb"
        try:
            found[student, assignment] = nbformat.v4.reads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not graded (quarantined, failed): nothing of it ran
    return found


def class_report_matches(course: Path, keys: Iterable[tuple[str, str]]) -> list[Match]:
    notebooks = read_notebooks(course, keys)
    releases = {a: release_notebook(course, a) for a in {a for _, a in notebooks}}
    return class_matches(class_parts(notebooks, releases))


def with_copies(course: Path, outcomes: list) -> list:
    """The outcomes, each with its copy flags (replacing those of an earlier run): the whole
    class is compared, so a run limited to some students still flags their classmates."""
    keys = [(o.student, o.assignment) for o in outcomes if o.status in ("graded", "unchanged")]
    by: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in flagged(class_report_matches(course, keys)):
        by[m.student, m.assignment].append(flag(m))
    for o in outcomes:
        o.flags = [f for f in o.flags if not f.startswith(FLAG)] + by[o.student, o.assignment]
    return outcomes


# --- the instructor's view ----------------------------------------------------------------

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; width: 100%; table-layout: fixed; }}
td, th {{ vertical-align: top; border: 1px solid #ccc; padding: 0.4em; text-align: left; }}
pre {{ margin: 0; font-size: 12px; white-space: pre-wrap; }}
.hit {{ background: #ffe08a; display: block; }}
</style></head><body>
<h1>{title}</h1>
<p>{summary}</p>
<p>Highlighted: the lines whose normalised code (names, layout, comments and order of
statements set aside) the two sides share. A flag never changes a score.</p>
{sections}
</body></html>
"""


def _highlighted(text: str, lines: set[int]) -> str:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        escaped = html.escape(line) or " "
        out.append(f'<span class="hit">{escaped}</span>' if number in lines else escaped + "\n")
    return "<pre>" + "".join(out) + "</pre>"


def _source_piece(m: Match, parts: dict) -> Piece | None:
    if m.source == "classmate":
        return parts[m.assignment][m.part].get(m.name)
    return next((p for _, p in published(m.part, m.kind) if p.label == m.name), None)


def _page_name(m: Match) -> str:
    other = m.name if m.source == "classmate" else m.source
    a, b = sorted([m.student, other]) if m.source == "classmate" else (m.student, other)
    return re.sub(r"[^\w.-]", "_", f"{m.assignment}--{a}--{b}") + ".html"


def _page(m: Match, found: list[Match], parts: dict) -> str:
    """Both sides of every part the pair shares, each with its matching lines highlighted."""
    pair = {(m.student, m.name)}
    if m.source == "classmate":
        pair.add((m.name, m.student))
    sections = []
    for x in found:
        if x.assignment != m.assignment or (x.student, x.name) not in pair or x.part == NOTEBOOK:
            continue
        if x.source == "classmate" and x.student != m.student:
            continue  # the other direction of a classmate pair: same lines, shown once
        theirs = _source_piece(x, parts)
        if theirs is None:
            continue
        mine = parts[x.assignment][x.part][x.student]
        sections.append(
            f"<h2>{html.escape(x.part)}: {x.share:.0%} of {html.escape(x.student)}'s "
            f"({x.tokens} tokens) is in {html.escape(describe(x))}</h2>"
            f"<table><tr><th>{html.escape(x.student)}</th><th>{html.escape(x.name)}</th></tr>"
            f"<tr><td>{_highlighted(mine.text, matched_lines(mine, x.shared))}</td>"
            f"<td>{_highlighted(theirs.text, matched_lines(theirs, x.shared))}</td></tr></table>"
        )
    title = f"{m.assignment}: {m.student} and {m.name}"
    return PAGE.format(
        title=html.escape(title), summary=html.escape(flag(m)), sections="\n".join(sections)
    )


def pairs_report(course: Path) -> list[Path]:
    """reports/copies.md, the flagged pairs ranked by share, and reports/copies/*.html, one
    page per pair with the matching parts side by side. These name students: for the
    instructor, not for the class."""
    course = Path(course)
    keys = sorted(
        (p.parent.parent.name, p.parent.name) for p in course.glob("autograded/*/*/*.ipynb")
    )
    notebooks = read_notebooks(course, keys)
    releases = {a: release_notebook(course, a) for a in {a for _, a in notebooks}}
    parts = class_parts(notebooks, releases)
    found = class_matches(parts)
    shown = sorted(flagged(found), key=lambda m: (-m.share, -m.tokens, m.assignment, m.student))
    folder = course / "reports"
    pages = folder / "copies"
    pages.mkdir(parents=True, exist_ok=True)
    for old in pages.glob("*.html"):
        old.unlink()  # a pair no longer flagged keeps no page
    lines = [
        "# Copies",
        "",
        f"Each student's own code, per exercise and per notebook, against the course's "
        f"solutions, the package's references and every classmate (grader/term/copies.py): the "
        f"share of the student's code found in the source, flagged from {CODE.published:.0%} of a "
        f"published source, {CODE.classmate:.0%} of a classmate's (code the class shares weighs "
        f"less) and {CODE.min_tokens} tokens ({TEXT.min_tokens} words for a written answer, "
        f"{TEXT.published:.0%}). Most shared "
        "first. A flag never changes a score: open the page and decide.",
        "",
        "| rank | notebook | part | student | found in | share | tokens | side by side |",
        "|---:|---|---|---|---|---:|---:|---|",
    ]
    written = set()
    for rank, m in enumerate(shown, start=1):
        name = _page_name(m)
        if name not in written:
            (pages / name).write_text(_page(m, found, parts), encoding="utf-8")
            written.add(name)
        lines.append(
            f"| {rank} | {m.assignment} | {m.part} | {m.student} | {describe(m)} | "
            f"{m.share:.0%} | {m.tokens} | [page](copies/{name}) |"
        )
    if not shown:
        lines.append("| – | – | – | – | nothing flagged | – | – | – |")
    (folder / "copies.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [folder / "copies.md", *sorted(pages / name for name in written)]
