"""The rest of ``torch.autograd.profiler``'s family: the legacy profiler, the public classes of
``profiler_util``, the step tracker, NVTX ranges (on a fake CuPy), ITT, and nvprof traces
read back from a SQLite database built here with nvprof's schema."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import types
import warnings

import pytest

import ember
import ember.backends.cuda as cuda_backend
from ember import overrides
from ember.autograd import engine, profiler, profiler_legacy, profiler_util
from ember.backends import available_types, get_backend, register_backend, unregister_backend

no_cuda = pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA device is present")


def _torch_or_none():
    """PyTorch, the oracle, where it is installed (the Ember half of a test runs without)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


# -- the modules ------------------------------------------------------------------------------

def test_submodules_are_attributes_imported_on_first_use():
    code = ("import sys, ember; mods = ('profiler', 'profiler_legacy', 'profiler_util'); "
            "print(any(f'ember.autograd.{m}' in sys.modules for m in mods)); "
            "print(all(getattr(ember.autograd, m).__name__ == f'ember.autograd.{m}' "
            "for m in mods))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]  # not imported by ``import ember``; there when asked
    with pytest.raises(AttributeError, match="has no attribute 'profilerr'"):
        _ = ember.autograd.profilerr


@pytest.mark.parametrize("name", ["profiler", "profiler_legacy", "profiler_util"])
def test_public_names_match_pytorch(name):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.autograd, name).__all__
    ours = getattr(ember.autograd, name)
    assert sorted(ours.__all__) == sorted(theirs)
    assert all(hasattr(ours, n) for n in theirs)


# -- the legacy profiler ----------------------------------------------------------------------

def test_legacy_profile_is_the_autograd_profile_with_legacy_manners():
    assert issubclass(profiler_legacy.profile, profiler.profile)
    prof = profiler_legacy.profile(record_shapes=True)
    assert repr(prof) == "<unfinished profiler_legacy.profile>"
    assert str(prof) == "<unfinished profile.profiler_legacy.profile>"
    assert prof.function_events is None
    for results in (prof.key_averages, prof.table, prof.total_average):
        with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
            results()
    x = ember.ones(2, 3, requires_grad=True)
    with prof as entered:
        (x * 2).sum().backward()
    assert entered is prof
    events = prof.function_events
    assert [e.name for e in events] == ["aten::mul", "aten::sum", "SumBackward0",
                                        "MulBackward0", "aten::mul",
                                        "torch::autograd::AccumulateGrad"]
    assert all(e.is_legacy for e in events)
    # as PyTorch records them: a backward node's shapes are its gradients', scope 1
    assert [(e.input_shapes, e.scope) for e in events[2:4]] == [([[]], 1), ([[2, 3]], 1)]
    assert events[3].sequence_nr == events[0].sequence_nr >= 0
    assert "MulBackward0" in prof.table() and prof.self_cpu_time_total > 0
    total = prof.total_average()
    assert (total.key, total.count) == ("Total", len(events))
    assert total.self_cpu_time_total == pytest.approx(prof.self_cpu_time_total)
    with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
        with prof:
            pass


def test_legacy_profile_matches_pytorch_on_its_edges():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        with lib.autograd.profiler_legacy.profile(enabled=False) as entered:
            pass
        assert entered is None
        with lib.autograd.profiler.profile(enabled=False) as entered:
            pass
        assert entered is None
        unfinished = lib.autograd.profiler.profile()
        assert repr(unfinished) == str(unfinished) == "<unfinished torch.autograd.profile>"
        assert list(unfinished.key_averages()) == []
        with lib.autograd.profiler_legacy.profile() as prof:
            lib.ones(3).exp()
        with pytest.raises(AssertionError, match="requires with_stack=True"):
            prof.export_stacks("unused.txt")


@no_cuda
def test_use_cuda_without_cuda_warns_and_profiles_the_cpu():
    with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        prof = profiler_legacy.profile(use_cuda=True)
    assert prof.use_device is None and prof.use_cuda is False
    with pytest.warns(FutureWarning, match="use_cuda` will be deprecated"), \
            pytest.warns(UserWarning, match="CUDA is not available"):
        profiler.profile(use_cuda=True)
    with pytest.warns(UserWarning, match="The tpu is not a valid device option."):
        assert profiler.profile(use_device="tpu").use_device is None


# -- profiler_util's classes ------------------------------------------------------------------

def _event(lib, id, start, end, **kw):
    return lib.autograd.profiler_util.FunctionEvent(id=id, name=f"op{id}", thread=0,
                                                    start_us=start, end_us=end, **kw)


def _tree(lib, **kw):
    parent, child = _event(lib, 1, 0.0, 10.0, **kw), _event(lib, 2, 2.0, 5.0, **kw)
    parent.append_cpu_child(child)
    child.set_cpu_parent(parent)
    parent.append_kernel("gemm", 0, 4.0)
    child.append_kernel("relu", 0, 1.5)
    return parent, child


@pytest.mark.parametrize("kw", [{}, {"use_device": "cuda"},
                                {"use_device": "cuda", "is_legacy": True},
                                {"use_device": "cuda", "is_async": True}])
def test_function_event_times_match_pytorch(kw):
    torch = pytest.importorskip("torch")
    fields = ["cpu_time_total", "self_cpu_time_total", "device_time_total",
              "self_device_time_total", "cpu_time", "device_time", "cpu_time_str",
              "device_time_str", "cpu_time_total_str", "self_cpu_time_total_str",
              "device_time_total_str", "self_device_time_total_str"]
    ours, theirs = _tree(ember, **kw), _tree(torch, **kw)
    for a, b in zip(ours, theirs):
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
        assert a.kernels == b.kernels and a.time_range.elapsed_us() == b.time_range.elapsed_us()
    avg, tavg = profiler_util.FunctionEventAvg(), torch.autograd.profiler_util.FunctionEventAvg()
    avg.add(ours[0])
    tavg.add(theirs[0])
    avg += ours[0]
    tavg += theirs[0]
    assert [getattr(avg, f) for f in fields] == [getattr(tavg, f) for f in fields]
    with pytest.warns(FutureWarning, match="device_time_total"):
        assert ours[0].cuda_time_total == ours[0].device_time_total
    with pytest.raises(AssertionError, match="Expected keys to match"):
        avg.add(ours[1])


def test_kernel_interval_and_formatted_times():
    k = profiler_util.Kernel("gemm", 0, 3.5)
    assert (k.name, k.device, k.duration) == ("gemm", 0, 3.5) and k == ("gemm", 0, 3.5)
    span = profiler_util.Interval(1.5, 4.0)
    assert span.elapsed_us() == 2.5

    class Timed(profiler_util.FormattedTimesMixin):
        count = 4
        cpu_time_total = 12_345.0
        device_time_total = 2_500_000.0
        self_cpu_time_total = 999.5
        self_device_time_total = 0.0

    t = Timed()
    assert (t.cpu_time, t.cpu_time_str, t.cpu_time_total_str) == (3086.25, "3.086ms", "12.345ms")
    assert (t.device_time_str, t.device_time_total_str) == ("625.000ms", "2.500s")
    assert (t.self_cpu_time_total_str, t.self_device_time_total_str) == ("999.500us",
                                                                          "0.000us")
    with pytest.warns(FutureWarning, match="`cuda_time` is deprecated"):
        assert t.cuda_time == t.device_time
    Timed.count = 0
    assert t.cpu_time == t.device_time == 0.0


def test_event_metadata_is_parsed_as_pytorch_parses_it():
    extra = {"grid": "[4, 1, 1]", "block": "[128, 1, 1]", "registers per thread": "32",
             "est. achieved occupancy %": "87.5", "Collective name": '"allreduce"',
             "Is asynchronized op": "1", "something else": "x"}
    ours = profiler_util._build_metadata(extra)
    assert isinstance(ours, profiler_util.EventMetadata)
    assert (ours.grid, ours.collective_name, ours.is_async) == ([4, 1, 1], "allreduce", True)
    assert (ours.registers_per_thread, ours.est_occupancy_pct, ours.stream) == (32, 87.5, None)
    assert profiler_util._build_metadata({"unknown": "1"}) is None
    evt = profiler_util.FunctionEvent(0, "k", 0, 0.0, 1.0, extra_meta={"stream": "7"})
    assert evt.event_metadata.stream == 7 and evt.event_metadata.grid is None
    torch = pytest.importorskip("torch")
    theirs = torch.autograd.profiler_util._build_metadata(extra)
    assert ours._fields == theirs._fields and tuple(ours) == tuple(theirs)


def test_string_table_demangles_as_pytorch_does():
    names = ["_ZN3foo3barEv", "_Z3addii", "aten::add", "t", "_Z", "ProfilerStep#3", ""]
    ours = profiler_util.StringTable()
    assert [ours[n] for n in names] == ["foo::bar()", "add(int, int)", "aten::add", "t", "_Z",
                                        "ProfilerStep#3", ""]
    assert isinstance(ours, dict) and "_Z3addii" in ours  # kept once looked up
    # the demangler itself, as nvprof's reader uses it: a one-letter name is a type there
    assert profiler_util._demangle("t") == "unsigned short"
    torch = pytest.importorskip("torch")
    theirs = torch.autograd.profiler_util.StringTable()
    assert [ours[n] for n in names] == [theirs[n] for n in names]
    assert [profiler_util._demangle(n) for n in names] == [torch._C._demangle(n) for n in names]


def test_mem_records_acc_finds_the_records_of_an_interval():
    class Record:
        def __init__(self, ns):
            self.ns = ns

        def start_ns(self):
            return self.ns

    records = [(Record(ns), i) for i, ns in enumerate([30, 10, 20, 40, 20])]
    torch = _torch_or_none()
    classes = [profiler_util.MemRecordsAcc]
    if torch is not None:
        classes.append(torch.autograd.profiler_util.MemRecordsAcc)
    for acc_cls in classes:  # the same answers from PyTorch's, where it is installed
        acc = acc_cls(records)
        assert [r[1] for r in acc.in_interval(10, 30)] == [1, 2, 4, 0]
        assert [r[1] for r in acc.in_interval(21, 39)] == [0]
        assert list(acc_cls([]).in_interval(0, 100)) == []
    assert profiler.MemRecordsAcc is profiler_util.MemRecordsAcc


# -- KinetoStepTracker ------------------------------------------------------------------------

@pytest.fixture
def fresh_step_trackers():
    """Each tracker (ours, PyTorch's) from zero, its state put back afterwards."""
    trackers = [profiler.KinetoStepTracker]
    torch = _torch_or_none()
    if torch is not None:
        trackers.append(torch.autograd.profiler.KinetoStepTracker)
    saved = [(t._current_step, dict(t._step_dict)) for t in trackers]
    for t in trackers:
        t._current_step = 0
        t._step_dict.clear()
    yield
    for t, (step, steps) in zip(trackers, saved):
        t._current_step = step
        t._step_dict.clear()
        t._step_dict.update(steps)


def _count_steps(tracker):
    seen = [tracker.increment_step("a"), tracker.increment_step("a"),
            tracker.increment_step("b"), tracker.increment_step("b")]
    tracker.init_step_count("c")
    seen.append(dict(tracker._step_dict))
    seen += [tracker.erase_step_count("c"), tracker.erase_step_count("c")]
    tracker._step_dict["x"] = 10
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen.append(tracker.increment_step("x"))
    seen += [str(w.message).replace("defaultdict(<class 'int'>, ", "") for w in caught]
    seen.append(tracker.current_step())
    return seen


def test_step_tracker_counts_as_pytorchs(fresh_step_trackers):
    ours = _count_steps(profiler.KinetoStepTracker)
    assert ours[:4] == [1, 2, 3, 4]  # "b" starts at the global step, then passes it
    assert ours[4] == {"a": 2, "b": 4, "c": 4} and ours[5:7] == [True, False]
    assert ours[7] == 11 and "increased more than 1" in ours[8] and ours[-1] == 11
    torch = pytest.importorskip("torch")
    torch.autograd.profiler.KinetoStepTracker._current_step = 0
    torch.autograd.profiler.KinetoStepTracker._step_dict.clear()
    assert _count_steps(torch.autograd.profiler.KinetoStepTracker) == ours


def test_profiler_registers_its_steps_and_optimizers_do_not_step(fresh_step_trackers):
    tracker = profiler.KinetoStepTracker
    prof = ember.profiler.profile()
    assert tracker._step_dict == {"ProfilerStep": 0}
    with prof:
        prof.step()
        prof.step()
    assert tracker._step_dict == {} and tracker.current_step() == 0
    # as in PyTorch without a Kineto daemon, optimizer.step() does not count steps
    w = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([w], lr=0.1)
    for _ in range(3):
        w.sum().backward()
        opt.step()
    assert tracker.current_step() == 0 and tracker._step_dict == {}


# -- NVTX and ITT ----------------------------------------------------------------------------

@no_cuda
def test_emit_nvtx_without_cuda_raises_as_a_cpu_build_does():
    rng = profiler.emit_nvtx()
    with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
        with rng:
            pass
    assert not engine.PROFILING[0] and not overrides.is_active()
    with profiler.emit_nvtx(enabled=False) as entered:
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
    assert entered is None
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            with torch.autograd.profiler.emit_nvtx():
                pass


class FakeNvtxCupy(types.ModuleType):
    """Just enough of CuPy for the CUDA backend to be available, with NVTX ranges recorded:
    ``ranges`` holds each pushed label and ``None`` for each pop."""

    def __init__(self):
        super().__init__("cupy")
        self.ranges: list = []
        self.synced = 0

        class Device:
            def __init__(self, index):
                self.index = index

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0,
                                        deviceSynchronize=self._sync)
        nvtx = types.SimpleNamespace(RangePush=self.ranges.append,
                                     RangePop=lambda: self.ranges.append(None))
        self.cuda = types.SimpleNamespace(runtime=runtime, Device=Device, nvtx=nvtx)

    def _sync(self):
        self.synced += 1


@pytest.fixture
def fake_cupy():
    real = get_backend("cuda") if "cuda" in available_types() else None
    fake = FakeNvtxCupy()
    register_backend(cuda_backend.CUDABackend(fake))
    yield fake
    if real is None:
        unregister_backend("cuda")
    else:
        register_backend(real)


def _nesting(ranges) -> list:
    """The labels with their depth; asserts that every push is popped, in order."""
    depth, out = 0, []
    for r in ranges:
        if r is None:
            depth -= 1
            assert depth >= 0
        else:
            out.append((depth, r))
            depth += 1
    assert depth == 0
    return out


def test_emit_nvtx_pushes_pytorchs_labels(fake_cupy):
    x = ember.ones(2, 3, requires_grad=True)
    with profiler.emit_nvtx(record_shapes=True) as rng:
        y = x * 2
        with profiler.record_function("loss"):
            z = ember.cat([y, x]).sum()
        z.backward()
    assert rng.entered and fake_cupy.synced == 2  # the device is synchronized at both ends
    assert not engine.PROFILING[0] and not overrides.is_active()
    labels = _nesting(fake_cupy.ranges)
    parsed = {}
    for depth, label in labels:
        name, *fields = label.split(", ", 1)
        parsed.setdefault(name, []).append((depth, fields[0] if fields else ""))
    (_, mul), = [p for p in parsed["aten::mul"] if "seq" in p[1]]
    seq_mul = int(mul.split("seq = ")[1].split(",")[0])
    op_mul = int(mul.split("op_id = ")[1].split(",")[0])
    assert mul == (f"seq = {seq_mul}, op_id = {op_mul}, sizes = [[2, 3], []], "
                   "input_op_ids = [(0,-1), (0,-1)]")
    (_, loss), = parsed["loss"]
    op_loss = int(loss.split("op_id = ")[1])
    assert loss == f"op_id = {op_loss}"
    (cat_depth, cat), = parsed["aten::cat"]
    assert cat_depth == 1  # inside "loss"
    seq_cat = seq_mul + 1
    op_cat = int(cat.split("op_id = ")[1].split(",")[0])
    # a tensor list's shapes are spliced in, and ``y`` names the mul that made it
    assert cat == (f"seq = {seq_cat}, op_id = {op_cat}, sizes = [[2, 3], [2, 3]], "
                   f"input_op_ids = [({op_mul},0), (0,-1)]")
    (_, sum_), = parsed["aten::sum"]
    assert sum_.startswith(f"seq = {seq_cat + 1}, op_id = ") and \
        sum_.endswith(f"sizes = [[4, 3]], input_op_ids = [({op_cat},0)]")
    # backward: each node's range carries its forward op's seq and its gradients' shapes
    (_, mul_bwd), = parsed["MulBackward0"]
    assert mul_bwd.startswith(f"seq = {seq_mul}, op_id = ")
    assert mul_bwd.endswith("sizes = [[2, 3]]")
    (_, cat_bwd), = parsed["CatBackward0"]
    assert cat_bwd.startswith(f"seq = {seq_cat}, ") and cat_bwd.endswith("sizes = [[4, 3]]")
    assert all(p[1].startswith("op_id = ") and p[1].endswith("sizes = [[2, 3]]")
               for p in parsed["torch::autograd::AccumulateGrad"])
    # ops run by a backward node: no grad mode, no seq
    inner = [p for p in parsed["aten::mul"] if "seq" not in p[1]]
    assert inner and all(depth >= 1 for depth, _ in inner)
    assert x.grad.tolist() == [[3.0] * 3] * 2
    with pytest.raises(RuntimeError, match="NVTX annotation context manager is not reentrant"):
        with rng:
            pass


def test_emit_nvtx_without_shapes_and_when_an_op_raises(fake_cupy):
    with pytest.raises(RuntimeError):
        with profiler.emit_nvtx():
            a = ember.ones(2)
            with ember.no_grad():
                a.neg()
            ember.ones(2, 3) @ ember.ones(2, 3)  # mat1 and mat2 shapes cannot be multiplied
    labels = [label for _, label in _nesting(fake_cupy.ranges)]  # the failed op's popped too
    assert [label.split(", ")[0] for label in labels] == [
        "aten::ones", "aten::neg", "aten::ones", "aten::ones", "aten::matmul"]
    # no seq without grad mode; no node was made in between, so the next seq stays the same
    seqs = [label.split("seq = ")[1].split(",")[0] if "seq = " in label else None
            for label in labels]
    assert seqs[1] is None and len({seqs[0], *seqs[2:]}) == 1 and seqs[0] is not None
    assert all(label.split("op_id = ")[1].isdigit() for label in labels)  # and no sizes
    assert not engine.PROFILING[0] and not overrides.is_active()


def test_emit_nvtx_inside_a_profile_leaves_the_profile_recording(fake_cupy):
    with ember.profiler.profile() as prof:
        with profiler.emit_nvtx():
            ember.ones(2).exp()
        with profiler.record_function("after"):
            ember.ones(2).neg()
    names = [e.name for e in prof.events()]
    assert names == ["aten::ones", "aten::exp", "after", "aten::ones", "aten::neg"]
    assert len(_nesting(fake_cupy.ranges)) == 2


@pytest.mark.gpu
def test_emit_nvtx_on_cupy(monkeypatch):
    import cupy

    x = ember.ones(2, 3, device="cuda", requires_grad=True)
    with profiler.emit_nvtx(record_shapes=True):  # CuPy's real NVTX calls
        (x * 2).sum().backward()
    ranges: list = []
    monkeypatch.setattr(cupy.cuda.nvtx, "RangePush", lambda msg, *a, **k: ranges.append(msg))
    monkeypatch.setattr(cupy.cuda.nvtx, "RangePop", lambda: ranges.append(None))
    with profiler.emit_nvtx(record_shapes=True):
        (x * 2).sum().backward()
    names = [label.split(", ")[0] for _, label in _nesting(ranges)]
    assert names[:2] == ["aten::mul", "aten::sum"] and "MulBackward0" in names
    assert x.grad.cpu().tolist() == [[4.0] * 3] * 2


def test_emit_itt_runs_the_block_as_pytorchs_does_without_vtune():
    torch = _torch_or_none()
    libs = [ember] + ([torch] if torch is not None else [])
    for lib in libs:
        rng = lib.autograd.profiler.emit_itt(record_shapes=True)
        with rng as entered:
            assert (lib.ones(2) + 1).tolist() == [2.0, 2.0]
        assert entered is rng
        with pytest.raises(RuntimeError, match="ITT annotation context manager is not "
                                               "reentrant"):
            with rng:
                pass
        with lib.autograd.profiler.emit_itt(enabled=False) as entered:
            pass
        assert entered is None
    assert not engine.PROFILING[0] and not overrides.is_active()


# -- nvprof traces ---------------------------------------------------------------------------

_STRINGS = {1: "aten::mm, seq = 3, op_id = 1", 2: "_Z10gemmKernelPfS_S_i",
            3: "aten::relu, op_id = 2", 4: "_ZN2at6native4reluEv", 5: "_ZN5ember4stepEv"}
# (marker id, name, start, end): ranges as emit_nvtx leaves them (a push, then a pop: name 0)
_MARKERS = [(10, 1, 100, 200), (11, 3, 300, 400), (12, 5, 50, 500)]
# (runtime id, cbid, start, end, correlation id) and (kernel start, end, correlation id, name)
_RUNTIME = [(1, 211, 110, 120, 7), (2, 211, 310, 315, 8), (3, 211, 600, 610, 9)]
_KERNELS = [(130, 180, 7, 2), (320, 330, 8, 4), (620, 640, 9, 2)]


def _nvprof_db(path, markers=_MARKERS, runtime=_RUNTIME, kernels=_KERNELS):
    """A database with the tables and columns of nvprof's that PyTorch's reader queries."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, flags INT,
            timestamp INT, id INT, objectKind INT, objectId BLOB, name INT, domain INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT,
            start INT, end INT, processId INT, threadId INT, correlationId INT,
            returnValue INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ INTEGER PRIMARY KEY,
            start INT, end INT, deviceId INT, contextId INT, streamId INT,
            correlationId INT, name INT);
    """)
    conn.executemany("INSERT INTO StringTable VALUES (?, ?)", _STRINGS.items())
    for marker, name, start, end in markers:
        conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, name) "
                     "VALUES (2, ?, ?, ?)", (start, marker, name))
        conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, name) "
                     "VALUES (4, ?, ?, 0)", (end, marker))
    conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(_id_, cbid, start, end, "
                     "correlationId) VALUES (?, ?, ?, ?, ?)", runtime)
    conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start, end, "
                     "correlationId, name) VALUES (?, ?, ?, ?)", kernels)
    conn.commit()
    conn.close()
    return str(path)


def test_load_nvprof_reads_the_ranges_and_their_kernels(tmp_path):
    path = _nvprof_db(tmp_path / "trace.nvvp")
    events = profiler.load_nvprof(path)
    assert isinstance(events, profiler_util.EventList)
    gemm, relu = "gemmKernel(float*, float*, float*, int)", "at::native::relu()"
    got = [(e.id, e.name, e.time_range.start, e.time_range.end, e.thread, e.node_id,
            e.kernels) for e in events]
    assert got == [(12, "ember::step()", 50, 500, 0, 0, [(gemm, 0, 50), (relu, 0, 10)]),
                   (10, "aten::mm, seq = 3, op_id = 1", 100, 200, 0, 0, [(gemm, 0, 50)]),
                   (11, "aten::relu, op_id = 2", 300, 400, 0, 0, [(relu, 0, 10)])]
    assert "ember::step()" in events.table()
    torch = pytest.importorskip("torch")
    theirs = torch.autograd.profiler.load_nvprof(path)
    assert [(e.id, e.name, e.time_range.start, e.time_range.end, e.cpu_time_total,
             e.device_time_total) for e in theirs] == \
        [(e.id, e.name, e.time_range.start, e.time_range.end, e.cpu_time_total,
          e.device_time_total) for e in events]
    # PyTorch leaves a kernel's name as its string-table id; Ember looks it up
    assert [[(torch._C._demangle(_STRINGS[k.name]), k.device, k.duration) for k in e.kernels]
            for e in theirs] == [e.kernels for e in events]


def test_parse_nvprof_trace_refuses_what_pytorch_refuses(tmp_path):
    twice = _nvprof_db(tmp_path / "twice.nvvp", markers=_MARKERS + [(10, 3, 700, 800)])
    with pytest.raises(RuntimeError, match=r"duplicate key: \(10,\)"):
        profiler.parse_nvprof_trace(twice)
    not_a_launch = _nvprof_db(tmp_path / "memcpy.nvvp",
                              runtime=[(1, 41, 110, 120, 7)], kernels=[(130, 180, 7, 2)])
    with pytest.raises(AssertionError, match="Expected cbid to be 211, but got 41"):
        profiler.parse_nvprof_trace(not_a_launch)
    unique = profiler.EnforceUnique()
    unique.see(1, 2)
    unique.see(2, 1)
    with pytest.raises(RuntimeError, match=r"duplicate key: \(1, 2\)"):
        unique.see(1, 2)
