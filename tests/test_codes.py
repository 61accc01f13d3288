"""Every mistake code a check can raise is named by at least one test, and there is one word for
each thing (no `modified_inputs` beside `modified_input`).

The codes are read from the checks' source: each `code(EXERCISE, "name")`, each mistake table
(a function whose name ends in `mistakes`, `_miscounts`, the shape hints of notebook 05), each
`Forbidden(...)`, the causes of a raised error in `_core`, and each literal `"area.name"` code.
A place that can raise its code for several exercises is covered when one of them is tested.
"""

import ast
import re
from functools import cache
from pathlib import Path

import pytest

import checkpoints._core as core

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "checkpoints"
# Tables of mistakes and the exercise whose codes they hold, as "module:function".
TABLES = {
    "attention:_scale_mistakes": "ex1",
    "attention:_mask_mistakes": "ex1",
    "attention:_miscounts": "ex0",
    "causal_mask:_mistakes": "ex2",
    "positions:_mistakes": "ex3",
    "training:_loss_mistakes": "ex4",
    "training:_unit_mistakes": "ex4",
    "heads:_mistakes": "ex5",
    "heads:_shape_hint": "ex5",
    "stretch:_mha_mistakes": "exa",
    "stretch:_block_mistakes": "exb",
}
LITERAL_CODE = re.compile(r"^[a-z]+\.[a-z0-9_]+$")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _labels(tree: ast.Module) -> dict[str, str]:
    """Module constants that name an exercise (EX1 = "Exercise 1") -> their code prefix."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id.isupper() or target.id == "_TRIGRAM":
                    out[target.id] = core.code(value, "").rstrip(".")
    return {k: v for k, v in out.items() if v.startswith(("ex", "check"))}


def _names_in(node) -> set[str]:
    """Mistake names a table defines: dict keys, `out["name"] =`, `return "name", ...`."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Dict):
            for key in sub.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found.add(key.value)
            for value in sub.values:  # _miscounts: gap -> (name, what)
                if isinstance(value, ast.Tuple) and isinstance(value.elts[0], ast.Constant):
                    if isinstance(value.elts[0].value, str) and NAME.match(value.elts[0].value):
                        found.add(value.elts[0].value)
        elif isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store):
            if isinstance(sub.slice, ast.Constant):
                found.add(sub.slice.value)
        elif isinstance(sub, ast.Return) and isinstance(sub.value, ast.Tuple):
            first = sub.value.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return {name for name in found if NAME.match(name)}


@cache  # parsed once, not once for each of the hundred-odd sites
def code_sites() -> dict[str, set[str]]:
    """Where a code is made -> the full codes it can be (one of them must be tested)."""
    sites: dict[str, set[str]] = {}
    all_prefixes = set()
    for path in sorted(CHECKS.glob("*.py")):
        tree = ast.parse(path.read_text())
        labels = _labels(tree)
        prefixes = set(labels.values()) or {"ex"}
        all_prefixes |= prefixes
        module = path.stem
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.Assign):
                name = node.name if isinstance(node, ast.FunctionDef) else None
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    name = node.targets[0].id
                prefix = TABLES.get(f"{module}:{name}")
                if prefix:
                    for mistake in _names_in(node):
                        sites[f"{module}:{name}:{mistake}"] = {f"{prefix}.{mistake}"}
            if not isinstance(node, ast.Call):
                continue
            fn = node.func.id if isinstance(node.func, ast.Name) else None
            args = node.args
            if fn == "code" and len(args) == 2 and isinstance(args[1], ast.Constant):
                mistake = args[1].value
                if not mistake:
                    continue
                where = args[0].id if isinstance(args[0], ast.Name) else None
                options = {labels[where]} if where in labels else prefixes
                if module == "_core":
                    options = {"*"}
                sites[f"{module}:{node.lineno}:{mistake}"] = {f"{p}.{mistake}" for p in options}
            elif fn == "Forbidden" and len(args) >= 2 and isinstance(args[1], ast.Constant):
                sites[f"{module}:{node.lineno}"] = {f"{p}.{args[1].value}" for p in prefixes}
            elif fn == "CheckFailed" and len(args) == 2 and isinstance(args[1], ast.Constant):
                if LITERAL_CODE.match(args[1].value):
                    sites[f"{module}:{node.lineno}"] = {args[1].value}
    for _pattern, mistake, _hint in core._RAISED:
        sites[f"_core:raised:{mistake}"] = {"*." + mistake}
    # A code of the shared core may be raised by any exercise: any one of them covers it.
    for key, options in sites.items():
        if options and next(iter(options)).startswith("*."):
            sites[key] = {f"{p}.{o[2:]}" for o in options for p in all_prefixes}
    return sites


@cache
def _tested_codes() -> str:
    return "\n".join(
        p.read_text() for p in (ROOT / "tests").glob("*.py") if p.name != "test_codes.py"
    )


def test_the_scan_finds_the_codes_it_should():
    sites = code_sites()
    every = set().union(*sites.values())
    for known in (
        "ex1.no_sqrt_dk",
        "ex0.count_with_qkv_biases",
        "exb.post_norm",
        "ex1.uses_torch_attention",
        "leak.reads_the_future",
        "ex2.wrong_dtype",
        "ex5.only_keys_reduced",
        "ex1.tensor_as_condition",
        "ex4.bits_as_log2_of_nats",
        "ex1.sqrt_precedence",
    ):
        assert known in every, known
    assert len(sites) > 100


@pytest.mark.parametrize("site", sorted(code_sites()))
def test_every_code_is_asserted_by_a_test(site):
    options = code_sites()[site]
    text = _tested_codes()
    assert any(f'"{option}"' in text for option in options), (
        f"no test names {' or '.join(sorted(options))}: add a case to the bug zoo"
    )


def test_one_word_for_each_thing():
    names = {code.split(".", 1)[1] for code in set().union(*code_sites().values())}
    for word in names:
        assert word + "s" not in names, f"{word} and {word}s name the same thing"
    assert "wrong_output" not in names and "nan_output" not in names
