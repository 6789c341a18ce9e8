"""ember.utils.flop_counter (FlopCounterMode), ember.utils.module_tracker and the autograd
engine's final callbacks they rest on.

The expected counts are PyTorch 2.13's (CPU), measured once and written here, so the tests run
without the oracle; where PyTorch is installed the same programs also run under both libraries
and must count the same."""

from __future__ import annotations

import threading

import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import Variable
from ember.ops import aten
from ember.utils.flop_counter import (
    FlopCounterMode,
    conv_flop_count,
    flop_registry,
    mm_flop,
    register_flop_formula,
    sdpa_backward_flop_count,
    sdpa_flop_count,
)
from ember.utils.module_tracker import ModuleTracker


def _counts(fc) -> dict:
    return {mod: {str(op): n for op, n in ops.items()} for mod, ops in
            fc.get_flop_counts().items()}


def _count(lib, fn) -> dict:
    import importlib

    module = importlib.import_module(f"{lib.__name__}.utils.flop_counter")
    counter = module.FlopCounterMode(display=False)
    with counter:
        fn(lib)
    return _counts(counter)


# -- programs, written for either library (``t`` is ember or torch) -------------------------

def _linear(x_shape, bias=True, x_grad=True):
    def run(t):
        x = t.randn(*x_shape, requires_grad=x_grad)
        w = t.randn(16, 8, requires_grad=True)
        b = t.randn(16, requires_grad=True) if bias else None
        t.nn.functional.linear(x, w, b).sum().backward()
    return run


def _linear_transposed_input(t):
    # a non-contiguous input: ATen's linear runs matmul (an mm over the copied rows) and
    # adds the bias, where a contiguous one is an addmm
    x = t.randn(4, 2, 8).transpose(0, 1)
    w = t.randn(16, 8, requires_grad=True)
    t.nn.functional.linear(x, w, t.randn(16)).sum().backward()


def _matmul(a_shape, b_shape):
    return lambda t: t.randn(*a_shape) @ t.randn(*b_shape)


def _conv(t):
    conv = t.nn.Conv2d(3, 4, 3)
    conv(t.randn(2, 3, 8, 8, requires_grad=True)).sum().backward()


def _conv_weight_only(t):
    conv = t.nn.Conv2d(3, 4, 3)
    conv(t.randn(2, 3, 8, 8)).sum().backward()


def _conv_transpose(t):
    conv = t.nn.ConvTranspose2d(4, 3, 3, stride=2)
    conv(t.randn(2, 4, 5, 5, requires_grad=True)).sum().backward()


def _conv_groups(t):
    t.nn.Conv2d(4, 8, 3, groups=2)(t.randn(1, 4, 6, 6)).sum().backward()


def _mha(t):
    mha = t.nn.MultiheadAttention(16, 4)
    x = t.randn(5, 2, 16)
    mha(x, x, x)[0].sum().backward()


def _mlp(t):
    t.manual_seed(0)
    model = t.nn.Sequential(t.nn.Linear(10, 20), t.nn.ReLU(),
                            t.nn.Sequential(t.nn.Linear(20, 30), t.nn.Linear(30, 5)))
    model(t.randn(7, 10)).sum().backward()


def _cnn(t):
    class Net(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = t.nn.Conv2d(1, 4, 3, padding=1)
            self.bn = t.nn.BatchNorm2d(4)
            self.conv2 = t.nn.Conv2d(4, 8, 3, stride=2)
            self.fc = t.nn.Linear(8 * 3 * 3, 10)

        def forward(self, x):
            x = t.relu(self.bn(self.conv1(x)))
            return self.fc(t.flatten(self.conv2(x), 1))

    net = Net()
    t.nn.functional.cross_entropy(net(t.randn(2, 1, 8, 8)), t.tensor([1, 2])).backward()


def _einsum(t):
    a = t.randn(2, 3, 5, requires_grad=True)
    b = t.randn(2, 5, 7, requires_grad=True)
    t.einsum("bij,bjk->bik", a, b).sum().backward()


def _recurrent(kind, *, packed=False, h0_grad=False, x_grad=False, backward=True, **kwargs):
    def run(t):
        t.manual_seed(0)
        module = getattr(t.nn, kind)(8, 16, **kwargs)
        x = t.randn(5, 3, 8, requires_grad=x_grad)
        if packed:
            x = t.nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2])
        args = (x,)
        if h0_grad:
            args += (t.randn(module.num_layers, 3, 16, requires_grad=True),)
        out = module(*args)[0]
        if backward:
            (out.data if packed else out).sum().backward()
    return run


def _cell(kind, *, h_grad=False, bias=True, batched=True):
    def run(t):
        t.manual_seed(0)
        cell = getattr(t.nn, kind)(8, 16, bias=bias)
        x = t.randn(3, 8, requires_grad=h_grad) if batched else t.randn(8)
        args = (x,)
        if h_grad:
            h = t.randn(3, 16, requires_grad=True)
            args += ((h, t.randn(3, 16)) if kind == "LSTMCell" else h,)
        out = cell(*args)
        out = out[0] if kind == "LSTMCell" else out
        if batched:
            out.sum().backward()
    return run


# name: (program, PyTorch 2.13's counts)
CASES = {
    "linear_2d_bias": (_linear((4, 8)), {"Global": {"aten.addmm": 1024, "aten.mm": 2048}}),
    "linear_2d": (_linear((4, 8), bias=False), {"Global": {"aten.mm": 3072}}),
    "linear_3d_bias": (_linear((2, 4, 8)), {"Global": {"aten.addmm": 2048, "aten.mm": 4096}}),
    "linear_3d": (_linear((2, 4, 8), bias=False), {"Global": {"aten.mm": 6144}}),
    "linear_1d": (_linear((8,)), {"Global": {"aten.addmm": 256, "aten.mm": 512}}),
    "linear_weight_grad_only": (_linear((2, 4, 8), x_grad=False),
                                {"Global": {"aten.addmm": 2048, "aten.mm": 2048}}),
    "linear_transposed_input": (_linear_transposed_input, {"Global": {"aten.mm": 4096}}),
    "mm": (_matmul((3, 5), (5, 7)), {"Global": {"aten.mm": 210}}),
    "mv": (_matmul((3, 5), (5,)), {}),
    "vm": (_matmul((5,), (5, 7)), {"Global": {"aten.mm": 70}}),
    "dot": (_matmul((5,), (5,)), {}),
    "3d@2d": (_matmul((2, 3, 5), (5, 7)), {"Global": {"aten.mm": 420}}),
    "3d@1d": (_matmul((2, 3, 5), (5,)), {}),
    "1d@3d": (_matmul((5,), (2, 5, 7)), {"Global": {"aten.bmm": 140}}),
    "2d@3d": (_matmul((3, 5), (2, 5, 7)), {"Global": {"aten.bmm": 420}}),
    "4d@3d": (_matmul((4, 2, 3, 5), (2, 5, 7)), {"Global": {"aten.bmm": 1680}}),
    "bmm": (lambda t: t.bmm(t.randn(2, 3, 5), t.randn(2, 5, 7)), {"Global": {"aten.bmm": 420}}),
    "baddbmm": (lambda t: t.baddbmm(t.randn(2, 3, 7), t.randn(2, 3, 5), t.randn(2, 5, 7)),
                {"Global": {"aten.baddbmm": 420}}),
    "addmm": (lambda t: t.addmm(t.randn(3, 7), t.randn(3, 5), t.randn(5, 7)),
              {"Global": {"aten.addmm": 210}}),
    "addmv": (lambda t: t.addmv(t.randn(3), t.randn(3, 5), t.randn(5)), {}),
    "einsum": (_einsum, {"Global": {"aten.bmm": 1260}}),
    "einsum_2d": (lambda t: t.einsum("ij,jk->ik", t.randn(3, 5), t.randn(5, 7)),
                  {"Global": {"aten.bmm": 210}}),
    "tensordot": (lambda t: t.tensordot(t.randn(3, 4, 5), t.randn(4, 5, 6), dims=2),
                  {"Global": {"aten.mm": 720}}),
    "conv": (_conv, {"Global": {"aten.convolution": 15552, "aten.convolution_backward": 31104},
                     "Conv2d": {"aten.convolution": 15552,
                                "aten.convolution_backward": 31104}}),
    "conv_weight_grad_only": (_conv_weight_only, {
        "Global": {"aten.convolution": 15552, "aten.convolution_backward": 15552},
        "Conv2d": {"aten.convolution": 15552, "aten.convolution_backward": 15552}}),
    "conv_transpose": (_conv_transpose, {
        "Global": {"aten.convolution": 10800, "aten.convolution_backward": 21600},
        "ConvTranspose2d": {"aten.convolution": 10800, "aten.convolution_backward": 21600}}),
    "conv_groups": (_conv_groups, {
        "Global": {"aten.convolution": 4608, "aten.convolution_backward": 9216},
        "Conv2d": {"aten.convolution": 4608, "aten.convolution_backward": 9216}}),
    "conv1d": (lambda t: t.nn.functional.conv1d(t.randn(2, 3, 10), t.randn(4, 3, 3)),
               {"Global": {"aten.convolution": 1152}}),
    "conv3d": (lambda t: t.nn.functional.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 2, 2, 2)),
               {"Global": {"aten.convolution": 2592}}),
    "multihead_attention": (_mha, {
        "Global": {"aten.addmm": 20480, "aten.bmm": 9600, "aten.mm": 25600},
        "MultiheadAttention": {"aten.addmm": 20480, "aten.bmm": 9600, "aten.mm": 25600}}),
    "gru_forward": (_recurrent("GRU", backward=False), {"Global": {"aten.addmm": 34560},
                                                         "GRU": {"aten.addmm": 34560}}),
    "gru": (_recurrent("GRU"), {"Global": {"aten.addmm": 34560, "aten.mm": 52992},
                                "GRU": {"aten.addmm": 34560, "aten.mm": 52992}}),
    "gru_input_grad": (_recurrent("GRU", x_grad=True), {
        "Global": {"aten.addmm": 34560, "aten.mm": 64512},
        "GRU": {"aten.addmm": 34560, "aten.mm": 64512}}),
    "gru_initial_state_grad": (_recurrent("GRU", h0_grad=True), {
        "Global": {"aten.addmm": 34560, "aten.mm": 57600},
        "GRU": {"aten.addmm": 34560, "aten.mm": 57600}}),
    "gru_no_bias": (_recurrent("GRU", bias=False), {"Global": {"aten.mm": 87552},
                                                    "GRU": {"aten.mm": 87552}}),
    "gru_packed": (_recurrent("GRU", packed=True), {
        "Global": {"aten.addmm": 23040, "aten.mm": 33792},
        "GRU": {"aten.addmm": 23040, "aten.mm": 33792}}),
    "gru_packed_bidirectional": (_recurrent("GRU", packed=True, bidirectional=True), {
        "Global": {"aten.addmm": 46080, "aten.mm": 70656},
        "GRU": {"aten.addmm": 46080, "aten.mm": 70656}}),
    "rnn_two_layers": (_recurrent("RNN", num_layers=2), {
        "Global": {"aten.addmm": 26880, "aten.mm": 46848},
        "RNN": {"aten.addmm": 26880, "aten.mm": 46848}}),
    "lstm_projection": (_recurrent("LSTM", proj_size=4), {
        "Global": {"aten.addmm": 23040, "aten.mm": 34944},
        "LSTM": {"aten.addmm": 23040, "aten.mm": 34944}}),
    "gru_cell": (_cell("GRUCell"), {"Global": {"aten.addmm": 6912, "aten.mm": 6912},
                                    "GRUCell": {"aten.addmm": 6912, "aten.mm": 6912}}),
    "gru_cell_grads": (_cell("GRUCell", h_grad=True), {
        "Global": {"aten.addmm": 6912, "aten.mm": 13824},
        "GRUCell": {"aten.addmm": 6912, "aten.mm": 13824}}),
    "rnn_cell_no_bias_unbatched": (_cell("RNNCell", bias=False, batched=False), {
        "Global": {"aten.mm": 768}, "RNNCell": {"aten.mm": 768}}),
    "embedding": (lambda t: t.nn.functional.embedding(
        t.tensor([1, 2]), t.randn(5, 3, requires_grad=True)).sum().backward(), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_counts_are_pytorchs(name):
    program, expected = CASES[name]
    assert _count(ember, program) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_counts_equal_the_oracle(name):
    torch = pytest.importorskip("torch")
    program, _ = CASES[name]
    assert _count(ember, program) == _count(torch, program)


@pytest.mark.parametrize("program", [_mlp, _cnn], ids=["mlp", "cnn"])
def test_module_hierarchy_equals_the_oracle(program):
    torch = pytest.importorskip("torch")
    assert _count(ember, program) == _count(torch, program)


def test_module_hierarchy():
    counts = _count(ember, _mlp)
    # forward 2*7*(10*20 + 20*30 + 30*5), backward the weights' gradients of all three and
    # the inputs' of the last two (the first layer's input needs none)
    assert counts["Global"] == {"aten.addmm": 13300, "aten.mm": 13300 + 13300 - 2800}
    assert set(counts) == {"Global", "Sequential", "Sequential.0", "Sequential.2",
                           "Sequential.2.0", "Sequential.2.1"}
    assert counts["Sequential.0"] == {"aten.addmm": 2800, "aten.mm": 2800}
    assert counts["Sequential.2"] == {"aten.addmm": 10500, "aten.mm": 21000}


def test_attention_counts_with_pytorchs_attention_formulas():
    # PyTorch's CPU build counts 0 here (its CPU kernel has no formula); Ember counts what
    # PyTorch counts for the same call on a GPU
    q = ember.randn(2, 4, 6, 8, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    shape = (2, 4, 6, 8)
    assert _counts(fc) == {"Global": {
        "aten._scaled_dot_product_flash_attention": sdpa_flop_count(shape, shape, shape),
        "aten._scaled_dot_product_flash_attention_backward":
            sdpa_backward_flop_count(shape, shape, shape, shape)}}
    assert sdpa_flop_count(shape, shape, shape) == 2 * (2 * 4 * 6 * 6 * 8 * 2)
    # grouped-query attention: 4 query heads over 2 key/value heads
    k = ember.randn(2, 2, 6, 8)
    with FlopCounterMode(display=False) as fc:
        F.scaled_dot_product_attention(q.detach(), k, k, enable_gqa=True)
    assert fc.get_total_flops() == sdpa_flop_count((2, 4, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8))


def test_lstm_counts_what_pytorchs_native_path_counts():
    # PyTorch's CPU build runs this LSTM through oneDNN and counts 0; Ember counts it as
    # PyTorch's own path counts an LSTM with a projection: input products, per-step hidden
    # products (4 gates), backward the weights' and the hidden state's gradients
    with FlopCounterMode(display=False) as fc:
        _recurrent("LSTM")(ember)
    inputs = 2 * 15 * 8 * 64
    hidden = 2 * 15 * 16 * 64
    backward = inputs + (hidden - 2 * 3 * 16 * 64) + hidden  # (no h0 gradient at step one)
    assert _counts(fc)["Global"] == {"aten.addmm": inputs + hidden, "aten.mm": backward}


@pytest.mark.parametrize("h_grad", [False, True])
def test_lstm_cell(h_grad):
    with FlopCounterMode(display=False) as fc:
        _cell("LSTMCell", h_grad=h_grad)(ember)
    expected = {"aten.addmm": 9216, "aten.mm": 18432 if h_grad else 9216}  # PyTorch's
    # (h and c come from one fused node, and only h is used: ModuleTracker's hook on the
    # cell's outputs still fires, with None for c, so the backward is the module's too)
    assert _counts(fc) == {"Global": expected, "LSTMCell": expected}


def test_no_grad_counts_forward_only():
    w = ember.randn(16, 8, requires_grad=True)
    with ember.no_grad(), FlopCounterMode(display=False) as fc:
        F.linear(ember.randn(4, 8), w)
    assert _counts(fc) == {"Global": {"aten.mm": 1024}}


def test_backward_of_a_retained_graph_counts_each_time():
    x = ember.randn(4, 8, requires_grad=True)
    w = ember.randn(8, 3, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        y = (x @ w).sum()
        y.backward(retain_graph=True)
        y.backward()
    assert _counts(fc) == {"Global": {"aten.mm": 192 + 2 * 384}}


def test_autograd_function_backward_is_counted_through_its_ops():
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a @ a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g @ a.mT + a.mT @ g

    a = ember.randn(4, 4, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        Square.apply(a).sum().backward()
    assert _counts(fc) == {"Global": {"aten.mm": 3 * 128}}


def test_total_and_table():
    with FlopCounterMode(display=False) as fc:
        ember.randn(3, 4) @ ember.randn(4, 5)
    assert fc.get_total_flops() == 120
    # tabulate's layout, as PyTorch prints it (a column of plain numbers printed with "g")
    assert fc.get_table() == ("Module       FLOP    % Total\n"
                              "---------  ------  ---------\n"
                              "Global        120    100.00%\n"
                              "- aten.mm     120    100.00%")
    with FlopCounterMode(display=False) as fc:
        ember.randn(3, 4) + 1
    assert fc.get_total_flops() == 0
    assert fc.get_table() == ("Module      FLOP    % Total\n"
                              "--------  ------  ---------\n"
                              "Global         0         0%")


def test_table_with_modules_and_depth(capsys):
    model = nn.Sequential(nn.Linear(1000, 2000), nn.Linear(2000, 3000))
    with FlopCounterMode(depth=1) as fc:
        model(ember.randn(500, 1000)).sum().backward()
    printed = capsys.readouterr().out
    assert printed == ("Module           FLOP    % Total\n"
                       "------------  -------  ---------\n"
                       "Sequential    22.000B    100.00%\n"
                       "- aten.addmm   8.000B     36.36%\n"
                       "- aten.mm     14.000B     63.64%\n")
    assert fc.get_table(2).splitlines()[5:] == [
        "Sequential.0   4.000B     18.18%",
        "- aten.addmm   2.000B      9.09%",
        "- aten.mm      2.000B      9.09%",
        "Sequential.1  18.000B     81.82%",
        "- aten.addmm   6.000B     27.27%",
        "- aten.mm     12.000B     54.55%"]


def test_counts_reset_on_each_entry_and_keys_are_ops_aten_packets():
    fc = FlopCounterMode(display=False)
    for _ in range(2):
        with fc:
            ember.randn(3, 4) @ ember.randn(4, 5)
        assert fc.get_flop_counts() == {"Global": {aten.mm: 120}}


def test_custom_mapping_and_register_flop_formula():
    with FlopCounterMode(display=False, custom_mapping={aten.mm: lambda *a, **k: 7}) as fc:
        ember.randn(3, 4) @ ember.randn(4, 5)
    assert fc.get_total_flops() == 7
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.mm"):
        register_flop_formula(aten.mm)(mm_flop)
    with pytest.raises(ValueError, match="expected each target to be OpOverloadPacket"):
        register_flop_formula("mm")(mm_flop)
    assert flop_registry[aten.mm](ember.empty(2, 3), ember.empty(3, 4)) == 48


def test_custom_op_with_a_registered_formula():
    lib = ember.library.Library("flops_test", "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
        packet = ember.ops.flops_test.twice
        register_flop_formula(packet)(lambda x_shape, out_shape=None: x_shape[0] * 10)
        try:
            with FlopCounterMode(display=False) as fc:
                packet(ember.ones(3))
            assert _counts(fc) == {"Global": {"flops_test.twice": 30}}
        finally:
            del flop_registry[packet]
    finally:
        lib._destroy()


def test_mods_argument_warns():
    with pytest.warns(UserWarning, match="mods argument is not needed anymore"):
        FlopCounterMode(nn.Linear(2, 2), display=False)


def test_formulas():
    assert mm_flop((3, 4), (4, 5)) == 120
    with pytest.raises(AssertionError, match="inner dimensions must match"):
        mm_flop((3, 4), (5, 5))
    assert conv_flop_count([2, 3, 8, 8], [4, 3, 3, 3], [2, 4, 6, 6]) == 15552
    # transposed: per point of the input
    assert conv_flop_count([2, 4, 5, 5], [4, 3, 3, 3], [2, 3, 11, 11], transposed=True) == 10800
    with pytest.raises(AssertionError, match="must be a multiple"):
        sdpa_flop_count((1, 3, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8))


def test_profiler_still_sees_backward_inside_a_counter():
    from ember.profiler import ProfilerActivity, profile

    x = ember.randn(4, 8, requires_grad=True)
    w = ember.randn(8, 3, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with FlopCounterMode(display=False) as fc:
            (x @ w).sum().backward()
    names = {e.name for e in prof.events()}
    assert any("MmBackward" in n for n in names)
    assert fc.get_total_flops() == 192 + 2 * 192
    # and the counter is off again: a later backward runs without it
    (x @ w).sum().backward()
    assert fc.get_total_flops() == 192 + 2 * 192


def test_other_threads_are_not_counted():
    def work():
        ember.randn(3, 4) @ ember.randn(4, 5)

    with FlopCounterMode(display=False) as fc:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        work()
    assert fc.get_total_flops() == 120


# -- ModuleTracker --------------------------------------------------------------------------

class _Tracked(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(2, 3)
        self.rest = nn.Sequential(nn.ReLU(), nn.Linear(3, 1))
        self.heads = nn.ModuleDict({"a": nn.Linear(1, 1)})

    def forward(self, x):
        return self.heads["a"](self.rest(self.first(x)))


def test_module_tracker_forward_and_backward():
    seen = []
    model = _Tracked()
    with ModuleTracker() as tracker:
        def record(where):
            def hook(*args):
                seen.append((where, set(tracker.parents), tracker.is_bw))
            return hook

        with ember.no_grad():
            model(ember.randn(1, 2))  # names every submodule from the root
        model.rest[1].register_forward_pre_hook(record("pre"))
        x = ember.randn(4, 2, requires_grad=True)
        h = model.first(x)
        h.register_hook(record("grad"))
        model.rest[1].weight.register_hook(record("weight grad"))
        y = model.heads["a"](model.rest(h))
        y.sum().backward()
        assert tracker.parents == {"Global"}  # reset when the backward has finished
        assert not tracker.is_bw
    assert seen[0] == ("pre", {"Global", "_Tracked.rest", "_Tracked.rest.1"}, False)
    grads = {where: (parents, is_bw) for where, parents, is_bw in seen[1:]}
    assert set(grads) == {"grad", "weight grad"}
    assert grads["grad"][1] and grads["weight grad"][1]
    # the first layer's backward begins when the gradient of its output arrives (its hook,
    # registered in forward, runs before the one registered on h after it)
    assert "_Tracked.first" in grads["grad"][0]


def test_module_tracker_names_submodules_by_path():
    model = _Tracked()
    names = []
    with ModuleTracker() as tracker:
        model.heads["a"].register_forward_pre_hook(
            lambda m, a: names.append(sorted(tracker.parents)))
        model(ember.randn(1, 2))
        # a module called alone before its root is named by its class
        lone = nn.Linear(1, 1)
        lone.register_forward_pre_hook(lambda m, a: names.append(sorted(tracker.parents)))
        lone(ember.randn(1, 1))
    assert names == [["Global", "_Tracked", "_Tracked.heads.a"],  # (a ModuleDict never runs)
                     ["Global", "Linear"]]


# -- the engine's final callbacks -----------------------------------------------------------

def test_queue_callback_runs_after_the_backward_in_order():
    x = ember.ones(3, requires_grad=True)
    log = []

    def hook(g):
        engine = Variable._execution_engine
        engine.queue_callback(lambda: log.append(("first", x.grad is not None)))
        engine.queue_callback(lambda: (log.append("second"),
                                       engine.queue_callback(lambda: log.append("third"))))
        return g

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert log == [("first", True), "second", "third"]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        Variable._execution_engine.queue_callback(print)
