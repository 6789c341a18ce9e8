"""Differences from PyTorch 2.13 found by differential probes of pooling, unpooling,
fold/unfold, the dropout family and the activations (functional and module forms), each
checked against Ember's expected value or error and, where PyTorch is installed, against it."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _raises(call, exc, message):
    """``call(mod)`` raises ``exc`` with ``message`` in Ember and in PyTorch (if installed);
    ``mod`` is ``ember`` or ``torch``."""
    with pytest.raises(exc, match=re.escape(message)):
        call(ember)
    torch = _torch()
    with pytest.raises(exc, match=re.escape(message)):
        call(torch)


def _values(call, expected, dtype=None):
    """``call(mod)`` gives ``expected`` (and ``dtype``) in Ember and in PyTorch."""
    got = call(ember)
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-6, atol=0)
    if dtype is not None:
        assert str(got.dtype) == f"ember.{dtype}"
    torch = _torch()
    ref = call(torch)
    np.testing.assert_allclose(ref.detach().numpy(), expected, rtol=1e-6, atol=0)
    if dtype is not None:
        assert str(ref.dtype) == f"torch.{dtype}"


def _x(m, *shape, dtype=None):
    return m.arange(float(np.prod(shape))).reshape(*shape).to(dtype or m.float32)


# -- pooling: argument checks ---------------------------------------------------------------

@pytest.mark.parametrize("return_indices", [False, True])
def test_max_pool2d_negative_stride(return_indices):
    _raises(lambda m: m.nn.functional.max_pool2d(_x(m, 1, 1, 4, 4), 2, -1,
                                                 return_indices=return_indices),
            RuntimeError, "stride should be greater than zero, but got dH: -1 dW: -1")


def test_pool_dilation_zero_names_each_dim():
    _raises(lambda m: m.nn.functional.max_pool2d(_x(m, 1, 1, 4, 4), 2, 1, 0, 0), RuntimeError,
            "dilation should be greater than zero, but got dilationH: 0 dilationW: 0")
    _raises(lambda m: m.nn.functional.max_pool3d(_x(m, 1, 1, 4, 4, 4), 2, 1, 0, 0),
            RuntimeError, "dilation should be greater than zero, but got dilationT: 0 "
                          "dilationH: 0 dilationW: 0")


@pytest.mark.parametrize("call, message", [
    (lambda m: m.nn.functional.max_pool2d(_x(m, 1, 1, 4, 4), (2, 3, 4)),
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda m: m.nn.functional.avg_pool2d(_x(m, 1, 1, 4, 4), 2, (1, 2, 3)),
     "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints"),
    (lambda m: m.nn.functional.avg_pool3d(_x(m, 1, 1, 4, 4, 4), (2, 3)),
     "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
    (lambda m: m.nn.functional.max_pool3d(_x(m, 1, 1, 4, 4, 4), 2, 1, 0, (1, 2)),
     "max_pool3d: dilation must be either a single int, or a tuple of three ints"),
    (lambda m: m.nn.functional.max_pool1d(_x(m, 1, 1, 8), (2, 3)),
     "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but "
     "got size 2"),
    (lambda m: m.nn.functional.max_pool1d(_x(m, 1, 1, 8), 3, (1, 2), return_indices=True),
     "max_pool1d() argument 'stride' should contain one int (got 2)"),
    (lambda m: m.nn.functional.avg_pool1d(_x(m, 1, 1, 8), (2, 3)),
     "avg_pool1d() argument 'kernel_size' should contain one int (got 2)"),
])
def test_pool_argument_lengths(call, message):
    _raises(call, RuntimeError, message)


def test_pool_float_kernel_is_a_type_error():
    _raises(lambda m: m.nn.functional.max_pool2d(_x(m, 1, 1, 4, 4), 2.0), TypeError,
            "max_pool2d(): argument 'kernel_size' (position 2) must be tuple of ints, not float")
    _raises(lambda m: m.nn.functional.avg_pool2d(_x(m, 1, 1, 4, 4), [2.0, 2]), TypeError,
            "argument 'kernel_size' (position 2) must be tuple of ints, but found element of "
            "type float at pos 0")


def test_pool_ceil_mode_must_be_bool():
    _raises(lambda m: m.nn.functional.max_pool2d(_x(m, 1, 1, 4, 4), 2, 1, 0, 1, 0),
            TypeError, "max_pool2d(): argument 'ceil_mode' (position 6) must be bool, not int")


def test_max_pool1d_without_indices_checks():
    _raises(lambda m: m.nn.functional.max_pool1d(_x(m, 1, 1, 8), 0), RuntimeError,
            "max_pool1d() kernel_size must be greater than zero, but got 0")
    _raises(lambda m: m.nn.functional.max_pool1d(_x(m, 1, 1, 8), 9), RuntimeError,
            "max_pool1d() Invalid computed output size: 0")
    _raises(lambda m: m.nn.functional.max_pool1d(_x(m, 1, 1, 8), 3, 1, -1), RuntimeError,
            "max_pool1d() padding must be non-negative, but got -1")


def test_pool1d_output_size_names_the_lifted_input():
    message = "Given input size: (1x1x8). Calculated output size: (1x1x0). Output size is " \
              "too small"
    _raises(lambda m: m.nn.functional.avg_pool1d(_x(m, 1, 1, 8), 9), RuntimeError, message)
    _raises(lambda m: m.nn.functional.max_pool1d(_x(m, 1, 1, 8), 9, return_indices=True),
            RuntimeError, message)


def test_avg_pool2d_of_a_2d_input_is_an_index_error():
    _raises(lambda m: m.nn.functional.avg_pool2d(_x(m, 4, 4), 2), IndexError,
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)")


def test_pool_empty_channel_dims():
    _raises(lambda m: m.nn.functional.max_pool2d(m.zeros(1, 0, 4, 4), 2), RuntimeError,
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            "but got:[1, 0, 4, 4]")
    _raises(lambda m: m.nn.functional.avg_pool1d(m.zeros(1, 0, 8), 3), RuntimeError,
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            "but got:[1, 0, 1, 8]")
    _raises(lambda m: m.nn.functional.max_pool3d(m.zeros(1, 1, 0, 4, 4), 2), RuntimeError,
            "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch "
            "dimensions to have positive length, but input has a shape of [1, 1, 0, 4, 4] and "
            "non-batch dimension 0 has length zero!")


def test_pool3d_padding_checks_the_effective_kernel_first():
    _raises(lambda m: m.nn.functional.max_pool3d(_x(m, 1, 1, 4, 4, 4), 3, 1, 2), RuntimeError,
            "pad should be at most half of effective kernel size, but got pad=2, "
            "kernel_size=3 and dilation=1")


@pytest.mark.parametrize("call, message", [
    (lambda m: m.nn.functional.max_pool2d(m.zeros(1, 1, 4, 4, dtype=m.bool), 2),
     "\"max_pool2d\" not implemented for 'Bool'"),
    (lambda m: m.nn.functional.avg_pool2d(m.zeros(1, 1, 4, 4, dtype=m.int32), 2),
     "\"avg_pool2d\" not implemented for 'Int'"),
    (lambda m: m.nn.functional.max_pool1d(m.zeros(1, 1, 4, dtype=m.int64), 2),
     "\"max_pool1d_impl\" not implemented for 'Long'"),
    (lambda m: m.nn.functional.adaptive_max_pool2d(m.zeros(1, 1, 4, 4, dtype=m.int64), 2),
     "\"adaptive_max_pool2d\" not implemented for 'Long'"),
    (lambda m: m.nn.functional.max_unpool2d(m.zeros(1, 1, 2, 2, dtype=m.int64),
                                            m.zeros(1, 1, 2, 2, dtype=m.int64), 2),
     "\"max_unpool2d\" not implemented for 'Long'"),
])
def test_pool_dtypes(call, message):
    _raises(call, NotImplementedError, message)


def test_lp_pool_infinite_norm_is_max_pooling():
    _values(lambda m: m.nn.functional.lp_pool2d(_x(m, 1, 1, 4, 4) - 8, float("inf"), 2),
            [[[[8.0, 6.0], [5.0, 7.0]]]])
    _values(lambda m: m.nn.functional.lp_pool1d(_x(m, 1, 1, 4) - 2, -float("inf"), 2),
            [[[1.0, 0.0]]])


# -- adaptive pooling -------------------------------------------------------------------------

def test_adaptive_output_size_checks():
    _raises(lambda m: m.nn.functional.adaptive_avg_pool2d(_x(m, 1, 1, 4, 4), -1), RuntimeError,
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
            "but received {-1, -1}")
    _raises(lambda m: m.nn.functional.adaptive_avg_pool2d(_x(m, 1, 1, 4, 4), (1, 2, 3)),
            RuntimeError, "adaptive_avg_pool2d: output_size must be 2")
    _raises(lambda m: m.nn.functional.adaptive_max_pool2d(_x(m, 1, 1, 4, 4), (1, 2, 3)),
            RuntimeError, "adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    _raises(lambda m: m.nn.functional.adaptive_max_pool3d(_x(m, 1, 4, 4, 4), -1),
            RuntimeError, "Trying to create tensor with negative dimension -1: [1, -1, -1, -1]")
    _raises(lambda m: m.nn.functional.adaptive_avg_pool1d(_x(m, 1, 16), (3, 4)), RuntimeError,
            "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)")
    _raises(lambda m: m.nn.functional.adaptive_avg_pool2d(_x(m, 1, 1, 4, 4), None), TypeError,
            "object of type 'NoneType' has no len()")
    _raises(lambda m: m.nn.functional.adaptive_avg_pool2d(_x(m, 4, 4), (2, 2)), ValueError,
            "Input dimension should be at least 3")


def test_adaptive_max_pool_to_an_empty_output():
    for m in (ember,):
        out, idx = m.nn.functional.adaptive_max_pool2d(_x(m, 1, 1, 4, 4), 0, True)
        assert tuple(out.shape) == (1, 1, 0, 0) and tuple(idx.shape) == (1, 1, 0, 0)
    torch = _torch()
    assert tuple(torch.nn.functional.adaptive_max_pool2d(_x(torch, 1, 1, 4, 4), 0).shape) == \
        (1, 1, 0, 0)


def test_adaptive_empty_spatial_dims():
    _raises(lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(1, 1, 0, 4), 2), RuntimeError,
            "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
            "dimensions, but input has sizes [1, 1, 0, 4] with dimension 2 being empty")
    _raises(lambda m: m.nn.functional.adaptive_max_pool1d(m.zeros(1, 0, 4), 2), RuntimeError,
            "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch "
            "dimensions, but input has sizes [1, 0, 4] with dimension 1 being empty")


def test_adaptive_avg_pool_global_is_a_mean():
    _values(lambda m: m.nn.functional.adaptive_avg_pool2d(_x(m, 2, 2), 1), [[1.5]])
    _raises(lambda m: m.nn.functional.adaptive_avg_pool2d(m.ones(1, 2, 2, dtype=m.int64), 1),
            RuntimeError, "mean(): could not infer output dtype. Input dtype must be either a "
                          "floating point or complex dtype. Got: Long")


# -- max unpooling ----------------------------------------------------------------------------

def _pooled(m):
    return m.nn.functional.max_pool2d(_x(m, 1, 1, 4, 4), 2, return_indices=True)


def test_max_unpool_output_size_checks():
    _raises(lambda m: m.nn.functional.max_unpool2d(*_pooled(m), 2, output_size=(9, 9)),
            ValueError, 'invalid output_size "(9, 9)" (dim 0 must be between 2 and 6)')
    _raises(lambda m: m.nn.functional.max_unpool2d(*_pooled(m), 2, output_size=(5,)),
            ValueError, "output_size should be a sequence containing 2 or 4 elements, but it "
                        "has a length of '1'")
    _raises(lambda m: m.nn.functional.max_unpool2d(*_pooled(m), 2, 1, 3), ValueError,
            "max_unpooling: output_size must contain non-negative spatial dimensions, but got "
            "output_size[0]=-3")


def test_max_unpool_input_checks():
    _raises(lambda m: m.nn.functional.max_unpool2d(_pooled(m)[0], _pooled(m)[1].int(), 2),
            RuntimeError, "elements in indices should be type int64 but got: Int")
    _raises(lambda m: m.nn.functional.max_unpool2d(_x(m, 4, 4), _x(m, 4, 4).long(), 2),
            RuntimeError, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a "
                          "tensor with 2 dimensions.")
    _raises(lambda m: m.nn.functional.max_unpool2d(_pooled(m)[0], _pooled(m)[1][..., :1], 2),
            RuntimeError, "Expected shape of indices to be same as that of the input tensor "
                          "([1, 1, 2, 2]) but got indices tensor with shape: [1, 1, 2, 1]")
    _raises(lambda m: m.nn.functional.max_unpool3d(
        *m.nn.functional.max_pool3d(_x(m, 1, 1, 4, 4, 4), 2, return_indices=True), 2, 0),
        RuntimeError, "strides should be greater than zero, but got stride: [0, 0, 0]")


# -- activations ------------------------------------------------------------------------------

def test_celu_alpha_zero():
    _raises(lambda m: m.nn.functional.celu(m.ones(3), alpha=0.0), RuntimeError,
            "ZeroDivisionError: alpha cannot be 0 for CELU")


def test_softshrink_lambda_range():
    _raises(lambda m: m.nn.functional.softshrink(m.ones(3), -1.0), RuntimeError,
            "lambda must be in range [0, 3.40282e+38] for input dtype Float, but found -1")
    _raises(lambda m: m.nn.functional.softshrink(m.ones(3, dtype=m.float16), float("inf")),
            RuntimeError, "lambda must be in range [0, 65504] for input dtype Half, but found "
                          "inf")


@pytest.mark.parametrize("training", [False, True])
def test_rrelu_bounds(training):
    _raises(lambda m: m.nn.functional.rrelu(m.ones(3), 0.5, 0.1, training=training),
            RuntimeError, "Lower bound should be less than or equal to the upper bound")


def test_clamping_activations_refuse_bool_and_complex():
    _raises(lambda m: m.nn.functional.relu6(m.tensor([True, False])), RuntimeError,
            "Bool inputs not supported for hardtanh")
    _raises(lambda m: m.nn.functional.hardtanh(m.tensor([1 + 1j])), NotImplementedError,
            "clamp is not supported for complex types")
    _raises(lambda m: m.nn.functional.relu(m.tensor([1 + 1j])), NotImplementedError,
            "clamp is not supported for complex types")
    _raises(lambda m: m.nn.functional.threshold(m.tensor([True]), 0.5, 2.0),
            NotImplementedError, "not implemented for 'Bool'")  # "threshold_cpu" on the CPU


def test_softsign_tanhshrink_of_complex_and_bool():
    z = np.array([-2 + 1j, 0.5])
    _values(lambda m: m.nn.functional.softsign(m.tensor(z)), z / (1 + np.abs(z)))
    _values(lambda m: m.nn.functional.tanhshrink(m.tensor(z)), z - np.tanh(z))
    _raises(lambda m: m.nn.functional.softsign(m.tensor([True])), NotImplementedError,
            "\"abs_cpu\" not implemented for 'Bool'")
    _raises(lambda m: m.nn.functional.tanhshrink(m.tensor([True])), RuntimeError,
            "Subtraction, the `-` operator, with a bool tensor is not supported.")


def test_tanhshrink_float16_rounds_tanh_first():
    _values(lambda m: m.nn.functional.tanhshrink(m.tensor([0.5, 3.0], dtype=m.float16)),
            np.array([0.0378418, 2.0039062]), "float16")


def test_silu_of_complex():
    z = np.array([-2 + 1j, 0.5])
    _values(lambda m: m.nn.functional.silu(m.tensor(z)), z / (1 + np.exp(-z)))


def test_glu_checks_the_halving_dim_first():
    _raises(lambda m: m.nn.functional.glu(m.tensor([-2, 0, 3])), RuntimeError,
            "Halving dimension must be even, but dimension 0 is size 3")


def test_leaky_relu_in_place_with_negative_slope_refuses_backward():
    def call(m):
        x = m.tensor([-2.0, 0.5, 3.0], requires_grad=True)
        m.nn.functional.leaky_relu(x * 1, -0.5, inplace=True).sum().backward()

    _raises(call, RuntimeError, "In-place leakyReLu backward calculation is triggered with a "
                                "negative slope which is not supported.")


def test_gelu_approximate_type():
    _raises(lambda m: m.nn.functional.gelu(m.ones(2), approximate=None), TypeError,
            "gelu(): argument 'approximate' must be str, not NoneType")


def test_prelu_weight_checks():
    def x(m):
        return _x(m, 2, 3) - 3

    _raises(lambda m: m.nn.functional.prelu(x(m), m.tensor([[0.25, 0.5, 1.0]])), RuntimeError,
            "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2")
    _raises(lambda m: m.nn.functional.prelu(x(m), m.tensor([0.25], dtype=m.float64)),
            RuntimeError, "prelu: Type promoting not supported. Got Float and Double")
    _raises(lambda m: m.nn.functional.prelu(x(m), 0.25), TypeError,
            "prelu(): argument 'weight' (position 2) must be Tensor, not float")


def test_softmax_dim_type():
    _raises(lambda m: m.nn.functional.softmax(m.ones(2, 3), dim=(0, 1)), TypeError,
            "softmax(): argument 'dim' (position 1) must be int, not tuple")
    _raises(lambda m: m.nn.functional.log_softmax(m.ones(2, 3), dim="a"), TypeError,
            "log_softmax(): argument 'dim' (position 1) must be int, not str")


# -- dropout ----------------------------------------------------------------------------------

def test_dropout_p_one_keeps_the_dtype():
    _values(lambda m: m.nn.functional.dropout(m.ones(2, 2, dtype=m.int64), 1.0),
            np.zeros((2, 2)), "int64")
    _values(lambda m: m.nn.functional.alpha_dropout(m.ones(2, 2, dtype=m.complex64), 1.0, True),
            np.zeros((2, 2)), "complex64")


def test_dropout_input_checks():
    _raises(lambda m: m.nn.functional.dropout(m.ones(2, 2, dtype=m.complex64), 0.5),
            NotImplementedError, "\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'")
    _raises(lambda m: m.nn.functional.feature_alpha_dropout(m.ones(3), 0.5, True),
            RuntimeError, "Feature dropout requires at least 2 dimensions in the input")


def test_aten_dropout_p_range_is_a_runtime_error():
    _raises(lambda m: m.dropout(m.ones(2, 2), 1.5, True), RuntimeError,
            "dropout probability has to be between 0 and 1, but got 1.5")
    _raises(lambda m: m.nn.functional.dropout(m.ones(2, 2), 1.5), ValueError,
            "dropout probability has to be between 0 and 1, but got 1.5")


def test_dropout_training_must_be_bool():
    _raises(lambda m: m.nn.functional.dropout(m.ones(2, 2), 0.5, training=None), TypeError,
            "dropout(): argument 'train' (position 3) must be bool, not NoneType")
    _raises(lambda m: m.nn.functional.dropout1d(m.ones(2, 3, 4), 0.5, training=1), TypeError,
            "feature_dropout(): argument 'train' (position 3) must be bool, not int")


def test_native_dropout():
    for m in (ember, None):
        if m is None:
            m = _torch()
        out, mask = m.native_dropout(m.ones(3, 4), 1.0, True)
        assert not out.numpy().any() and str(mask.dtype).endswith("bool")
        out, mask = m.native_dropout(m.ones(3, 4), 0.5, False)
        assert out.numpy().all() and mask.numpy().all()
    _raises(lambda m: m.native_dropout(m.ones(2), 1.5, True), RuntimeError,
            "bernoulli_ expects p to be in [0, 1], but got p=-0.5")


# -- fold / unfold ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"kernel_size": 0}, "kernel size should be greater than zero, but got kernel_height: 0 "
                         "kernel_width: 0"),
    ({"kernel_size": 2, "stride": 0}, "stride should be greater than zero, but got "
                                      "stride_height: 0 stride_width: 0"),
    ({"kernel_size": 2, "padding": -1}, "padding should be non-negative, but got pad_height: -1 "
                                        "pad_width: -1"),
    ({"kernel_size": 2, "dilation": 0}, "dilation should be greater than zero, but got "
                                        "dilation_height: 0 dilation_width: 0"),
    ({"kernel_size": (2, 3, 4)}, "It is expected kernel_size equals to 2, but got size 3"),
])
def test_unfold_argument_checks(kwargs, message):
    _raises(lambda m: m.nn.functional.unfold(_x(m, 1, 1, 4, 4), **kwargs), RuntimeError,
            message)


def test_unfold_input_checks():
    _raises(lambda m: m.nn.functional.unfold(m.zeros(1, 0, 4, 4), 2), RuntimeError,
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            "non-zero dimensions for input, but got: [1, 0, 4, 4]")
    _raises(lambda m: m.nn.functional.unfold(_x(m, 4, 4), 2), IndexError,
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
    _raises(lambda m: m.nn.functional.unfold(_x(m, 1, 1, 4, 4).long(), 2), NotImplementedError,
            "\"im2col_out_cpu\" not implemented for 'Long'")
    _raises(lambda m: m.nn.functional.unfold(_x(m, 1, 1, 4, 4), 2.0), TypeError,
            "im2col(): argument 'kernel_size' (position 2) must be tuple of ints, but found "
            "element of type float at pos 0")


def test_fold_checks():
    _raises(lambda m: m.nn.functional.fold(_x(m, 1, 4, 4), (3, 3), 2, stride=0), RuntimeError,
            "stride should be greater than zero, but got stride_height: 0 stride_width: 0")
    _raises(lambda m: m.nn.functional.fold(_x(m, 1, 3, 4), (3, 3), 2), RuntimeError,
            "Expected size of input's dimension 1 to be divisible by the product of "
            "kernel_size, but got input.size(1)=3 and kernel_size=(2, 2).")
    _raises(lambda m: m.nn.functional.fold(m.zeros(1, 0, 4), (3, 3), 2), RuntimeError,
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            "non-zero dimensions for input, but got: [1, 0, 4]")
    _raises(lambda m: m.nn.functional.fold(_x(m, 1, 4, 4), (3.0, 3), 2), TypeError,
            "col2im(): argument 'output_size' (position 2) must be tuple of ints, but found "
            "element of type float at pos 0")
    _raises(lambda m: m.nn.functional.fold(_x(m, 1, 4, 4), (3, 3, 3), 2), RuntimeError,
            "It is expected output_size equals to 2, but got size 3")


def test_avg_pool1d_has_no_divisor_override():
    """PyTorch's avg_pool1d takes six arguments (its 2-d and 3-d ones a divisor_override)."""
    _raises(lambda m: m.nn.functional.avg_pool1d(_x(m, 1, 1, 4), 2, divisor_override=1),
            TypeError, "avg_pool1d() got an unexpected keyword argument 'divisor_override'")
    _raises(lambda m: m.avg_pool1d(_x(m, 1, 1, 4), 2, 2, 0, False, True, 1), TypeError,
            "avg_pool1d() takes from 2 to 6 positional arguments but 7 were given")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_hardshrink_zeroes_are_positive(dtype):
    """PyTorch's hardshrink selects 0 inside [-lambd, lambd]: +0.0 for a negative input too
    (Ember's product with the mask gave -0.0), and NaN stays NaN."""
    values = [-0.1, 0.1, -0.0, float("nan"), -0.7, float("-inf"), -0.5]
    expected = np.array([0.0, 0.0, 0.0, np.nan, -0.7, -np.inf, 0.0])
    out = ember.nn.functional.hardshrink(ember.tensor(values, dtype=getattr(ember, dtype)))
    got = out.float().numpy().astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=1e-2)
    assert not np.signbit(got[[0, 1, 2, 6]]).any()
    torch = _torch()
    theirs = torch.nn.functional.hardshrink(torch.tensor(values, dtype=getattr(torch, dtype)))
    np.testing.assert_array_equal(np.signbit(theirs.float().numpy()), np.signbit(got))


@pytest.mark.parametrize("name", ["hardshrink", "softshrink"])
def test_shrink_gradient_passes_at_nan(name):
    """Their backward passes the gradient outside [-lambd, lambd], at NaN too (PyTorch's
    ``(x >= -l && x <= l) ? 0 : grad``)."""
    def grad(lib):
        x = lib.tensor([-0.1, float("nan"), -0.7, 0.5, float("inf")], requires_grad=True)
        getattr(lib.nn.functional, name)(x).sum().backward()
        return x.grad.tolist()

    assert grad(ember) == [0.0, 1.0, 1.0, 0.0, 1.0]
    assert grad(_torch()) == grad(ember)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_threshold_keeps_nan(dtype):
    """PyTorch's threshold is ``x <= threshold ? value : x``: NaN is not below the threshold
    and stays NaN (Ember's ``x > threshold ? x : value`` replaced it by ``value``)."""
    values = [float("nan"), -1.0, 1.0, 0.5]

    def out(lib):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        return [lib.nn.functional.threshold(x, 0.5, -3.0).float().tolist(),
                lib.threshold(x, 0.0, 0.0).float().tolist()]

    got = out(ember)
    np.testing.assert_array_equal(got, [[np.nan, -3.0, 1.0, -3.0], [np.nan, 0.0, 1.0, 0.5]])
    np.testing.assert_array_equal(out(_torch()), got)
