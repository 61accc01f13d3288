"""Preflight: check a submitted notebook against its release and repair what can be repaired.

A notebook downloaded from Colab is often not the file nbgrader expects: nbformat 4.0 without
cell ids, nbgrader metadata stripped, a graded cell duplicated, deleted, edited or turned into
markdown. nbgrader then grades it 0 without saying why, or aborts the batch. Preflight matches
every graded cell of the release to one cell of the submission, first by grade id, then by its
place between the unchanged cells around it and by content, and puts the release's metadata
back. What cannot be matched is restored from the release (a missing check runs again; a
missing exercise is graded as not done). A file that is not a notebook, or not this notebook,
is quarantined with the reason.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass, field

import nbformat

# nbclient skips cells carrying this tag; a graded cell must always run.
SKIP_TAGS = {"skip-execution", "skip_execution", "skip"}
# Below this share of the release's cells found, the file is some other notebook.
MIN_SHARE_OF_RELEASE = 0.3
DEF_LINE = re.compile(r"^\s*(def|class)\s+(\w+)", re.MULTILINE)


@dataclass
class Preflight:
    """What preflight made of one file: a notebook to grade, or a reason it cannot be graded."""

    notebook: nbformat.NotebookNode | None
    repairs: list[str] = field(default_factory=list)
    quarantined: str | None = None


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _text(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def normal_source(cell) -> str:
    return "\n".join(line.rstrip() for line in _text(cell).strip().splitlines())


def _similarity(a, b) -> float:
    return difflib.SequenceMatcher(None, normal_source(a), normal_source(b), autojunk=False).ratio()


def _defines_same(release_cell, cell) -> bool:
    names = {m.group(2) for m in DEF_LINE.finditer(_text(release_cell))}
    return bool(names) and names <= {m.group(2) for m in DEF_LINE.finditer(_text(cell))}


def read_notebook(raw: bytes) -> tuple[nbformat.NotebookNode | None, str | None]:
    """Parse a submission at nbformat 4.5 (cell ids added); or None and the reason it can't be."""
    if not raw.strip():
        return None, f"the file is empty ({len(raw)} bytes) [empty]"
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None, "not a text file (it is not UTF-8)"
    except json.JSONDecodeError as err:
        return None, f"not valid notebook JSON ({err.msg} at line {err.lineno}, column {err.colno})"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None, "not a Jupyter notebook (no list of cells)"
    if data.get("nbformat") != 4:
        return None, f"notebook format {data.get('nbformat')!r}; only version 4 is graded"
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
    except Exception as err:  # nbformat raises a variety of errors on malformed cells
        return None, f"not a readable notebook ({type(err).__name__}: {err})"
    nb.nbformat_minor = max(nb.nbformat_minor, 5)
    seen = set()
    for i, cell in enumerate(nb.cells):
        if not cell.get("id") or cell.id in seen or not re.fullmatch(r"[\w-]{1,64}", cell.id):
            cell.id = f"cell-{i:03d}"
        seen.add(cell.id)
        cell.setdefault("metadata", {})
    return nb, None


def _set_type(cell, cell_type: str) -> None:
    cell.cell_type = cell_type
    if cell_type == "code":
        cell.setdefault("outputs", [])
        cell.setdefault("execution_count", None)
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def _blank_like(release_cell):
    cell = copy.deepcopy(release_cell)
    if cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None
    return cell


def _pair_in_gap(release, gap_release: list[int], gap_sub: list[int], sub, claimed) -> dict:
    """Release graded cells in a gap of the alignment -> submission cells in the same gap."""
    free = [j for j in gap_sub if j not in claimed and not _grade_id(sub[j])]
    pairs = {}
    if len(gap_release) == len(gap_sub) and all(j in free for j in gap_sub):
        # Same shape as the release: the k-th cell is the k-th cell, whatever was typed in it.
        for i, j in zip(gap_release, gap_sub, strict=True):
            if _grade_id(release[i]):
                pairs[i] = j
        return pairs
    for i in gap_release:
        if not _grade_id(release[i]):
            continue
        best, score = None, 0.0
        for j in free:
            if j in pairs.values():
                continue
            s = 1.0 if _defines_same(release[i], sub[j]) else _similarity(release[i], sub[j])
            if s > score:
                best, score = j, s
        if best is not None and score >= 0.5:
            pairs[i] = best
    return pairs


def preflight(raw: bytes, release_nb: nbformat.NotebookNode) -> Preflight:
    """Check and repair one submitted file against the release notebook of its assignment."""
    nb, problem = read_notebook(raw)
    if nb is None:
        return Preflight(None, quarantined=problem)
    release, sub, repairs = release_nb.cells, nb.cells, []
    graded = {_grade_id(c): i for i, c in enumerate(release) if _grade_id(c)}
    by_id = _match_by_grade_id(sub, graded, repairs)
    matcher = difflib.SequenceMatcher(
        None, [normal_source(c) for c in release], [normal_source(c) for c in sub], autojunk=False
    )
    anchors = {}  # release cell -> submission cell, where the two are unchanged
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            anchors.update(zip(range(i1, i2), range(j1, j2), strict=True))
    found = len(anchors) + len(by_id)
    if found < MIN_SHARE_OF_RELEASE * len(release):
        return Preflight(
            None,
            quarantined=f"does not look like this notebook: only {found} of the release's "
            f"{len(release)} cells were found in it",
        )
    matched = _match_by_place(release, sub, matcher, anchors, by_id)
    restored = _put_release_metadata_back(release, sub, graded, matched, repairs)
    _insert_restored(release, sub, restored, {**anchors, **matched})
    ids = set()
    for j, cell in enumerate(sub):  # restored cells carry the release's ids
        if cell.id in ids:
            cell.id = f"cell-r{j:03d}"
        ids.add(cell.id)
    nbformat.validate(nb)
    return Preflight(nb, repairs)


def _match_by_grade_id(sub, graded: dict[str, int], repairs: list[str]) -> dict[int, int]:
    """Release cell -> submission cell by grade id. The first cell carrying an id keeps it;
    copies and unknown ids lose their grading metadata."""
    by_id: dict[int, int] = {}
    for j, cell in enumerate(sub):
        grade_id = _grade_id(cell)
        if grade_id is None:
            cell.metadata.pop("nbgrader", None)
            continue
        if grade_id not in graded:
            repairs.append(f"cell {j + 1}: unknown grade id {grade_id!r}, grading metadata removed")
        elif graded[grade_id] in by_id:
            repairs.append(f"cell {j + 1}: duplicate of graded cell {grade_id!r}, not graded twice")
        else:
            by_id[graded[grade_id]] = j
            continue
        del cell.metadata["nbgrader"]
    return by_id


def _match_by_place(release, sub, matcher, anchors: dict, by_id: dict) -> dict[int, int]:
    """by_id, completed by place and content: a graded cell that lost its id is the unchanged
    cell aligned with it, or the cell that best matches it in the same gap of the alignment."""
    matched = dict(by_id)
    claimed = set(matched.values())
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        gap_release = [i for i in range(i1, i2) if i not in matched]
        if tag == "equal":
            for i in gap_release:
                if _grade_id(release[i]) and not _grade_id(sub[anchors[i]]):
                    matched[i] = anchors[i]
            continue
        pairs = _pair_in_gap(release, gap_release, list(range(j1, j2)), sub, claimed)
        matched.update(pairs)
        claimed.update(pairs.values())
    return matched


def _put_release_metadata_back(release, sub, graded, matched, repairs) -> list[int]:
    """The release's grading metadata and cell type on every matched cell, skip tags removed;
    returns the graded release cells that found no match, to be restored."""
    restored = []
    for grade_id, i in graded.items():
        want = release[i]
        if i not in matched:
            restored.append(i)
            what = "check" if want.metadata.nbgrader.get("grade") else "exercise cell (as a stub)"
            repairs.append(f"{grade_id}: {what} missing, restored from the release")
            continue
        cell = sub[matched[i]]
        if "nbgrader" not in cell.metadata:
            repairs.append(f"{grade_id}: grading metadata restored (cell {matched[i] + 1})")
        if _edited_check(want, cell):
            repairs.append(f"{grade_id}: check edited, restored from the release")
        cell.metadata["nbgrader"] = copy.deepcopy(want.metadata.nbgrader)
        if cell.cell_type != want.cell_type:
            repairs.append(f"{grade_id}: was a {cell.cell_type} cell, restored to {want.cell_type}")
            _set_type(cell, want.cell_type)
        tags = [t for t in cell.metadata.get("tags", []) if t not in SKIP_TAGS]
        if tags != cell.metadata.get("tags", tags):
            repairs.append(f"{grade_id}: tag that would skip it removed")
            cell.metadata["tags"] = tags
    return restored


def _edited_check(want, cell) -> bool:
    """Whether a check cell holds other code than the release's, which nbgrader's sanitizing
    puts back in its place (OverwriteCells). A check as another release handed it out (before an
    errata, say) is not the student's edit: its own nbgrader checksum still vouches for it. A
    cell of another type is said by its type's repair."""
    meta = want.metadata.nbgrader
    if not meta.get("grade") or meta.get("solution") or cell.cell_type != want.cell_type:
        return False
    if normal_source(cell) == normal_source(want):
        return False
    stamped = cell.metadata.get("nbgrader", {}).get("checksum")
    return not stamped or stamped != _checksum(cell)


def _checksum(cell) -> str | None:
    """nbgrader's checksum of a cell as its own metadata labels it; None where it cannot say."""
    from nbgrader.utils import compute_checksum

    try:
        return compute_checksum(cell)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _insert_restored(release, sub, restored: list[int], position: dict[int, int]) -> None:
    """Missing cells go back after the submission cell that matches the release cell before
    them. `position`: release cell -> submission cell, kept up to date as cells go in."""
    for i in sorted(restored, reverse=True):
        before = [position[k] for k in range(i) if k in position]
        at = (max(before) + 1) if before else len(sub)
        sub.insert(at, _blank_like(release[i]))
        for k, j in position.items():
            if j >= at:
                position[k] = j + 1
        position[i] = at
