"""The last PyTorch names of ember-nn (issue 18): the functional optimizers at
``ember.optim.<name>.<name>`` and the global optimizer step hooks; the global module hooks of
``ember.nn.modules.module``, ``rnn.apply_permutation`` and
``utils.consume_prefix_in_state_dict_if_present``; ``ember.nn.parallel``'s ``scatter``,
``scatter_kwargs``, ``gather``, ``replicate``, ``parallel_apply`` and friends.

Behaviour is compared with PyTorch where it runs on a CPU-only machine (the functional
optimizers step by step, hook orders, structures, errors); the parallel helpers need an
accelerator device, which a NumPy-backed two-device test device stands in for.
"""

from __future__ import annotations

import collections
import importlib
import inspect
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.testing import register_test_device

module_mod = importlib.import_module("ember.nn.modules.module")
dp_module = importlib.import_module("ember.nn.parallel.data_parallel")

OPTIMIZERS = ["sgd", "adam", "adamw", "adamax", "adadelta", "adagrad", "nadam", "radam",
              "rmsprop", "asgd", "rprop"]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def host(t):
    return t.detach().cpu().numpy()


# -- functional optimizers -------------------------------------------------------------------

def _functional(lib, name):
    return getattr(importlib.import_module(f"{lib.__name__}.optim.{name}"), name)


def _tensor(lib, values, dtype="float64"):
    return lib.tensor(np.array(values), dtype=getattr(lib, dtype))


def _case(lib, name, rng_seed=0):
    """``(args, kwargs, state lists)`` of one functional optimizer over two parameters, built
    from the same numbers for ``lib`` = ember or torch."""
    rng = np.random.default_rng(rng_seed)
    shapes = [(3, 2), (4,)]
    params = [_tensor(lib, rng.standard_normal(s)) for s in shapes]

    def like(fill=0.0):
        return [lib.full(s, fill, dtype=lib.float64) for s in shapes]

    def steps(value=0.0):
        return [lib.tensor(value, dtype=lib.float32) for _ in shapes]

    lists = {
        "sgd": ([None, None],),
        "adam": (like(), like(), like(), steps()),
        "adamw": (like(), like(), [], steps()),  # no amsgrad: no max_exp_avg_sqs
        "adamax": (like(), like(), steps()),
        "adadelta": (like(), like(), steps()),
        "adagrad": (like(0.1), steps()),
        "nadam": (like(), like(), steps(1.0), steps()),
        "radam": (like(), like(), steps()),
        "rmsprop": (like(), like(), like(), steps()),
        "asgd": (like(), steps(1.0), steps(0.01), steps()),
        "rprop": (like(), like(0.01), steps()),
    }[name]
    kwargs = {
        "sgd": dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
                    maximize=False),
        "adam": dict(amsgrad=True, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, eps=1e-8,
                     maximize=True),
        "adamw": dict(amsgrad=False, beta1=0.8, beta2=0.9, lr=0.01, weight_decay=0.1, eps=1e-8,
                      maximize=False),
        "adamax": dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.02, weight_decay=0.1),
        "adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1, maximize=False),
        "adagrad": dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, eps=1e-10, maximize=False),
        "nadam": dict(beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, momentum_decay=4e-3,
                      eps=1e-8),
        "radam": dict(beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.1, eps=1e-8),
        "rmsprop": dict(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.1, momentum=0.5,
                        centered=True),
        "asgd": dict(lambd=1e-2, lr=0.01, t0=1, alpha=0.75, weight_decay=0.1),
        "rprop": dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2),
    }[name]
    if name in ("nadam", "radam"):
        kwargs["decoupled_weight_decay"] = True
    return params, list(lists), kwargs


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_functional_optimizer_matches_torch_step_by_step(torch, name):
    ours, theirs = _case(ember, name), _case(torch, name)
    fn_e, fn_t = _functional(ember, name), _functional(torch, name)
    rng = np.random.default_rng(1)
    for _ in range(4):
        grads = [rng.standard_normal(p.shape) for p in ours[0]]
        for lib, fn, (params, lists, kwargs) in ((ember, fn_e, ours), (torch, fn_t, theirs)):
            with lib.no_grad():
                fn(params, [_tensor(lib, g) for g in grads], *lists, **kwargs)
    for p_e, p_t in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(host(p_e), p_t.numpy(), rtol=1e-7, atol=1e-9)
    for list_e, list_t in zip(ours[1], theirs[1]):
        for s_e, s_t in zip(list_e, list_t):
            np.testing.assert_allclose(host(s_e), s_t.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_functional_signatures_match_torch(torch, name):
    def signature(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert signature(_functional(ember, name)) == signature(_functional(torch, name))


def test_optimizer_classes_step_through_their_functional_forms(monkeypatch):
    calls = []
    adam_module = importlib.import_module("ember.optim.adam")
    real = adam_module._single_tensor_adam

    def spy(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(adam_module, "_single_tensor_adam", spy)
    p = nn.Parameter(ember.ones(3))
    q = nn.Parameter(ember.ones(2))  # no gradient: left out of the lists, as in PyTorch
    p.grad = ember.ones(3)
    ember.optim.AdamW([p, q]).step()
    assert calls == [1]


@pytest.mark.parametrize("name,cls,options", [
    ("adam", "Adam", dict(amsgrad=True, weight_decay=0.1)),
    ("sgd", "SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.1)),
    ("rmsprop", "RMSprop", dict(momentum=0.5, centered=True)),
    ("rprop", "Rprop", {}),
])
def test_class_step_equals_its_functional_form(name, cls, options):
    """One implementation: the class over its state is the functional form over lists."""
    rng = np.random.default_rng(3)
    init = rng.standard_normal((4, 3))
    p = nn.Parameter(ember.tensor(init))
    opt = getattr(ember.optim, cls)([p], **options)
    grads = [rng.standard_normal((4, 3)) for _ in range(3)]
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
    q = ember.tensor(init)
    group = opt.param_groups[0]
    def zeros():
        return ember.zeros(4, 3, dtype=ember.float64)

    case = {
        "adam": lambda: ([zeros()], [zeros()], [zeros()], [ember.tensor(0.0)]),
        "sgd": lambda: ([None],),
        "rmsprop": lambda: ([zeros()], [zeros()], [zeros()], [ember.tensor(0.0)]),
        "rprop": lambda: ([zeros()], [zeros() + 0.01], [ember.tensor(0.0)]),
    }[name]()
    kwargs = {
        "adam": lambda: dict(amsgrad=True, beta1=0.9, beta2=0.999, lr=1e-3, weight_decay=0.1,
                             eps=1e-8, maximize=False),
        "sgd": lambda: dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.1,
                            nesterov=False, maximize=False),
        "rmsprop": lambda: dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0.5,
                                centered=True),
        "rprop": lambda: dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5,
                              etaplus=1.2),
    }[name]()
    assert group.get("lr") == kwargs.get("lr", group.get("lr"))
    fn = _functional(ember, name)
    for g in grads:
        fn([q], [ember.tensor(g)], *case, **kwargs)
    np.testing.assert_array_equal(host(p), host(q))


def test_sgd_functional_fills_the_momentum_buffers(torch):
    for lib in (ember, torch):
        p, g = lib.ones(2), lib.full((2,), 2.0)
        buffers = [None]
        _functional(lib, "sgd")([p], [g], buffers, weight_decay=0, momentum=0.9, lr=0.5,
                                dampening=0, nesterov=False, maximize=False)
        assert isinstance(buffers[0], lib.Tensor) and buffers[0] is not g
        np.testing.assert_array_equal(np.asarray(buffers[0].tolist()), [2.0, 2.0])
        np.testing.assert_array_equal(np.asarray(p.tolist()), [0.0, 0.0])


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "adagrad"])
def test_fused_grad_scale_and_found_inf_like_torch(torch, name):
    """``fused=True`` unscales the gradients in place; a nonzero ``found_inf`` skips the step
    (the step counts included)."""
    for found in (0.0, 1.0):
        results = []
        for lib in (ember, torch):
            params, lists, kwargs = _case(lib, name)
            grads = [lib.ones(p.shape, dtype=lib.float64) * 4 for p in params]
            _functional(lib, name)(params, grads, *lists, fused=True,
                                   grad_scale=lib.tensor(2.0), found_inf=lib.tensor(found),
                                   **kwargs)
            steps = lists[-1] if name != "sgd" else []
            results.append(([np.asarray(p.tolist()) for p in params],
                            [np.asarray(g.tolist()) for g in grads],
                            [float(s) for s in steps]))
        for a, b in zip(*results):
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, rtol=1e-7)


def test_functional_errors_are_torchs(torch):
    adam_args = dict(amsgrad=False, beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0, eps=1e-8,
                     maximize=False)
    for lib in (ember, torch):
        adam = _functional(lib, "adam")
        p, g = lib.zeros(2), lib.ones(2)
        m, v = lib.zeros(2), lib.zeros(2)
        with pytest.raises(RuntimeError, match="`state_steps` argument must contain a list of "
                                               "singleton tensors"):
            adam([p], [g], [m], [v], [], [1.0], **adam_args)
        with pytest.raises(AssertionError, match="Expected grad_scale and found_inf to be None"):
            adam([p], [g], [m], [v], [], [lib.tensor(0.0)], grad_scale=lib.tensor(1.0),
                 **adam_args)
        leaf = lib.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            _functional(lib, "sgd")([leaf], [g], [None], weight_decay=0, momentum=0, lr=0.1,
                                    dampening=0, nesterov=False, maximize=False)
        with pytest.raises(RuntimeError, match="`mu_products` argument must contain"):
            _functional(lib, "nadam")([p], [g], [m], [v], [1.0], [lib.tensor(0.0)], beta1=0.9,
                                      beta2=0.99, lr=0.1, weight_decay=0,
                                      momentum_decay=4e-3, eps=1e-8)
        with pytest.raises(TypeError):  # hyper-parameters are keyword-only and required
            adam([p], [g], [m], [v], [], [lib.tensor(0.0)])
    # under no_grad (as an optimizer's step runs) a leaf is fine
    leaf = nn.Parameter(ember.ones(2))
    with ember.no_grad():
        _functional(ember, "sgd")([leaf], [ember.ones(2)], [None], weight_decay=0, momentum=0,
                                  lr=0.5, dampening=0, nesterov=False, maximize=False)
    np.testing.assert_array_equal(host(leaf), [0.5, 0.5])


# -- global optimizer hooks ------------------------------------------------------------------

def _hook_events(lib):
    opt_mod = importlib.import_module(f"{lib.__name__}.optim.optimizer")
    events = []
    p = lib.nn.Parameter(lib.ones(2))
    p.grad = lib.ones(2)
    opt = lib.optim.SGD([p], lr=0.5)

    def record(tag):
        def hook(optimizer, args, kwargs):
            events.append((tag, optimizer is opt, len(args), args[0] is opt, dict(kwargs)))
        return hook

    handles = [opt_mod.register_optimizer_step_pre_hook(record("global pre")),
               opt.register_step_pre_hook(record("own pre")),
               opt.register_step_post_hook(record("own post")),
               opt_mod.register_optimizer_step_post_hook(record("global post"))]
    try:
        opt.step()
        opt.step(closure=None)
        handles[0].remove()
        handles[3].remove()
        opt.step()
        other = lib.optim.Adam([p])
        other.step()  # global hooks are gone for every optimizer
    finally:
        for h in handles:
            h.remove()
    return events, float(p.detach()[0])


def test_global_optimizer_hooks_run_in_torchs_order(torch):
    ours, theirs = _hook_events(ember), _hook_events(torch)
    assert ours == theirs
    assert [e[0] for e in ours[0][:4]] == ["global pre", "own pre", "own post", "global post"]


def test_global_optimizer_hooks_apply_to_every_optimizer_and_may_replace_args():
    from ember.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    seen = []
    loss = []

    def pre(optimizer, args, kwargs):
        seen.append(type(optimizer).__name__)
        return args, {"closure": lambda: loss.append(1) or 7.0}

    h1 = register_optimizer_step_pre_hook(pre)
    h2 = register_optimizer_step_post_hook(lambda o, a, k: seen.append("post"))
    try:
        p = nn.Parameter(ember.ones(1))
        p.grad = ember.ones(1)
        for cls in (ember.optim.SGD, ember.optim.Adam, ember.optim.LBFGS):
            assert cls([p], lr=0.1).step() == 7.0 or cls is ember.optim.LBFGS
    finally:
        h1.remove()
        h2.remove()
    assert seen == ["SGD", "post", "Adam", "post", "LBFGS", "post"]
    assert loss
    bad = register_optimizer_step_pre_hook(lambda o, a, k: 5)
    try:
        with pytest.raises(RuntimeError, match="must return None or a tuple of "
                                               r"\(new_args, new_kwargs\), but got 5"):
            ember.optim.SGD([p], lr=0.1).step()
    finally:
        bad.remove()


# -- global module hooks ---------------------------------------------------------------------

@pytest.fixture
def clean_global_backward_flag(monkeypatch):
    """A registered global backward hook fixes the kind (full or not) for the process, in
    PyTorch too: tests reset it."""
    monkeypatch.setattr(module_mod, "_global_is_full_backward_hook", None)
    torch = pytest.importorskip("torch")
    torch_module = importlib.import_module("torch.nn.modules.module")
    monkeypatch.setattr(torch_module, "_global_is_full_backward_hook", None)
    return torch


class _Scale:
    """Builds the same tiny model in either library."""

    @staticmethod
    def model(lib):
        class Scale(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor([2.0, 3.0]))

            def forward(self, x):
                return x * self.w

        return lib.nn.Sequential(Scale(), lib.nn.Tanh())


def _forward_backward_events(lib):
    mod = importlib.import_module(f"{lib.__name__}.nn.modules.module")
    events = []
    model = _Scale.model(lib)

    def name(m):
        return type(m).__name__

    handles = [
        mod.register_module_forward_pre_hook(lambda m, a: events.append(("g pre", name(m)))),
        mod.register_module_forward_hook(lambda m, a, o: events.append(("g fwd", name(m)))),
        mod.register_module_full_backward_pre_hook(
            lambda m, go: events.append(("g bw pre", name(m), _shapes(go)))),
        mod.register_module_full_backward_hook(
            lambda m, gi, go: events.append(("g bw", name(m), _shapes(gi), _shapes(go)))),
        model[0].register_forward_pre_hook(lambda m, a: events.append(("own pre", name(m)))),
        model[0].register_forward_hook(lambda m, a, o: events.append(("own fwd", name(m)))),
        model[0].register_full_backward_pre_hook(
            lambda m, go: events.append(("own bw pre", name(m)))),
        model[0].register_full_backward_hook(
            lambda m, gi, go: events.append(("own bw", name(m)))),
    ]
    try:
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        model(x).sum().backward()
        grads = (x.grad.tolist(), model[0].w.grad.tolist())
    finally:
        for h in handles:
            h.remove()
    model(lib.ones(2)).sum().backward()  # removed: nothing more is recorded
    return events, grads


def _shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


def test_global_module_hooks_fire_in_torchs_order(clean_global_backward_flag):
    torch = clean_global_backward_flag
    ours, theirs = _forward_backward_events(ember), _forward_backward_events(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1][0], theirs[1][0], rtol=1e-5)
    np.testing.assert_allclose(ours[1][1], theirs[1][1], rtol=1e-5)
    assert ours[0][0] == ("g pre", "Sequential")


def test_global_backward_hooks_can_replace_gradients(clean_global_backward_flag):
    torch = clean_global_backward_flag
    results = []
    for lib in (ember, torch):
        mod = importlib.import_module(f"{lib.__name__}.nn.modules.module")
        tanh = lib.nn.Tanh
        h1 = mod.register_module_full_backward_pre_hook(
            lambda m, go, tanh=tanh: tuple(g * 2 for g in go) if isinstance(m, tanh) else None)
        h2 = mod.register_module_full_backward_hook(
            lambda m, gi, go, tanh=tanh: tuple(g + 1 for g in gi) if isinstance(m, tanh) else None)
        try:
            x = lib.tensor([0.5, -1.0], requires_grad=True)
            lib.nn.Tanh()(x).sum().backward()
            results.append(x.grad.tolist())
        finally:
            h1.remove()
            h2.remove()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_global_non_full_backward_hook_like_torch(clean_global_backward_flag):
    torch = clean_global_backward_flag
    results = []
    for lib in (ember, torch):
        mod = importlib.import_module(f"{lib.__name__}.nn.modules.module")
        seen = []

        class Double(lib.nn.Module):
            def forward(self, x):
                return x * 2

        h = mod.register_module_backward_hook(
            lambda m, gi, go, seen=seen: seen.append(
                (type(m).__name__, [None if g is None else g.tolist() for g in gi],
                 [g.tolist() for g in go])))
        try:
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            double = Double()  # the hook holds its module weakly
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (double(x) * lib.tensor([3.0, 4.0])).sum().backward()
            seen.append([(w.category, str(w.message)) for w in caught])
        finally:
            h.remove()
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full "
                                               "backward hooks as a global Module hook"):
            mod.register_module_full_backward_hook(lambda *a: None)
        results.append(seen)
    assert results[0] == results[1]
    assert results[0][0][0] == "Double" and results[0][1][0][0] is FutureWarning


def test_non_full_and_full_hooks_do_not_mix_on_a_module():
    m = nn.Linear(2, 2)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full "
                                           "backward hooks on a single Module"):
        m.register_full_backward_hook(lambda *a: None)


def test_global_forward_hook_with_kwargs_and_always_call(torch):
    for lib in (ember, torch):
        mod = importlib.import_module(f"{lib.__name__}.nn.modules.module")
        seen = []

        class Fails(lib.nn.Module):
            def forward(self, x, *, boom=False):
                if boom:
                    raise ValueError("boom")
                return x

        h1 = mod.register_module_forward_hook(
            lambda m, a, k, o, seen=seen: seen.append(("kw", sorted(k))), with_kwargs=True)
        h2 = mod.register_module_forward_hook(
            lambda m, a, o, seen=seen: seen.append(("always", o is None)), always_call=True)
        try:
            Fails()(lib.ones(1), boom=False)
            with pytest.raises(ValueError, match="boom"):
                Fails()(lib.ones(1), boom=True)
        finally:
            h1.remove()
            h2.remove()
        assert seen == [("kw", ["boom"]), ("always", False), ("always", True)], lib.__name__


def _registration_events(lib):
    mod = importlib.import_module(f"{lib.__name__}.nn.modules.module")
    events = []

    def hook(kind):
        def record(module, name, value):
            events.append((kind, type(module).__name__, name, type(value).__name__))
        return record

    handles = [mod.register_module_buffer_registration_hook(hook("buffer")),
               mod.register_module_module_registration_hook(hook("module")),
               mod.register_module_parameter_registration_hook(hook("parameter"))]
    try:
        net = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        net.register_buffer("extra", None)
        net.add_module("act", lib.nn.ReLU())
        net.act = None
        net[0].bias = None
    finally:
        for h in handles:
            h.remove()
    lib.nn.Linear(1, 1)  # removed: not recorded
    return events


def test_global_registration_hooks_see_what_torch_sees(torch):
    ours, theirs = _registration_events(ember), _registration_events(torch)
    assert ours == theirs
    assert ("parameter", "Linear", "weight", "Parameter") in ours


def test_registration_hooks_can_replace_the_value():
    from ember.nn.modules.module import (
        register_module_buffer_registration_hook,
        register_module_module_registration_hook,
        register_module_parameter_registration_hook,
    )

    zero = nn.Parameter(ember.zeros(1))
    identity = nn.Identity()
    h1 = register_module_parameter_registration_hook(
        lambda m, n, p: zero if n == "bias" else None)
    h2 = register_module_buffer_registration_hook(
        lambda m, n, b: ember.full_like(b, 7.0) if n == "stats" else None)
    h3 = register_module_module_registration_hook(lambda m, n, s: identity)
    try:
        lin = nn.Linear(3, 1)
        holder = nn.Module()
        holder.register_buffer("stats", ember.zeros(2))
        seq = nn.Sequential(nn.ReLU())
    finally:
        for h in (h1, h2, h3):
            h.remove()
    assert lin.bias is zero
    np.testing.assert_array_equal(host(holder.stats), [7.0, 7.0])
    assert seq[0] is identity


# -- rnn.apply_permutation, utils.consume_prefix_in_state_dict_if_present ---------------------

def test_apply_permutation_warns_and_permutes_like_torch(torch):
    from ember.nn.modules.rnn import apply_permutation

    x = np.arange(24.0).reshape(2, 3, 4)
    perm = [2, 0, 1]
    with pytest.warns(FutureWarning, match="`apply_permutation` is deprecated"):
        ours = apply_permutation(ember.tensor(x), ember.tensor(perm))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        theirs = torch.nn.modules.rnn.apply_permutation(torch.tensor(x), torch.tensor(perm))
        ours0 = apply_permutation(ember.tensor(x), ember.tensor([1, 0]), dim=0)
    np.testing.assert_array_equal(host(ours), theirs.numpy())
    np.testing.assert_array_equal(host(ours0), x[[1, 0]])


def test_consume_prefix_matches_torch_and_loads_a_dataparallel_checkpoint(torch):
    from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present as ours

    theirs = torch.nn.modules.utils.consume_prefix_in_state_dict_if_present

    def state():
        sd = collections.OrderedDict(
            [("module.a", 1), ("module.b.c", 2), ("other", 3), ("modulex", 4)])
        sd._metadata = collections.OrderedDict(
            [("", {"v": 0}), ("module", {"v": 1}), ("module.b", {"v": 2}), ("x", {})])
        return sd

    a, b = state(), state()
    ours(a, "module.")
    theirs(b, "module.")
    assert list(a.items()) == list(b.items())
    assert list(a._metadata.items()) == list(b._metadata.items())

    wrapped = nn.DataParallel(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))
    sd = wrapped.state_dict()
    ours(sd, "module.")
    bare = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert bare.load_state_dict(sd).missing_keys == []
    np.testing.assert_array_equal(host(bare[0].weight), host(wrapped.module[0].weight))


# -- ember.nn.parallel -------------------------------------------------------------------------

@pytest.fixture
def two_devices(monkeypatch):
    """'testdev' (two NumPy-backed devices) stands in for CUDA, as in test_parallel.py."""
    register_test_device("testdev", 2)
    monkeypatch.setattr(dp_module, "_accelerator_type", lambda: "testdev")
    return ember.device("testdev", 0), ember.device("testdev", 1)


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(dp_module, "_accelerator_type", lambda: None)


def test_parallel_names_and_paths(torch):
    from ember.nn import parallel

    assert parallel.__all__ == ["replicate", "scatter", "parallel_apply", "gather",
                                "data_parallel", "DataParallel", "DistributedDataParallel"]
    sg = importlib.import_module("ember.nn.parallel.scatter_gather")
    assert sg.__all__ == importlib.import_module("torch.nn.parallel.scatter_gather").__all__
    pa = importlib.import_module("ember.nn.parallel.parallel_apply")
    assert pa.__all__ == importlib.import_module("torch.nn.parallel.parallel_apply").__all__
    assert parallel.scatter is sg.scatter and parallel.parallel_apply is pa.parallel_apply
    assert ember.nn.parallel.scatter_gather is sg


def test_scatter_of_structures_without_tensors_matches_torch(torch):
    from ember.nn.parallel import scatter
    from ember.nn.parallel.scatter_gather import scatter_kwargs

    Pair = collections.namedtuple("Pair", "a b")
    cases = [(5, [0, 1]), ([], [0, 1]), ({"a": 1, "b": "x"}, [0, 1]), ((1, 2), [0, 1, 2]),
             ([[1], (2,)], [0, 1]), (Pair(1, 2), [0, 1]), (None, [0])]
    for obj, devices in cases:
        assert scatter(obj, devices) == torch.nn.parallel.scatter(obj, devices), obj
    for args, kwargs, devices in [((1,), {"a": 1, "b": 2}, [0, 1]), ((), {"a": 1}, [0, 1]),
                                  ((), None, [0]), ((1, 2), None, [0, 1])]:
        assert (scatter_kwargs(args, kwargs, devices)
                == torch.nn.parallel.scatter_gather.scatter_kwargs(args, kwargs, devices))


def test_gather_of_structures_without_tensors_matches_torch(torch):
    from ember.nn.parallel import gather

    assert gather([None, None], 0) is None
    for lib_gather in (gather, torch.nn.parallel.gather):
        with pytest.raises(ValueError, match="All dicts must have the same number of keys"):
            lib_gather([{"a": 1}, {"a": 1, "b": 2}], 0)
        with pytest.raises(TypeError):
            lib_gather([(1,), (2,)], 0)


def test_cpu_tensors_raise_torchs_errors(torch, no_accelerator):
    from ember.nn.parallel import gather, parallel_apply, replicate, scatter

    def message(fn, *args):
        with pytest.raises(Exception) as info:
            fn(*args)
        return type(info.value), str(info.value)

    def calls(lib):  # CPU tensors and modules, whatever the default device
        cpu = {"device": "cpu"}
        linear, x = lib.nn.Linear(2, 2, **cpu), lib.ones(1, 2, **cpu)
        apply = lib.nn.parallel.parallel_apply
        return [(lib.nn.parallel.scatter, lib.arange(4.0, **cpu), ["cpu"]),
                (lib.nn.parallel.gather, [lib.ones(2, **cpu), lib.ones(2, **cpu)], "cpu"),
                (lib.nn.parallel.replicate, linear, ["cuda:0"]),
                (apply, [linear], [x]),
                (apply, [linear], [x, x]),
                (apply, [linear], [x], [{}, {}]),
                (apply, [linear], [x], None, [0, 1])]

    pairs = [lambda lib, i=i: calls(lib)[i] for i in range(7)]
    for make in pairs:
        e_fn, *e_args = make(ember)
        t_fn, *t_args = make(torch)
        assert message(e_fn, *e_args) == message(t_fn, *t_args)
    assert replicate(nn.Linear(2, 2), []) == [] == torch.nn.parallel.replicate(
        torch.nn.Linear(2, 2), [])
    del gather, parallel_apply, scatter


def test_get_a_var_and_is_namedtuple_match_torch(torch):
    from ember.nn.parallel.parallel_apply import get_a_var
    from ember.nn.parallel.scatter_gather import is_namedtuple

    t = ember.ones(1)
    assert get_a_var([1, {"a": t}]) is t
    assert get_a_var({"k": (2, t)}) is t
    assert get_a_var(3) is None and get_a_var([1, "x"]) is None
    Pair = collections.namedtuple("Pair", "a b")
    for obj in (Pair(1, 2), (1, 2), [1, 2]):
        with pytest.warns(FutureWarning, match="`is_namedtuple` is deprecated"):
            ours = is_namedtuple(obj)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            assert ours == torch.nn.parallel.scatter_gather.is_namedtuple(obj)


def test_scatter_and_gather_tensors_across_devices(two_devices):
    from ember.nn.parallel import gather, scatter

    d0, d1 = two_devices
    x = ember.arange(10.0).reshape(5, 2).to(d0).requires_grad_()
    chunks = scatter(x, [0, 1])
    assert isinstance(chunks, tuple) and [c.device for c in chunks] == [d0, d1]
    np.testing.assert_array_equal(host(chunks[0]), np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(host(chunks[1]), np.arange(6.0, 10.0).reshape(2, 2))
    parts = scatter({"x": x, "n": 3, "pair": (x, "tag")}, [d0, "testdev:1"], dim=1)
    assert [p["n"] for p in parts] == [3, 3] and parts[1]["pair"][1] == "tag"
    assert parts[1]["x"].shape == (5, 1) and parts[1]["x"].device == d1
    assert len(scatter(ember.ones(1, device=d0), [0, 1])) == 1  # chunk: fewer parts
    out = gather(chunks, "testdev:0")
    assert out.device == d0
    np.testing.assert_array_equal(host(out), host(x))
    (out * ember.arange(10.0).reshape(5, 2).to(d0)).sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.arange(10.0).reshape(5, 2))
    on_cpu = gather([{"y": c} for c in chunks], -1)
    assert on_cpu["y"].device == ember.device("cpu")
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        vec = gather([ember.tensor(1.0, device=d0), ember.tensor(2.0, device=d1)], 0)
    np.testing.assert_array_equal(host(vec), [1.0, 2.0])


def test_replicate_parallel_apply_gather_is_data_parallel(two_devices):
    """PyTorch's DataParallel step from its parts: the output and the gradients equal those
    of the module on the whole batch."""
    from ember.nn.parallel import gather, parallel_apply, replicate, scatter

    d0, d1 = two_devices
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(d0)
    x = ember.randn(6, 3).to(d0)
    inputs = scatter(x, [0, 1])
    replicas = replicate(model, [0, 1])
    assert len(replicas) == 2 and list(replicas[0].parameters()) == []
    assert replicas[1][0].weight.device == d1 and replicas[0][0].weight.device == d0
    assert set(replicas[1][0]._former_parameters) == {"weight", "bias"}
    outputs = parallel_apply(replicas, inputs)
    y = gather(outputs, 0)
    y.square().sum().backward()
    grads = [host(p.grad) for p in model.parameters()]
    model.zero_grad()
    expected = model(x)
    expected.square().sum().backward()
    np.testing.assert_allclose(host(y), host(expected), rtol=1e-6)
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, host(p.grad), rtol=1e-5)


def test_replicate_shares_buffers_and_detach(two_devices):
    from ember.nn.parallel import replicate

    d0, d1 = two_devices
    bn = nn.BatchNorm1d(2).to(d0)
    r0, r1 = replicate(bn, [0, 1])
    assert r0.running_mean is bn.running_mean  # the buffers on the source device: the same
    assert r1.running_mean.device == d1
    lin = nn.Linear(2, 2).to(d0)
    detached = replicate(lin, [0, 1], detach=True)
    assert detached[0].weight is lin.weight  # PyTorch: devices[0] keeps the tensors
    assert not detached[1].weight.requires_grad and detached[1].weight.device == d1
    linked = replicate(lin, [0])
    assert linked[0].weight.grad_fn is not None and linked[0].weight is not lin.weight
    with pytest.raises(RuntimeError, match=r"All tensors must be on devices\[0\]"):
        replicate(lin, [1, 0])


def test_parallel_apply_threads_kwargs_grad_mode_and_errors(two_devices):
    from ember.nn.parallel import parallel_apply

    d0, d1 = two_devices

    class Probe(nn.Module):
        def forward(self, x, scale=1.0):
            if scale < 0:
                raise KeyError("negative")
            return x * scale, ember.is_grad_enabled(), x.device

    xs = [ember.ones(2, device=d0), ember.ones(2, device=d1)]
    with ember.no_grad():
        outs = parallel_apply([Probe(), Probe()], xs, [{"scale": 2.0}, {"scale": 3.0}])
    assert [o[1] for o in outs] == [False, False]
    assert [o[2] for o in outs] == [d0, d1]
    np.testing.assert_array_equal(host(outs[1][0]), [3.0, 3.0])
    single = parallel_apply([Probe()], [(ember.ones(1, device=d1), 4.0)], devices=["testdev:1"])
    np.testing.assert_array_equal(host(single[0][0]), [4.0])
    with pytest.raises(KeyError, match="Caught KeyError in replica 1 on device 1"):
        parallel_apply([Probe(), Probe()], xs, [{}, {"scale": -1.0}])
    with pytest.raises(RuntimeError, match="no device was provided and no tensor input"):
        parallel_apply([Probe(), Probe()], [(1,), (2,)])
