"""Helpers shared by the test suites: ``from testutils import t64, randn64, ...``.

pytest.ini puts ``tests/`` on ``pythonpath``, so every test folder (tests/core, tests/nn,
tests/parity/vision, ...) imports this module the same way. Keep it small: a helper belongs
here once several test files need it.

Tensors
    ``t64(data)``             float64 tensor from array-like data
    ``randn64(*shape)``       standard-normal float64 tensor (a NumPy generator, a seed,
                              or ember's global generator)
    ``rand64(*shape)``        uniform float64 tensor, seeded
    ``to_numpy(x)``           ember/torch tensor (detached) or array-like -> ndarray
    ``assert_allclose(a, b)`` ``np.testing.assert_allclose`` on tensors or arrays

PyTorch as an oracle (torch is imported only when these are called)
    ``to_torch(x)``                            a torch tensor with a copy of ``x``'s values
    ``copy_state_to_torch(ember_m, torch_m)``  the same parameters and buffers in both
    ``assert_same_error(ember_fn, torch_fn)``  both raise the same exception and message
    ``outcome(fn, lib)``                       ``("ok", repr)`` or ``(error type, message)``
                                               of ``fn(lib)``, library names spelt alike
    ``same_outcome_in_both(fn)``               ``outcome`` equal with ember and torch

A local HTTP server
    ``local_http_server(handler_class)``  context manager: serves on 127.0.0.1, stops at once
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import ember

__all__ = ["LocalHTTPServer", "assert_allclose", "assert_same_error", "copy_state_to_torch",
           "local_http_server", "python_blocks", "rand64", "randn64", "t64", "to_numpy",
           "to_torch"]


# -- tensors ------------------------------------------------------------------------------------

def t64(data, requires_grad: bool = True) -> ember.Tensor:
    """A float64 tensor holding ``data`` (array-like), a leaf that requires grad by default."""
    return ember.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


def randn64(*shape: int, rng: np.random.Generator | int | None = None,
            requires_grad: bool = True, positive: bool = False) -> ember.Tensor:
    """A float64 tensor of standard-normal values.

    ``rng`` is where the values come from: a ``np.random.Generator`` (it advances: a test
    module's shared ``RNG``), an int (a fresh ``np.random.default_rng(rng)``), or ``None``
    (ember's global generator, ``ember.randn``). ``positive`` maps each value ``v`` to
    ``|v| + 0.5``: away from zero, for ops like log, sqrt and division.
    """
    if rng is None:  # drawn and kept on the default device, as ember.randn does
        tensor = ember.randn(*shape, dtype=ember.float64)
        if positive:
            tensor = tensor.abs() + 0.5
        return tensor.requires_grad_(requires_grad)
    values = np.random.default_rng(rng).standard_normal(shape)
    if positive:
        values = np.abs(values) + 0.5
    return t64(values, requires_grad)


def rand64(*shape: int, low: float = -2.0, high: float = 2.0,
           rng: np.random.Generator | int = 0, requires_grad: bool = True) -> ember.Tensor:
    """A float64 tensor of values uniform in ``[low, high)``, from ``np.random.default_rng(rng)``
    (seed 0 by default: the same call gives the same tensor)."""
    return t64(np.random.default_rng(rng).uniform(low, high, shape), requires_grad)


def on_one_and_two_threads(fn: Callable[[], object]) -> tuple:
    """``fn()`` with Ember's intra-op pool at one thread, then at two (restored after)."""
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = fn()
        ember.set_num_threads(2)
        return one, fn()
    finally:
        ember.set_num_threads(before)


def to_numpy(x) -> np.ndarray:
    """An ember or torch tensor (detached) or array-like as a NumPy array."""
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def stable_id(value) -> str:
    """A parametrize id from ``repr`` without object addresses (``<object object at 0x..>``):
    ids must be equal in every process that collects them (pytest-xdist workers)."""
    if callable(value) and hasattr(value, "__qualname__"):
        return value.__qualname__.replace(".<locals>", "")
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def assert_allclose(actual, desired, **kwargs) -> None:
    """``np.testing.assert_allclose`` for ember/torch tensors and array-likes alike."""
    np.testing.assert_allclose(to_numpy(actual), to_numpy(desired), **kwargs)


# -- PyTorch as an oracle -----------------------------------------------------------------------

def to_torch(x):
    """A torch tensor holding a copy of ``x``'s values (a tensor of either library, an array)."""
    import torch

    return torch.from_numpy(np.array(to_numpy(x)))


def copy_state_to_torch(ember_module, torch_module):
    """Load the ember module's state_dict into the torch module of the same structure; returns
    ``(ember_module, torch_module)``."""
    import torch

    torch_module.load_state_dict({k: torch.tensor(to_numpy(v))
                                  for k, v in ember_module.state_dict().items()})
    return ember_module, torch_module


def sparse_parts(x) -> tuple:
    """The index arrays and values of a tensor of either library (any sparse layout; a dense
    tensor's data), as NumPy arrays; COO adds its coalesced flag."""
    name = str(x.layout).split(".")[-1]
    if name == "sparse_coo":
        return (x._indices().numpy(), x._values().detach().numpy(), x.is_coalesced())
    if name in ("sparse_csr", "sparse_bsr"):
        return (x.crow_indices().numpy(), x.col_indices().numpy(),
                x.values().detach().numpy())
    if name in ("sparse_csc", "sparse_bsc"):
        return (x.ccol_indices().numpy(), x.row_indices().numpy(),
                x.values().detach().numpy())
    return (x.detach().numpy(),)


def assert_same_sparse(e, t, rtol: float = 0.0) -> None:
    """An ember sparse tensor (COO, CSR or CSC) equals a torch one: layout, size, dtype,
    coalesced flag, index arrays exactly, values exactly (``rtol=0``) or to ``rtol``."""
    import torch

    def values_match(a, b):
        a, b = a.detach().numpy(), b.detach().numpy()
        if rtol:
            np.testing.assert_allclose(a, b, rtol=rtol)
        else:
            np.testing.assert_array_equal(a, b)

    assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    if t.layout == torch.sparse_coo:
        assert e.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
        values_match(e._values(), t._values())
        return
    parts = (("crow_indices", "col_indices") if t.layout == torch.sparse_csr
             else ("ccol_indices", "row_indices"))
    for name in parts:
        np.testing.assert_array_equal(getattr(e, name)().numpy(), getattr(t, name)().numpy())
    values_match(e.values(), t.values())


def assert_same_error(ember_fn: Callable[[], object], torch_fn: Callable[[], object]) -> None:
    """``torch_fn()`` raises; ``ember_fn()`` raises the same exception type with its message."""
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        ember_fn()


def outcome(fn: Callable[[object], object], lib) -> tuple:
    """``("ok", repr(value))`` or ``(exception type name, message)`` of ``fn(lib)`` with its
    warnings silenced, "ember" spelt "torch": what a differential probe compares."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib)
        result = ("ok", repr(out))
    except Exception as e:  # the outcome is what is compared
        result = (type(e).__name__, str(e))
    return tuple(s.replace("ember", "torch") for s in result)


def same_outcome_in_both(fn: Callable[[object], object]) -> None:
    """``fn(ember)`` and ``fn(torch)`` end alike (:func:`outcome`); skipped without torch."""
    import ember

    torch = pytest.importorskip("torch")
    assert outcome(fn, ember) == outcome(fn, torch)


def assert_same_sparse_parts(e, t) -> None:
    """ember ``e`` equals torch ``t`` part by part (any sparse layout, batched or hybrid, or
    dense): layout, size, dtype, every part of :func:`sparse_parts` (shapes included; floats
    to 1e-6), ``_nnz()``, ``sparse_dim()``, ``dense_dim()`` (and COO's coalesced flag)."""
    assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    for a, b in zip(sparse_parts(e), sparse_parts(t), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)
    if str(t.layout) != "torch.strided":
        assert (e._nnz(), e.sparse_dim(), e.dense_dim()) == (t._nnz(), t.sparse_dim(),
                                                            t.dense_dim())


def same_sparse_in_both(fn: Callable[[object], object]) -> None:
    """``fn(ember)`` and ``fn(torch)`` give the same tensor (:func:`assert_same_sparse_parts`);
    skipped without torch."""
    import ember

    torch = pytest.importorskip("torch")
    assert_same_sparse_parts(fn(ember), fn(torch))


def same_error_in_both(fn: Callable[[object], object]) -> None:
    """``fn(ember)`` and ``fn(torch)`` raise the same error (:func:`assert_same_dispatch_error`);
    skipped without torch."""
    import ember

    torch = pytest.importorskip("torch")
    assert_same_dispatch_error(lambda: fn(ember), lambda: fn(torch))


def assert_same_dispatch_error(ember_fn: Callable[[], object],
                               torch_fn: Callable[[], object]) -> None:
    """Both raise the same exception type with the same message, read with the test device's
    backend name: PyTorch's dispatcher errors ("Could not run ... 'SparseCPU' backend") are
    compared by their first sentence, and on another device a kernel's dtype error names its
    kind ("abs_cuda" for "abs_cpu")."""
    import ember

    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(type(expected.value)) as got:
        ember_fn()
    want, have = str(expected.value), str(got.value)
    dev = ember.get_default_device().type
    if want.startswith("Could not run"):
        want = want.split(". ")[0].replace("CPU'", f"{dev.upper()}'")
        have = have.split(". ")[0]
    elif dev != "cpu":
        want = want.replace('_cpu"', '_cuda"')
    assert have == want


# -- a local HTTP server ------------------------------------------------------------------------

#: how often serve_forever looks for a shutdown request: the most that stopping waits for it
#: (http.server's default, 0.5 s, was paid by every test that used a server)
POLL_INTERVAL = 0.01


class LocalHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that knows its request threads and connections, so that
    :func:`local_http_server` can stop it without waiting and without leaving threads behind.

    ``url`` is ``http://127.0.0.1:PORT``. A handler that waits (to play a slow or silent
    server) should wait on ``server.stopping`` (``self.server.stopping.wait(seconds)``), which
    is set when the server stops.
    """

    def __init__(self, handler_class: Callable[..., BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler_class)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._request_threads: list[threading.Thread] = []
        self._open_connections: set[socket.socket] = set()

    def process_request(self, request, client_address) -> None:
        # a daemon never holds up the interpreter's exit; stop() joins it all the same
        thread = threading.Thread(target=self.process_request_thread,
                                  args=(request, client_address), daemon=True)
        with self._lock:
            self._request_threads = [t for t in self._request_threads if t.is_alive()]
            self._request_threads.append(thread)
            self._open_connections.add(request)
        thread.start()

    def shutdown_request(self, request) -> None:
        with self._lock:
            self._open_connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address) -> None:
        if not self.stopping.is_set():  # errors of connections cut by stop() are expected
            super().handle_error(request, client_address)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, cut open connections (idle keep-alive ones too), join every request
        thread, close the listening socket. Raises if a request thread outlives ``timeout``."""
        self.stopping.set()
        self.shutdown()  # returns within serve_forever's poll interval
        with self._lock:
            connections, threads = list(self._open_connections), list(self._request_threads)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.server_close()
        alive = [t.name for t in threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"request threads still running {timeout} s after the local "
                               f"HTTP server stopped: {alive}")


def onnx_check(proto) -> None:
    """The ONNX exports' test: the full checker, and ONNX's strict shape inference agreeing on
    the outputs' types (onnx is imported here: callers have importorskip'ed it)."""
    import onnx

    onnx.checker.check_model(proto, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True, data_prop=True)
    for ours, theirs in zip(proto.graph.output, inferred.graph.output):
        assert ours.type.tensor_type.elem_type == theirs.type.tensor_type.elem_type


def onnx_session(proto):
    """An onnxruntime CPU session of an exported model."""
    import onnxruntime as ort

    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def onnx_run(proto, *inputs) -> list:
    """An exported model run in onnxruntime on Ember tensors, inputs by position."""
    sess = onnx_session(proto)
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: t.numpy() for n, t in zip(names, inputs)})


def onnx_compare(fn, args, *, opset: int = 13, exact: bool = False, **tol) -> tuple:
    """``fn`` exported at ``opset``, checked (``onnx_check``) and run in onnxruntime on
    ``args``: its outputs equal eager's in number, dtype and shape, and in value (exactly for
    non-float outputs or with ``exact``, else ``assert_allclose(**tol)`` with NaNs equal).
    Returns ``(proto, outputs)``."""
    from ember.onnx import export

    proto = export(fn, args, opset_version=opset)
    onnx_check(proto)
    got = onnx_run(proto, *args)
    with ember.no_grad():
        want = fn(*args)
    want = [t.numpy() for t in (want if isinstance(want, (tuple, list)) else (want,))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if exact or not np.issubdtype(w.dtype, np.floating):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, equal_nan=True, **tol)
    return proto, got


@contextlib.contextmanager
def local_http_server(
    handler_class: Callable[..., BaseHTTPRequestHandler],
) -> Iterator[LocalHTTPServer]:
    """Serve ``handler_class`` on 127.0.0.1 (a free port) from a background thread.

    >>> with local_http_server(MyHandler) as server:   # doctest: +SKIP
    ...     requests.get(server.url + "/path")

    On exit the server stops at once and reliably: the serving thread and every request
    thread are joined, open connections and the listening socket are closed.
    """
    server = LocalHTTPServer(handler_class)
    thread = threading.Thread(target=server.serve_forever, args=(POLL_INTERVAL,),
                              name=f"local-http-{server.server_address[1]}", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            thread.join()


TUTORIALS_DIR = Path(__file__).resolve().parents[1] / "docs" / "tutorials"


def python_blocks(page: str) -> list[str]:
    """The ```python blocks of ``docs/tutorials/<page>``, in order: the tutorial's program."""
    return re.findall(r"```python\n(.*?)```", (TUTORIALS_DIR / page).read_text(), flags=re.S)
def assert_page_is_script(page: str, script: str) -> None:
    """A tutorial page's python blocks are ``examples/<script>`` (its module docstring aside,
    blank lines ignored), the index links the page, and its first block imports ember as
    torch."""
    import ast

    def code_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip()]

    source = (TUTORIALS_DIR.parents[1] / "examples" / script).read_text()
    docstring_end = ast.parse(source).body[0].end_lineno  # the module docstring
    assert code_lines("\n".join(source.splitlines()[docstring_end:])) == \
        code_lines("\n".join(python_blocks(page)))
    assert f"({page})" in (TUTORIALS_DIR / "README.md").read_text()
    assert "import ember as torch" in python_blocks(page)[0]




def upstream(repo: str) -> Path:
    """The pinned checkout of a public repository whose programs a test runs unedited
    (tools/upstream_sources.py); the test skips where there is no local copy of it, and
    fails instead under ``EMBER_UPSTREAM_REQUIRED=1``."""
    from upstream_sources import checkout, missing_reason, required

    path = checkout(repo)
    if path is None:
        (pytest.fail if required() else pytest.skip)(missing_reason(repo))
    return path


def upstream_copy(repo: str, into: Path) -> Path:
    """A writable copy of ``upstream(repo)`` (its programs write outputs beside themselves) as
    ``into/<name>``, ``name`` the repository's."""
    import shutil

    work = into / repo.split("/")[1]
    shutil.copytree(upstream(repo), work)
    return work


def torchrun(n: int, program, *args: str) -> list:
    """The command that runs ``program`` with ``args`` on ``n`` ranks under PyTorch's own
    launcher (``torchrun --standalone``), each rank ending without the interpreter's teardown
    (``exit_after_program.py``: PyTorch's gloo ranks now and then abort in it)."""
    import sys

    return [sys.executable, "-W", "ignore", "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(n), str(Path(__file__).parent / "exit_after_program.py"),
            str(program), *args]


def run_in_session(cmd: list, timeout: float, cwd=None, env: dict | None = None
                   ) -> tuple[int, str, str]:
    """Run ``cmd`` in a session of its own and return ``(returncode, stdout, stderr)``; the
    whole session (a launcher's ranks included) is killed when it ends, also on a timeout."""
    import os
    import signal
    import subprocess

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return proc.returncode, out, err
