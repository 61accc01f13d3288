"""The character LSTM of Lab 3: embedding 64, one LSTM layer of 256, a linear output layer."""

from __future__ import annotations

import torch
import torch.nn as nn

State = tuple[torch.Tensor, torch.Tensor]


class CharLSTM(nn.Module):
    """350,593 parameters at the lab's sizes. `step` carries the state from one call to the next."""

    def __init__(
        self,
        vocab_size: int = 65,
        d_embed: int = 64,
        d_hidden: int = 256,
        forget_gate_bias: float | None = None,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_embed)
        self.lstm = nn.LSTM(d_embed, d_hidden, num_layers=1, batch_first=True)
        self.W_o = nn.Linear(d_hidden, vocab_size)
        if forget_gate_bias is not None:
            # Lab 3's recipe. PyTorch orders the gates (input, forget, cell, output) and adds two
            # bias vectors, so the forget gate's total bias is split between them.
            with torch.no_grad():
                for bias in (self.lstm.bias_ih_l0, self.lstm.bias_hh_l0):
                    bias[d_hidden : 2 * d_hidden] = forget_gate_bias / 2

    def step(self, idx: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """idx: (B, T) -> logits (B, T, vocab_size) and the state after the last position."""
        hidden, state = self.lstm(self.embed(idx), state)  # (B, T, d_hidden)
        return self.W_o(hidden), state

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits from a zero state, the same call shape as MiniGPT (used in training)."""
        return self.step(idx)[0]
