"""``ember.compile`` against Ember eager, PyTorch eager and ``torch.compile`` (issue 14 item 7).

Five workloads (small-MLP inference, the MLP, LeNet-5, TransformerEncoderLayer and LSTM
training steps), each as four zero-argument callables over the same weights and data: Ember
compiled, Ember eager, PyTorch eager and ``torch.compile`` (inductor; its column stays empty,
with the reason printed, where it does not build). Before timing, the first three results of
every callable (outputs for inference, losses for the steps, each from the same starting
weights) are checked to agree to 1e-5.

Timing is paired and interleaved, as in paired_text.py: per round, one sample of each callable
(``number`` calls, sized to ~20 ms), their order rotating, a short pause between libraries;
printed per workload are the medians and the median (quartiles) of the per-round ratios
compiled/eager, compiled/PyTorch eager and compiled/torch.compile, which the background load
of a shared machine disturbs far less than separate best-of runs. ``THREADS`` (default 1) sets
torch.set_num_threads, ember.set_num_threads and threadpoolctl's BLAS limit; ``PAIRS``
(default 20) the rounds; ``BENCH_ONLY=lstm`` keeps the workloads whose name contains it;
``TORCH_COMPILE=0`` leaves torch.compile out (it spends minutes compiling on two cores).
``BENCH_DEVICE=cuda`` runs every column on the GPU (Ember's compiled chains as CuPy
``ElementwiseKernel``s); each sample of ``number`` calls then ends with a synchronize of both
libraries, PyTorch's TF32 convolutions are switched off, and a column that disagrees with eager
is reported in the notes rather than stopping the run (one GPU session is short).

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_compile.py``, or
``python benchmarks/run.py bench_compile``.
"""

from __future__ import annotations

import copy
import datetime
import gc
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_nn import _copy_weights, _lenet, _mlp

COLUMNS = ("compiled", "eager", "torch", "torch.compile")
TOL = 1e-5
DEVICE = os.environ.get("BENCH_DEVICE", "cpu")


def _sync(torch) -> None:
    """Wait for both libraries' queued GPU work (nothing on the CPU)."""
    if DEVICE == "cpu":
        return
    import ember

    ember.cuda.synchronize()
    if torch is not None:
        torch.cuda.synchronize()


class Workload:
    """One workload: a name and its callables by column (None where a column is absent)."""

    def __init__(self, name: str, fns: dict, notes: list[str]):
        self.name, self.fns, self.notes = name, fns, notes


def _value(out) -> np.ndarray:
    """A callable's result as a float64 NumPy array (an Ember or PyTorch tensor)."""
    out = out.detach() if hasattr(out, "detach") else out
    if hasattr(out, "cpu"):
        out = out.cpu()
    return np.asarray(out.numpy(), dtype=np.float64)


def _torch_compile(torch, fn, notes: list[str]):
    """``torch.compile(fn)``, or None with the reason in ``notes`` when inductor fails."""
    if torch is None:
        return None
    if os.environ.get("TORCH_COMPILE", "1") == "0":
        notes.append("torch.compile: left out (TORCH_COMPILE=0)")
        return None
    try:
        return torch.compile(fn)
    except Exception as exc:  # reported, the column left empty
        notes.append(f"torch.compile: {type(exc).__name__}: {exc}")
        return None


def _check(name: str, fns: dict, notes: list[str], calls: int = 3) -> dict:
    """Call every callable ``calls`` times (from the same starting state: the steps' losses,
    the inference outputs); all must agree with Ember eager's to ``TOL``. A torch.compile
    that fails here is dropped with its reason (the others raise)."""
    from ember._compile import explain

    results: dict = {}
    for col, fn in fns.items():
        if fn is None:
            continue
        try:
            import ember._dynamo

            warn_before = ember._dynamo.config.warn_on_graph_break
            ember._dynamo.config.warn_on_graph_break = True  # graph breaks are silent otherwise
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    results[col] = [_value(fn()) for _ in range(calls)]
            finally:
                ember._dynamo.config.warn_on_graph_break = warn_before
            for w in caught:
                if col == "compiled" or "graph break" in str(w.message):
                    notes.append(f"{col}: warning: {w.message}")
        except Exception as exc:
            if col != "torch.compile":
                raise
            notes.append(f"torch.compile: failed on the first calls ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})")
            traceback.print_exc()
            fns[col] = None
    want = results["eager"]
    agree = True
    for col, got in results.items():
        for i, (g, w) in enumerate(zip(got, want)):
            if not np.allclose(g, w, rtol=TOL, atol=TOL):
                msg = (f"{name}: {col} call {i + 1} differs from Ember eager by "
                       f"{np.abs(g - w).max():.3g} (tolerance {TOL})")
                if DEVICE == "cpu":
                    raise AssertionError(msg)
                notes.append(f"DIFFERS: {msg}")
                agree = False
    compiled = getattr(fns["compiled"], "compiled", None)
    if compiled is not None:
        for entry in explain(compiled)["entries"]:
            if entry["eager"]:
                notes.append(f"compiled: an entry runs eagerly ({entry['reason']})")
            if entry["fused_chains"]:
                notes.append(f"compiled: {len(entry['fused_chains'])} elementwise chain(s) "
                             "run as one kernel each: "
                             + "; ".join(" -> ".join(c) for c in entry["fused_chains"]))
            if entry["fallback_ops"] or entry["grad_fallback_ops"]:
                notes.append(f"compiled: fallback ops {entry['fallback_ops']}, grad "
                             f"fallbacks {entry['grad_fallback_ops']}")
    loss = float(want[0].ravel()[0]) if want[0].size == 1 else None
    if agree and loss is not None:
        notes.append(f"first loss {loss:.6f}; calls 1-{calls} agree to {TOL:g} across columns")
    elif agree:
        notes.append(f"outputs of calls 1-{calls} agree to {TOL:g} across columns")
    return results


def _step_columns(torch, build, make_opt, loss_fn, x_np, y_np, notes,
                  forward_only: bool = False) -> dict:
    """The four callables of one training step: the same ``step(x, y)`` (zero_grad, loss,
    backward, optimizer step, return the loss) for each, each with its own copy of the model
    (same starting weights) and optimizer. ``forward_only``: the compiled columns compile the
    model (``model = compile(model)``: the forward, with the backward and the optimizer step
    run eagerly around it) instead of the whole step."""
    import ember

    def make_step(lib, model):
        opt = make_opt(lib, model)
        crit = loss_fn(lib)

        def step(x, y):
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    if torch is not None:
        torch.manual_seed(0)
        t_model = build(torch)
    ember.manual_seed(0)
    e_models = [build(ember), build(ember)]
    if torch is not None:
        for m in e_models:
            _copy_weights(t_model, m)
        t_model.to(DEVICE)
    else:
        e_models[1].load_state_dict(e_models[0].state_dict())
    for m in e_models:
        m.to(DEVICE)
    ex, ey = ember.tensor(x_np, device=DEVICE), ember.tensor(y_np, device=DEVICE)
    if forward_only:
        c_model = ember.compile(e_models[0])  # an nn.Module: parameters() are the model's
        compiled = make_step(ember, c_model)
        compiled.compiled = c_model
    else:
        compiled = ember.compile(make_step(ember, e_models[0]))
    eager = make_step(ember, e_models[1])
    fns = {"compiled": lambda: compiled(ex, ey), "eager": lambda: eager(ex, ey),
           "torch": None, "torch.compile": None}
    fns["compiled"].compiled = getattr(compiled, "compiled", compiled)
    if torch is not None:
        tx, ty = torch.tensor(x_np, device=DEVICE), torch.tensor(y_np, device=DEVICE)
        tc_model = copy.deepcopy(t_model)
        t_step = make_step(torch, t_model)
        fns["torch"] = lambda: t_step(tx, ty)
        if forward_only:
            tc_fwd = _torch_compile(torch, tc_model, notes)
            tc_step = None if tc_fwd is None else make_step(torch, tc_fwd)
        else:
            tc_step = _torch_compile(torch, make_step(torch, tc_model), notes)
        if tc_step is not None:
            fns["torch.compile"] = lambda: tc_step(tx, ty)
    return fns


def _sgd(lib, m):
    return lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)


def _adam(lib, m):
    return lib.optim.Adam(m.parameters(), lr=1e-3)


def _cross_entropy(lib):
    return lib.nn.CrossEntropyLoss()


def _mse(lib):
    return lib.nn.MSELoss()


def _small_mlp_inference(torch, rng) -> Workload:
    import ember

    notes: list[str] = []

    def make(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).eval()

    x_np = rng.standard_normal((8, 32)).astype(np.float32)
    e_model, ex = make(ember), ember.tensor(x_np, device=DEVICE)
    if torch is not None:
        t_model, tx = make(torch), torch.tensor(x_np, device=DEVICE)
        _copy_weights(t_model, e_model)
        t_model.to(DEVICE)
    e_model.to(DEVICE)
    cm = ember.compile(e_model)
    fns: dict = {"torch": None, "torch.compile": None}

    def compiled():
        with ember.no_grad():
            return cm(ex)

    def eager():
        with ember.no_grad():
            return e_model(ex)

    compiled.compiled = cm
    fns["compiled"], fns["eager"] = compiled, eager
    if torch is not None:
        tcm = _torch_compile(torch, copy.deepcopy(t_model), notes)

        def t_eager():
            with torch.no_grad():
                return t_model(tx)

        fns["torch"] = t_eager
        if tcm is not None:
            def t_compiled():
                with torch.no_grad():
                    return tcm(tx)

            fns["torch.compile"] = t_compiled
    return Workload("small MLP 32-64-10 inference (b8, eval, no_grad)", fns, notes)


def _mlp_step(torch, rng) -> Workload:
    notes: list[str] = []
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    fns = _step_columns(torch, _mlp, _sgd, _cross_entropy, x, y, notes)
    return Workload("MLP 784-512-256-10 step (b128, SGD momentum, CE)", fns, notes)


def _lenet_step(torch, rng) -> Workload:
    notes: list[str] = []
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    fns = _step_columns(torch, _lenet, _sgd, _cross_entropy, x, y, notes)
    return Workload("LeNet-5 step (b64, 1x28x28, SGD momentum, CE)", fns, notes)


def _transformer_step(torch, rng) -> Workload:
    notes = ["dropout 0 (a dropout mask is drawn by each library's own generator, so the "
             "columns' losses could not be checked against each other with 0.1)"]

    def build(lib):
        return lib.nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0,
                                              batch_first=True)

    x = rng.standard_normal((16, 32, 128)).astype(np.float32)
    y = rng.standard_normal((16, 32, 128)).astype(np.float32)
    fns = _step_columns(torch, build, _adam, _mse, x, y, notes)
    return Workload("TransformerEncoderLayer step (d128, 4 heads, ff256, seq32, b16, Adam, "
                    "MSE)", fns, notes)


def _lstm_step(torch, rng) -> Workload:
    notes: list[str] = []

    def build(lib):
        nn = lib.nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(64, 128, num_layers=2, batch_first=True)
                self.head = nn.Linear(128, 10)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[:, -1])

        return Model()

    x = rng.standard_normal((16, 32, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    fns = _step_columns(torch, build, _adam, _cross_entropy, x, y, notes)
    return Workload("LSTM 2x128 step (in64, seq32, b16, head on last step, Adam, CE)", fns,
                    notes)


def _gated(lib):
    """A small gated MLP whose step is mostly elementwise ops (GELU, sigmoid gate, leaky
    ``where``, clamp, SiLU): what compile's fused elementwise chains are for."""
    nn = lib.nn
    F = nn.functional

    class Gated(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.g, self.o = nn.Linear(64, 128), nn.Linear(64, 128), nn.Linear(128, 10)

        def forward(self, x):
            h = F.gelu(self.a(x), approximate="tanh") * self.g(x).sigmoid()
            h = lib.where(h > 0, h, 0.1 * h).clamp(-3.0, 3.0)
            return self.o(F.silu(h))

    return Gated()


def _gated_step(torch, rng) -> Workload:
    notes: list[str] = []
    x = rng.standard_normal((16, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    fns = _step_columns(torch, _gated, _sgd, _cross_entropy, x, y, notes)
    return Workload("gated MLP 64-128-10 step (GELU, sigmoid gate, where, clamp, SiLU; b16, "
                    "SGD momentum, CE)", fns, notes)


def _mlp_compiled_forward_step(torch, rng) -> Workload:
    notes: list[str] = ["compiled column: model = ember.compile(model), the loss, backward and "
                        "optimizer step eager around it (torch.compile column likewise)"]
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    fns = _step_columns(torch, _mlp, _sgd, _cross_entropy, x, y, notes, forward_only=True)
    return Workload("MLP 784-512-256-10 step, compiled forward only (b128, SGD momentum, CE)",
                    fns, notes)


def _gated_compiled_forward_step(torch, rng) -> Workload:
    notes: list[str] = ["compiled column: model = ember.compile(model), backward and step "
                        "eager around it"]
    x = rng.standard_normal((16, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    fns = _step_columns(torch, _gated, _sgd, _cross_entropy, x, y, notes, forward_only=True)
    return Workload("gated MLP 64-128-10 step, compiled forward only (b16, SGD momentum, CE)",
                    fns, notes)


BUILDERS = [_small_mlp_inference, _mlp_step, _lenet_step, _transformer_step, _lstm_step,
            _gated_step, _mlp_compiled_forward_step, _gated_compiled_forward_step]


def _paired(fns: dict, pairs: int, pause: float, sync=lambda: None) -> dict:
    """Per column, ``pairs`` samples (seconds per call), one of each column per round in a
    rotating order, a pause between columns; ``sync`` waits for queued device work (before a
    sample's clock starts and before it stops)."""
    cols = [c for c in COLUMNS if fns.get(c) is not None]
    for c in cols:  # warm up, and size a sample to ~20 ms of the slowest column
        fns[c]()
    per_call = {}
    for c in cols:
        sync()
        t0 = time.perf_counter()
        fns[c]()
        sync()
        per_call[c] = time.perf_counter() - t0
    number = max(1, min(2000, int(0.02 / max(per_call.values()))))
    times: dict = {c: [] for c in cols}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for i in range(pairs):
            order = cols[i % len(cols):] + cols[:i % len(cols)]
            for c in order:
                fn = fns[c]
                sync()
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                sync()
                times[c].append((time.perf_counter() - t0) / number)
                time.sleep(pause)
            gc.collect()
    finally:
        if gc_was:
            gc.enable()
    return {c: np.array(v) for c, v in times.items()}


def _fmt(s) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    return f"{s * 1e3:.2f} ms"


def _ratio(times: dict, a: str, b: str) -> str:
    if a not in times or b not in times:
        return "-"
    r = times[a] / times[b]
    return f"{np.median(r):.2f}x ({np.percentile(r, 25):.2f}-{np.percentile(r, 75):.2f})"


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def measure(torch, threads: int, pairs: int, pause: float = 0.05) -> str:
    """Build, check and time every workload at ``threads`` threads; a Markdown table."""
    from threadpoolctl import threadpool_limits

    import ember

    only = os.environ.get("BENCH_ONLY", "").lower()
    rows = ["| workload | Ember compiled | Ember eager | PyTorch eager | torch.compile | "
            "compiled / eager | compiled / PyTorch eager | compiled / torch.compile | load |",
            "|---|---|---|---|---|---|---|---|---|"]
    notes_out: list[str] = []
    before = (ember.get_num_threads(), torch.get_num_threads() if torch is not None else None)
    ember.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
        if DEVICE != "cpu":  # cuDNN convolutions default to TF32; Ember's run in float32
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
    try:
        with threadpool_limits(threads, user_api="blas"):
            for build in BUILDERS:
                rng = np.random.default_rng(0)
                try:
                    w = build(torch, rng)
                    if only and only not in w.name.lower():
                        continue
                    print(f"{w.name}: checking", file=sys.stderr, flush=True)
                    t0 = time.perf_counter()
                    _check(w.name, w.fns, w.notes)
                    print(f"{w.name}: checked in {time.perf_counter() - t0:.0f} s; timing",
                          file=sys.stderr, flush=True)
                    times = _paired(w.fns, pairs, pause, lambda: _sync(torch))
                except Exception as exc:
                    if DEVICE == "cpu":
                        raise
                    traceback.print_exc()  # on a GPU: report it, time the other workloads
                    notes_out.append(f"- {build.__name__}: FAILED: {type(exc).__name__}: "
                                     f"{exc}")
                    continue
                med = {c: float(np.median(v)) for c, v in times.items()}
                rows.append(
                    f"| {w.name} | " + " | ".join(_fmt(med.get(c)) for c in COLUMNS)
                    + f" | {_ratio(times, 'compiled', 'eager')} | "
                    f"{_ratio(times, 'compiled', 'torch')} | "
                    f"{_ratio(times, 'compiled', 'torch.compile')} | {_load()} |")
                notes_out += [f"- {w.name}: {n}" for n in w.notes]
                print(rows[-1], file=sys.stderr, flush=True)
    finally:
        ember.set_num_threads(before[0])
        if torch is not None:
            torch.set_num_threads(before[1])
    return (f"{threads} thread(s) per library, {pairs} rounds\n\n" + "\n".join(rows)
            + "\n\nTimes are medians over the rounds; ratios are the median (quartiles) of "
            "the per-round ratios.\n\n" + "\n".join(notes_out))


def workloads(torch) -> str:
    """The table for benchmarks/run.py (``THREADS``, default 1 here, sets the threads)."""
    threads = int(os.environ.get("THREADS", "1").split(",")[0] or 1)
    return measure(torch, threads, int(os.environ.get("PAIRS", "20")))


def main() -> int:
    try:
        import torch
    except ImportError:
        torch = None
    from run import blas_info

    threads = int(os.environ.get("THREADS", "1").split(",")[0] or 1)
    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} "
          f"cores, {platform.python_implementation()} {platform.python_version()}; numpy "
          f"{np.__version__}; torch {getattr(torch, '__version__', 'absent')}")
    print(f"threads: {threads}; load average at start: {_load()}; device: {DEVICE}")
    table = measure(torch, threads, int(os.environ.get("PAIRS", "20")))
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads, user_api="blas"):
        print(f"BLAS: {blas_info()}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
