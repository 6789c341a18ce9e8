"""The op database: sample inputs and references for every registered op.

``ember.ops.registry.OPS`` says what an op *is* (its function, signature, variants, whether
it differentiates); this package says how to *exercise* it: for each op name an
:class:`OpEntry` with a sample-input generator, an optional NumPy reference, the dtypes it
supports and the checks that do not apply (each with its reason). PyTorch keeps the same
split (``OpInfo`` in ``torch.testing._internal.common_methods_invocations``).

The generic tests (``tests/ops/test_ops.py``) run every entry through: forward against the
reference and against PyTorch (when installed), float64 gradcheck and gradgradcheck where
the op differentiates, the in-place and ``out=`` variants, the NumPy-backed test device and
the strict device. Graph capture, the ONNX mapping and the C++ op list read the same
samples. ``OpInfo.sample_inputs`` reaches them from the registry.

Families live in submodules (``unary``, ``binary``, ...), each calling :func:`define`;
:func:`load_all` imports them (on first use: ``import ember`` does not pay for them).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SampleInput", "OpEntry", "define", "entries", "entry", "load_all", "make",
           "FLOAT", "FLOAT_AND_INT", "ALL", "INTEGRAL"]

#: dtype groups (ember dtype names)
FLOAT = ("float32", "float64")
INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
FLOAT_AND_INT = FLOAT + ("int32", "int64")
ALL = FLOAT + INTEGRAL + ("bool", "float16")


class SampleInput:
    """One call of an op: ``op(input, *args, **kwargs)``; ``name`` tells samples apart in
    failure messages. Tensors may appear in ``args`` and ``kwargs`` (also inside lists)."""

    __slots__ = ("input", "args", "kwargs", "name")

    def __init__(self, input, *args, name: str = "", **kwargs):
        self.input, self.args, self.kwargs, self.name = input, args, kwargs, name

    def call(self, fn: Callable):
        return fn(self.input, *self.args, **self.kwargs)

    def map_tensors(self, f: Callable) -> SampleInput:
        """A copy with ``f`` applied to every tensor (moves, detaching, conversions)."""
        s = SampleInput.__new__(SampleInput)
        s.input = _map(self.input, f)
        s.args = _map(self.args, f)
        s.kwargs = _map(self.kwargs, f)
        s.name = self.name
        return s

    def tensors(self) -> list:
        out: list = []
        _map((self.input, self.args, self.kwargs), lambda t: out.append(t) or t)
        return out

    def __repr__(self) -> str:
        def short(x):
            from ..._tensor import Tensor

            if isinstance(x, Tensor):
                return f"Tensor{tuple(x.shape)}:{x.dtype}"
            if isinstance(x, (list, tuple)):
                return type(x)(short(v) for v in x)
            return x

        args = ", ".join([repr(short(self.input))] + [repr(short(a)) for a in self.args] +
                         [f"{k}={short(v)!r}" for k, v in self.kwargs.items()])
        return f"SampleInput({args}){' ' + self.name if self.name else ''}"


def _map(x, f):
    from ..._tensor import Tensor

    if isinstance(x, Tensor):
        return f(x)
    if type(x) in (list, tuple):
        return type(x)(_map(v, f) for v in x)
    if type(x) is dict:
        return {k: _map(v, f) for k, v in x.items()}
    return x


@dataclass
class OpEntry:
    """How to exercise op ``name`` (see the module doc).

    ``samples(device, dtype, requires_grad)`` yields :class:`SampleInput`s; ``ref`` maps
    the samples' host arrays (NumPy) to the expected output; ``torch`` is the name of the
    PyTorch function to compare with (``None``: no oracle, ``""``: same name); ``skip``
    maps a check (``"gradcheck"``, ``"gradgradcheck"``, ``"torch"``, ``"strict"``,
    ``"testdev"``, ``"inplace"``, ``"out"``, ``"ref"``) to the reason it does not apply.
    """

    name: str
    samples: Callable[..., Iterable[SampleInput]]
    dtypes: tuple = FLOAT
    ref: Callable | None = None
    torch: str | None = ""
    atol: float = 1e-5
    rtol: float = 1.3e-6
    grad_atol: float = 1e-5
    grad_rtol: float = 1e-3
    skip: dict = field(default_factory=dict)
    output: Callable | None = None   # picks the differentiable output(s) of a tuple result


_ENTRIES: dict[str, OpEntry] = {}
_LOADED = [False]


def define(name: str, samples: Callable, **kwargs) -> OpEntry:
    """Add (or replace) the entry of op ``name``; its samples draw from seeds of their own
    (:func:`_own_seeds`)."""
    e = OpEntry(name, _own_seeds(name, samples), **kwargs)
    _ENTRIES[name] = e
    return e


def load_all() -> dict[str, OpEntry]:
    """Import every family module once; the entries by op name."""
    if not _LOADED[0]:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        _LOADED[0] = True
    return _ENTRIES


def entries() -> dict[str, OpEntry]:
    return load_all()


def entry(name: str) -> OpEntry | None:
    return load_all().get(name)


# -- seeds ---------------------------------------------------------------------------------

class SeedStream:
    """A family module's sequence of sample seeds (``next(stream)``), started at ``start``.

    Every op's samples see the streams positioned at the op's own place (``start`` plus an
    offset from the op's name) and advance them privately: an op draws the same samples
    whichever tests drew samples before it in the process, and in whatever order its
    sample generators are interleaved with others'. (The streams used to be shared
    counters: a sample's values depended on the tests an xdist worker ran before it, and a
    CI run drew an ill-conditioned complex pinverse sample no local run had.)"""

    def __init__(self, start: int) -> None:
        self.start = start
        self.position = start
        _STREAMS.append(self)

    def __iter__(self):
        return self

    def __next__(self) -> int:
        n = self.position
        self.position += 1
        return n


_STREAMS: list[SeedStream] = []


def _own_seeds(name: str, samples: Callable) -> Callable:
    """``samples`` run with every seed stream at the op's own positions (saved between
    draws, the streams' other positions restored around each)."""
    offset = zlib.crc32(name.encode()) % 1_000_000 * 1000

    @functools.wraps(samples)
    def seeded(*args, **kwargs):
        mine: dict[int, int] = {}

        def step(advance):
            saved = [s.position for s in _STREAMS]
            for s in _STREAMS:
                s.position = mine.get(id(s), s.start + offset)
            try:
                return advance()
            finally:
                for s in _STREAMS:
                    mine[id(s)] = s.position
                for s, p in zip(_STREAMS, saved):
                    s.position = p

        it = step(lambda: iter(samples(*args, **kwargs)))
        done = object()
        while (item := step(lambda: next(it, done))) is not done:
            yield item

    return seeded


# -- making sample tensors -------------------------------------------------------------------

_SEEDS = SeedStream(0)


def make(shape, dtype, device=None, *, low=None, high=None, requires_grad=False,
         seed=None, exclude_zero=False, noncontiguous=False):
    """A sample tensor: uniform in ``[low, high)`` (floats default to [-3, 3), integers to
    [-9, 10), uint8 to [0, 10), bool random), reproducible (``seed`` or the next of a fixed
    sequence), optionally non-contiguous (a strided view of a larger tensor)."""
    import ember

    dt = getattr(ember, dtype) if isinstance(dtype, str) else dtype
    rng = np.random.default_rng(next(_SEEDS) if seed is None else seed)
    shape = tuple(shape)
    full = shape[:-1] + (shape[-1] * 2,) if noncontiguous and shape else shape
    name = dt.np.name if hasattr(dt, "np") else str(dt)
    if name == "bool":
        arr = rng.random(full) < 0.5
    elif np.dtype(name).kind in "iu":
        # the integers inside [low, high): a float domain (0.1, 5) gives 1..4
        lo = (0 if np.dtype(name).kind == "u" else -9) if low is None else int(np.ceil(low))
        hi = 10 if high is None else int(np.ceil(high))
        if np.dtype(name).kind == "u":
            lo = max(lo, 0)
        hi = max(hi, lo + 1)
        arr = rng.integers(lo, hi, size=full).astype(name)
        if exclude_zero:
            arr[arr == 0] = 1
    else:
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        arr = rng.uniform(lo, hi, size=full).astype(name)
        if exclude_zero:
            arr[np.abs(arr) < 1e-3] = 1.0
    t = ember.tensor(arr, device=device)
    if noncontiguous and shape:
        t = t[..., ::2]
    if requires_grad and name.startswith(("float", "complex")):
        t.requires_grad_(True)
    return t
