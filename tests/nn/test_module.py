"""ember.nn.Module: registration, traversal, get_/set_submodule, state_dict, moves, to_empty,
skip_init, hooks (with kwargs too), repr, Parameter."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import skip_init
from ember.testing import register_test_device


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)
        self.register_buffer("running", ember.zeros(2))
        self.register_buffer("scratch", ember.ones(1), persistent=False)

    def forward(self, x):
        return self.fc2(ember.relu(self.fc1(x)))


# -- Parameter ---------------------------------------------------------------------------------

def test_parameter_shares_data_and_requires_grad():
    t = ember.zeros(3)
    p = nn.Parameter(t)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    with ember.no_grad():
        p.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0]
    assert not nn.Parameter(ember.zeros(1), requires_grad=False).requires_grad


def test_parameter_repr_and_copies_keep_class():
    cpu = nn.Parameter(ember.tensor([1.0, 2.0], device="cpu"))  # a CPU repr: no device suffix
    assert repr(cpu) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and q.requires_grad
        assert q.tolist() == [1.0, 2.0]
        assert q._data is not p._data


def test_parameter_of_int_tensor_raises():
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(ember.tensor([1, 2]))


# -- registration ------------------------------------------------------------------------------

def test_setattr_registers_parameters_buffers_modules():
    net = Net()
    assert list(net._parameters) == []
    assert list(net._modules) == ["fc1", "fc2"]
    assert list(net._buffers) == ["running", "scratch"]
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight",
                                                      "fc2.bias"]
    assert [n for n, _ in net.named_buffers()] == ["running", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "fc2"]
    assert len(list(net.parameters(recurse=False))) == 0
    assert [n for n, _ in net.named_parameters(prefix="m")][0] == "m.fc1.weight"


def test_reassigning_and_deleting():
    net = Net()
    net.fc1 = None
    assert "fc1" in net._modules and net.fc1 is None
    assert [n for n, _ in net.named_modules()] == ["", "fc2"]
    net.fc2.bias = None
    assert net.fc2.bias is None
    del net.running
    assert "running" not in net._buffers
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'running'"):
        _ = net.running
    net.running = nn.Buffer(ember.ones(3), persistent=False)
    assert "running" in net._non_persistent_buffers_set


def test_registration_errors():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign 'ember.FloatTensor' as parameter "
                                        "'weight'"):
        net.fc1.weight = ember.zeros(4, 3, device="cpu")  # the CPU type name
    with pytest.raises(KeyError, match="attribute 'fc1' already exists"):
        net.register_buffer("fc1", ember.zeros(1))
    with pytest.raises(KeyError, match="parameter name can"):
        net.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'x'"):
        net.register_buffer("x", 3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        net.add_module("y", 3)
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        net.register_parameter("z", _fake_nonleaf_parameter())

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _fake_nonleaf_parameter():
    """A Parameter carrying a grad_fn (what a computed tensor wrapped as one would be)."""
    p = nn.Parameter(ember.ones(2))
    p.grad_fn = (p * 2).grad_fn
    return p


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert len(list(seq.modules())) == 2
    assert len(list(seq.named_modules(remove_duplicate=False))) == 3


def test_get_submodule_parameter_buffer():
    net = nn.Sequential(OrderedDict(block=Net()))
    assert net.get_submodule("block.fc1") is net.block.fc1
    assert net.get_parameter("block.fc2.bias") is net.block.fc2.bias
    assert net.get_buffer("block.running") is net.block.running
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        net.get_submodule("block.nope")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("block.fc1.weight")
    with pytest.raises(AttributeError, match="`running` is not an nn.Parameter"):
        net.get_parameter("block.running")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("block.fc1.weight")


def test_dir_lists_registered_names():
    names = dir(Net())
    for n in ("fc1", "running", "forward", "training"):
        assert n in names


# -- state_dict --------------------------------------------------------------------------------

def test_state_dict_round_trip_with_buffers():
    a, b = Net(), Net()
    a.running.fill_(3.0)
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["running", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert sd._metadata[""] == {"version": 1} and "fc1" in sd._metadata
    assert not sd["fc1.weight"].requires_grad and type(sd["fc1.weight"]) is ember.Tensor
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight
    w_before = b.fc1.weight
    result = b.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    assert b.fc1.weight is w_before  # copied in place
    np.testing.assert_array_equal(b.fc1.weight.detach().numpy(), a.fc1.weight.detach().numpy())
    assert b.running.tolist() == [3.0, 3.0]
    assert b.fc1.weight._data is not a.fc1.weight._data


def test_state_dict_prefix_and_destination():
    dest = OrderedDict()
    out = nn.Linear(2, 2).state_dict(destination=dest, prefix="lin.")
    assert out is dest and list(dest) == ["lin.weight", "lin.bias"]


def test_load_state_dict_strict_and_non_strict():
    net = Net()
    sd = net.state_dict()
    del sd["fc1.bias"]
    sd["extra"] = ember.zeros(1)
    sd["fc3.weight"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd)
    msg = str(err.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:\n\t")
    assert 'Missing key(s) in state_dict: "fc1.bias". ' in msg
    assert 'Unexpected key(s) in state_dict: "extra", "fc3.weight". ' in msg
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias"]
    assert result.unexpected_keys == ["extra", "fc3.weight"]
    assert repr(result) == ("_IncompatibleKeys(missing_keys=['fc1.bias'], "
                            "unexpected_keys=['extra', 'fc3.weight'])")


def test_load_state_dict_size_mismatch():
    net = nn.Linear(3, 2)
    sd = nn.Linear(4, 2).state_dict()
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with "
                                           r"shape ember.Size\(\[2, 4\]\) from checkpoint, the "
                                           r"shape in current model is ember.Size\(\[2, 3\]\)\."):
        net.load_state_dict(sd)


def test_load_state_dict_assign_replaces_tensors():
    net = nn.Linear(2, 2)
    sd = {"weight": ember.ones(2, 2), "bias": ember.zeros(2)}
    net.load_state_dict(sd, assign=True)
    assert isinstance(net.weight, nn.Parameter) and net.weight.requires_grad
    assert net.weight._data is sd["weight"]._data


def test_non_persistent_buffer_not_saved():
    net = Net()
    assert "scratch" not in net.state_dict()
    net.load_state_dict(net.state_dict())  # strict: scratch is not expected


def test_state_dict_hooks_and_extra_state():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 5

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    m = WithExtra()
    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append("pre"))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append("post"))
    m.register_load_state_dict_post_hook(lambda mod, keys: calls.append("load_post"))
    sd = m.state_dict()
    assert sd["_extra_state"] == {"value": 5}
    m2 = WithExtra()
    m2.value = 0
    m2.load_state_dict(sd)
    assert m2.value == 5
    m.load_state_dict(sd)
    assert calls == ["pre", "post", "load_post"]


def test_load_from_state_dict_override_sees_prefix():
    seen = []

    class Custom(nn.Linear):
        def _load_from_state_dict(self, state_dict, prefix, *args):
            seen.append(prefix)
            super()._load_from_state_dict(state_dict, prefix, *args)

    seq = nn.Sequential(Custom(2, 2))
    seq.load_state_dict(seq.state_dict())
    assert seen == ["0."]


# -- modes, moves and casts --------------------------------------------------------------------

def test_train_eval_propagate():
    net = Net()
    assert net.training and net.fc1.training
    assert net.eval() is net
    assert not net.fc1.training
    net.train()
    assert net.fc2.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)


def test_double_float_keep_parameter_objects():
    net = Net()
    w = net.fc1.weight
    net.double()
    assert net.fc1.weight is w and w.dtype == ember.float64
    assert isinstance(w, nn.Parameter) and w.requires_grad
    assert net.running.dtype == ember.float64
    net.float()
    assert w.dtype == ember.float32
    net.half()
    assert w.dtype == ember.float16
    net.to(ember.float32)
    assert w.dtype == ember.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        net.to(ember.int64)


def test_int_buffer_keeps_dtype_on_to_double():
    m = nn.Module()
    m.register_buffer("steps", ember.tensor(3))
    m.double()
    assert m.steps.dtype == ember.int64


def test_to_device_moves_params_and_grads():
    register_test_device("testdev")
    net = Net()
    net(ember.randn(2, 3)).sum().backward()
    w = net.fc1.weight
    net.to("testdev")
    assert net.fc1.weight is w
    assert w.device == ember.device("testdev", 0)
    assert w.grad.device == ember.device("testdev", 0)
    assert net.running.device == ember.device("testdev", 0)
    out = net(ember.randn(2, 3, device="testdev"))
    assert out.device == ember.device("testdev", 0)
    net.cpu()
    assert w.device == ember.device("cpu")


def test_apply_zero_grad_requires_grad():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Linear", "Net"]
    net(ember.randn(4, 3)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert net.fc1.weight.grad.abs().sum().item() == 0.0
    net.zero_grad()
    assert net.fc1.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    assert net.share_memory() is net


def test_deepcopy_and_pickle_module():
    net = Net()
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert isinstance(clone.fc1.weight, nn.Parameter)
        np.testing.assert_array_equal(clone.fc1.weight.detach().numpy(),
                                      net.fc1.weight.detach().numpy())
        assert clone.fc1.weight is not net.fc1.weight
        x = ember.randn(2, 3)
        np.testing.assert_allclose(clone(x).detach().numpy(), net(x).detach().numpy())


def test_forward_missing_raises():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


# -- forward hooks -----------------------------------------------------------------------------

def test_forward_hook_order_results_and_removal():
    lin = nn.Linear(2, 2)
    order = []
    h1 = lin.register_forward_pre_hook(lambda m, args: order.append("pre1"))
    lin.register_forward_pre_hook(lambda m, args: order.append("pre0"), prepend=True)
    h3 = lin.register_forward_hook(lambda m, args, out: order.append("post"))
    lin.register_forward_hook(lambda m, args, kwargs, out: out * 0, with_kwargs=True)
    out = lin(ember.ones(1, 2))
    assert order == ["pre0", "pre1", "post"]
    assert out.abs().sum().item() == 0.0
    h1.remove()
    h3.remove()
    order.clear()
    lin(ember.ones(1, 2))
    assert order == ["pre0"]


def test_forward_pre_hook_replaces_args_and_kwargs():
    class Add(nn.Module):
        def forward(self, x, y=0):
            return x + y

    m = Add()
    m.register_forward_pre_hook(lambda mod, args: args[0] * 10)
    assert m(ember.tensor(1.0)).item() == 10.0
    m2 = Add()
    m2.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"y": ember.tensor(5.0)}),
                                 with_kwargs=True)
    assert m2(ember.tensor(1.0)).item() == 6.0
    m3 = Add()
    m3.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m3(ember.tensor(1.0))


def test_always_call_hook_runs_on_error():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == [None]


def test_handle_as_context_manager_and_global_hook():
    lin = nn.Linear(2, 2)
    seen = []
    with lin.register_forward_hook(lambda m, a, o: seen.append(1)):
        lin(ember.ones(2))
    lin(ember.ones(2))
    assert seen == [1]
    with nn.register_module_forward_hook(lambda m, a, o: seen.append(2)):
        lin(ember.ones(2))
    lin(ember.ones(2))
    assert seen == [1, 2]


# -- backward hooks ----------------------------------------------------------------------------

def test_full_backward_hook_receives_grads():
    lin = nn.Linear(3, 2).double()
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    seen = {}

    def pre_hook(module, grad_output):
        seen["pre"] = grad_output

    def hook(module, grad_input, grad_output):
        seen["grad_input"] = grad_input
        seen["grad_output"] = grad_output

    lin.register_full_backward_pre_hook(pre_hook)
    lin.register_full_backward_hook(hook)
    y = lin(x)
    g = ember.randn(4, 2, dtype=ember.float64)
    y.backward(g)
    np.testing.assert_allclose(seen["pre"][0].numpy(), g.numpy())
    np.testing.assert_allclose(seen["grad_output"][0].numpy(), g.numpy())
    expected = g.numpy() @ lin.weight.detach().numpy()
    np.testing.assert_allclose(seen["grad_input"][0].numpy(), expected)
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_full_backward_hook_can_replace_grads():
    lin = nn.Linear(3, 2)
    x = ember.randn(4, 3, requires_grad=True)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    lin(x).sum().backward()
    assert x.grad.abs().sum().item() == 0.0
    assert lin.weight.grad.abs().sum().item() > 0


def test_backward_pre_hook_can_scale_grad_output():
    lin = nn.Linear(3, 2)
    x = ember.randn(4, 3)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
    lin(x).sum().backward()
    ref = nn.Linear(3, 2)
    ref.load_state_dict(lin.state_dict())
    ref(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * ref.weight.grad.numpy(), rtol=1e-6)


def test_backward_hook_without_input_grad_gets_none():
    lin = nn.Linear(3, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(ember.randn(4, 3)).sum().backward()
    assert seen == [((None,), ember.Size([4, 2]))]


def test_backward_hook_removal():
    lin = nn.Linear(3, 2)
    seen = []
    h = lin.register_full_backward_hook(lambda m, gi, go: seen.append(1))
    h.remove()
    lin(ember.randn(1, 3, requires_grad=True)).sum().backward()
    assert seen == []
    assert not lin._backward_hooks


# -- repr --------------------------------------------------------------------------------------

def test_repr_nested_indentation():
    net = Net()
    assert repr(net) == ("Net(\n"
                         "  (fc1): Linear(in_features=3, out_features=4, bias=True)\n"
                         "  (fc2): Linear(in_features=4, out_features=2, bias=True)\n"
                         ")")

    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Identity())

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Multi()) == ("Multi(\n  a=1\n  b=2\n  (inner): Sequential(\n"
                             "    (0): Identity()\n  )\n)")


def test_call_without_hooks_is_forward():
    lin = nn.Linear(2, 3)
    x = ember.randn(5, 2)
    np.testing.assert_array_equal(lin(x).detach().numpy(), lin.forward(x).detach().numpy())


# -- skip_init, to_empty ------------------------------------------------------------------------

def test_skip_init():
    m = skip_init(nn.Linear, 5, 3, bias=False, dtype=ember.float64)
    assert type(m) is nn.Linear and m.weight.shape == (3, 5) and m.bias is None
    assert m.weight.dtype == ember.float64 and m.weight.device == ember.device("cpu")
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip "
                                           "initialization"):
        skip_init(NoDevice, 3)


def test_to_empty_keeps_parameter_objects():
    m = nn.BatchNorm1d(3)
    w = m.weight
    assert m.to_empty(device="cpu") is m
    assert m.weight is w and m.weight.shape == (3,) and m.running_mean.shape == (3,)
    assert m.num_batches_tracked.dtype == ember.int64


# -- Module: hooks with kwargs, submodule access --------------------------------------------

class AddKw(nn.Module):
    def forward(self, x, *, bias=0.0):
        return x + bias


def test_forward_pre_hook_with_kwargs_rewrites_args_and_kwargs():
    m = AddKw()
    seen = []

    def hook(module, args, kwargs):
        seen.append((args[0].tolist(), dict(kwargs)))
        return (args[0] * 10,), {"bias": kwargs["bias"] + 1}

    m.register_forward_pre_hook(hook, with_kwargs=True)
    out = m(ember.tensor([1.0]), bias=2.0)
    assert seen == [([1.0], {"bias": 2.0})] and out.tolist() == [13.0]

    def bad(module, args, kwargs):
        return args

    m.register_forward_pre_hook(bad, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of "
                                           r"\(new_args, new_kwargs\)"):
        m(ember.tensor([1.0]), bias=2.0)


def test_forward_hook_with_kwargs_prepend_and_always_call():
    m = AddKw()
    order = []
    m.register_forward_hook(lambda mod, args, out: order.append("plain"))
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("kw", kwargs["bias"])),
                            with_kwargs=True, prepend=True)
    m(ember.tensor([1.0]), bias=3.0)
    assert order == [("kw", 3.0), "plain"]

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    called = []
    b.register_forward_hook(lambda mod, args, out: called.append(out), always_call=True)
    b.register_forward_hook(lambda mod, args, out: called.append("never"))
    with pytest.raises(ValueError, match="boom"):
        b(ember.ones(1))
    assert called == [None]


ACCESS_CASES = [("get_submodule", "0.foo"), ("get_submodule", "0.weight"),
                ("get_submodule", "5"), ("get_parameter", "0.foo"),
                ("get_parameter", "1.running_mean"), ("get_buffer", "1.weight"),
                ("get_buffer", "1.foo")]


@pytest.mark.parametrize("method,target", ACCESS_CASES)
def test_submodule_access_errors_match_torch(method, target):
    torch = pytest.importorskip("torch")
    e = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    t = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    with pytest.raises(AttributeError) as t_err:
        getattr(t, method)(target)
    with pytest.raises(AttributeError) as e_err:
        getattr(e, method)(target)
    assert str(e_err.value) == str(t_err.value)


def test_submodule_access():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.BatchNorm1d(2)))
    assert m.get_submodule("") is m and m.get_submodule("1.0") is m[1][0]
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.0.running_var") is m[1][0].running_var
    with pytest.raises(AttributeError, match="Linear has no attribute `foo`"):
        m.get_submodule("0.foo")


def test_set_submodule():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    relu = nn.Tanh()
    m.set_submodule("1.0", relu)
    assert m[1][0] is relu
    m.set_submodule("1.extra", nn.ReLU())  # new names are fine unless strict
    assert isinstance(m[1].extra, nn.ReLU)
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        m.set_submodule("9", nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.set_submodule("0.weight", nn.ReLU())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
        m.set_submodule("", nn.ReLU())
    with pytest.raises(ValueError, match="`module` is not an nn.Module, found <class 'int'>"):
        m.set_submodule("0", 3)


def test_deepcopy_keeps_every_parameter_its_own():
    """Parameter.__deepcopy__ copies a transient detached tensor: that transient must stay
    alive through the deepcopy, or a later one reusing its id would get the same copy back
    (two parameters sharing one tensor; AveragedModel failed that way in a CI run)."""
    model = nn.Sequential(*[nn.Linear(3, 3) for _ in range(20)])
    for _ in range(20):
        clone = copy.deepcopy(model)
        params = list(clone.parameters())
        assert len(params) == 40
        assert len({id(p) for p in params}) == 40
        for a, b in zip(model.parameters(), params):
            assert a is not b and ember.equal(a, b)
