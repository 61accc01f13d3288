"""The student's pieces as a notebook cell would hold them, written otherwise than the course's
(inspect.getsource reads them here, as the checks read a cell), for the tests of what is kept
between notebooks (test_yours, test_kept_version)."""

import math

import torch


def scaled_dot_product_attention(Q, K, V, allowed=None):
    """An einsum variant: the same equation, written otherwise; it passes."""
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(Q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", A, V), A


def unscaled(Q, K, V, allowed=None):
    """Fails Exercise 1: no 1/sqrt(d_k) (a student's later edit)."""
    scores = Q @ K.transpose(-2, -1)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    return A @ V, A


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def embed_with_positions(idx, tok_emb, pos_emb):
    return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1], device=idx.device))
