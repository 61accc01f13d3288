"""The corpus that grader/term/copies/'s bars are measured on, and the time for a class of
200.

    python -m maintainer.copy_corpus            FP/FN per exercise, then the 200-student time

Honest students: the bug zoo's right answers (maintainer/zoo/nb0*.py), the answers below, each
written on its own against the exercise's text, in several styles, answers that follow the
exercise's hint to the letter (HINTED), and answers typed from the lecture's listings, adapted to
the exercise's names (LECTURE). Copies: the course's solution, the package's reference and honest
classmates' answers, each renamed, reformatted (comments and docstrings gone), with independent
statements reordered, all three at once, padded with lines of the copier's own (a print, an
assert, a finiteness check), and renamed with a local constant inlined (`d_k` into its one use).
Every student hands in one notebook holding one answer; the class of one exercise is all of
them. An honest student flagged against a source they did not copy from (nor were copied from)
is a false positive; a copy not flagged against the source it came from is a false negative.
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import os
import platform
import random
import re
import tempfile
import textwrap
import time
from pathlib import Path
from typing import NamedTuple

import nbformat

from grader.course import Layout
from grader.term import copies
from grader.term.course_open import Course
from maintainer.fabricated_class import release
from maintainer.zoo import nb01, nb02, nb03, nb04, nb05, nb06
from transformer_lab import attention as tl_attention
from transformer_lab import model as tl_model
from transformer_lab.catalogue import EXERCISES, NOTEBOOKS

STUB = re.compile(r"^([ \t]*)# TODO: your code here\n[ \t]*raise NotImplementedError\(.*\)$", re.M)
NOTEBOOK_OF = {cell: exercise.notebook for exercise in EXERCISES for cell in exercise.cells}
# The body of the package's function that answers an exercise, under the exercise's names.
REFERENCE_OF = {
    "ex1_attention": (tl_attention.scaled_dot_product_attention, {"empty_row": "'error'"}),
    "ex2_causal_mask": (tl_attention.causal_mask, {}),
    "ex3_embed": (tl_model.embed_with_positions, {}),
    "ex6a_multi_head": (tl_model.MultiHeadAttention.forward, {}),
    "ex6b_block": (tl_model.Block.forward, {}),
}

HONEST = {
    "ex0_read_the_model": [
        """
attention = 4 * d_model * d_model + d_model
block = attention + feed_forward + 2 * layer_norm
total = vocab * d_model + T_max * d_model + n_layers * block + layer_norm
total += d_model * vocab + vocab
return total
""",
        """
per_layer = 0
per_layer += d_model * 3 * d_model          # W_Q, W_K, W_V, no bias
per_layer += d_model * d_model + d_model    # output projection
per_layer += feed_forward + layer_norm * 2
head = layer_norm + vocab * (d_model + 1)
return (vocab + T_max) * d_model + n_layers * per_layer + head
""",
        """
counts = {
    "tokens": vocab * d_model,
    "positions": T_max * d_model,
    "blocks": n_layers * (4 * d_model**2 + d_model + feed_forward + 2 * layer_norm),
    "final norm": layer_norm,
    "W_o": (d_model + 1) * vocab,
}
return sum(counts.values())
""",
    ],
    "ex1_attention": [
        """
scale = 1.0 / math.sqrt(K.size(-1))
logits = torch.matmul(Q, K.transpose(-1, -2)) * scale
if allowed is not None:
    logits = logits.masked_fill(allowed.logical_not(), -math.inf)
weights = logits.softmax(dim=-1)
return torch.matmul(weights, V), weights
""",
        """
scores = Q @ K.mT
scores = scores / Q.shape[-1] ** 0.5
if allowed is None:
    allowed = torch.ones_like(scores, dtype=torch.bool)
scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
A = torch.nn.functional.softmax(scores, dim=-1)
out = A @ V
return out, A
""",
        """
d = Q.shape[-1]
raw = torch.einsum("...td,...sd->...ts", Q, K)
raw = raw / d ** 0.5
if allowed is not None:
    raw[~allowed.expand_as(raw)] = float("-inf")
probs = torch.exp(raw - raw.max(dim=-1, keepdim=True).values)
probs = probs / probs.sum(dim=-1, keepdim=True)
return torch.einsum("...ts,...sd->...td", probs, V), probs
""",
        """
import torch.nn.functional as F
scores = torch.bmm(Q.flatten(0, -3), K.flatten(0, -3).transpose(1, 2)).view(
    *Q.shape[:-1], K.shape[-2]) / math.sqrt(Q.shape[-1])
if allowed is not None:
    scores = scores + torch.zeros_like(scores).masked_fill(~allowed, float("-inf"))
A = F.softmax(scores, -1)
return A @ V, A
""",
    ],
    "ex2_causal_mask": [
        "return torch.ones(T, T).tril() == 1",
        """
mask = torch.zeros((T, T), dtype=torch.bool)
for row in range(T):
    for col in range(row + 1):
        mask[row, col] = True
return mask
""",
        "rows = torch.arange(T).unsqueeze(1)\n"
        "cols = torch.arange(T).unsqueeze(0)\n"
        "return cols <= rows",
    ],
    "ex3_embed": [
        """
batch, length = idx.shape
pos = torch.arange(length, device=idx.device).expand(batch, length)
return tok_emb(idx) + pos_emb(pos)
""",
        """
token_vectors = tok_emb(idx)
position_ids = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
position_vectors = pos_emb(position_ids).unsqueeze(0)
return token_vectors + position_vectors
""",
        """
out = tok_emb(idx)
for t in range(idx.shape[1]):
    out[:, t] = out[:, t] + pos_emb.weight[t]
return out
""",
    ],
    "ex4_metrics": [
        """
B, T, vocab = logits.shape
loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, vocab), targets.reshape(B * T))
nats = float(loss)
return nats, float(torch.exp(loss)), nats / math.log(2.0)
""",
        """
probs = torch.softmax(logits, dim=-1)
p_true = torch.gather(probs, 2, targets[..., None]).squeeze(-1)
nats = (-torch.log(p_true)).mean().item()
perplexity = math.e ** nats
bits = math.log2(perplexity)
return nats, perplexity, bits
""",
        """
shifted = logits - logits.max(dim=-1, keepdim=True).values
log_z = shifted.exp().sum(-1).log()
picked = shifted.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
nll = (log_z - picked).mean().item()
return nll, math.exp(nll), nll * (1 / math.log(2))
""",
    ],
    "ex5_mean_distance": [
        """
T = A.size(-1)
t = torch.arange(T, device=A.device, dtype=A.dtype).view(T, 1)
i = torch.arange(T, device=A.device, dtype=A.dtype).view(1, T)
per_query = (A * (t - i)).sum(-1)
return per_query.mean(-1)
""",
        """
T = A.shape[-1]
dist = torch.tensor([[q - k for k in range(T)] for q in range(T)], dtype=A.dtype)
weighted = A * dist
return weighted.sum(dim=-1).sum(dim=-1) / T
""",
        """
n = A.shape[-1]
lags = torch.arange(n, dtype=A.dtype)
expected_key = A @ lags            # sum_i A[t, i] * i
distance = lags - expected_key     # t - sum_i A[t, i] * i, rows sum to one
return distance.mean(dim=-1)
""",
    ],
    "ex6a_multi_head": [
        """
batch, steps, width = H.shape
q = self.W_Q(H).reshape(batch, steps, self.n_heads, self.d_k).permute(0, 2, 1, 3)
k = self.W_K(H).reshape(batch, steps, self.n_heads, self.d_k).permute(0, 2, 1, 3)
v = self.W_V(H).reshape(batch, steps, self.n_heads, self.d_k).permute(0, 2, 1, 3)
mask = tl.causal_mask(steps, device=H.device)
heads, weights = tl.scaled_dot_product_attention(q, k, v, mask)
joined = heads.permute(0, 2, 1, 3).reshape(batch, steps, width)
return self.drop(self.proj(joined)), weights
""",
        """
B, T, C = H.shape
qkv = [lin(H).view(B, T, self.n_heads, -1).transpose(1, 2)
       for lin in (self.W_Q, self.W_K, self.W_V)]
att = (qkv[0] @ qkv[1].transpose(-2, -1)) * self.d_k ** -0.5
future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=H.device), 1)
att = att.masked_fill(future, float("-inf"))
att = torch.softmax(att, dim=-1)
y = (att @ qkv[2]).transpose(1, 2).contiguous().view(B, T, C)
y = self.proj(y)
return self.drop(y), att
""",
        """
B, T, d_model = H.shape
heads_out = []
heads_A = []
allowed = tl.causal_mask(T, device=H.device)
Q_all, K_all, V_all = self.W_Q(H), self.W_K(H), self.W_V(H)
for h in range(self.n_heads):
    lo, hi = h * self.d_k, (h + 1) * self.d_k
    out_h, A_h = tl.scaled_dot_product_attention(
        Q_all[:, :, lo:hi], K_all[:, :, lo:hi], V_all[:, :, lo:hi], allowed
    )
    heads_out.append(out_h)
    heads_A.append(A_h)
merged = torch.cat(heads_out, dim=-1)
return self.drop(self.proj(merged)), torch.stack(heads_A, dim=1)
""",
    ],
    "ex6b_block": [
        """
normed = self.ln1(H)
attn_out, _weights = self.attn(normed)
residual = H + attn_out
return residual + self.ffn(self.ln2(residual))
""",
        """
x = H
a, _ = self.attn(self.ln1(x))
x = x + a
f = self.ffn(self.ln2(x))
x = x + f
return x
""",
        """
out = H.clone()
for norm, layer in ((self.ln1, lambda X: self.attn(X)[0]), (self.ln2, self.ffn)):
    out = out + layer(norm(out))
return out
""",
    ],
    "ex4_prediction": [
        "I think the LSTM ends lower. It has fewer parameters to fit in so few steps and its "
        "recurrent state carries information across the whole test text, while the GPT only "
        "looks back 128 characters.",
        "My guess: the transformer wins. Attention lets every position look straight at every "
        "earlier character in the window, so it learns spelling and short-range structure "
        "faster than a recurrent net that has to pass everything through one hidden vector.",
        "They will probably be close, maybe a tie. The GPT has more than twice the weights but "
        "the budget is small, so neither gets near convergence; the LSTM's inductive bias for "
        "sequences may make up for its smaller size.",
        "GPT lower. Training is parallel over positions, so with the same number of steps it "
        "effectively sees more useful gradient signal per batch, and 128 characters of context "
        "is plenty for character-level Shakespeare.",
        "The LSTM, because at this budget a smaller model is easier to train well and the "
        "carried hidden state means at test time it is not cut off at a window boundary like "
        "the mini-GPT is.",
        "I predict the mini GPT reaches the lower loss since self attention handles long "
        "dependencies better than recurrence, which suffers from vanishing gradients over many "
        "time steps.",
    ],
}


# Each exercise answered by following its hint to the letter: the hint's code, the glue between.
HINTED = {
    "ex1_attention": [
        """
d_k = Q.shape[-1]
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
if allowed is not None:
    scores = scores.masked_fill(~allowed, float("-inf"))
A = torch.softmax(scores, dim=-1)
return A @ V, A
""",
        """
scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
if allowed is not None:
    scores = scores.masked_fill(~allowed, float("-inf"))
weights = torch.softmax(scores, dim=-1)
output = weights @ V
return output, weights
""",
    ],
    "ex2_causal_mask": [
        "return torch.tril(torch.ones(T, T, dtype=torch.bool))",
        "return torch.arange(T)[None, :] <= torch.arange(T)[:, None]",
    ],
    "ex3_embed": [
        """
T = idx.shape[1]
positions = torch.arange(T, device=idx.device)
return tok_emb(idx) + pos_emb(positions)
""",
    ],
    "ex4_metrics": [
        """
log_probs = torch.log_softmax(logits, dim=-1)
picked = log_probs.gather(-1, targets.unsqueeze(-1))
nats = -picked.mean().item()
return nats, math.exp(nats), nats / math.log(2)
""",
        """
B, T, vocab = logits.shape
loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, vocab), targets.reshape(B * T))
nats = loss.item()
return nats, math.exp(nats), nats / math.log(2)
""",
    ],
    "ex5_mean_distance": [
        """
T = A.shape[-1]
steps = torch.arange(T, device=A.device)
offsets = steps[:, None] - steps[None, :]
per_query = (A * offsets).sum(dim=-1)
return per_query.mean(dim=-1)
""",
    ],
    "ex6a_multi_head": [
        """
B, T, d_model = H.shape
Q = self.W_Q(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
K = self.W_K(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
V = self.W_V(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
allowed = tl.causal_mask(T, device=H.device)
V_bar, A = tl.scaled_dot_product_attention(Q, K, V, allowed)
V_bar = V_bar.transpose(1, 2).reshape(B, T, d_model)
return self.drop(self.proj(V_bar)), A
""",
    ],
    "ex6b_block": [
        """
attended, _ = self.attn(self.ln1(H))
H = H + attended
H = H + self.ffn(self.ln2(H))
return H
""",
    ],
}
# Each exercise the lecture has a listing of, answered by typing the listing as printed, with the
# exercise's names (Lab 5 §2, §3 and §4; Module 3 §13, §14).
LECTURE = {
    "ex1_attention": [
        """
d_k = Q.size(-1)
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)       # (..., T, T)
if allowed is not None:
    scores = scores.masked_fill(~allowed, float("-inf"))   # section 3
A = torch.softmax(scores, dim=-1)                        # each row sums to 1
V_bar = A @ V                                            # (..., T, d_k)
return V_bar, A                                          # A: (..., T, T)
""",
        """
scores = (Q @ K.transpose(-2, -1)) / math.sqrt(Q.shape[-1])
if allowed is None:
    allowed = torch.ones_like(scores, dtype=torch.bool)
else:
    allowed = torch.broadcast_to(allowed.to(scores.device), scores.shape)
masked_scores = scores.masked_fill(~allowed, float("-inf"))
weights = torch.softmax(masked_scores, dim=-1)
output = weights @ V
return output, weights
""",
    ],
    "ex2_causal_mask": [
        """
mask = torch.tril(torch.ones(T, T, dtype=torch.bool))   # True where i <= t
return mask
""",
        """
q_pos = torch.arange(T)[:, None]
k_pos = torch.arange(T)[None, :]
return k_pos <= q_pos
""",
    ],
    "ex6a_multi_head": [
        """
B, T, d = H.shape                                         # batch, positions, width
Q = self.W_Q(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)      # (B, n_h, T, d_k)
K = self.W_K(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)      # (B, n_h, T, d_k)
V = self.W_V(H).view(B, T, self.n_heads, self.d_k).transpose(1, 2)      # (B, n_h, T, d_k)
mask = tl.causal_mask(T, device=H.device)
V_bar, A = tl.scaled_dot_product_attention(Q, K, V, mask)    # (B, n_h, T, d_k), (B, n_h, T, T)
V_bar = V_bar.transpose(1, 2).reshape(B, T, d)            # concatenate the heads
out = self.proj(V_bar)                                    # (B, T, d): W_proj, b_proj
return self.drop(out), A
""",
        """
b, t, _ = H.shape

def split_heads(z):
    return z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)

q, k, v = map(split_heads, (self.W_Q(H), self.W_K(H), self.W_V(H)))
allowed = torch.ones(t, t, dtype=torch.bool, device=H.device).tril()
y, A = tl.scaled_dot_product_attention(q, k, v, allowed)
y = y.transpose(1, 2).contiguous().view(b, t, self.n_heads * self.d_k)
return self.drop(self.proj(y)), A
""",
    ],
    "ex6b_block": [
        """
attended, _ = self.attn(self.ln1(H))
H = H + attended
H = H + self.ffn(self.ln2(H))
return H
""",
    ],
}


def _zoo_right() -> dict[str, list[str]]:
    """The bug zoo's right answers, by exercise."""
    found: dict[str, list[str]] = {}
    for table in (nb01, nb02, nb03, nb04, nb05, nb06):
        for right in getattr(table, "RIGHT", {}).values():
            found.setdefault(right.exercise.cell, []).append(textwrap.dedent(right.body))
    return found


# --- copies -------------------------------------------------------------------------------


def _bound(tree: ast.AST, given: set[str]) -> set[str]:
    bound = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    return bound - given - {"self"}


def _body_tree(body: str) -> ast.Module:
    """A function body (with `return`) parsed as a module, inside a def so that it parses."""
    parameters = "self, Q, K, V, allowed, T, idx, tok_emb, pos_emb, logits, targets, A, H"
    return ast.parse(f"def _({parameters}):\n" + textwrap.indent(body, "    "))


def renamed(body: str) -> str:
    """Every local renamed, the layout kept (the lines re-read from the renamed tree)."""
    function = _body_tree(body).body[0]
    names = _bound(function, {a.arg for a in function.args.args})
    out = body
    for name in sorted(names, key=len, reverse=True):
        out = re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"my_{name.lower()}", out)
    return out


def reformatted(body: str) -> str:
    """ast.unparse's layout: no comments, no docstrings' layout, other parentheses."""
    tree = _body_tree(body)
    return "\n".join(ast.unparse(s) for s in tree.body[0].body)


def _uses(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _binds(node: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }


def reordered(body: str) -> str:
    """The first two adjacent statements that do not depend on each other, swapped (or the body
    as it is, where every statement needs the one before)."""
    statements = _body_tree(body).body[0].body
    for i in range(len(statements) - 1):
        a, b = statements[i], statements[i + 1]
        if isinstance(b, ast.Return) or isinstance(a, ast.Return):
            continue
        if (
            not (_binds(a) & _uses(b))
            and not (_binds(b) & _uses(a))
            and not (_binds(a) & _binds(b))
        ):
            statements[i], statements[i + 1] = b, a
            break
    return "\n".join(ast.unparse(s) for s in statements)


def padded(body: str) -> str:
    """Four lines of the copier's own around the copy: a print, and an assert and a finiteness
    check on the result before it is returned."""
    body = body.strip("\n")
    last = _body_tree(body).body[0].body[-1]
    returned = ast.unparse(last.value) if isinstance(last, ast.Return) and last.value else None
    lines = body.splitlines()
    if returned is not None:
        lines = lines[: last.lineno - 2] + [f"result = {returned}"]
    else:
        lines.append("result = None")
    return "\n".join(
        [
            'print("computing my answer")',
            *lines,
            'assert result is not None, "nothing computed"',
            "if isinstance(result, torch.Tensor) and not torch.isfinite(result.float()).all():",
            '    raise ValueError("the result is not finite")',
            "return result",
        ]
    )


class _Inline(ast.NodeTransformer):
    def __init__(self, name: str, value: ast.expr):
        self.name, self.value = name, value

    def visit_Name(self, node):
        return copy.deepcopy(self.value) if node.id == self.name else node


def inlined(body: str) -> str:
    """The first local that is assigned once from a name's attribute or index (`d_k =
    Q.shape[-1]`) written into each of its uses instead, its line gone."""
    statements = _body_tree(body).body[0].body
    for i, statement in enumerate(statements):
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, (ast.Attribute, ast.Subscript, ast.Call))
        ):
            continue
        name = statement.targets[0].id
        rest = statements[i + 1 :]
        if name in {n for s in rest for n in _binds(s)} or name not in {
            n for s in rest for n in _uses(s)
        }:
            continue
        kept = statements[:i] + [_Inline(name, statement.value).visit(s) for s in rest]
        return "\n".join(ast.unparse(s) for s in kept)
    return body


TRANSFORMS = {
    "verbatim": lambda body: body,
    "renamed": renamed,
    "reformatted": reformatted,
    "reordered": reordered,
    "all three": lambda body: reordered(renamed(body)),
    "padded": padded,
    "renamed, inlined": lambda body: inlined(renamed(body)),
}


def reworded(text: str) -> str:
    """A written answer lightly edited: a few words swapped for synonyms, a sentence moved."""
    swaps = {"may well": "might", "smaller": "more compact", "strong": "good", "pay off": "help"}
    for old, new in swaps.items():
        text = text.replace(old, new)
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    return " ".join(sentences[1:] + sentences[:1])


# --- the corpus as notebooks --------------------------------------------------------------


def solution_body(course: Path, grade_id: str) -> str:
    source = nbformat.read(Layout(course).notebook("source", NOTEBOOK_OF[grade_id]), 4)
    (cell,) = [
        c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    ]
    match = re.search(
        r"### BEGIN SOLUTION\n(.*?)^[ \t#]*### END SOLUTION", cell.source, re.S | re.M
    )
    body = match.group(1)
    if cell.cell_type == "markdown":
        return body.strip()
    return textwrap.dedent(body)


def reference_body(grade_id: str) -> str:
    """The reference's body without its docstring, as a student pastes it."""
    function, _ = REFERENCE_OF[grade_id]
    source = textwrap.dedent(inspect.getsource(function))
    tree = ast.parse(source).body[0]
    body = tree.body[1:] if isinstance(tree.body[0], ast.Expr) else tree.body
    lines = source.splitlines()
    start = body[0].lineno - 1
    text = textwrap.dedent("\n".join(lines[start:]))
    # Without its argument checks, as the student pasted it.
    return "\n".join(line for line in text.splitlines() if "_check_inputs(" not in line)


def fill(release_nb: nbformat.NotebookNode, grade_id: str, body: str) -> nbformat.NotebookNode:
    nb = copy.deepcopy(release_nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") != grade_id:
            continue
        if cell.cell_type == "markdown":
            cell.source = body
        else:
            match = STUB.search(cell.source)
            indented = textwrap.indent(body.strip("\n"), match.group(1))
            cell.source = cell.source[: match.start()] + indented + cell.source[match.end() :]
    return nb


def corpus(course: Path) -> dict[str, dict[str, tuple[str, str, str | None]]]:
    """grade id -> student -> (body, what it is, the source it copies or None)."""
    zoo = _zoo_right()
    found: dict[str, dict] = {}
    for grade_id in NOTEBOOK_OF:
        students: dict[str, tuple[str, str, str | None]] = {}
        honest = HONEST[grade_id] + zoo.get(grade_id, [])
        for n, body in enumerate(honest):
            students[f"honest{n}"] = (body, "honest", None)
        for n, body in enumerate(HINTED.get(grade_id, [])):
            students[f"hinted{n}"] = (body, "hint followed", None)
        for n, body in enumerate(LECTURE.get(grade_id, [])):
            students[f"lecture{n}"] = (body, "lecture typed", None)
        solution = solution_body(course, grade_id)
        if grade_id == "ex4_prediction":
            example = solution.split("**Rubric")[0].strip()
            students["copy_solution_verbatim"] = (example, "verbatim", "solution")
            students["copy_solution_reworded"] = (reworded(example), "reworded", "solution")
            students["copy_honest0_reworded"] = (reworded(honest[0]), "reworded", "honest0")
            students["copy_honest1_verbatim"] = (honest[1], "verbatim", "honest1")
            found[grade_id] = students
            continue
        sources = {"solution": solution}
        if grade_id in REFERENCE_OF:
            sources["reference"] = reference_body(grade_id)
        sources["honest0"] = honest[0]
        sources[f"honest{len(honest) - 1}"] = honest[-1]
        for source, body in sources.items():
            for name, transform in TRANSFORMS.items():
                if name == "verbatim" and source.startswith("honest"):
                    continue
                students[f"copy_{source}_{re.sub(r'[ ,]+', '_', name)}"] = (
                    transform(body),
                    name,
                    source,
                )
        found[grade_id] = students
    return found


class Row(NamedTuple):
    """One exercise of the corpus: counts, and how close each side came to the line."""

    grade_id: str
    copies: int
    caught: int
    honest: int
    flagged: int  # honest students flagged
    wrong: list[str]  # who was missed or flagged, and against what
    margins: dict[str, tuple]  # highest honest shares, the nearest copy's, by source kind
    missed_by_kind: dict[str, int]  # false negatives by kind of copy (verbatim, padded, ...)


def _kind(source: str | None) -> str:
    return "published" if source in copies.PUBLISHED else "classmate"


def _margins(students: dict, found: list[copies.Match], grade_id: str) -> dict[str, tuple]:
    """By kind of source: the highest shares (of the student's side, of the source's) an honest
    student reaches of a source they did not copy from (nor were copied from), and the two
    shares of the copy that comes nearest to being missed (the lowest of either share over its
    bar); matches with too few tokens alike or too short a run left out, as they are never
    flagged."""
    margins: dict[str, tuple] = {}
    for m in found:
        bar = m.kind.bar(m.source)
        if m.part != grade_id or m.tokens < bar.tokens or m.longest < bar.run:
            continue
        source = m.name if m.source == "classmate" else m.source
        own = students[m.student][2]
        copiers = {s for s, (_, _, src) in students.items() if src == m.student}
        if own is None and source not in copiers:
            key = f"honest {_kind(source)}"
            mine, held = margins.get(key, (0.0, 0.0))
            margins[key] = (max(mine, m.share), max(held, m.held_share))
        elif own == source:
            key = f"copy {_kind(source)}"
            nearest = max(m.share / bar.mine, m.held_share / bar.held)
            if key not in margins or nearest < margins[key][2]:
                margins[key] = (m.share, m.held_share, nearest)
    return margins


def _score(grade_id: str, students: dict, found: list[copies.Match]) -> Row:
    shown = copies.flagged(found)  # the notebook level too
    named = {(m.student, m.source if m.source != "classmate" else m.name) for m in shown}
    wrong, caught, flagged_honest = [], 0, 0
    missed: dict[str, int] = {}
    for student, (_, what, source) in students.items():
        if source is not None:
            caught += (student, source) in named
            if (student, source) not in named:
                wrong.append(f"missed {student}")
                missed[what] = missed.get(what, 0) + 1
            continue
        copiers = {s for s, (_, _, src) in students.items() if src == student}
        accused = {src for s, src in named if s == student} - copiers
        if accused:
            flagged_honest += 1
            wrong.append(f"flagged {student} ({what}) against {sorted(accused)}")
    n_copies = sum(source is not None for _, _, source in students.values())
    margins = _margins(students, found, grade_id)
    honest = len(students) - n_copies
    return Row(grade_id, n_copies, caught, honest, flagged_honest, wrong, margins, missed)


def measure(course: Path) -> list[Row]:
    """Every exercise's class of honest students and copies, compared as autograde does."""
    rows = []
    for grade_id, students in corpus(course).items():
        assignment = NOTEBOOK_OF[grade_id]
        release_nb = nbformat.read(Layout(course).notebook("release", assignment), 4)
        notebooks = {
            (s, assignment): fill(release_nb, grade_id, body)
            for s, (body, _, _) in students.items()
        }
        parts = copies.class_parts(notebooks, {assignment: release_nb})
        rows.append(_score(grade_id, students, copies.class_matches(parts)))
    return rows


def fabricated_class(course: Path, students: int, seed: int = 0) -> dict:
    """(student, assignment) -> notebook for a class of `students`: each exercise answered with
    an honest style, the course's solution or a classmate's answer, drawn at random."""
    rng = random.Random(seed)
    table = corpus(course)
    releases = {a: nbformat.read(Layout(course).notebook("release", a), 4) for a in NOTEBOOKS}
    notebooks = {}
    for n in range(students):
        for assignment in NOTEBOOKS:
            nb = releases[assignment]
            for grade_id, a in NOTEBOOK_OF.items():
                if a == assignment:
                    body, _, _ = rng.choice(list(table[grade_id].values()))
                    nb = fill(nb, grade_id, body)
            notebooks[f"student{n:03d}", assignment] = nb
    return notebooks


def time_class(course: Path, students: int) -> tuple[float, int, int]:
    """Seconds to read, fingerprint and compare a fabricated class written to autograded/, the
    matches found and how many were flagged."""
    for (student, assignment), nb in fabricated_class(course, students).items():
        path = Layout(course).notebook("autograded", assignment, student)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
    keys = [(f"student{n:03d}", a) for n in range(students) for a in NOTEBOOKS]
    start = time.perf_counter()
    found = copies.class_report_matches(Course.open(course), keys)
    seconds = time.perf_counter() - start
    return seconds, len(found), len(copies.flagged(found))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200, help="class size for the timing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        course = Path(folder) / "course"
        release(course)
        rows = measure(course)
        print(f"code: {copies.CODE}\nwritten answers: {copies.TEXT}")
        print(
            "| exercise | copies | caught | false negatives | honest | false positives | "
            "honest max, published | honest max, classmate | nearest copy, published | "
            "nearest copy, classmate |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            shown = [
                " / ".join(f"{v:.2f}" for v in r.margins[key][:2]) if key in r.margins else "–"
                for key in (
                    "honest published",
                    "honest classmate",
                    "copy published",
                    "copy classmate",
                )
            ]
            print(
                f"| {r.grade_id} | {r.copies} | {r.caught} | {r.copies - r.caught} | "
                f"{r.honest} | {r.flagged} | " + " | ".join(shown) + " |"
            )
        print(
            "Shares: of the student's own code / of the source's. Nearest copy: the one whose "
            "shares come nearest to the bars, caught or not."
        )
        missed: dict[str, int] = {}
        for r in rows:
            for kind, count in r.missed_by_kind.items():
                missed[kind] = missed.get(kind, 0) + count
        print(
            "False negatives by kind of copy: " + ", ".join(f"{k} {v}" for k, v in missed.items())
        )
        for r in rows:
            for line in r.wrong:
                print(f"  {r.grade_id}: {line}")
        seconds, n_matches, n_flagged = time_class(course, args.students)
        print(
            f"{args.students} students x {len(NOTEBOOKS)} notebooks: {seconds:.1f} s in one "
            f"process on {platform.machine()} with {os.cpu_count()} CPU cores, load average "
            f"{os.getloadavg()[0]:.1f} ({n_matches} matches, {n_flagged} flagged)"
        )


if __name__ == "__main__":
    main()
