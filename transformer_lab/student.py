"""The seam between the student's code and the model: the pieces written in notebooks 01-03.

When Exercise 1 (the attention), 2 (the causal mask) or 3 (the input step) passes its checkpoint,
the student's function is kept as readable source in one small module of their own,
`my_transformer.py`, as CS336 keeps a student's code behind tests/adapters.py, with what it reads
from the notebook (transformer_lab/needs.py). The later notebooks find it where notebook 04 leaves
the trained model (transformer_lab/saving.py): on Colab in the student's Google Drive
(`MyDrive/transformer-lab/`, mounted or declined once, in each notebook's setup cell, as
`USE_DRIVE` says), elsewhere beside the notebook. A piece that is missing or fails to import is
the course's, and each notebook says whose each piece is. Each piece's section line records when
its checkpoint passed and in which cell run (`Kept`): an edit that then fails leaves that version
kept, the failing check says so, and the later notebooks name the version they run. The re-run of
a piece's own checkpoint (checkpoints/_core.py `check_again`), and the rule that grading uses none
of this, live with the checks (checkpoints/yours.py).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import re
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from .catalogue import PIECES, Exercise
from .model import GPTConfig, MiniGPT
from .needs import needed
from .saving import DRIVE_FOLDER, OFF_COLAB, drive_folder

MODULE = Path("my_transformer.py")  # beside the notebook, or in the Drive's course folder

HEADER = '''"""Your pieces of the transformer, kept by the Transformer Lab notebooks.

Each function below was copied here when its exercise's checkpoint passed (its line says when,
and in which run of the cell); the later notebooks build the mini-GPT from them (the course's own
where one is missing). To change one, edit it in its notebook and run that checkpoint again: the
notebook keeps the new version here once it passes, and the last that passed until then.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
'''
# A piece's section line: "# --- attention, from notebook 01, kept 2025-01-31T14:02:17+00:00 in
# cell run [12] ---" (the record of `Kept`; a module kept before it was recorded has none).
_SECTION = re.compile(r"^# --- (\w+), from notebook (\d\d)(?:, kept ([^\n]*?))? ---$", re.M)
_KEPT = re.compile(r"(\S+)(?: in cell run \[(\d+)\])?")


@dataclass(frozen=True)
class Kept:
    """Which version of a piece the module holds: when its checkpoint passed and kept it, and
    the run of the cell it passed in (the number Jupyter shows beside the cell, "[12]"). It is
    written in the piece's section line, so that a later notebook names the version it runs and
    a failing checkpoint the version that still stands. None where not known."""

    when: datetime | None = None
    cell: int | None = None

    @classmethod
    def now(cls, cell: int | None = None) -> Kept:
        return cls(datetime.now().astimezone().replace(microsecond=0), cell)

    @classmethod
    def read(cls, mark: str | None) -> Kept:
        """The record a section line holds after "kept " ('' where it holds none); whatever is
        edited out of shape is not known."""
        found = _KEPT.fullmatch(mark or "")
        if found is None:
            return cls()
        try:
            when = datetime.fromisoformat(found[1])
        except ValueError:
            when = None
        return cls(when, int(found[2]) if found[2] else None)

    def mark(self) -> str:
        """', kept 2025-01-31T14:02:17+00:00 in cell run [12]', for the section line."""
        if self.when is None:
            return ""
        cell = f" in cell run [{self.cell}]" if self.cell is not None else ""
        return f", kept {self.when.isoformat()}{cell}"

    @property
    def said(self) -> str:
        """'2025-01-31 14:02 UTC, cell [12]'; '' where the time is not known."""
        if self.when is None:
            return ""
        zone = f" {self.when.tzname()}" if self.when.tzname() else ""
        cell = f", cell [{self.cell}]" if self.cell is not None else ""
        return f"{self.when:%Y-%m-%d %H:%M}{zone}{cell}"


@dataclass(frozen=True)
class Piece:
    """A piece the model runs on: the student's own (`yours`) or the course's, and why."""

    exercise: Exercise  # the catalogue's exercise that writes it
    fn: Callable
    yours: bool
    why: str  # where the student's was found, or why the course's stands in
    kept: Kept | None = None  # the student's: which version the module holds

    @property
    def name(self) -> str:
        return self.exercise.piece  # "attention"

    @property
    def whose(self) -> str:
        return f"your {self.name}" if self.yours else f"the course's {self.name}"

    @property
    def line(self) -> str:
        """What a notebook prints about this piece, in one line."""
        if not self.yours:
            return f"{self.name}: the course's: {self.why}"
        passed = f", passed {self.kept.said}" if self.kept is not None and self.kept.said else ""
        return f"{self.name}: yours, from notebook {self.exercise.number}{passed} ({self.why})"

    def instead(self, why: str) -> Piece:
        """The course's piece in place of this one, saying why."""
        return replace(self, fn=self.exercise.course, yours=False, why=why, kept=None)


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
        that every attention step runs Equations 3-4 as written (the leak tests). What the
        student's pieces print while the model runs is held back and counted (`printed`)."""
        model.printed = held = Printed()

        def chosen(piece: Piece):
            if piece.yours:
                return held.hold(piece)
            return piece.fn if explicit else None

        model.use_attention(chosen(self.attention)).use_mask(chosen(self.mask))
        model.embed = chosen(self.embedding)
        return model

    def model(self, config: GPTConfig | None = None, *, explicit: bool = False) -> MiniGPT:
        return self.plug(MiniGPT(config or GPTConfig()), explicit=explicit)

    def using(self, name: str, fn: Callable, why: str) -> Pieces:
        """These pieces with the student's `fn` as `name` (written in this notebook)."""
        return self._replace(**{name: Piece(PIECES[name], fn, True, why)})


class Printed:
    """What the student's pieces print while a model runs on them. A debugging print left in
    the attention runs in every layer of every step, evaluation and sampled character:
    thousands of lines that would slow the notebook's page. They are held back and counted,
    and `summary` says in one line how many there were, whose, and the first of them."""

    def __init__(self):
        self._start()

    def _start(self) -> None:
        self.lines, self.first, self.whose = 0, "", []

    def hold(self, piece: Piece) -> Callable:
        fn = piece.fn

        @functools.wraps(fn)
        def held(*args, **kwargs):
            buffer = io.StringIO()
            try:
                with contextlib.redirect_stdout(buffer):
                    return fn(*args, **kwargs)
            finally:
                self._count(piece, buffer.getvalue())

        return held

    def _count(self, piece: Piece, text: str) -> None:
        lines = text.splitlines()
        if not lines:
            return
        self.first = self.first or lines[0]
        self.lines += len(lines)
        if piece.whose not in self.whose:
            self.whose.append(piece.whose)

    def summary(self) -> str:
        """'' where nothing was printed; else one line, and the count starts again."""
        if not self.lines:
            return ""
        first = self.first if len(self.first) <= 80 else self.first[:77] + "..."
        said = (
            f"{' and '.join(self.whose).capitalize()} printed {self.lines:,} lines while the "
            f"model ran, held back here; the first: {first!r}. Remove the print from the "
            "notebook that wrote it and run its checkpoint again, once you no longer need it."
        )
        self._start()
        return said


def printed(model) -> str:
    """One line on what the student's pieces printed while `model` ran ('' if nothing)."""
    held = getattr(model, "printed", None)
    return held.summary() if held is not None else ""


def course_pieces(why: str) -> Pieces:
    return Pieces(*(Piece(exercise, exercise.course, False, why) for exercise in PIECES.values()))


# --- Keeping a piece ----------------------------------------------------------------------------


def _where(folder: Path | None) -> tuple[Path, str]:
    if folder is None:
        return MODULE, f"{MODULE} beside this notebook"
    return folder / MODULE.name, f"{DRIVE_FOLDER / MODULE.name} in your Google Drive"


def _sections(text: str) -> dict[str, str]:
    """name -> source of each piece the module holds, in the order written."""
    marks = list(_SECTION.finditer(text))
    ends = [m.start() for m in marks[1:]] + [len(text)] if marks else []
    return {m.group(1): text[m.end() : end].strip("\n") for m, end in zip(marks, ends, strict=True)}


def source_of(name: str, fn: Callable) -> str:
    """The student's function as source, named as its exercise names it, below what it needs
    from the notebook (transformer_lab/needs.py)."""
    source = textwrap.dedent(inspect.getsource(fn)).strip("\n")
    function = PIECES[name].function
    if fn.__name__ != function:
        source += f"\n\n\n{function} = {fn.__name__}"
    above = needed(fn).source()
    return f"{above}\n\n\n{source}" if above else source


def _records(text: str) -> dict[str, Kept]:
    """name -> the record of which version of each piece the module holds."""
    return {m.group(1): Kept.read(m.group(3)) for m in _SECTION.finditer(text)}


def write_module(path: Path, sections: dict[str, str], kept: dict[str, Kept] | None = None) -> None:
    """The module holding `sections` (name -> source), each under its section line with its
    record in `kept`, where there is one."""
    parts, kept = [HEADER], kept or {}
    for name, exercise in PIECES.items():  # in the order the notebooks write them
        if name in sections:
            mark = kept[name].mark() if name in kept else ""
            parts.append(
                f"\n# --- {name}, from notebook {exercise.number}{mark} ---\n{sections[name]}\n"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))


def keep(name: str, fn: Callable, use_drive: bool | None = None, cell: int | None = None) -> str:
    """Copy the student's function, with what it needs, into their module, recorded as kept now
    in cell run `cell`; sentences that say where, or why not, and which names it reads could not
    come with it."""
    exercise = PIECES[name]
    try:
        source, missing = source_of(name, fn), needed(fn).missing
    except (OSError, TypeError) as err:  # defined where Python keeps no source
        return f"Your {name} was not kept for the later notebooks: no source to copy ({err})."
    folder, why_not = drive_folder(use_drive, writing=True)
    path, where = _where(folder)
    text = path.read_text() if path.is_file() else ""
    sections, kept = _sections(text), _records(text)
    sections[name], kept[name] = source, Kept.now(cell)
    write_module(path, sections, kept)
    said = f"Kept your {exercise.function} in {where}"
    if why_not in (None, OFF_COLAB):
        said += ": the later notebooks build the model from it."
    else:
        said += (
            f", not in your Google Drive: {why_not}. On Colab the later notebooks, each on a "
            "machine of its own, will use the course's instead."
        )
    return said + "".join(
        f"\n{name!r} did not come with it: {why}. Define it inside {exercise.function}, or in this "
        "notebook as a def, a constant or an import, then run this checkpoint again."
        for name, why in missing.items()
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


def _imported(name: str, text: str, where: str) -> Callable:
    """The function that piece `name`'s section of the module `text` defines, run under the
    module's header in a module of its own, each line at its line of the file: a traceback, and
    a check's message, then point at the line the student can open."""
    mark = next(m for m in _SECTION.finditer(text) if m.group(1) == name)
    source = _sections(text)[name]
    first = text.count("\n", 0, text.index(source, mark.end()))  # lines above the section's code
    module = types.ModuleType(MODULE.stem)
    module.__file__ = where
    exec(compile(HEADER, where, "exec"), module.__dict__)
    exec(compile("\n" * first + source + "\n", where, "exec"), module.__dict__)
    fn = module.__dict__.get(PIECES[name].function)
    if not callable(fn):
        raise NameError(f"it defines no function {PIECES[name].function}")
    return fn


def load(use_drive: bool | None = None) -> Pieces:
    """The student's pieces from their module, the course's where one is missing or does not
    import; each says why. The checks re-run each piece's checkpoint (checkpoints/yours.py)."""
    path, where, not_found = find(use_drive)
    text = path.read_text() if path is not None else ""
    sections = _sections(text)
    pieces = []
    for name, exercise in PIECES.items():
        course = Piece(exercise, exercise.course, False, "")
        if name not in sections:
            found = f"{where} holds no {exercise.function}" if path else not_found
            why = f"no notebook {exercise.number} of yours was found {found}"
            if path:
                why = f"no notebook {exercise.number} of yours was found: {found}"
            pieces.append(course.instead(why))
            continue
        try:
            fn = _imported(name, text, str(path))
        except Exception as err:  # the student's source: anything can fail
            why = (
                f"your {exercise.function} in {where} does not import ({type(err).__name__}: {err})"
            )
            pieces.append(course.instead(why))
            continue
        kept = _records(text)[name]
        pieces.append(replace(course, fn=fn, yours=True, why=f"kept in {where}", kept=kept))
    return Pieces(*pieces)


def kept_version(name: str, use_drive: bool | None = None) -> tuple[Kept, str] | None:
    """(which version, where) of piece `name` in the module a later notebook would load; None
    where that module holds none."""
    path, where, _ = find(use_drive)
    if path is None:
        return None
    found = _records(path.read_text()).get(name)
    return None if found is None else (found, where)
