"""`transformer_lab` imports each public name on first use: a notebook's `tl.MiniGPT` is the
model module's class, while the grader's commands, which read only the lab's catalogue and the
hand-in checks, start without PyTorch."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import pytest
from paths import ROOT

import transformer_lab as tl
from transformer_lab.catalogue import BY_NAME

WHAT_IS_IMPORTED = (
    "import sys, {module}; print(sorted({{'torch', 'matplotlib'}} & set(sys.modules)))"
)


@pytest.mark.parametrize("module", ["grader.__main__", "transformer_lab.hand_in"])
def test_the_grader_s_commands_import_no_torch(module):
    done = subprocess.run(
        [sys.executable, "-c", WHAT_IS_IMPORTED.format(module=module)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "[]\n"


def test_every_public_name_is_its_module_s_own():
    assert len(tl.__all__) == 52
    for name in tl.__all__:
        module = tl._MODULE_OF[name]
        if module:
            assert getattr(tl, name) is getattr(import_module(f"transformer_lab.{module}"), name)
        else:
            assert getattr(tl, name) is import_module(f"transformer_lab.{name}")
    assert set(tl.__all__) <= set(dir(tl))
    with pytest.raises(AttributeError, match="has no attribute 'MiniGTP'"):
        tl.MiniGTP  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'MiniGTP'"):
        from transformer_lab import MiniGTP  # noqa: F401


def test_the_catalogue_names_the_course_s_own_functions():
    from transformer_lab import attention, model

    assert BY_NAME["ex1"].course is attention.scaled_dot_product_attention
    assert BY_NAME["ex3"].course is model.embed_with_positions
    assert BY_NAME["ex6a"].course is model.MultiHeadAttention.forward
    assert BY_NAME["ex6b"].course is model.Block.forward
    assert BY_NAME["ex2"].course(4).equal(attention.causal_mask(4))  # in the student's form
    assert BY_NAME["ex0"].course is None and BY_NAME["ex5"].course is None
