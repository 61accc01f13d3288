"""Both sides of a match, as MOSS and JPlag report one, and the class compared part by part,
then notebook by notebook."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import nbformat

from ...course import ROOT
from .fingerprints import Passage
from .kinds import CODE, COMMON, COMMON_FLOOR, NOTEBOOK, PUBLISHED, Kind
from .own_code import given, own_parts
from .sources import published
from .tokens import Span

WORKSHOP = "notebooks"


def _covered(piece: Passage, hashes: Iterable[int], weight) -> list[float]:
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


def longest_run(piece: Passage, other: Passage, shared: Iterable[int], covered: list[float]) -> int:
    """The longest run of own tokens the two hold alike, grown from each shared fingerprint
    both ways (each run once: a seed inside a run already grown on its diagonal is skipped),
    counted on the tokens the fingerprints cover: never more than the match's tokens."""
    a, b = piece.tokens, other.tokens
    grown: dict[int, list[Span]] = defaultdict(list)
    best = 0
    for h in shared:
        for p in piece.prints.get(h, ()):
            for q in other.prints.get(h, ()):
                if any(s <= p < e for s, e in grown[q - p]):
                    continue
                s = p
                while s > 0 and q - p + s > 0 and _alike(piece, other, s - 1, q - p + s - 1):
                    s -= 1
                e = p
                while e < len(a) and q - p + e < len(b) and _alike(piece, other, e, q - p + e):
                    e += 1
                grown[q - p].append((s, e))
                best = max(best, sum(1 for w in covered[s:e] if w))
    return best


def _alike(piece: Passage, other: Passage, i: int, j: int) -> bool:
    return piece.mine[i] and other.mine[j] and piece.tokens[i] == other.tokens[j]


@dataclass
class Match:
    """How much of one student's part one source covers, and how much of the source it holds."""

    assignment: str
    part: str  # a grade id, ADDED, or NOTEBOOK (the code parts together)
    student: str
    source: str  # solution | reference | classmate
    name: str  # the classmate's id, or the source's label
    weight: float  # the covered tokens, each weighed by how rare its fingerprints are
    total: float  # all the student's fingerprinted tokens of the part, weighed alike
    tokens: int  # tokens covered
    held: float = 0.0  # the source's tokens the student's code holds, weighed alike
    held_total: float = 0.0  # all the source's fingerprinted own tokens, weighed alike
    longest: int = 0  # the longest run of tokens both hold (0 where too few are alike to flag)
    kind: Kind = CODE
    shared: list[int] = field(default_factory=list)  # the fingerprints both hold

    @property
    def share(self) -> float:
        return self.weight / self.total if self.total else 0.0

    @property
    def held_share(self) -> float:
        return self.held / self.held_total if self.held_total else 0.0

    @property
    def strength(self) -> float:
        """The larger side: what ranks a match among others."""
        return max(self.share, self.held_share)

    @property
    def flagged(self) -> bool:
        """Enough shared, in a long enough run, and enough of either side. A notebook's sum is
        judged on the student's side only: its sources are several exercises' solutions, and
        short honest answers hold all of a short solution."""
        bar = self.kind.bar(self.source)
        if self.tokens < bar.tokens or self.longest < bar.run:
            return False
        held = self.part != NOTEBOOK and self.held_share >= bar.held
        return self.share >= bar.mine or held or self.longest >= bar.alone


def size(piece: Passage, weight, skip: frozenset[int] = frozenset()) -> float:
    """The weighed tokens of `piece` its fingerprints cover, those in `skip` left out."""
    return sum(_covered(piece, piece.prints.keys() - skip, weight))


def compare(
    piece: Passage, other: Passage, weight, total: float, other_total: float, skip=frozenset()
) -> dict:
    """Match fields of `piece` found in `other`, the fingerprints in `skip` left out; `total`
    and `other_total` are size(piece, weight, skip) and size(other, weight, skip)."""
    shared = [h for h in piece.prints if h in other.prints and h not in skip]
    covered = _covered(piece, shared, weight)
    tokens = sum(1 for w in covered if w)
    # The run is sought only where enough is alike to be flagged: most pairs of a class are not.
    enough = tokens >= min(piece.kind.published.tokens, piece.kind.classmate.tokens)
    return {
        "weight": sum(covered),
        "total": total,
        "tokens": tokens,
        "held": sum(_covered(other, shared, weight)),
        "held_total": other_total,
        "longest": longest_run(piece, other, shared, covered) if enough else 0,
        "kind": piece.kind,
        "shared": shared,
    }


def matched_at(piece: Passage, shared: list[int]) -> list[int]:
    """The token positions of `piece` that the fingerprints `shared` cover."""
    return [p for p, w in enumerate(_covered(piece, shared, _flat)) if w]


def matched_lines(piece: Passage, shared: list[int]) -> set[int]:
    return {piece.lines[p] for p in matched_at(piece, shared)}


def _flat(h: int) -> float:
    """Against a published source every fingerprint weighs the same: where much of the class
    copied the solution, its code is common because it was copied."""
    return 1.0


def _rarity(pieces: dict[str, Passage]):
    """A fingerprint's weight: 1, or less where more of the class holds it than COMMON says."""
    held: dict[int, int] = defaultdict(int)
    for piece in pieces.values():
        for h in piece.prints:
            held[h] += 1
    cap = max(COMMON_FLOOR, COMMON * len(pieces))
    return lambda h: min(1.0, cap / held[h]) if h in held else 1.0


def matches(assignment: str, part: str, pieces: dict[str, Passage]) -> tuple[list[Match], dict]:
    """Each student's part against its published sources and every classmate's same part;
    a classmate only on what the published sources do not explain. Also each student's
    (size, size of what the published sources do not explain), for the notebook's sums."""
    if not pieces:
        return [], {}
    kind = next(iter(pieces.values())).kind
    weight = _rarity(pieces)
    sources = [(s, p, size(p, _flat)) for s, p in published(part, kind)]
    explained = frozenset(h for _, p, _ in sources for h in p.prints)
    holders: dict[int, list[str]] = defaultdict(list)
    for student, piece in pieces.items():
        for h in piece.prints.keys() - explained:
            holders[h].append(student)
    found = []
    sizes = {s: (size(p, _flat), size(p, weight, explained)) for s, p in pieces.items()}
    for student, piece in pieces.items():  # a short part is compared for its notebook's sum
        whole, unexplained = sizes[student]
        for source, other, other_size in sources:
            if piece.prints.keys() & other.prints.keys():
                match = compare(piece, other, _flat, whole, other_size)
                found.append(Match(assignment, part, student, source, other.label, **match))
        near = {s for h in piece.prints.keys() - explained for s in holders[h]} - {student}
        for classmate in sorted(near):
            theirs = sizes[classmate][1]
            match = compare(piece, pieces[classmate], weight, unexplained, theirs, explained)
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
        summed[key].held += m.held
        summed[key].held_total += m.held_total
        summed[key].longest = max(summed[key].longest, m.longest)
    return list(summed.values())


def workshop(assignment: str) -> nbformat.NotebookNode | None:
    path = ROOT / WORKSHOP / f"{assignment}.ipynb"
    return nbformat.read(path, 4) if path.is_file() else None


def class_parts(notebooks: dict[tuple[str, str], nbformat.NotebookNode], releases: dict) -> dict:
    """assignment -> part -> student -> Passage, from (student, assignment) -> notebook."""
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
        if m.flagged and (key not in best or m.strength > best[key].strength):
            best[key] = m
    parts = [m for m in best.values() if m.part != NOTEBOOK]
    seen = {(m.assignment, m.student, m.source in PUBLISHED or m.name) for m in parts}
    notebooks = [
        m
        for m in best.values()
        if m.part == NOTEBOOK
        and (m.assignment, m.student, m.source in PUBLISHED or m.name) not in seen
    ]
    return sorted(parts + notebooks, key=lambda m: (m.assignment, m.student, -m.strength, m.part))
