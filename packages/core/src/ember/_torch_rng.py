"""PyTorch's CPU random streams, bit for bit.

PyTorch's CPU generator is a 32-bit Mersenne Twister (``at::mt19937``) seeded the classic way
(``init_genrand`` with the seed's low 32 bits), which is NumPy's ``MT19937`` as
``RandomState`` seeds it. Its kernels then turn the engine's words into samples in fixed ways
(ATen's ``DistributionsHelper.h``, ``TransformationHelper.h`` and the CPU kernels of
``DistributionTemplates.h``): a float32 uniform is the low 24 bits of one word over 2^24, a
float64 one the low 53 bits of two words (the first the high half), ``normal_`` on 16 or more
contiguous float32 elements is a Box-Muller pass over blocks of 16 with AVX2 polynomial
``log``/``sincos`` (Cephes' coefficients; the compiler fuses multiply-adds), shorter or
strided outputs draw pairs in float64 and keep the second for the next draw, ``random_`` is a
word (two above a range of 2^28) modulo the range, ``randperm`` a Fisher-Yates pass...

``TorchRNG`` is a NumPy ``Generator`` over that engine whose ``torch_*`` methods draw as
those kernels do, so ``manual_seed(s)`` followed by the same calls gives PyTorch's numbers
(``rand``, ``randn``, ``randint``, ``randperm``, ``normal_``, ``uniform_``, ``bernoulli_``,
``random_``, ``exponential_``, ``geometric_``, ``cauchy_``, ``log_normal_``, dropout, the
``nn.init`` functions built on them, and ATen's rejection samplers ``poisson``, ``binomial``,
``_standard_gamma`` and ``_sample_dirichlet``, which run element by element in ``kernels.c``
or in Python loops with the same arithmetic). The state
is PyTorch's 5056-byte ``CPUGeneratorImplState``: ``get_rng_state()`` of either library
loads in the other.

Where PyTorch's own numbers depend on its build: its MKL build draws ``bernoulli_`` with a
number (dropout) through MKL's generator on Intel processors, and elsewhere as here; its
AVX2 kernels are the ones mirrored (an AVX-512 build dispatches ``normal_`` to them too).
Every formula was checked against PyTorch 2.13 on this project's machines
(``tests/core/test_torch_rng_streams.py``).

Speed: the engine runs in ``ember/_native/kernels.c`` where that builds. Its kernels advance
the NumPy ``MT19937``'s own state in place (seeding, words, and the uniforms, integer ranges
and Box-Muller blocks made from them in the same pass, AVX2 where the CPU has it), under the
bit generator's lock; ``random_raw`` and NumPy formulations of the same arithmetic stand in
without them (same numbers, the same state after). 1M float32 normals take ~0.9 ms, a
quarter of PyTorch's time (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import math
import os
import weakref

import numpy as np

from . import _native

__all__ = ["TorchRNG", "STATE_BYTES"]

_N = 624
#: ``sizeof(CPUGeneratorImplState)`` on 64-bit platforms
STATE_BYTES = 5056
_STATE_AT = 24           # the 624 uint64 words of the legacy state follow seed/left/seeded/next
_NORMAL_Y_AT = 5024      # the cached float64 normal sample (legacy ``normal_y``)
_NORMAL_VALID_AT = 5040  # its int32 valid flag
_FLOAT_AT = 5048         # the cached float32 normal sample, then its bool flag

_F32 = np.float32
_M24 = np.uint64((1 << 24) - 1)
_M53 = np.uint64((1 << 53) - 1)
_TWO_PI_F32 = _F32(2.0 * math.pi)


#: every live generator: their bit generators' locks are held across a fork (below)
_LIVE: weakref.WeakSet = weakref.WeakSet()
_HELD: list = []


def _before_fork() -> None:
    """Take every generator's lock before a fork, so that no other thread is inside a draw
    (the kernels release the GIL) when the child's copy of the process is made: a lock held
    then stays held in the child for ever, and a DataLoader worker that seeds its generator
    hung (three threads iterating DataLoaders, one fork in a few dozen runs). The holders
    take no other lock and never fork (``_forksafe.held_across_fork``)."""
    _HELD[:] = [g.bit_generator.lock for g in list(_LIVE)]
    for lock in _HELD:
        lock.acquire()


def _after_fork_in_parent() -> None:
    for lock in reversed(_HELD):
        lock.release()
    _HELD.clear()


def _after_fork_in_child() -> None:
    for lock in _HELD:
        lock._at_fork_reinit()
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


class TorchRNG(np.random.Generator):
    """A NumPy Generator over PyTorch's CPU engine; ``torch_*`` draw as PyTorch's kernels."""

    def __init__(self, seed: int = 67280421310721):
        super().__init__(np.random.MT19937(0))
        _LIVE.add(self)
        self.manual_seed(seed, _load=False)  # (a generator made at import builds nothing)

    # -- the engine --------------------------------------------------------------------------

    def manual_seed(self, seed: int, _load: bool = True) -> None:
        """Seed as ``at::mt19937(seed)``: ``init_genrand`` with the low 32 bits (in C, loading
        the kernels as a draw would; with ``_load=False`` only if they are loaded already)."""
        s = seed & 0xFFFFFFFF
        lib = _engine() if _load or _native._state["lib"] is not None else None
        if lib is not None:
            bg = self.bit_generator
            with bg.lock:
                lib.ember_mt_seed(bg.ctypes.state_address, s)
        else:
            key = np.random.RandomState(s).get_state()[1]
            self.bit_generator.state = {"bit_generator": "MT19937",
                                        "state": {"key": key, "pos": _N}}
        self.seed = seed
        # key[1]: tells a fresh seeding from 624 draws (both at pos 624)
        self._key0 = (1812433253 * (s ^ (s >> 30)) + 1) & 0xFFFFFFFF
        self.next_double = None   # Box-Muller's second sample, kept for the next draw
        self.next_float = None

    def _draw(self, kernel, out: np.ndarray, *args) -> np.ndarray:
        """``out`` filled by ``kernels.c``'s ``kernel(state, out, len(out), *args)`` under the
        bit generator's lock (the call releases the GIL)."""
        bg = self.bit_generator
        with bg.lock:
            kernel(bg.ctypes.state_address, _native.address(out), out.size, *args)
        return out

    def words(self, n: int) -> np.ndarray:
        """``n`` engine words (``CPUGeneratorImpl::random``) as uint64."""
        lib = _engine()
        if n and lib is not None:
            return self._draw(lib.ember_mt_words, np.empty(n, np.uint64))
        return self.bit_generator.random_raw(n)

    def words64(self, n: int) -> np.ndarray:
        """``n`` 64-bit draws (``random64``: the first word is the high half)."""
        lib = _engine()
        if n and lib is not None:
            return self._draw(lib.ember_mt_words64, np.empty(n, np.uint64))
        r = self.bit_generator.random_raw(2 * n)
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def get_state_bytes(self) -> bytes:
        """PyTorch's ``CPUGeneratorImplState`` of this generator."""
        st = self.bit_generator.state["state"]
        key, pos = st["key"], int(st["pos"])
        buf = bytearray(STATE_BYTES)
        fresh = pos == _N and int(key[1]) == self._key0
        head = np.array([self.seed & 0xFFFFFFFFFFFFFFFF], "<u8").tobytes() + np.array(
            [_N + 1 - pos, 1], "<i4").tobytes() + np.array([0 if fresh else pos], "<u8").tobytes()
        buf[:_STATE_AT] = head
        buf[_STATE_AT:_STATE_AT + 8 * _N] = key.astype("<u8").tobytes()
        if self.next_double is not None:
            buf[_NORMAL_Y_AT:_NORMAL_Y_AT + 8] = np.array([self.next_double], "<f8").tobytes()
            buf[_NORMAL_VALID_AT:_NORMAL_VALID_AT + 4] = np.array([1], "<i4").tobytes()
        if self.next_float is not None:
            buf[_FLOAT_AT:_FLOAT_AT + 4] = np.array([self.next_float], "<f4").tobytes()
            buf[_FLOAT_AT + 4] = 1
        return bytes(buf)

    def set_state_bytes(self, buf: bytes) -> None:
        """Restore a ``CPUGeneratorImplState`` (PyTorch's checks and messages)."""
        if len(buf) != STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but "
                               f"found the input RNG state size to be {len(buf)}")
        seed = int(np.frombuffer(buf, "<u8", 1, 0)[0])
        left, seeded = (int(v) for v in np.frombuffer(buf, "<i4", 2, 8))
        nxt = int(np.frombuffer(buf, "<u8", 1, 16)[0]) & 0xFFFFFFFF
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(buf, "<u8", _N, _STATE_AT).astype(np.uint32)
        self.bit_generator.state = {"bit_generator": "MT19937",
                                    "state": {"key": key, "pos": _N + 1 - left}}
        self.seed = seed
        self._key0 = -1 if left != 1 or nxt != 0 else int(key[1])
        valid = int(np.frombuffer(buf, "<i4", 1, _NORMAL_VALID_AT)[0])
        self.next_double = float(np.frombuffer(buf, "<f8", 1, _NORMAL_Y_AT)[0]) if valid \
            else None
        self.next_float = float(np.frombuffer(buf, "<f4", 1, _FLOAT_AT)[0]) \
            if buf[_FLOAT_AT + 4] else None

    # -- uniform -----------------------------------------------------------------------------

    def unit(self, n: int, np_dt) -> np.ndarray:
        """``uniform_real_distribution(0, 1)`` in ``np_dt``'s digits: float64 from 53 bits of
        a 64-bit draw, every other dtype from the low ``digits`` bits of one word (as float32,
        the accumulate type: exact)."""
        lib = _engine()
        if n and lib is not None:
            if np_dt == np.float64:
                return self._draw(lib.ember_torch_uniform_f64, np.empty(n), 0.0, 1.0, 0)
            return self._draw(lib.ember_torch_uniform_f32, np.empty(n, _F32), 0.0, 1.0, 0)
        if np_dt == np.float64:
            return (self.words64(n) & _M53).astype(np.float64) * 2.0 ** -53
        return (self.words(n) & _M24).astype(_F32) * _F32(2.0 ** -24)

    def torch_uniform(self, n: int, np_dt, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """``uniform_(low, high)``'s ``n`` values in order: ``x * (to - from) + from`` with
        ``from``/``to`` in the dtype and the arithmetic in its accumulate type."""
        affine = not (low == 0.0 and high == 1.0)
        lib = _engine() if affine and n else None
        if lib is not None and math.isfinite(high - low):
            if np_dt == np.float64:
                return self._draw(lib.ember_torch_uniform_f64, np.empty(n), low, high - low, 1)
            x = self._draw(lib.ember_torch_uniform_f32, np.empty(n, _F32), _F32(low),
                           _F32(high) - _F32(low), 1)
            affine = False
        else:
            x = self.unit(n, np_dt)
        if np_dt == np.float64:
            return _fma64(x, high - low, low) if affine else x
        if affine:
            x = _fused(x, _F32(high) - _F32(low), _F32(low))
        if np_dt == np.float32:
            return x
        out = x.astype(np_dt)  # float16/bfloat16: a value that rounds up to ``to`` is ``from``
        top, bottom = np_dt.type(high), np_dt.type(low)
        out[out == top] = bottom
        return out

    # -- normal ------------------------------------------------------------------------------

    def torch_normal(self, n: int, np_dt, mean: float = 0.0, std: float = 1.0,
                     contiguous: bool = True) -> np.ndarray:
        """``normal_(mean, std)``'s ``n`` values in memory order: the block fill for 16 or
        more contiguous elements, pairs kept across draws otherwise."""
        np_dt = np.dtype(np_dt)
        if n >= 16 and contiguous:
            if np_dt == np.float32:
                return self._fill_avx2(n, _F32(mean), _F32(std))
            if np_dt == np.float64:
                return self._fill(n, mean, std)
            if np_dt.itemsize == 2:  # float16/bfloat16: float32 blocks of 16, each cast down
                head = n // 16 * 16  # (no tail in the first fill: its 16 are drawn after)
                x = self._fill_avx2(head, _F32(mean), _F32(std))
                if head != n:
                    x = np.concatenate([x, x[:n - head]])
                    x[n - 16:] = self._fill_avx2(16, _F32(mean), _F32(std))
                return x.astype(np_dt)
        out = _fma64(self.normal_pairs(n), std, mean)
        if np_dt.itemsize == 2:  # c10::Half/BFloat16 are made from a float: two roundings
            out = out.astype(_F32)
        return out.astype(np_dt)

    def normal_pairs(self, n: int) -> np.ndarray:
        """``n`` standard normals from ``normal_distribution<double>``: Box-Muller pairs from
        two float64 uniforms (``r cos`` first, ``r sin`` kept for the next draw)."""
        out = np.empty(n)
        start = 0
        if n and self.next_double is not None:
            out[0] = self.next_double
            self.next_double = None
            start = 1
        pairs = (n - start + 1) // 2
        if pairs:
            u = self.unit(2 * pairs, np.float64)
            both = np.empty(2 * pairs)
            kernel = _native.kernel("ember_torch_normal_pairs_f64") if pairs > 4 else None
            if kernel is not None:
                kernel(_native.address(u), _native.address(both), pairs)
            elif pairs <= 32:  # the C library's log1p/cos/sin, as PyTorch's (NumPy's own
                for k, (u1, u2) in enumerate(u.reshape(-1, 2).tolist()):  # SIMD ones can
                    r = math.sqrt(-2.0 * math.log1p(-u2))                 # differ in the
                    theta = 2.0 * math.pi * u1                            # last bit)
                    both[2 * k] = r * math.cos(theta)
                    both[2 * k + 1] = r * math.sin(theta)
            else:
                r = np.sqrt(-2.0 * np.log1p(-u[1::2]))
                theta = 2.0 * math.pi * u[0::2]
                both[0::2] = r * np.cos(theta)
                both[1::2] = r * np.sin(theta)
            out[start:] = both[:n - start]
            if (n - start) % 2:
                self.next_double = float(both[-1])
        return out

    def _fill(self, n: int, mean: float, std: float) -> np.ndarray:
        """``normal_fill<double>``: uniforms for every element, Box-Muller in blocks of 16
        (the first 8 of a block pair with the last 8), the tail redone with 16 new draws."""
        return self._blocks(n, np.float64, mean, std, "ember_torch_box_muller_f64",
                            _box_muller_f64)

    def _fill_avx2(self, n: int, mean, std) -> np.ndarray:
        """``normal_fill_AVX2``: as ``_fill`` in float32 with AVX2's log/sincos."""
        return self._blocks(n, np.float32, mean, std, "ember_torch_box_muller_f32",
                            _box_muller_avx2)

    def _blocks(self, n, np_dt, mean, std, native, numpy_fn) -> np.ndarray:
        kernel = _native.kernel(native)
        d = self.unit(n, np_dt)
        whole = n // 16 * 16
        tail = self.unit(16, np_dt) if n % 16 else None
        for part, rows in ((d, whole // 16), (tail, 1)):
            if part is None or not rows:
                continue
            if kernel is not None:
                kernel(_native.address(part), rows, mean, std)
            else:
                part[:rows * 16] = numpy_fn(part[:rows * 16].reshape(-1, 16), mean, std).ravel()
        if tail is not None:
            d[n - 16:] = tail
        return d

    # -- integers ----------------------------------------------------------------------------

    def torch_random_from_to(self, n: int, low: int, high: int) -> np.ndarray:
        """``random_(from, to)``: a word (two, from a range of 2^28 up) modulo the range, plus
        ``from``, as int64."""
        span = high - low
        lib = _engine() if n and 0 < span < 1 << 64 else None
        if lib is not None:
            return self._draw(lib.ember_torch_random_from_to, np.empty(n, np.int64), span,
                              low % (1 << 64), int(span >= 1 << 28))
        draws = self.words64(n) if span >= 1 << 28 else self.words(n)
        return ((draws % np.uint64(span)).astype(np.int64) + np.int64(low)) if span < 1 << 63 \
            else (draws % np.uint64(span) + np.uint64(low % (1 << 64))).view(np.int64)

    def torch_random_full(self, n: int) -> np.ndarray:
        """``random_(-2**63, None)``: every 64-bit pattern."""
        return self.words64(n).view(np.int64)

    def torch_random(self, n: int, np_dt) -> np.ndarray:
        """``random_()``: ``[0, max]`` of an integer dtype, ``[0, 2^digits]`` of a float
        one; 64-bit draws for int64 and float64."""
        np_dt = np.dtype(np_dt)
        if np_dt == np.bool_:
            return (self.words(n) & np.uint64(1)).astype(np.bool_)
        if np_dt.kind == "f" or np_dt.kind == "V" or np_dt.name == "bfloat16":
            span = (1 << _digits(np_dt)) + 1
        else:
            span = int(np.iinfo(np_dt).max) + 1
        draws = self.words64(n) if np_dt in (np.int64, np.float64) else self.words(n)
        return (draws % np.uint64(span)).astype(np.int64)

    def torch_randperm(self, n: int) -> np.ndarray:
        """``randperm(n)``: Fisher-Yates, swapping element ``i`` with one of ``i..n-1``."""
        if n < 2:
            return np.arange(n, dtype=np.int64)
        draws = self.words(n - 1) if n < 0xFFFFFFFF // 20 else self.words64(n - 1)
        kernel = _native.kernel("ember_torch_randperm") if n > 64 else None
        if kernel is not None:
            perm = np.empty(n, dtype=np.int64)
            kernel(_native.address(perm), _native.address(draws), n)
            return perm
        perm = list(range(n))
        for i, z in enumerate((draws % np.arange(n, 1, -1, dtype=np.uint64)).tolist()):
            j = i + z
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=np.int64)

    # -- other distributions -----------------------------------------------------------------

    def torch_bernoulli(self, n: int, p) -> np.ndarray:
        """``bernoulli_(p)``: a float64 uniform below ``p`` (a number or a float64 array);
        float32 uniforms for a float32 ``p`` array (PyTorch's tensor-``p`` kernel)."""
        if isinstance(p, np.ndarray) and p.dtype != np.float64:
            return self.unit(n, np.float32) < p.astype(_F32, copy=False)
        return self.unit(n, np.float64) < p

    def torch_exponential(self, n: int, lambd: float) -> np.ndarray:
        """``exponential_(lambd)``: ``-1 / lambd * log1p(-u)``, u a float64 uniform."""
        return _transform(self.unit(n, np.float64), 0, lambd, 0.0,
                          lambda u: -1.0 / lambd * np.log1p(-u))

    def torch_geometric(self, n: int, p: float) -> np.ndarray:
        """``geometric_(p)``: ``ceil(log(u) / log(1 - p))``."""
        return _transform(self.unit(n, np.float64), 3, p, 0.0,
                          lambda u: np.ceil(np.log(u) / math.log(1.0 - p)))

    def torch_cauchy(self, n: int, median: float, sigma: float) -> np.ndarray:
        """``cauchy_(median, sigma)``: ``median + sigma * tan(pi (u - 1/2))``."""
        return _transform(self.unit(n, np.float64), 1, median, sigma,
                          lambda u: _fma64(sigma, np.tan(math.pi * (u - 0.5)), median))

    def torch_log_normal(self, n: int, mean: float, std: float) -> np.ndarray:
        """``log_normal_(mean, std)``: ``exp`` of ``normal_distribution<double>``'s draws."""
        return _transform(self.normal_pairs(n), 2, mean, std,
                          lambda z: np.exp(_fma64(z, std, mean)))

    # -- rejection samplers: ATen's sample_poisson, sample_binomial, sample_gamma ------------
    # Each element draws as many uniforms (and normals) as its rejection loop needs, so the
    # loops run element by element: in ``kernels.c``, else in Python below (same numbers).

    def _sequential(self, name: str, *arrays, extra=()):
        """``kernels.c``'s ``name(state, *arrays, n, *extra)`` under the bit generator's
        lock; False where the kernels cannot draw (the caller then loops in Python)."""
        n = arrays[-1].size
        kernel = _native.kernel(name) if n and _engine() is not None else None
        if kernel is None:
            return False
        bg = self.bit_generator
        with bg.lock:
            kernel(bg.ctypes.state_address, *(_native.address(a) for a in arrays), n, *extra)
        return True

    def torch_poisson(self, rates: np.ndarray) -> np.ndarray:
        """``torch.poisson``'s samples (int64) of the rates (``>= 0``, in memory order), each
        from ``sample_poisson(double(rate))``: a product of uniforms below 10, Hoermann's
        transformed rejection (PTRS) from 10."""
        lam = np.ascontiguousarray(rates, np.float64).reshape(-1)
        out = np.empty(lam.size, np.int64)
        if not self._sequential("ember_torch_poisson", lam, out):
            for i, v in enumerate(lam.tolist()):
                out[i] = _poisson_one(self, v)
        return out

    def torch_binomial(self, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
        """``torch.binomial``'s samples of float32 or float64 ``count``/``prob`` (same dtype
        and size, in memory order): ``sample_binomial``, inversion below ``count * p = 10``,
        BTRS above, in the tensor's type where ATen computes in it. A NaN count with
        ``0 < p < 1`` gives NaN without drawing (PyTorch's inversion loop never ends there)."""
        dt = np.dtype(count.dtype)
        c = np.ascontiguousarray(count, dt).reshape(-1)
        p = np.ascontiguousarray(prob, dt).reshape(-1)
        stuck = np.isnan(c) & (p > 0) & (p < 1)
        if stuck.any():
            c = np.where(stuck, dt.type(0), c)
        out = np.empty(c.size, dt)
        single = dt == np.float32
        if not self._sequential("ember_torch_binomial_f32" if single else
                                "ember_torch_binomial_f64", c, p, out):
            rt, log1p_t = (_f32, _log1pf) if single else (_same, math.log1p)
            for i, (cv, pv) in enumerate(zip(c.tolist(), p.tolist())):
                out[i] = _binomial_one(self, cv, pv, rt, log1p_t)
        if stuck.any():
            out[stuck] = np.nan
        return out

    def torch_standard_gamma(self, alpha: np.ndarray) -> np.ndarray:
        """``torch._standard_gamma``'s samples of float32 or float64 ``alpha`` (in memory
        order): ``sample_gamma`` (Marsaglia and Tsang over ``normal_distribution<double>``
        and float64 uniforms, ``alpha < 1`` boosted by ``U^(1/alpha)``), at least the type's
        smallest normal number. NaN or negative alphas give NaN without drawing (PyTorch's
        loop never ends on them)."""
        dt = np.dtype(alpha.dtype)
        a = np.ascontiguousarray(alpha, dt).reshape(-1)
        bad = ~(a >= 0)
        if bad.any():
            a = np.where(bad, dt.type(1), a)
        out = np.empty(a.size, dt)
        single = dt == np.float32
        tiny = float(np.finfo(dt).tiny)
        cache = np.array([self.next_double or 0.0, float(self.next_double is not None)])
        if self._sequential("ember_torch_gamma_f32" if single else "ember_torch_gamma_f64",
                            cache, a, out, extra=(tiny,)):
            self.next_double = float(cache[0]) if cache[1] else None
        else:
            rt = _f32 if single else _same
            for i, v in enumerate(a.tolist()):
                s = _gamma_one(self, v, rt)
                out[i] = s if tiny < s else tiny
        if bad.any():
            out[bad] = np.nan
        return out

    def torch_dirichlet(self, alpha: np.ndarray) -> np.ndarray:
        """``torch._sample_dirichlet`` of a float32/float64 ``alpha`` (C order, the last axis
        the categories): float64 gammas of the float64 alphas, normalised by their sum, cast
        to the type and clamped into ``[tiny, nexttoward(1, 0)]``. The gammas are PyTorch's;
        its row sums are ATen's vectorised reduction, NumPy's here: rows of 8 or more
        categories can differ from PyTorch's float64 result in the last bit (float32 results
        round that away but at a rounding tie)."""
        dt = np.dtype(alpha.dtype)
        gam = self.torch_standard_gamma(np.asarray(alpha, np.float64)).reshape(alpha.shape)
        ratio = (gam / gam.sum(-1, keepdims=True)).astype(dt)
        return np.clip(ratio, np.finfo(dt).tiny, np.nextafter(dt.type(1), dt.type(0)))

    def _unit1(self) -> float:
        """One float64 uniform (the Python loops' draw: two words)."""
        hi, lo = self.bit_generator.random_raw(2).tolist()
        return ((hi << 32 | lo) & ((1 << 53) - 1)) * 2.0 ** -53

    def _normal1(self) -> float:
        """One ``normal_distribution<double>`` sample, the pair's second half kept."""
        if self.next_double is not None:
            z, self.next_double = self.next_double, None
            return z
        u1 = self._unit1()
        u2 = self._unit1()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.next_double = r * math.sin(theta)
        return r * math.cos(theta)


_ENGINE: dict = {}


def _engine():
    """``kernels.c``'s library where its engine kernels can draw, else None: the library
    loads, and (checked once per process) they advance a NumPy ``MT19937``'s state as
    ``random_raw`` does, words, state and position alike, across a regeneration. NumPy's state
    layout is not public API: where it changes, this gives None and every draw goes through
    ``random_raw``."""
    lib = _native.library()
    if lib is None or _native.kernel("ember_mt_words") is None:  # (tests stub ``kernel``)
        return None
    ok = _ENGINE.get("ok")
    if ok is None:
        ref = np.random.MT19937(12345)
        twin = np.random.MT19937(0)
        twin.state = ref.state
        want = ref.random_raw(1500)
        got = np.zeros(1500, np.uint64)
        lib.ember_mt_words(twin.ctypes.state_address, _native.address(got), 1500)
        a, b = ref.state["state"], twin.state["state"]
        ok = _ENGINE["ok"] = bool(np.array_equal(want, got) and a["pos"] == b["pos"]
                                  and np.array_equal(a["key"], b["key"]))
    return lib if ok else None


def _transform(u, kind: int, a: float, b: float, numpy_fn) -> np.ndarray:
    """``ember_torch_transform_f64`` (the C library's functions, PyTorch's to the bit), else
    ``numpy_fn`` (NumPy's can differ in the last bit)."""
    kernel = _native.kernel("ember_torch_transform_f64")
    if kernel is None or not u.size:
        return numpy_fn(u)
    out = np.empty_like(u)
    kernel(_native.address(u), _native.address(out), u.size, kind, a, b)
    return out


def _digits(np_dt) -> int:
    """``std::numeric_limits<T>::digits``: the significand's bits."""
    from ._dtype import np_finfo

    return int(np_finfo(np_dt).nmant) + 1


def _fma64(a, b, c):
    """float64 ``fma(a, b, c)``: the product split exactly (Dekker) and the sum carried in
    two words, rounded once at the end (exact but for ties below a float64 ulp's half)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    if any(v.ndim == 0 and not abs(float(v)) < 2.0 ** 995 for v in (a, b, c)):
        return a * b + c  # (a scale this large overflows the split; rounding is moot there)
    p = a * b
    t = 134217729.0 * a  # 2^27 + 1: Veltkamp's split into 26-bit halves
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    v = s - p
    return s + (((p - (s - v)) + (c - v)) + err)


def _box_muller_f64(blocks, mean: float, std: float):
    u1 = 1.0 - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(-2.0 * np.log(u1))
    theta = 2.0 * math.pi * u2
    out = np.empty_like(blocks)
    out[:, :8] = _fma64(radius * np.cos(theta), std, mean)
    out[:, 8:] = _fma64(radius * np.sin(theta), std, mean)
    return out


def _box_muller_avx2(blocks, mean, std):
    """``normal_fill_16_AVX2`` over rows of 16 float32 uniforms."""
    u1 = _F32(1) - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(_F32(-2) * _log256(u1))
    sin, cos = _sincos256(_TWO_PI_F32 * u2)
    out = np.empty_like(blocks)
    out[:, :8] = _fused(radius * cos, std, mean)
    out[:, 8:] = _fused(radius * sin, std, mean)
    return out


def _fused(a, b, c):
    """float32 ``fma(a, b, c)``: exact in float64, rounded once (a double rounding differs
    from the true fused result only at ties past float64's precision)."""
    return (a.astype(np.float64) * np.float64(b) + np.asarray(c, np.float64)).astype(_F32)


_LOG_P = tuple(_F32(v) for v in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_MIN_NORM = np.array(0x00800000, np.int32).view(_F32)
_HALF_BITS = int(np.array(0.5, _F32).view(np.int32))


def _log256(x):
    """``log256_ps`` (avx_mathfun.h: Cephes' logf), with the multiply-adds fused as GCC
    fuses them in PyTorch's AVX2 build."""
    invalid = x <= 0
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | _HALF_BITS).view(_F32)
    small = x < _F32(0.707106781186547524)
    x = (x - _F32(1)) + np.where(small, x, _F32(0))
    e = e - small.astype(_F32)
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = _fused(y, x, p)
    y = _fused(y * x, z, e * _F32(-2.12194440e-4))
    y = _fused(z, _F32(-0.5), y)
    x = _fused(e, _F32(0.693359375), x + y)
    return np.where(invalid, _F32(np.nan), x)


def _sincos256(x):
    """``sincos256_ps`` (avx_mathfun.h: Cephes' sinf/cosf), fused as PyTorch's build is."""
    sign_sin = np.signbit(x)
    x = np.abs(x)
    j = ((x * _F32(1.27323954473516)).astype(np.int32) + 1) & ~1
    y = j.astype(_F32)
    sign_sin ^= (j & 4) != 0
    poly = (j & 2) == 0
    sign_cos = (~(j - 2) & 4) != 0
    x = _fused(y, _F32(-0.78515625), x)
    x = _fused(y, _F32(-2.4187564849853515625e-4), x)
    x = _fused(y, _F32(-3.77489497744594108e-8), x)
    z = x * x
    yc = _fused(np.full_like(x, _F32(2.443315711809948e-05)), z, _F32(-1.388731625493765e-03))
    yc = _fused(yc, z, _F32(4.166664568298827e-02))
    yc = _fused(yc * z, z, -(z * _F32(0.5))) + _F32(1)
    ys = _fused(np.full_like(x, _F32(-1.9515295891e-4)), z, _F32(8.3321608736e-3))
    ys = _fused(ys, z, _F32(-1.6666654611e-1))
    ys = _fused(ys * z, x, x)
    sin = np.where(poly, ys, yc)
    cos = np.where(poly, yc, ys)
    return np.where(sign_sin, -sin, sin), np.where(sign_cos, -cos, cos)


# -- the rejection samplers in Python (``kernels.c``'s loops, the same arithmetic) -------------

def _same(x: float) -> float:
    return x


def _f32(x: float) -> float:
    """``x`` rounded to float32: a float32 sum, product, quotient or square root of float32
    values computed in float64 and rounded once is the float32 operation's result."""
    return float(_F32(x))


def _libm():
    """The C library's ``lgamma`` and ``log1pf`` (PyTorch's: CPython's ``math.lgamma`` is its
    own), else Python's stand-ins (which can differ in the last bit)."""
    fns = _LIBM.get("fns")
    if fns is None:
        fns = (math.lgamma, lambda x: _f32(math.log1p(x)))
        try:
            import ctypes
            import ctypes.util

            m = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
            m.lgamma.argtypes, m.lgamma.restype = (ctypes.c_double,), ctypes.c_double
            m.log1pf.argtypes, m.log1pf.restype = (ctypes.c_float,), ctypes.c_float
            fns = (m.lgamma, m.log1pf)
        except (OSError, AttributeError, TypeError):
            pass
        _LIBM["fns"] = fns
    return fns


_LIBM: dict = {}


def _log1pf(x: float) -> float:
    return float(_libm()[1](x))


def _log(x: float) -> float:
    """C's ``log``: -inf at 0, NaN below."""
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _div(a: float, b: float) -> float:
    """C's float64 division (infinities or NaN where Python raises)."""
    if b:
        return a / b
    return math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1, b)


def _floor(x: float) -> float:
    return float(math.floor(x)) if math.isfinite(x) else x


def _trunc_i64(x: float) -> int:
    """``(int64_t)floor(x)`` as x86-64 converts: INT64_MIN for NaN and out-of-range values."""
    return math.floor(x) if -2.0 ** 63 <= x < 2.0 ** 63 else -(1 << 63)


def _poisson_one(g: TorchRNG, lam: float) -> int:
    """ATen's ``sample_poisson``."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        lgamma = _libm()[0]
        while True:
            u = g._unit1() - 0.5
            v = g._unit1()
            us = 0.5 - abs(u)
            k = _trunc_i64((_div(2 * a, us) + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if _log(v) + math.log(invalpha) - _log(_div(a, us * us) + b) <= \
                    -lam + k * loglam - lgamma(k + 1.0):
                return k
    if lam == 0:
        return 0
    enlam, prod, x = math.exp(-lam), 1.0, 0
    while True:
        prod *= g._unit1()
        if prod > enlam:
            x += 1
        else:
            return x


def _stirling_approx_tail(k: float) -> float:
    if k < 10:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _btrs(g: TorchRNG, count: float, prob: float, rt) -> float:
    """ATen's ``btrs`` (``rt`` rounds to the tensor's type where ATen computes in it)."""
    stddev = rt(math.sqrt(rt(rt(count * prob) * rt(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = rt(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = rt(prob / rt(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = _floor(rt(rt(count + 1) * prob))
    st = _stirling_approx_tail
    while True:
        u = g._unit1() - 0.5
        v = g._unit1()
        us = 0.5 - abs(u)
        k = rt(_floor((_div(2 * a, us) + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log(v * alpha / (_div(a, us * us) + b))
        cmk1 = rt(rt(count - k) + 1)
        upperbound = ((m + 0.5) * _log((m + 1) / (r * (count - m + 1)))
                      + rt(count + 1) * _log((count - m + 1) / cmk1)
                      + (k + 0.5) * _log(r * cmk1 / rt(k + 1))
                      + st(m) + st(count - m) - st(k) - st(rt(count - k)))
        if v <= upperbound:
            return k


def _binomial_inversion(g: TorchRNG, count: float, prob: float, rt, log1p_t) -> float:
    geom_sum, num_geom = 0.0, 0.0
    logprob = log1p_t(-prob)
    while True:
        geom = _log(g._unit1()) / logprob
        geom_sum += math.ceil(geom) if math.isfinite(geom) else geom
        if geom_sum > count:
            return num_geom
        num_geom = rt(num_geom + 1)


def _binomial_one(g: TorchRNG, count: float, prob: float, rt, log1p_t) -> float:
    """ATen's ``sample_binomial``."""
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if rt(count * prob) >= 10.0:
            return _btrs(g, count, prob, rt)
        return _binomial_inversion(g, count, prob, rt, log1p_t)
    if prob > 0.5:
        q = rt(1.0 - prob)
        k = _btrs(g, count, q, rt) if rt(count * q) >= 10.0 else \
            _binomial_inversion(g, count, q, rt, log1p_t)
        return rt(count - k)
    return math.nan


_THIRD_F = float(_F32(1.0) / _F32(3.0))  # ``1.0f / 3.0f``
_C0331_F = float(_F32(0.0331))


def _gamma_one(g: TorchRNG, alpha: float, rt) -> float:
    """ATen's ``sample_gamma`` (accumulating in float64; ``rt`` rounds to the type)."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= math.pow(1 - g._unit1(), rt(1.0 / alpha))
        alpha = rt(alpha + 1.0)
    d = rt(alpha - _THIRD_F)
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = g._normal1()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1 - g._unit1()
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx or _log(u) < 0.5 * xx + d * (1.0 - v + _log(v)):
            return rt(scale * d * v)
