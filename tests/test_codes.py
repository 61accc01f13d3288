"""The registry of mistake codes (checkpoints/codes.py) against the checks and the tests: every
declared code is asserted by some test, every code a test expects is declared, a check cannot
give an undeclared one, and each exercise has one name (its grade id, its codes' prefix).

A code shared by every exercise (`not_done`, the causes of a raised error) is covered when a test
asserts it for any one exercise.
"""

import re
import tokenize
from functools import cache

import pytest
from paths import ROOT

import checkpoints._core as core
from checkpoints import CheckFailed, codes

QUOTED_CODE = re.compile(r"[\"']([a-z][a-z0-9]*)\.([a-z0-9_]+)[\"']")
# They name undeclared codes on purpose, to show that they are refused.
REFUSING = ("test_codes.py", "test_results.py")
FILE_SUFFIXES = ("py", "md", "json", "ipynb")  # "leak.py" names a file, not a code


@cache
def _tests_text() -> str:
    """The string literals of the tests and of the bug zoo's tables (maintainer/zoo/), one a
    line: a code a comment names is asserted by no test."""
    strings = []
    for path in sorted([*(ROOT / "tests").glob("*.py"), *(ROOT / "maintainer/zoo").glob("*.py")]):
        if path.name not in REFUSING:
            with path.open("rb") as source:
                tokens = tokenize.tokenize(source.readline)
                strings += [token.string for token in tokens if token.type == tokenize.STRING]
    return "\n".join(strings)


@cache
def codes_in_tests() -> set[str]:
    """Every quoted "name.mistake" in the tests whose name is a declared exercise."""
    return {
        f"{name}.{mistake}"
        for name, mistake in QUOTED_CODE.findall(_tests_text())
        if name in codes.REGISTRY and mistake not in FILE_SUFFIXES
    }


def _own_codes() -> list[str]:
    return sorted(f"{e.name}.{m}" for e in codes.REGISTRY.values() for m in e.mistakes)


@pytest.mark.parametrize("code", _own_codes())
def test_every_declared_code_is_asserted_by_a_test(code):
    assert code in codes_in_tests(), f"no test expects {code}: add a case to the bug zoo"


@pytest.mark.parametrize("mistake", sorted(codes.SHARED))
def test_every_shared_code_is_asserted_for_some_exercise(mistake):
    assert any(c.endswith("." + mistake) for c in codes_in_tests()), (
        f"no test expects <exercise>.{mistake}: add a case to the bug zoo"
    )


def test_every_code_a_test_expects_is_declared():
    assert codes_in_tests(), "the scan of the tests found no code"
    undeclared = sorted(c for c in codes_in_tests() if not codes.declared(c))
    assert not undeclared, f"tests expect codes no check declares: {undeclared}"


def test_a_check_cannot_give_an_undeclared_code():
    with pytest.raises(ValueError, match="ex1.no_such_mistake is not declared"):
        codes.EX1.code("no_such_mistake")
    with pytest.raises(ValueError, match="'ex1.no_such_mistake' is not a declared code"):
        CheckFailed("Exercise 1: wrong.", "ex1.no_such_mistake")
    with pytest.raises(ValueError, match="'exa.reads_future' is not a declared code"):
        CheckFailed("Challenge A: wrong.", "exa.reads_future")  # the old name of Challenge A
    assert CheckFailed("Exercise 1: wrong.", "ex1.no_sqrt_dk").code == "ex1.no_sqrt_dk"


def test_every_cause_of_a_raised_error_is_a_shared_code():
    assert {name for _pattern, name, _hint in core._RAISED} <= codes.SHARED


def test_each_exercise_has_one_name_in_its_grade_id_and_its_codes():
    sources = "\n".join(p.read_text() for p in (ROOT / "solutions").glob("*.py"))
    grade_ids = set(re.findall(r'"grade_id": "(\w+)", "locked": true, "points"', sources))
    graded = {e.grade_id for e in codes.REGISTRY.values() if e.graded}
    assert graded == grade_ids, "every graded check cell is one exercise of the registry"
    assert codes.EX6A.grade_id == "ex6a_check" and codes.EX6A.code("no_proj") == "ex6a.no_proj"


def test_one_concept_one_name():
    """The future-reading leak is one mistake wherever a check sees it; and one word for each
    thing (no `modified_inputs` beside `modified_input`)."""
    leaks = {
        f"{e.name}.{m}"
        for e in codes.REGISTRY.values()
        for m in e.mistakes
        if "leak" in m or "future" in m or "mixes" in m
    }
    assert leaks - {"ex2.leak_above_diagonal", "ex2.leak_mask_refused"} == {
        f"{name}.reads_the_future" for name in ("ex2", "ex3", "ex6a", "ex6b", "leak")
    }
    names = {m for e in codes.REGISTRY.values() for m in e.mistakes | codes.SHARED}
    for word in names:
        assert word + "s" not in names, f"{word} and {word}s name the same thing"
    assert "wrong_output" not in names and "nan_output" not in names
