"""Bug zoo of notebook 02 (causal mask): Exercise 2, causal_mask. A right answer gets three ✅:
the visible checks, the leak test and the hidden tests."""

from maintainer.zoo import Mistake, Right
from transformer_lab.catalogue import BY_NAME

EX2 = BY_NAME["ex2"]

MISTAKES = {
    # The leak test comes first: a mask that reads the future fails by what it does.
    "upper triangle with the diagonal": Mistake(
        EX2,
        "return torch.ones(T, T, dtype=torch.bool).triu()",
        "ex2.mask_inverted",
        ("Leak test of your mask", "moved the outputs at earlier positions 0 to 6", "inverted"),
    ),
    "negation of the right mask": Mistake(
        EX2, "return ~torch.ones(T, T, dtype=torch.bool).tril()", "ex2.mask_negated", "inverted"
    ),
    "comparison the wrong way round": Mistake(
        EX2, "i = torch.arange(T)\nreturn i[None, :] >= i[:, None]", "ex2.mask_inverted", "inverted"
    ),
    "diagonal excluded with tril(-1)": Mistake(
        EX2,
        "return torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)",
        "ex2.diagonal_excluded",
        "diagonal is excluded",
    ),
    "diagonal excluded with a strict comparison": Mistake(
        EX2,
        "i = torch.arange(T)\nreturn i[None, :] < i[:, None]",
        "ex2.diagonal_excluded",
        "diagonal is excluded",
    ),
    "float 0/1 mask": Mistake(
        EX2, "return torch.ones(T, T).tril()", "ex2.wrong_dtype", "return dtype torch.bool"
    ),
    "int 0/1 mask": Mistake(
        EX2,
        "return torch.ones(T, T, dtype=torch.long).tril()",
        "ex2.wrong_dtype",
        "return dtype torch.bool",
    ),
    "additive mask M with -inf": Mistake(
        EX2,
        'return torch.full((T, T), float("-inf")).triu(1)',
        "ex2.additive_mask",
        "additive mask M",
    ),
    "additive mask M with -1e9": Mistake(
        EX2, "return torch.full((T, T), -1e9).triu(1)", "ex2.additive_mask", "additive mask M"
    ),
    "float mask, inverted": Mistake(
        EX2, "return torch.ones(T, T).triu()", "ex2.wrong_dtype", "inverted"
    ),
    "fixed size T_max": Mistake(
        EX2,
        "return torch.ones(128, 128, dtype=torch.bool).tril()",
        "ex2.fixed_size",
        "not from a fixed size",
    ),
    "extra leading dimensions": Mistake(
        EX2,
        "return torch.ones(T, T, dtype=torch.bool).tril()[None, None]",
        "ex2.extra_leading_dims",
        "extra leading dimensions",
    ),
    "one row only": Mistake(
        EX2, "return torch.arange(T) <= T - 1", "ex2.wrong_shape", "should have shape"
    ),
    "nested lists": Mistake(
        EX2,
        "return [[i <= t for i in range(T)] for t in range(T)]",
        "ex2.not_a_tensor",
        "should be a torch.Tensor",
    ),
    "cached constant": Mistake(
        EX2,
        """
        full = getattr(causal_mask, "full", None)
        if full is None:
            full = causal_mask.full = torch.ones(512, 512, dtype=torch.bool).tril()
        return full[:T, :T]
        """,
        "ex2.cached_constant",
        "cached constant",
    ),
    "remembers the first T": Mistake(
        EX2,
        """
        if not hasattr(causal_mask, "first"):
            causal_mask.first = torch.ones(T, T, dtype=torch.bool).tril()
        return causal_mask.first.clone()
        """,
        "ex2.fixed_size",
        "Build it from the argument T",
    ),
    # The slips of a first-time PyTorch user.
    "torch.tril of the int T": Mistake(
        EX2, "return torch.tril(T).bool()", "ex2.number_not_tensor", "torch.ones(T, T"
    ),
    ".T to make a column of a 1-d tensor": Mistake(
        EX2,
        "i = torch.arange(T)\nreturn i[None, :] <= i.T",
        "ex2.transpose_all_axes",
        "[:, None]",
    ),
    "one key past the diagonal": Mistake(
        EX2,
        "return torch.ones(T, T, dtype=torch.bool).tril(1)",
        "ex2.leak_above_diagonal",
        ("Leak test of your mask", "changing position 5", "earlier position 4"),
    ),
    "a band that forgets the first keys": Mistake(
        EX2,
        "ones = torch.ones(T, T, dtype=torch.bool)\nreturn ones.tril() & ~ones.tril(-3)",
        "ex2.wrong_entries",
        "entries are wrong",
    ),
}

RIGHT = {
    "tril of bool ones": Right(EX2, "return torch.tril(torch.ones(T, T, dtype=torch.bool))"),
    "comparison of aranges": Right(
        EX2, "t = torch.arange(T)[:, None]\nreturn torch.arange(T)[None, :] <= t"
    ),
    "ones().tril().bool()": Right(EX2, "return torch.ones(T, T).tril().bool()"),
    ".T of a 2-d row": Right(EX2, "i = torch.arange(T)[None, :]\nreturn i <= i.T"),
    "negated strict upper triangle": Right(
        EX2, "return ~torch.ones(T, T, dtype=torch.bool).triu(1)"
    ),
    "cached and cloned": Right(
        EX2,
        """
        full = getattr(causal_mask, "full", None)
        if full is None:
            full = causal_mask.full = torch.ones(512, 512, dtype=torch.bool).tril()
        return full[:T, :T].clone()
        """,
    ),
}

EXERCISES = (EX2,)
