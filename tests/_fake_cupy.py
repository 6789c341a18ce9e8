"""A fake CuPy for testing CUDA kernel code without a GPU (tests/core/test_cuda_kernels.py,
tests/core/test_compile_cuda_fusion.py).

``FakeCupy`` stands in for the ``cupy`` module (``monkeypatch.setitem(sys.modules, "cupy",
FakeCupy(...))``): its array functions are NumPy's, and its kernel classes run the generated
kernels two ways: with NumPy (an ``ElementwiseKernel`` body executed line by line, a NumPy
model of each row kernel), or, given a ``HostCompiler``, as their CUDA C compiled for the host
by g++ (an elementwise body in a loop over the elements; a row kernel's block as threads
meeting at barriers, warp shuffles through memory). Fixtures: ``fake_cupy`` (both ways) and
``host_compiler`` (skips without a C++20 g++); import them into a test module to use them.
"""

from __future__ import annotations

import ctypes
import functools
import math
import re
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

from ember.cuda import _kernels as K

__all__ = ["FUNCTIONS", "namespace", "run", "ev", "softmax_rows", "softmax_grad_rows",
           "layer_norm_rows", "layer_norm_grad_rows", "FakeElementwiseKernel",
           "FakeReductionKernel", "HostCompiler", "HostElementwiseKernel", "FakeRawKernel",
           "FakeCupy", "host_compiler", "fake_cupy"]

_NP_TYPES = {"float": np.float32, "double": np.float64}


def _erf(x):
    x = np.asarray(x)
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


#: the functions of the formula language, in NumPy
FUNCTIONS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "erf": _erf,
             "fabs": np.fabs, "pow": np.power, "pick": np.where, "vmax": np.maximum}


def namespace(acc_type, **values):
    """The names a formula sees, computing in ``acc_type`` (np.float32 or np.float64)."""
    env = dict(FUNCTIONS, A=acc_type)
    env.update({k: acc_type(v) for k, v in K.CONSTANTS.items()})
    env.update(values)
    return env


def run(statements, env):
    """Run ``(name, expression)`` statements in ``env``, as the generated kernel does."""
    for name, expr in statements:
        env[name] = eval(expr, env)
    return env


def ev(expr, env):
    return eval(expr, env)


# -- the NumPy models of the row kernels (also the fake CuPy's RawKernels) --------------------

def _rows(a, n, inner):
    """A C-contiguous array's flat data seen as (outer, n, inner) rows."""
    return a.reshape(-1, n, inner)


def softmax_rows(x, n, inner, log, acc):
    xs = _rows(x, n, inner).astype(acc)
    env = namespace(acc)
    m = xs[:, 0]
    for k in range(n):  # the running maximum, as each thread keeps it
        m = ev(K.SOFTMAX["max"], dict(env, m=m, x=xs[:, k]))
    env.update(m=m[:, None], x=xs)
    env["s"] = ev(K.SOFTMAX["term"], env).sum(axis=1, keepdims=True)
    return ev(K.SOFTMAX["log_forward" if log else "forward"], env)


def softmax_grad_rows(y, g, n, inner, log, acc):
    env = namespace(acc, y=_rows(y, n, inner).astype(acc), g=_rows(g, n, inner).astype(acc))
    prefix = "log_" if log else ""
    env["s"] = ev(K.SOFTMAX[prefix + "grad_term"], env).sum(axis=1, keepdims=True)
    return ev(K.SOFTMAX[prefix + "grad"], env)


def layer_norm_rows(x, w, b, n, eps, acc):
    F = K.LAYER_NORM
    env = namespace(acc, x=x.reshape(-1, n).astype(acc), n=n, eps=acc(eps))
    env["s"] = env["x"].sum(axis=1, keepdims=True)
    env["mean"] = ev(F["mean"], env)
    env["q"] = (ev(F["centered"], env) ** 2).sum(axis=1, keepdims=True)
    env["rstd"] = ev(F["rstd"], env)
    y = ev(F["normalized"], env)
    if w is not None:
        y = ev(F["scaled"], dict(env, y=y, w=w.astype(acc)))
    if b is not None:
        y = ev(F["shifted"], dict(env, y=y, b=b.astype(acc)))
    return y, env["mean"][:, 0], env["rstd"][:, 0]


def layer_norm_grad_rows(g, x, mean, rstd, w, n, acc):
    F = K.LAYER_NORM
    env = namespace(acc, g=g.reshape(-1, n).astype(acc), x=x.reshape(-1, n).astype(acc), n=n,
                    mean=mean[:, None].astype(acc), rstd=rstd[:, None].astype(acc))
    env["xhat"] = ev(F["normalized"], env)
    env["gh"] = env["g"] if w is None else ev(F["grad_out"], dict(env, w=w.astype(acc)))
    env["s1"] = env["gh"].sum(axis=1, keepdims=True)
    env["s2"] = ev(F["grad_term"], env).sum(axis=1, keepdims=True)
    return ev(F["grad"], env)


# -- a fake CuPy that runs the generated kernels with NumPy -------------------------------------

class FakeElementwiseKernel:
    """Executes a body made by ``elementwise_body``: ``typedef <ctype> A;``, then lines
    ``[const ][A ]name = expression;``; outputs are written back to the output arrays.
    ``options`` (NVRTC's) are kept, for the tests to read."""

    def __init__(self, in_params, out_params, operation, name, preamble="", options=()):
        self.ins = [p.split() for p in in_params.split(",")]
        self.outs = [p.split() for p in out_params.split(",")]
        self.body, self.name, self.preamble = operation, name, preamble
        self.options = tuple(options)
        assert re.fullmatch(r"\w+", name) and "pick" in preamble and "vmax" in preamble

    def __call__(self, *args):
        ins, outs = args[:len(self.ins)], list(args[len(self.ins):])
        arrays = [np.asarray(a) for (t, _), a in zip(self.ins + self.outs, args) if t == "T"]
        T = arrays[0].dtype.type
        assert all(a.dtype == T for a in arrays), "every T parameter has one dtype"
        env = dict(FUNCTIONS, T=T)
        for (t, name), a in zip(self.ins, ins):
            env[name] = np.asarray(a) if t == "T" else np.dtype(t).type(a)
        if not outs:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
            outs = [np.empty(shape, T) for _ in self.outs]
        for (_, name), a in zip(self.outs, outs):
            env[name] = a
        for line in self.body.splitlines():
            if line.startswith("typedef "):
                env["A"] = _NP_TYPES[line.split()[1]]
                continue
            m = re.fullmatch(r"(?:const )?(?:A )?(\w+) = (.+);", line)
            env[m[1]] = eval(m[2], env)
        for (_, name), a in zip(self.outs, outs):
            a[...] = env[name]
        return outs[0] if len(outs) == 1 else tuple(outs)


class FakeReductionKernel:
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name, reduce_type=None):
        assert (reduce_expr, identity) == ("a + b", "0")
        self.ins = [p.split()[1] for p in in_params.split(",")]
        self.out = out_params.split()[1]
        self.map_expr, self.post = map_expr, post_map_expr
        self.acc = _NP_TYPES[reduce_type]

    def __call__(self, *args, axis=None):
        env = dict(FUNCTIONS, **dict(zip(self.ins, args)))
        a = ev(self.map_expr, env).astype(self.acc).sum(axis=axis)
        assert self.post == f"{self.out} = a"
        return a.astype(args[0].dtype)


def _raw_softmax_forward(x, y, n, inner, log, *, acc):
    y[...] = softmax_rows(x, int(n), int(inner), bool(log), acc).reshape(y.shape)


def _raw_softmax_backward(y, g, gx, n, inner, log, *, acc):
    gx[...] = softmax_grad_rows(y, g, int(n), int(inner), bool(log), acc).reshape(gx.shape)


def _raw_layer_norm_forward(x, w, b, y, mean, rstd, n, eps, has_w, has_b, *, acc):
    assert isinstance(eps, acc)
    r = layer_norm_rows(x, w if has_w else None, b if has_b else None, int(n), eps, acc)
    y[...], mean[...], rstd[...] = r[0].reshape(y.shape), r[1], r[2]


def _raw_layer_norm_backward(g, x, mean, rstd, w, gx, n, has_w, *, acc):
    gx[...] = layer_norm_grad_rows(g, x, mean, rstd, w if has_w else None, int(n),
                                   acc).reshape(gx.shape)


_RAW = {"ember_softmax_forward": _raw_softmax_forward,
        "ember_softmax_backward": _raw_softmax_backward,
        "ember_layer_norm_forward": _raw_layer_norm_forward,
        "ember_layer_norm_backward": _raw_layer_norm_backward}


# -- the same kernels' CUDA C, compiled for the host --------------------------------------------

#: CUDA's qualifiers and math for host C++
HOST_BASICS = r"""
#include <cmath>
using std::erf; using std::exp; using std::log; using std::sqrt; using std::tanh;
using std::fabs; using std::pow;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
"""

#: a block on the host: one thread per CUDA thread, meeting at barriers for __syncthreads and
#: trading values through memory for the warp shuffles; blocks run one after another
HOST_THREADS = HOST_BASICS + r"""
#include <barrier>
#include <memory>
#include <thread>
#include <vector>
struct Dim { unsigned x = 0, y = 1, z = 1; };
static thread_local Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;
static std::barrier<>* block_barrier;
static std::barrier<>* warp_barriers[32];
static double warp_lanes[32][32];
static void __syncthreads() { block_barrier->arrive_and_wait(); }
template <class T> static T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    const unsigned w = threadIdx.x >> 5, l = threadIdx.x & 31;
    warp_lanes[w][l] = double(v);
    warp_barriers[w]->arrive_and_wait();
    const T r = T(warp_lanes[w][l ^ lane_mask]);
    warp_barriers[w]->arrive_and_wait();
    return r;
}
#define __shared__ static
"""

HOST_LAUNCH = r"""
template <class... P, class... Args>
static void launch(unsigned grid, unsigned block, void (*kernel)(P...), Args... args) {
    blockDim.x = block;
    gridDim.x = grid;
    std::barrier<> bb(block);
    block_barrier = &bb;
    std::vector<std::unique_ptr<std::barrier<>>> wb;
    for (unsigned w = 0; w < block / 32; ++w) {
        wb.emplace_back(new std::barrier<>(32));
        warp_barriers[w] = wb.back().get();
    }
    for (unsigned b = 0; b < grid; ++b) {
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([=] { threadIdx.x = t; blockIdx.x = b; kernel(args...); });
        for (auto& th : threads) th.join();
    }
}
"""

_HOST_TYPES = {np.float16: "_Float16", np.float32: "float", np.float64: "double"}
_C_ARGS = {"long long": ctypes.c_longlong, "int": ctypes.c_int, "float": ctypes.c_float,
           "double": ctypes.c_double, "float32": ctypes.c_float, "float64": ctypes.c_double}


class HostCompiler:
    """g++ (C++20) building each source once into a shared library in ``folder``."""

    def __init__(self, folder):
        self.folder, self.libs = folder, {}

    def __call__(self, source: str) -> ctypes.CDLL:
        lib = self.libs.get(source)
        if lib is None:
            base = self.folder / f"kernels{len(self.libs)}"
            base.with_suffix(".cpp").write_text(source)
            done = subprocess.run(["g++", "-std=c++20", "-O0", "-shared", "-fPIC", "-pthread",
                                   "-o", str(base.with_suffix(".so")),
                                   str(base.with_suffix(".cpp"))], capture_output=True, text=True)
            assert done.returncode == 0, f"the kernel source does not compile:\n{done.stderr}"
            lib = self.libs[source] = ctypes.CDLL(str(base.with_suffix(".so")))
        return lib


@pytest.fixture(scope="module")
def host_compiler(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cuda_on_host")
    probe = folder / "probe.cpp"
    probe.write_text("#include <barrier>\nint main() { std::barrier<> b(1); _Float16 h = 1; }\n")
    if shutil.which("g++") is None or subprocess.run(
            ["g++", "-std=c++20", "-fsyntax-only", str(probe)], capture_output=True).returncode:
        pytest.skip("needs g++ with C++20 and _Float16 to run the CUDA source on the host")
    return HostCompiler(folder)


class HostElementwiseKernel(FakeElementwiseKernel):
    """The generated body in a host C++ loop over the elements, as CuPy places it in its
    kernel: inputs as ``const T x_``, outputs as references ``T& y_``."""

    def __init__(self, compiler, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compiler = compiler

    def _function(self, T):
        params, loads = ["long long size"], []
        for t, name in self.ins:
            if t == "T":
                params.append(f"const T* {name}p")
                loads.append(f"const T {name} = {name}p[i];")
            else:
                params.append(f"{'float' if t == 'float32' else 'double'} {name}")
        for _, name in self.outs:
            params.append(f"T* {name}p")
            loads.append(f"T& {name} = {name}p[i];")
        source = (HOST_BASICS + self.preamble + f"typedef {_HOST_TYPES[T]} T;\n"
                  f'extern "C" void run({", ".join(params)}) {{\n'
                  "for (long long i = 0; i < size; ++i) {\n" + "\n".join(loads) + "\n"
                  + self.body + "\n}\n}\n")
        fn = self.compiler(source).run
        fn.argtypes = [ctypes.c_longlong] + [
            ctypes.c_void_p if t == "T" else _C_ARGS[t] for t, _ in self.ins + self.outs]
        return fn

    def __call__(self, *args):
        ins, outs = args[:len(self.ins)], list(args[len(self.ins):])
        arrays = [np.asarray(a) for (t, _), a in zip(self.ins + self.outs, args) if t == "T"]
        T = arrays[0].dtype.type
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        call, keep = [math.prod(shape)], []
        for (t, _), a in zip(self.ins, ins):
            if t == "T":
                keep.append(np.array(np.broadcast_to(a, shape), order="C"))
                call.append(keep[-1].ctypes.data)
            else:
                call.append(a)
        outs = outs or [np.empty(shape, T) for _ in self.outs]
        work = [o if o.flags.c_contiguous else np.ascontiguousarray(o) for o in outs]
        self._function(T)(*call, *(w.ctypes.data for w in work))
        for o, w in zip(outs, work):
            if o is not w:
                o[...] = w
        return outs[0] if len(outs) == 1 else tuple(outs)


class FakeRawKernel:
    """Checks the launch (one block per row, a warp multiple of threads, typed scalars,
    C-contiguous arrays of the compute type), then runs the row kernel's NumPy model or,
    given a ``compiler``, the kernel's CUDA source compiled for the host."""

    def __init__(self, code, name, compiler=None):
        assert f'extern "C" __global__ void {name}(' in code and "$" not in code
        ctype = re.search(r"typedef (\w+) A;", code)[1]
        self.acc = _NP_TYPES[ctype]
        self.run = functools.partial(_RAW[name], acc=self.acc)
        if compiler is not None:
            self.run = self._host_function(compiler, code, name, ctype)

    @staticmethod
    def _host_function(compiler, code, name, ctype):
        launchers, types_of = [], {}
        for kernel, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', code):
            params = [" ".join(p.split()) for p in params.split(",")]
            names = [p.split()[-1] for p in params]
            types_of[kernel] = [p.rsplit(None, 1)[0] for p in params]
            launchers.append(f'extern "C" void run_{kernel}(unsigned grid, unsigned block, '
                             f'{", ".join(params)}) {{ launch(grid, block, {kernel}, '
                             f'{", ".join(names)}); }}')
        fn = getattr(compiler(HOST_THREADS + code + HOST_LAUNCH + "\n".join(launchers)),
                     f"run_{name}")
        fn.argtypes = [ctypes.c_uint, ctypes.c_uint] + [
            ctypes.c_void_p if "*" in t else _C_ARGS[ctype if t == "A" else t]
            for t in types_of[name]]

        def run(*args, grid, block):
            fn(grid, block, *(a.ctypes.data if isinstance(a, np.ndarray) else a.item()
                              for a in args))
        return run

    def __call__(self, grid, block, args, shared_mem=0):
        (threads,) = block
        assert threads % 32 == 0 and threads <= 1024 and len(grid) == 1
        for a in args:
            assert isinstance(a, np.generic | np.ndarray), "RawKernel takes typed scalars"
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous and a.dtype == self.acc
        n = next(a for a in args if isinstance(a, np.int64))
        rows = max(a.size for a in args if isinstance(a, np.ndarray)) // int(n)
        assert grid == (rows,)
        if isinstance(self.run, functools.partial):
            self.run(*args)
        else:
            self.run(*args, grid=grid[0], block=threads)


def elementwise_cuda_source(kernels, prefix: str) -> str:
    """The bodies of ``kernels`` (FakeElementwiseKernel records) as one CUDA translation unit,
    each wrapped as CuPy wraps an ElementwiseKernel (a grid-stride loop, inputs as ``const T``,
    outputs as ``T&``), float kernels also as ``__half``: what nvcc compiles to check them."""
    from ember.cuda import _kernels as K

    parts = ["#include <cuda_fp16.h>", K._PREAMBLE]
    for number, kernel in enumerate(kernels):
        for tname in (["float", "__half"] if kernel.name.endswith("_float") else ["double"]):
            params = [f"const {tname}* {n}p" if t == "T" else
                      f"{'float' if t == 'float32' else 'double'} {n}" for t, n in kernel.ins]
            params += [f"{tname}* {n}p" for _, n in kernel.outs]
            loads = [f"const T {n} = {n}p[i];" for t, n in kernel.ins if t == "T"]
            loads += [f"T& {n} = {n}p[i];" for _, n in kernel.outs]
            parts.append(
                f'extern "C" __global__ void {prefix}{number}_{tname[-4:]}(long long size, '
                f'{", ".join(params)}) {{\ntypedef {tname} T;\n'
                "for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < size; "
                "i += gridDim.x * blockDim.x) {\n" + "\n".join(loads) + "\n" + kernel.body
                + "\n}\n}")
    return "\n".join(parts)


class FakeCupy(types.ModuleType):
    """CuPy's kernel classes run with NumPy or, given a ``compiler``, compiled for the host;
    CuPy's array functions are NumPy's."""

    def __init__(self, compiler=None):
        super().__init__("cupy")
        self.built = []
        self.host = host = compiler is not None

        def elementwise(*args, **kwargs):
            self.built.append(args[3])
            if host:
                return HostElementwiseKernel(compiler, *args, **kwargs)
            return FakeElementwiseKernel(*args, **kwargs)

        def reduction(*args, **kwargs):
            self.built.append(args[6])
            return FakeReductionKernel(*args, **kwargs)

        def raw(code, name):
            self.built.append(name)
            return FakeRawKernel(code, name, compiler)

        self.ElementwiseKernel, self.ReductionKernel, self.RawKernel = elementwise, reduction, raw

    def __getattr__(self, name):  # the array functions: NumPy's
        return getattr(np, name)


@pytest.fixture(params=["numpy", "host"])
def fake_cupy(request, monkeypatch):
    """A fake CuPy whose kernels run as NumPy models, or as their CUDA C compiled for the
    host (``host``: skipped without g++)."""
    compiler = request.getfixturevalue("host_compiler") if request.param == "host" else None
    fake = FakeCupy(compiler)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(K, "_CACHE", {})
    return fake

