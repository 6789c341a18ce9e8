"""``nn.Module`` and the containers where they once differed from PyTorch 2.13.

Each scenario takes the library (``ember`` or ``torch``) and returns what a program could
observe (values, key orders, error types and messages, warnings) as a list of strings. The
plain tests check Ember's result against the expected one; ``test_same_as_torch`` runs every
scenario in both libraries and compares (``ember`` written as ``torch``), skipped without
torch.
"""

import copy
import re
import warnings
from collections import OrderedDict
from collections.abc import Mapping

import pytest

import ember


def _observe(fn, lib) -> list[str]:
    """``fn(lib, out)``'s ``out(...)`` calls, its exception and its warnings, as text."""
    events: list[str] = []

    def out(*xs) -> None:
        events.append(" ".join(str(x) for x in xs))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(lib, out)
        except Exception as e:
            events.append(f"raised {type(e).__name__}: {e}")
    events += [f"warned {w.category.__name__}: {w.message}" for w in caught]
    return [re.sub("ember", "torch", e) for e in events]


def _error(out, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as e:
        out(type(e).__name__, e)
    else:
        out("no error")


# -- the scenarios -------------------------------------------------------------------------------

def state_dict_positional_args_warning(lib, out):
    out(list(lib.nn.Linear(1, 1).state_dict(OrderedDict(), "p.")))


def public_state_dict_post_hook_must_return_none(lib, out):
    m = lib.nn.Linear(1, 1)

    def replaces(module, state_dict, prefix, local_metadata):
        return {"x": 1}

    m.register_state_dict_post_hook(replaces)
    _error(out, m.state_dict)
    # the same function cannot then go through the private API, which lets it replace
    _error(out, m._register_state_dict_hook, replaces)


def private_state_dict_hook_replaces_at_root(lib, out):
    m = lib.nn.Sequential(lib.nn.Linear(1, 1))
    m._register_state_dict_hook(lambda module, sd, prefix, meta: {"root": 1})
    m[0]._register_state_dict_hook(lambda module, sd, prefix, meta: {"child": 1})
    out(m.state_dict())


def private_load_pre_hook_without_module(lib, out):
    m = lib.nn.Linear(1, 1)

    def pre(*args):
        out(len(args), type(args[0]).__name__, args[1] == "")
        args[0]["weight"] = lib.full((1, 1), 7.0)  # the state dict is the first argument

    m._register_load_state_dict_pre_hook(pre)
    m._register_load_state_dict_pre_hook(lambda *a: out(len(a), type(a[0]).__name__),
                                         with_module=True)
    m.register_load_state_dict_pre_hook(lambda *a: out(len(a), type(a[0]).__name__))
    m.load_state_dict({"weight": lib.zeros(1, 1), "bias": lib.zeros(1)})
    out(m.weight.item())


def load_pre_hook_follows_deepcopy(lib, out):
    m = lib.nn.Linear(1, 1)
    m._register_load_state_dict_pre_hook(lambda module, *a: out(module is m), with_module=True)
    clone = copy.deepcopy(m)
    clone.load_state_dict(clone.state_dict())
    m.load_state_dict(m.state_dict())


def buffer_over_plain_attribute(lib, out):
    m = lib.nn.Module()
    m.x = 1
    _error(out, setattr, m, "x", lib.nn.Buffer(lib.zeros(1)))
    out(m.x, list(m._buffers))


def buffer_before_module_init(lib, out):
    class Early(lib.nn.Module):
        def __init__(self):
            self.x = lib.nn.Buffer(lib.zeros(1))

    _error(out, Early)


def register_buffer_keeps_its_persistent_argument(lib, out):
    m = lib.nn.Module()
    m.register_buffer("x", lib.nn.Buffer(lib.zeros(1), persistent=False))
    out(list(m.state_dict()), sorted(m._non_persistent_buffers_set))
    m.y = lib.nn.Buffer(lib.zeros(1), persistent=False)  # assignment reads the mark
    out(list(m.state_dict()), sorted(m._non_persistent_buffers_set))


def register_buffer_without_persistent_argument(lib, out):
    class Old(lib.nn.Module):
        def register_buffer(self, name, tensor):
            out("own register_buffer", name)
            super().register_buffer(name, tensor)

    m = Old()
    m.a = lib.nn.Buffer(lib.zeros(1))
    _error(out, setattr, m, "b", lib.nn.Buffer(lib.zeros(1), persistent=False))
    out(list(m._buffers))


def parameter_deepcopy_drops_grad(lib, out):
    p = lib.nn.Parameter(lib.zeros(2))
    p.grad = lib.ones(2)
    q = copy.deepcopy(p)
    out(type(q).__name__, q.grad, q.requires_grad)
    m = lib.nn.Linear(2, 1)
    m(lib.ones(2)).sum().backward()
    out(copy.deepcopy(m).weight.grad, m.weight.grad is not None)


def to_complex_warns(lib, out):
    m = lib.nn.Linear(1, 1).to(lib.complex64)
    out(m.weight.dtype, m.bias.dtype)


def load_state_dict_takes_any_mapping(lib, out):
    class Frozen(Mapping):
        def __init__(self, d):
            self.d = d

        def __getitem__(self, k):
            return self.d[k]

        def __iter__(self):
            return iter(self.d)

        def __len__(self):
            return len(self.d)

    m = lib.nn.Linear(1, 1)
    out(m.load_state_dict(Frozen({"weight": lib.ones(1, 1), "bias": lib.zeros(1)})))
    out(m.weight.item())
    _error(out, m.load_state_dict, [("weight", lib.ones(1, 1))])


def load_assign_marks_checkpoint_metadata(lib, out):
    m = lib.nn.Sequential(lib.nn.Linear(1, 1))
    sd = m.state_dict()
    m.load_state_dict(sd, assign=True)
    out(list(sd._metadata.items()))


def load_non_tensor_into_uninitialized_parameter(lib, out):
    m = lib.nn.Module()
    m.p = lib.nn.UninitializedParameter()
    _error(out, m.load_state_dict, {"p": 3})


def sequential_del_renumbers_names(lib, out):
    nn = lib.nn
    s = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh()), ("c", nn.GELU())]))
    del s[0]
    out(list(s._modules), [type(m).__name__ for m in s])
    s = nn.Sequential(*[nn.ReLU(), nn.Tanh(), nn.GELU(), nn.SiLU()])
    del s[1:3]
    out(list(s._modules), [type(m).__name__ for m in s])


def sequential_insert_by_key(lib, out):
    nn = lib.nn
    s = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh())]))
    s.insert(2, nn.GELU())  # at the end: the names stay
    out(list(s._modules))
    # a name would have to move: PyTorch's KeyError, after "2" has moved up to "3"
    _error(out, s.insert, 1, nn.SiLU())
    out(list(s._modules))
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.insert(-1, nn.GELU())
    out(list(s._modules), [type(m).__name__ for m in s])


def sequential_imul_in_place(lib, out):
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    t = s
    s *= 2
    out(s is t, list(s._modules), s[0] is s[2])
    named = nn.Sequential(OrderedDict([("x", nn.ReLU())]))
    _error(out, named.__imul__, 2)
    _error(out, s.__imul__, 0)
    _error(out, s.__imul__, 1.5)


def dict_update_messages(lib, out):
    _error(out, lib.nn.ModuleDict().update, [3])
    _error(out, lib.nn.ParameterDict().update, [3])
    _error(out, lib.nn.ModuleDict().update, [("a",)])


SCENARIOS = [
    state_dict_positional_args_warning,
    public_state_dict_post_hook_must_return_none,
    private_state_dict_hook_replaces_at_root,
    private_load_pre_hook_without_module,
    load_pre_hook_follows_deepcopy,
    buffer_over_plain_attribute,
    buffer_before_module_init,
    register_buffer_keeps_its_persistent_argument,
    register_buffer_without_persistent_argument,
    parameter_deepcopy_drops_grad,
    to_complex_warns,
    load_state_dict_takes_any_mapping,
    load_assign_marks_checkpoint_metadata,
    load_non_tensor_into_uninitialized_parameter,
    sequential_del_renumbers_names,
    sequential_insert_by_key,
    sequential_imul_in_place,
    dict_update_messages,
]

# what PyTorch 2.13 shows (``ember`` written as ``torch``)
EXPECTED = {
    state_dict_positional_args_warning: [
        "['p.weight', 'p.bias']",
        "warned FutureWarning: Positional args are being deprecated, use kwargs instead. Refer "
        "to https://pytorch.org/docs/main/generated/torch.nn.Module.html"
        "#torch.nn.Module.state_dict for details."],
    public_state_dict_post_hook_must_return_none: [
        "RuntimeError state_dict post-hook must return None",
        "RuntimeError Cannot register the same function as the state dict post hook that was "
        "previously registered via register_state_dict_post_hook"],
    private_state_dict_hook_replaces_at_root: ["{'root': 1}"],
    private_load_pre_hook_without_module: [
        "7 OrderedDict True", "8 Linear", "8 Linear", "7.0"],
    load_pre_hook_follows_deepcopy: ["False", "True"],
    buffer_over_plain_attribute: ["KeyError \"attribute 'x' already exists\"", "1 []"],
    buffer_before_module_init: [
        "AttributeError cannot assign buffer before Module.__init__() call"],
    register_buffer_keeps_its_persistent_argument: [
        "['x'] []", "['x'] ['y']"],
    register_buffer_without_persistent_argument: [
        "own register_buffer a",
        "RuntimeError Registering a non-persistent buffer on a Module subclass that implements "
        "register_buffer() without the persistent argument is not allowed.",
        "['a']"],
    parameter_deepcopy_drops_grad: ["Parameter None True", "None True"],
    to_complex_warns: [
        "torch.complex64 torch.complex64",
        "warned UserWarning: Complex modules are a new feature under active development whose "
        "design may change, and some modules might not work as expected when using complex "
        "tensors as parameters or buffers. Please file an issue at "
        "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if a complex "
        "module does not work as expected."],
    load_state_dict_takes_any_mapping: [
        "<All keys matched successfully>", "1.0",
        "TypeError Expected state_dict to be dict-like, got <class 'list'>."],
    load_assign_marks_checkpoint_metadata: [
        "[('', {'version': 1, 'assign_to_params_buffers': True}), "
        "('0', {'version': 1, 'assign_to_params_buffers': True})]"],
    load_non_tensor_into_uninitialized_parameter: [
        "RuntimeError Error(s) in loading state_dict for Module:\n\tWhile copying the parameter "
        "named \"p\", expected torch.Tensor or Tensor-like object from checkpoint but received "
        "<class 'int'>"],
    sequential_del_renumbers_names: [
        "['0', '1'] ['Tanh', 'GELU']", "['0', '1'] ['ReLU', 'SiLU']"],
    sequential_insert_by_key: [
        "['a', 'b', '2']", "KeyError '1'", "['a', 'b', '2', '3']",
        "['0', '1', '2'] ['ReLU', 'GELU', 'Tanh']"],
    sequential_imul_in_place: [
        "True ['0', '1', '2', '3'] True", "KeyError '0'",
        "ValueError Non-positive multiplication factor 0 for "
        "<class 'torch.nn.modules.container.Sequential'>",
        "TypeError unsupported operand type(s) for *: "
        "<class 'torch.nn.modules.container.Sequential'> and <class 'float'>"],
    dict_update_messages: [
        "TypeError ModuleDict update sequence element #0 should be Iterable; isint",
        "TypeError ParameterDict update sequence element #0 should be Iterable; isint",
        "ValueError ModuleDict update sequence element #0 has length 1; 2 is required"],
}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_ember(scenario):
    assert _observe(scenario, ember) == EXPECTED[scenario]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_same_as_torch(scenario):
    torch = pytest.importorskip("torch")
    assert _observe(scenario, ember) == _observe(scenario, torch)


# -- ``torch.__future__``'s switches ------------------------------------------------------------

def _convert_with_grad(lib):
    m = lib.nn.Linear(2, 2)
    w = m.weight
    w.grad = lib.ones(2, 2)
    g = w.grad
    m.double()
    return [m.weight is w, w.dtype, m.weight.dtype, type(m.weight).__name__,
            m.weight.requires_grad, m.weight.grad.dtype, w.grad.dtype, m.weight.grad is g]


def _load_with_swap(lib):
    m = lib.nn.Linear(2, 2)
    w = m.weight
    zeros = {k: v.detach() * 0 for k, v in m.state_dict().items()}
    m.load_state_dict(zeros)
    copied = [m.weight is w, m.weight.abs().sum().item(), m.weight.requires_grad]
    m.load_state_dict({k: (v + 1).double() for k, v in zeros.items()}, assign=True)
    return copied + [m.weight is w, m.weight.dtype, m.weight.sum().item(),
                     type(m.weight).__name__, m.weight.requires_grad]


def _with_switch(lib, setter: str, value: bool, scenario):
    future = lib.__future__
    getter = setter.replace("set_", "get_", 1)
    before = getattr(future, getter)()
    getattr(future, setter)(value)
    try:
        return scenario(lib)
    finally:
        getattr(future, setter)(before)


_OVERWRITE = "set_overwrite_module_params_on_conversion"
_SWAP = "set_swap_module_params_on_conversion"


@pytest.mark.parametrize("setter, value, scenario, want", [
    (_OVERWRITE, False, _convert_with_grad,
     [True, ember.float64, ember.float64, "Parameter", True, ember.float64, ember.float64,
      True]),
    (_OVERWRITE, True, _convert_with_grad,
     [False, ember.float32, ember.float64, "Parameter", True, ember.float64, ember.float32,
      False]),
    (_SWAP, True, _convert_with_grad,  # the same objects, their contents swapped
     [True, ember.float64, ember.float64, "Parameter", True, ember.float64, ember.float64,
      True]),
    (_SWAP, True, _load_with_swap,
     [True, 0.0, True, True, ember.float64, 4.0, "Parameter", True]),
])
def test_future_switches_for_module_conversion(setter, value, scenario, want):
    assert ember.__future__.get_overwrite_module_params_on_conversion() is False
    assert ember.__future__.get_swap_module_params_on_conversion() is False
    got = _with_switch(ember, setter, value, scenario)
    assert got == want
    torch = pytest.importorskip("torch")
    expected = _with_switch(torch, setter, value, scenario)
    assert [str(x).replace("ember", "torch") for x in got] == [str(x) for x in expected]


def test_module_load_returning_its_input_is_refused_under_swap():
    class Loaded(ember.Tensor):
        def module_load(self, other, assign=False):
            return other

    m = ember.nn.Linear(2, 2)
    m.register_buffer("b", ember.zeros(2).as_subclass(Loaded))
    state = {k: v.detach().clone() for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError, match="module_load returned one of self or other"):
        _with_switch(ember, _SWAP, True, lambda lib: m.load_state_dict(state))


def _two_outputs_one_used(lib):
    class TwoOut(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.ones(2))

        def forward(self, x):
            return x * self.w * 2, x * self.w * 3

    m = TwoOut()
    seen = []
    m.register_full_backward_hook(
        lambda mod, gi, go: seen.append([None if g is None else g.tolist() for g in go]))
    x = lib.ones(2, requires_grad=True)
    a, _ = m(x)
    a.sum().backward()
    return seen + [m.w.grad.tolist(), x.grad.tolist()]


def test_full_backward_hook_sees_none_for_an_output_without_gradient():
    # PyTorch's hooks run before the node's gradients are materialized: the unused output's
    # grad_output is None (Ember gave zeros)
    want = [[[1.0, 1.0], None], [2.0, 2.0], [2.0, 2.0]]
    assert _two_outputs_one_used(ember) == want
    torch = pytest.importorskip("torch")
    assert _two_outputs_one_used(torch) == want


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_parameter_of_a_sparse_tensor_stays_sparse(layout):
    import copy
    import pickle

    dense = ember.tensor([[0.0, 2.0], [3.0, 0.0]])
    data = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()
    p = ember.nn.Parameter(data)
    assert isinstance(p, ember.nn.Parameter) and p.requires_grad
    assert p.layout is data.layout and p.to_dense().tolist() == dense.tolist()
    assert repr(p).startswith("Parameter containing:\ntensor(")
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert isinstance(q, ember.nn.Parameter) and q.layout is data.layout
        assert q.to_dense().tolist() == dense.tolist() and q.requires_grad
    if layout == "coo":  # SparseAdam's check of its parameters can now see it
        with pytest.raises(ValueError, match=r"^Sparse params at indices \[\[0, 0\]\]: "
                                             "SparseAdam requires dense parameter tensors"):
            ember.optim.SparseAdam([p])
