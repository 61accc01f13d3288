"""Shared machinery: clear failures, calling student code, comparing against known mistakes.

References are bound when this module is imported, before any student code runs, so that
replacing torch.allclose or a reference function afterwards does not change what a check sees.
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
import warnings
from contextlib import contextmanager, nullcontext
from importlib import import_module

import torch

import transformer_lab
from transformer_lab import student
from transformer_lab.catalogue import BY_NAME, resolve

from ._devices import device_slip, devices_here, shown_device
from ._watch import Forbidden, Watch
from .codes import Codes, declared
from .results import Result, leave, notebook_shell

_Tensor = torch.Tensor
_allclose = torch.allclose
_isfinite = torch.isfinite
_equal = torch.equal
_clone = torch.Tensor.clone
_is_warn_always = torch.is_warn_always_enabled
_set_warn_always = torch.set_warn_always
_catch_warnings = warnings.catch_warnings
_simplefilter = warnings.simplefilter
_warn_explicit = warnings.warn_explicit
# Warnings raised from these folders are the library's own, not the student's code.
_LIBRARY = tuple(os.path.dirname(module.__file__) + os.sep for module in (torch, transformer_lab))
# Frames of these folders are not the student's: the library's, the checks', the installed
# packages' and Python's own.
_NOT_THEIRS = tuple(
    {
        *_LIBRARY,
        os.path.dirname(__file__) + os.sep,
        *(sysconfig.get_paths()[key] + os.sep for key in ("stdlib", "purelib", "platlib")),
    }
)


_FORBIDDEN: dict[str, tuple[Forbidden, ...]] = {}


class CheckFailed(AssertionError):
    """The exercise runs but gives a wrong result; the message names the likely mistake.

    `code` names the mistake for machines (`ex1.no_sqrt_dk`): stable when the wording changes,
    so that the class report counts mistakes, not sentences. It must be declared in
    checkpoints/codes.py. The message shows it in brackets, for people; machines read the
    result a failing check leaves as data (checkpoints/results.py).
    """

    def __init__(self, message: str, code: str):
        if not declared(code):
            raise ValueError(f"{code!r} is not a declared code: declare it in checkpoints/codes.py")
        super().__init__(message)
        self.message, self.code = message, code

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"

    @property
    def result(self) -> Result:
        return Result(self.code.partition(".")[0], self.code, False, self.message)


class NotDoneYet(CheckFailed):
    """The exercise still raises NotImplementedError from its stub."""


_quiet: list[bool] = []  # not empty while a kept piece's checkpoint runs again (yours.py)


@contextmanager
def quietly():
    """Run checks without their ticks, results or keeping: a piece the student kept is
    checked again before a later notebook builds its model on it."""
    _quiet.append(True)
    try:
        yield
    finally:
        _quiet.pop()


def quiet() -> bool:
    """A kept piece's checkpoint runs again: no ticks, results, notes or keeping."""
    return bool(_quiet)


def passed(exercise: Codes, message: str) -> None:
    if _quiet:
        return
    print(f"✅ {message}")
    leave(Result(exercise.name, None, True, message))
    shell = notebook_shell()
    if shell is not None:  # a kernel's: a pass starts its exercise's count of mistakes again
        _hints().STREAKS.passed(exercise.name, cell_run(shell))


def _hints():
    """checkpoints/hints.py, imported by name: a hint is only shown, never scored, so editing
    one regrades no one (the rerun key reads a check's import statements, not this)."""
    return import_module(f"{__package__}.hints")


def cell_run(shell) -> int | None:
    """The number Jupyter shows beside the cell that runs now ("[12]"), or None outside a
    notebook: the inputs IPython has stored, this cell's included. (Its execution_count moved,
    in IPython 9, from after a cell's run to before it.)"""
    inputs = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None)
    return len(inputs) - 1 if inputs else None


def grading() -> bool:
    """nbgrader is running the notebook: each notebook is graded alone, on its own code."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def keep(name: str, fn, checkpoint) -> None:
    """After a pass in a student's kernel, keep their function for the later notebooks
    (transformer_lab/student.py), where the notebook's USE_DRIVE says, then import the kept copy
    on its own and run `checkpoint` on it again, quietly: what a later notebook will run, said
    here, where the student can still fix it. Never while grading, never outside a notebook (a
    test, a script), never a reason for a check to fail."""
    shell = notebook_shell()
    if _quiet or grading() or shell is None:
        return
    use_drive = shell.user_ns.get("USE_DRIVE")
    try:
        print(student.keep(name, fn, use_drive, cell=cell_run(shell)))
    except Exception as err:  # a full Drive, a folder it may not write: the pass stands
        print(f"Your {name} was not kept for the later notebooks ({type(err).__name__}: {err}).")
        return
    trouble = kept_copy_trouble(getattr(student.load(use_drive), name), checkpoint)
    if trouble:
        print(trouble)


def kept_copy_trouble(piece: student.Piece, checkpoint) -> str:
    """'' where the kept `piece` imports and passes `checkpoint` on its own; else what a later
    notebook would find, and what to do now."""
    if not piece.yours:
        why = piece.why
    else:
        failure = check_again(piece, checkpoint)
        if failure is None:
            return ""
        why = f"it fails this checkpoint there: {failure}"
    return (
        f"⚠️ But the kept copy does not run on its own, so the later notebooks would use the "
        f"course's {piece.name}: {why} Define what it uses inside the function, or in "
        "this notebook as a def, a constant or an import, and run this checkpoint again."
    )


def check_again(piece: student.Piece, checkpoint=None) -> CheckFailed | None:
    """The failure of the student's kept `piece` at its exercise's checkpoint (`checkpoint`, or
    the one the catalogue names), run again quietly; None where it passes. The one re-check of a
    kept copy: 01-03's checks run it when they keep a piece (`kept_copy_trouble`), the later
    notebooks before they build a model on it (checkpoints/yours.py)."""
    checkpoint = checkpoint or resolve(__package__, piece.exercise.checkpoint)
    try:
        with quietly():
            checkpoint(piece.fn)
    except CheckFailed as failure:
        return failure
    return None


def still_kept(exercise: str, use_drive: bool | None) -> str:
    """'' where `exercise` keeps no piece or the student's module holds none of it; else, for
    a failing checkpoint, the passing version the later notebooks will run instead of this one."""
    piece = BY_NAME[exercise].piece if exercise in BY_NAME else None
    found = student.kept_version(piece, use_drive) if piece else None
    if found is None:
        return ""
    kept, where = found
    version = f"Your passing version ({kept.said})" if kept.said else "Your earlier passing version"
    return (
        f"ℹ️ {version} is still kept in {where}: 04 will train it, not this one, until this "
        "checkpoint passes again."
    )


def _under_failure(shell, failure: CheckFailed) -> list[str]:
    """What a failing check shows under its message in a student's kernel: the next step of
    its exercise's hint when the same mistake came again (checkpoints/hints.py), and the
    passing version that stands while this one fails."""
    step = _hints().STREAKS.failed(failure.code, cell_run(shell))
    kept = still_kept(failure.result.exercise, shell.user_ns.get("USE_DRIVE"))
    return [said for said in (step.said if step else "", kept) if said]


def _leave_failure(shell, etype, value, tb, tb_offset=None) -> None:
    """IPython's handler of a CheckFailed that reaches the top of a cell: leave its result as
    data, then show the traceback as for any error (the cell still fails), and under it what
    helps next (`_under_failure`); never while grading, and never a second error."""
    leave(value.result)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    if grading():
        return
    try:
        said = _under_failure(shell, value)
    except Exception:  # a Drive gone, a module edited by hand: the failure is shown already
        return
    if said:
        print("\n".join(said))


def _install(shell) -> None:
    """In a notebook's kernel, every failing check leaves its result as data."""
    if shell is not None:
        shell.set_custom_exc((CheckFailed,), _leave_failure)


# What an error's text says -> (the mistake's name, its usual cause in these exercises), tried
# in order: a student whose function raises gets the first that fits, not only "read the
# traceback", and the class report counts the cause instead of "raised".
_RAISED = (
    (
        r"no allowed key",
        "mask_inverted",
        "The mask is probably inverted: here `allowed` is True where a query MAY read (the "
        "causal mask is the lower triangle, diagonal included). nn.MultiheadAttention's "
        "attn_mask uses the opposite convention (True = masked out): do not negate the mask, "
        "and do not reach for empty_row='zero'.",
    ),
    (
        r"Boolean value of Tensor with more than one value is ambiguous",
        "tensor_as_condition",
        "A tensor of many values was used as one True or False: `if allowed:`, or `and`, `or`, "
        "`not` applied to a tensor. To ask whether an optional argument was given, write "
        "`if allowed is not None:`; to combine masks entry by entry, use &, | and ~.",
    ),
    (
        r"only one element tensors can be converted to Python scalars",
        "math_on_tensor",
        "A tensor of many values went where Python needs one number: a function of the math "
        "module (math.sqrt, math.exp, math.log) applied to a tensor, or float(...) of one. On "
        "tensors use torch.sqrt, torch.exp, torch.log (or .sqrt(), .exp(), .log()); keep "
        "math.sqrt for plain numbers such as d_k.",
    ),
    (
        r"elements cannot be converted to Scalar",
        "item_of_many",
        ".item() reads the one number of a one-element tensor, and this tensor holds many: "
        "reduce it first (e.g. .mean() over every position), then call .item().",
    ),
    (
        r"must be Tensor, not (int|float)",
        "number_not_tensor",
        "A torch function got a plain number: sizes such as d_k = Q.shape[-1] and T are "
        "Python ints, not tensors. For a number use math.sqrt(d_k) or d_k ** 0.5 (math.exp, "
        "math.log); to build a mask, make a tensor first, e.g. "
        "torch.ones(T, T, dtype=torch.bool).tril().",
    ),
    (
        # PyTorch's warning now, its error in a later release.
        r"`x\.T` on tensors of dimension other than 2",
        "transpose_all_axes",
        "`.T` was used on a tensor that is not 2-d. On more dimensions it reverses every "
        "axis, (B, n_heads, T, d_k).T is (d_k, T, n_heads, B); on one it does nothing; "
        "PyTorch is turning both into an error. Swap the last two axes with "
        "K.transpose(-2, -1) (or K.mT); make a column of a 1-d tensor with [:, None].",
    ),
    (
        # F.softmax's warning when it guesses the axis; torch.softmax's error.
        r"Implicit dimension choice for (log_)?softmax|softmax\(\) missing 1 required "
        r"positional arguments: \"dim\"",
        "softmax_without_dim",
        "A softmax is called without dim: torch.softmax refuses, and F.softmax guesses an "
        "axis (on a 4-d tensor, axis 1: the heads). Name the axis that must sum to 1: "
        "dim=-1, the keys of each query's scores, or the characters of each logit row.",
    ),
    (
        r"Expected target size|Expected input batch_size|only batches of spatial targets",
        "cross_entropy_not_flattened",
        "F.cross_entropy takes logits of shape (N, C) and targets of shape (N,): flatten both, "
        "logits.reshape(-1, logits.shape[-1]) and targets.reshape(-1), or move the classes to "
        "axis 1 with logits.transpose(1, 2).",
    ),
    (
        r"'tuple' object|operand type\(s\) for .*tuple|tuple.*operand",
        "pair_not_unpacked",
        "A pair is used where one tensor is expected: the attention function returns "
        "(V_bar, A) and the attention layer (output, A). Unpack it first, e.g. "
        "`V_bar, A = ...` or `attended, _ = self.attn(...)`.",
    ),
    (
        r"values to unpack",
        "shape_unpacked",
        "A shape is unpacked into the wrong number of names, e.g. `T, d_k = Q.shape` when Q "
        "has leading dimensions. Read single sizes from the end instead: d_k = Q.shape[-1], "
        "T = Q.shape[-2].",
    ),
    (
        r"view size is not compatible",
        "view_after_transpose",
        "After transpose(1, 2) the tensor is no longer contiguous in memory, so .view cannot "
        "merge its axes: use .reshape(B, T, d_model), or .contiguous().view(B, T, d_model).",
    ),
    (
        r"must match the size of tensor b|mat1 and mat2|cannot be multiplied|size mismatch|"
        r"Expected size|not broadcastable|expanded size",
        "shapes_do_not_match",
        "The shapes do not line up. Two usual causes: K transposed over the wrong axes (use "
        "K.transpose(-2, -1)), or a mask that does not broadcast to the scores' shape "
        "(..., T_q, T_k). Print the shapes of your tensors.",
    ),
    (
        r"cannot be converted to type (at|c10)::Half without overflow",
        "overflows_in_half",
        "A number too large for half precision: on a T4, notebook 04 trains in float16, "
        "whose largest number is 65,504, so a fill such as masked_fill(..., -1e9) (exact in "
        "float32) cannot be stored there and the first training step stops. Fill with "
        "float('-inf'), or torch.finfo(scores.dtype).min, the lowest number of whatever dtype "
        "the scores have.",
    ),
    (
        r"Can't call numpy\(\) on Tensor that requires grad",
        "numpy_in_model",
        "A trip through numpy inside the model: .numpy() refuses a tensor that is learning, "
        "and .detach().numpy() would cut its gradient, so the layers before it would never "
        "learn. Write the step with torch operations (torch.tril, torch.softmax, torch.where) "
        "and keep numpy for plain arrays outside the model.",
    ),
    (
        r"bool tensor|boolean mask|boolean tensor|Boolean-type|dtype to be Bool",
        "mask_not_bool",
        "A mask must be a bool tensor (True where a query may read): build it with a "
        "comparison or dtype=torch.bool, and negate it with ~, which on a 0/1 integer tensor "
        "gives -1 and -2 instead.",
    ),
)
_RAISED_BY_NAME = {name: (pattern, hint) for pattern, name, hint in _RAISED}
# Slips PyTorch only warns about: a warning of one of these fails the check.
_WARNED = ("transpose_all_axes", "softmax_without_dim")
_READ_THE_TRACEBACK = (
    "The traceback above this message points at the line of your code that failed."
)


def diagnose_error(err: BaseException, warned: tuple[str, ...] = ()) -> tuple[str, str]:
    """(mistake name, hint) for an error a student's function raised, told by the error's text
    or by a warning the same code gave (`warned`): its usual cause when they tell it, else
    ("raised", where to look)."""
    text = "\n".join((str(err), *warned))
    # A piece checked again in a later notebook shows no traceback: its line is in the message.
    traceback = "" if _quiet else _READ_THE_TRACEBACK
    for pattern, name, hint in _RAISED:
        if re.search(pattern, text):
            return name, f"{hint} {traceback}".strip()
    return "raised", traceback


def error_text(err: BaseException) -> str:
    """An error's own words, never an empty message: a NameError raised by the interpreter
    keeps the name it missed even where its text is lost."""
    text = str(err).strip()
    if not text and isinstance(err, NameError) and err.name:
        text = f"name {err.name!r} is not defined"
    return text or repr(err)


def _their_frames(err: BaseException) -> list:
    """(frame, line number) of each frame of `err`'s traceback that ran the student's code
    (neither the library's nor the checks'), outermost first."""
    found, tb = [], err.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_NOT_THEIRS):
            found.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return found


def _at(frame, number: int) -> tuple[str, str]:
    """('line N', its text) of line `number` of the student's code that `frame` runs."""
    filename = frame.f_code.co_filename
    text = linecache.getline(filename, number, frame.f_globals).strip()
    # A file of its own (my_transformer.py) is named; a notebook's cell is not one.
    where = f"line {number}"
    return where + (f" of {os.path.basename(filename)}" if os.path.isfile(filename) else ""), text


def _their_line(err: BaseException) -> tuple[str, str]:
    """('line N', its text) of the deepest frame of `err` that ran the student's code, or
    ('', '') where none did."""
    frames = _their_frames(err)
    return _at(*frames[-1]) if frames else ("", "")


def _named(where: str, text: str) -> str:
    return f"{where} (`{text}`)" if text else where


def line_of(err: BaseException) -> str:
    """' (line N: `the line`)' of the deepest frame of `err` that ran the student's code, or ''
    where none did."""
    where, text = _their_line(err)
    if not where:
        return ""
    return f" ({where}: `{text}`)" if text else f" ({where})"


# The factories a device slip usually comes from, and the arguments to show them with.
_FACTORIES = {
    "arange": "T",
    "ones": "T, T",
    "zeros": "T, T",
    "empty": "T, T",
    "full": "(T, T), value",
    "eye": "T",
    "rand": "T, T",
    "randn": "T, T",
    "tensor": "values",
}
_FACTORY = re.compile(r"torch\.(" + "|".join(_FACTORIES) + r")\(")
_MOVED = re.compile(r"\.(to|cuda)\(")


def _tensor_argument(frames: list) -> tuple[str | None, _Tensor | None]:
    """(name, value) of the first tensor argument of the innermost of the student's functions
    that has one (Q, idx, A): where the tensors they make belong. (None, None) for a function
    given sizes only (causal_mask(T))."""
    for frame, _ in reversed(frames):
        code = frame.f_code
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            value = frame.f_locals.get(name)
            if isinstance(value, _Tensor):
                return name, value
    return None, None


def _made_without_device(frames: list) -> tuple[str, str]:
    """('line N', its text) of the first line of the student's innermost function, up to the
    one that failed, that makes a tensor without naming a device; ('', '') where none does."""
    frame, failed = frames[-1]
    for number in range(frame.f_code.co_firstlineno, failed + 1):
        where, text = _at(frame, number)
        if _FACTORY.search(text) and "device" not in text:
            return where, text
    return "", ""


def device_failure(exercise: Codes, err: BaseException) -> CheckFailed | None:
    """A device slip of the student's code in one message: the device asked for, their line and
    what to write instead; None where `err` is no device slip. It names the line itself, so it
    is raised without the error's traceback."""
    frames = _their_frames(err)
    where, text = _at(*frames[-1]) if frames else ("", "")
    slip = device_slip(err, text)
    if slip is None:
        return None
    name, tensor = _tensor_argument(frames)
    at = f" at {_named(where, text)}" if where else ""
    if slip.absent:
        what = (
            f"your code asks for the device {slip.asked!r}{at}, and this runtime has "
            f"{devices_here()} (PyTorch: {slip.said})."
        )
        maker = text
    else:
        made, maker = _made_where(slip, frames, text, tensor)
        inputs = f"{name} is on {_words(shown_device(tensor))}, and " if tensor is not None else ""
        what = f"your code mixes tensors of two devices{at}: {inputs}{made}."
        if slip.simulated:
            what += " (This check runs your function as Colab's GPU would, simulated on this CPU.)"
    return CheckFailed(
        f"{exercise}: {what} {_device_fix(name, maker)}", exercise.code("device_mismatch")
    )


def _words(device: str) -> str:
    return "the CPU" if device == "cpu" else device


def _made_where(slip, frames: list, text: str, tensor: _Tensor | None) -> tuple[str, str]:
    """(what the other device's tensor is and where it was made, the text of that line) of a
    line that mixes two devices."""
    inputs = shown_device(tensor) if tensor is not None else None
    other = next((d for d in slip.mixed if d != inputs), None)
    on = f" is on {_words(other)}" if other else " is on another device"
    if slip.asked and (inputs is None or not inputs.startswith(slip.asked.partition(":")[0])):
        return f"a tensor made there with device={slip.asked!r}{on}", text
    if other != "cpu":
        return f"another tensor{on}", ""
    where, made = _made_without_device(frames) if frames else ("", "")
    if not where:
        return f"another tensor{on}", ""
    if made == text:
        return f"a tensor made there without device={on}", made
    return f"a tensor made without device= at {_named(where, made)}{on}", made


def _device_fix(name: str | None, text: str) -> str:
    """What to write instead, with the factory of `text`, the line that made the tensor."""
    if name is None:
        return (
            "Name no device by hand: leave device= out. Given sizes only, your function makes "
            "its tensors on the CPU, and the model copies them to its own device."
        )
    factory = _FACTORY.search(text)
    example = (
        f", e.g. torch.{factory[1]}({_FACTORIES[factory[1]]}, device={name}.device)"
        if factory
        else ""
    )
    moved = f", and .to({name}.device) for .to(...) or .cuda()" if _MOVED.search(text) else ""
    return (
        f"Make new tensors where your inputs are, with device={name}.device{example}{moved}: "
        "then the same code runs on a CPU and on Colab's GPU."
    )


def forbid(exercise: Codes, *rules: Forbidden) -> None:
    """Declare the ready-made implementations that may not do an exercise's work; every
    `call` of that exercise then watches for them."""
    for rule in rules:
        exercise.code(rule.mistake)  # declared, or this fails at import
    _FORBIDDEN[exercise.name] = rules


def forbidden(exercise: Codes) -> tuple[Forbidden, ...]:
    return _FORBIDDEN.get(exercise.name, ())


@contextmanager
def _warnings_kept():
    """Record the warnings given while the student's code runs (a live list), then show them
    again, once each. PyTorch gives some of them only once a process, so it is asked to give
    each every time meanwhile."""
    was = _is_warn_always()
    _set_warn_always(True)
    try:
        with _catch_warnings(record=True) as seen:
            _simplefilter("always")
            yield seen
    finally:
        _set_warn_always(was)
        shown = set()
        for w in seen:
            if (str(w.message), w.filename, w.lineno) not in shown:
                shown.add((str(w.message), w.filename, w.lineno))
                _warn_explicit(w.message, w.category, w.filename, w.lineno)


def _slips_warned(seen: list) -> list[tuple[str, warnings.WarningMessage]]:
    """(name, warning) of each warning that the student's own code (not the library) gave and
    that names a slip of _WARNED."""
    return [
        (name, w)
        for w in seen
        if not w.filename.startswith(_LIBRARY)
        for name in _WARNED
        if re.search(_RAISED_BY_NAME[name][0], str(w.message))
    ]


def call(exercise: Codes, fn, *args, **kwargs):
    """Run the student's function, watching for the implementations the exercise forbids; a
    stub's NotImplementedError becomes a NotDoneYet, a device slip one message that names the
    line (device_failure), any other error a CheckFailed with a hint for the causes it
    recognises, and so does a warning that names a slip, even when the code ran: its result is
    wrong or, in a later PyTorch, an error."""
    watch = Watch(forbidden(exercise))
    with _warnings_kept() as seen:
        try:
            with watch if watch.rules else nullcontext():
                result = fn(*args, **kwargs)
        except CheckFailed:
            raise
        except Exception as err:
            _refuse_delegation(exercise, watch)
            # Before the stub's NotImplementedError: PyTorch raises one for a device it lacks.
            slip = device_failure(exercise, err)
            if slip is not None:
                raise slip from None
            if isinstance(err, NotImplementedError):
                raise NotDoneYet(
                    f"{exercise} is not done yet: replace the `raise NotImplementedError(...)` "
                    "line in its cell with your code, run that cell, then run this check again.",
                    exercise.code("not_done"),
                ) from None
            warned = tuple(str(w.message) for _, w in _slips_warned(seen))
            name, hint = diagnose_error(err, warned)
            where = line_of(err)
            raise CheckFailed(
                f"{exercise} raised {type(err).__name__}: {error_text(err)}{where}. {hint}".strip(),
                exercise.code(name),
            ) from err
    _refuse_delegation(exercise, watch)
    slips = _slips_warned(seen)
    if slips:
        name, w = slips[0]
        raise CheckFailed(
            f"{exercise}: {_RAISED_BY_NAME[name][1]} (PyTorch's warning above points at line "
            f"{w.lineno} of your code.)",
            exercise.code(name),
        )
    return result


def _refuse_delegation(exercise: Codes, watch: Watch) -> None:
    seen = watch.first
    if seen is None:
        return
    if seen.rule is None:
        raise CheckFailed(
            f"{exercise}: your code changed the profile hook ({seen.called}, from {seen.where}) "
            "while the check ran it. The check watches which functions your answer calls and "
            "cannot grade it otherwise: remove that call.",
            exercise.code("watch_disabled"),
        )
    rule = seen.rule
    raise CheckFailed(
        f"{exercise}: your answer hands the work to {rule.label}: it called {seen.called} "
        f"(from {seen.where}). This exercise asks you to write that yourself. {rule.instead}",
        exercise.code(rule.mistake),
    )


def expect_tensor(exercise: Codes, what: str, value, shape: tuple | None = None) -> _Tensor:
    if type(value) is not _Tensor:
        raise CheckFailed(
            f"{exercise}: {what} should be a torch.Tensor, got {type(value).__name__}.",
            exercise.code("not_a_tensor"),
        )
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise CheckFailed(
            f"{exercise}: {what} should have shape {tuple(shape)}, got {tuple(value.shape)}.",
            exercise.code("wrong_shape"),
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


def change_at(run, x: _Tensor, t0: int, change, dim: int = 1, before: _Tensor | None = None):
    """The measurement of every leak test: `run` on `x` (or `before`, its output already made)
    and on a copy of `x` that `change(copy)` changed at position `t0`; then the largest change of
    the output at the positions before t0 and at those from t0 on, positions along `dim`.
    Returns (output, earlier, later); where `run` gives None for the copy (an output of another
    form), both changes are NaN."""
    before = run(x) if before is None else before
    changed = _clone(x)
    change(changed)
    after = run(changed)
    if after is None:
        return before, float("nan"), float("nan")
    moved = (before - after).abs()
    size = moved.shape[dim]
    earlier = moved.narrow(dim, 0, t0).max().item() if t0 > 0 else 0.0
    later = moved.narrow(dim, t0, size - t0).max().item() if t0 < size else 0.0
    return before, earlier, later


def named_positions(ts: list[int]) -> str:
    """'position 4', 'positions 0 to 4' for a run, 'positions 1, 3 and 6' otherwise."""
    if len(ts) == 1:
        return f"position {ts[0]}"
    if len(ts) > 2 and ts == list(range(ts[0], ts[-1] + 1)):
        return f"positions {ts[0]} to {ts[-1]}"
    return "positions " + ", ".join(map(str, ts[:-1])) + " and " + str(ts[-1]) if ts else "none"


def match_mistake(
    value, mistakes: dict[str, tuple[str, object]], same=None, **tolerances
) -> tuple[str, str] | None:
    """(name, diagnosis) of the first known mistake whose output the student's value
    reproduces; `mistakes` maps each name to its diagnosis and its output, or a tuple of outputs
    when one mistake has several forms. `same(value, output)` says whether they agree: by
    default `close` with these tolerances, NaN equal to NaN."""

    def near(value, candidate) -> bool:
        return close(value, candidate, equal_nan=True, **tolerances)

    same = same or near
    for name, (diagnosis, wrong) in mistakes.items():
        for candidate in wrong if isinstance(wrong, tuple) else (wrong,):
            if same(value, candidate):
                return name, diagnosis
    return None


def expect_unchanged(exercise: Codes, before: list[_Tensor], after: tuple, advice: str) -> None:
    """The student's function must leave its inputs as they were."""
    if not unchanged(before, after):
        raise CheckFailed(f"{exercise}: {advice}", exercise.code("modified_input"))


def judge(
    exercise: Codes,
    got: _Tensor,
    right: _Tensor,
    mistakes,
    *,
    nan_hint: str,
    otherwise,
    **tolerances,
) -> None:
    """The steps every comparison shares, once `got` has the right type and shape: close to
    `right` passes; else the known mistake it reproduces (`mistakes`: a dict as for
    match_mistake, or a function that builds it, called only when needed), else NaN, else
    `otherwise(gap)`: the exercise's own words for a value off by up to `gap`, or its own
    CheckFailed."""
    if close(got, right, **tolerances):
        return
    table = mistakes() if callable(mistakes) else mistakes
    found = match_mistake(got, table, **tolerances)
    if found:
        name, diagnosis = found
        raise CheckFailed(f"{exercise}: {diagnosis}.", exercise.code(name))
    if not all_finite(got):
        raise CheckFailed(
            f"{exercise}: the output holds NaN or infinity. {nan_hint}",
            exercise.code("not_finite"),
        )
    verdict = otherwise((got.double() - right.double()).abs().max().item())
    if isinstance(verdict, CheckFailed):
        raise verdict
    raise CheckFailed(f"{exercise}: {verdict}", exercise.code("wrong_values"))


def same_in_eval(exercise: Codes, module, first: _Tensor, again) -> None:
    """A module in evaluation mode gives the same output twice; dropout that ignores eval()
    (F.dropout(x, p) without training=self.training) does not."""
    second = again[0] if isinstance(again, tuple) else again
    if type(second) is _Tensor and second.shape == first.shape and not _equal(first, second):
        raise CheckFailed(
            f"{exercise}: in evaluation mode (module.eval()) two calls on the same input gave "
            "different outputs, so dropout is applied even when it should be off. "
            "F.dropout(x, p) drops whatever the mode: use the layer's nn.Dropout (self.drop), "
            "or F.dropout(x, p, training=self.training).",
            exercise.code("dropout_in_eval"),
        )


# Once, when a notebook first imports a check: from then on its kernel leaves each failure as data.
_install(notebook_shell())
