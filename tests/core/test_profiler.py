"""ember.profiler: per-op events at the op registry, backward nodes tied to their forward ops,
PyTorch's table and schedule, chrome traces in the Trace Event Format."""

from __future__ import annotations

import gzip
import json
import threading

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import engine
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def _lenet():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 12 * 12, 10))


def _step(model, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss


@pytest.fixture
def batch():
    ember.manual_seed(1)
    return ember.randn(8, 1, 28, 28), ember.randint(0, 10, (8,))


def test_table_names_the_ops_and_backward_nodes_of_a_lenet_step(batch):
    model = _lenet()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            _step(model, *batch)
    averages = {e.key: e for e in prof.key_averages()}
    for name in ("aten::conv2d", "aten::relu", "aten::max_pool2d", "aten::linear",
                 "aten::cross_entropy", "ConvolutionBackward0", "AddmmBackward0",
                 "torch::autograd::AccumulateGrad"):
        assert name in averages, sorted(averages)
    assert averages["aten::conv2d"].count == 3
    assert averages["torch::autograd::AccumulateGrad"].count == 3 * 4  # 4 parameters
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert len(lines) == 5 + 5 and lines[-1].startswith("Self CPU time total: ")
    totals = [e.cpu_time_total for e in sorted(prof.key_averages(),
                                               key=lambda e: -e.cpu_time_total)[:5]]
    shown = [line.split()[0] for line in lines[3:8]]
    assert shown == [e.key for e in sorted(prof.key_averages(),
                                           key=lambda e: -e.cpu_time_total)[:5]]
    assert totals == sorted(totals, reverse=True)


def test_times_nest_and_self_times_add_up(batch):
    model = _lenet()
    with profile() as prof:
        with record_function("train_step"):
            _step(model, *batch)
    events = prof.events()
    step = [e for e in events if e.name == "train_step"]
    assert len(step) == 1
    step = step[0]
    assert {c.name for c in step.cpu_children} >= {"aten::conv2d", "ConvolutionBackward0"}
    for e in events:
        assert e.time_range.end >= e.time_range.start
        assert e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        for c in e.cpu_children:
            assert c.cpu_parent is e
            assert e.time_range.start <= c.time_range.start
            assert c.time_range.end <= e.time_range.end
    top = [e for e in events if e.cpu_parent is None]
    assert top == [step]
    assert sum(e.self_cpu_time_total for e in events) == pytest.approx(step.cpu_time_total)


def test_backward_nodes_carry_their_forward_op(batch):
    model = _lenet()
    with profile() as prof:
        _step(model, *batch)
    events = prof.events()
    conv_bwd = next(e for e in events if e.name == "ConvolutionBackward0")
    assert conv_bwd.forward_event is not None
    assert conv_bwd.forward_event.name == "aten::conv2d"
    assert conv_bwd.sequence_nr == conv_bwd.forward_event.sequence_nr > 0
    # the ops a backward node runs are its children
    relu_bwd = next(e for e in events if e.name == "ReluBackward0")
    assert relu_bwd.forward_event.name == "aten::relu"


def test_record_function_as_decorator_and_off_without_a_profiler():
    @record_function("my_fn")
    def f(x):
        return x * 2

    x = ember.ones(3)
    assert f(x).tolist() == [2.0, 2.0, 2.0]  # no profiler: runs plainly
    with profile() as prof:
        f(x)
    names = [e.name for e in prof.events()]
    assert names == ["my_fn", "aten::mul"]
    assert prof.events()[1].cpu_parent.name == "my_fn"


def test_nothing_stays_wrapped_after_profiling():
    from ember import overrides

    with profile():
        ember.ones(2) + 1
        assert engine.PROFILING[0]
        assert overrides.is_active()
    assert not engine.PROFILING[0]
    assert not overrides.is_active()


def test_record_shapes_and_group_by_input_shape():
    with profile(record_shapes=True) as prof:
        ember.ones(2, 3) + ember.ones(2, 3)
        ember.ones(4) + ember.ones(4)
        ember.ones(4) + ember.ones(4)
    adds = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "aten::add"]
    assert sorted((e.input_shapes, e.count) for e in adds) == [([[2, 3], [2, 3]], 1),
                                                               ([[4], [4]], 2)]
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table and "[[2, 3], [2, 3]]" in table
    # ungrouped, a group has no shapes (PyTorch's key_averages clears them): no column that
    # would show the first call's shapes for calls of other shapes
    plain = prof.key_averages()
    assert all(e.input_shapes == "" for e in plain)
    assert "Input Shapes" not in plain.table()


def test_profile_memory_counts_output_bytes():
    x = ember.ones(256, 256)
    with profile(profile_memory=True) as prof:
        x @ x
    mm = next(e for e in prof.events() if e.name == "aten::matmul")
    assert mm.cpu_memory_usage == 256 * 256 * 4
    assert "CPU Mem" in prof.key_averages().table()


def test_other_threads_are_not_recorded():
    seen = []

    def worker():
        seen.append((ember.ones(3) * 3).sum().item())

    with profile() as prof:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        ember.ones(2) - 1
    assert seen == [9.0]
    assert [e.name for e in prof.events()] == ["aten::ones", "aten::sub"]


def test_schedule_matches_pytorch_semantics():
    fn = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    got = [fn(i) for i in range(11)]
    A = ProfilerAction
    assert got == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                   A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    with pytest.raises(ValueError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)
    torch = pytest.importorskip("torch")
    tfn = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [tfn(i).name for i in range(11)] == [a.name for a in got]


def test_scheduled_profile_keeps_the_active_steps_and_calls_on_trace_ready():
    traces = []

    def ready(prof):
        traces.append(sorted({e.name for e in prof.events() if e.name.startswith("Profiler")}))

    x = ember.ones(3)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=ready) as prof:
        for _ in range(10):
            x * 2
            prof.step()
    assert traces == [["ProfilerStep#2", "ProfilerStep#3"],
                      ["ProfilerStep#6", "ProfilerStep#7"]]
    assert [e.name for e in prof.events()].count("aten::mul") == 2


def _check_trace_event_format(trace: dict) -> None:
    """The Trace Event Format's rules that Chrome's and Perfetto's loaders rely on."""
    assert isinstance(trace["traceEvents"], list)
    flows: dict = {}
    for ev in trace["traceEvents"]:
        assert ev["ph"] in ("X", "s", "f")
        assert isinstance(ev["name"], str) and isinstance(ev["pid"], int)
        assert isinstance(ev["tid"], int) and isinstance(ev["ts"], (int, float))
        if ev["ph"] == "X":
            assert ev["dur"] >= 0 and isinstance(ev["args"], dict)
        else:
            flows.setdefault(ev["id"], []).append(ev)
    for pair in flows.values():
        assert sorted(e["ph"] for e in pair) == ["f", "s"]
        start, finish = sorted(pair, key=lambda e: e["ph"], reverse=True)
        assert start["ts"] <= finish["ts"] and finish["bp"] == "e"
    assert flows  # the forward -> backward arrows are there


def test_chrome_trace_is_valid_trace_event_format(tmp_path, batch):
    model = _lenet()
    with profile(record_shapes=True) as prof:
        _step(model, *batch)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    _check_trace_event_format(trace)
    conv = next(e for e in trace["traceEvents"] if e["name"] == "aten::conv2d")
    assert conv["args"]["Input Dims"][0] == [8, 1, 28, 28]
    prof.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    with gzip.open(tmp_path / "trace.json.gz", "rt") as f:
        assert json.load(f)["traceEvents"] == trace["traceEvents"]


def test_tensorboard_trace_handler_writes_pytorch_file_names(tmp_path):
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path), "worker0")) as prof:
        for _ in range(3):
            ember.ones(2) * 2
            prof.step()
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("worker0.")
    assert files[0].name.endswith(".pt.trace.json")
    _check_trace_event_format_no_flows(json.loads(files[0].read_text()))


def _check_trace_event_format_no_flows(trace: dict) -> None:
    assert any(e["name"] == "aten::mul" and e["ph"] == "X" for e in trace["traceEvents"])


def test_with_stack_names_the_calling_line(tmp_path):
    x = ember.ones(512, 512)
    with profile(with_stack=True) as prof:
        x.neg()
    neg = next(e for e in prof.events() if e.name == "aten::neg")
    assert "test_profiler.py" in neg.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()
    prof.export_stacks(str(tmp_path / "stacks.txt"))
    # PyTorch's flame-graph lines: frames outermost first, blanks as "_", whole microseconds
    frames = ";".join(f.replace(" ", "_") for f in reversed(neg.stack))
    lines = (tmp_path / "stacks.txt").read_text().splitlines()
    assert lines == [f"{frames} {int(neg.self_cpu_time_total)}"]
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(tmp_path / "stacks.txt"), "cpu_time_total")
    with pytest.raises(AssertionError, match="requires with_stack=True"):
        with profile() as plain:
            x.neg()
        plain.export_stacks(str(tmp_path / "stacks.txt"))


def test_autograd_profiler():
    from ember.autograd import profiler as autograd_profiler

    with autograd_profiler.profile(record_shapes=True) as prof:
        ember.ones(3).exp()
    assert [e.name for e in prof.function_events] == ["aten::ones", "aten::exp"]
    assert not any(e.is_legacy for e in prof.function_events)
    assert "aten::exp" in prof.table()
    unfinished = autograd_profiler.profile()
    assert list(unfinished.key_averages()) == []  # PyTorch's: no results, no error
    assert repr(unfinished) == str(unfinished) == "<unfinished torch.autograd.profile>"


def test_bad_sort_key_and_results_before_saving():
    with profile() as prof:
        ember.ones(1) + 1
    with pytest.raises(AttributeError, match="sort_by"):
        prof.key_averages().table(sort_by="wall_time")
    with pytest.raises(RuntimeError, match="no saved trace"):
        profile().events()


def test_results_unchanged_by_profiling(batch):
    model = _lenet()
    _step(model, *batch)
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    with profile(record_shapes=True, profile_memory=True, with_stack=True):
        _step(model, *batch)
    for w, p in zip(want, model.parameters()):
        np.testing.assert_array_equal(w, p.grad.numpy())


def test_table_layout_matches_pytorch():
    torch = pytest.importorskip("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tprof:
        torch.ones(3) + 1
    with profile() as prof:
        ember.ones(3) + 1
    theirs = tprof.key_averages().table().splitlines()
    ours = prof.key_averages().table().splitlines()
    assert ours[1].split() == theirs[1].split()  # the same columns in the same order
    assert ours[-1].split(":")[0] == theirs[-1].split(":")[0]


# -- with_flops ----------------------------------------------------------------------------------

def _flops_program(t):
    a, b = t.ones(3, 1), t.ones(1, 4)
    a * b
    a + b
    t.mm(t.ones(3, 5), t.ones(5, 7))
    t.bmm(t.ones(2, 3, 5), t.ones(2, 5, 7))
    t.matmul(t.ones(2, 3, 5), t.ones(5, 7))
    t.nn.functional.conv2d(t.ones(1, 4, 6, 6), t.ones(8, 2, 3, 3), groups=2)
    t.nn.functional.linear(t.ones(3, 5), t.ones(7, 5))
    t.sub(a, b)


def _flops_of(t):
    import importlib

    profiler = importlib.import_module(f"{t.__name__}.profiler")
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], with_flops=True) as prof:
        _flops_program(t)
    return prof


def test_with_flops_estimates_pytorchs_flops():
    prof = _flops_of(ember)
    flops = {e.name: e.flops for e in prof.events() if e.flops}
    # PyTorch's estimates (its profiler puts linear's and matmul's under their mm kernels)
    assert flops == {"aten::mul": 3, "aten::add": 3, "aten::mm": 210, "aten::bmm": 420,
                     "aten::matmul": 420, "aten::conv2d": 4608, "aten::linear": 210}
    table = prof.key_averages().table()
    header = table.splitlines()[1]
    assert header.rstrip().endswith("Total FLOPs")
    row = next(line for line in table.splitlines() if "aten::conv2d" in line)
    assert row.rstrip().endswith("4608.000")
    assert next(line for line in table.splitlines()
                if "aten::sub" in line).rstrip().endswith("--")


def test_with_flops_totals_equal_the_oracle():
    torch = pytest.importorskip("torch")
    assert sum(e.flops for e in _flops_of(ember).events()) == \
        sum(e.flops for e in _flops_of(torch).events())


def test_flops_column_scales_and_stays_off_without_with_flops():
    from ember.autograd.profiler_util import _flops_scale

    assert _flops_scale(999) == (1.0, "FLOPs")
    assert _flops_scale(1000) == (1e-3, "KFLOPs")
    assert _flops_scale(5 * 10**9) == (1e-9, "GFLOPs")
    with ember.profiler.profile() as prof:
        ember.mm(ember.ones(3, 5), ember.ones(5, 7))
    assert "FLOPs" not in prof.key_averages().table()
    assert all(not e.flops for e in prof.events())
