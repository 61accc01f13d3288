"""The mini-GPT of the lab (Equations 7, 8, 10-12, 14), in dependency order.

Names follow the lecture: d_model, n_heads, d_k = d_model / n_heads, T_max, W_Q, W_K, W_V, proj
(W_proj, b_proj), W_1, W_2, W_o. The attention function, the causal mask and the input step are
pluggable: the notebooks run this model on the student's own `scaled_dot_product_attention`,
`causal_mask` and `embed_with_positions` (transformer_lab/student.py finds them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import causal_mask, scaled_dot_product_attention

AttentionFn = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]
MaskFn = Callable[[int], torch.Tensor]  # causal_mask(T) -> bool (T, T), True where t may read i


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 65
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    T_max: int = 128
    dropout: float = 0.1

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def d_ff(self) -> int:
        return 4 * self.d_model


class LayerCache:
    """Keys and values already computed by one attention layer (generation with a KV cache)."""

    def __init__(self):
        self.K: torch.Tensor | None = None
        self.V: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.K is None else self.K.shape[-2]

    def extend(self, K: torch.Tensor, V: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.K is not None:
            K = torch.cat([self.K, K], dim=-2)  # (B, n_heads, T_past + T, d_k)
            V = torch.cat([self.V, V], dim=-2)
        self.K, self.V = K, V
        return K, V


def embed_with_positions(
    idx: torch.Tensor, tok_emb: nn.Embedding, pos_emb: nn.Embedding, offset: int = 0
) -> torch.Tensor:
    """h_t^(0) = e_{w_t} + p_t (Equation 8). idx: (B, T) -> (B, T, d_model).

    `offset` is the absolute position of idx[:, 0] (non-zero only when decoding with a cache).
    """
    T = idx.shape[-1]
    if offset + T > pos_emb.num_embeddings:
        raise ValueError(
            f"positions {offset}..{offset + T - 1} exceed T_max = {pos_emb.num_embeddings}; "
            "crop the input to its last T_max tokens"
        )
    positions = torch.arange(offset, offset + T, device=idx.device)  # (T,)
    return tok_emb(idx) + pos_emb(positions)  # (B, T, d_model) + (T, d_model)


class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention (Equation 7): n_heads lookups of width d_k, then W_proj."""

    def __init__(
        self, config: GPTConfig, attention: AttentionFn | None = None, mask: MaskFn | None = None
    ):
        super().__init__()
        if config.d_model % config.n_heads:
            raise ValueError(
                f"d_model = {config.d_model} must be divisible by n_heads = {config.n_heads}"
            )
        self.n_heads, self.d_k = config.n_heads, config.d_k
        self.W_Q = nn.Linear(config.d_model, config.d_model, bias=False)
        self.W_K = nn.Linear(config.d_model, config.d_model, bias=False)
        self.W_V = nn.Linear(config.d_model, config.d_model, bias=False)
        self.proj = nn.Linear(config.d_model, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        # None: PyTorch's fused kernel while training, our reference when weights are wanted.
        self.attention = attention
        self.mask = mask  # None: the package's causal_mask
        self._mask_copy: tuple = (None, None)  # (the student's mask, its copy on the device)

    def forward(
        self, H: torch.Tensor, *, cache: LayerCache | None = None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        B, T, d_model = H.shape

        def split(X: torch.Tensor) -> torch.Tensor:
            return X.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, n_heads, T, d_k)

        Q, K, V = split(self.W_Q(H)), split(self.W_K(H)), split(self.W_V(H))
        offset = 0
        if cache is not None:
            offset = cache.length
            K, V = cache.extend(K, V)  # (B, n_heads, offset + T, d_k)

        # Three paths. Training and plain inference: PyTorch's fused kernel, which never stores
        # the T x T weights. Decoding past a cache's first call: the same kernel with our mask,
        # because its is_causal aligns the mask to the top-left corner (query t reads keys <= t)
        # while these queries sit at offset + t. A plugged-in attention (the student's) or a
        # request for the weights: the explicit form, the only one that returns A. A plugged-in
        # mask takes the explicit form too: the fused kernel would never call it.
        if self.attention is None and self.mask is None and not need_weights:
            if offset == 0:
                V_bar = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
            else:
                allowed = causal_mask(T, K.shape[-2], offset, device=H.device)
                V_bar = F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed)
            A = None
        else:
            attention = self.attention or scaled_dot_product_attention
            allowed = self._allowed(T, offset, H.device)
            V_bar, A = attention(Q, K, V, allowed)  # (B, n_heads, T, d_k), (B, n_heads, T, T_k)
        V_bar = V_bar.transpose(1, 2).reshape(B, T, d_model)  # concatenate the heads
        return self.drop(self.proj(V_bar)), A

    def _allowed(self, T: int, offset: int, device) -> torch.Tensor:
        """Bool (T, offset + T). The student's causal_mask(T) is square: queries decoded after a
        cache's first call sit at offset + t, so the package's mask covers those."""
        if self.mask is None or offset:
            return causal_mask(T, offset + T, offset, device=device)
        allowed = self.mask(T)  # called at every step: it is the student's mask that runs
        if allowed.device == torch.device(device):
            return allowed
        # Built on the CPU (torch.arange(T) without device=): copy it to the device once, not at
        # every step, where a pageable copy would wait for the queued work. The copy is reused
        # only while the mask it was made from is equal to the one just built.
        made, copy = self._mask_copy
        if made is None or made.shape != allowed.shape or not torch.equal(made, allowed):
            self._mask_copy = made, copy = allowed, allowed.to(device)
        return copy


class FeedForward(nn.Module):
    """FFN(h) = W_2 GELU(W_1 h + b_1) + b_2 (Equation 10), applied at each position."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.W_1 = nn.Linear(config.d_model, config.d_ff)
        self.W_2 = nn.Linear(config.d_ff, config.d_model)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        return self.drop(self.W_2(F.gelu(self.W_1(H))))


class Block(nn.Module):
    """Pre-norm block (Equation 12): H' = H + MHA(LN(H)); H_out = H' + FFN(LN(H'))."""

    def __init__(
        self, config: GPTConfig, attention: AttentionFn | None = None, mask: MaskFn | None = None
    ):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = MultiHeadAttention(config, attention, mask)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config)

    def forward(
        self, H: torch.Tensor, *, cache: LayerCache | None = None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        attended, A = self.attn(self.ln1(H), cache=cache, need_weights=need_weights)
        H = H + attended
        H = H + self.ffn(self.ln2(H))
        return H, A


class MiniGPT(nn.Module):
    """Decoder-only transformer (Equation 14): embeddings, n_layers blocks, LN, W_o."""

    block_type: type[Block] = Block  # the ablation ladder's variants build other blocks

    def __init__(
        self,
        config: GPTConfig = GPTConfig(),
        *,
        attention: AttentionFn | None = None,
        mask: MaskFn | None = None,
        embed: Callable[..., torch.Tensor] | None = None,
    ):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.T_max, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            self.block_type(config, attention, mask) for _ in range(config.n_layers)
        )
        self.ln_f = nn.LayerNorm(config.d_model)
        self.W_o = nn.Linear(config.d_model, config.vocab_size)  # untied from tok_emb
        self.embed = embed
        self.apply(self._init_weights)
        # GPT-2's choice: shrink the layers that write into the residual stream, so the stream's
        # variance does not grow with depth at initialization.
        for name, p in self.named_parameters():
            if name.endswith(("proj.weight", "W_2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # Small weights keep the untrained logits near zero, so the first loss is close to ln 65.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def use_attention(self, attention: AttentionFn | None) -> MiniGPT:
        """Run every layer on `attention(Q, K, V, allowed) -> (V_bar, A)`; None restores ours."""
        for block in self.blocks:
            block.attn.attention = attention
        return self

    def use_mask(self, mask: MaskFn | None) -> MiniGPT:
        """Build every layer's mask with `mask(T) -> bool (T, T)`; None restores ours."""
        for block in self.blocks:
            block.attn.mask = mask
        return self

    def new_cache(self) -> list[LayerCache]:
        return [LayerCache() for _ in self.blocks]

    def forward(
        self,
        idx: torch.Tensor,
        *,
        cache: list[LayerCache] | None = None,
        return_attention: bool = False,
    ):
        """idx: (B, T) token ids -> logits (B, T, vocab_size).

        With return_attention=True, also returns A stacked as (n_layers, B, n_heads, T, T_k).
        With a cache, idx holds only the new tokens and the cache grows by T.
        """
        offset = 0 if cache is None else cache[0].length
        # The student's Equation 8 numbers positions from 0 and takes no offset: tokens decoded
        # after a cache's first call sit at offset.., so the reference embeds those.
        if self.embed is None or offset:
            H = embed_with_positions(idx, self.tok_emb, self.pos_emb, offset)
        else:
            H = self.embed(idx, self.tok_emb, self.pos_emb)  # the student's Equation 8
        H = self.drop(H)  # (B, T, d_model)
        attentions = []
        for layer, block in enumerate(self.blocks):
            layer_cache = None if cache is None else cache[layer]
            H, A = block(H, cache=layer_cache, need_weights=return_attention)
            attentions.append(A)
        logits = self.W_o(self.ln_f(H))  # (B, T, vocab_size)
        if return_attention:
            return logits, torch.stack(attentions)
        return logits


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
