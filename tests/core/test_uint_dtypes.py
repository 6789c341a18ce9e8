"""``ember.uint16``, ``uint32`` and ``uint64``: PyTorch's "shell" unsigned dtypes (2.3+).

Tensors of them are made, cast, viewed, copied, printed, saved and sorted, and a few kernels
(``mul``, ``eq``, the bitwise ``and/or/xor``, ``sum`` as int64, ``sort``, ``unique``...)
compute them; the others raise PyTorch's dispatch error (``"add_stub" not implemented for
'UInt32'``), and promotion with any dtype but a float or themselves is an error. Each probe
below runs on all three dtypes and says what PyTorch 2.13's CPU build does: the value (against
a NumPy reference) or its error, exactly; the same probes run against PyTorch itself where it
is installed.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import ember

SHELL = ["uint16", "uint32", "uint64"]
SCALAR_NAMES = {"uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}
OTHERS = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex32", "complex64", "complex128"]
OTHER_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
               "int64": "Long", "complex32": "ComplexHalf", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble", **SCALAR_NAMES}


class Inputs:
    """The probes' operands in library ``T`` (ember or torch) for dtype name ``d``."""

    def __init__(self, T, d: str):
        self.T, self.d = T, getattr(T, d)
        self.a = T.tensor([3, 1, 2], dtype=self.d)
        self.b = T.tensor([1, 2, 2], dtype=self.d)
        self.m = T.tensor([True, False, True])  # a mask
        self.i = T.tensor([2, 0])  # an index
        self.ab = T.stack([self.a, self.b])  # 2 x 3


A = np.array([3, 1, 2])
B = np.array([1, 2, 2])


def _kernel(kernel: str):
    """PyTorch's dispatch error for ``kernel``: ``("raises", NotImplementedError, message)``."""
    return ("raises", NotImplementedError, kernel)


def _same(f):
    """A value: ``f(a, b, np_dtype)`` on NumPy arrays of the dtype is the expected result."""
    return ("value", f)


def _err(exc, message: str):
    return ("raises", exc, message)


K = _kernel
# name -> (probe(x: Inputs), expectation)
PROBES: dict[str, tuple] = {
    # creation and casts
    "zeros": (lambda x: x.T.zeros(2, dtype=x.d), _same(lambda a, b, t: np.zeros(2, t))),
    "ones": (lambda x: x.T.ones(2, dtype=x.d), _same(lambda a, b, t: np.ones(2, t))),
    "full": (lambda x: x.T.full((2,), 7, dtype=x.d), _same(lambda a, b, t: np.full(2, 7, t))),
    "full_like": (lambda x: x.T.full_like(x.a, 4), _same(lambda a, b, t: np.full(3, 4, t))),
    "empty": (lambda x: tuple(x.T.empty(2, 3, dtype=x.d).shape), _same(lambda a, b, t: (2, 3))),
    "new_tensor": (lambda x: x.a.new_tensor([1, 2]), _same(lambda a, b, t: np.array([1, 2], t))),
    "scalar_tensor": (lambda x: x.T.scalar_tensor(3, dtype=x.d),
                      _same(lambda a, b, t: np.array(3, t))),
    "tensor_wraps": (lambda x: x.T.tensor([-1, 1], dtype=x.d) if x.d != x.T.uint64 else
                     x.T.tensor([2**64 - 1, 1], dtype=x.d),
                     _same(lambda a, b, t: np.array([np.iinfo(t).max, 1], t))),
    "arange": (lambda x: x.T.arange(3, dtype=x.d), K("arange_cpu")),
    "linspace": (lambda x: x.T.linspace(0, 4, 3, dtype=x.d), K("linspace_cpu")),
    "eye": (lambda x: x.T.eye(2, dtype=x.d), K("eye")),
    "rand": (lambda x: x.T.rand(2, dtype=x.d), K("check_uniform_bounds")),
    "randperm": (lambda x: x.T.randperm(3, dtype=x.d), K("randperm")),
    "randint": (lambda x: x.T.randint(3, 4, (2,), dtype=x.d),
                _same(lambda a, b, t: np.array([3, 3], t))),
    "random_": (lambda x: x.T.zeros(2, dtype=x.d).random_(5, 6),
                _same(lambda a, b, t: np.array([5, 5], t))),
    "bernoulli_": (lambda x: x.a.clone().bernoulli_(0.5), K("bernoulli_scalar_cpu_")),
    "bernoulli": (lambda x: x.T.bernoulli(x.a), K("bernoulli_tensor_cpu_self_")),
    "requires_grad": (lambda x: x.T.zeros(2, dtype=x.d, requires_grad=True),
                      _err(RuntimeError, "Only Tensors of floating point and complex dtype can "
                                         "require gradients")),
    "to_float32": (lambda x: x.a.to(x.T.float32), _same(lambda a, b, t: a.astype(np.float32))),
    "to_int64": (lambda x: x.a.to(x.T.int64), _same(lambda a, b, t: a.astype(np.int64))),
    "to_bool": (lambda x: x.a.to(x.T.bool),
                _same(lambda a, b, t: a.astype(bool))),
    "from_int64": (lambda x: x.T.tensor([-3, 70000]).to(x.d),
                   _same(lambda a, b, t: np.array([-3, 70000]).astype(t))),
    "from_uint8": (lambda x: x.T.tensor([255], dtype=x.T.uint8).to(x.d),
                   _same(lambda a, b, t: np.array([255], t))),
    "view_uint8": (lambda x: x.a.view(x.T.uint8), _same(lambda a, b, t: a.view(np.uint8))),
    # shape and copies
    "view": (lambda x: x.a.view(3, 1), _same(lambda a, b, t: a.reshape(3, 1))),
    "index": (lambda x: x.a[1], _same(lambda a, b, t: a[1])),
    "index_tensor": (lambda x: x.a[x.i], _same(lambda a, b, t: a[[2, 0]])),
    "index_by_shell": (lambda x: x.T.arange(5)[x.T.tensor([1, 2], dtype=x.d)],
                       _err(IndexError, "tensors used as indices must be long, int, byte or "
                                        "bool tensors")),
    "cat": (lambda x: x.T.cat([x.a, x.b]), _same(lambda a, b, t: np.concatenate([a, b]))),
    "stack": (lambda x: x.T.stack([x.a, x.b]), _same(lambda a, b, t: np.stack([a, b]))),
    "contiguous": (lambda x: x.ab.t().contiguous(), _same(lambda a, b, t: np.stack([a, b]).T)),
    "roll": (lambda x: x.a.roll(1), _same(lambda a, b, t: np.roll(a, 1))),
    "repeat": (lambda x: x.a.repeat(2), _same(lambda a, b, t: np.tile(a, 2))),
    "repeat_interleave": (lambda x: x.a.repeat_interleave(2),
                          _same(lambda a, b, t: np.repeat(a, 2))),
    "diag": (lambda x: x.T.diag(x.a), _same(lambda a, b, t: np.diag(a))),
    "clone": (lambda x: x.a.clone(), _same(lambda a, b, t: a)),
    "copy_": (lambda x: x.T.empty(3, dtype=x.d).copy_(x.b), _same(lambda a, b, t: b)),
    "fill_": (lambda x: x.a.clone().fill_(3), _same(lambda a, b, t: np.full(3, 3, t))),
    "zero_": (lambda x: x.a.clone().zero_(), _same(lambda a, b, t: np.zeros(3, t))),
    "slice_set": (lambda x: _set(x.a.clone(), slice(0, 2), 0),
                  _same(lambda a, b, t: np.array([0, 0, 2], t))),
    "pad_constant": (lambda x: x.T.nn.functional.pad(x.a.view(1, 3), (1, 1)),
                     _same(lambda a, b, t: np.pad(a, 1).reshape(1, 5))),
    "flip": (lambda x: x.a.flip(0), K("flip_cpu")),
    "rot90": (lambda x: x.ab.rot90(), K("flip_cpu")),
    "tril": (lambda x: x.ab.tril(), K("tril")),
    "triu": (lambda x: x.ab.triu(), K("triu")),
    "index_select": (lambda x: x.a.index_select(0, x.i), K("index_select")),
    "take": (lambda x: x.a.take(x.i), K("take_cpu")),
    "put_": (lambda x: x.a.clone().put_(x.i, x.b[:2]), K("take_put_cpu")),
    "gather": (lambda x: x.a.gather(0, x.i), K("scatter_gather_tensor_cpu")),
    "take_along_dim": (lambda x: x.T.take_along_dim(x.a, x.i), K("scatter_gather_tensor_cpu")),
    "scatter": (lambda x: x.a.scatter(0, x.i, x.b[:2]), K("scatter_gather_tensor_cpu")),
    "scatter_value": (lambda x: x.a.scatter(0, x.i, 1), K("scatter_gather_scalar_cpu")),
    "scatter_add": (lambda x: x.a.scatter_add(0, x.i, x.b[:2]),
                    K("scatter_gather_tensor_cpu")),
    "scatter_reduce_amax": (lambda x: x.a.scatter_reduce(0, x.i, x.b[:2], "amax"),
                            K("scatter_gather_tensor_cpu_reduce_amax")),
    "index_add": (lambda x: x.a.index_add(0, x.i, x.b[:2]), K("index_add_")),
    "index_copy": (lambda x: x.a.index_copy(0, x.i, x.b[:2]), K("index_copy_cpu")),
    "index_put": (lambda x: x.a.index_put((x.i,), x.b[:2]), K("index_put")),
    "index_fill": (lambda x: x.a.index_fill(0, x.i, 1), K("index_fill_cpu")),
    "index_set": (lambda x: _set(x.a.clone(), x.i, 0), K("index_put")),
    "mask_set": (lambda x: _set(x.a.clone(), x.m, 0), K("masked_fill")),
    "masked_fill": (lambda x: x.a.masked_fill(x.m, 0), K("masked_fill")),
    "masked_select": (lambda x: x.a.masked_select(x.m), K("masked_select")),
    "masked_scatter": (lambda x: x.a.masked_scatter(x.m, x.b), K("masked_scatter")),
    "mask_index": (lambda x: x.a[x.m], _same(lambda a, b, t: a[[0, 2]])),
    "where": (lambda x: x.T.where(x.m, x.a, x.b), _same(lambda a, b, t: np.where(
        [True, False, True], a, b))),
    "pad_reflect": (lambda x: x.T.nn.functional.pad(x.a.view(1, 1, 3), (1, 1), mode="reflect"),
                    K("reflection_pad1d")),
    "pad_replicate": (lambda x: x.T.nn.functional.pad(x.a.view(1, 1, 3), (1, 1),
                                                      mode="replicate"),
                      K("replication_pad1d")),
    "combinations": (lambda x: x.T.combinations(x.a), K("masked_select")),
    # elementwise
    "mul": (lambda x: x.a * x.b, _same(lambda a, b, t: a * b)),
    "mul_scalar": (lambda x: x.a * 2, _same(lambda a, b, t: a * t.type(2))),
    "mul_negative": (lambda x: x.a * -1, _same(lambda a, b, t: a * np.array(-1).astype(t))),
    "mul_float": (lambda x: x.a * 1.5, _same(lambda a, b, t: a.astype(np.float32) * 1.5)),
    "mul_complex": (lambda x: x.a * 1j, _same(lambda a, b, t: a.astype(np.complex64) * 1j)),
    "div": (lambda x: x.a / x.b,
            _same(lambda a, b, t: a.astype(np.float32) / b.astype(np.float32))),
    "eq": (lambda x: x.a == x.b, _same(lambda a, b, t: a == b)),
    "ne": (lambda x: x.a != 1, _same(lambda a, b, t: a != 1)),
    "bitwise_and": (lambda x: x.a & x.b, _same(lambda a, b, t: a & b)),
    "bitwise_or": (lambda x: x.a | 1, _same(lambda a, b, t: a | t.type(1))),
    "bitwise_xor": (lambda x: x.a ^ x.b, _same(lambda a, b, t: a ^ b)),
    "floor": (lambda x: x.a.floor(), _same(lambda a, b, t: a)),
    "positive": (lambda x: +x.a, _same(lambda a, b, t: a)),
    "sqrt": (lambda x: x.a.sqrt(), _same(lambda a, b, t: np.sqrt(a.astype(np.float32)))),
    "isnan": (lambda x: x.a.isnan(), _same(lambda a, b, t: np.zeros(3, bool))),
    "add": (lambda x: x.a + x.b, K("add_stub")),
    "add_scalar": (lambda x: x.a + 1, K("add_stub")),
    "add_": (lambda x: x.a.clone().add_(x.b), K("add_stub")),
    "sub": (lambda x: x.a - x.b, K("add_stub")),
    "rsub": (lambda x: 1 - x.a, K("add_stub")),
    "add_float": (lambda x: x.a + 1.5, _same(lambda a, b, t: a.astype(np.float32) + 1.5)),
    "floor_divide": (lambda x: x.a // x.b, K("div_floor_cpu")),
    "div_trunc": (lambda x: x.T.div(x.a, x.b, rounding_mode="trunc"), K("div_trunc_cpu")),
    "remainder": (lambda x: x.a % 2, K("remainder_cpu")),
    "fmod": (lambda x: x.a.fmod(x.b), K("fmod_cpu")),
    "pow": (lambda x: x.a ** 2, K("pow")),
    "square": (lambda x: x.a.square(), K("pow")),
    "lshift": (lambda x: x.a << 1, K("lshift_cpu")),
    "rshift": (lambda x: x.a >> x.b, K("rshift_cpu")),
    "lt": (lambda x: x.a < x.b, K("lt_cpu")),
    "ge_scalar": (lambda x: x.a >= 2, K("ge_cpu")),
    "maximum": (lambda x: x.T.maximum(x.a, x.b), K("maximum_cpu")),
    "minimum": (lambda x: x.T.minimum(x.a, x.b), K("minimum_cpu")),
    "logical_and": (lambda x: x.T.logical_and(x.a, x.b), K("logical_and_cpu")),
    "logical_not": (lambda x: x.a.logical_not(), K("logical_not_cpu")),
    "neg": (lambda x: -x.a, K("neg_cpu")),
    "abs": (lambda x: x.a.abs(), K("abs_cpu")),
    "sign": (lambda x: x.a.sign(), K("sign_cpu")),
    "bitwise_not": (lambda x: ~x.a, K("bitwise_not_cpu")),
    "relu": (lambda x: x.T.relu(x.a), K("clamp_min_scalar_cpu")),
    "clamp": (lambda x: x.a.clamp(1, 2), K("clamp_scalar_cpu")),
    "clamp_tensor": (lambda x: x.a.clamp(x.b, x.b), K("clamp_cpu")),
    "clamp_max": (lambda x: x.a.clamp(max=2), K("clamp_max_scalar_cpu")),
    "clamp_min_tensor": (lambda x: x.a.clamp(min=x.b), K("maximum_cpu")),
    "heaviside": (lambda x: x.T.heaviside(x.a, x.b), K("heaviside_cpu")),
    "isin": (lambda x: x.T.isin(x.a, x.b), K("isin_default_cpu")),
    "gcd": (lambda x: x.T.gcd(x.a, x.b), K("gcd_cpu")),
    "addcmul": (lambda x: x.T.addcmul(x.a, x.a, x.b), K("addcmul_cpu_out")),
    "lerp": (lambda x: x.T.lerp(x.a, x.b, 0.5), K("lerp_kernel_scalar")),
    "isclose": (lambda x: x.T.isclose(x.a, x.b), _same(lambda a, b, t: a == b)),
    "equal": (lambda x: x.T.equal(x.a, x.b), _same(lambda a, b, t: False)),
    # reductions, sorting, linear algebra
    "sum": (lambda x: x.a.sum(), _same(lambda a, b, t: np.int64(6))),
    "sum_dtype": (lambda x: x.a.sum(dtype=x.d), K("sum_cpu")),
    "prod": (lambda x: x.a.prod(), _same(lambda a, b, t: np.int64(6))),
    "prod_dtype": (lambda x: x.a.prod(dtype=x.d), K("prod_out_cpu")),
    "cumsum": (lambda x: x.a.cumsum(0), _same(lambda a, b, t: np.cumsum(a.astype(np.int64)))),
    "cumsum_dtype": (lambda x: x.a.cumsum(0, dtype=x.d), K("cumsum_out_cpu")),
    "all": (lambda x: x.a.all(), _same(lambda a, b, t: np.bool_(True))),
    "any": (lambda x: x.a.any(), _same(lambda a, b, t: np.bool_(True))),
    "mean": (lambda x: x.a.mean(),
             _err(RuntimeError, "mean(): could not infer output dtype. Input dtype must be "
                                "either a floating point or complex dtype. Got: {U}")),
    "mean_float": (lambda x: x.a.mean(dtype=x.T.float32), _same(lambda a, b, t: np.float32(2))),
    "std": (lambda x: x.a.std(),
            _err(RuntimeError, "std and var only support floating point and complex dtypes")),
    "max": (lambda x: x.a.max(), K("max_all")),
    "min": (lambda x: x.a.min(), K("min_all")),
    "max_dim": (lambda x: x.a.max(0), K("max_cpu")),
    "amax": (lambda x: x.a.amax(), K("max_values_cpu")),
    "argmax": (lambda x: x.a.argmax(), K("argmax_cpu")),
    "aminmax": (lambda x: x.a.aminmax(), K("aminmax_cpu")),
    "median": (lambda x: x.a.median(), K("median_cpu")),
    "nanmedian": (lambda x: x.a.nanmedian(), K("median_cpu")),
    "mode": (lambda x: x.a.mode(), K("mode_cpu")),
    "kthvalue": (lambda x: x.a.kthvalue(1), K("kthvalue_cpu")),
    "cummax": (lambda x: x.a.cummax(0), K("cummax_cpu")),
    "topk": (lambda x: x.a.topk(2), K("topk_cpu")),
    "count_nonzero": (lambda x: x.a.count_nonzero(), K("nonzero_count_cpu")),
    "nonzero": (lambda x: x.a.nonzero(), K("nonzero_count_cpu")),
    "bincount": (lambda x: x.a.bincount(), K("bincount_cpu")),
    "histc": (lambda x: x.a.histc(), K("aminmax_cpu")),
    "histc_range": (lambda x: x.a.histc(min=0, max=3), K("linspace_cpu")),
    "searchsorted": (lambda x: x.T.searchsorted(x.b, x.a), K("searchsorted_out_cpu")),
    "sort": (lambda x: x.a.sort(), _same(lambda a, b, t: (np.sort(a), np.argsort(a)))),
    "sort_descending": (lambda x: x.a.sort(descending=True),
                        _same(lambda a, b, t: (np.sort(a)[::-1], np.array([0, 2, 1])))),
    "argsort": (lambda x: x.a.argsort(), _same(lambda a, b, t: np.argsort(a))),
    "unique": (lambda x: x.T.unique(x.ab, return_inverse=True, return_counts=True),
               _same(lambda a, b, t: np.unique(np.stack([a, b]), return_inverse=True,
                                               return_counts=True))),
    "unique_consecutive": (lambda x: x.T.unique_consecutive(x.b),
                           _same(lambda a, b, t: np.array([1, 2], t))),
    "trace": (lambda x: x.ab[:, :2].trace(), K("trace")),
    "dot": (lambda x: x.a.dot(x.b), K("dot")),
    "matmul_1d": (lambda x: x.a @ x.b, K("dot")),
    "mm": (lambda x: x.ab @ x.ab.t(), K("addmm_impl_cpu_")),
    "matmul_vm": (lambda x: x.b[:2] @ x.ab, K("addmm_impl_cpu_")),
    "matmul_mv": (lambda x: x.ab @ x.a, K("addmv_impl_cpu")),
    "matmul_batched": (lambda x: x.ab[None] @ x.ab.t()[None], K("bmm")),
    "matmul_folded": (lambda x: x.ab[None] @ x.ab.t(), K("addmm_impl_cpu_")),
    "tensordot": (lambda x: x.T.tensordot(x.ab, x.ab, 2), K("dot")),
    "einsum_contraction": (lambda x: x.T.einsum("ij,j->i", x.ab, x.a), K("bmm")),
    "einsum_outer": (lambda x: x.T.einsum("i,j->ij", x.a, x.b),
                     _same(lambda a, b, t: np.outer(a, b))),
    "outer": (lambda x: x.T.outer(x.a, x.b), _same(lambda a, b, t: np.outer(a, b))),
    "cross": (lambda x: x.T.linalg.cross(x.a, x.b), K("cross")),
    "nansum_dtype": (lambda x: x.a.nansum(dtype=x.d), K("sum_cpu")),
    "index_reduce": (lambda x: x.a.index_reduce(0, x.i, x.b[:2], "amax"), K("index_func_")),
    "embedding": (lambda x: x.T.nn.functional.embedding(x.a, x.T.ones(4, 2)),
                  _err(RuntimeError, "Expected tensor for argument #1 'indices' to have one of "
                                     "the following scalar types: Long, Int; but got CPU{U}Type "
                                     "instead (while checking arguments for embedding)")),
    # Python-level conversions
    "item": (lambda x: x.a[0].item(), _same(lambda a, b, t: 3)),
    "item_max": (lambda x: x.T.full((1,), -1, dtype=x.d)[0].item() if x.d != x.T.uint64 else
                 x.T.tensor([2**64 - 1], dtype=x.d)[0].item(),
                 _same(lambda a, b, t: int(np.iinfo(t).max))),
    "tolist": (lambda x: x.a.tolist(), _same(lambda a, b, t: [3, 1, 2])),
    "int": (lambda x: int(x.a[0]), _same(lambda a, b, t: 3)),
    "float": (lambda x: float(x.a[0]), _same(lambda a, b, t: 3.0)),
    "is_signed": (lambda x: x.a.is_signed(), _same(lambda a, b, t: False)),
    "element_size": (lambda x: x.a.element_size(), _same(lambda a, b, t: t.itemsize)),
    "type": (lambda x: x.a.cpu().type().split(".", 1)[1],
             _same(lambda a, b, t: _legacy_name(t))),
    "repr": (lambda x: repr(x.T.tensor([1, 2**16 - 1], dtype=x.d, device="cpu")).replace(
        "torch.", "ember."),
             _same(lambda a, b, t: f"tensor([    1, 65535], dtype=ember.{t.name})")),
    "repr_0d": (lambda x: repr(x.T.tensor(5, dtype=x.d, device="cpu")).replace("torch.",
                                                                                "ember."),
                _same(lambda a, b, t: f"tensor(5, dtype=ember.{t.name})")),
    "iinfo": (lambda x: repr(x.T.iinfo(x.d)), _same(lambda a, b, t: _iinfo_repr(t))),
    "finfo": (lambda x: x.T.finfo(x.d),
              _err(TypeError, "torch.finfo() requires a floating point input type. Use "
                              "torch.iinfo to handle 'torch.finfo'")),
    "to_complex": (lambda x: x.d.to_complex(),
                   _err(RuntimeError, "Unknown Complex ScalarType for {U}")),
}


def _set(t, index, value):
    t[index] = value
    return t


def _legacy_name(t: np.dtype) -> str:
    return {"uint16": "UInt16Tensor", "uint32": "UInt32Tensor", "uint64": "UInt64Tensor"}[t.name]


def _iinfo_repr(t: np.dtype) -> str:
    return f"iinfo(min=0, max={int(np.iinfo(t).max):g}, dtype={t.name})"


def _outcome(fn):
    """``("value", result)`` or ``("raises", type, message)`` of ``fn()``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("value", fn())
    except Exception as e:  # the exception is what is compared
        return ("raises", type(e), str(e).splitlines()[0] if str(e) else "")


def _plain(v):
    """A probe's result as plain Python/NumPy data: tensors as (dtype name, NumPy array)."""
    if hasattr(v, "numpy") and hasattr(v, "dtype") and not isinstance(v, np.ndarray):
        dtype = str(v.dtype).split(".")[-1]
        if dtype in ("bfloat16", "complex32"):
            return dtype, np.asarray(v.float().tolist() if dtype == "bfloat16"
                                     else v.cfloat().tolist())
        return dtype, v.detach().cpu().numpy()
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if hasattr(v, "__module__") and type(v).__module__.endswith("return_types"):
        return tuple(_plain(x) for x in v)
    return v


def _assert_same(ours, theirs, where: str) -> None:
    if isinstance(theirs, tuple) and theirs and isinstance(theirs[0], str) \
            and isinstance(theirs[-1], np.ndarray):
        assert isinstance(ours, tuple) and ours[0] == theirs[0], (where, ours, theirs)
        o, t = ours[1], theirs[1]
        assert o.shape == t.shape, (where, o, t)
        if t.dtype.kind in "fc":
            np.testing.assert_allclose(o, t, rtol=1e-6, err_msg=where)
        else:
            np.testing.assert_array_equal(o, t, err_msg=where)
        return
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), (where, ours, theirs)
        for o, t in zip(ours, theirs):
            _assert_same(o, t, where)
        return
    assert type(ours) is type(theirs) and ours == theirs, (where, ours, theirs)


def _expected_error(d: str, exc, message: str):
    if exc is NotImplementedError and "not implemented" not in message:
        message = f'"{message}" not implemented for \'{SCALAR_NAMES[d]}\''
    return exc, message.replace("{U}", SCALAR_NAMES[d])


@pytest.mark.parametrize("d", SHELL)
@pytest.mark.parametrize("name", list(PROBES))
def test_probe_against_numpy_or_pytorchs_error(name, d):
    probe, expect = PROBES[name]
    got = _outcome(lambda: probe(Inputs(ember, d)))
    if expect[0] == "raises":
        exc, message = _expected_error(d, expect[1], expect[2])
        assert got[0] == "raises", f"{name}: computed {got[1]!r}, PyTorch raises {message}"
        assert got[1] is exc and got[2] == message, (name, got)
        return
    assert got[0] == "value", (name, got)
    t = np.dtype(d)
    want = expect[1](A.astype(t), B.astype(t), t)
    value = got[1]
    if isinstance(want, np.ndarray) or isinstance(want, tuple) and want and \
            isinstance(want[0], np.ndarray):
        wants = want if isinstance(want, tuple) else (want,)
        values = tuple(value) if isinstance(want, tuple) else (value,)
        for w, v in zip(wants, values):
            arr = v.numpy()
            if w.dtype.kind in "biu" and arr.dtype.kind in "biu" and w.dtype != arr.dtype \
                    and name in ("sort", "argsort", "unique", "sort_descending"):
                w = w.astype(arr.dtype)  # the indices and counts: int64
            assert arr.dtype == w.dtype, (name, arr.dtype, w.dtype)
            np.testing.assert_allclose(arr, w, rtol=1e-6) if w.dtype.kind in "fc" else \
                np.testing.assert_array_equal(arr, w)
    elif isinstance(want, np.generic):
        arr = value.numpy()
        assert arr.shape == () and arr.dtype == want.dtype and arr == want, (name, value)
    else:
        assert value == want and type(value) is type(want), (name, value, want)


@pytest.mark.parametrize("d", SHELL)
@pytest.mark.parametrize("name", list(PROBES))
def test_probe_matches_pytorch(name, d):
    torch = pytest.importorskip("torch")
    probe, _ = PROBES[name]
    ours = _outcome(lambda: probe(Inputs(ember, d)))
    theirs = _outcome(lambda: probe(Inputs(torch, d)))
    assert ours[0] == theirs[0], (name, ours, theirs)
    if ours[0] == "raises":
        assert ours[1].__name__ == theirs[1].__name__ and ours[2] == theirs[2], (name, ours,
                                                                                 theirs)
        return
    _assert_same(_plain(ours[1]), _plain(theirs[1]), name)


# which flips reach PyTorch's dtype dispatch: (shape, layout, dims, raises); PyTorch copies the
# rows of a vertical flip (contiguous innermost dims not flipped, the next one flipped) whatever
# the dtype, and a flip that moves nothing is a copy
FLIPS = [
    ((3,), "c", (0,), True), ((1,), "c", (0,), False), ((3, 3), "c", (0,), False),
    ((3, 3), "c", (1,), True), ((3, 3), "c", (0, 1), True), ((3, 1), "c", (0,), True),
    ((3, 1), "c", (1,), False), ((2, 3, 3), "c", (0,), False), ((2, 3, 3), "c", (1,), False),
    ((2, 3, 3), "c", (0, 1), False), ((2, 3, 3), "c", (0, 2), True),
    ((3, 3), "t", (0,), True), ((3, 3), "t", (1,), False), ((3, 4), "strided", (0,), True),
    ((2, 3, 4), "permuted", (0,), False), ((2, 3, 4), "permuted", (2,), False),
    ((2, 3, 4), "permuted", (1,), True),
]


def _layout(t, layout: str):
    """``t`` (an ember or torch tensor, or a NumPy array) transposed, strided or permuted."""
    if layout == "t":
        return t.T
    if layout == "strided":
        return np.repeat(t, 2, -1)[..., ::2] if isinstance(t, np.ndarray) else \
            t.repeat_interleave(2, -1)[..., ::2]
    if layout == "permuted":
        return t.transpose(1, 2, 0) if isinstance(t, np.ndarray) else t.permute(1, 2, 0)
    return t


@pytest.mark.parametrize("shape, layout, dims, raises", FLIPS)
def test_flip_refuses_where_pytorch_dispatches(shape, layout, dims, raises):
    src = np.arange(math.prod(shape)).reshape(shape)
    for d in SHELL:
        x = _layout(ember.tensor(src, dtype=d), layout)
        want = np.flip(_layout(src, layout), dims)
        if raises:
            with pytest.raises(NotImplementedError, match=f'"flip_cpu" not implemented for '
                                                          f"'{SCALAR_NAMES[d]}'"):
                x.flip(dims)
        else:
            np.testing.assert_array_equal(x.flip(dims).numpy(), want.astype(d))


@pytest.mark.parametrize("shape, layout, dims, raises", FLIPS)
def test_flip_layouts_match_pytorch(shape, layout, dims, raises):
    torch = pytest.importorskip("torch")
    src = np.arange(math.prod(shape)).reshape(shape)
    with pytest.raises(NotImplementedError) if raises else _nothing():
        _layout(torch.tensor(src, dtype=torch.uint16), layout).flip(dims)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- promotion ----------------------------------------------------------------------------------

@pytest.mark.parametrize("d", SHELL)
@pytest.mark.parametrize("other", OTHERS + SHELL)
def test_promotion_is_floats_and_self_only(d, other):
    du, do = getattr(ember, d), getattr(ember, other)
    if do is du or do.is_floating_point:
        want = do
        assert ember.promote_types(du, do) is want and ember.promote_types(do, du) is want
        assert ember.result_type(ember.ones(2, dtype=du), ember.ones(2, dtype=do)) is want
        return
    message = ("Promotion for uint16, uint32, uint64 types is not supported, attempted to "
               f"promote {SCALAR_NAMES[d]} and {OTHER_NAMES[other]}")
    for call in (lambda: ember.promote_types(du, do),
                 lambda: ember.ones(2, dtype=du) * ember.ones(2, dtype=do),
                 lambda: ember.cat([ember.ones(1, dtype=du), ember.ones(1, dtype=do)])):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == message


@pytest.mark.parametrize("d", SHELL)
def test_scalars_and_zero_dim_tensors_follow_categories(d):
    du = getattr(ember, d)
    x = ember.ones(2, dtype=du)
    assert ember.result_type(x, 1) is du and ember.result_type(x, True) is du
    assert ember.result_type(x, 1.5) is ember.float32
    assert ember.result_type(x, 1j) is ember.complex64
    # a 0-dim tensor of another integer dtype does not promote a dimensioned one (nor the
    # other way round): no promotion of the two dtypes is asked for
    assert ember.result_type(x, ember.tensor(1, dtype=ember.int32)) is du
    assert ember.result_type(ember.tensor(1, dtype=du), ember.ones(2, dtype=ember.int32)) \
        is ember.int32
    assert (ember.tensor(2, dtype=du) * ember.ones(2, dtype=ember.int64)).dtype is ember.int64
    assert ember.result_type(ember.tensor(True), x) is du  # bool is below the integers
    with pytest.raises(RuntimeError, match=f"attempted to promote Bool and {SCALAR_NAMES[d]}"):
        ember.result_type(ember.ones(2, dtype=ember.bool), ember.tensor(1, dtype=du))


@pytest.mark.parametrize("d", SHELL)
def test_can_cast_by_category(d):
    du = getattr(ember, d)
    assert not ember.can_cast(du, ember.bool) and ember.can_cast(ember.bool, du)
    assert ember.can_cast(du, ember.int8) and ember.can_cast(du, ember.float16)
    assert not ember.can_cast(ember.float32, du) and ember.can_cast(ember.uint64, du)


# -- the dtype objects, NumPy and serialization -------------------------------------------------

@pytest.mark.parametrize("d", SHELL)
def test_dtype_objects(d):
    du = getattr(ember, d)
    t = np.dtype(d)
    assert repr(du) == f"ember.{d}" and du.itemsize == t.itemsize
    assert not du.is_signed and not du.is_floating_point and not du.is_complex
    assert du.to_real() is du and pickle.loads(pickle.dumps(du)) is du
    info = ember.iinfo(du)
    assert (info.min, info.max, info.bits, info.dtype) == (0, int(np.iinfo(t).max),
                                                          8 * t.itemsize, d)
    assert ember.tensor([1], dtype=d).dtype is du  # by name too


@pytest.mark.parametrize("d", SHELL)
def test_numpy_round_trip_shares_memory(d):
    arr = np.array([1, np.iinfo(d).max], dtype=d)
    t = ember.from_numpy(arr)
    assert t.dtype is getattr(ember, d)
    t[0] = 7
    assert arr[0] == 7 and t.numpy().dtype == np.dtype(d)
    assert ember.as_tensor(arr).dtype is t.dtype and ember.tensor(arr).dtype is t.dtype


def test_from_numpy_refusal_lists_the_unsigned_types():
    with pytest.raises(TypeError) as info:
        ember.from_numpy(np.array(["a"], dtype=object))
    assert str(info.value) == (
        "can't convert np.ndarray of type numpy.object_. The only supported types are: "
        "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
        "uint32, uint16, uint8, and bool.")


@pytest.mark.parametrize("data, exc, message", [
    ([-1], OverflowError, "can't convert negative int to unsigned"),
    ([1.5], TypeError, "an integer is required"),
    ([2**64], OverflowError, "int too big to convert"),
])
def test_uint64_data_is_unpacked_as_unsigned(data, exc, message):
    with pytest.raises(exc, match=message):
        ember.tensor(data, dtype=ember.uint64)
    big = ember.tensor([[2**64 - 1, 2**63], [0, True]], dtype=ember.uint64)
    assert big.tolist() == [[2**64 - 1, 2**63], [0, 1]]


@pytest.mark.parametrize("d", SHELL)
def test_checkpoint_round_trip(tmp_path, d):
    t = ember.tensor([[1, 2, 3], [4, 5, np.iinfo(d).max]], dtype=d)
    path = tmp_path / "u.pt"
    ember.save({"t": t, "v": t[:, 1:]}, path)
    back = ember.load(path)
    assert back["t"].dtype is t.dtype and back["t"].tolist() == t.tolist()
    assert back["v"].tolist() == t[:, 1:].tolist()


@pytest.mark.parametrize("d", SHELL)
def test_checkpoints_go_both_ways_with_pytorch(tmp_path, d):
    torch = pytest.importorskip("torch")
    t = ember.tensor([[1, 2, 3], [4, 5, np.iinfo(d).max]], dtype=d, device="cpu")
    ember.save({"t": t, "v": t[:, 1:]}, tmp_path / "e.pt")
    theirs = torch.load(tmp_path / "e.pt", weights_only=True)
    assert theirs["t"].dtype is getattr(torch, d) and theirs["t"].tolist() == t.tolist()
    assert theirs["v"].tolist() == t[:, 1:].tolist()
    torch.save({"t": theirs["t"], "v": theirs["t"][:, 1:]}, tmp_path / "t.pt")
    ours = ember.load(tmp_path / "t.pt")
    assert ours["t"].dtype is t.dtype and ours["t"].tolist() == t.tolist()
    assert ours["v"].tolist() == t[:, 1:].tolist()


@pytest.mark.parametrize("d, code", [("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")])
def test_safetensors(tmp_path, d, code):
    from ember import safetensors as st

    t = ember.tensor([1, np.iinfo(d).max], dtype=d)
    path = tmp_path / "u.safetensors"
    st.save_file({"t": t}, path)
    raw = path.read_bytes()
    assert f'"dtype":"{code}"'.encode() in raw
    back = st.load_file(path)["t"]
    assert back.dtype is t.dtype and back.tolist() == t.tolist()
    try:
        import safetensors.torch as sttorch
        import torch
    except ImportError:
        return
    theirs = sttorch.load_file(path)["t"]
    assert theirs.dtype is getattr(torch, d) and theirs.tolist() == t.tolist()


def test_float_paths_are_untouched():
    """The dispatch checks sit off the float32 path: its results are NumPy's."""
    x = ember.tensor([1.5, -2.0, 3.25])
    np.testing.assert_array_equal((x + x).numpy(), np.array([3.0, -4.0, 6.5], np.float32))
    np.testing.assert_array_equal(ember.relu(x).numpy(), np.array([1.5, 0, 3.25], np.float32))
    assert math.isclose(x.sum().item(), 2.75)
