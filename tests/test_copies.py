"""Copies across the class (grader/term/copies/): winnowed fingerprints of each student's own
code, what the course hands out (the release, its hints' code, the lecture's listings) set aside,
measured from both sides (the student's, the source's) with the longest shared run, against the
course's solutions, the package's references and every classmate.

Each test builds notebooks from the release (maintainer/copy_corpus.py fills an exercise's stub
with a body) and calls the module's functions directly; no notebook is executed.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import re
import textwrap

import nbformat
import pytest
from paths import SHARED

from grader.outcome import COPY, REVIEW, Flag, Outcome
from grader.term import copies
from grader.term.copies.lecture_listings import LISTINGS
from grader.term.course_open import Course
from maintainer import copy_corpus as corpus
from maintainer.fabricated_class import release

LOOP_OVER_HEADS = """
B, T, d_model = H.shape
outs, weights = [], []
mask = tl.causal_mask(T, device=H.device)
for head in range(self.n_heads):
    part = slice(head * self.d_k, (head + 1) * self.d_k)
    q, k, v = self.W_Q(H)[..., part], self.W_K(H)[..., part], self.W_V(H)[..., part]
    o, a = tl.scaled_dot_product_attention(q, k, v, mask)
    outs.append(o)
    weights.append(a)
return self.drop(self.proj(torch.cat(outs, dim=-1))), torch.stack(weights, dim=1)
"""


MODULES = {"F": "torch.nn.functional", "torch": "torch", "math": "math"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    folder = tmp_path_factory.mktemp("copies") / "course"
    release(folder)
    return folder


def _release(course, assignment):
    return nbformat.read(course / "release" / assignment / f"{assignment}.ipynb", 4)


def _class(course, grade_id, bodies: dict[str, str]) -> list[copies.Match]:
    assignment = corpus.NOTEBOOK_OF[grade_id]
    given = _release(course, assignment)
    notebooks = {(s, assignment): corpus.fill(given, grade_id, b) for s, b in bodies.items()}
    return copies.class_matches(copies.class_parts(notebooks, {assignment: given}))


def _flags(found, student):
    """The student's copy flags as the report quotes them."""
    return [copies.flag(m).text() for m in copies.flagged(found) if m.student == student]


# What the instructor reads of a match: both shares and the longest run.
FLAG_TEXT = re.compile(
    r"copy: (?P<part>\S+) matches (?P<source>.+): (?P<mine>\d+)% of the student's own code, "
    r"(?P<held>\d+)% of (?P<whose>.+)'s \((?P<tokens>\d+) tokens alike, longest run "
    r"(?P<run>\d+)\)"
)


# --- winnowing ----------------------------------------------------------------------------


def test_winnowing_keeps_a_fingerprint_in_every_window_and_finds_every_long_match():
    rng = random.Random(0)
    for _ in range(200):
        hashes = [rng.randrange(50) for _ in range(rng.randrange(1, 60))]
        chosen = copies.winnow(hashes, 4)
        assert chosen == sorted(set(chosen))
        for start in range(len(hashes) - 3):
            assert any(start <= at < start + 4 for at in chosen)
    shared = [f"t{i}" for i in range(copies.CODE.k + copies.CODE.window - 1)]
    left = [f"a{i}" for i in range(30)] + shared + [f"b{i}" for i in range(5)]
    right = [f"c{i}" for i in range(7)] + shared
    common = copies.fingerprints(left, copies.CODE).keys() & copies.fingerprints(right, copies.CODE)
    assert common  # any run of k + window - 1 shared tokens gives a common fingerprint


def test_tokens_forget_names_layout_comments_and_strings_but_keep_the_api():
    def tokens(source):
        tree = copies.parse_cell(source)
        return copies.code_tokens(tree, MODULES)[0]

    one = tokens('scores = F.softmax(x, dim=-1)  # why\nraise ValueError("no")')
    other = tokens("w = torch.nn.functional.softmax(\n    y, dim=-1\n)\nraise ValueError('other')")
    assert one[:3] == ["Assign", "Name", "<name>"]
    assert "torch.nn.functional.softmax" in one and "dim" in one and "<str>" in one
    assert tokens("a = math.exp(b)") != tokens("a = torch.exp(b)")  # the API is kept
    assert one[:-2] == other[:-2]  # F and torch.nn.functional both name the module
    assert tokens("x = F.relu(y)") == tokens("z = F.relu(w)")


# --- the student's own code ---------------------------------------------------------------


def test_the_stub_and_the_given_lines_are_not_the_students(course):
    given = copies.given(_release(course, "01_attention"), None)
    untouched = copies.own_parts(_release(course, "01_attention"), given)
    assert untouched == {}  # the release alone: nothing of it is anyone's own code
    filled = corpus.fill(_release(course, "01_attention"), "ex1_attention", "return V, V")
    parts = copies.own_parts(filled, given)
    assert list(parts) == ["ex1_attention"]
    piece = parts["ex1_attention"]
    assert any(piece.mine) and {n for n, m in zip(piece.lines, piece.mine, strict=True) if m} == {
        n
        for n, line in enumerate(
            filled.cells[_index(filled, "ex1_attention")].source.splitlines(), 1
        )
        if line.strip() == "return V, V"
    }


def _index(nb, grade_id):
    return next(
        i
        for i, c in enumerate(nb.cells)
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    )


# --- the three sources --------------------------------------------------------------------


@pytest.mark.parametrize("transform", corpus.TRANSFORMS)
def test_a_copy_of_the_course_solution_is_flagged_naming_it(course, transform):
    body = corpus.TRANSFORMS[transform](corpus.solution_body(course, "ex6a_multi_head"))
    found = _class(course, "ex6a_multi_head", {"copier": body})
    flags = _flags(found, "copier")
    assert len(flags) == 1, flags
    (match,) = [m for m in copies.flagged(found)]
    assert (match.part, match.source) == ("ex6a_multi_head", "solution")
    assert match.name.endswith("(solutions/06_stretch.py)")
    shown = FLAG_TEXT.fullmatch(flags[0])
    assert (shown["part"], shown["source"]) == (match.part, match.name)
    assert shown["whose"] == "the solution" and int(shown["held"]) >= 88, flags[0]
    assert (shown["mine"], shown["tokens"], shown["run"]) == (
        f"{match.share * 100:.0f}",
        str(match.tokens),
        str(match.longest),
    )


@pytest.mark.parametrize("transform", ["verbatim", "renamed, inlined"])
def test_a_paste_of_the_reference_is_flagged_on_what_the_lecture_does_not_hand_out(
    course, transform
):
    """Exercise 1: the reference without its argument checks, as pasted, and with its names
    changed and `d_k` inlined. The lecture's Module 3 listing hands out much of it (the
    softmax, the `empty_row` error): what is left, the empty-row handling, is all the
    reference's and all in the paste."""
    body = corpus.TRANSFORMS[transform](corpus.reference_body("ex1_attention"))
    if transform != "verbatim":
        assert "d_k" not in body and "math.sqrt(Q.shape[-1])" in body
    found = _class(course, "ex1_attention", {"paster": body})
    ((flag,), (match,)) = _flags(found, "paster"), copies.flagged(found)
    shown = FLAG_TEXT.fullmatch(flag)
    assert (match.source, shown["source"]) == ("reference", match.name)
    assert match.name.endswith("transformer_lab/attention.py (scaled_dot_product_attention)")
    assert shown["held"] == "100" and int(shown["mine"]) < 80 and int(shown["run"]) >= 16, flag


def test_two_students_with_the_same_unusual_loop_are_linked_both_ways(course):
    renamed = LOOP_OVER_HEADS.replace("outs", "pieces").replace("weights", "maps")
    found = _class(course, "ex6a_multi_head", {"ann": LOOP_OVER_HEADS, "ben": renamed})
    assert any("matches classmate ben's" in f for f in _flags(found, "ann"))
    assert any("matches classmate ann's" in f for f in _flags(found, "ben"))


def test_two_copies_of_the_solution_are_named_against_it_not_each_other(course):
    body = corpus.solution_body(course, "ex5_mean_distance")
    found = _class(course, "ex5_mean_distance", {"ann": body, "ben": corpus.renamed(body)})
    for student in ("ann", "ben"):
        flags = _flags(found, student)
        assert len(flags) == 1 and "the course's solution" in flags[0], flags


# Copies rewritten by hand, in a cell the student added: other names, other layout, other
# messages, no docstring or annotations.
HAND_RENAMED_ATTENTION = """
def scaled_dot_product_attention(q, k, v, mask=None, *, on_empty="error"):
    tl.attention._check_inputs(q, k, v, mask, on_empty)
    width = q.shape[-1]
    logits = (q @ k.transpose(-2, -1)) / math.sqrt(width)
    if mask is None:
        weights = torch.softmax(logits, dim=-1)
        return (weights @ v, weights)
    mask = mask.to(logits.device).broadcast_to(logits.shape)
    nothing = ~mask.any(dim=-1, keepdim=True)
    if on_empty == 'error' and nothing.any():
        raise ValueError('this row reads nothing')
    logits = (logits.masked_fill(~mask, float('-inf'))
                    .masked_fill(nothing, 0.0))
    weights = torch.softmax(logits, dim=-1).masked_fill(nothing, 0.0)
    return (weights @ v, weights)
"""
HAND_RENAMED_POSITIONS = """
def embed_with_positions(tokens, token_table, position_table, start=0):
    n = tokens.shape[-1]
    if start + n > position_table.num_embeddings:
        raise ValueError(f"{n} tokens from {start} do not fit in the position table")
    where = torch.arange(start, start + n, device=tokens.device)
    return token_table(tokens) + position_table(where)
"""
HAND_RENAMED_HEADS = """
class MyMultiHeadAttention(nn.Module):
    def forward(self, x, *, cache=None, need_weights=False):
        b, t, width = x.shape
        def heads(y):
            return y.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = heads(self.W_Q(x)), heads(self.W_K(x)), heads(self.W_V(x))
        start = 0
        if cache is not None:
            start = cache.length
            k, v = cache.extend(k, v)
        if self.attention is None and not need_weights:
            if start == 0:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                keep = tl.causal_mask(t, k.shape[-2], start, device=x.device)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            w = None
        else:
            fn = self.attention or tl.scaled_dot_product_attention
            keep = tl.causal_mask(t, k.shape[-2], start, device=x.device)
            out, w = fn(q, k, v, keep)
        out = out.transpose(1, 2).reshape(b, t, width)
        return self.drop(self.proj(out)), w
"""


@pytest.mark.parametrize(
    ("source", "reference"),
    [
        (HAND_RENAMED_ATTENTION, "attention.py (scaled_dot_product_attention"),
        (HAND_RENAMED_POSITIONS, "model.py (embed_with_positions"),
        ("%load_ext autoreload\n!nvidia-smi\n" + HAND_RENAMED_POSITIONS, "model.py (embed_"),
    ],
    ids=["attention", "positions", "behind magics"],
)
def test_a_copy_rewritten_by_hand_in_an_added_cell_is_flagged(course, source, reference):
    given = _release(course, "01_attention")
    nb = copy.deepcopy(given)
    nb.cells.append(nbformat.v4.new_code_cell(source))
    parts = copies.class_parts({("ann", "01_attention"): nb}, {"01_attention": given})
    found = copies.flagged(copies.class_matches(parts))
    assert len(found) == 1, [copies.flag(m).text() for m in found]
    assert (found[0].part, found[0].source) == (copies.ADDED, "reference")
    assert f"transformer_lab/{reference}" in found[0].name


def test_a_layer_rewritten_by_hand_in_the_exercise_is_flagged(course):
    body = textwrap.dedent(HAND_RENAMED_HEADS.split("need_weights=False):\n", 1)[1])
    (match,) = copies.flagged(_class(course, "ex6a_multi_head", {"ann": body}))
    assert (match.part, match.source) == ("ex6a_multi_head", "reference")
    assert "transformer_lab/model.py (MultiHeadAttention.forward" in match.name


# --- honest answers -----------------------------------------------------------------------


def test_honest_answers_written_apart_are_not_flagged(course):
    for grade_id in ("ex1_attention", "ex5_mean_distance", "ex6a_multi_head"):
        bodies = {f"s{n}": b for n, b in enumerate(corpus.HONEST[grade_id])}
        assert [copies.flag(m) for m in copies.flagged(_class(course, grade_id, bodies))] == []


@pytest.mark.parametrize(
    "body",
    [corpus.HINTED["ex1_attention"][0], corpus.LECTURE["ex1_attention"][0]],
    ids=["hint followed", "lecture typed"],
)
def test_an_answer_written_from_the_hint_or_the_lecture_is_the_students_own(tmp_path, course, body):
    """Exercise 1's hint spells out every line but the glue (`d_k = Q.shape[-1]`, the `if`, the
    return): written so, the answer is token for token the course's solution, and nothing of it
    is a copy. The instructor sees no flag, in the review column or in reports/copies.md."""
    import shutil

    shutil.copytree(course, tmp_path / "course")
    here = tmp_path / "course"
    assignment = _graded(here, {"ann": body, "ben": body}, "ex1_attention")
    outcomes = [Outcome(s, assignment, "graded", 4.0, 4.0) for s in ("ann", "ben")]
    assert [o.flags for o in copies.with_copies(Course.open(here), outcomes)] == [[], []]
    copies.pairs_report(Course.open(here))
    assert "nothing flagged" in (here / "reports" / "copies.md").read_text()


def test_a_paste_padded_with_lines_of_ones_own_is_flagged_on_the_sources_side(course):
    """Exercise 5's solution with a print, an assert and a finiteness check added: the source
    covers less than half of the student's code, and the student's code holds the source."""
    body = corpus.padded(corpus.solution_body(course, "ex5_mean_distance"))
    assert body.count("\n") >= 7 and "isfinite" in body and "print(" in body
    found = _class(course, "ex5_mean_distance", {"padder": body})
    ((flag,), (match,)) = _flags(found, "padder"), copies.flagged(found)
    shown = FLAG_TEXT.fullmatch(flag)
    assert match.source == "solution" and match.name.endswith("(solutions/05_heads.py)"), flag
    assert int(shown["mine"]) < 60 and int(shown["held"]) >= 90, flag
    assert int(shown["tokens"]) >= copies.CODE.published.tokens and int(shown["run"]) >= 16


def test_the_lecture_listings_are_the_lectures_own_text():
    """Each listing the grader holds as handed out is, character for character, in the lecture
    text it names (where the lecture lies beside the checkout), and parses."""
    import ast

    for listing in LISTINGS:
        ast.parse(listing.code)
        text = SHARED / "lecture" / listing.lecture
        if text.is_file():
            assert listing.code in text.read_text(encoding="utf-8"), listing.section


def test_a_short_answer_is_never_flagged_however_alike(course):
    body = corpus.solution_body(course, "ex2_causal_mask")
    found = _class(course, "ex2_causal_mask", {"ann": body, "ben": body})
    assert copies.flagged(found) == []
    assert all(m.tokens < copies.CODE.published.tokens for m in found)


def test_code_the_class_shares_weighs_less(course):
    """A line a large part of the class writes counts less toward a pair's share than the
    part only the pair holds."""
    common = "scale = 1.0 / math.sqrt(K.size(-1))\nscores = torch.matmul(Q, K.mT) * scale\n"
    rest = [
        "e = torch.exp(scores - scores.amax(-1, keepdim=True))\nA = e / e.sum(-1, keepdim=True)\n"
        "return torch.matmul(A, V), A",
        "A = scores.softmax(dim=-1)\nout = torch.einsum('...ij,...jd->...id', A, V)\nreturn out, A",
        "A = torch.nn.functional.softmax(scores, -1)\nreturn A.matmul(V), A",
    ]
    few = {f"s{n}": common + rest[n] for n in range(3)}
    many = {**few, **{f"t{n}": common + f"x = {n}\nreturn V, x" for n in range(20)}}
    share = {}
    for label, bodies in (("few", few), ("many", many)):
        found = _class(course, "ex1_attention", bodies)
        (m,) = [m for m in found if (m.student, m.name, m.part) == ("s0", "s1", "ex1_attention")]
        share[label] = m.share
    assert share["many"] < share["few"]


# --- the written prediction ---------------------------------------------------------------


def test_a_copied_prediction_is_flagged_and_honest_ones_are_not(course):
    example = corpus.solution_body(course, "ex4_prediction").split("**Rubric")[0].strip()
    honest = corpus.HONEST["ex4_prediction"]
    bodies = {f"s{n}": text for n, text in enumerate(honest)}
    bodies |= {"copier": corpus.reworded(example), "twin": honest[0]}
    found = _class(course, "ex4_prediction", bodies)
    copier = [m for m in copies.flagged(found) if m.student == "copier"]
    assert [(m.source, m.kind) for m in copier] == [("solution", copies.TEXT)]
    assert copies.flag(copier[0]).answer == "written answer"  # not "own code"
    assert any("classmate s0's" in f for f in _flags(found, "twin"))
    assert all(_flags(found, f"s{n}") == [] for n in range(1, len(honest)))


# --- what the instructor sees -------------------------------------------------------------


def _graded(course, students: dict[str, str], grade_id="ex6a_multi_head"):
    assignment = corpus.NOTEBOOK_OF[grade_id]
    given = _release(course, assignment)
    for student, body in students.items():
        path = course / "autograded" / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(corpus.fill(given, grade_id, body), path)
    return assignment


def test_flags_join_the_outcomes_replace_an_earlier_runs_and_change_no_score(tmp_path, course):
    import shutil

    shutil.copytree(course, tmp_path / "course")
    here = tmp_path / "course"
    solution = corpus.solution_body(here, "ex6a_multi_head")
    assignment = _graded(here, {"ann": solution, "ben": corpus.HONEST["ex6a_multi_head"][0]})
    write = Flag(REVIEW, "cell 3", "writes an attribute of torch", "x")
    old = Flag(COPY, "ex6a_multi_head", "classmate ben's", share=0.5, held=0.5, whose="ben's")
    outcomes = [
        Outcome("ann", assignment, "graded", 4.0, 4.0, flags=[write, old]),
        Outcome("ben", assignment, "graded", 2.0, 4.0, flags=[old]),
    ]
    before = [dataclasses.replace(o, flags=[]) for o in outcomes]
    assert copies.with_copies(Course.open(here), outcomes) is outcomes
    assert outcomes[0].flags[0] == write and len(outcomes[0].flags) == 2
    shown = FLAG_TEXT.fullmatch(outcomes[0].flags[1].text())
    assert (shown["part"], shown["mine"], shown["held"], shown["whose"]) == (
        "ex6a_multi_head",
        "100",
        "100",
        "the solution",
    )
    assert shown["source"].endswith("(solutions/06_stretch.py)")
    assert outcomes[1].flags == []
    assert [dataclasses.replace(o, flags=[]) for o in outcomes] == before  # scores untouched


def test_the_review_column_names_each_copys_source_and_share(course):
    renamed = LOOP_OVER_HEADS.replace("outs", "pieces")
    found = _class(course, "ex6a_multi_head", {"ann": LOOP_OVER_HEADS, "ben": renamed})
    write = Flag(REVIEW, "cell 3", "writes an attribute of torch", "x")
    flags = [write, *(copies.flag(m) for m in copies.flagged(found) if m.student == "ann")]
    (m,) = [m for m in copies.flagged(found) if m.student == "ann"]
    assert copies.review_cell("06_stretch", flags) == (
        f"06_stretch: ex6a_multi_head {m.share:.0%} classmate ben's, holding "
        f"{m.held_share:.0%} of it; 1 other"
    )


def test_the_pairs_report_ranks_pairs_and_shows_each_side_by_side(tmp_path, course):
    import shutil

    shutil.copytree(course, tmp_path / "course")
    here = tmp_path / "course"
    renamed = LOOP_OVER_HEADS.replace("outs", "pieces")
    _graded(
        here, {"ann": LOOP_OVER_HEADS, "ben": renamed, "cat": corpus.HONEST["ex6a_multi_head"][0]}
    )
    paths = copies.pairs_report(Course.open(here))
    table = (here / "reports" / "copies.md").read_text()
    rows = [
        line for line in table.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")
    ]
    assert len(rows) == 2 and all("classmate" in r for r in rows)
    head = next(line for line in table.splitlines() if line.startswith("| rank |"))
    columns = [cell.strip() for cell in head.strip("|").split(" | ")]
    ranked = [
        dict(zip(columns, [c.strip() for c in r.strip("|").split(" | ")], strict=True))
        for r in rows
    ]
    keys = [(s, "06_stretch") for s in ("ann", "ben", "cat")]
    found = copies.flagged(copies.class_report_matches(Course.open(here), keys))
    (m,) = [m for m in found if m.student == "ann"]
    said = ["found in", "of theirs", "of the source", "tokens alike", "longest run", "side by side"]
    assert [r[c] for c in said for r in ranked if r["student"] == "ann"] == [
        "classmate ben's",
        f"{m.share:.0%}",
        f"{m.held_share:.0%}",
        str(m.tokens),
        str(m.longest),
        "[page](copies/06_stretch--ann--ben.html)",
    ], rows
    assert "cat" not in table
    (page,) = [p for p in paths if p.suffix == ".html"]
    assert page.name == "06_stretch--ann--ben.html"
    text = page.read_text()
    loop = next(line for line in LOOP_OVER_HEADS.splitlines() if "range(self.n_heads)" in line)
    assert loop.strip() in [hit.strip() for hit in re.findall(r'class="hit">(.*?)</span>', text)]
    assert "pieces.append(o)" in text and "outs.append(o)" in text


def test_make_class_report_writes_the_pairs_beside_the_class_report(tmp_path, course):
    import shutil

    from grader.term import class_report

    shutil.copytree(course, tmp_path / "course")
    here = tmp_path / "course"
    _graded(here, {"ann": LOOP_OVER_HEADS, "ben": LOOP_OVER_HEADS.replace("outs", "pieces")})
    paths = class_report.class_report(Course.open(here))
    assert here / "reports" / "copies.md" in paths
    assert here / "reports" / "copies" / "06_stretch--ann--ben.html" in paths
    assert "ann" not in (here / "reports" / "class.md").read_text()  # names stay out of it


# --- the measured corpus ------------------------------------------------------------------


def test_the_corpus_flags_no_honest_answer_and_catches_the_long_copies(course):
    """maintainer/copy_corpus.py's numbers, the ones the bars rest on: no honest answer flagged,
    those that follow a hint or type the lecture included; every copy caught where the source's
    own code is long enough to tell (Challenge A, the written prediction); the padded copies of
    Exercise 5's and Challenge A's solutions, and the reference of Exercise 1 renamed with `d_k`
    inlined, caught."""
    rows = {row.grade_id: row for row in corpus.measure(course)}
    assert [(g, r.wrong) for g, r in rows.items() if r.flagged] == []
    for grade_id in ("ex6a_multi_head", "ex4_prediction"):
        assert rows[grade_id].caught == rows[grade_id].copies, rows[grade_id]
    caught = [
        ("ex5_mean_distance", "copy_solution_padded"),
        ("ex6a_multi_head", "copy_solution_padded"),
        ("ex1_attention", "copy_reference_renamed_inlined"),
    ]
    for grade_id, student in caught:
        assert f"missed {student}" not in rows[grade_id].wrong, rows[grade_id]
