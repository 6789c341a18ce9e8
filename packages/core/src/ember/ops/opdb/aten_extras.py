"""The ATen-level names of ``ops/aten_extras.py``: recurrent cells and networks, native
normalizations, ``convolution``, the deprecated norms, ``embedding_renorm_`` and
``segment_reduce``; compared with PyTorch's functions of the same names."""

from __future__ import annotations

from . import FLOAT, SampleInput, define, make


def _cell_samples(gates):
    def samples(device, dtype, requires_grad=False):
        def m(*shape):
            return make(shape, dtype, device, requires_grad=requires_grad, low=-1, high=1)

        B, I, H = 2, 3, 4
        hx = (m(B, H), m(B, H)) if gates == 4 else m(B, H)
        yield SampleInput(m(B, I), hx, m(gates * H, I), m(gates * H, H), m(gates * H),
                          m(gates * H), name="biases")
        hx = (m(B, H), m(B, H)) if gates == 4 else m(B, H)
        yield SampleInput(m(B, I), hx, m(gates * H, I), m(gates * H, H), name="no biases")

    return samples


def _rnn_samples(gates, lstm):
    def samples(device, dtype, requires_grad=False):
        import ember

        def m(*shape):
            return make(shape, dtype, device, requires_grad=requires_grad, low=-1, high=1)

        I, H = 3, 2
        params = [m(gates * H, I), m(gates * H, H), m(gates * H), m(gates * H)] + \
            [m(gates * H, I), m(gates * H, H), m(gates * H), m(gates * H)]
        hx = (m(2, 2, H), m(2, 2, H)) if lstm else m(2, 2, H)
        yield SampleInput(m(3, 2, I), hx, params, True, 1, 0.0, False, True, False,
                          name="padded bidirectional")
        hx = (m(1, 2, H), m(1, 2, H)) if lstm else m(1, 2, H)
        yield SampleInput(m(2, 3, I), hx, params[:2], False, 1, 0.0, False, False, True,
                          name="batch_first no biases")
        hx = (m(1, 3, H), m(1, 3, H)) if lstm else m(1, 3, H)
        yield SampleInput(m(6, I), ember.tensor([3, 2, 1], device=device), hx, params[:4],
                          True, 1, 0.0, False, False, name="packed")

    return samples


def _native_layer_norm_samples(device, dtype, requires_grad=False):
    def m(*shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    yield SampleInput(m(2, 3, 4), [4], m(4), m(4), 1e-5, name="weight and bias")
    yield SampleInput(m(2, 3, 4), [3, 4], None, None, 1e-5, name="two dims")


def _native_batch_norm_samples(device, dtype, requires_grad=False):
    import ember

    def m(*shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    def stats():
        return (ember.zeros(3, dtype=getattr(ember, dtype), device=device),
                ember.ones(3, dtype=getattr(ember, dtype), device=device))

    yield SampleInput(m(4, 3, 2), m(3), m(3), *stats(), True, 0.1, 1e-5, name="training")
    yield SampleInput(m(4, 3), None, None, None, None, True, 0.1, 1e-5, name="no running")
    yield SampleInput(m(4, 3, 2), m(3), None, *stats(), False, 0.1, 1e-5, name="eval")


def _native_group_norm_samples(device, dtype, requires_grad=False):
    def m(*shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    yield SampleInput(m(2, 4, 3), m(4), m(4), 2, 4, 3, 2, 1e-5, name="affine")
    yield SampleInput(m(2, 6, 2, 2), None, None, 2, 6, 4, 3, 1e-5, name="plain")


def _convolution_samples(device, dtype, requires_grad=False):
    def m(*shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    yield SampleInput(m(1, 2, 5, 5), m(4, 2, 3, 3), m(4), [2, 1], [1, 0], [1, 1], False,
                      [0, 0], 1, name="conv2d")
    yield SampleInput(m(2, 4, 5), m(4, 1, 3), None, [2], [1], [1], True, [1], 2,
                      name="transposed grouped 1d")


def _frobenius_samples(device, dtype, requires_grad=False):
    yield SampleInput(make((2, 3, 4), dtype, device, requires_grad=requires_grad), [0, 2],
                      name="two dims")
    yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad), [1], True,
                      name="keepdim")


def _nuclear_samples(device, dtype, requires_grad=False):
    yield SampleInput(make((3, 4), dtype, device, requires_grad=requires_grad), name="matrix")
    yield SampleInput(make((2, 3, 4), dtype, device, requires_grad=requires_grad), [0, 2],
                      True, name="dims keepdim")


def _norm_except_dim_samples(device, dtype, requires_grad=False):
    for dim in (0, 1, 2, -1):
        yield SampleInput(make((2, 3, 4), dtype, device, requires_grad=requires_grad), 2, dim,
                          name=f"dim {dim}")
    yield SampleInput(make((3, 4), dtype, device, requires_grad=requires_grad), 3, 1,
                      name="pow 3")


def _embedding_renorm_samples(device, dtype, requires_grad=False):
    import ember

    yield SampleInput(make((5, 3), dtype, device), ember.tensor([0, 2, 2, 4], device=device),
                      1.0, 2.0, name="l2")
    yield SampleInput(make((5, 3), dtype, device), ember.tensor([1, 3], device=device), 0.5,
                      1.0, name="l1")


def _segment_samples(device, dtype, requires_grad=False):
    import ember

    for reduce in ("sum", "mean", "max", "min", "prod"):
        yield SampleInput(make((6,), dtype, device, requires_grad=requires_grad), reduce,
                          lengths=ember.tensor([2, 1, 3], device=device), name=reduce)
        yield SampleInput(make((2, 5, 2), dtype, device, requires_grad=requires_grad), reduce,
                          lengths=ember.tensor([[2, 3], [4, 1]], device=device), axis=1,
                          initial=0.5, name=reduce + " 2-D lengths, initial")
    yield SampleInput(make((5,), dtype, device, requires_grad=requires_grad), "sum",
                      offsets=ember.tensor([0, 2, 2, 5], device=device), name="offsets")


define("lstm_cell", _cell_samples(4))
define("gru_cell", _cell_samples(3))
define("rnn_tanh_cell", _cell_samples(1))
define("rnn_relu_cell", _cell_samples(1))
define("lstm", _rnn_samples(4, True))
define("gru", _rnn_samples(3, False))
define("rnn_tanh", _rnn_samples(1, False))
define("rnn_relu", _rnn_samples(1, False))
define("native_layer_norm", _native_layer_norm_samples, output=lambda r: r[0])
define("native_batch_norm", _native_batch_norm_samples, output=lambda r: r[0])
# all three outputs: the statistics are differentiable in the input, as PyTorch's
define("native_group_norm", _native_group_norm_samples)
define("convolution", _convolution_samples)
define("frobenius_norm", _frobenius_samples)
define("nuclear_norm", _nuclear_samples, atol=1e-4)
define("norm_except_dim", _norm_except_dim_samples)
define("embedding_renorm_", _embedding_renorm_samples, dtypes=FLOAT)
define("segment_reduce", _segment_samples)
