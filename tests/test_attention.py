import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lab import causal_mask, scaled_dot_product_attention


def test_module3_worked_example():
    """Module 3, section 4.5: three positions, d_k = 2, causal mask."""
    Q = K = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    V = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    V_bar, A = scaled_dot_product_attention(Q, K, V, causal_mask(3))
    expected_A = torch.tensor([[1.0, 0.0, 0.0], [0.330, 0.670, 0.0], [0.248, 0.248, 0.503]])
    expected_V_bar = torch.tensor([[1.0, 0.0], [0.330, 1.340], [1.759, 1.0]])
    torch.testing.assert_close(A, expected_A, atol=1e-3, rtol=0)
    torch.testing.assert_close(V_bar, expected_V_bar, atol=1e-3, rtol=0)
    assert V_bar[2].tolist() == pytest.approx([1.758725, 1.0], abs=1e-5)


def test_lecture_mask_example_row():
    """Lab 5, section 3: scores (1, 1, 5, 3) at row t = 2 become (0.5, 0.5, 0, 0)."""
    d_k = 1
    Q = torch.ones(4, d_k)
    K = torch.tensor([[1.0], [1.0], [5.0], [3.0]])
    _, A = scaled_dot_product_attention(Q, K, torch.eye(4), causal_mask(4))
    assert A[1].tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0])


def test_rows_sum_to_one_over_allowed_keys_with_leading_dims():
    Q, K, V = torch.randn(2, 3, 7, 8), torch.randn(2, 3, 9, 8), torch.randn(2, 3, 9, 5)
    allowed = torch.rand(7, 9) < 0.6
    allowed[:, 0] = True
    V_bar, A = scaled_dot_product_attention(Q, K, V, allowed)
    assert V_bar.shape == (2, 3, 7, 5) and A.shape == (2, 3, 7, 9)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 3, 7))
    assert (A[..., ~allowed] == 0).all()


def test_scaling_is_one_over_sqrt_d_k():
    q = torch.ones(1, 4)
    k = torch.tensor([[1.0, 1, 1, 1], [1, -1, 1, -1]])
    _, A = scaled_dot_product_attention(q, k, torch.eye(2))
    expected = torch.softmax(torch.tensor([4.0, 0.0]) / math.sqrt(4), dim=-1)
    torch.testing.assert_close(A[0], expected)
    assert A[0, 0].item() == pytest.approx(0.881, abs=1e-3)


def test_empty_row_policies():
    Q, K, V = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)
    allowed = causal_mask(3)
    allowed[1] = False
    with pytest.raises(ValueError, match="no allowed key"):
        scaled_dot_product_attention(Q, K, V, allowed)
    V_bar, A = scaled_dot_product_attention(Q, K, V, allowed, empty_row="zero")
    assert torch.isfinite(V_bar).all() and torch.isfinite(A).all()
    assert (A[1] == 0).all() and (V_bar[1] == 0).all()
    torch.testing.assert_close(A[[0, 2]].sum(-1), torch.ones(2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("masked", [False, True])
def test_matches_torch_outputs_and_gradients(dtype, masked):
    Q, K, V = (torch.randn(2, 4, 6, 8, dtype=dtype, requires_grad=True) for _ in range(3))
    allowed = causal_mask(6) if masked else None
    ours, _ = scaled_dot_product_attention(Q, K, V, allowed)
    grads = torch.autograd.grad(ours.sum(), (Q, K, V))
    theirs = F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed, dropout_p=0.0)
    their_grads = torch.autograd.grad(theirs.sum(), (Q, K, V))
    torch.testing.assert_close(ours, theirs)
    for g, h in zip(grads, their_grads, strict=True):
        torch.testing.assert_close(g, h)


def test_does_not_modify_inputs():
    Q, K, V = torch.randn(5, 4), torch.randn(5, 4), torch.randn(5, 3)
    allowed = causal_mask(5)
    copies = [t.clone() for t in (Q, K, V, allowed)]
    scaled_dot_product_attention(Q, K, V, allowed)
    for before, after in zip(copies, (Q, K, V, allowed), strict=True):
        assert torch.equal(before, after)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (
            lambda: (torch.full((3, 4), math.nan), torch.randn(3, 4), torch.randn(3, 4), None),
            ValueError,
            "NaN or infinity",
        ),
        (
            lambda: (torch.randn(3, 4), torch.randn(3, 5), torch.randn(3, 4), None),
            ValueError,
            "share d_k",
        ),
        (
            lambda: (torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4), None),
            ValueError,
            "one row per key",
        ),
        (
            lambda: (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), torch.ones(3, 3)),
            TypeError,
            "bool",
        ),
        (lambda: (torch.ones(3, 4, dtype=torch.long),) * 3 + (None,), TypeError, "floating"),
        (
            lambda: (torch.randn(4), torch.randn(3, 4), torch.randn(3, 4), None),
            ValueError,
            r"\(\.\.\., T, d\)",
        ),
    ],
)
def test_bad_inputs_get_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(*make())


def test_unknown_empty_row_policy():
    with pytest.raises(ValueError, match="empty_row"):
        scaled_dot_product_attention(*(torch.randn(2, 2),) * 3, empty_row="uniform")


def test_causal_mask():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True] * 3]
    # One new query after four cached positions reads all five keys.
    assert causal_mask(1, 5, query_offset=4).tolist() == [[True] * 5]
    assert causal_mask(2, 5, query_offset=3).tolist() == [
        [True, True, True, True, False],
        [True] * 5,
    ]
    with pytest.raises(ValueError):
        causal_mask(0)
    with pytest.raises(TypeError):
        causal_mask(3.0)
