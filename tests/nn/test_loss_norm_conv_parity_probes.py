"""Differences from PyTorch 2.13 found by differential probes of the losses, the normalization
layers, the convolutions and the embeddings (values, dtypes, exception types and messages),
one test per fix. Each test checks Ember against the plain expected result, then, where
PyTorch is importable, runs the same call there and checks that it agrees.

A call is written once as ``run(lib)``, ``lib`` being ``ember`` or ``torch``; ``@`` in an
expected message stands for the library's name (``@.ShortTensor``).
"""

import math
import re
import warnings

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _F(lib):
    return lib.nn.functional


def _numpy(x):
    return np.asarray(x.detach().cpu().numpy()) if hasattr(x, "detach") else np.asarray(x)


def _raises(run, exc, message):
    """``run`` raises ``exc`` with ``message`` in Ember, and in PyTorch where importable."""
    with pytest.raises(exc, match=re.escape(message.replace("@", "ember"))):
        run(ember)
    torch = _torch()
    with pytest.raises(exc, match=re.escape(message.replace("@", "torch"))):
        run(torch)


def _value(run, expected, dtype=None, rtol=1e-5, atol=1e-6):
    """``run``'s tensor equals ``expected`` (and has ``dtype``, a name like ``"float32"``) in
    Ember, and in PyTorch where importable."""
    def check(lib):
        out = run(lib)
        if dtype is not None:
            assert out.dtype == getattr(lib, dtype), (lib.__name__, out.dtype)
        np.testing.assert_allclose(_numpy(out).astype(np.float64), expected, rtol=rtol,
                                   atol=atol, equal_nan=True)

    check(ember)
    check(_torch())


def _warns(run, message):
    """``run`` warns ``message`` (a prefix) in Ember, and in PyTorch where importable."""
    def check(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run(lib)
        assert any(str(w.message).startswith(message) for w in caught), \
            (lib.__name__, [str(w.message) for w in caught])

    check(ember)
    check(_torch())


def _t(lib, data, dtype=None):
    return lib.tensor(data, dtype=None if dtype is None else getattr(lib, dtype))


X2 = [[1.0, 2.0, 3.0], [0.5, 0.1, -1.0]]


# -- nll_loss / cross_entropy -------------------------------------------------------------------

def test_nll_loss_1d_input_takes_one_element_target():
    _value(lambda L: _F(L).nll_loss(_t(L, [1.0, 2.0, 3.0]), _t(L, [1]), reduction="none"),
           -2.0)
    _value(lambda L: _F(L).cross_entropy(_t(L, [1.0, 2.0, 3.0]), _t(L, [1])), 1.4076059)
    _raises(lambda L: _F(L).nll_loss(_t(L, [1.0, 2.0, 3.0]), _t(L, [1, 2])), ValueError,
            "For 1D input, 1D target must have size 1, but got target size: 2")


def test_cross_entropy_1d_input_one_element_target_with_label_smoothing_raises():
    _raises(lambda L: _F(L).cross_entropy(_t(L, [1.0, 2.0, 3.0]), _t(L, [1]),
                                          label_smoothing=0.2),
            RuntimeError, "output with shape [] doesn't match the broadcast shape [1]")


def test_nll_loss_0d_input():
    _raises(lambda L: _F(L).nll_loss(_t(L, 1.0), _t(L, 0)), ValueError,
            "Expected 1 or more dimensions (got 0)")


def test_nll_loss_4d_target_rank_and_size_messages():
    def run(L, shape, dtype="int64"):
        return _F(L).nll_loss(L.zeros(2, 3, 2, 2), L.zeros(shape, dtype=getattr(L, dtype)))

    _raises(lambda L: run(L, (2, 2)), RuntimeError, "only batches of spatial targets supported "
            "(3D tensors) but got targets of dimension: 2")
    _raises(lambda L: run(L, (2, 2, 3)), RuntimeError,
            "size mismatch (got input: [2, 3, 2, 2] , target: [2, 2, 3]")
    # the target's dtype is checked before its size there
    _raises(lambda L: run(L, (2, 2, 3), "int32"), RuntimeError,
            "expected target dtype to be Long or Byte, but got Int")
    _raises(lambda L: run(L, (3, 2, 2)), ValueError,
            "Expected input batch_size (2) to match target batch_size (3).")


def test_nll_loss_batch_size_checked_before_target_dtype():
    _raises(lambda L: _F(L).nll_loss(L.zeros(2, 3), _t(L, [0, 1, 1], "int32")), ValueError,
            "Expected input batch_size (2) to match target batch_size (3).")


def test_nll_loss_3d_target_size_checked_before_target_dtype():
    _raises(lambda L: _F(L).nll_loss(L.zeros(2, 3, 4), L.zeros(2, 5, dtype=L.int32)),
            RuntimeError, "Expected target size [2, 4], got [2, 5]")


def test_nll_loss_and_cross_entropy_weight_dtype_must_match():
    w = lambda L: L.ones(3, dtype=L.float64)
    _raises(lambda L: _F(L).nll_loss(L.zeros(2, 3), _t(L, [0, 1]), weight=w(L)), RuntimeError,
            "expected scalar type Float but found Double")
    _raises(lambda L: _F(L).cross_entropy(L.zeros(2, 3), _t(L, [0, 1]), weight=w(L)),
            RuntimeError, "expected scalar type Float but found Double")
    _raises(lambda L: _F(L).cross_entropy(L.zeros(2, 3), _t(L, [0, 1]), weight=w(L),
                                          label_smoothing=0.1),
            RuntimeError, "expected scalar type Float but found Double")


def test_nll_loss_spatial_weight_message_and_kernel_name():
    _raises(lambda L: _F(L).nll_loss(L.zeros(2, 3, 4), L.zeros(2, 4, dtype=L.int64),
                                     weight=L.ones(4)),
            RuntimeError, "weight tensor should be defined either for all or no classes")
    _raises(lambda L: _F(L).nll_loss(L.zeros(2, 3, 4, dtype=L.int64),
                                     L.zeros(2, 4, dtype=L.int64)),
            NotImplementedError, "\"nll_loss2d_forward_out_frame\" not implemented for 'Long'")


def test_cross_entropy_label_smoothing_negative_or_nan_is_none():
    plain = 1.7230033
    _value(lambda L: _F(L).cross_entropy(_t(L, X2), _t(L, [0, 1]), label_smoothing=-0.1),
           plain)
    _value(lambda L: _F(L).cross_entropy(_t(L, X2), _t(L, [0, 1]),
                                         label_smoothing=float("nan")), plain)
    probs = [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]
    _value(lambda L: _F(L).cross_entropy(_t(L, X2), _t(L, probs), label_smoothing=-0.5),
           0.8730030)
    _raises(lambda L: _F(L).cross_entropy(_t(L, X2), _t(L, [0, 1]), label_smoothing=1.5),
            RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5")


def test_cross_entropy_probabilities_promote_with_weight():
    _value(lambda L: _F(L).cross_entropy(_t(L, X2), _t(L, [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]),
                                         weight=L.ones(3, dtype=L.float64)),
           0.8730030, "float64")
    _raises(lambda L: _F(L).cross_entropy(L.zeros(2, 3), L.zeros(2, 3), weight=L.ones(4)),
            RuntimeError, "cross_entropy: weight tensor should be defined either for all 3 "
            "classes or no classes but got weight tensor of shape: [4]")


# -- reductions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss", "mse_loss", "l1_loss",
                                  "binary_cross_entropy", "kl_div", "soft_margin_loss"])
def test_reduction_elementwise_mean_and_integer(name):
    def run(L, reduction):
        F = _F(L)
        if name in ("cross_entropy", "nll_loss"):
            return getattr(F, name)(_t(L, X2), _t(L, [0, 2]), reduction=reduction)
        if name == "binary_cross_entropy":
            return F.binary_cross_entropy(_t(L, [0.1, 0.2]), _t(L, [0.0, 1.0]),
                                          reduction=reduction)
        return getattr(F, name)(_t(L, [-1.0, -2.0]), _t(L, [0.2, 0.8]), reduction=reduction)

    def same_as_mean(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean = float(run(L, "mean"))
            with pytest.warns(UserWarning, match="reduction='elementwise_mean' is deprecated"):
                assert float(run(L, "elementwise_mean")) == pytest.approx(mean)

    same_as_mean(ember)
    with pytest.raises(ValueError, match="1 is not a valid value for reduction"):
        run(ember, 1)
    torch = _torch()
    same_as_mean(torch)
    with pytest.raises(ValueError, match="1 is not a valid value for reduction"):
        run(torch, 1)


def test_poisson_and_multilabel_soft_margin_reduction_messages():
    x, t = [[1.0, 2.0]], [[0.0, 1.0]]
    _raises(lambda L: _F(L).poisson_nll_loss(_t(L, x), _t(L, t), reduction=1), TypeError,
            "unsupported operand type(s) for +: 'int' and 'str'")
    _raises(lambda L: _F(L).poisson_nll_loss(_t(L, x), _t(L, t), reduction="elementwise_mean"),
            ValueError, "elementwise_mean is not a valid value for reduction")
    _raises(lambda L: _F(L).multilabel_soft_margin_loss(_t(L, x), _t(L, t), reduction="Mean"),
            ValueError, "Mean is not valid")


# -- binary / regression losses -----------------------------------------------------------------

def test_binary_cross_entropy_integer_input():
    _raises(lambda L: _F(L).binary_cross_entropy(_t(L, [0, 1]), _t(L, [0, 1])),
            NotImplementedError, "\"binary_cross_entropy\" not implemented for 'Long'")


def test_binary_cross_entropy_weight_broadcast_error():
    _raises(lambda L: _F(L).binary_cross_entropy(_t(L, [0.2, 0.7, 0.9]), _t(L, [0.0, 1.0, 1.0]),
                                                 weight=_t(L, [1.0, 2.0])),
            RuntimeError, "Attempting to broadcast a dimension of length 2 at -1! Mismatching "
            "argument at index 1 had @.Size([2]); but expected shape should be broadcastable "
            "to [3]")


def test_empty_mean_losses_do_not_warn():
    for name in ("binary_cross_entropy", "mse_loss"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = getattr(ember.nn.functional, name)(ember.zeros(0), ember.zeros(0))
        assert math.isnan(float(out))


def test_bce_with_logits_result_has_target_dtype():
    x, t = [-2.0, 0.7, 3.0], [0.0, 1.0, 1.0]
    _value(lambda L: _F(L).binary_cross_entropy_with_logits(_t(L, x, "float64"), _t(L, t)),
           0.19290, "float32", rtol=1e-4)
    _value(lambda L: _F(L).binary_cross_entropy_with_logits(_t(L, x), _t(L, t, "float16")),
           0.1929, "float16", rtol=1e-2)


def test_bce_with_logits_integer_and_bool_targets():
    x = [-2.0, 0.7, 3.0]
    _raises(lambda L: _F(L).binary_cross_entropy_with_logits(_t(L, x), _t(L, [0, 1, 1])),
            RuntimeError, "result type Float can't be cast to the desired output type Long")
    _raises(lambda L: _F(L).binary_cross_entropy_with_logits(_t(L, x),
                                                             _t(L, [False, True, True])),
            RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not "
            "supported. Use the `^` or `logical_xor()` operator instead.")
    _raises(lambda L: _F(L).binary_cross_entropy_with_logits(_t(L, [-2, 0, 3]),
                                                             _t(L, [0.0, 1.0, 1.0])),
            NotImplementedError, "\"log_sigmoid_cpu\" not implemented for 'Long'")


def test_bce_with_logits_pos_weight_shape_message():
    _raises(lambda L: _F(L).binary_cross_entropy_with_logits(
        _t(L, [[-2.0, 0.7, 3.0]]), _t(L, [[0.0, 1.0, 1.0]]), pos_weight=_t(L, [2.0, 3.0])),
        RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at "
        "non-singleton dimension 1")


def test_kl_div_integral_inputs():
    _raises(lambda L: _F(L).kl_div(_t(L, [[-2.0, 0.7]]), _t(L, [[0, 1]]), reduction="sum"),
            RuntimeError, "kl_div: Integral inputs not supported.")
    _raises(lambda L: _F(L).kl_div(_t(L, [[-2, 0]]), _t(L, [[0.0, 1.0]]), reduction="sum"),
            RuntimeError, "kl_div: Integral inputs not supported.")


def test_regression_losses_promote_integer_input():
    x, t = [1, 2, 3], [1.0, 2.0, 5.0]
    _value(lambda L: _F(L).mse_loss(_t(L, x), _t(L, t)), 4 / 3, "float32")
    _value(lambda L: _F(L).mse_loss(_t(L, x), _t(L, t, "float64")), 4 / 3, "float64")
    _value(lambda L: _F(L).smooth_l1_loss(_t(L, x), _t(L, t)), 0.5, "float32")
    # beta=0 is l1_loss, integers included
    _value(lambda L: _F(L).smooth_l1_loss(_t(L, x), _t(L, [1, 2, 5]), reduction="none",
                                          beta=0.0), [0, 0, 2], "int64")


def test_huber_loss_output_has_input_dtype():
    _raises(lambda L: _F(L).huber_loss(_t(L, [1, 2, 3]), _t(L, [1.0, 2.0, 5.0])), RuntimeError,
            "result type Float can't be cast to the desired output type Long")
    _value(lambda L: _F(L).huber_loss(_t(L, [1.0, 2.0, 3.0]), _t(L, [1.0, 2.0, 5.0], "float64")),
           0.5, "float32")


def test_margin_ranking_loss_integer_inputs_give_float():
    _value(lambda L: _F(L).margin_ranking_loss(_t(L, [1, 2, 3]), _t(L, [0, 2, 5]),
                                               _t(L, [1, -1, 1])), 2 / 3, "float32")


def test_hinge_embedding_loss_integer_input_stays_integer():
    _raises(lambda L: _F(L).hinge_embedding_loss(_t(L, [1, 2, 3]), _t(L, [1, -1, 1])),
            RuntimeError, "mean(): could not infer output dtype. Input dtype must be either a "
            "floating point or complex dtype. Got: Long")
    _value(lambda L: _F(L).hinge_embedding_loss(_t(L, [1, 2, 3]), _t(L, [1, -1, 1]),
                                                reduction="sum"), 4, "int64")


def test_cosine_embedding_loss_dimension_checks():
    a, b = [1.0, 2.0, 3.0], [0.0, 2.0, 5.0]
    _raises(lambda L: _F(L).cosine_embedding_loss(_t(L, a), _t(L, b), _t(L, [1.0])),
            RuntimeError, "1D target tensor expects 2D input tensors, but found inputs with "
            "sizes [3] and [3].")
    _raises(lambda L: _F(L).cosine_embedding_loss(_t(L, [a]), _t(L, [b]), _t(L, 1.0)),
            RuntimeError, "0D target tensor expects 1D input tensors, but found inputs with "
            "sizes [1, 3] and [1, 3].")
    _raises(lambda L: _F(L).cosine_embedding_loss(_t(L, [[a]]), _t(L, [[b]]), _t(L, [[1.0]])),
            RuntimeError, "0D or 1D target tensor expected, multi-target not supported")


def test_triplet_margin_loss_margin_must_be_positive():
    a = [[1.0, 2.0, 3.0]]
    _raises(lambda L: _F(L).triplet_margin_loss(_t(L, a), _t(L, a), _t(L, a), margin=0.0),
            ValueError, "margin must be greater than 0, got 0.0")
    # torch.triplet_margin_loss (ATen) takes any margin
    out = ember.triplet_margin_loss(ember.tensor(a), ember.tensor(a), ember.tensor(a), -1.0)
    assert float(out.sum()) == 0.0


def test_soft_margin_loss_integer_input():
    _raises(lambda L: _F(L).soft_margin_loss(_t(L, [1, 2, 3]), _t(L, [1, -1, 1])), RuntimeError,
            "result type Float can't be cast to the desired output type Long")


def test_multilabel_soft_margin_loss_0d_input():
    _raises(lambda L: _F(L).multilabel_soft_margin_loss(_t(L, 1.0), _t(L, 1.0)), IndexError,
            "Dimension specified as -1 but tensor has no dimensions")


def test_multi_margin_loss_dtype_checks():
    _raises(lambda L: _F(L).multi_margin_loss(_t(L, [[1, 2, 3]]), _t(L, [1])),
            NotImplementedError, "\"multi_margin_loss_cpu_kernel\" not implemented for 'Long'")
    _raises(lambda L: _F(L).multi_margin_loss(_t(L, [[1.0, 2.0, 3.0]]), _t(L, [1]),
                                              weight=L.ones(3, dtype=L.float64)),
            RuntimeError, "expected scalar type Float but found Double")


# -- ctc_loss -----------------------------------------------------------------------------------

def _ctc(L, targets=((1, 2), (3, 3)), input_lengths=(5, 4), target_lengths=(2, 2), **kw):
    lp = L.arange(40.0).reshape(5, 2, 4).log_softmax(2)
    if kw.pop("half", False):
        lp = lp.half()
    lengths = kw.pop("lengths_dtype", "int64")
    return _F(L).ctc_loss(lp, _t(L, targets), _t(L, input_lengths, lengths),
                          _t(L, target_lengths), **kw)


def test_ctc_loss_argument_checks():
    _raises(lambda L: _ctc(L, blank=4), RuntimeError, "blank must be in label range")
    _raises(lambda L: _ctc(L, blank=-1), RuntimeError, "blank must be in label range")
    _raises(lambda L: _ctc(L, lengths_dtype="float32"), RuntimeError,
            "input_lengths must be integral")
    _raises(lambda L: _ctc(L, half=True), NotImplementedError,
            "\"ctc_loss_cpu\" not implemented for 'Half'")
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    _raises(lambda L: _ctc(L, target_lengths=(-1, 2)), RuntimeError,
            "Expected target_lengths to have value at least 0, but got value -1" + where)
    _raises(lambda L: _ctc(L, input_lengths=(-5, 4)), RuntimeError,
            "Expected input_lengths to have value at least 0, but got value -5" + where)
    _raises(lambda L: _ctc(L, targets=(1, 2, 3, 3), target_lengths=(2, 3)), RuntimeError,
            "Expected tensor to have size 5 at dimension 0, but got size 4 for argument #2 "
            "'targets'" + where)


def test_ctc_loss_values():
    # a label equal to blank may be skipped to, as PyTorch's recursion allows
    _value(lambda L: _ctc(L, targets=((1, 0), (3, 3))), 3.9059134, rtol=1e-4)
    # no input and no target: the empty alignment, probability 1
    _value(lambda L: _ctc(L, input_lengths=(0, 4), target_lengths=(0, 2), reduction="none"),
           [0.0, 3.9955897], rtol=1e-4)


# -- normalization ------------------------------------------------------------------------------

def test_batch_norm_eps_checks():
    x = lambda L: L.arange(12.0).reshape(2, 3, 2)
    _raises(lambda L: _F(L).batch_norm(x(L), None, None, training=True, eps=0.0), ValueError,
            "batch_norm eps must be positive during training, but got 0.0")
    _raises(lambda L: _F(L).batch_norm(x(L), L.zeros(3), L.ones(3), eps=-1.0), ValueError,
            "batch_norm eps must be non-negative, but got -1.0")


def test_normalized_shape_argument_types():
    x = lambda L: L.ones(2, 2)
    _raises(lambda L: _F(L).rms_norm(x(L), 2), TypeError,
            "rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    _raises(lambda L: _F(L).rms_norm(x(L), (2.0,)), TypeError,
            "rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, but "
            "found element of type float at pos 0")
    _raises(lambda L: _F(L).layer_norm(x(L), (2.0,)), TypeError,
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, but "
            "found element of type float at pos 0")
    _raises(lambda L: _F(L).layer_norm(x(L), None), TypeError,
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
            "NoneType")


def test_rms_norm_integer_input():
    _raises(lambda L: _F(L).rms_norm(L.ones(2, 2, dtype=L.int64), (2,)), NotImplementedError,
            "\"rms_norm\" not implemented for 'Long'")


def test_rms_norm_weight_of_another_dtype_keeps_input_dtype():
    from ember.ops import normalization

    x = [[0.0, 2.0], [3.0, 4.0]]
    expected = np.array(x) / np.sqrt((np.array(x) ** 2).mean(-1, keepdims=True))
    normalization._MISMATCH_WARNED[0] = False
    with pytest.warns(UserWarning, match="Mismatch dtype between input and weight: input dtype "
                      "= float, weight dtype = double, Cannot dispatch to fused implementation."):
        out = ember.nn.functional.rms_norm(ember.tensor(x), (2,),
                                           weight=ember.ones(2, dtype=ember.float64))
    assert out.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)
    _value(lambda L: _F(L).rms_norm(_t(L, x, "float16"), (2,), weight=L.ones(2)), expected,
           "float16", rtol=1e-3)


def test_group_norm_checks():
    x = lambda L: L.arange(24.0).reshape(2, 4, 3)
    _raises(lambda L: _F(L).group_norm(x(L), -2), RuntimeError,
            "Expected num groups to be greater than 0, got -2")
    _raises(lambda L: _F(L).group_norm(x(L), 2, bias=L.ones(3)), RuntimeError,
            "Expected bias to be a vector of size equal to the number of channels in input, but "
            "got bias of shape [0] and input of shape [2, 4, 3]")
    _raises(lambda L: _F(L).group_norm(L.ones(2, 4, 3, dtype=L.int64), 2),
            NotImplementedError, "\"GroupNormKernelImpl\" not implemented for 'Long'")
    _raises(lambda L: _F(L).group_norm(L.ones(1, 4), 4), ValueError,
            "Expected more than 1 value per channel when training, got input size [1, 4]")


def test_instance_norm_weight_numel_message():
    _raises(lambda L: _F(L).instance_norm(L.ones(2, 4, 3), weight=L.ones(3)), RuntimeError,
            "weight should contain 8 elements not 6")


def test_local_response_norm_non_positive_size():
    _raises(lambda L: _F(L).local_response_norm(L.ones(2, 4, 3), 0), RuntimeError,
            "kernel size should be greater than zero, but got kH: 0 kW: 1")
    _raises(lambda L: _F(L).local_response_norm(L.ones(2, 4, 3, 2), -1), RuntimeError,
            "kernel size should be greater than zero, but got kT: -1 kH: 1 kW: 1")


# -- convolutions -------------------------------------------------------------------------------

def test_conv_weight_rank_mismatch_messages():
    x = lambda L: L.ones(1, 1, 4, 4)
    _raises(lambda L: _F(L).conv2d(x(L), L.ones(1, 1, 2)), RuntimeError,
            "expected stride to be a single integer value or a list of 1 values to match the "
            "convolution dimensions, but got stride=[1, 1]")
    _raises(lambda L: _F(L).conv2d(x(L), L.ones(1, 1, 2), stride=(2,)), RuntimeError,
            "expected padding to be a single integer value or a list of 1 values to match the "
            "convolution dimensions, but got padding=[0, 0]")
    _raises(lambda L: _F(L).conv3d(L.ones(1, 1, 4, 4, 4), L.ones(1, 1, 2, 2)), RuntimeError,
            "expected stride to be a single integer value or a list of 2 values to match the "
            "convolution dimensions, but got stride=[1, 1, 1]")
    _raises(lambda L: _F(L).conv1d(L.ones(1, 1, 4), L.ones(1, 3)), RuntimeError,
            "weight should have at least three dimensions")
    _raises(lambda L: _F(L).conv2d(x(L), L.ones(1, 1, 2), padding="same"), RuntimeError,
            "Expected 3-dimensional input for 3-dimensional weight[1, 1, 2], but got "
            "4-dimensional input of size [1, 1, 4, 4] instead")


def test_conv_weight_smaller_than_groups():
    _raises(lambda L: _F(L).conv2d(L.ones(1, 1, 4, 4), L.ones(0, 1, 2, 2)), RuntimeError,
            "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of "
            "size [0, 1, 2, 2] instead")
    _raises(lambda L: _F(L).conv_transpose2d(L.ones(1, 2, 4, 4), L.ones(2, 2, 2, 2), groups=3),
            RuntimeError, "Given groups=3, expected weight to be at least 3 at dimension 0, but "
            "got weight of size [2, 2, 2, 2] instead")


def test_conv_padding_same_checks_and_warning():
    from ember.ops import conv

    x = lambda L: L.ones(1, 1, 4, 4)
    _raises(lambda L: _F(L).conv2d(x(L), L.ones(1, 1, 3, 3), padding="same", stride=(1, 1, 1)),
            RuntimeError, "stride cannot broadcast to 2 dimensions")
    _raises(lambda L: _F(L).conv2d(x(L), L.ones(1, 1, 3, 3), padding="same", dilation=-1),
            RuntimeError, "negative padding is not supported")
    conv._SAME_WARNED[0] = False
    with pytest.warns(UserWarning, match="Using padding='same' with even kernel lengths and odd "
                      "dilation may require a zero-padded copy of the input be created"):
        out = ember.nn.functional.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2),
                                         padding="same")
    assert tuple(out.shape) == (1, 1, 4, 4)


def test_conv_check_order():
    x = lambda L: L.ones(1, 1, 4, 4)
    w = lambda L: L.ones(1, 1, 2, 2)
    _raises(lambda L: _F(L).conv2d(x(L), w(L), stride=0, padding=-1), RuntimeError,
            "negative padding is not supported")
    _raises(lambda L: _F(L).conv2d(x(L), w(L), dilation=-1), RuntimeError,
            "dilation should be greater than zero")
    _raises(lambda L: _F(L).conv2d(x(L), L.ones(1, 2, 2, 2), dilation=0), RuntimeError,
            "Given groups=1, weight of size [1, 2, 2, 2], expected input[1, 1, 4, 4] to have 2 "
            "channels, but got 1 channels instead")
    _raises(lambda L: _F(L).conv1d(L.ones(1, 1, 4), L.ones(1, 1, 2), dilation=0), RuntimeError,
            "dilation should be greater than zero, but got [1, 0]")


def test_conv_transpose_checks():
    x = lambda L: L.ones(1, 1, 4, 4)
    w = lambda L: L.ones(1, 1, 2, 2)
    _raises(lambda L: _F(L).conv_transpose2d(x(L), w(L), padding="same"), TypeError,
            "conv_transpose2d(): argument 'padding' must be tuple of ints, not str")
    _raises(lambda L: _F(L).conv_transpose2d(x(L), w(L), output_padding=1, bias=L.ones(5)),
            RuntimeError, "Given transposed=1, weight of size [1, 1, 2, 2], expected bias to be "
            "1-dimensional with 1 elements, but got bias of size [5] instead")
    _raises(lambda L: _F(L).conv_transpose2d(x(L), w(L), dilation=0, output_padding=1),
            RuntimeError, "dilation should be greater than zero, but got dilation_height: 0, "
            "dilation_width: 0")
    _raises(lambda L: _F(L).conv_transpose1d(L.ones(1, 1, 4), L.ones(1, 1, 2), dilation=0),
            RuntimeError, "dilation should be greater than zero, but got dilation_height: 1, "
            "dilation_width: 0")
    # the bias may have another dtype
    _value(lambda L: _F(L).conv_transpose2d(x(L), w(L), bias=L.zeros(1, dtype=L.float64))[0, 0,
                                                                                          0],
           [1, 2, 2, 2, 1], "float32")


def test_conv_bool_inputs():
    _raises(lambda L: _F(L).conv2d(L.ones(1, 1, 4, 4, dtype=L.bool), L.ones(1, 1, 2, 2)),
            NotImplementedError, "\"slow_conv2d_cpu\" not implemented for 'Bool'")
    _raises(lambda L: _F(L).conv_transpose2d(L.ones(1, 1, 4, 4, dtype=L.bool),
                                             L.ones(1, 1, 2, 2, dtype=L.bool)),
            NotImplementedError, "\"slow_conv_transpose2d_out_cpu\" not implemented for 'Bool'")


# -- embedding ----------------------------------------------------------------------------------

def test_embedding_index_dtypes():
    w = lambda L: L.arange(12.0).reshape(4, 3)
    head = "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
    tail = " instead (while checking arguments for embedding)"
    _raises(lambda L: _F(L).embedding(_t(L, [0, 1], "int16"), w(L)), RuntimeError,
            head + "Long, Int; but got @.ShortTensor" + tail)
    _raises(lambda L: _F(L).embedding(_t(L, [0, 1], "uint8"), w(L)), RuntimeError,
            head + "Long, Int; but got @.ByteTensor" + tail)
    _raises(lambda L: _F(L).embedding(_t(L, [True, False]), w(L)), RuntimeError,
            head + "Long, Int; but got CPUBoolType" + tail)


def test_embedding_weight_must_be_2d():
    _raises(lambda L: _F(L).embedding(_t(L, [0, 3]), L.arange(4.0)), RuntimeError,
            "'weight' must be 2-D")


def test_embedding_max_norm_infinity_norm():
    def run(L):
        w = L.arange(12.0).reshape(4, 3)
        _F(L).embedding(_t(L, [0, 3]), w, max_norm=5.0, norm_type=float("inf"))
        return w

    expected = np.arange(12.0).reshape(4, 3)
    expected[3] *= 5.0 / (11.0 + 1e-7)
    _value(run, expected, rtol=1e-5)


def test_embedding_max_norm_checks():
    w = lambda L: L.arange(12.0).reshape(4, 3)
    _raises(lambda L: _F(L).embedding(_t(L, [0, 4]), w(L), max_norm=1.0), IndexError,
            "select(): index 4 out of range for tensor of size [4, 3] at dimension 0")
    _raises(lambda L: _F(L).embedding(_t(L, [0, 3]), L.arange(12).reshape(4, 3), max_norm=1.0),
            RuntimeError, "norm(): input dtype should be either floating point or complex. Got "
            "Long instead.")


def test_embedding_bag_index_and_offset_types_promote():
    w = lambda L: L.arange(12.0).reshape(4, 3)
    _value(lambda L: _F(L).embedding_bag(_t(L, [0, 1, 2, 3], "int16"), w(L), _t(L, [0, 2])),
           [[1.5, 2.5, 3.5], [7.5, 8.5, 9.5]])
    _raises(lambda L: _F(L).embedding_bag(_t(L, [0, 1, 2, 3]), w(L), _t(L, [0.0, 2.0])),
            RuntimeError, "Expected tensor for argument #1 'indices' to have one of the "
            "following scalar types: Long, Int; but got @.FloatTensor instead (while checking "
            "arguments for embedding_bag)")


def test_embedding_bag_offset_and_index_messages():
    w = lambda L: L.arange(12.0).reshape(4, 3)
    _raises(lambda L: _F(L).embedding_bag(_t(L, [0, 1]), w(L), _t(L, [1, 2])), RuntimeError,
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            "from position 0. However, got 1\n[ @.LongTensor{} ]")
    _raises(lambda L: _F(L).embedding_bag(_t(L, [9, 1, 2, 0, 0]), w(L), _t(L, [0, 2, 3])),
            RuntimeError, "Index 0 of input takes value 9 which is not in the valid range [0, 4)")
    _raises(lambda L: _F(L).embedding_bag(_t(L, [0, 1, 2, 0, 4]), w(L), _t(L, [0, 2, 3])),
            RuntimeError, "Expected i < index_size to be true, but got false.")
    _raises(lambda L: _F(L).embedding_bag(_t(L, [0, 1, 2, 4]), w(L), _t(L, [0, 2]),
                                          mode="max"),
            RuntimeError, "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found "
            "idx to be 4")
    _raises(lambda L: _F(L).embedding_bag(_t(L, [[0, 1]]), w(L), _t(L, [0])), ValueError,
            "However, found offsets of type <class '@.Tensor'>")


def test_embedding_bag_include_last_offset_ignores_trailing_indices():
    _value(lambda L: _F(L).embedding_bag(_t(L, [0, 1, 2, 9, 9]), L.arange(12.0).reshape(4, 3),
                                         _t(L, [0, 2, 3]), mode="sum", include_last_offset=True),
           [[3.0, 5.0, 7.0], [6.0, 7.0, 8.0]])
