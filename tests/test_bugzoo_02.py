"""Bug zoo of notebook 02: each usual mistake in causal_mask fails Exercise 2's checkpoint with
its diagnosis and its mistake code; each correct variant passes it; the leak test catches masking
after the softmax. Rows: (injected code, diagnosis, mistake code)."""

import pytest
import torch
from notebook_harness import run_exercise

import transformer_lab as tl
from checkpoints import CheckFailed, NotDoneYet
from checkpoints import causal_mask as check

EX2 = ("02_causal_mask", "ex2_causal_mask", "ex2_check")

MUTANTS = {
    "upper triangle with the diagonal": (
        "return torch.ones(T, T, dtype=torch.bool).triu()",
        "inverted",
        "ex2.mask_inverted",
    ),
    "negation of the right mask": (
        "return ~torch.ones(T, T, dtype=torch.bool).tril()",
        "inverted",
        "ex2.mask_negated",
    ),
    "comparison the wrong way round": (
        "i = torch.arange(T)\nreturn i[None, :] >= i[:, None]",
        "inverted",
        "ex2.mask_inverted",
    ),
    "diagonal excluded with tril(-1)": (
        "return torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)",
        "diagonal is excluded",
        "ex2.diagonal_excluded",
    ),
    "diagonal excluded with a strict comparison": (
        "i = torch.arange(T)\nreturn i[None, :] < i[:, None]",
        "diagonal is excluded",
        "ex2.diagonal_excluded",
    ),
    "float 0/1 mask": (
        "return torch.ones(T, T).tril()",
        "return dtype torch.bool",
        "ex2.wrong_dtype",
    ),
    "int 0/1 mask": (
        "return torch.ones(T, T, dtype=torch.long).tril()",
        "return dtype torch.bool",
        "ex2.wrong_dtype",
    ),
    "additive mask M with -inf": (
        'return torch.full((T, T), float("-inf")).triu(1)',
        "additive mask M",
        "ex2.additive_mask",
    ),
    "additive mask M with -1e9": (
        "return torch.full((T, T), -1e9).triu(1)",
        "additive mask M",
        "ex2.additive_mask",
    ),
    "float mask, inverted": ("return torch.ones(T, T).triu()", "inverted", "ex2.wrong_dtype"),
    "fixed size T_max": (
        "return torch.ones(128, 128, dtype=torch.bool).tril()",
        "not from a fixed size",
        "ex2.fixed_size",
    ),
    "extra leading dimensions": (
        "return torch.ones(T, T, dtype=torch.bool).tril()[None, None]",
        "extra leading dimensions",
        "ex2.extra_leading_dims",
    ),
    "one row only": ("return torch.arange(T) <= T - 1", "should have shape", "ex2.wrong_shape"),
    "nested lists": (
        "return [[i <= t for i in range(T)] for t in range(T)]",
        "should be a torch.Tensor",
        "ex2.not_a_tensor",
    ),
    "cached constant": (
        """
        full = getattr(causal_mask, "full", None)
        if full is None:
            full = causal_mask.full = torch.ones(512, 512, dtype=torch.bool).tril()
        return full[:T, :T]
        """,
        "cached constant",
        "ex2.cached_constant",
    ),
    "remembers the first T": (
        """
        if not hasattr(causal_mask, "first"):
            causal_mask.first = torch.ones(T, T, dtype=torch.bool).tril()
        return causal_mask.first.clone()
        """,
        "Build it from the argument T",
        "ex2.fixed_size",
    ),
}

CORRECT = {
    "tril of bool ones": "return torch.tril(torch.ones(T, T, dtype=torch.bool))",
    "comparison of aranges": "t = torch.arange(T)[:, None]\nreturn torch.arange(T)[None, :] <= t",
    "ones().tril().bool()": "return torch.ones(T, T).tril().bool()",
    "negated strict upper triangle": "return ~torch.ones(T, T, dtype=torch.bool).triu(1)",
    "cached and cloned": """
        full = getattr(causal_mask, "full", None)
        if full is None:
            full = causal_mask.full = torch.ones(512, 512, dtype=torch.bool).tril()
        return full[:T, :T].clone()
        """,
}


@pytest.mark.parametrize("name", MUTANTS)
def test_mutant_fails_with_its_diagnosis(name, capsys):
    body, diagnosis, expected_code = MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*EX2, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_passes(name, capsys):
    run_exercise(*EX2, CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 3  # visible checks, leak test, hidden tests


def test_solution_passes_and_stub_is_not_done(capsys):
    run_exercise(*EX2)
    assert capsys.readouterr().out.count("✅") == 3
    with pytest.raises(NotDoneYet, match="not done yet") as failure:
        run_exercise(*EX2, 'raise NotImplementedError("not done yet")')
    assert failure.value.code.endswith(".not_done"), str(failure.value)


def lower_triangle(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def softmax_then_zero(Q, K, V, allowed):
    A = (Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5).softmax(-1) * allowed
    return A @ V, A


def unmasked(Q, K, V, allowed):
    return tl.scaled_dot_product_attention(Q, K, V)


@pytest.mark.parametrize(
    ("attention", "diagnosis", "expected_code"),
    [
        (softmax_then_zero, "after the softmax", "ex2.leak_to_earlier"),
        (unmasked, "above the diagonal", "ex2.leak_above_diagonal"),
    ],
)
def test_leak_test_catches_leaky_attention(attention, diagnosis, expected_code):
    with pytest.raises(CheckFailed, match=diagnosis) as failure:
        check.attention_leak_test(lower_triangle, attention=attention)
    assert failure.value.code == expected_code, str(failure.value)


def test_leak_test_passes_on_the_reference(capsys):
    assert check.attention_leak_test(lower_triangle) == 0.0
    assert capsys.readouterr().out.startswith("✅")
