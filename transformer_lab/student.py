"""The seam between the student's code and the model: the pieces written in notebooks 01-03.

When Exercise 1 (the attention), 2 (the causal mask) or 3 (the input step) passes its checkpoint,
the student's function is kept as readable source in one small module of their own,
`my_transformer.py`, as CS336 keeps a student's code behind tests/adapters.py. The later notebooks
find it where notebook 04 leaves the trained model (transformer_lab/saving.py): on Colab in the
student's Google Drive (`MyDrive/transformer-lab/`, asked once a notebook, `USE_DRIVE` answering
in advance), elsewhere beside the notebook. A piece that is missing or fails to import is the
course's, and each notebook says whose each piece is. The re-run of a piece's own checkpoint, and
the rule that grading uses none of this, live with the checks (checkpoints/yours.py).
"""

from __future__ import annotations

import inspect
import re
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from .attention import causal_mask, scaled_dot_product_attention
from .model import GPTConfig, MiniGPT, embed_with_positions
from .saving import DRIVE_FOLDER, OFF_COLAB, drive_folder

MODULE = Path("my_transformer.py")  # beside the notebook, or in the Drive's course folder

HEADER = '''"""Your pieces of the transformer, kept by the Transformer Lab notebooks.

Each function below was copied here when its exercise's checkpoint passed; the later notebooks
build the mini-GPT from them (the course's own where one is missing). To change one, edit it in
its notebook and run that checkpoint again: the notebook keeps the new version here.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
'''
_SECTION = re.compile(r"^# --- (\w+), from notebook (\d\d) ---$", re.M)


@dataclass(frozen=True)
class Spec:
    """One piece: its name in sentences, the function the student writes, where."""

    name: str  # "attention"
    function: str  # "scaled_dot_product_attention"
    notebook: str  # "01"
    exercise: str  # "Exercise 1"


SPECS = {
    spec.name: spec
    for spec in (
        Spec("attention", "scaled_dot_product_attention", "01", "Exercise 1"),
        Spec("mask", "causal_mask", "02", "Exercise 2"),
        Spec("embedding", "embed_with_positions", "03", "Exercise 3"),
    )
}


def _course_mask(T: int):
    return causal_mask(T)


COURSE = {
    "attention": scaled_dot_product_attention,
    "mask": _course_mask,
    "embedding": embed_with_positions,
}


@dataclass(frozen=True)
class Piece:
    """A piece the model runs on: the student's own (`yours`) or the course's, and why."""

    spec: Spec
    fn: Callable
    yours: bool
    why: str  # where the student's was found, or why the course's stands in

    @property
    def whose(self) -> str:
        return f"your {self.spec.name}" if self.yours else f"the course's {self.spec.name}"

    @property
    def line(self) -> str:
        """What a notebook prints about this piece, in one line."""
        if self.yours:
            return f"{self.spec.name}: yours, from notebook {self.spec.notebook} ({self.why})"
        return f"{self.spec.name}: the course's: {self.why}"

    def instead(self, why: str) -> Piece:
        """The course's piece in place of this one, saying why."""
        return replace(self, fn=COURSE[self.spec.name], yours=False, why=why)


class Pieces(NamedTuple):
    attention: Piece
    mask: Piece
    embedding: Piece

    def lines(self) -> str:
        return "\n".join(piece.line for piece in self)

    def names(self) -> str:
        """'your attention, your mask and the course's embedding'."""
        whose = [piece.whose for piece in self]
        return f"{', '.join(whose[:-1])} and {whose[-1]}"

    def plug(self, model: MiniGPT, *, explicit: bool = False) -> MiniGPT:
        """Run `model` on the student's pieces. The course's pieces stay the package's, where
        training takes PyTorch's fused kernel; `explicit` puts the course's functions in too, so
        that every attention step runs Equations 3-4 as written (the leak tests)."""

        def chosen(piece: Piece):
            return piece.fn if piece.yours or explicit else None

        model.use_attention(chosen(self.attention)).use_mask(chosen(self.mask))
        model.embed = chosen(self.embedding)
        return model

    def model(self, config: GPTConfig | None = None, *, explicit: bool = False) -> MiniGPT:
        return self.plug(MiniGPT(config or GPTConfig()), explicit=explicit)

    def using(self, name: str, fn: Callable, why: str) -> Pieces:
        """These pieces with the student's `fn` as `name` (written in this notebook)."""
        return self._replace(**{name: Piece(SPECS[name], fn, True, why)})


def course_pieces(why: str) -> Pieces:
    return Pieces(*(Piece(spec, COURSE[name], False, why) for name, spec in SPECS.items()))


# --- Keeping a piece ----------------------------------------------------------------------------


def _where(folder: Path | None) -> tuple[Path, str]:
    if folder is None:
        return MODULE, f"{MODULE} beside this notebook"
    return folder / MODULE.name, f"{DRIVE_FOLDER / MODULE.name} in your Google Drive"


def _sections(text: str) -> dict[str, str]:
    """name -> source of each piece the module holds, in the order written."""
    marks = list(_SECTION.finditer(text))
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return {m.group(1): text[m.end() : end].strip("\n") for m, end in zip(marks, ends, strict=True)}


def source_of(name: str, fn: Callable) -> str:
    """The student's function as source, named as its exercise names it."""
    source = textwrap.dedent(inspect.getsource(fn)).strip("\n")
    function = SPECS[name].function
    if fn.__name__ != function:
        source += f"\n\n\n{function} = {fn.__name__}"
    return source


def write_module(path: Path, sections: dict[str, str]) -> None:
    parts = [HEADER]
    for name, spec in SPECS.items():  # in the order the notebooks write them
        if name in sections:
            parts.append(f"\n# --- {name}, from notebook {spec.notebook} ---\n{sections[name]}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))


def keep(name: str, fn: Callable, use_drive: bool | None = None) -> str:
    """Copy the student's function into their module; a sentence that says where, or why not."""
    spec = SPECS[name]
    try:
        source = source_of(name, fn)
    except (OSError, TypeError) as err:  # defined where Python keeps no source
        return f"Your {name} was not kept for the later notebooks: no source to copy ({err})."
    folder, why_not = drive_folder(use_drive, writing=True)
    path, where = _where(folder)
    sections = _sections(path.read_text()) if path.is_file() else {}
    sections[name] = source
    write_module(path, sections)
    if why_not in (None, OFF_COLAB):
        return f"Kept your {spec.function} in {where}: the later notebooks build the model from it."
    return (
        f"Kept your {spec.function} in {where}, not in your Google Drive: {why_not}. On Colab the "
        "later notebooks, each on a machine of its own, will use the course's instead."
    )


# --- Finding the pieces -------------------------------------------------------------------------


def find(use_drive: bool | None = None) -> tuple[Path | None, str, str]:
    """(path, where it was found, '') of the student's module, or (None, '', where it was not)."""
    folder, why_not = drive_folder(use_drive, writing=False)
    if folder is not None and (folder / MODULE.name).is_file():
        return _where(folder) + ("",)
    if MODULE.is_file():
        return MODULE, f"{MODULE} beside this notebook", ""
    if folder is not None:
        return None, "", "in your Google Drive or beside this notebook"
    if why_not == OFF_COLAB:
        return None, "", "beside this notebook"
    return None, "", f"beside this notebook, and your Google Drive was not searched: {why_not}"


def _imported(name: str, source: str, where: str) -> Callable:
    """The function `source` defines, run under the module's header in a module of its own."""
    module = types.ModuleType(MODULE.stem)
    module.__file__ = where
    exec(compile(f"{HEADER}\n{source}\n", where, "exec"), module.__dict__)
    fn = module.__dict__.get(SPECS[name].function)
    if not callable(fn):
        raise NameError(f"it defines no function {SPECS[name].function}")
    return fn


def load(use_drive: bool | None = None) -> Pieces:
    """The student's pieces from their module, the course's where one is missing or does not
    import; each says why. The checks re-run each piece's checkpoint (checkpoints/yours.py)."""
    path, where, not_found = find(use_drive)
    sections = _sections(path.read_text()) if path is not None else {}
    pieces = []
    for name, spec in SPECS.items():
        course = Piece(spec, COURSE[name], False, "")
        if name not in sections:
            found = f"{where} holds no {spec.function}" if path else not_found
            why = f"no notebook {spec.notebook} of yours was found {found}"
            if path:
                why = f"no notebook {spec.notebook} of yours was found: {found}"
            pieces.append(course.instead(why))
            continue
        try:
            fn = _imported(name, sections[name], str(path))
        except Exception as err:  # the student's source: anything can fail
            why = f"your {spec.function} in {where} does not import ({type(err).__name__}: {err})"
            pieces.append(course.instead(why))
            continue
        pieces.append(replace(course, fn=fn, yours=True, why=f"kept in {where}"))
    return Pieces(*pieces)
