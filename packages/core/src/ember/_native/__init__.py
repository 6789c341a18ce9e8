"""Fused float32 CPU kernels, compiled on first use with the machine's C compiler.

NumPy runs an elementwise formula one ufunc call (one pass over memory) per arithmetic step:
exact GELU is 18 passes, an LSTM time step's gate arithmetic 9 calls. PyTorch runs each as one
vectorised C++ loop. ``kernels.c`` (next to this file) holds those few loops as plain C; the
first call of ``library()`` in a process compiles it with the C compiler (``$CC``, else
``cc``/``gcc``/``clang`` on ``PATH``) at ``-O3 -march=native`` into
``$EMBER_HOME/native/kernels-<hash>.so`` (``$EMBER_HOME`` as the hub's: ``$XDG_CACHE_HOME/ember``
or ``~/.cache/ember``) and loads it with ctypes; later processes on the same machine load the
cached file (~1 ms). The hash covers the source, the flags, the compiler's version and the
CPU's model and feature flags, so a cache shared between machines never loads code built for
another CPU. The file is written under a temporary name and renamed into place, so
concurrent first calls race harmlessly.

Where there is no compiler, the build fails, the cache directory is not writable, or
``EMBER_NATIVE=0`` is set, ``library()`` returns None and every caller keeps its NumPy
formulation (same results to a few float32 ulp: the tests compare both); ``status()`` says
which and why. ctypes releases the GIL during a call, so the kernels run in Ember's intra-op
threads (``ember._parallel``) side by side.

A ctypes call costs ~0.5-1 us, and ``ndarray.ctypes.data`` another ~1 us per array (NumPy builds
a ctypes helper object and the ``__array_interface__`` dict each time): callers pass pointers
as integers got with ``address(array)`` (~0.2 us, through the buffer protocol) and keep the
per-call work to one kernel over a block or a time step.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from .._forksafe import reinit_in_child

__all__ = ["library", "status", "enabled", "kernel", "pointwise", "chunks", "by_rows", "by_range",
           "native_arrays", "address", "blas_sgemm"]

_addressof = ctypes.addressof
_char_at = ctypes.c_char.from_buffer


def address(a) -> int:
    """The address of a NumPy array's first element, as ``a.ctypes.data`` gives it but about
    five times faster: a ctypes view through the buffer protocol, which takes writable
    contiguous arrays; anything else (read-only, strided, empty) asks NumPy."""
    try:
        return _addressof(_char_at(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data

_SOURCE = os.path.join(os.path.dirname(__file__), "kernels.c")
# -O3 vectorises the branch-free loops; no -ffast-math (IEEE infinities and NaN, no
# reassociation except the `omp simd reduction` row sums, which -fopenmp-simd enables without
# linking an OpenMP runtime); -fno-math-errno lets sqrtf inline; -pthread for the worker
# pool of the kernels that split their own work (pool_for).
_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-fopenmp-simd",
          "-std=c11", "-pthread")

_P = ctypes.c_void_p
_N = ctypes.c_ssize_t
_SIGNATURES = {
    "ember_gelu_f32": (_P, _P, _N),
    "ember_gelu_with_grad_f32": (_P, _P, _P, _N),
    "ember_gelu_backward_f32": (_P, _P, _P, _N),
    "ember_attention_exp_f32": (_P, _P, _N, _N, _N, ctypes.c_int),
    "ember_attention_ds_f32": (_P, _P, _P, _P, _N, _N, _N, ctypes.c_int),
    "ember_bias_gelu_inplace_f32": (_P, _P, _N, _N),
    "ember_layer_norm_f32": (_P, _P, _P, _P, _P, _P, _N, _N, ctypes.c_float),
    "ember_layer_norm_backward_f32": (_P,) * 8 + (_N, _N),
    "ember_softmax_f32": (_P, _P, _P, _P, _N, _N, ctypes.c_int),
    "ember_softmax_backward_f32": (_P, _P, _P, _N, _N),
    "ember_cross_entropy_f32": (_P, _P, _P, _P, _P, _N, _N),
    "ember_cross_entropy_backward_f32": (_P, _P, _P, _P, _P, _N, _N),
    "ember_lstm_gates_f32": (_P, _P, _P, _P, _P, _N, _N),
    "ember_lstm_gates_backward_f32": (_P, _P, _P, _P, _P, _P, _P, _N, _N),
    "ember_lstm_cell_f64": (_P,) * 5 + (_N, _N, _P, _P),
    "ember_lstm_cell_backward_f64": (_P,) * 7 + (_N, _N),
    "ember_linear_bf16_f32": (_P, _P, _P, _P, _N, _N, _N, _N),
    "ember_panel_gemm_available": (),
    "ember_panel_gemm_f32": (_P, _P, _P, _N, _N, _N, ctypes.c_int),
    "ember_sgemm_f32": (_N, _N, _N, _P, _N, _N, _P, _N, _N, _P, _N, ctypes.c_int, _P, _N),
    "ember_lstm_sequence_f32": (_P, ctypes.c_int, _P, _P, _P, _P, _N) + (_P,) * 6 + (_N,) * 3
                               + (ctypes.c_int,),
    "ember_lstm_sequence_backward_f32": (_P, ctypes.c_int) + (_P,) * 6 + (_N,) + (_P,) * 3
                                        + (_N,) * 3 + (ctypes.c_int,),
    "ember_max_pool2x2_forward_f32": (_P, _P, _P) + (_N,) * 5,
    "ember_max_pool2d_backward_f32": (_P, _P, _P) + (_N,) * 11,
    "ember_col2im_flat_f32": (_P, _P, _P) + (_N,) * 4,
    "ember_conv2d_f32": (_P, _P, _P, _P) + (_N,) * 14,
    "ember_conv2d_wgrad_f32": (_P, _P, _P) + (_N,) * 13,
    "ember_conv2d_ovec_f32": (_P, _P, _P, _P) + (_N,) * 15,
    "ember_conv2d_wgrad_ovec_f32": (_P, _P, _P) + (_N,) * 14,
    "ember_conv_wide": (ctypes.c_int,),
    "ember_pool_workers": (),
    "ember_pool_jobs": (),
    "ember_split": (_P, ctypes.c_int, ctypes.c_int, _P, _P, _P, _N, _N, _N, _P, _P, _P),
    "ember_ufunc_split": (_P, _P, ctypes.c_int, _P, _P, _P, _N, _N, _N, _N, _N, _N),
    "ember_batch_norm_f32": (_P,) * 6 + (_N, _N, _N, ctypes.c_float, _N, _N),
    "ember_batch_norm_backward_f32": (_P,) * 8 + (_N,) * 5,
    "ember_threshold_backward_f32": (_P, _P, _P, _N, ctypes.c_float),
    "ember_tanh_backward_f32": (_P, _P, _P, _N),
    "ember_tanh_backward_f64": (_P, _P, _P, _N),
    "ember_column_sums_f32": (_P, _P, _N, _N, _N),
    "ember_column_sums_f64": (_P, _P, _N, _N, _N),
    "ember_embedding_grad_f32": (_P, _P, _P, _N, _N),
    "ember_adam_f32": (_P, _P, _P, _P, _P, _N, ctypes.c_int) + (ctypes.c_float,) * 7,
    "ember_sgd_f32": (_P, _P, _P, _N, ctypes.c_int) + (ctypes.c_float,) * 7,
    "ember_erfinv_f32": (_P, _P, _N),
    "ember_erfinv_f64": (_P, _P, _N),
    "ember_torch_box_muller_f32": (_P, _N, ctypes.c_float, ctypes.c_float),
    "ember_torch_box_muller_f32_scalar": (_P, _N, ctypes.c_float, ctypes.c_float),
    "ember_mt_seed": (_P, ctypes.c_uint32),
    "ember_mt_words": (_P, _P, _N),
    "ember_mt_words64": (_P, _P, _N),
    "ember_torch_uniform_f32": (_P, _P, _N, ctypes.c_float, ctypes.c_float, ctypes.c_int),
    "ember_torch_uniform_f64": (_P, _P, _N, ctypes.c_double, ctypes.c_double, ctypes.c_int),
    "ember_torch_random_from_to": (_P, _P, _N, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int),
    "ember_torch_box_muller_f64": (_P, _N, ctypes.c_double, ctypes.c_double),
    "ember_torch_normal_pairs_f64": (_P, _P, _N),
    "ember_torch_randperm": (_P, _P, _N),
    "ember_torch_transform_f64": (_P, _P, _N, ctypes.c_int, ctypes.c_double, ctypes.c_double),
    "ember_torch_poisson": (_P, _P, _P, _N),
    "ember_torch_binomial_f32": (_P, _P, _P, _P, _N),
    "ember_torch_binomial_f64": (_P, _P, _P, _P, _N),
    "ember_torch_gamma_f32": (_P, _P, _P, _P, _N, ctypes.c_float),
    "ember_torch_gamma_f64": (_P, _P, _P, _P, _N, ctypes.c_double),
    **{f"ember_torch_sort_{t}": (_P, _P, _N, _N, ctypes.c_int)
       for t in ("f32", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64")},
    **{f"ember_torch_topk_{t}": (_P, _P, _N, _N, _N, ctypes.c_int, ctypes.c_int)
       for t in ("f32", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64")},
    **{f"ember_torch_kthvalue_{t}": (_P, _P, _N, _N, _N)
       for t in ("f32", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64")},
    **{f"ember_torch_mode_{t}": (_P, _P, _P, _N, _N)
       for t in ("f32", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64")},
    "ember_torch_nth_element_i64": (_P, _P, _N, _N, _N),
}

#: kernels that return an int (1: done; 0: not built for this CPU, the caller falls back)
_INT_RESULT = frozenset({"ember_panel_gemm_available", "ember_sgemm_f32", "ember_conv2d_f32",
                         "ember_conv2d_wgrad_f32", "ember_conv2d_ovec_f32",
                         "ember_conv2d_wgrad_ovec_f32", "ember_conv_wide",
                         "ember_pool_workers", "ember_split", "ember_ufunc_split"})

#: kernels that return a long
_LONG_RESULT = frozenset({"ember_pool_jobs"})

_lock = reinit_in_child(threading.Lock())
_state: dict = {"lib": None, "status": None}


try:  # os.environ's own mapping: a lookup without encoding the key each call (~0.7 us)
    _ENVIRON, _NATIVE_KEY = os.environ._data, os.environ.encodekey("EMBER_NATIVE")
except AttributeError:  # pragma: no cover - an os.environ without the CPython internals
    _ENVIRON, _NATIVE_KEY = None, None


def enabled() -> bool:
    """False when ``EMBER_NATIVE`` is ``0``/``false``/``no``/``off`` (read on every call)."""
    if _ENVIRON is not None and _NATIVE_KEY not in _ENVIRON:
        return True
    return os.environ.get("EMBER_NATIVE", "1").strip().lower() not in ("0", "false", "no", "off")


def _cache_dir() -> str:
    home = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "ember")
    return os.path.join(os.path.expanduser(os.getenv("EMBER_HOME", home)), "native")


def _compiler() -> str | None:
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc.split()[0]) and cc
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def _cpu_identity() -> str:
    """The CPU's model and feature flags (what ``-march=native`` compiles for)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags", "Features",
                                                      "CPU part"))]
        return "".join(sorted(set(lines)))
    except OSError:
        import platform
        return f"{platform.machine()} {platform.processor()}"


def _build(cc: str) -> str:
    """Compile ``kernels.c`` (or find it compiled) and return the shared library's path."""
    with open(_SOURCE, "rb") as f:
        source = f.read()
    args = cc.split()
    version = subprocess.run([*args, "--version"], capture_output=True, text=True,
                             timeout=60).stdout.splitlines()[:1]
    key = hashlib.sha256(b"\0".join([source, " ".join(_FLAGS).encode(),
                                     "".join(version).encode(),
                                     _cpu_identity().encode()])).hexdigest()[:20]
    directory = _cache_dir()
    path = os.path.join(directory, f"kernels-{key}.so")
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", prefix=".kernels-", dir=directory)
    os.close(fd)
    try:
        done = subprocess.run([*args, *_FLAGS, "-o", tmp, _SOURCE, "-lm"],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{cc} failed ({done.returncode}): {done.stderr.strip()[:2000]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _load():
    if not enabled():
        return None, "disabled by EMBER_NATIVE"
    if sys.platform == "win32":
        return None, "not built on Windows"
    cc = _compiler()
    if cc is None:
        return None, "no C compiler ($CC, cc, gcc or clang) on PATH"
    try:
        path = _build(cc)
        lib = ctypes.CDLL(path)
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_long if name in _LONG_RESULT else \
                ctypes.c_int if name in _INT_RESULT else None
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        return None, f"{type(e).__name__}: {e}"
    return lib, f"loaded {path}"


def library():
    """The loaded kernels (a ``ctypes.CDLL``), or None where they cannot be used."""
    if _state["status"] is None:
        with _lock:
            if _state["status"] is None:
                _state["lib"], _state["status"] = _load()
    return _state["lib"] if enabled() else None


def status() -> str:
    """Why ``library()`` returns what it does (loads it first if not yet tried)."""
    library()
    return _state["status"] if enabled() else "disabled by EMBER_NATIVE"


def kernel(name: str):
    """The kernel ``name`` of ``kernels.c`` as a ctypes function, or None where the library
    cannot be used (callers then keep their NumPy formulation)."""
    lib = library()
    return None if lib is None else getattr(lib, name)


def blas_sgemm():
    """``(address, ilp64)`` of ``cblas_sgemm`` in the OpenBLAS that NumPy's products run on
    (``ilp64``: 1 where its integers are 64-bit, as scipy-openblas64's), for kernels that loop
    over many small products without returning to Python (the LSTM layer's time loop); None
    where NumPy's BLAS is not an OpenBLAS this finds (the callers keep their NumPy loop).
    Looked up once per process (threadpoolctl names the library and its symbols' affixes)."""
    if "sgemm" not in _state:
        with _lock:
            if "sgemm" not in _state:
                _state["sgemm"] = _find_sgemm()
    return _state["sgemm"]


def _find_sgemm():
    try:
        import numpy as np
        import threadpoolctl

        numpy_dir = os.path.dirname(os.path.dirname(os.path.realpath(np.__file__)))
        found = threadpoolctl.ThreadpoolController().select(internal_api="openblas")
        for lib in found.lib_controllers:
            # the OpenBLAS wheel NumPy ships (site-packages/numpy.libs), not another one a
            # second library loaded into the process
            if not os.path.realpath(lib.filepath).startswith(numpy_dir + os.sep + "numpy"):
                continue
            for prefix in ("scipy_", ""):
                for suffix in ("64_", ""):
                    name = f"{prefix}cblas_sgemm{suffix}"
                    if not hasattr(lib.dynlib, name):
                        continue
                    config = getattr(lib.dynlib, f"{prefix}openblas_get_config{suffix}", None)
                    if config is None:
                        continue
                    config.restype = ctypes.c_char_p
                    ilp64 = int(b"USE64BITINT" in (config() or b""))
                    return ctypes.cast(getattr(lib.dynlib, name), ctypes.c_void_p).value, ilp64
    except (ImportError, OSError, AttributeError, ValueError, TypeError):  # no BLAS: fallback
        return None
    return None


#: elements per thread at least when ``pointwise`` or ``chunks`` split a kernel over
#: kernels.c's pool: ~85 us of GELU, above a hand-off to a worker gone to sleep (~50 us)
POINTWISE_GRAIN = 1 << 17


def pointwise(fn, n_out: int, *arrays):
    """``fn(*inputs, *outputs, n)`` over same-shaped NumPy ``arrays`` of one dtype (made
    C-contiguous) into ``n_out`` new C-contiguous outputs (returned: one array, or a list when
    ``n_out > 1``), in chunks over kernels.c's worker pool (``by_rows``: Ember's Python pool,
    whose hand-offs cost ~70 us, only for a kernel ``ember_split`` cannot call)."""
    import numpy as np

    arrays = tuple(np.ascontiguousarray(a) for a in arrays)
    shape, dtype = arrays[0].shape, arrays[0].dtype
    outs = [np.empty(shape, dtype) for _ in range(n_out)]
    item = dtype.itemsize
    by_rows(fn, arrays[0].size, POINTWISE_GRAIN,
            [(address(a), item) for a in arrays + tuple(outs)])
    return outs[0] if n_out == 1 else outs


#: elements at least for ``ufunc`` to split a NumPy ufunc's loop over kernels.c's pool
UFUNC_MIN = 1 << 17
#: elements at least a chunk of ``ufunc``'s split
UFUNC_GRAIN = 1 << 16


class _UFuncObject(ctypes.Structure):
    """The head of NumPy's ``PyUFuncObject`` (numpy/ufuncobject.h, public C-API), as far as
    ``types``: the legacy inner loops, one per type signature."""
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int),
                ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p),
                ("types", ctypes.POINTER(ctypes.c_ubyte))]


_ufunc_loops: dict = {}


def _ufunc_loop(uf, dtype):
    """``(function, data)`` of ``uf``'s inner loop for ``dtype`` in every operand, as NumPy
    itself would call it, or None: not found in the ufunc's table, or not giving the ufunc's
    own bits on a probe of special values (checked once per ufunc and dtype)."""
    key = (uf, dtype)
    got = _ufunc_loops.get(key, False)
    if got is not False:
        return got
    got = None
    try:
        got = _find_ufunc_loop(uf, dtype)
    except (ValueError, TypeError, OverflowError, AttributeError):
        got = None
    _ufunc_loops[key] = got
    return got


def ufunc_loop(uf, dtype):
    """``(function, data)`` addresses of NumPy's own inner loop of ``uf`` for ``dtype`` (a
    NumPy dtype) in every operand, probed to give the ufunc's bits, for a kernel of
    ``kernels.c`` that calls it (``ufunc_loop`` there); None where there is none or the
    kernels cannot be used."""
    return None if library() is None else _ufunc_loop(uf, dtype)


def _find_ufunc_loop(uf, dtype):
    import numpy as np

    if uf.__class__ is not np.ufunc or uf.nout != 1 or uf.nin not in (1, 2) \
            or uf.signature is not None:
        return None
    # the layout read here is CPython's usual object head (not a free-threaded build's)
    if object.__basicsize__ != 16 or np.ufunc.__basicsize__ < ctypes.sizeof(_UFuncObject):
        return None
    head = _UFuncObject.from_address(id(uf))
    if head.nin != uf.nin or head.nout != 1 or (head.name or b"").decode() != uf.__name__:
        return None
    want = (dtype.num,) * head.nargs
    for i in range(head.ntypes):
        if tuple(head.types[i * head.nargs + j] for j in range(head.nargs)) == want:
            fn, data = head.functions[i], head.data[i]
            break
    else:
        return None
    return _probe(uf, dtype, fn, data) if fn else None


def _probe(uf, dtype, fn, data):
    """``(fn, data)`` where the loop gives ``uf``'s own bits on every pair of special and
    ordinary values, else None."""
    import numpy as np

    # the probe: every pair of special and ordinary values, through the loop and the ufunc
    values = np.array([0.0, -0.0, 1.0, -1.5, 0.5, 3.25, 1e-40, -1e-310, 60.0, -90.0, 1e30,
                       np.inf, -np.inf, np.nan], dtype)
    x = np.repeat(values, values.size) if uf.nin == 2 else values
    ins = (x, np.tile(values, values.size)) if uf.nin == 2 else (x,)
    out = np.empty(x.size, dtype)
    lib = library()
    if lib is None:
        return None
    p = [address(a) for a in ins + (out,)] + [None]
    item = dtype.itemsize
    lib.ember_ufunc_split(fn, data, uf.nin + 1, p[0], p[1], p[2], item, item, item, x.size,
                          x.size, 1)
    with np.errstate(all="ignore"):
        want = uf(*ins)
    if want.dtype != dtype or not np.array_equal(want.view(f"u{item}"), out.view(f"u{item}")):
        return None
    return fn, data


def ufunc(uf, a, b=None, out=None):
    """``uf(a)`` or ``uf(a, b)`` (a NumPy ufunc of one output, ``b`` None for one input) split
    over kernels.c's pool with NumPy's own inner loop: the same bits as the call, on two
    threads or more where the operands are big. The operands: C-contiguous float32 or float64
    arrays of one shape and dtype, or a Python number beside one (made the array's dtype, as
    NumPy makes it); ``out``, where given, such an array too (an input, for in place). None,
    with nothing computed, where it does not apply: under ``UFUNC_MIN`` elements, another
    dtype, layout or shape, one thread, no kernels, a ufunc without such a loop."""
    import numpy as np

    nd = np.ndarray
    arr = a if a.__class__ is nd else b
    if arr.__class__ is not nd or arr.size < UFUNC_MIN:
        return None
    dt = arr.dtype
    if dt.num not in _FLOAT_SUFFIX or not arr.flags.c_contiguous:
        return None
    unary = b is None
    if uf.nin != (1 if unary else 2):
        return None
    from .._parallel import native_threads

    threads = native_threads(mind_blas=False)
    if threads < 2:
        return None
    lib = library()  # (EMBER_NATIVE is read on every call, as for every kernel)
    loop = None if lib is None else _ufunc_loop(uf, dt)
    if loop is None:
        return None
    item = dt.itemsize
    steps = [item, item, item]
    operands = [a] if unary else [a, b]
    for i, o in enumerate(operands):
        if o.__class__ is nd:
            if o is not arr and (o.shape != arr.shape or o.dtype != dt
                                 or not o.flags.c_contiguous):
                return None
        elif o.__class__ is float or o.__class__ is int:
            try:
                operands[i] = np.array(o, dt)
            except (OverflowError, ValueError):
                return None
            steps[i] = 0
        else:
            return None
    if out is None:
        out = np.empty(arr.shape, dt)
    elif out.__class__ is not nd or out.shape != arr.shape or out.dtype != dt \
            or not out.flags.c_contiguous:
        return None
    p = [address(o) for o in operands] + [address(out)]
    if unary:
        p.append(None)
    if not lib.ember_ufunc_split(loop[0], loop[1], len(operands) + 1, p[0], p[1], p[2],
                                 steps[0], steps[1], steps[2], arr.size, UFUNC_GRAIN, threads):
        return None
    return out


def column_sums(d):
    """``np.add.reduce(d, axis=0)`` of a C-contiguous 2-D float32 or float64 NumPy array with
    two rows or more, in one native pass (the same additions in the same order: the same
    bits), its columns split over kernels.c's pool where there are many; None where the
    kernels are unavailable or the array is another kind. NumPy runs such a reduction one row
    at a time (a 512 x 64 bias gradient: 12 us; here ~2)."""
    import numpy as np

    if d.__class__ is not np.ndarray or d.ndim != 2 or d.shape[0] < 2 \
            or not d.flags.c_contiguous:
        return None
    fn = _float_kernel("ember_column_sums", d.dtype)
    if fn is None:
        return None
    rows, cols = d.shape
    out = np.empty(cols, d.dtype)
    # chunks of whole cache lines of columns, each with POINTWISE_GRAIN elements or more
    grain = -(-max(16, -(-POINTWISE_GRAIN // rows)) // 16) * 16
    if cols < 2 * grain:  # one chunk: the kernel itself (by_rows' wrapper costs 2 us)
        fn(address(d), address(out), cols, rows, cols)
    else:
        item = d.dtype.itemsize
        by_rows(fn, cols, grain, [(address(d), item), (address(out), item)], rows, cols)
    return out


def embedding_grad(idx, g, num: int):
    """The float64 sums ``acc[idx[i]] += g[i]`` (``acc`` of ``num`` rows of ``g.shape[1]``
    zeros) of an embedding's float32 gradient rows ``g`` (2-D, C-contiguous) at int64
    indices ``idx`` (1-D, each in ``[0, num)``), in index order: what a ``bincount`` over
    (row, column) pairs sums, in one pass. None where the kernels are unavailable or the
    arrays are of another kind."""
    import numpy as np

    if g.__class__ is not np.ndarray or idx.__class__ is not np.ndarray \
            or g.dtype != np.float32 or idx.dtype != np.int64 or g.ndim != 2 \
            or idx.shape != g.shape[:1] or not g.flags.c_contiguous \
            or not idx.flags.c_contiguous:
        return None
    fn = kernel("ember_embedding_grad_f32")
    if fn is None:
        return None
    acc = np.zeros((num, g.shape[1]), np.float64)
    fn(address(idx), address(g), address(acc), idx.size, g.shape[1])
    return acc


def tanh_backward(g, y):
    """``g * (1 - y * y)`` of two NumPy arrays of one shape and float dtype (C-contiguous) in
    one pass, rounded step by step as NumPy's three passes (the same bits), split over
    kernels.c's pool where big; None where it does not apply."""
    import numpy as np

    if g.__class__ is not np.ndarray or y.__class__ is not np.ndarray or g.dtype != y.dtype \
            or g.shape != y.shape or not g.flags.c_contiguous or not y.flags.c_contiguous:
        return None
    fn = _float_kernel("ember_tanh_backward", g.dtype)
    if fn is None:
        return None
    out = np.empty(g.shape, g.dtype)
    item = g.dtype.itemsize
    by_rows(fn, g.size, POINTWISE_GRAIN, [(address(g), item), (address(y), item),
                                         (address(out), item)])
    return out


#: kernels' suffixes by NumPy's type number (float32: 11, float64: 12): the dtypes that
#: ``ufunc`` splits and the float kernels of both widths take
_FLOAT_SUFFIX = {11: "f32", 12: "f64"}


def _float_kernel(name: str, dtype):
    """Kernel ``<name>_f32`` or ``<name>_f64`` for a float32 or float64 ``dtype``, else None."""
    suffix = _FLOAT_SUFFIX.get(dtype.num)
    return None if suffix is None else kernel(f"{name}_{suffix}")


def native_arrays(*arrays) -> bool:
    """True when every array (None skipped) is a C-contiguous float32 NumPy array of the first
    one's shape: what the in-place kernels take."""
    import numpy as np

    shape = arrays[0].shape
    return all(a is None or (a.__class__ is np.ndarray and a.dtype == np.float32
                             and a.shape == shape and a.flags.c_contiguous) for a in arrays)


#: ember_split's signature codes (kernels.c), by the ctypes types of the scalars after a
#: kernel's pointers and count; the range-last kernels by their scalars before the range
_SPLIT_TAILS = {
    (): 0, (ctypes.c_float,): 1, (_N, ctypes.c_float): 2, (_N, ctypes.c_int): 3, (_N,): 4,
    (ctypes.c_int,) + (ctypes.c_float,) * 7: 5, (_N, _N): 6,
    (_N, _N, ctypes.c_int, ctypes.c_int): 7, (_N,) * 4: 10, (_N,) * 10: 11,
}
_SPLIT_RANGE = {(_P,) * 6 + (_N, _N, _N, ctypes.c_float): 8, (_P,) * 8 + (_N, _N, _N): 9}
_SPLIT_MAX = 8
_split_sigs: dict = {}


def _split_signature(fn, range_last: bool):
    """``(sig, k, tail)`` for ember_split: the code, the number of pointers, the scalars'
    types; None where ember_split has no prototype for ``fn``."""
    key = (fn.__name__, range_last)
    got = _split_sigs.get(key, False)
    if got is not False:
        return got
    types = tuple(fn.argtypes or ())
    k = 0
    while k < len(types) and types[k] is _P:
        k += 1
    got = None
    if range_last:
        sig = _SPLIT_RANGE.get(types[:-2]) if types[-2:] == (_N, _N) else None
        if sig is not None:
            got = (sig, k, types[k:-2])
    elif 1 <= k <= _SPLIT_MAX and types[k:k + 1] == (_N,) and types[k + 1:] in _SPLIT_TAILS:
        got = (_SPLIT_TAILS[types[k + 1:]], k, types[k + 1:])
    _split_sigs[key] = got
    return got


def _native_split(fn, rows: int, grain: int, pointers, scalars, threads: int,
                  range_last: bool = False, per_chunk=()) -> bool:
    """``fn`` over chunks of ``rows`` in kernels.c's worker pool (``ember_split``): no GIL
    handoffs, where Ember's Python pool costs ~70 us a split on a 2-core VM. ``pointers``
    are ``(address, bytes per row)`` pairs (``range_last``: fixed addresses, the chunk's
    ``(b, e)`` appended to the arguments, as batch norm's kernels take them); ``per_chunk``
    bytes added to each pointer per chunk index (blocks of partial sums). False where
    ember_split cannot call ``fn`` (the caller splits in Python)."""
    got = _split_signature(fn, range_last)
    lib = library()
    if got is None or lib is None:
        return False
    sig, k, tail = got
    n, ints, floats = [0] * 10, [0, 0], [0.0] * 7
    ni = ii = fi = 0
    for t, v in zip(tail, scalars):
        if t is _N:
            n[ni], ni = v, ni + 1
        elif t is ctypes.c_int:
            ints[ii], ii = v, ii + 1
        else:
            floats[fi], fi = v, fi + 1
    per = list(per_chunk) + [0] * (k - len(per_chunk))
    return bool(lib.ember_split(
        ctypes.cast(fn, _P), sig, k, (_P * k)(*[p for p, _ in pointers]),
        (_N * k)(*[step for _, step in pointers]), (_N * k)(*per), rows, grain, threads,
        (_N * 10)(*n), (ctypes.c_int * 2)(*ints), (ctypes.c_float * 7)(*floats)))


def chunks(fn, n: int, pointers, *scalars) -> None:
    """``fn(*pointers_at_b, e - b, *scalars)`` over chunks ``[b, e)`` of ``n`` float32
    elements (None pointers stay None), over the worker pool of kernels.c (``ember_split``)
    or, for a signature it lacks, Ember's intra-op threads."""
    by_rows(fn, n, POINTWISE_GRAIN, [(p, 4) for p in pointers], *scalars)


def by_rows(fn, rows: int, grain: int, pointers, *scalars) -> None:
    """``fn(*pointers_at_r0, r1 - r0, *scalars)`` over blocks ``[r0, r1)`` of ``rows`` rows
    (at least ``grain`` a block), over the worker pool of kernels.c (``ember_split``) or,
    for a signature it lacks, Ember's intra-op threads. ``pointers`` are ``(address, bytes
    per row)`` pairs: a None address stays None (NULL), 0 bytes passes the same address to
    every block (a row of weights)."""
    from .._parallel import native_threads, parallel_for

    threads = native_threads(mind_blas=False) if rows >= 2 * grain else 1
    if threads == 1:  # one block: no closure, no pool
        if rows > 0:
            fn(*[p for p, _ in pointers], rows, *scalars)
        return
    if _native_split(fn, rows, grain, pointers, scalars, threads):
        return

    def run(r0: int, r1: int) -> None:
        fn(*[None if p is None else p + r0 * step for p, step in pointers], r1 - r0, *scalars)

    parallel_for(0, rows, grain, run)


def by_range(fn, n: int, grain: int, *args) -> None:
    """``fn(*args, b, e)`` over chunks ``[b, e)`` of ``n`` items (at least ``grain`` a
    chunk; batch norm's channels), over the worker pool of kernels.c or, for a signature it
    lacks, Ember's intra-op threads."""
    from .._parallel import native_threads, parallel_for

    threads = native_threads(mind_blas=False) if n >= 2 * grain else 1
    if threads == 1:
        if n > 0:
            fn(*args, 0, n)
        return
    got = _split_signature(fn, True)
    if got is not None:
        k = got[1]
        if _native_split(fn, n, grain, [(a, 0) for a in args[:k]], args[k:], threads,
                         range_last=True):
            return
    parallel_for(0, n, grain, lambda b, e: fn(*args, b, e))
