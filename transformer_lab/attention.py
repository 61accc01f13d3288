"""Scaled dot-product attention (Equations 3-4) and the causal mask (Equation 6).

Contract, shared with every notebook and check:
- `allowed` is boolean and True means "this query may read this key";
- a query row with no allowed key is an error by default (`empty_row="error"`), or yields
  zero weights and a zero output when asked for (`empty_row="zero"`), never NaN;
- the caller's tensors are never modified.
"""

from __future__ import annotations

import math

import torch

EMPTY_ROW_POLICIES = ("error", "zero")


def _check_inputs(Q, K, V, allowed, empty_row) -> None:
    if empty_row not in EMPTY_ROW_POLICIES:
        raise ValueError(f"empty_row must be one of {EMPTY_ROW_POLICIES}, got {empty_row!r}")
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{name} must be (..., T, d), got shape {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
        if not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or infinity; check what produced it")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k: Q is {tuple(Q.shape)}, K is {tuple(K.shape)}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K and V must have one row per key: K is {tuple(K.shape)}, V is {tuple(V.shape)}"
        )
    if allowed is not None:
        if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
            got = allowed.dtype if isinstance(allowed, torch.Tensor) else type(allowed).__name__
            raise TypeError(
                f"allowed must be a bool tensor with True = may read, got {got}; "
                "build it with causal_mask(...) or a comparison such as `x != pad_id`"
            )


def scaled_dot_product_attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    empty_row: str = "error",
) -> tuple[torch.Tensor, torch.Tensor]:
    """A = softmax(Q K^T / sqrt(d_k)) over the allowed keys, V_bar = A V.

    Q: (..., T_q, d_k)   K: (..., T_k, d_k)   V: (..., T_k, d_v)
    allowed: bool, broadcastable to (..., T_q, T_k), True where reading is allowed.
    Returns V_bar (..., T_q, d_v) and A (..., T_q, T_k).
    """
    _check_inputs(Q, K, V, allowed, empty_row)
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if allowed is None:
        A = torch.softmax(scores, dim=-1)
        return A @ V, A

    allowed = allowed.to(scores.device).broadcast_to(scores.shape)
    empty = ~allowed.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    if empty_row == "error" and empty.any():
        raise ValueError(
            "a query row has no allowed key, so its softmax is undefined (NaN). The usual cause "
            "is an inverted mask: `allowed` is True where a query MAY read (the causal mask is "
            "the lower triangle, diagonal included), the opposite of nn.MultiheadAttention's "
            "attn_mask, where True means masked out. Only if such rows are intended (padding) "
            "pass empty_row='zero'."
        )
    # Filling -inf before the softmax gives exact zeros; an empty row would be all -inf and
    # turn into NaN, so it is given finite scores first and its weights zeroed afterwards.
    scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(empty, 0.0)
    A = torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)
    return A @ V, A


def causal_mask(
    T_q: int, T_k: int | None = None, query_offset: int = 0, *, device=None
) -> torch.Tensor:
    """Bool (T_q, T_k): query t (at absolute position query_offset + t) may read keys i <= it.

    With a KV cache the T_q new queries come after query_offset cached positions, so
    T_k = query_offset + T_q and each new query still reads itself and everything before it.
    """
    T_k = T_q if T_k is None else T_k
    for name, n in (("T_q", T_q), ("T_k", T_k), ("query_offset", query_offset)):
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"{name} must be an int, got {type(n).__name__}")
    if T_q <= 0 or T_k <= 0 or query_offset < 0:
        raise ValueError(
            f"need T_q > 0, T_k > 0, query_offset >= 0; got {T_q}, {T_k}, {query_offset}"
        )
    query_pos = torch.arange(T_q, device=device)[:, None] + query_offset  # (T_q, 1)
    key_pos = torch.arange(T_k, device=device)[None, :]  # (1, T_k)
    return key_pos <= query_pos
