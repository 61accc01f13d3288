"""Bug zoo of notebook 03 (positions): Exercise 3, embed_with_positions. Also the sinusoidal
positions students bring from the Annotated Transformer."""

from maintainer.zoo import Mistake, Right
from transformer_lab.catalogue import BY_NAME

EX3 = BY_NAME["ex3"]

MISTAKES = {
    "positions concatenated": Mistake(
        EX3,
        """
        B, T = idx.shape
        positions = pos_emb(torch.arange(T)).expand(B, T, -1)
        return torch.cat([tok_emb(idx), positions], dim=-1)
        """,
        "ex3.positions_concatenated",
        "concatenated",
    ),
    "position table indexed by token id": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb(idx)",
        "ex3.positions_indexed_by_token",
        "indexed by the token ids",
    ),
    "off by one": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb(torch.arange(1, idx.shape[1] + 1))",
        "ex3.positions_off_by_one",
        "off by one",
    ),
    "positions left out": Mistake(
        EX3, "return tok_emb(idx)", "ex3.positions_not_added", "positions are left out"
    ),
    "tokens left out": Mistake(
        EX3,
        "return pos_emb(torch.arange(idx.shape[1])).expand(*idx.shape, -1)",
        "ex3.tokens_not_added",
        "token embeddings are left out",
    ),
    "positions over the batch axis": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[0]))",
        "ex3.positions_wrong_length",
        "idx.shape[0] is the batch size",
    ),
    "the whole position table": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb.weight",
        "ex3.positions_wrong_length",
        "not the whole table",
    ),
    "one position for all": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb(torch.zeros_like(idx))",
        "ex3.same_position_everywhere",
        "every position gets p_0",
    ),
    "scaled by sqrt(d_model)": Mistake(
        EX3,
        "d_model = tok_emb.embedding_dim\n"
        "return tok_emb(idx) * d_model**0.5 + pos_emb(torch.arange(idx.shape[1]))",
        "ex3.scaled_by_sqrt_d_model",
        "sqrt(d_model)",
    ),
    "position table detached": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb.weight[: idx.shape[1]].detach()",
        "ex3.position_table_detached",
        "no gradient reaches the position table",
    ),
    "no gradient at all": Mistake(
        EX3,
        """
        with torch.no_grad():
            return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1]))
        """,
        "ex3.no_gradient",
        "carries no gradient",
    ),
    "returns a list": Mistake(
        EX3,
        "return [tok_emb(idx) + pos_emb(torch.arange(idx.shape[1]))]",
        "ex3.not_a_tensor",
        "should be a torch.Tensor",
    ),
    # A GPU session's slip (the check simulates the GPU on the CPU).
    "positions made on the CPU": Mistake(
        EX3,
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1]))",
        "ex3.device_mismatch",
        ("mixes tensors of two devices", "torch.arange(T, device=idx.device)"),
    ),
    # One case for each code the cases above do not reach.
    "Ex3: positions counted twice": Mistake(
        EX3,
        "return tok_emb(idx) + 2 * pos_emb(torch.arange(idx.shape[1]))",
        "ex3.wrong_values",
    ),
    "Ex3: the token table detached": Mistake(
        EX3,
        "return tok_emb(idx).detach() + pos_emb(torch.arange(idx.shape[1]))",
        "ex3.token_table_detached",
    ),
    # The leak test on the model comes first: an input step that mixes positions fails it.
    "Ex3: the mean of the window added to every position": Mistake(
        EX3,
        """
        h = tok_emb(idx) + pos_emb(torch.arange(idx.shape[1], device=idx.device))
        return h + h.mean(dim=1, keepdim=True)
        """,
        "ex3.reads_the_future",
        ("Leak test on the model built on your input step", "earlier positions 0 to 15"),
    ),
    # Mistakes students bring from other courses.
    "Ex3: sinusoidal positions (the Annotated Transformer's)": Mistake(
        EX3,
        "import math\nT, d = idx.shape[1], tok_emb.embedding_dim\n"
        "pos = torch.arange(T).unsqueeze(1)\n"
        "div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))\n"
        "pe = torch.zeros(T, d)\npe[:, 0::2] = torch.sin(pos * div)\n"
        "pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]\n"
        "return tok_emb(idx) + pe.to(tok_emb.weight.dtype)",
        "ex3.sinusoidal_positions",
    ),
}

RIGHT = {
    "broadcasting on the device of idx": Right(
        EX3, "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[-1], device=idx.device))"
    ),
    "explicit expand": Right(
        EX3,
        """
        B, T = idx.shape
        positions = torch.arange(T, device=idx.device)
        return tok_emb(idx) + pos_emb(positions).unsqueeze(0).expand(B, T, -1)
        """,
    ),
    "rows of the weight": Right(EX3, "return tok_emb(idx) + pos_emb.weight[: idx.shape[1]]"),
    "positions as a (1, T) batch": Right(
        EX3,
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1], device=idx.device)[None, :])",
    ),
}

EXERCISES = (EX3,)
