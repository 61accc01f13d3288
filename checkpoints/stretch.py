"""Checks of notebook 06, the optional challenge: your multi-head layer (Equation 7 and the
split) and your pre-norm block (Equation 12), compared with the package's own layers after
copying their weights into yours.

The block is graded with the package's attention layer in place of yours, so that a mistake in
Challenge A does not count twice; `whole_model` then runs both of yours together.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_lab import model as _model

from ._core import (
    CheckFailed,
    Forbidden,
    call,
    change_at,
    close,
    expect_unchanged,
    forbid,
    judge,
    passed,
    same_in_eval,
    snapshot,
    unchanged,
)
from .codes import EX6A, EX6B, WHOLE, Codes
from .leak import measure_leak as _measure_leak

_Block = _model.Block
_GPTConfig = _model.GPTConfig
_MiniGPT = _model.MiniGPT
_MultiHeadAttention = _model.MultiHeadAttention
_embed_with_positions = _model.embed_with_positions
_linear = F.linear
_softmax = torch.softmax
_randn = torch.randn
_no_grad = torch.no_grad
_equal = torch.equal
_Tensor = torch.Tensor
_Module = nn.Module

forbid(
    EX6A,
    Forbidden(
        "the package's layer (tl.MultiHeadAttention)",
        "uses_package_layer",
        "Write the split, the attention call and the merge yourself, as in the table above the "
        "exercise; tl.scaled_dot_product_attention and tl.causal_mask may do the attention.",
        (_MultiHeadAttention.forward,),
    ),
    Forbidden(
        "PyTorch's nn.MultiheadAttention",
        "uses_nn_multihead_attention",
        "Use your layer's own W_Q, W_K, W_V and proj: split into heads, attend with "
        "tl.scaled_dot_product_attention and tl.causal_mask, merge, project.",
        (nn.MultiheadAttention.forward, F.multi_head_attention_forward),
        ("multi_head_attention",),
    ),
)
forbid(
    EX6B,
    Forbidden(
        "the package's block (tl.Block)",
        "uses_package_block",
        "Write Equation 12 with your block's own layers: H = H + attention output of "
        "self.ln1(H); H = H + self.ffn(self.ln2(H)).",
        (_Block.forward,),
    ),
)


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _inputs(seed: int, B: int, T: int, d_model: int, scale: float = 1.0, shift: float = 0.0):
    g = torch.Generator().manual_seed(seed)
    return scale * _randn(B, T, d_model, generator=g) + shift


def _construct(exercise: Codes, cls, config):
    try:
        module = call(exercise, cls, config)
    except CheckFailed as failure:
        if (
            exercise.name == EX6B.name
            and "NameError" in failure.message
            and "MyMultiHeadAttention" in failure.message
        ):
            raise CheckFailed(
                f"{exercise}: MyBlock could not be built because MyMultiHeadAttention is not "
                "defined: run the cell of Challenge A first (it may still be unfinished).",
                exercise.code("attention_cell_not_run"),
            ) from None
        raise
    if not isinstance(module, _Module):
        raise CheckFailed(
            f"{exercise}: {cls.__name__}(config) should build an nn.Module.",
            exercise.code("not_a_module"),
        )
    return module


def _load(exercise: Codes, mine: nn.Module, ref: nn.Module) -> None:
    """Same parameter count and names as the package's layer; then copy its weights into yours."""
    if _count(mine) != _count(ref):
        raise CheckFailed(
            f"{exercise}: your layer holds {_count(mine):,} parameters, the package's "
            f"{_count(ref):,}. Keep __init__ as it was given: only forward is yours to write.",
            exercise.code("wrong_param_count"),
        )
    try:
        mine.load_state_dict(ref.state_dict())
    except RuntimeError as err:
        raise CheckFailed(
            f"{exercise}: the package's weights do not fit your layer by name ({err}). Keep "
            "__init__ as it was given, so that the check can copy W_Q, W_K, W_V, proj, ln1, "
            "ln2 and ffn into it.",
            exercise.code("wrong_param_names"),
        ) from None


# ---------------------------------------------------------------------------------------------
# Challenge A: the multi-head layer


def _causal(T: int) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool).tril()


def _mha_variant(
    ref, H, *, split="heads", merge="heads", masked=True, scale="d_k", project=True, inverted=None
) -> torch.Tensor:
    """The layer's output computed our way, with one step done right or in a known wrong way."""
    B, T, d_model = H.shape
    h, d_k = ref.n_heads, ref.d_k

    def cut(X):
        if split == "heads":  # the lecture's split: (B, T, h, d_k) -> (B, h, T, d_k)
            return X.view(B, T, h, d_k).transpose(1, 2)
        if split == "view":  # the wrong one: the T and h axes read straight from memory
            return X.reshape(B, h, T, d_k)
        return X.reshape(B, T, d_k, h).permute(0, 3, 1, 2)  # "interleaved" columns

    with _no_grad():
        Q, K, V = (cut(_linear(H, W.weight)) for W in (ref.W_Q, ref.W_K, ref.W_V))
        divisor = {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d_model), "none": 1.0}[scale]
        scores = Q @ K.transpose(-2, -1) / divisor
        if masked:  # inverted: PyTorch's nn.MultiheadAttention convention, True = masked out
            keep = ~_causal(T) if inverted else _causal(T)
            scores = scores.masked_fill(~keep, float("-inf"))
        A = _softmax(scores, dim=-1)
        if inverted == "zero":  # the last query has no key: empty_row="zero" gives it no weight
            A = A.nan_to_num(0.0)
        V_bar = A @ V  # (B, h, T, d_k)
        if merge == "heads":
            merged = V_bar.transpose(1, 2).reshape(B, T, d_model)
        elif merge == "no_transpose":
            merged = V_bar.reshape(B, T, d_model)
        else:  # the inverse of the interleaved cut
            merged = V_bar.permute(0, 2, 3, 1).reshape(B, T, d_model)
        if not project:
            return merged
        return _linear(merged, ref.proj.weight, ref.proj.bias)


def _mha_mistakes(ref, H) -> dict[str, tuple[str, torch.Tensor]]:
    cut_wrong = (
        "the heads are cut wrongly: .view(B, n_heads, T, d_k) reads the memory of the (B, T, "
        "d_model) tensor in the wrong order, so each 'head' mixes positions. Cut the last axis: "
        ".view(B, T, n_heads, d_k), then .transpose(1, 2) to bring the heads forward"
    )
    return {
        "wrong_split_and_merge": (
            cut_wrong,
            _mha_variant(ref, H, split="view", merge="no_transpose"),
        ),
        "wrong_split": (
            cut_wrong + " (and transpose back after the attention)",
            _mha_variant(ref, H, split="view"),
        ),
        "merge_without_transpose": (
            "the heads are put back together without transposing: V_bar is (B, n_heads, T, d_k); "
            ".transpose(1, 2) to (B, T, n_heads, d_k) before .reshape(B, T, d_model), or the "
            "reshape mixes positions and heads",
            _mha_variant(ref, H, merge="no_transpose"),
        ),
        "no_causal_mask": (
            "the output reads the future: there is no causal mask. Pass allowed = "
            "tl.causal_mask(T) (True where query t may read key i <= t) to the attention",
            _mha_variant(ref, H, masked=False),
        ),
        "scaled_by_d_model": (
            "the scores are divided by sqrt(d_model): each head compares vectors of width d_k = "
            "d_model / n_heads, so divide by sqrt(d_k) (Equation 3)",
            _mha_variant(ref, H, scale="d_model"),
        ),
        "no_sqrt_dk": (
            "the scores are not divided by sqrt(d_k) (Equation 3)",
            _mha_variant(ref, H, scale="none"),
        ),
        "interleaved_heads": (
            "the heads take interleaved columns (a view of (B, T, d_k, n_heads)): your head r, "
            "numbered from 1, reads the columns r, r + n_heads, r + 2 n_heads, ... (numbered "
            "from 1 as well), while in Equation 7 head r owns the d_k consecutive columns "
            "(r-1) d_k + 1 .. r d_k. Use .view(B, T, n_heads, d_k)",
            _mha_variant(ref, H, split="interleaved", merge="interleaved"),
        ),
        "mask_inverted": (
            "the mask is inverted: you passed PyTorch's nn.MultiheadAttention convention (True "
            "= masked out, the strict upper triangle), so each query reads only the future and "
            "the last has nothing to read. Here `allowed` is True where a query MAY read: pass "
            "tl.causal_mask(T) as it is",
            (_mha_variant(ref, H, inverted="nan"), _mha_variant(ref, H, inverted="zero")),
        ),
        "no_proj": (
            "W_proj is missing: after concatenating the heads, mix them with self.proj "
            "(Equation 7)",
            _mha_variant(ref, H, project=False),
        ),
    }


def _layer_leak(exercise: Codes, mine, H, out, t0: int) -> float:
    """How far your outputs before t0 move when only the input at t0 changes."""

    def run(H):
        with _no_grad():
            moved = call(exercise, mine, H)
        moved = moved[0] if isinstance(moved, tuple) else moved
        return moved if type(moved) is _Tensor and moved.shape == out.shape else None

    def plus_one(changed):
        changed[:, t0] = changed[:, t0] + 1.0

    return change_at(run, H, t0, plus_one, before=out)[1]


def _mha_result(result, B: int, T: int, config, exercise: Codes):
    """(output, A) from the student's result, or a failure naming what is wrong with its form."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise CheckFailed(
            f"{exercise}: forward should return the pair (output, A) like the package's "
            f"layer, got {type(result).__name__}.",
            exercise.code("not_a_pair"),
        )
    out, A = result
    d_model = config.d_model
    if type(out) is not _Tensor or tuple(out.shape) != (B, T, d_model):
        got = tuple(out.shape) if type(out) is _Tensor else type(out).__name__
        raise CheckFailed(
            f"{exercise}: the output should be a tensor of shape (B, T, d_model) = "
            f"{(B, T, d_model)}, got {got}.",
            exercise.code("wrong_shape"),
        )
    return out, A


def _check_weights(exercise: Codes, A, ref_A, B: int, h: int, T: int) -> None:
    if type(A) is _Tensor and tuple(A.shape) == (B, T, T) and close(A, ref_A.mean(1)):
        raise CheckFailed(
            f"{exercise}: the output is right, but A is averaged over the heads (as "
            "nn.MultiheadAttention does by default): return every head's weights, shape "
            f"(B, n_heads, T, T) = {(B, h, T, T)}.",
            exercise.code("weights_averaged_over_heads"),
        )
    if type(A) is not _Tensor or tuple(A.shape) != (B, h, T, T):
        got = tuple(A.shape) if type(A) is _Tensor else type(A).__name__
        raise CheckFailed(
            f"{exercise}: the output is right, but the second value should be A, the weights "
            f"of every head, shape (B, n_heads, T, T) = {(B, h, T, T)} (got {got}).",
            exercise.code("wrong_weights_shape"),
        )
    if not close(A, ref_A):
        raise CheckFailed(
            f"{exercise}: the output is right but A is not the weights your heads used "
            "(softmax of the masked, scaled scores, one (T, T) matrix per head).",
            exercise.code("wrong_weights"),
        )


def _case(config, B: int, T: int) -> str:
    """A case's name, from the sizes it runs at."""
    heads = f"{config.n_heads} head" + ("s" if config.n_heads != 1 else "")
    return f"d_model {config.d_model}, {heads}, B {B}, T {T}"


def _check_mha(cls, config, B: int, T: int, seed: int, dropout_check=False) -> None:
    case = _case(config, B, T)
    exercise = EX6A.at(case)
    torch.manual_seed(seed)
    ref = _MultiHeadAttention(config).eval()
    mine = _construct(EX6A, cls, config)
    _load(EX6A, mine, ref)
    mine.eval()
    H = _inputs(seed + 100, B, T, config.d_model)
    before = snapshot(H)
    with _no_grad():
        result = call(EX6A, mine, H)
        ref_out, ref_A = ref(H, need_weights=True)
    expect_unchanged(exercise, before, (H,), "forward changed its input H in place.")
    out, A = _mha_result(result, B, T, config, exercise)
    with _no_grad():
        same_in_eval(exercise, mine, out, call(EX6A, mine, H))

    def reads_future_or_differs(gap: float) -> CheckFailed | str:
        leak = _layer_leak(EX6A, mine, H, out, T // 2) if T > 1 else 0.0
        if leak != 0.0:
            return CheckFailed(
                f"{exercise}: changing the input at position {T // 2} moved earlier outputs by "
                f"up to {leak:.3g}: your layer reads the future. Check the causal mask (True = "
                "may read, applied to the scores before the softmax).",
                EX6A.code("reads_the_future"),
            )
        return (
            f"the output differs from the package's layer by up to {gap:.3g}. Follow the "
            "lecture's split: W_Q, W_K, W_V on H; .view(B, T, n_heads, d_k).transpose(1, 2); "
            "attention with the causal mask; .transpose(1, 2).reshape(B, T, d_model); then "
            "self.proj and self.drop."
        )

    judge(
        exercise,
        out,
        ref_out,
        lambda: _mha_mistakes(ref, H),
        nan_hint="A query row with no allowed key gives NaN: check the mask's direction.",
        otherwise=reads_future_or_differs,
    )
    _check_weights(exercise, A, ref_A, B, config.n_heads, T)
    leak = _layer_leak(EX6A, mine, H, out, T // 2) if T > 1 else 0.0
    if leak != 0.0:
        raise CheckFailed(
            f"{exercise}: changing the input at position {T // 2} moved earlier outputs by up "
            f"to {leak:.3g}; they must not move at all.",
            EX6A.code("reads_the_future"),
        )
    if dropout_check:
        _check_dropout(mine, H, out, case)


def _check_dropout(mine, H, eval_out, case: str) -> None:
    mine.train()
    try:
        torch.manual_seed(0)
        with _no_grad():
            result = call(EX6A, mine, H)
    finally:
        mine.eval()
    train_out = result[0] if isinstance(result, tuple) else result
    if type(train_out) is _Tensor and _equal(train_out, eval_out):
        raise CheckFailed(
            f"{EX6A} ({case}): in training mode your layer gives exactly its evaluation-mode "
            "output, so self.drop is never applied. The package applies it to the output of "
            "self.proj.",
            EX6A.code("no_dropout"),
        )


def challenge_a(MyMultiHeadAttention) -> None:
    config = _GPTConfig()
    _check_mha(MyMultiHeadAttention, config, 3, 10, 0, True)
    _check_mha(MyMultiHeadAttention, config, 2, 33, 1)
    passed(
        EX6A,
        f"{EX6A}: same parameters as the package's layer "
        f"({_count(_MultiHeadAttention(config)):,}), same output and weights A with its weights "
        "copied in, and no output moves when a later input changes.",
    )


def _further(cases) -> str:
    """What the further cases of (config, B, T, seed) vary, for their ✅ line."""
    heads = ", ".join(str(n) for n in sorted({config.n_heads for config, *_ in cases}))
    sizes = [T for _, _, T, _ in cases]
    return f"n_heads {heads}, T from {min(sizes)} to {max(sizes)}, other seeds"


# ---------------------------------------------------------------------------------------------
# Challenge B: the block


def _randomize_norms(block, seed: int) -> None:
    """LayerNorms start as the identity map; give them distinct gains and biases, so that a
    LayerNorm in the wrong place, or the wrong one, changes the output."""
    g = torch.Generator().manual_seed(seed)
    with _no_grad():
        for ln in (block.ln1, block.ln2):
            ln.weight.copy_(1.0 + 0.3 * _randn(ln.weight.shape, generator=g))
            ln.bias.copy_(0.3 * _randn(ln.bias.shape, generator=g))


def _attention_of(block):
    """The block's attention layer as a function of its input, its output only."""
    return lambda X: block.attn(X)[0]


def _block_mistakes(ref, H) -> dict[str, tuple[str, torch.Tensor]]:
    ln1, ln2, ffn, mha = ref.ln1, ref.ln2, ref.ffn, _attention_of(ref)
    with _no_grad():
        pre = H + mha(ln1(H))  # the right H'
        post = ln1(H + mha(H))
        no_attn_res = mha(ln1(H))
        out = {
            "post_norm": (
                "this is post-norm (Equation 13): LayerNorm after each addition. The lab's block "
                "is pre-norm (Equation 12): each sublayer reads LN of the stream, and its output "
                "is added to the stream itself, which is never normalized",
                ln2(post + ffn(post)),
            ),
            "no_attn_residual": (
                "the residual around attention is missing: H' = H + MHA(LN1(H)), the input H must "
                "be added back",
                no_attn_res + ffn(ln2(no_attn_res)),
            ),
            "no_ffn_residual": (
                "the residual around the feed-forward layer is missing: H_out = H' + FFN(LN2(H'))",
                ffn(ln2(pre)),
            ),
            "no_residuals": (
                "both residuals are missing: each sublayer's output is added to its input (H' = "
                "H + ..., H_out = H' + ...)",
                ffn(ln2(no_attn_res)),
            ),
        }
    return {**out, **_norm_mistakes(ref, H)}


def _norm_mistakes(ref, H) -> dict[str, tuple[str, torch.Tensor]]:
    """LayerNorms in the wrong place, on the wrong tensor, or missing."""
    ln1, ln2, ffn, mha = ref.ln1, ref.ln2, ref.ffn, _attention_of(ref)
    with _no_grad():
        pre = H + mha(ln1(H))  # the right H'
        normed = ln1(H)
        normed_res = normed + mha(normed)
        return {
            "normed_stream": (
                "LayerNorm is applied to the wrong tensor: you normalize the stream itself "
                "(H = LN(H), then H + sublayer(H)). Keep H as it is and feed LN(H) only to the "
                "sublayer: H' = H + MHA(LN1(H))",
                ln2(normed_res) + ffn(ln2(normed_res)),
            ),
            "normed_stream_attn": (
                "LayerNorm is applied to the wrong tensor: before attention you normalize the "
                "stream itself (H = LN1(H), then H + MHA(H)). Feed LN1(H) only to the sublayer "
                "and add its output to the unnormalized H",
                normed_res + ffn(ln2(normed_res)),
            ),
            "normed_stream_ffn": (
                "LayerNorm is applied to the wrong tensor: before the feed-forward layer you "
                "normalize the stream itself (H' = LN2(H'), then H' + FFN(H')). Feed LN2(H') only "
                "to the sublayer",
                ln2(pre) + ffn(ln2(pre)),
            ),
            "norm_after_sublayer": (
                "LayerNorm is applied to the wrong tensor: it normalizes the sublayer's output "
                "(H + LN(MHA(H))). In Equation 12 it normalizes the sublayer's input",
                (H + ln1(mha(H))) + ln2(ffn(H + ln1(mha(H)))),
            ),
            "swapped_norms": (
                "the two LayerNorms are swapped: ln1 goes before attention, ln2 before the "
                "feed-forward layer (each has its own gain and bias)",
                (H + mha(ln2(H))) + ffn(ln1(H + mha(ln2(H)))),
            ),
            "ffn_reads_input": (
                "LayerNorm is applied to the wrong tensor: the feed-forward layer reads LN2 of the "
                "block's input H, not of H' = H + MHA(LN1(H)), the stream after attention",
                pre + ffn(ln2(H)),
            ),
            "ffn_residual_adds_input": (
                "the second residual adds the block's input H instead of H': the attention output "
                "is lost. H_out = H' + FFN(LN2(H'))",
                H + ffn(ln2(pre)),
            ),
            "no_ln2": (
                "the feed-forward layer reads H' without LayerNorm: H_out = H' + FFN(LN2(H'))",
                pre + ffn(pre),
            ),
            "no_ln1": (
                "attention reads H without LayerNorm: H' = H + MHA(LN1(H))",
                (H + mha(H)) + ffn(ln2(H + mha(H))),
            ),
        }


class _Stack(nn.Module):
    """Equation 14 around a list of blocks: a MiniGPT's embeddings, final LN and W_o."""

    def __init__(self, gpt, blocks):
        super().__init__()
        self.config = gpt.config
        self.gpt = gpt
        self.my_blocks = nn.ModuleList(blocks)

    def forward(self, idx):
        H = _embed_with_positions(idx, self.gpt.tok_emb, self.gpt.pos_emb)
        for block in self.my_blocks:
            H = block(H)
            if isinstance(H, tuple):
                H = H[0]
        return self.gpt.W_o(self.gpt.ln_f(H))


def _blocks_for(exercise: Codes, cls, gpt) -> list:
    """One of the student's blocks per block of `gpt`, on the package's attention layer, with
    `gpt`'s weights."""
    blocks = []
    for theirs in gpt.blocks:
        mine = _construct(exercise, cls, gpt.config)
        mine.attn = _MultiHeadAttention(gpt.config)
        _load(exercise, mine, theirs)
        blocks.append(mine.eval())
    return blocks


def _check_block(cls, config, B: int, T: int, seed: int) -> None:
    exercise = EX6B.at(_case(config, B, T))
    torch.manual_seed(seed)
    ref = _Block(config).eval()
    _randomize_norms(ref, seed)
    mine = _construct(EX6B, cls, config)
    if _count(mine) != _count(ref):
        _load(EX6B, mine, ref)  # raises with the two counts
    mine.attn = _MultiHeadAttention(config)  # grade the block alone, on the package's attention
    _load(EX6B, mine, ref)
    mine.eval()
    H = _inputs(seed + 100, B, T, config.d_model, scale=2.0, shift=0.5)
    before = snapshot(H)
    with _no_grad():
        out = call(EX6B, mine, H)
        ref_out, _ = ref(H)
    if not unchanged(before, (H,)):
        raise CheckFailed(
            f"{exercise}: forward changed its input H in place (`H += ...`). Write "
            "H = H + ... instead: the caller may still need the block's input.",
            EX6B.code("modified_input"),
        )
    if isinstance(out, tuple):
        raise CheckFailed(
            f"{exercise}: forward should return the new H only, a tensor (B, T, d_model); "
            "you returned a tuple. Unpack the attention layer's (output, A) inside the block.",
            EX6B.code("returns_tuple"),
        )
    if type(out) is not _Tensor or tuple(out.shape) != (B, T, config.d_model):
        got = tuple(out.shape) if type(out) is _Tensor else type(out).__name__
        raise CheckFailed(
            f"{exercise}: forward should return a tensor of shape (B, T, d_model) = "
            f"{(B, T, config.d_model)}, got {got}.",
            EX6B.code("wrong_shape"),
        )
    with _no_grad():
        same_in_eval(exercise, mine, out, call(EX6B, mine, H))

    def mixes_positions_or_differs(gap: float) -> str:
        _block_leak_test(cls, config, seed)
        return (
            f"the output differs from the package's Block by up to {gap:.3g}. Equation 12, in "
            "two lines: H = H + attention output of self.ln1(H); H = H + self.ffn(self.ln2(H))."
        )

    judge(
        exercise,
        out,
        ref_out,
        lambda: _block_mistakes(ref, H),
        nan_hint="Look for a division by zero or a log in the block.",
        otherwise=mixes_positions_or_differs,
    )


def _block_leak_test(cls, config, seed: int) -> None:
    small = _GPTConfig(d_model=config.d_model, n_heads=config.n_heads, n_layers=2, T_max=32)
    torch.manual_seed(seed)
    gpt = _MiniGPT(small).eval()
    stack = _Stack(gpt, _blocks_for(EX6B, cls, gpt)).eval()
    try:
        _measure_leak(stack, "a stack of two of your blocks", None)
    except CheckFailed as failure:
        raise CheckFailed(
            f"{EX6B}: {failure.message} In a block only attention may mix positions: LayerNorm "
            "acts on each position's vector alone (the last axis), and so does the feed-forward "
            "layer.",
            EX6B.code("reads_the_future"),
        ) from None


def challenge_b(MyBlock) -> None:
    config = _GPTConfig()
    _check_block(MyBlock, config, 3, 10, 0)
    _check_block(MyBlock, config, 2, 24, 1)
    _block_leak_test(MyBlock, config, 2)
    passed(
        EX6B,
        f"{EX6B}: same parameters as the package's Block ({_count(_Block(config)):,}), same "
        "output with its weights copied in (run here on the package's attention layer), and a "
        "stack of your blocks passes the leak test.",
    )


# ---------------------------------------------------------------------------------------------
# Both together (not graded)


def whole_model(my_model, gpt) -> None:
    """Your blocks, with your attention layer inside, in place of the model's: same logits,
    and no leak."""
    g = torch.Generator().manual_seed(0)
    device = next(gpt.parameters()).device
    idx = torch.randint(0, gpt.config.vocab_size, (2, gpt.config.T_max), generator=g).to(device)
    my_model.eval()
    gpt.eval()
    with _no_grad():
        theirs = gpt(idx)
        mine = call(WHOLE, my_model, idx)
    if type(mine) is not _Tensor or mine.shape != theirs.shape:
        raise CheckFailed(
            f"Your model should return logits of shape {tuple(theirs.shape)}: check that MyBlock "
            "returns the new H only.",
            WHOLE.code("wrong_logits_shape"),
        )
    gap = (mine.double() - theirs.double()).abs().max().item()
    if not close(mine, theirs, atol=1e-4, rtol=1e-4):
        raise CheckFailed(
            f"With your blocks the logits differ from the model's by up to {gap:.3g}: one of the "
            "two challenges above does not pass yet; run their checks first.",
            WHOLE.code("logits_differ"),
        )
    _measure_leak(my_model, "the model built from your blocks", None)
    passed(
        WHOLE,
        f"The model built from your blocks and your attention layers gives the same logits as "
        f"the package's (largest difference {gap:.1e}) and passes the leak test.",
    )
