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
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

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
