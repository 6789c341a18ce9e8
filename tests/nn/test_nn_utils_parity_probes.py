"""ember.nn.utils (parametrize, parametrizations, prune, the older spectral_norm and
weight_norm, stateless, convert_parameters, fusion, memory_format) against PyTorch 2.13, from
differential probes.

What the probes found, each pinned so that it is checked without PyTorch: random pruning masks
(PyTorch prunes the entries of the *largest* uniform draws, so the same seed gives the same
mask only from the same end of the ranking); a pruning method that was never applied has no
``_tensor_name`` (AttributeError, not an assertion); the message for a bad element returned by
a multi-tensor ``right_inverse`` on assignment; ``norm_except_dim`` (and so both weight_norms)
of a 1-d tensor, which PyTorch norms entry by entry. Where PyTorch is installed, the same
programs also run in both libraries and are compared, on these and on the behaviours that
already agreed (masks, parametrized values, state dict keys, hooks, errors).
"""

import importlib
import warnings

import numpy as np
import pytest

import ember
import ember.nn.utils.prune as prune
from ember.nn.utils import parametrizations, parametrize

try:
    import torch
    import torch.nn.utils.prune  # not imported by ``import torch``
except ImportError:  # the pinned checks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")


def _value(x):
    if hasattr(x, "detach"):
        return np.asarray(x.detach().cpu().tolist())
    return x


def _prune(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.prune")


def _arange_linear(lib, seed=0):
    """A bias-free Linear(6, 5) whose weight is -15 .. 14 (no RNG spent on it)."""
    m = lib.nn.Linear(6, 5, bias=False)
    with lib.no_grad():
        m.weight.copy_(lib.arange(30.0).reshape(5, 6) - 15)
    lib.manual_seed(seed)
    return m


# -- random pruning: the same seed, the same mask ------------------------------------------------

def test_random_unstructured_mask_is_pytorchs_for_the_same_seed():
    m = _arange_linear(ember)
    prune.random_unstructured(m, "weight", amount=0.4)
    assert m.weight_mask.int().tolist() == [[1, 0, 1, 1, 1, 0], [1, 0, 1, 0, 1, 1],
                                            [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 1, 0],
                                            [1, 0, 0, 1, 1, 1]]
    # one draw of rand_like was spent, as in PyTorch
    assert ember.rand(1).item() == pytest.approx(0.3051000237464905, abs=0)


def test_random_structured_mask_is_pytorchs_for_the_same_seed():
    m = _arange_linear(ember)
    prune.random_structured(m, "weight", amount=2, dim=0)
    assert m.weight_mask.int().tolist() == [[1] * 6, [1] * 6, [0] * 6, [0] * 6, [1] * 6]


def _random_programs(lib):
    p = _prune(lib)
    lib.manual_seed(0)
    m = lib.nn.Linear(6, 5)
    lib.manual_seed(42)
    p.random_unstructured(m, "weight", amount=7)
    p.random_unstructured(m, "weight", amount=0.5)  # a PruningContainer: the kept entries only
    p.random_structured(m, "weight", amount=0.5, dim=1)
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Linear(3, 2))
    lib.manual_seed(11)
    p.global_unstructured([(net[0], "weight"), (net[1], "weight"), (net[1], "bias")],
                          pruning_method=p.RandomUnstructured, amount=0.5)
    return [_value(t) for t in (m.weight_mask, m.weight, net[0].weight_mask,
                                net[1].weight_mask, net[1].bias_mask, lib.rand(2))]


@needs_torch
def test_random_pruning_programs_equal_pytorch():
    for got, expected in zip(_random_programs(ember), _random_programs(torch), strict=True):
        np.testing.assert_array_equal(got, expected)


# -- pruning: methods, containers, validation ----------------------------------------------------

def test_unapplied_method_has_no_tensor_name():
    method = prune.L1Unstructured(0.2)
    for call in (method.apply_mask, method.remove):
        with pytest.raises(AttributeError, match="'L1Unstructured' object has no attribute "
                                                 "'_tensor_name'"):
            call(ember.nn.Linear(2, 2))
    first = prune.L1Unstructured(amount=0.5)
    first._tensor_name = "w"
    with pytest.raises(AttributeError, match="'PruningContainer' object has no attribute "
                                             "'_tensor_name'"):
        prune.PruningContainer(first, first)


def _prune_programs(lib):
    p = _prune(lib)
    lib.manual_seed(0)
    m = lib.nn.Linear(6, 5)
    p.l1_unstructured(m, "weight", amount=0.3)
    p.ln_structured(m, "weight", amount=1, n=2, dim=0)
    p.custom_from_mask(m, "weight", lib.ones(5, 6))
    hook = list(m._forward_pre_hooks.values())[0]
    lib.manual_seed(0)
    c = lib.nn.Conv2d(3, 6, 2)
    p.ln_structured(c, "weight", amount=0.5, n=float("inf"), dim=1)
    p.ln_structured(c, "weight", amount=2, n=1, dim=-1,
                    importance_scores=lib.arange(72.0).reshape(6, 3, 2, 2))
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Linear(3, 2))
    p.l1_unstructured(net[0], "weight", amount=4)
    p.global_unstructured([(net[0], "weight"), (net[1], "weight")],
                          pruning_method=p.L1Unstructured, amount=0.5,
                          importance_scores={(net[1], "weight"): lib.ones(2, 3)})
    removed = lib.nn.Linear(4, 3)
    p.l1_unstructured(removed, "weight", amount=5)
    p.remove(removed, "weight")
    return ([type(hook).__name__, [type(h).__name__ for h in hook], hook._tensor_name,
             sorted(m.state_dict()), [n for n, _ in m.named_parameters()],
             p.is_pruned(net), p.is_pruned(removed), sorted(removed.state_dict()),
             type(removed.weight).__name__],
            [_value(t) for t in (m.weight_mask, m.weight, c.weight_mask, net[0].weight_mask,
                                 net[1].weight_mask, removed.weight)])


@needs_torch
def test_pruning_programs_equal_pytorch():
    got, got_arrays = _prune_programs(ember)
    expected, expected_arrays = _prune_programs(torch)
    assert got == expected
    for g, e in zip(got_arrays, expected_arrays, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


#: (id, program, exception type, PyTorch 2.13's message)
PRUNE_ERRORS = [
    ("negative", lambda p, lib: p.l1_unstructured(lib.nn.Linear(4, 3), "weight", amount=-1),
     ValueError, "amount=-1 should either be a float in the range [0, 1] or a non-negative "
     "integer"),
    ("fraction", lambda p, lib: p.l1_unstructured(lib.nn.Linear(4, 3), "weight", amount=1.5),
     ValueError, "amount=1.5 should either be a float in the range [0, 1] or a non-negative "
     "integer"),
    ("type", lambda p, lib: p.random_unstructured(lib.nn.Linear(4, 3), "weight", amount="a"),
     TypeError, "Invalid type for amount: a. Must be int or float."),
    ("too-many", lambda p, lib: p.l1_unstructured(lib.nn.Linear(4, 3), "weight", amount=13),
     ValueError, "amount=13 should be smaller than the number of parameters to prune=12"),
    ("structured-1d", lambda p, lib: p.ln_structured(lib.nn.Linear(4, 3), "bias", 1, 2, 0),
     ValueError, "Structured pruning can only be applied to multidimensional tensors. Found "
     "tensor of shape torch.Size([3]) with 1 dims"),
    ("structured-dim", lambda p, lib: p.ln_structured(lib.nn.Linear(4, 3), "weight", 1, 2, 2),
     IndexError, "Invalid index 2 for tensor of size torch.Size([3, 4])"),
    ("custom-shape", lambda p, lib: p.custom_from_mask(lib.nn.Linear(4, 3), "weight",
                                                       lib.ones(4, 3)),
     AssertionError, "default_mask shape torch.Size([3, 4]) must match self.mask shape "
     "torch.Size([4, 3])"),
    ("global-structured", lambda p, lib: p.global_unstructured(
        [(lib.nn.Linear(4, 3), "weight")], pruning_method=p.LnStructured, amount=1, n=2, dim=0),
     TypeError, "Only \"unstructured\" PRUNING_TYPE supported for the `pruning_method`. Found "
     "method <class 'torch.nn.utils.prune.LnStructured'> of type structured"),
    ("global-scores", lambda p, lib: p.global_unstructured(
        [(lib.nn.Linear(4, 3), "weight")], pruning_method=p.L1Unstructured,
        importance_scores=[1], amount=1),
     TypeError, "global_unstructured(): importance_scores must be of type dict"),
    ("remove-unpruned", lambda p, lib: p.remove(lib.nn.Linear(4, 3), "weight"), ValueError,
     "Parameter 'weight' of module Linear(in_features=4, out_features=3, bias=True) has to be "
     "pruned before pruning can be removed"),
]


@pytest.mark.parametrize("program,exc,message", [e[1:] for e in PRUNE_ERRORS],
                         ids=[e[0] for e in PRUNE_ERRORS])
def test_prune_errors_are_pytorchs(program, exc, message):
    with pytest.raises(exc) as info:
        program(prune, ember)
    assert str(info.value) == message.replace("torch.", "ember.")  # ember names itself
    if torch is not None:
        with pytest.raises(exc) as expected:
            program(_prune(torch), torch)
        assert str(expected.value) == message


def test_failed_pruning_leaves_the_module_as_it_was():
    m = ember.nn.Linear(4, 3)
    weight = m.weight
    with pytest.raises(ValueError):
        prune.l1_unstructured(m, "weight", amount=13)
    assert m.weight is weight and sorted(m.state_dict()) == ["bias", "weight"]
    assert not m._forward_pre_hooks


# -- parametrize ---------------------------------------------------------------------------------

class _Split(ember.nn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, x):
        return x * 0.25, x * 0.75


def test_multi_tensor_right_inverse_bad_element_message():
    m = ember.nn.Linear(4, 3)
    parametrize.register_parametrization(m, "weight", _Split())
    m.parametrizations.weight[0].right_inverse = lambda x: (x, 3)
    with pytest.raises(ValueError) as info:
        m.weight = ember.ones(3, 4)
    assert str(info.value) == ("'right_inverse' must return a sequence of tensors or "
                               "reference-type opaques. Got element 1 of type int.")


def _parametrize_program(lib):
    class Scale(lib.nn.Module):
        def forward(self, x):
            return x * 2.0

        def right_inverse(self, x):
            return x / 2.0

    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return x * 0.25, x * 0.75

    P = lib.nn.utils.parametrize
    lib.manual_seed(0)
    m = lib.nn.Linear(4, 3)
    P.register_parametrization(m, "weight", Scale())
    P.register_parametrization(m, "weight", Scale())
    P.register_parametrization(m, "bias", Split())
    m.weight = lib.ones(3, 4)
    facts = [type(m).__name__, P.type_before_parametrizations(m).__name__,
             sorted(m.state_dict()), [n for n, _ in m.named_parameters()],
             P.is_parametrized(m), P.is_parametrized(m, "bias")]
    arrays = [m.weight, m.parametrizations.weight.original, m.parametrizations.bias.original0]
    m(lib.ones(2, 4)).sum().backward()
    arrays.append(m.parametrizations.weight.original.grad)
    P.remove_parametrizations(m, "bias")
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    facts += [type(m).__name__, sorted(m.state_dict()), type(m.bias).__name__]
    arrays += [m.weight, m.bias]
    return facts, [_value(a) for a in arrays]


@needs_torch
def test_parametrize_program_equals_pytorch():
    got, got_arrays = _parametrize_program(ember)
    expected, expected_arrays = _parametrize_program(torch)
    assert got == expected
    for g, e in zip(got_arrays, expected_arrays, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)


# -- weight norm of a 1-d tensor -----------------------------------------------------------------

def test_norm_except_dim_of_a_vector_is_entrywise():
    from ember.nn.utils.weight_norm import norm_except_dim

    v = ember.tensor([3.0, -4.0, 0.5])
    assert norm_except_dim(v, 2, 0).tolist() == [3.0, 4.0, 0.5]
    assert norm_except_dim(v, 2, -1).item() == pytest.approx(float(np.sqrt(25.25)))
    t = ember.arange(24.0).reshape(2, 3, 4)
    assert norm_except_dim(t, 2, 1).shape == (1, 3, 1)
    assert norm_except_dim(t, 2, -2).shape == (1, 3, 1)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-3, 2\], but got 3"):
        norm_except_dim(t, 2, 3)


def test_weight_norm_of_a_bias_keeps_one_magnitude_per_entry():
    m = ember.nn.Linear(4, 3)
    with ember.no_grad():
        m.bias.copy_(ember.tensor([0.5, -0.25, 2.0]))
    parametrizations.weight_norm(m, "bias")
    assert m.parametrizations.bias.original0.tolist() == [0.5, 0.25, 2.0]
    assert m.bias.tolist() == [0.5, -0.25, 2.0]
    old = ember.nn.Linear(4, 3)
    with ember.no_grad():
        old.bias.copy_(ember.tensor([0.5, -0.25, 2.0]))
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        ember.nn.utils.weight_norm(old, "bias")
    assert old.bias_g.shape == (3,) and old.bias_g.tolist() == [0.5, 0.25, 2.0]


def _norms_program(lib):
    PZ = lib.nn.utils.parametrizations
    out = []
    for dim in (0, 1, -1, None):
        lib.manual_seed(0)
        c = lib.nn.Conv2d(2, 3, 3)
        PZ.weight_norm(c, dim=dim)
        PZ.weight_norm(c, "bias")
        out += [c.parametrizations.weight.original0, c.weight, c.bias]
    lib.manual_seed(0)
    m = lib.nn.Linear(5, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.nn.utils.weight_norm(m, "bias")
        lib.nn.utils.weight_norm(m, dim=1)
    out += [m.weight_g, m.bias_g, m.weight, m.bias]
    return [_value(t) for t in out]


@needs_torch
def test_weight_norms_equal_pytorch():
    for g, e in zip(_norms_program(ember), _norms_program(torch), strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


# -- orthogonal and spectral norm ----------------------------------------------------------------

ORTHOGONAL = [((4, 4), None, True), ((4, 4), "cayley", True), ((4, 4), "householder", True),
              ((5, 3), "matrix_exp", True), ((3, 5), None, True), ((3, 5), "cayley", True),
              ((5, 3), "householder", False), ((3, 5), "householder", False),
              ((4, 4), "matrix_exp", False)]


def _orthogonal_program(lib, shape, orthogonal_map, use_trivialization):
    lib.manual_seed(0)
    m = lib.nn.Linear(shape[1], shape[0])
    lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=orthogonal_map,
                                             use_trivialization=use_trivialization)
    out = [m.weight, m.parametrizations.weight.original]
    if use_trivialization or orthogonal_map == "householder":
        lib.manual_seed(5)  # the completion of a non-square base draws from the global RNG
        m.weight = lib.randn(*shape)
        out += [m.weight, m.parametrizations.weight.original]
    m(lib.ones(2, shape[1])).sum().backward()
    out.append(m.parametrizations.weight.original.grad)
    return sorted(m.state_dict()), [_value(t) for t in out]


@needs_torch
@pytest.mark.parametrize("shape,orthogonal_map,use_trivialization", ORTHOGONAL,
                         ids=[f"{s[0]}x{s[1]}-{m}-{t}" for s, m, t in ORTHOGONAL])
def test_orthogonal_equals_pytorch(shape, orthogonal_map, use_trivialization):
    keys, got = _orthogonal_program(ember, shape, orthogonal_map, use_trivialization)
    expected_keys, expected = _orthogonal_program(torch, shape, orthogonal_map,
                                                  use_trivialization)
    assert keys == expected_keys
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_orthogonal_errors_are_pytorchs():
    with pytest.raises(ValueError, match='^orthogonal_map has to be one of "matrix_exp", '
                                         '"cayley", "householder". Got: foo$'):
        parametrizations.orthogonal(ember.nn.Linear(3, 3), orthogonal_map="foo")
    with pytest.raises(ValueError, match="^Expected a matrix or batch of matrices. Got a "
                                         "tensor of 1 dimensions.$"):
        parametrizations.orthogonal(ember.nn.Linear(3, 3), "bias")
    m = parametrizations.orthogonal(ember.nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="^It is not possible to assign to the matrix "
                                                  "exponential or the Cayley parametrizations"):
        m.weight = ember.eye(3)


def _spectral_program(lib):
    out = []
    lib.manual_seed(0)
    m = lib.nn.Linear(5, 4)
    lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=2)
    out += [m.parametrizations.weight[0]._u, m.weight]
    m(lib.ones(2, 5)).sum().backward()
    out.append(m.parametrizations.weight.original.grad)
    m.eval()
    out += [m.weight, m.parametrizations.weight[0]._v]
    lib.manual_seed(0)
    t = lib.nn.ConvTranspose2d(3, 4, 2)
    lib.nn.utils.spectral_norm(t)
    t(lib.ones(1, 3, 2, 2))
    state = t.state_dict()
    out += [t.weight_u, t.weight]
    lib.nn.utils.remove_spectral_norm(t)
    out.append(t.weight)
    return ([list(state), dict(state._metadata[""]), sorted(m.state_dict()),
             sorted(t.state_dict()), len(t._state_dict_hooks)], [_value(x) for x in out])


@needs_torch
def test_spectral_norms_equal_pytorch():
    got, got_arrays = _spectral_program(ember)
    expected, expected_arrays = _spectral_program(torch)
    assert got == expected
    for g, e in zip(got_arrays, expected_arrays, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


# -- stateless, vectors, fusion, memory format ---------------------------------------------------

def _misc_program(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(4, 3)
    w = lib.ones(3, 4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = lib.nn.utils.stateless.functional_call(m, {"weight": w}, lib.ones(2, 4))
    y.sum().backward()
    vec = lib.nn.utils.parameters_to_vector(m.parameters())
    lib.nn.utils.vector_to_parameters(lib.arange(15.0), m.parameters())
    conv, bn = lib.nn.Conv2d(2, 3, 2), lib.nn.BatchNorm2d(3)
    with lib.no_grad():
        bn.running_mean.uniform_()
        bn.running_var.uniform_(0.5, 2)
    conv.eval()
    bn.eval()
    fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn)
    x = lib.randn(1, 2, 4, 4)
    lib.nn.utils.convert_conv2d_weight_memory_format(conv, lib.channels_last)
    return ([conv.weight.stride(), type(fused.weight).__name__],
            [_value(t) for t in (y, w.grad, vec, m.weight, fused(x), bn(conv(x)))])


@needs_torch
def test_stateless_vectors_fusion_memory_format_equal_pytorch():
    got, got_arrays = _misc_program(ember)
    expected, expected_arrays = _misc_program(torch)
    assert got == expected
    for g, e in zip(got_arrays, expected_arrays, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
