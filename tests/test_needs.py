"""What a kept piece needs from its notebook travels with it (transformer_lab/needs.py): the
helpers it calls, the modules it imports under a name, its constants, what its definition reads;
what cannot travel is named with the reason. The notebook is built as IPython runs a cell: the
cell's source kept in linecache under its own file name, run in the kernel's namespace."""

import linecache
import types

import pytest
import torch

from transformer_lab import student
from transformer_lab.needs import needed


def notebook(*cells: str) -> dict:
    """A kernel's namespace after running `cells`, each kept in linecache as IPython keeps it."""
    namespace = {"__name__": "__main__"}
    for number, source in enumerate(cells):
        filename = f"/tmp/ipykernel_4242/{number}.py"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
    return namespace


def kept(name: str, fn) -> types.ModuleType:
    """The section kept for `fn`, run on its own under the module's header, as a later notebook
    imports it."""
    module = types.ModuleType("my_transformer")
    exec(f"{student.HEADER}\n{student.source_of(name, fn)}\n", module.__dict__)
    return module


ATTENTION = """
def scaled_dot_product_attention(Q, K, V, allowed=None, scale=SCALE):
    scores = (Q @ K.transpose(-2, -1)) * scale(Q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~allowed, NEG_INF)
    A = rows(scores)
    return A @ V, A
"""


def test_helpers_modules_constants_and_defaults_travel_in_the_order_they_run():
    imports = ["import numpy as np", "from torch.nn.functional import softmax as sm"]
    ns = notebook(
        "import math\n" + "".join(f"{line}\n" for line in imports),
        'NEG_INF = float("-inf")\nAXIS = -1\n',
        "def rows(scores):\n    return sm(scores, dim=AXIS)\n",
        "def SCALE(d_k):\n    return 1 / np.sqrt(d_k)\n",
        ATTENTION,
    )
    fn = ns["scaled_dot_product_attention"]
    assert needed(fn).missing == {}
    source = student.source_of("attention", fn)
    assert [line for line in imports if line in source] == imports  # the imports it reads
    assert "import math" not in source  # not one it does not
    assert "NEG_INF = float('-inf')" in source and "AXIS = -1" in source
    assert source.index("AXIS = -1") < source.index("def rows(") < source.index("def scaled_dot")
    Q, K, V = (torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(i)) for i in range(3))
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    again = kept("attention", fn).scaled_dot_product_attention(Q, K, V, allowed)
    assert torch.allclose(again[0], fn(Q, K, V, allowed)[0])


def test_what_cannot_travel_is_named_with_its_reason():
    ns = notebook(
        "import torch\nW = torch.ones(3)\nrows = lambda s: s.softmax(-1)\n",
        "def causal_mask(T):\n    print(W, rows, not_defined_anywhere)\n"
        "    return torch.ones(T, T, dtype=torch.bool).tril()\n",
    )
    missing = needed(ns["causal_mask"]).missing
    assert missing == {
        "W": "a Tensor, which cannot be written as source",
        "rows": "its source cannot be copied: write it as a def",
        "not_defined_anywhere": "it is not defined in the notebook",
    }


def test_the_header_s_names_and_builtins_are_not_written_again():
    ns = notebook(
        "import math\nimport torch\nimport torch.nn.functional as F\n",
        "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).tril() & bool([T])\n",
    )
    assert needed(ns["causal_mask"]).source() == ""


@pytest.mark.parametrize(
    "value, written",
    [
        ("float('nan')", "float('nan')"),
        ("torch.float16", "torch.float16"),
        ("(1, 2.5, 'x')", "(1, 2.5, 'x')"),
        ("torch.device('cpu')", None),  # its repr reads back as nothing the module defines
    ],
)
def test_a_constant_travels_only_as_a_literal_that_reads_back(value, written):
    ns = notebook(f"import torch\nC = {value}\n", "def causal_mask(T):\n    return C\n")
    needs = needed(ns["causal_mask"])
    if written is None:
        assert "C" in needs.missing
    else:
        assert needs.constants == [f"C = {written}"]
