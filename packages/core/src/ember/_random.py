"""Random numbers: ``ember.Generator``, the default generators and seeding, the random
factories (rand, randn, randint, randperm, normal, bernoulli, multinomial, poisson and the
``*_like`` variants) and the in-place samplers (``uniform_``, ``normal_``, ``random_``...).

A Generator is PyTorch's CPU engine (``_torch_rng.TorchRNG``: mt19937 as PyTorch seeds it,
with its kernels' ways of turning words into samples), so ``manual_seed(s)`` and the same calls
give PyTorch's CPU numbers bit for bit: the factories, the in-place samplers, dropout, the
layers' initialisation, DataLoader's shuffling. Samples are drawn on the host by the generator
of the output's device and moved there by the device's backend (``place``): every device is
deterministic under ``manual_seed``, and a device's stream is the CPU's (PyTorch's CUDA
generator is a different engine, Philox). ``poisson``, ``binomial`` and the gamma family
(``distributions``) run ATen's rejection samplers element by element (``_torch_rng``).
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import secrets
import threading

import numpy as np

from . import _dtype
from . import _memory_format as _mf
from ._device import canonical_device, check_same_device, resolve_device, to_device
from ._dtype import scalar_type_name
from ._factory import (
    _dtype_or_default,
    _is_int_like,
    allocating,
    check_size,
    finish,
    like_order,
    like_sparse,
    out_dtype,
    place,
    refuse_layout,
    size_args,
    size_param,
    sparse_layout,
    tp_name,
    write_out,
    zeros,
)
from ._forksafe import reinit_in_child
from ._front import front as numpy_names  # PyTorch's NumPy keyword names (x=, axis=)
from ._tensor import CPU, Tensor, _make
from ._torch_rng import TorchRNG
from .autograd.grad_mode import GRAD
from .autograd.graph import make_node_class, record
from .ops._inplace import make_inplace
from .ops._promotion import broadcast_shape
from .ops._signatures import check_binds, parser_error
from .ops.registry import register, register_method

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "randn", "randint", "randperm", "normal",
           "poisson", "rand_like", "randn_like", "randint_like"]

#: PyTorch's default seed of a fresh generator
DEFAULT_SEED = 67280421310721
_U64 = 1 << 64


def _check_seed(seed) -> int:
    if not isinstance(seed, (numbers.Integral, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """A pseudo-random number generator, like ``torch.Generator``: PyTorch's CPU engine and
    samplers (``_torch_rng``), so a seeded generator draws PyTorch's numbers.

    ``manual_seed`` makes it deterministic; ``get_state``/``set_state`` save and restore it
    as a uint8 tensor in PyTorch's layout. Pass it as ``generator=`` to any random function
    of its device type.
    """

    def __init__(self, device="cpu"):
        self.device = canonical_device(to_device(device))
        self._np = TorchRNG(DEFAULT_SEED)
        self._seed = DEFAULT_SEED

    def manual_seed(self, seed) -> Generator:
        """Seed the generator; returns it."""
        self._seed = _check_seed(seed)
        self._np.manual_seed(self._seed)
        return self

    def seed(self) -> int:
        """Seed from a non-deterministic source; returns the seed used."""
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a uint8 CPU tensor (PyTorch's ``CPUGeneratorImplState``:
        ``torch.Generator.set_state`` loads it, and this loads PyTorch's)."""
        buf = self._np.get_state_bytes()
        return _make(np.frombuffer(buf, dtype=np.uint8).copy(), CPU)

    def set_state(self, new_state) -> Generator:
        """Restore a state from ``get_state`` (Ember's or PyTorch's); returns the generator."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a ember.ByteTensor, but got {type(new_state).__name__}")
        if new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a ember.ByteTensor")
        self._np.set_state_bytes(np.ascontiguousarray(new_state._host()).tobytes())
        self._seed = self._np.seed
        return self

    def clone_state(self) -> Generator:
        """A new generator of the same device in this one's state (PyTorch's
        ``Generator.clone_state``)."""
        twin = Generator(self.device)
        twin.set_state(self.get_state())
        twin._seed = self._seed
        return twin

    def graphsafe_get_state(self):
        """Graph-safe states exist for CUDA-graph capture only, as in PyTorch's CPU generator."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state) -> Generator:
        """Graph-safe states exist for CUDA-graph capture only, as in PyTorch's CPU generator."""
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def __repr__(self) -> str:
        return f"<ember.Generator object at {id(self):#x}>"


def _process_seed() -> int:
    """The default CPU generator's seed at import: ``EMBER_SEED`` when set (a test run's
    reproducible streams), else a non-deterministic 64-bit one, as PyTorch seeds its default
    CPU generator (``torch.initial_seed()`` differs per process; a ``Generator()`` made later
    and every CUDA default generator start from ``DEFAULT_SEED``, as PyTorch's do)."""
    env = os.environ.get("EMBER_SEED")
    if env is None or not env.strip():
        return secrets.randbits(64)
    # a decimal or 0x-hexadecimal integer, as the C++ frontend reads it (ember::detail)
    text = env.strip()
    digits = text.lstrip("+-")
    hexadecimal = digits[:2] in ("0x", "0X")
    try:
        if len(text) - len(digits) > 1 or not (digits[2:] if hexadecimal else digits).isalnum():
            raise ValueError
        return _check_seed(int(text, 16 if hexadecimal else 10))
    except (ValueError, RuntimeError):
        raise RuntimeError(f"EMBER_SEED must be an integer in [-2**63, 2**64), got '{env}'") \
            from None


default_generator = Generator("cpu").manual_seed(_process_seed())

#: default generators of the non-CPU devices, made on first use
_device_generators: dict = {}
#: seeds for default generators made later: by device type, ``None`` for every type
_later_seeds: dict = {}
_DEVICE_GENERATORS_LOCK = reinit_in_child(threading.Lock())


def default_generator_for(dev) -> Generator:
    """The default generator of device ``dev`` (an interned, canonical device)."""
    if dev is CPU:
        return default_generator
    gen = _device_generators.get(dev)
    if gen is None:
        with _DEVICE_GENERATORS_LOCK:  # threads racing here must share one generator
            gen = _device_generators.get(dev)
            if gen is None:
                gen = Generator(dev)
                later = _later_seeds.get(dev.type, _later_seeds.get(None))
                if later is not None:
                    gen.manual_seed(later)
                _device_generators[dev] = gen
    return gen


def seed_devices(seed: int, type: str | None = None) -> None:
    """Seed the default generators of every non-CPU device (of ``type`` if given), including
    those not made yet."""
    if type is None:
        _later_seeds.clear()
    _later_seeds[type] = seed
    for dev, gen in _device_generators.items():
        if type is None or dev.type == type:
            gen.manual_seed(seed)


def manual_seed(seed) -> Generator:
    """Seed the default generators of every device; returns ``ember.default_generator``."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    seed_devices(default_generator.initial_seed())
    return default_generator


def seed() -> int:
    """Seed every default generator non-deterministically; returns the seed."""
    s = default_generator.seed()
    seed_devices(s)
    return s


def initial_seed() -> int:
    """The initial seed of ``ember.default_generator``."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The state of ``ember.default_generator`` as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore ``ember.default_generator`` from ``get_rng_state()``."""
    default_generator.set_state(new_state)


def _rng(generator, dev) -> np.random.Generator:
    """The NumPy generator to draw with for an output on ``dev`` (on the meta device, one
    whose draws are meta arrays: nothing is drawn)."""
    if dev.type == "meta":
        from ._meta import META_RNG

        return META_RNG
    if generator is None:
        return default_generator_for(dev)._np
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a ember.Generator, not {type(generator).__name__}")
    if generator.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._np


# -- host samplers ----------------------------------------------------------------------------

def _require_float(dt: _dtype.dtype, kernel: str) -> None:
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(dt.np)}'")


def _torch_float(np_dt) -> bool:
    """Whether PyTorch's CPU samplers cover ``np_dt`` (its four float dtypes). (Every
    Generator draws with a ``TorchRNG``; the samplers' other branches serve the meta device's
    stand-in, ``_meta.META_RNG``, and dtypes PyTorch's kernels do not mirror here.)"""
    return np_dt in _TORCH_FLOATS


_TORCH_FLOATS = frozenset(np.dtype(d) for d in (np.float32, np.float64, np.float16)) | \
    {_dtype.bfloat16.np}


def _in_memory_order(shape, order, draw) -> np.ndarray:
    """``draw(n)`` (a flat array: the elements in the order PyTorch's kernels visit them) as
    an array of ``shape`` laid out by ``order`` (None: C order)."""
    flat = draw(math.prod(shape))
    if order is None:
        return flat.reshape(shape)
    return flat.reshape(tuple(shape[a] for a in order)).transpose(_mf.inverse(order))


def _order_of(arr):
    """The order PyTorch's TensorIterator visits ``arr``'s elements in: its memory order
    (outermost axis first); None for C order."""
    if arr.ndim < 2 or arr.flags.c_contiguous:
        return None
    order = _mf.preserve_order(arr)
    return None if order is None or tuple(order) == tuple(range(arr.ndim)) else tuple(order)


def _uniform(g, shape, np_dt) -> np.ndarray:
    """Uniform samples in [0, 1) of a float dtype (half from 11 random bits, bfloat16 from 8,
    as PyTorch's ``uniform_real_distribution``: never 1.0)."""
    if isinstance(g, TorchRNG) and _torch_float(np.dtype(np_dt)):
        return g.torch_uniform(math.prod(shape), np.dtype(np_dt)).reshape(shape)
    if np_dt in _dtype.OPMATH:
        digits = _dtype.np_finfo(np_dt).nmant + 1
        return (g.integers(0, 1 << digits, shape) * 2.0 ** -digits).astype(np_dt)
    return g.random(shape, dtype=np_dt)


def _float_draw(fn, g, shape, np_dt, *args) -> np.ndarray:
    """``fn`` (a NumPy Generator method with ``dtype=``) in float32/64; float16 and bfloat16
    via float32."""
    work = _dtype.opmath_np(np_dt)
    return getattr(g, fn)(*args, size=shape, dtype=work).astype(np_dt, copy=False)


def _zeros_backward(node, grad):
    """Random outputs carry no gradient to their inputs (PyTorch returns zeros)."""
    return tuple(None if meta is None else zeros(meta[0], dtype=meta[1], device=node.device)
                 for meta in node.ctx)


_NODES = {name: make_node_class(name, _zeros_backward) for name in (
    "NormalBackward0", "NormalBackward1", "NormalBackward2", "NormalBackward3",
    "UniformBackward0", "RandomBackward2", "BernoulliBackward0", "BernoulliBackward2",
    "ExponentialBackward0", "GeometricBackward0", "CauchyBackward0", "LogNormalBackward0",
    "PoissonBackward0")}


def _with_graph(out: Tensor, node_name: str, inputs) -> Tensor:
    """Record a zero-gradient node when an input requires grad."""
    if GRAD.enabled and any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        tensors = tuple(t if isinstance(t, Tensor) else None for t in inputs)
        ctx = tuple(None if t is None else (t._data.shape, t.dtype) for t in tensors)
        record(_NODES[node_name], out, tensors, (), ctx)
    return out


# -- factories --------------------------------------------------------------------------------

def _float_samples(sample, kernel: str, shape, dtype, device, generator):
    """``sample(g, shape, np_dtype)`` for a float factory: ``dtype`` the default float unless
    given (floats only: PyTorch's error names ``kernel``). Returns ``(array, dtype, device)``."""
    dt = _dtype_or_default(dtype)
    if dt.is_complex:
        sample = _complex_sampler(sample)
    else:
        _require_float(dt, kernel)
    dev = resolve_device(device)
    return allocating(sample, shape, dt.itemsize, dev, _rng(generator, dev), shape, dt.np), dt, dev


def _complex_sampler(sample):
    """A complex dtype's sampler, as PyTorch's: real and imaginary parts drawn independently
    from the real sampler (normal ones scaled by sqrt(1/2), so that E|z|^2 = 1)."""
    scale = math.sqrt(0.5) if sample is _standard_normal else None

    def draw(g, shape, np_dt):
        part = _dtype.FROM_NP[np_dt].to_real().np  # float16 for complex32
        if scale is None:
            pairs = sample(g, (*shape, 2), part)
        else:  # scaled in the opmath type, rounded once (complex32's parts: float32)
            pairs = sample(g, (*shape, 2), _dtype.opmath_np(part))
            pairs *= scale
            pairs = pairs.astype(part, copy=False)
        return np.ascontiguousarray(pairs).view(np_dt).reshape(shape)

    return draw


def _standard_normal(g, shape, np_dt) -> np.ndarray:
    if isinstance(g, TorchRNG) and _torch_float(np.dtype(np_dt)):
        return g.torch_normal(math.prod(shape), np.dtype(np_dt)).reshape(shape)
    return _float_draw("standard_normal", g, shape, np_dt)


def rand(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uniform samples in [0, 1) of the given size (default float dtype)."""
    shape = size_args(args, size, "rand")
    refuse_layout(layout, "rand", device)
    arr, _, dev = _float_samples(_uniform, "check_uniform_bounds", shape, out_dtype(out, dtype),
                                 device, generator)
    return finish(place(arr, dev), requires_grad, out)


def randn(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Standard normal samples of the given size (default float dtype); a compressed
    ``layout=`` stores every sample (``ember.sparse._factories``)."""
    shape = size_args(args, size, "randn")
    lay = sparse_layout(layout, "randn")
    if lay is not None:
        return _sparse_samples("randn", lay, shape, dtype, device, requires_grad,
                               lambda dt, dev: randn(shape, generator=generator, dtype=dt,
                                                     device=dev))
    arr, _, dev = _float_samples(_standard_normal, "normal_kernel_cpu", shape,
                                 out_dtype(out, dtype), device, generator)
    return finish(place(arr, dev), requires_grad, out)


def _sparse_samples(name: str, lay, shape, dtype, device, requires_grad: bool, dense):
    """``randn``/``normal`` in the sparse layout ``lay``: ``dense(dt, dev)``'s samples, every
    one stored (compressed layouts), or PyTorch's error (COO)."""
    from .sparse import _factories

    dt, dev = _dtype_or_default(dtype), resolve_device(device)
    return _factories.make(name, lay, shape, dt, dev, requires_grad, lambda: dense(dt, dev))


def _random_bounds(dt: _dtype.dtype) -> tuple:
    """Inclusive bounds of ``random_`` for ``dt`` (floats: the exactly representable ints)."""
    if dt is _dtype.bool:
        return 0, 1
    if dt.is_floating_point:
        digits = _dtype.np_finfo(dt.np).nmant + 1
        return -(1 << digits), 1 << digits
    info = np.iinfo(dt.np)
    return int(info.min), int(info.max)


def _integers(g, shape, dt: _dtype.dtype, low, high) -> np.ndarray:
    """Integers in [low, high) as ``dt``, with PyTorch's range checks (``high`` None: up to
    the dtype's own bound, inclusive)."""
    lo_bound, hi_bound = _random_bounds(dt)
    name = _dtype.random_type_name(dt)
    if high is None:
        if not lo_bound <= low <= hi_bound:
            raise RuntimeError(f"from is out of bounds for {name}")
        high = hi_bound + 1
    else:
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        if dt.is_floating_point:
            _check_float_range(dt, low, high)
            _warn_float_bounds(low, high, lo_bound, hi_bound, name)
        else:
            if not lo_bound <= low <= hi_bound:
                raise RuntimeError(f"from is out of bounds for {name}")
            if not lo_bound <= high - 1 <= hi_bound:
                raise RuntimeError(f"to - 1 is out of bounds for {name}")
    if isinstance(g, TorchRNG):
        n = math.prod(shape)
        draws = g.torch_random_full(n) if low == -(1 << 63) and high == 1 << 63 else \
            g.torch_random_from_to(n, low, high)
        return draws.reshape(shape).astype(dt.np, copy=False)
    return g.integers(low, high, shape, dtype=np.int64).astype(dt.np, copy=False)


def _check_float_range(dt: _dtype.dtype, low, high) -> None:
    """PyTorch's ``check_from_to_in_range``: ``from`` and ``to - 1`` within the dtype's finite
    range (float16's is only +-65504)."""
    _check_finite_in(dt.np, (("from", low), ("to - 1", high - 1)))


def _check_finite_in(np_dtype, named) -> bool:
    """Each ``(name, value)`` of ``named`` within the float dtype's finite range (NaN is out),
    in PyTorch's words; False for a dtype PyTorch checks elsewhere (complex, float8)."""
    known = _C_FLOATS.get(np_dtype)
    if known is None:
        return False
    cname, top = known
    for name, value in named:
        if not -top <= float(value) <= top:
            raise RuntimeError(f"{name} is out of bounds for {cname}")
    return True


def _warn_float_bounds(low, high, lo_bound, hi_bound, name) -> None:
    import warnings

    digits = hi_bound.bit_length() - 1
    for what, v in (("from", low), ("to - 1", high - 1)):
        if not lo_bound <= v <= hi_bound:
            warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                          f"precision limitations {name} can support discrete uniform "
                          "distribution only within this range.", UserWarning, stacklevel=4)


def _int_arg(x, what: str, fname: str = "randint", position: int = 1) -> int:
    """An ``int`` argument as PyTorch's parser takes it (a one-element integer tensor too)."""
    if not _is_int_like(x):
        raise TypeError(f"{fname}(): argument '{what}' (position {position}) must be int, not "
                        f"{tp_name(x)}")
    x = int(x.item() if isinstance(x, Tensor) else x)
    if not -(1 << 63) <= x < (1 << 63):
        raise ValueError("Overflow when unpacking long long")
    return x


def _randint_signature_error(args) -> TypeError:
    """PyTorch's argument parser error for randint's four signatures."""
    got = ", ".join(tp_name(a) for a in args)
    tail = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
            "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")
    lines = "".join(f" * ({lead}, *, {gen}{tail}" for lead in (
        "int high, tuple of ints size", "int low, int high, tuple of ints size")
        for gen in ("torch.Generator generator, ", ""))
    return TypeError(f"randint() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{lines}")


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad: bool = False,
            pin_memory: bool = False) -> Tensor:
    """Integers uniform in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``
    (int64 unless ``dtype`` is given)."""
    if len(args) == 3:
        low, high, size = args
    elif len(args) == 2:
        if size is None and high is None:
            high, size = args
        else:
            low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    if high is None or size is None or len(args) > 3 or (len(args) == 3 and isinstance(
            args[2], int)):
        raise _randint_signature_error(args)
    if len(args) == 3 and not (_is_int_like(low) and _is_int_like(high)):
        raise _randint_signature_error(args)
    two = low is None
    low = 0 if low is None else _int_arg(low, "low")
    high = _int_arg(high, "high", position=1 if two else 2)
    shape = size_param(size, "randint", 2 if two else 3)
    refuse_layout(layout, "randint", device)
    dtype = out_dtype(out, dtype)
    dt = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    if dt.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and "
                           "boolean types")
    dev = resolve_device(device)
    arr = allocating(_integers, shape, dt.itemsize, dev, _rng(generator, dev), shape, dt, low, high)
    return finish(place(arr, dev), requires_grad, out)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` is given)."""
    n = _int_arg(n, "n", "randperm")
    check_size((n,), "randperm")
    dtype = out_dtype(out, dtype)
    dt = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    _dtype.check_kernel("randperm", dt.np)
    _check_randperm_n(n, dt)
    refuse_layout(layout, "randperm", device, size=(n,))
    dev = resolve_device(device)
    g = _rng(generator, dev)
    arr = allocating(g.torch_randperm if isinstance(g, TorchRNG) else g.permutation, (n,),
                     _dtype.int64.itemsize, dev, n)
    arr = arr.astype(dt.np, copy=False)
    return finish(place(arr, dev), requires_grad, out)


#: the largest ``n`` whose permutation a float dtype holds exactly, as PyTorch checks it
_RANDPERM_FLOAT_LIMITS = {np.dtype(np.float16): ("2049", 2049),
                          np.dtype(np.float32): ("2^24+1", (1 << 24) + 1),
                          np.dtype(np.float64): ("2^53+1", (1 << 53) + 1)}


def _check_randperm_n(n: int, dt: _dtype.dtype) -> None:
    """PyTorch's randperm checks that ``0 .. n-1`` fits ``dt``."""
    if dt is _dtype.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt.is_complex:
        raise NotImplementedError(f"\"randperm\" not implemented for "
                                  f"'{scalar_type_name(dt.np)}'")
    limit = _RANDPERM_FLOAT_LIMITS.get(dt.np)
    if limit is not None and n > limit[1]:
        raise RuntimeError(f"n cannot be greater than {limit[0]} for "
                           f"{scalar_type_name(dt.np)} type.")
    if not dt.is_floating_point and n > 0 and n - 1 > np.iinfo(dt.np).max:
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dt)} "
                           "without overflow")


def _check_std(std) -> None:
    if not std >= 0:  # NaN too, as PyTorch's check
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Normal samples: ``normal(mean_tensor, std_tensor)``, ``normal(mean_tensor, std=1.0)``,
    ``normal(mean, std_tensor)``, or ``normal(mean, std, size)`` with Python floats."""
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if (size is None) is not (mean_t or std_t):  # a size only with two numbers, as PyTorch
        raise parser_error("normal", _normal_args(mean, std, size))
    try:
        if not (mean_t or std_t):
            _check_std(std)
            lay = sparse_layout(layout, "normal")
            if lay is not None:
                shape = size_param(size, "normal", 3)
                return _sparse_samples("normal", lay, shape, dtype, device, requires_grad,
                                       lambda dt, dev: normal(mean, std, shape,
                                                              generator=generator, dtype=dt,
                                                              device=dev))
            z, dt, dev = _float_samples(functools.partial(_normal_sample, mean, std),
                                        "normal_kernel_cpu", size_param(size, "normal", 3),
                                        dtype, device, generator)
            return finish(place(z, dev), requires_grad, out)
        tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
        dev = check_same_device(*tensors)
        dt = mean.dtype if mean_t else std.dtype  # the output is shaped and typed like mean
        _require_float(dt, "normal_kernel_cpu")
        if std_t:
            if std._data.size and not bool((std._data >= 0).all()):  # NaN too
                raise RuntimeError("normal expects all elements of std >= 0.0")
        else:
            _check_std(std)
        shape = broadcast_shape(mean._data.shape if mean_t else (),
                                std._data.shape if std_t else ())
        z = place(_standard_normal(_rng(generator, dev), shape, dt.np), dev)._data
        m = mean._data.astype(dt.np, copy=False) if mean_t else mean
        s = std._data.astype(dt.np, copy=False) if std_t else std
        res = _make((z * s + m).astype(dt.np, copy=False), dev)
        node = "NormalBackward3" if mean_t and std_t else \
            ("NormalBackward1" if mean_t else "NormalBackward2")
        res = _with_graph(res, node, (mean, std))
        return write_out(out, res) if out is not None else res
    except (TypeError, AttributeError):  # a mean or std no signature takes: the parser's words
        check_binds("normal", _normal_args(mean, std, size))
        raise


def _normal_args(mean, std, size) -> tuple:
    """The positional arguments of a ``normal`` call (std's default 1.0 counts as given:
    ``normal(0.0, 1.0)`` is the likelier call than ``normal('s')``)."""
    return (mean, std) if size is None else (mean, std, size)


def _normal_sample(mean, std, g, shape, np_dt) -> np.ndarray:
    """``normal_(mean, std)``'s draw of ``shape`` (the kernel scales its own samples)."""
    if isinstance(g, TorchRNG) and _torch_float(np.dtype(np_dt)):
        return g.torch_normal(math.prod(shape), np.dtype(np_dt), mean, std).reshape(shape)
    z = _float_draw("standard_normal", g, shape, np_dt)
    return (z * np_dt.type(std) + np_dt.type(mean)).astype(np_dt, copy=False)


def _check_probs(p: np.ndarray) -> None:
    if p.size and not bool(((p >= 0) & (p <= 1)).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")


def _check_p(p) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")


@register("bernoulli", random=True)
def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples: with probabilities ``input`` (float), or with probability ``p`` everywhere
    (``input`` then gives only the shape and dtype)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{tp_name(input)}")
    if isinstance(p, Tensor):
        opts = "torch.Generator generator = None"
        raise TypeError("bernoulli() received an invalid combination of arguments - got "
                        "(Tensor, p=Tensor), but expected one of:\n * (Tensor input, *, "
                        f"{opts}, Tensor out = None)\n * (Tensor input, float p, *, {opts})\n")
    dev = input._device
    g = _rng(generator, dev)
    if p is None:
        _dtype.check_kernel("bernoulli_tensor", input._data.dtype)
        _require_float(input.dtype, "bernoulli_tensor_cpu_p_")
        probs = input._data
        _check_probs(probs)
        if isinstance(g, TorchRNG):  # PyTorch's tensor-p kernel: float32 draws unless float64
            host = input._host()
            hits = g.torch_bernoulli(host.size, host.reshape(-1)).reshape(host.shape)
            res = place(hits.astype(probs.dtype), dev)
        else:
            u = place(g.random(probs.shape), dev)._data  # compared on the device
            res = _make((u < probs).astype(probs.dtype), dev)
        res = _with_graph(res, "BernoulliBackward0", (input,))
    else:
        p = float(p)
        _check_p(p)
        _dtype.check_kernel("bernoulli", input._data.dtype)
        hits = g.torch_bernoulli(math.prod(input._data.shape), p).reshape(input._data.shape) \
            if isinstance(g, TorchRNG) else g.random(input._data.shape) < p
        res = place(hits.astype(input._data.dtype), dev)
    return write_out(out, res) if out is not None else res


def _multinomial_indices(g, p: np.ndarray, n: int, replacement: bool) -> np.ndarray:
    """``n`` category indices per row of the 2-D ``p`` (the input's float dtype, as PyTorch's
    kernels compute in it)."""
    rows, cats = p.shape
    if not replacement or n == 1:
        if not (bool(p.max() < np.inf) and bool(p.min() >= 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool((p.sum(1) == 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # Gumbel-max in exponential form: argmax / top-k of p / q with q ~ Exp(1), q drawn
        # in p's dtype (PyTorch's empty_like(p).exponential_())
        if isinstance(g, TorchRNG):
            q = g.torch_exponential(rows * cats, 1.0).astype(p.dtype).reshape(rows, cats)
        else:
            q = g.standard_exponential((rows, cats)).astype(p.dtype)
        keys = p / q
        if n == 1:
            return np.argmax(keys, axis=-1)[:, None]
        return np.argsort(-keys, axis=-1, kind="stable")[:, :n]
    for row in p:
        bad = np.flatnonzero((row < 0) | ~np.isfinite(row))
        if bad.size:
            what = "< 0" if row[bad[0]] < 0 else "= infinity or NaN"
            raise RuntimeError(f"invalid multinomial distribution (encountering probability "
                               f"entry {what})")
        if not row.sum() > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    work = np.float32 if p.dtype in _dtype.OPMATH else p.dtype  # PyTorch's cum_dist dtype
    cum = np.cumsum(p.astype(work), axis=1, dtype=work)
    cum /= cum[:, -1:]
    cum[:, -1] = 1  # the last bucket sums to 1
    u = g.unit(rows * n, np.float64).reshape(rows, n) if isinstance(g, TorchRNG) else \
        g.random((rows, n))
    idx = np.stack([np.searchsorted(cum[r].astype(np.float64), u[r], side="left")
                    for r in range(rows)])
    return np.minimum(idx, cats - 1)


@register("multinomial", differentiable=False, random=True)
def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None,
                out=None) -> Tensor:
    """Category indices sampled from the (unnormalised) probability rows of ``input``."""
    if input._data.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{scalar_type_name(input._data.dtype)}")
    if not _is_int_like(num_samples) or isinstance(num_samples, Tensor):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{tp_name(num_samples)}")
    n = int(num_samples)
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    cats = input._data.shape[-1]
    if not replacement and n > cats:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if cats > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    dev = input._device
    if cats and not input._data.size:  # no rows: nothing to sample
        res = place(np.empty(input._data.shape[:-1] + (n,), dtype=np.int64), dev)
        return write_out(out, res) if out is not None else res
    p = input._host()
    idx = _multinomial_indices(_rng(generator, dev), p.reshape(-1, cats), n, bool(replacement))
    res = place(idx.reshape(input._data.shape[:-1] + (n,)).astype(np.int64, copy=False), dev)
    return write_out(out, res) if out is not None else res


def poisson(input, generator=None) -> Tensor:
    """Poisson samples with the rates in ``input`` (same shape and dtype)."""
    _require_float(input.dtype, "poisson_cpu")
    rates = input._host()
    if rates.size and not bool((rates >= 0).all()):  # NaN too, as PyTorch's check
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    g = _rng(generator, input._device)
    if isinstance(g, TorchRNG):  # PyTorch's sample_poisson, element by element in C order
        sample = g.torch_poisson(rates).reshape(rates.shape).astype(rates.dtype)
        return _with_graph(place(sample, input._device), "PoissonBackward0", (input,))
    inf = np.isinf(rates) if rates.size else None
    if inf is not None and inf.any():  # PyTorch's sampler overflows to int64's minimum
        sample = g.poisson(np.where(inf, 0, rates))
        sample = np.where(inf, -(1 << 63), sample).astype(rates.dtype)
    else:
        sample = g.poisson(rates).astype(rates.dtype)
    return _with_graph(place(sample, input._device), "PoissonBackward0", (input,))


poisson = numpy_names(poisson, out="same")  # PyTorch's out= and its NumPy keyword names


def _like(input, dtype, device):
    return (input.dtype if dtype is None else dtype,
            input._device if device is None else device)


def _laid_out_like(out: Tensor, input, memory_format, fname: str) -> Tensor:
    """``out`` (C-ordered, fresh) laid out as ``memory_format`` says for a tensor like
    ``input`` (the default keeps ``input``'s layout)."""
    order = like_order(input, memory_format, fname)
    if order is None:
        return out
    out._data = _mf.copy_as(out._data, order)
    return out


def _c_contiguous(shape, order) -> bool:
    """Whether a dense layout of ``shape`` in axis ``order`` is C-contiguous as PyTorch's
    ``is_contiguous`` sees it (size-1 axes anywhere)."""
    axes = [a for a in order if shape[a] != 1]
    return axes == sorted(axes)


def _drawn_like(input, dtype, device, memory_format, fname, requires_grad, draw):
    """A ``*_like`` factory's output when it is not C-ordered and PyTorch's engine draws it:
    ``draw(g, shape, dtype, contiguous)`` gives the samples in the output's memory order (as
    PyTorch's kernels fill ``empty_like``), laid out so. None otherwise (the caller draws in C
    order and lays out after: the same numbers there)."""
    order = like_order(input, memory_format, fname)
    if order is None:
        return None
    dt, dev = _like(input, dtype, device)
    dt, dev = _dtype.to_dtype(dt), resolve_device(dev)
    g = _rng(None, dev)
    if not isinstance(g, TorchRNG):
        return None
    shape = input._data.shape
    drawn = draw(g, tuple(shape[a] for a in order), dt, _c_contiguous(shape, order))
    if drawn is None:
        return None
    arr = place(drawn, dev)._data.transpose(_mf.inverse(order))
    return finish(_make(_mf.as_fresh(arr, order), dev), requires_grad, None)


def _no_sparse_like(name: str, input, layout, dtype, device, requires_grad, memory_format):
    """``rand_like``/``randint_like`` of a sparse tensor or with a sparse ``layout=``:
    PyTorch's error (neither has a sparse kernel)."""
    if layout is not None or input.__class__ is not Tensor:
        dt, dev = _like(input, dtype, device)
        like_sparse(name, input, layout, _dtype.to_dtype(dt), resolve_device(dev), requires_grad,
                    memory_format, None)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
              memory_format=_mf.preserve_format, pin_memory: bool = False) -> Tensor:
    """``rand`` with ``input``'s shape (and dtype/device unless given)."""
    _no_sparse_like("rand_like", input, layout, dtype, device, requires_grad, memory_format)
    res = _drawn_like(input, dtype, device, memory_format, "rand_like", requires_grad,
                      lambda g, shape, dt, _: _uniform(g, shape, dt.np)
                      if dt.is_floating_point else None)
    if res is not None:
        return res
    dt, dev = _like(input, dtype, device)
    out = rand(input._data.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format, "rand_like")


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
               memory_format=_mf.preserve_format, pin_memory: bool = False) -> Tensor:
    """``randn`` with ``input``'s shape (and dtype/device unless given); a compressed
    ``input`` keeps its pattern, its values drawn."""
    if layout is not None or input.__class__ is not Tensor:
        dt, dev = _like(input, dtype, device)
        dt, dev = _dtype.to_dtype(dt), resolve_device(dev)
        r = like_sparse("randn_like", input, layout, dt, dev, requires_grad, memory_format,
                        lambda shape: randn(shape, dtype=dt, device=dev))
        if r is not None:
            return r
    res = _drawn_like(input, dtype, device, memory_format, "randn_like", requires_grad,
                      lambda g, shape, dt, contiguous: g.torch_normal(
                          math.prod(shape), dt.np, contiguous=contiguous).reshape(shape)
                      if _torch_float(dt.np) else None)
    if res is not None:
        return res
    dt, dev = _like(input, dtype, device)
    out = randn(input._data.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format, "randn_like")


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,
                 requires_grad: bool = False, memory_format=_mf.preserve_format,
                 pin_memory: bool = False) -> Tensor:
    """``randint`` with ``input``'s shape: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)`` (``input``'s dtype/device unless given)."""
    if high is None:
        low, high = 0, low
    _no_sparse_like("randint_like", input, layout, dtype, device, requires_grad, memory_format)
    if type(low) is int and type(high) is int:
        res = _drawn_like(input, dtype, device, memory_format, "randint_like", requires_grad,
                          lambda g, shape, dt, _: None if dt.is_complex else
                          _integers(g, shape, dt, low, high))
        if res is not None:
            return res
    dt, dev = _like(input, dtype, device)
    out = randint(low, high, tuple(input._data.shape), dtype=dt, device=dev,
                  requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format, "randint_like")


# -- in-place samplers: ``Tensor.uniform_`` & co. ---------------------------------------------
# Each draw function returns a host array of ``t``'s shape and dtype; ``make_inplace`` does
# the write, the version bump and the autograd bookkeeping (a leaf that requires grad raises).

def _complex_via_real(t, g, draw, *args):
    """PyTorch's complex ``uniform_``/``normal_``: the real sampler over ``view_as_real``."""
    d = t._data
    part = _dtype.FROM_NP[d.dtype].to_real().np
    real = draw(_make(np.empty((*d.shape, 2), dtype=part), CPU), g, *args)
    return np.ascontiguousarray(real).view(d.dtype).reshape(d.shape)


def _draw_uniform(t, g, from_=0.0, to=1.0, **kwargs):
    from_ = kwargs.pop("from", from_)  # PyTorch's keyword is ``from``
    if not t.dtype.is_floating_point:
        if t.dtype.is_complex and not kwargs:
            return _complex_via_real(t, g, _draw_uniform, from_, to)
        _require_float(t.dtype, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_:g} > to={to:g}")
    _check_uniform_bounds(t._data.dtype, from_, to)
    d = t._data
    if isinstance(g, TorchRNG) and _torch_float(d.dtype):
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_uniform(
            n, d.dtype, float(from_), float(to)))
    u = _uniform(g, t._data.shape, t._data.dtype)
    # in place on the fresh draw: no temporaries (a 100M-element init was 2.3 s of page faults)
    u *= to - from_
    u += from_
    return u


#: PyTorch's C++ names of the float types in check_uniform_bounds' messages, and their
#: largest finite values (keyed by NumPy dtype: ``str(dtype)`` costs ~5 us)
_C_FLOATS = {np.dtype(np.float32): ("float", 3.4028234663852886e38),
             np.dtype(np.float64): ("double", 1.7976931348623157e308),
             np.dtype(np.float16): ("c10::Half", 65504.0),
             _dtype.bfloat16.np: ("c10::BFloat16", 3.3895313892515355e38)}


def _check_uniform_bounds(np_dtype, from_, to) -> None:
    """PyTorch's ``check_uniform_bounds``: both ends finite in the dtype (NaN is out of
    bounds), and ``to - from`` no larger than its largest value."""
    if not _check_finite_in(np_dtype, (("from", from_), ("to", to))):
        return
    if float(to) - float(from_) > _C_FLOATS[np_dtype][1]:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{_dtype.scalar_type_name(np_dtype)}>::max(), but found to={to:g} "
                           f"and from={from_:g} which result in to-from to exceed the limit")


def _draw_normal(t, g, mean=0.0, std=1.0):
    if not t.dtype.is_floating_point:
        if t.dtype.is_complex:
            _check_std(std)
            return _complex_via_real(t, g, _draw_normal, mean, std / math.sqrt(2))
        _require_float(t.dtype, "normal_kernel_cpu")
    _check_std(std)
    d = t._data
    if isinstance(g, TorchRNG) and _torch_float(d.dtype):
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_normal(
            n, d.dtype, float(mean), float(std), contiguous=bool(d.flags.c_contiguous)))
    z = _float_draw("standard_normal", g, t._data.shape, t._data.dtype)
    z *= std
    z += mean
    return z


def _draw_random(t, g, *args, **kwargs):
    plain = not args and not kwargs  # random_(): PyTorch's own kernel, [0, max] of the dtype
    kwargs_given = dict(kwargs) if kwargs else kwargs
    low, high = 0, None
    if len(args) == 1:
        high = args[0]
    elif len(args) == 2:
        low, high = args
    low = kwargs.pop("from", low)
    high = kwargs.pop("to", high)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not plain and not (type(low) is int and type(high) in (int, type(None))) and not (
            _is_int_like(low) and (high is None or _is_int_like(high))):
        raise _random_signature_error(args, kwargs_given)
    dt = t.dtype
    d = t._data
    if plain and isinstance(g, TorchRNG) and not dt.is_complex:
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_random(
            n, d.dtype)).astype(d.dtype, copy=False)
    if high is None and low == 0 and dt.is_floating_point:
        return _integers(g, t._data.shape, dt, 0, _random_bounds(dt)[1] + 1)
    return _integers(g, t._data.shape, dt, int(low), None if high is None else int(high))


def _random_signature_error(args, kwargs) -> TypeError:
    """PyTorch's argument parser error for ``random_``'s three signatures."""
    got = ", ".join([tp_name(a) for a in args] + [f"{k}={tp_name(v)}" for k, v in kwargs.items()])
    why = ""
    if kwargs:
        why = ("      didn't match because some of the keywords were incorrect: "
               f"{', '.join(kwargs)}\n")
    elif len(args) > 1:
        marked = ", ".join(f"!{tp_name(a)}!" for a in args)
        why = f"      didn't match because some of the arguments have invalid types: ({marked})\n"
    gen = "*, torch.Generator generator = None"
    return TypeError(f"random_() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n * ({gen})\n{why} * (int from, int to, {gen})\n"
                     f" * (int to, {gen})\n")


def _draw_bernoulli(t, g, p=0.5):
    _dtype.check_kernel("bernoulli" if not isinstance(p, Tensor) else "bernoulli_tensor",
                        t._data.dtype)
    if isinstance(p, Tensor):
        _dtype.check_kernel("bernoulli_tensor_p", p._data.dtype)
    d = t._data
    if isinstance(g, TorchRNG):
        if isinstance(p, Tensor):
            probs = p._host()
            _check_probs(probs)
            probs = np.broadcast_to(probs, d.shape)
        else:
            _check_p(p)
            probs = float(p)
        order = _order_of(d)

        def hits(n):
            if not isinstance(probs, np.ndarray):
                return g.torch_bernoulli(n, probs)
            laid = probs if order is None else probs.transpose(order)
            return g.torch_bernoulli(n, np.ascontiguousarray(laid).reshape(-1))

        return _in_memory_order(d.shape, order, hits).astype(d.dtype)
    u = g.random(t._data.shape)
    if isinstance(p, Tensor):
        probs = p._host()
        _check_probs(probs)
        probs = np.broadcast_to(probs, t._data.shape)
    else:
        _check_p(p)
        probs = p
    return (u < probs).astype(t._data.dtype)


def _continuous(t, distribution: str, type_name: str) -> None:
    """PyTorch's error for a continuous distribution drawn into a non-float tensor."""
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           "distribution. dtype must be a floating point but you specified "
                           f"{type_name}")


def _positive(kernel: str, name: str, value) -> None:
    if not value > 0:
        raise RuntimeError(f"{kernel} expects {name} > 0.0, but found {name}={value:g}")


def _draw_exponential(t, g, lambd=1.0):
    _continuous(t, "Exponential", scalar_type_name(t._data.dtype))
    _positive("exponential_", "lambda", lambd)
    d = t._data
    if isinstance(g, TorchRNG):
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_exponential(
            n, float(lambd))).astype(d.dtype)
    e = _float_draw("standard_exponential", g, t._data.shape, t._data.dtype)
    return (e / lambd).astype(t._data.dtype, copy=False)


def _draw_geometric(t, g, p):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if t.dtype is _dtype.bool or t.dtype.is_complex:
        raise NotImplementedError(f"\"geometric_cpu\" not implemented for "
                                  f"'{scalar_type_name(t._data.dtype)}'")
    d = t._data
    if isinstance(g, TorchRNG):
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_geometric(
            n, float(p))).astype(d.dtype)
    return g.geometric(p, t._data.shape).astype(t._data.dtype)


def _draw_cauchy(t, g, median=0.0, sigma=1.0):
    _continuous(t, "Cauchy", _dtype.options_type_name(t.dtype))
    _positive("cauchy_", "sigma", sigma)
    d = t._data
    if isinstance(g, TorchRNG):
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_cauchy(
            n, float(median), float(sigma))).astype(d.dtype)
    c = g.standard_cauchy(t._data.shape)
    return (median + sigma * c).astype(t._data.dtype)


def _draw_log_normal(t, g, mean=1.0, std=2.0):
    _require_float(t.dtype, "log_normal_cpu")
    _positive("log_normal_", "std", std)
    d = t._data
    if isinstance(g, TorchRNG):
        return _in_memory_order(d.shape, _order_of(d), lambda n: g.torch_log_normal(
            n, float(mean), float(std))).astype(d.dtype)
    return g.lognormal(mean, std, t._data.shape).astype(t._data.dtype)


def _sampler(name: str, node_name: str, draw):
    """``Tensor.<name>``: fill the tensor in place with ``draw``'s samples."""

    # PyTorch's parser names the argument for the methods of one signature only
    one_signature = name not in ("random_", "bernoulli_")

    def sample(input, *args, generator=None, **kwargs):
        if generator is not None and one_signature and not isinstance(generator, Generator):
            raise TypeError(f"{name}(): argument 'generator' must be torch.Generator, not "
                            f"{tp_name(generator)}")
        arr = draw(input, _rng(generator, input._device), *args, **kwargs)
        return _with_graph(place(arr, input._device), node_name, (input,))

    return make_inplace(sample, name)


for _name, _node, _draw in (
        ("uniform_", "UniformBackward0", _draw_uniform),
        ("normal_", "NormalBackward0", _draw_normal),
        ("random_", "RandomBackward2", _draw_random),
        ("bernoulli_", "BernoulliBackward2", _draw_bernoulli),
        ("exponential_", "ExponentialBackward0", _draw_exponential),
        ("geometric_", "GeometricBackward0", _draw_geometric),
        ("cauchy_", "CauchyBackward0", _draw_cauchy),
        ("log_normal_", "LogNormalBackward0", _draw_log_normal)):
    register_method(_name, _sampler(_name, _node, _draw))
del _name, _node, _draw
