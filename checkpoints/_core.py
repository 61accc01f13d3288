"""Shared machinery: clear failures, calling student code, comparing against known mistakes.

References are bound when this module is imported, before any student code runs, so that
replacing torch.allclose or a reference function afterwards does not change what a check sees.
"""

from __future__ import annotations

import re

import torch

_Tensor = torch.Tensor
_allclose = torch.allclose
_isfinite = torch.isfinite
_equal = torch.equal
_clone = torch.Tensor.clone


class CheckFailed(AssertionError):
    """The exercise runs but gives a wrong result; the message names the likely mistake.

    `code` names the mistake for machines (`ex1.no_sqrt_dk`): stable when the wording changes,
    so that the class report counts mistakes, not sentences. It ends the message in brackets.
    """

    def __init__(self, message: str, code: str = "unknown"):
        super().__init__(message)
        self.message, self.code = message, code

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"


class NotDoneYet(CheckFailed):
    """The exercise still raises NotImplementedError from its stub."""


CODE_AT_END = re.compile(r"\[([a-z][a-z0-9]*\.[a-z0-9_]+)\]\s*$")


def code(exercise: str, mistake: str) -> str:
    """A mistake's code: the exercise of "Exercise 1 (case)" or "Challenge A", then its name:
    "ex1.name", "exa.name"; "check.name" for a check of no exercise."""
    label = re.search(r"(?:Exercise|Challenge) (\w+)", exercise)
    return f"ex{label.group(1).lower()}.{mistake}" if label else f"check.{mistake}"


def passed(message: str) -> None:
    print(f"✅ {message}")


def call(exercise: str, fn, *args, **kwargs):
    """Run the student's function; a stub's NotImplementedError becomes a NotDoneYet."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise NotDoneYet(
            f"{exercise} is not done yet: replace the `raise NotImplementedError(...)` line in "
            "its cell with your code, run that cell, then run this check again.",
            code(exercise, "not_done"),
        ) from None
    except CheckFailed:
        raise
    except Exception as err:
        raise CheckFailed(
            f"{exercise} raised {type(err).__name__}: {err}. Read the traceback above this "
            "message: it points at the line of your code that failed.",
            code(exercise, "raised"),
        ) from err


def expect_tensor(exercise: str, what: str, value, shape: tuple | None = None) -> _Tensor:
    if type(value) is not _Tensor:
        raise CheckFailed(
            f"{exercise}: {what} should be a torch.Tensor, got {type(value).__name__}.",
            code(exercise, "not_a_tensor"),
        )
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise CheckFailed(
            f"{exercise}: {what} should have shape {tuple(shape)}, got {tuple(value.shape)}.",
            code(exercise, "wrong_shape"),
        )
    return value


def close(
    a: _Tensor, b: _Tensor, atol: float = 1e-5, rtol: float = 1e-4, equal_nan: bool = False
) -> bool:
    if type(a) is not _Tensor or type(b) is not _Tensor or a.shape != b.shape:
        return False
    return bool(_allclose(a.double(), b.double(), atol=atol, rtol=rtol, equal_nan=equal_nan))


def all_finite(t: _Tensor) -> bool:
    return bool(_isfinite(t).all())


def snapshot(*tensors: _Tensor) -> list[_Tensor]:
    return [_clone(t) for t in tensors]


def unchanged(before: list[_Tensor], after: tuple[_Tensor, ...]) -> bool:
    return all(_equal(b, a) for b, a in zip(before, after, strict=True))


def match_mistake(
    value: _Tensor, mistakes: dict[str, tuple[str, _Tensor]], **tolerances
) -> tuple[str, str] | None:
    """(name, diagnosis) of the first known mistake whose output the student's value
    reproduces (NaN included); `mistakes` maps each name to its diagnosis and its output."""
    for name, (diagnosis, wrong) in mistakes.items():
        if close(value, wrong, equal_nan=True, **tolerances):
            return name, diagnosis
    return None
