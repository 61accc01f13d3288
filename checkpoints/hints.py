"""Hints that open when needed: a check that sees the same mistake of an exercise again shows,
under its message, the next step of that exercise's folded hint.

A student stuck on one mistake reruns the same check; the hint is folded above the exercise,
and the second failure with the same code is the sign that it is needed. So the second shows its
first step, the third the next, and so on; once the steps run out, the last is shown once more
(the cell's rerun has cleared the one before), then nothing. A first mistake shows the message
only; a different mistake, or a pass of the exercise in a later cell run, starts the count again.
A pass inside the run that then fails (the leak test of Exercise 2 before its own cases) is part
of that failure, not a pass.

The steps are the sentences of each exercise's Hint fold in solutions/*.py, word for word
(tests/test_hints.py holds them together): the kernel cannot read the notebook's cells. The checks
import this module by name (checkpoints/_core.py), so that editing a hint regrades no one.
"""

from __future__ import annotations

from dataclasses import dataclass

# exercise -> the steps of the Hint fold above its code cell, in order.
HINTS: dict[str, tuple[str, ...]] = {
    "ex0": (
        "A `Linear(in_features=a, out_features=b, bias=True)` holds $a \\times b$ weights and "
        "$b$ biases; with `bias=False`, only the weights.",
    ),
    "ex1": (
        "Three lines do it: `Q @ K.transpose(-2, -1)` (transpose only the last two axes, so "
        'leading dimensions pass through), `scores.masked_fill(~allowed, float("-inf"))` when '
        "a mask is given, and `torch.softmax(scores, dim=-1)`.",
        "`math.sqrt(Q.shape[-1])` is $\\sqrt{d_k}$.",
    ),
    "ex2": (
        "Keep the lower triangle, diagonal included, of `torch.ones(T, T, dtype=torch.bool)` "
        "with `torch.tril`; or compare `torch.arange(T)[None, :]` (the key $i$, along the "
        "columns) with `torch.arange(T)[:, None]` (the query $t$, along the rows): `<=` "
        "broadcasts to `(T, T)`.",
    ),
    "ex3": (
        "`tok_emb(idx)` is `(B, T, d_model)`.",
        "The positions are `torch.arange(T, device=idx.device)` (on the device of `idx`, so "
        "that the same code runs on a GPU), and `pos_emb` of them is `(T, d_model)`; adding the "
        "two broadcasts over the batch.",
    ),
    "ex4": (
        "`torch.log_softmax(logits, dim=-1)` gives $\\log \\hat y_t$ for every character; "
        "`.gather(-1, targets.unsqueeze(-1))` picks the one that came next.",
        "Or use `torch.nn.functional.cross_entropy`, which wants the classes on axis 1 (or "
        "flattened inputs).",
        "`.item()` turns a 0-d tensor into a float.",
    ),
    "ex5": (
        "Build the $T \\times T$ offsets $t - i$ from `torch.arange(T, device=A.device)` (on "
        "$A$'s device, so that it runs on a GPU too), `[:, None]` for the queries and "
        "`[None, :]` for the keys; above the diagonal $A$ is 0.",
        "Multiply, **sum** over the keys, **average** over the queries.",
    ),
    "ex6a": (
        "`.view(B, n_heads, T, d_k)` straight away has the right shape and the wrong content: "
        "the memory of a `(B, T, d_model)` tensor is laid out position by position, so that "
        "view puts pieces of several positions into one head.",
        "View as `(B, T, n_heads, d_k)` first, then transpose.",
        "On the way back, `.view` fails after a transpose (the tensor is no longer contiguous): "
        "use `.reshape`.",
    ),
    "ex6b": (
        "Two lines, one per sublayer, each of the form `H = H + sublayer(norm(H))`.",
        "Unpack the pair that `self.attn` returns.",
        "Write `H = H + ...`, not `H += ...`: the in-place form changes the caller's tensor.",
    ),
}


@dataclass(frozen=True)
class Step:
    """One step of an exercise's hint, as a failing check shows it."""

    exercise: str  # "ex1"
    number: int  # 1 for the first step
    of: int  # how many steps the hint has
    text: str
    again: bool = False  # the last step, shown once more

    @property
    def said(self) -> str:
        again = " again" if self.again else ""
        return f"💡 Hint, step {self.number} of {self.of}{again}: {self.text}"


@dataclass
class _Streak:
    code: str  # the mistake seen
    times: int  # in a row, for its exercise


class Streaks:
    """The mistakes one kernel has seen in a row, by exercise, and the step each has reached."""

    def __init__(self):
        self._streaks: dict[str, _Streak] = {}
        self._passed: dict[str, int | None] = {}  # exercise -> the cell run of its last pass

    def passed(self, exercise: str, run: int | None) -> None:
        """A check of `exercise` passed in cell run `run`."""
        self._passed[exercise] = run

    def failed(self, code: str, run: int | None) -> Step | None:
        """The step to show for mistake `code`, seen in cell run `run`; None where none is due."""
        exercise = code.partition(".")[0]
        streak = self._streaks.get(exercise)
        passed_since = exercise in self._passed and self._passed.pop(exercise) != run
        if streak is None or streak.code != code or passed_since:
            streak = self._streaks[exercise] = _Streak(code, 0)
        streak.times += 1
        return step(exercise, streak.times)


def step(exercise: str, times: int) -> Step | None:
    """The step due when `exercise` has failed with one mistake `times` times in a row: none
    the first time, then each step in turn, then the last once more, then none."""
    steps = HINTS.get(exercise, ())
    index = times - 2
    if index < 0 or index > len(steps) or not steps:
        return None
    again = index == len(steps)
    return Step(exercise, min(index, len(steps) - 1) + 1, len(steps), steps[index - again], again)


STREAKS = Streaks()  # this kernel's: a restarted kernel starts again
