"""``ember.quasirandom``: ``SobolEngine``, (scrambled) Sobol' sequences (``torch.quasirandom``).

The engine is PyTorch's, point for point: the same direction numbers (Joe & Kuo's
``new-joe-kuo-6.21201``, search criterion D(6), for all 21201 dimensions), the same 30-bit
Gray-code construction and the same draw, fast-forward and reset rules, so an unscrambled
sequence equals ``torch.quasirandom.SobolEngine``'s exactly. Scrambling (Owen's linear
matrix scrambling plus a random digital shift) follows PyTorch's algorithm but draws its
random bits from Ember's generator, so a scrambled sequence is a valid one but not
PyTorch's.

The direction numbers live in ``_sobol_directions.bin`` beside this file and are read on
the first ``SobolEngine``, for the dimensions asked for. The file is a big-endian bit
stream, dimension by dimension from the second (the first is all ones): a dimension of
degree ``s`` (its primitive polynomial ``x^s + a_1 x^(s-1) + ... + a_(s-1) x + 1``) holds
``a_1 ... a_(s-1)`` (``s - 1`` bits), then for ``i = 2 .. s`` the initial direction number
``m_i`` without its low bit (``m_i`` is odd and below ``2^i``; ``m_1`` is 1). The dimensions
run through all primitive polynomials by degree, so a degree's dimensions are a block of
rows of equal width and the counts per degree (:data:`_DIMENSIONS_PER_DEGREE`) locate any
dimension. The numbers are Joe and Kuo's, published under a BSD-style licence
(https://web.maths.unsw.edu.au/~fkuo/sobol/).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from . import _dtype
from ._factory import from_numpy
from ._forksafe import reinit_in_child
from ._random import Generator, randint
from ._tensor import Tensor

__all__ = ["SobolEngine"]

MAXBIT = 30
#: dimensions (primitive polynomials over GF(2)) of each degree 1, 2, ..., 18
_DIMENSIONS_PER_DEGREE = (1, 1, 2, 2, 6, 6, 18, 16, 48, 60, 176, 144, 630, 756, 1800, 2048,
                          7710, 7776)
MAXDIM = 1 + sum(_DIMENSIONS_PER_DEGREE)  # 21201
_DATA = Path(__file__).with_name("_sobol_directions.bin")
_cache: dict = {}  # "state": the (dims, MAXBIT) direction numbers decoded so far
_cache_lock = reinit_in_child(threading.Lock())


def _bits_to_ints(bits: np.ndarray) -> np.ndarray:
    """Rows of big-endian bits as int64 numbers."""
    if bits.shape[1] == 0:
        return np.zeros(bits.shape[0], dtype=np.int64)
    weights = np.left_shift(1, np.arange(bits.shape[1] - 1, -1, -1, dtype=np.int64))
    return bits.astype(np.int64) @ weights


def _decode(dimension: int) -> np.ndarray:
    """The unscrambled direction numbers of the first ``dimension`` dimensions, ``(dimension,
    MAXBIT)`` int64 (PyTorch's ``_sobol_engine_initialize_state_``)."""
    bits = np.unpackbits(np.frombuffer(_DATA.read_bytes(), dtype=np.uint8))
    v = np.zeros((dimension, MAXBIT), dtype=np.int64)
    v[0] = 1
    first, offset = 1, 0
    for s, count in enumerate(_DIMENSIONS_PER_DEGREE, 1):
        if first >= dimension:
            break
        n = min(count, dimension - first)
        width = (s - 1) + s * (s - 1) // 2
        block = bits[offset:offset + n * width].reshape(n, width)
        offset += count * width
        poly = (1 << s) | (_bits_to_ints(block[:, :s - 1]) << 1) | 1
        rows = v[first:first + n]
        rows[:, 0] = 1
        start = s - 1
        for i in range(1, s):  # m_(i+1) = 2 * (its stored top bits) + 1
            rows[:, i] = 2 * _bits_to_ints(block[:, start:start + i]) + 1
            start += i
        # Bratley & Fox's recurrence: v_j = v_(j-s) ^ XOR_k a_k 2^k v_(j-k)
        for j in range(s, MAXBIT):
            new = rows[:, j - s].copy()
            for k in range(s):
                coefficient = (poly >> (s - 1 - k)) & 1
                new ^= coefficient * (rows[:, j - k - 1] << (k + 1))
            rows[:, j] = new
        first += count
    return v << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64)


def _direction_numbers(dimension: int) -> np.ndarray:
    """The first ``dimension`` rows of the direction numbers, decoded once and kept."""
    with _cache_lock:
        state = _cache.get("state")
        if state is None or state.shape[0] < dimension:
            state = _cache["state"] = _decode(dimension)
    return state[:dimension].copy()


def _scramble(sobolstate: np.ndarray, ltm: np.ndarray) -> None:
    """PyTorch's ``_sobol_engine_scramble_``: multiply each dimension's direction numbers
    (as bit vectors) by its lower-triangular random bit matrix ``ltm`` (diagonal forced to
    one), over GF(2), in place."""
    dimension = sobolstate.shape[0]
    ltm = ltm.copy()
    idx = np.arange(MAXBIT)
    ltm[:, idx, idx] = 1
    rows = _bits_to_ints(ltm.reshape(-1, MAXBIT)).reshape(dimension, MAXBIT)
    shifts = np.arange(MAXBIT - 1, -1, -1, dtype=np.int64)
    for lo in range(0, dimension, 1024):  # (chunk, j, p) at a time
        hi = min(lo + 1024, dimension)
        both = rows[lo:hi, None, :] & sobolstate[lo:hi, :, None]
        parity = (np.bitwise_count(both) & 1).astype(np.int64)
        sobolstate[lo:hi] = (parity << shifts).sum(-1)


def _rightmost_zero(n: np.ndarray) -> np.ndarray:
    """The index of the lowest zero bit of each ``n``."""
    lowest = ~n & (n + 1)  # that bit alone
    return np.bitwise_count(lowest - 1).astype(np.int64)


def _advance(quasi: np.ndarray, n: int, sobolstate: np.ndarray, num_generated: int):
    """The next ``n`` points after ``quasi`` (the point of index ``num_generated``), as
    integers ``(n, dimension)``, and the last one (PyTorch's ``_sobol_engine_draw``)."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                           f"[{n}, {sobolstate.shape[0]}]")
    if n == 0:
        return np.empty((0, sobolstate.shape[0]), dtype=np.int64), quasi
    bits = _rightmost_zero(np.arange(num_generated, num_generated + n, dtype=np.int64))
    if bits.max() >= MAXBIT:
        raise RuntimeError(f"SobolEngine can draw at most 2**{MAXBIT} points")
    points = np.bitwise_xor.accumulate(sobolstate[:, bits].T, axis=0)
    points ^= quasi
    return points, points[-1].copy()


def _as_floats(points: np.ndarray, dtype: _dtype.dtype) -> np.ndarray:
    """``points / 2**MAXBIT`` in ``dtype`` (float32 or float64, as PyTorch's kernel)."""
    if dtype not in (_dtype.float32, _dtype.float64):
        from ._dtype import scalar_type_name

        raise NotImplementedError(f'"_sobol_engine_draw" not implemented for '
                                  f"'{scalar_type_name(dtype.np)}'")
    out = points.astype(dtype.np)
    out *= dtype.np.type(1.0 / (1 << MAXBIT))  # a power of two: exact
    return out


class SobolEngine:
    """An engine for (scrambled) Sobol' sequences, low-discrepancy quasi-random sequences,
    like ``torch.quasirandom.SobolEngine`` (dimensions 1 to 21201).

    Args:
        dimension (int): the dimensionality of the sequence.
        scramble (bool): produce a scrambled sequence (Owen scrambling with a random shift).
        seed (int, optional): the seed of the scrambling's random bits; without one Ember's
            default generator draws them.

    Example::

        >>> engine = SobolEngine(dimension=5)
        >>> engine.draw(3)
        tensor([[0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.5000, 0.5000, 0.5000],
                [0.7500, 0.2500, 0.2500, 0.2500, 0.7500]])
    """

    MAXBIT = MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension, scramble: bool = False, seed=None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        state = _direction_numbers(dimension)
        if not self.scramble:
            shift = np.zeros(dimension, dtype=np.int64)
        else:
            shift = self._scrambled(state)
        # PyTorch's attributes: int64 CPU tensors (the arrays below are their data)
        self.sobolstate = from_numpy(state)
        self.shift = from_numpy(shift)
        self.quasi = from_numpy(shift.copy())
        # in the default dtype, as PyTorch's ``quasi / 2**MAXBIT`` is
        default = _dtype.get_default_dtype().np
        self._first_point = from_numpy((shift.astype(default) / default.type(1 << MAXBIT))[None])
        self.num_generated = 0

    def _scrambled(self, state: np.ndarray) -> np.ndarray:
        """Scramble ``state`` in place; the random digital shift (the first point)."""
        g = None
        if self.seed is not None:
            g = Generator()
            g.manual_seed(self.seed)
        shift_bits = randint(2, (self.dimension, MAXBIT), device="cpu", generator=g).numpy()
        shift = shift_bits @ np.left_shift(1, np.arange(MAXBIT, dtype=np.int64))
        ltm = randint(2, (self.dimension, MAXBIT, MAXBIT), device="cpu", generator=g).numpy()
        ltm = np.tril(ltm)
        _scramble(state, ltm)
        return shift

    def _advance(self, n: int) -> np.ndarray:
        """The next ``n`` points as integers; ``quasi`` becomes the last of them."""
        start = 0 if self.num_generated == 0 else self.num_generated - 1
        points, last = _advance(self.quasi.numpy(), n, self.sobolstate.numpy(), start)
        self.quasi = from_numpy(last)
        return points

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``n`` points of the sequence, shape ``(n, dimension)``; later draws
        continue where this one stops. ``out`` receives the result (resized) if given;
        ``dtype`` defaults to the default dtype."""
        if dtype is None:
            dtype = _dtype.get_default_dtype()
        if self.num_generated == 0:
            if n == 1:
                result = self._first_point.to(dtype)
            else:
                rest = _as_floats(self._advance(n - 1), dtype)
                first = self._first_point.numpy().astype(dtype.np)
                result = from_numpy(np.concatenate([first, rest]))
        else:
            result = from_numpy(_as_floats(self._advance(n), dtype))
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``2**m`` points; the total drawn must stay a power of two, which keeps the
        sequence's balance properties."""
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError("The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total_n}. If you "
                             "still want to do this, please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Back to the first point."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip ``n`` points, as if drawn."""
        steps = n - 1 if self.num_generated == 0 else n
        if steps > 0:
            self._advance(steps)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
