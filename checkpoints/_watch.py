"""Watching what runs while a check calls the student's function.

The package holds working references (the model needs them), and PyTorch ships its own
attention. A check must tell an answer the student wrote from one that hands the work to one of
these, however it is reached: an alias, a saved reference, a method of the package's class
called on the student's object. Reading the cell's text cannot see through that; watching the
calls can. While the student's function runs, a profile hook (sys.setprofile, and
threading.setprofile for threads started meanwhile) sees every Python frame that starts and
every C function that is called, and records any that an exercise forbids. The call is left to
finish, so a `try`/`except` around the forbidden call hides nothing, and the check fails
afterwards with the call it saw.

The hook functions are bound when this module is imported, before any student code runs, so
that replacing `sys.setprofile` afterwards does not switch the watch off; a call that changes
the profile hook during the check is itself recorded.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

import torch._ops

_setprofile = sys.setprofile
_getprofile = sys.getprofile
_thread_setprofile = threading.setprofile
_thread_getprofile = threading.getprofile
# torch.ops.aten.NAME(...) and torch.ops.aten.NAME.default(...) enter these two Python methods;
# the operator they run is their `self`.
_OPERATOR_CALLS = (torch._ops.OpOverloadPacket.__call__, torch._ops.OpOverload.__call__)
_OPERATOR_CODES = {fn.__code__ for fn in _OPERATOR_CALLS}
# Calls that would change or remove the hook while it watches.
_HOOK_SETTERS = (sys.setprofile, threading.setprofile, threading.setprofile.__code__)


@dataclass(frozen=True)
class Forbidden:
    """A ready-made implementation that may not do an exercise's work.

    `functions`: Python functions or methods whose code may not run (bound at import, so a
    later alias or saved reference is the same code). `operators`: fragments of the names of C
    functions and PyTorch operators that may not be called (`scaled_dot_product` covers the
    public function and every kernel behind it). `mistake` is the code's name, `instead` what to
    write in its place.
    """

    label: str
    mistake: str
    instead: str
    functions: tuple = ()
    operators: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sighting:
    rule: Forbidden | None  # None: the hook itself was changed
    called: str  # what ran, as a dotted name
    where: str  # the caller's function and line


def _dotted(fn) -> str:
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "?")
    return f"{module}.{name}" if module else name


def _caller(frame) -> str:
    if frame is None:
        return "an unknown place"
    return f"`{frame.f_code.co_name}`, line {frame.f_lineno}"


class Watch:
    """A context manager: `with Watch(rules) as watch: fn(...)`, then `watch.sightings`."""

    def __init__(self, rules: tuple[Forbidden, ...]):
        self.rules = rules
        self.sightings: list[Sighting] = []
        # id -> (code object, rule, name): compared by identity, never by value, so that a student's
        # own function that happens to compile alike is not mistaken for the package's.
        self._codes = {
            id(fn.__code__): (fn.__code__, rule, _dotted(fn))
            for rule in rules
            for fn in rule.functions
        }
        self._fragments = [(frag, rule) for rule in rules for frag in rule.operators]
        self._active = False

    def _operator(self, name: str, called: str, where) -> None:
        for fragment, rule in self._fragments:
            if fragment in name:
                self.sightings.append(Sighting(rule, called, _caller(where)))
                return

    def _hook(self, frame, event, arg) -> None:
        if not self._active:
            return
        if event == "call":
            code = frame.f_code
            found = self._codes.get(id(code))
            if found is not None and found[0] is code:
                self.sightings.append(Sighting(found[1], found[2], _caller(frame.f_back)))
            elif code in _OPERATOR_CODES:
                operator = str(frame.f_locals.get("self", ""))
                self._operator(operator, f"torch.ops.{operator}", frame.f_back)
            elif code is _HOOK_SETTERS[2]:
                self.sightings.append(Sighting(None, "threading.setprofile", _caller(frame.f_back)))
        elif event == "c_call":
            if arg is _HOOK_SETTERS[0]:
                self.sightings.append(Sighting(None, "sys.setprofile", _caller(frame)))
            elif self._fragments:
                self._operator(getattr(arg, "__name__", "") or "", _dotted(arg), frame)

    def __enter__(self) -> Watch:
        self._previous = (_getprofile(), _thread_getprofile())
        self._active = True
        _thread_setprofile(self._hook)
        _setprofile(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        still_ours = _getprofile() == self._hook
        self._active = False
        _setprofile(self._previous[0])
        _thread_setprofile(self._previous[1])
        if not still_ours:
            self.sightings.append(Sighting(None, "the profile hook", "the end of the call"))

    @property
    def first(self) -> Sighting | None:
        """The first forbidden call; the hook's own tampering counts only when nothing else
        was seen."""
        named = [s for s in self.sightings if s.rule is not None]
        return (named or self.sightings or [None])[0]
