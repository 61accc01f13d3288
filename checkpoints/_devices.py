"""A second device on a machine that has only a CPU, so that device slips show without a GPU.

On a GPU, a tensor made without `device=` lands on the CPU, and the first operation that mixes it
with the GPU's tensors fails ("Expected all tensors to be on the same device"). On a CPU every
tensor is on the CPU, so such a slip passes every CPU check and breaks only in a GPU session.

Inside `other_device()` the CPU plays both parts. The accelerator is `DEVICE`, `cpu:0`: a real
device name, so its tensors hold real numbers. A tensor made without naming a device, or on
"cpu", is the host's; every other tensor counts as on the accelerator: those made before, with
`device=x.device` of one there or `device=DEVICE`, moved with `.to(DEVICE)`, or computed from
tensors there. Then, as on CUDA:

- an operation that mixes a host tensor of one dimension or more with an accelerator tensor
  raises; a 0-dimensional host tensor mixes freely (a CPU scalar);
- copying across (`copy_`, assignment into a slice) and indexing with host indices work, and
  moving (`.to`, `.cpu()`) always copies;
- `x.device` says where x is, and `.numpy()` of an accelerator tensor raises;
- a generator draws only for its own device: `torch.Generator(device=DEVICE)` the accelerator's,
  any other the host's; for the same seed the two draw different numbers, as CUDA's and the
  CPU's do (explicit generators only: the default generator is the CPU's for both);
- `torch.load(..., map_location=DEVICE)` loads onto the accelerator.

The host's tensors are known by their storage, so views, `param.data = ...` and in-place
operations stay where their storage is. Entering `other_device()` again inside itself changes
nothing, so a check that uses it also runs inside a notebook run under it.

`device_slip` reads an error for the other device slip, on any machine: a device named by hand
that the runtime lacks ("cuda" on a CPU, "mps" off a Mac, "cuda:1" beside one GPU), or one
operation that mixes two devices, on a real GPU or on the stand-in.
"""

from __future__ import annotations

import re
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map_only

DEVICE = torch.device("cpu", 0)  # stands for the GPU
HOST = torch.device("cpu")

_Tensor = torch.Tensor
_Generator = torch.Generator
_load = torch.load
_parse_to = torch._C._nn._parse_to
_DEVICE_OF = _Tensor.device.__get__
_MOVES = (_Tensor.to, _Tensor.cpu)
# What CUDA lets cross devices: copies, indexing with host indices, setting `.data` or `.grad`.
_ACROSS = (
    _Tensor.copy_,
    _Tensor.__setitem__,
    _Tensor.__getitem__,
    torch._has_compatible_shallow_copy_type,
)
_TO_NUMPY = (_Tensor.numpy, _Tensor.__array__)

_OTHER_STREAM = 0x5DEECE66D  # added to a seed of the accelerator's generators
_host_storages: weakref.WeakSet = weakref.WeakSet()
_device_generators: weakref.WeakSet = weakref.WeakSet()
_active = False


class DeviceMismatch(RuntimeError):
    """An operation mixed the host's tensors with the accelerator's, as CUDA refuses to."""


def on_host(t: torch.Tensor) -> bool:
    """Whether `t` lives on the host (as opposed to the accelerator) under `other_device()`."""
    try:
        return t.untyped_storage() in _host_storages
    except (RuntimeError, NotImplementedError):  # a tensor without storage
        return False


def _is_accelerator(device) -> bool:
    return device is not None and torch.device(device) == DEVICE


class _TrackedGenerator(_Generator):
    """torch.Generator, remembering which generators were made for the accelerator."""

    def __new__(cls, device="cpu"):
        generator = super().__new__(cls, device)
        if _is_accelerator(device):
            _device_generators.add(generator)
        return generator

    @property
    def device(self) -> torch.device:
        return DEVICE if self in _device_generators else HOST

    def manual_seed(self, seed: int):
        # CUDA's generator draws other numbers than the CPU's for the same seed, and so here.
        return super().manual_seed(seed + _OTHER_STREAM if self in _device_generators else seed)


def _load_tracked(*args, map_location=None, **kwargs):
    """torch.load: `map_location=DEVICE` reads onto the host, then moves what it read."""
    if not _is_accelerator(map_location):
        return _load(*args, map_location=map_location, **kwargs)
    loaded = _load(*args, map_location=HOST, **kwargs)
    return tree_map_only(_Tensor, lambda t: t.to(DEVICE), loaded)


class _Mode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func == _DEVICE_OF:
            return HOST if on_host(args[0]) else DEVICE
        if func in _TO_NUMPY and not on_host(args[0]):
            raise TypeError(
                f"can't convert {DEVICE} device type tensor to numpy. Use Tensor.cpu() to copy "
                "the tensor to host memory first."
            )
        if func in _MOVES:
            return _move(func, args, kwargs)
        on_accelerator = not on_host(args[0]) if _crosses(func) else _placement(func, args, kwargs)
        _check_generator(kwargs.get("generator"), on_accelerator)
        out = func(*args, **kwargs)
        if not on_accelerator:
            _mark_host(out)
        return out


def _crosses(func) -> bool:
    return func in _ACROSS or getattr(func, "__name__", "") == "__set__"


def _placement(func, args, kwargs) -> bool:
    """Whether `func`'s result lives on the accelerator; raises where CUDA would."""
    if kwargs.get("device") is not None:
        return _is_accelerator(kwargs["device"])
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, _Tensor)]
    there = [t for t in tensors if not on_host(t)]
    here = [t for t in tensors if on_host(t) and t.dim() > 0]
    if there and here:
        raise DeviceMismatch(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{DEVICE} and {HOST}! (in {getattr(func, '__name__', func)}, a tensor of shape "
            f"{tuple(here[0].shape)} is on the host; {DEVICE} stands for a GPU here, as cuda:0 "
            "would)"
        )
    return bool(there)


def _move(func, args, kwargs):
    """.to(...) and .cpu(): a copy whenever the tensor changes device, as on CUDA."""
    tensor = args[0]
    if func is _Tensor.cpu:
        target = HOST
    elif len(args) > 1 and isinstance(args[1], _Tensor):
        target = HOST if on_host(args[1]) else DEVICE
    else:
        target = _parse_to(*args[1:], **kwargs)[0]
    source_there = not on_host(tensor)
    target_there = source_there if target is None else _is_accelerator(target)
    out = func(*args, **kwargs)
    if target_there != source_there and out is tensor:
        out = out.clone()
    if not target_there:
        _mark_host(out)
    return out


def _check_generator(generator, on_accelerator: bool) -> None:
    if generator is None:
        return
    generator_there = generator in _device_generators
    if generator_there != on_accelerator:
        want, found = (DEVICE, HOST) if on_accelerator else (HOST, DEVICE)
        raise DeviceMismatch(
            f"Expected a '{want}' device type for generator but found '{found}' ({DEVICE} "
            "stands for a GPU here): draw with a generator made for the device the numbers "
            "land on."
        )


def _mark_host(out) -> None:
    for t in tree_flatten(out)[0]:
        if isinstance(t, _Tensor):
            try:
                _host_storages.add(t.untyped_storage())
            except (RuntimeError, NotImplementedError):
                pass


@contextmanager
def other_device():
    """Run the block as if on a GPU machine: `DEVICE` is the GPU, the CPU is the host."""
    global _active
    if _active:
        yield
        return
    _active = True
    torch.Generator, torch.load = _TrackedGenerator, _load_tracked
    try:
        with _Mode():
            yield
    finally:
        torch.Generator, torch.load = _Generator, _load
        _active = False


# PyTorch's words for a device this runtime lacks: a CPU build asked for CUDA, a machine without
# its driver or GPU, an ordinal past the last GPU, a backend not built in, a name it does not know.
_ABSENT = re.compile(
    r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available|"
    r"invalid device ordinal|not linked with support for \w+ devices|MPS backend is supported|"
    r"device type at start of device string|with arguments from the '(CUDA|MPS)' backend"
)
# ... and for one operation given tensors of two devices.
_MIXED = re.compile(
    r"on the same device|same device as|different from other tensors on|device type for generator"
)
_DEVICE_NAMED = re.compile(
    r"""device\s*=\s*(?:torch\.device\(\s*)?["']([^"']+)["']"""
    r"""|\.to\(\s*(?:torch\.device\(\s*)?["']([^"']+)["']"""
    r"""|torch\.device\(\s*["']([^"']+)["']"""
    r"|\.(cuda)\(\s*(\d*)\s*\)"
)
_DEVICE_WORD = re.compile(r"\b(?:cuda|cpu|mps)(?::\d+)?\b")


@dataclass(frozen=True)
class Slip:
    """A device slip an error tells: `asked`, the device the code named by hand (None where it
    named none); `mixed`, the devices one operation was given, or () where the runtime lacks
    `asked`; `said`, PyTorch's own words; `simulated`, whether the stand-in GPU refused it."""

    asked: str | None
    mixed: tuple[str, ...]
    said: str
    simulated: bool

    @property
    def absent(self) -> bool:
        return not self.mixed


def device_slip(err: BaseException, line: str) -> Slip | None:
    """The device slip that `err`, raised by the student's `line` of code, tells, or None."""
    text = str(err)
    said = text.strip().splitlines()[0].split(". ")[0] if text.strip() else type(err).__name__
    asked = _named_in(line)
    if isinstance(err, DeviceMismatch):
        return Slip(asked, ("cuda:0", str(HOST)), said, True)  # DEVICE stands for cuda:0
    if _MIXED.search(text):
        return Slip(asked, tuple(dict.fromkeys(_DEVICE_WORD.findall(text))), said, False)
    absent = _ABSENT.search(text)
    if absent is None or (absent.group(1) and _has(absent.group(1).lower())):
        return None  # an operator missing on a backend this machine has: not a device slip
    return Slip(asked or _named_in_error(text), (), said, False)


def _named_in(line: str) -> str | None:
    """The first device other than the CPU that `line` names by hand: device="cuda",
    .to("mps"), torch.device("cuda:1"), .cuda(), .cuda(1)."""
    for match in _DEVICE_NAMED.finditer(line):
        named = match.group(1) or match.group(2) or match.group(3)
        if match.group(4):
            named = f"cuda:{match.group(5)}" if match.group(5) else "cuda"
        if named and named != "cpu":
            return named
    return None


def _named_in_error(text: str) -> str:
    found = re.search(r"device string: (\S+)|support for (\w+) devices|'(\w+)' backend", text)
    named = next((g for g in found.groups() if g), None) if found else None
    if named:
        return named.lower()
    return "mps" if "MPS" in text else "cuda"


def _has(device_type: str) -> bool:
    if device_type == "cuda":
        return torch.cuda.is_available()
    return device_type == "mps" and torch.backends.mps.is_available()


def devices_here() -> str:
    """The devices this runtime has, in words: "only the CPU", "the CPU and cuda:0"."""
    found = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    found += ["mps"] if torch.backends.mps.is_available() else []
    return f"the CPU and {', '.join(found)}" if found else "only the CPU"


def shown_device(t: torch.Tensor) -> str:
    """Where `t` is, as a student reads it: under `other_device()`, cuda:0 for the stand-in GPU."""
    if _active:
        return str(HOST) if on_host(t) else "cuda:0"
    return str(_DEVICE_OF(t))
