"""PyTorch's public ATen-level names that programs call directly, each on Ember's own kernels:

- the functional recurrent ops (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
  ``rnn_relu_cell``; ``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu`` with their padded and
  packed overloads), composed of Tensor ops with PyTorch's gate arithmetic (so autograd and
  higher-order gradients come for free, as PyTorch's CPU kernels are composite too);
- ``native_layer_norm``, ``native_batch_norm``, ``native_group_norm``: the normalization
  kernels of ``ops/normalization.py`` with the statistics they save for the backward;
- ``convolution`` (the conv kernels of ``ops/conv.py``), the deprecated norms
  ``frobenius_norm`` and ``nuclear_norm``, ``norm_except_dim`` (weight norm's), and
  ``embedding_renorm_``;
- ``segment_reduce``;
- beside them, plain exports that are no ops of the registry: ``set_default_tensor_type``,
  ``svd_lowrank`` / ``pca_lowrank`` (PyTorch's randomized algorithms of ``torch/_lowrank.py``,
  the same draws under the same seed), ``to_dlpack``, ``while_loop`` and ``matrix_rank``
  (removed from PyTorch: it only says what replaced it).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._format import shape_str
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from .registry import register, register_export

__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "gru",
           "rnn_tanh", "rnn_relu", "native_layer_norm", "native_batch_norm",
           "native_group_norm", "convolution", "frobenius_norm", "nuclear_norm",
           "norm_except_dim", "embedding_renorm_", "segment_reduce", "set_default_tensor_type",
           "svd_lowrank", "pca_lowrank", "matrix_rank", "to_dlpack"]


def _ember():
    import ember

    return ember


_WARNED_ONCE: set = set()


def _warn_once(message: str) -> None:
    """PyTorch's ``TORCH_WARN_ONCE``: a UserWarning the first time only."""
    if message not in _WARNED_ONCE:
        _WARNED_ONCE.add(message)
        warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


# -- recurrent cells -----------------------------------------------------------------------------

def _linear(x, w, b):
    y = x.matmul(w.t())
    return y if b is None else y + b


def _check_cell_input(input, input_size):
    if input.size(1) != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                           f"{input_size}")


def _check_cell_hidden(input, hx, hidden_size, label):
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} batch "
                           f"size {hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, "
                           f"expected {hidden_size}")


def _lstm_step(gi, gh, h, c, w_hr):
    """One LSTM step from the input's and the hidden state's gate pre-activations."""
    i, f, g, o = (gi + gh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(gi, gh, h):
    """One GRU step, as PyTorch's ``GRUCell``: ``(h - n) * z + n``."""
    ir, iz, in_ = gi.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = (hr + ir).sigmoid()
    z = (hz + iz).sigmoid()
    n = (in_ + hn * r).tanh()
    return (h - n) * z + n


def _simple_step(gi, gh, nonlinearity):
    s = gi + gh
    return s.tanh() if nonlinearity == "tanh" else s.relu()


@register("lstm_cell", method=False)
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: ``(h', c')`` from ``input`` (batch x input_size) and ``hx = (h, c)``."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell_input(input, w_ih.size(1))
    hidden_size = w_ih.size(0) // 4
    _check_cell_hidden(input, hx[0], hidden_size, 0)
    _check_cell_hidden(input, hx[1], hidden_size, 0)
    return _lstm_step(_linear(input, w_ih, b_ih), _linear(hx[0], w_hh, b_hh), hx[0], hx[1],
                      None)


@register("gru_cell", method=False)
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: ``h'`` from ``input`` (batch x input_size) and ``hx``."""
    _check_cell_input(input, w_ih.size(1))
    _check_cell_hidden(input, hx, w_hh.size(1), 0)
    return _gru_step(_linear(input, w_ih, b_ih), _linear(hx, w_hh, b_hh), hx)


def _simple_cell(nonlinearity):
    def cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        _check_cell_input(input, w_ih.size(1))
        _check_cell_hidden(input, hx, w_hh.size(1), 0)
        return _simple_step(_linear(input, w_ih, b_ih), _linear(hx, w_hh, b_hh), nonlinearity)

    cell.__name__ = cell.__qualname__ = f"rnn_{nonlinearity}_cell"
    cell.__doc__ = (f"One Elman RNN step with {nonlinearity}: ``{nonlinearity}(input @ w_ih.T + "
                    "b_ih + hx @ w_hh.T + b_hh)``.")
    return cell


rnn_tanh_cell = register("rnn_tanh_cell", method=False)(_simple_cell("tanh"))
rnn_relu_cell = register("rnn_relu_cell", method=False)(_simple_cell("relu"))


# -- whole recurrent networks ----------------------------------------------------------------

def _layer(mode, x, h0, c0, w, batch_sizes, reverse):
    """One layer in one direction over the packed rows ``x`` (``sum(batch_sizes) x I``):
    ``(y, h_n, c_n)``. Sequences are sorted by decreasing length, so step ``t`` runs the
    first ``batch_sizes[t]`` rows of the state; forwards, the rows past it have finished
    (their final state); backwards, rows join from ``h0`` as their sequences start."""
    ember = _ember()
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    xw = _linear(x, w_ih, b_ih)  # one product for all steps
    offsets = [0]
    for b in batch_sizes:
        offsets.append(offsets[-1] + b)
    steps = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    outs = [None] * len(batch_sizes)
    h, c = h0, c0
    finished_h, finished_c = [], []
    if reverse:
        last = batch_sizes[-1]
        h = h0[:last]
        c = None if c0 is None else c0[:last]
    for t in steps:
        b = batch_sizes[t]
        n = h.shape[0]
        if b < n:  # forwards: rows b.. have ended
            finished_h.append(h[b:])
            h = h[:b]
            if c is not None:
                finished_c.append(c[b:])
                c = c[:b]
        elif b > n:  # backwards: rows n..b start here
            h = ember.cat([h, h0[n:b]], 0)
            if c is not None:
                c = ember.cat([c, c0[n:b]], 0)
        gi = xw[offsets[t]:offsets[t + 1]]
        gh = _linear(h, w_hh, b_hh)
        if mode == "LSTM":
            h, c = _lstm_step(gi, gh, h, c, w_hr)
        elif mode == "GRU":
            h = _gru_step(gi, gh, h)
        else:
            h = _simple_step(gi, gh, "tanh" if mode == "RNN_TANH" else "relu")
        outs[t] = h
    finished_h.append(h)
    h_n = finished_h[0] if len(finished_h) == 1 else ember.cat(finished_h[::-1], 0)
    c_n = None
    if c is not None:
        finished_c.append(c)
        c_n = finished_c[0] if len(finished_c) == 1 else ember.cat(finished_c[::-1], 0)
    y = outs[0] if len(outs) == 1 else ember.cat(outs, 0)
    return y, h_n, c_n


def _layer_params(params, has_biases, has_proj, num_layers, num_directions):
    """The flat parameter list as ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` per layer and
    direction, checked as PyTorch's ``gather_params``."""
    per = 2 + 2 * bool(has_biases) + bool(has_proj)
    params = list(params)
    if len(params) % per:
        raise RuntimeError("got an incorrect number of RNN parameters")
    groups = []
    for k in range(len(params) // per):
        p = params[k * per:(k + 1) * per]
        b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
        groups.append((p[0], p[1], b_ih, b_hh, p[-1] if has_proj else None))
    if len(groups) < num_layers * num_directions:
        raise RuntimeError("got an incorrect number of RNN parameters")
    return groups


def _run_rnn(mode, x, batch_sizes, h0, c0, params, has_biases, num_layers, dropout, train,
             bidirectional):
    """All layers over the packed rows ``x``: ``(y, h_n, c_n)`` (``c_n`` None but for LSTM)."""
    ember = _ember()
    num_directions = 2 if bidirectional else 1
    has_proj = c0 is not None and h0.size(2) != c0.size(2)
    groups = _layer_params(params, has_biases, has_proj, num_layers, num_directions)
    hs, cs = [], []
    for layer in range(num_layers):
        if layer and dropout and train:
            x = ember.dropout(x, dropout, True)
        outs = []
        for direction in range(num_directions):
            k = layer * num_directions + direction
            y, h_n, c_n = _layer(mode, x, h0[k], None if c0 is None else c0[k], groups[k],
                                 batch_sizes, direction == 1)
            outs.append(y)
            hs.append(h_n)
            cs.append(c_n)
        x = outs[0] if num_directions == 1 else ember.cat(outs, -1)
    h_n = ember.stack(hs, 0)
    c_n = ember.stack(cs, 0) if c0 is not None else None
    return x, h_n, c_n


def _batch_sizes_list(batch_sizes):
    if batch_sizes.dtype != _dtype.int64 or batch_sizes.dim() != 1:
        raise RuntimeError("batch_sizes must be a 1D tensor of int64")
    return [int(b) for b in batch_sizes.tolist()]


def _rnn_padded(mode, input, h0, c0, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first):
    if input.dim() != 3:
        raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
    x = input.transpose(0, 1) if batch_first else input
    T, B = x.shape[0], x.shape[1]
    if T == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    y, h_n, c_n = _run_rnn(mode, x.reshape(T * B, x.shape[2]), [B] * T, h0, c0, params,
                           has_biases, num_layers, dropout, train, bidirectional)
    y = y.reshape(T, B, y.shape[-1])
    return (y.transpose(0, 1) if batch_first else y), h_n, c_n


def _rnn_packed(mode, data, batch_sizes, h0, c0, params, has_biases, num_layers, dropout,
                train, bidirectional):
    return _run_rnn(mode, data, _batch_sizes_list(batch_sizes), h0, c0, params, has_biases,
                    num_layers, dropout, train, bidirectional)


_RNN_DOC = """{name}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
batch_first) -> {ret}
{name}(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
bidirectional) -> {ret}

A whole {what} (``nn.{module}``'s computation) over a padded sequence (``T x B x I``, or
``B x T x I`` with ``batch_first``) or over a packed one (its ``data`` and ``batch_sizes``).
``params`` holds, per layer and direction, ``w_ih, w_hh`` then ``b_ih, b_hh`` with
``has_biases``{proj}; ``hx`` is {hx} of shape ``(num_layers * num_directions, B, H)``.
Both overloads take their arguments by position or by keyword, as PyTorch's."""


def _rnn_signatures(hx_type: str) -> tuple[str, str]:
    """PyTorch's two Python signatures of a functional RNN op, in its parser's order (as its
    errors list them)."""
    common = ("tuple of Tensors params, bool has_biases, int num_layers, float dropout, "
              "bool train, bool bidirectional")
    return (f"(Tensor data, Tensor batch_sizes, {hx_type} hx, {common})",
            f"(Tensor input, {hx_type} hx, {common}, bool batch_first)")


def _bind_rnn(name: str, signatures, args: tuple, kwargs: dict) -> tuple:
    """A call with keywords (or without nine arguments) bound as PyTorch's argument parser
    binds it: the first signature whose names take the keywords and whose types take the
    values; the arguments then in that signature's order. Else PyTorch's TypeError."""
    from ._signatures import _fits, _invalid_combination, _params

    for sig in signatures:
        params = _params(sig)
        names = [p[1] for p in params]
        if len(args) > len(params) or any(k not in names[len(args):] for k in kwargs):
            continue  # too many, an unknown keyword, or one given by position too
        values = list(args) + [kwargs.get(n, _NOT_GIVEN) for n in names[len(args):]]
        if all(v is not _NOT_GIVEN and _fits(p[0], v, False) for p, v in zip(params, values)):
            return tuple(values)
    raise TypeError(_invalid_combination(f"{name}()", signatures, args, kwargs)) from None


_NOT_GIVEN = object()


def _rnn_op(mode: str, name: str, module: str, what: str):
    """``ember.<name>``: PyTorch's functional ``lstm``/``gru``/``rnn_*`` with both overloads.
    Nine positional arguments (how ``nn``'s modules call it) go straight to the overload that
    the third (LSTM: second) argument's type picks; keywords go through ``_bind_rnn``."""
    lstm = mode == "LSTM"
    signatures = _rnn_signatures("tuple of Tensors" if lstm else "Tensor")
    split = 1 if lstm else 2  # batch_sizes (packed) vs hx (LSTM) / params (the others)

    def hidden(hx):
        if not lstm:
            return hx, None
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        return hx[0], hx[1]

    def padded(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
        y, h_n, c_n = _rnn_padded(mode, input, *hidden(hx), params, has_biases, num_layers,
                                  dropout, train, bidirectional, batch_first)
        return (y, h_n, c_n) if lstm else (y, h_n)

    def packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
               bidirectional):
        y, h_n, c_n = _rnn_packed(mode, data, batch_sizes, *hidden(hx), params, has_biases,
                                  num_layers, dropout, train, bidirectional)
        return (y, h_n, c_n) if lstm else (y, h_n)

    def fn(*args, **kwargs):
        if kwargs or len(args) != 9:
            args = _bind_rnn(name, signatures, args, kwargs)
        try:
            if isinstance(args[split], Tensor):
                return packed(*args)
            return padded(*args)
        except Exception:  # the types go unchecked on the fast path: PyTorch's TypeError
            _bind_rnn(name, signatures, args, {})  # when they do not fit, else the error
            raise

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _RNN_DOC.format(
        name=name, ret="(output, h_n, c_n)" if lstm else "(output, h_n)", what=what,
        module=module, hx="``(h_0, c_0)``, each" if lstm else "a tensor",
        proj=", then ``w_hr`` when ``h_0`` is narrower than ``c_0`` (a projection)"
        if lstm else "")
    return register(name, method=False)(fn)


lstm = _rnn_op("LSTM", "lstm", "LSTM", "LSTM")
gru = _rnn_op("GRU", "gru", "GRU", "GRU")
rnn_tanh = _rnn_op("RNN_TANH", "rnn_tanh", "RNN", "tanh Elman RNN")
rnn_relu = _rnn_op("RNN_RELU", "rnn_relu", "RNN", "ReLU Elman RNN")


# -- native normalization ----------------------------------------------------------------------

def _stat(a, like):
    """A statistics array as a tensor on ``like``'s device (outside the graph)."""
    return _make(a, like._device)


def _stat_dtype(input, weight):
    """PyTorch's dtype of the saved statistics: the input's, but float32 for a float16 or
    bfloat16 input with float32 parameters (its mixed type)."""
    dt = input._data.dtype
    if dt in _dtype.FLOATING_NP and dt.itemsize < 4 and (
            weight is None or weight._data.dtype == dt):
        return dt
    return None


def _as_stat(a, input, weight):
    dt = _stat_dtype(input, weight)
    if dt is not None and a.dtype != dt:
        a = a.astype(dt)
    return _stat(a, input)


@register("native_layer_norm", method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(out, mean, rstd)``: layer norm over the trailing ``normalized_shape`` dims, with
    its statistics shaped as the input's leading dims followed by ones."""
    from .normalization import (
        _check_float,
        _check_normalized,
        _check_params,
        _layer_norm_with_stats,
        _normalized_shape,
    )

    shape = _normalized_shape(normalized_shape, "native_layer_norm")
    _check_normalized(input, shape, weight, bias, ", ")
    _check_float(input, "LayerNormKernelImpl")
    from .._device import check_same_device

    check_same_device(input, weight, bias)
    _check_params(input, (weight, bias))
    out, mean, rstd = _layer_norm_with_stats(input, shape, weight, bias, eps)
    return out, _as_stat(mean, input, weight), _as_stat(rstd, input, weight)


@register("native_batch_norm", method=False)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                      *, out=None):
    """``(out, save_mean, save_invstd)``: batch norm, with the batch's per-channel mean and
    inverse standard deviation in training (empty tensors in evaluation, as PyTorch's CPU
    kernel gives); the running statistics are updated in place in training. ``out=`` takes
    the three tensors (in evaluation the statistics' are left as they are, as PyTorch's)."""
    from .normalization import _batch_norm_with_stats

    if out is not None:
        _check_batch_norm_out(out, input, weight, bias)
    out_, mean, invstd = _batch_norm_with_stats(input, weight, bias, running_mean,
                                                running_var, training, momentum, eps)
    if out is not None:
        from ._inplace import write_out

        write_out(out[0], out_, "native_batch_norm", "same")
        if mean is not None:
            write_out(out[1], _as_stat(mean, input, weight), "native_batch_norm", "same")
            write_out(out[2], _as_stat(invstd, input, weight), "native_batch_norm", "same")
        return tuple(out)
    if mean is None:
        xp = xp_of(input)
        empty = xp.empty((0,), input._data.dtype)
        return out_, _stat(empty, input), _stat(empty.copy(), input)
    return out_, _as_stat(mean, input, weight), _as_stat(invstd, input, weight)


def _check_batch_norm_out(out, input, weight, bias) -> None:
    """PyTorch's refusals of ``native_batch_norm``'s ``out=`` before it computes: the
    parser's (three tensors), autograd's, then the kernel's dtypes (the statistics' first)."""
    from .._factory import tp_name

    if not isinstance(out, (tuple, list)):
        raise TypeError("native_batch_norm(): argument 'out' must be tuple of Tensors, not "
                        f"{tp_name(out)}")
    if len(out) != 3:
        raise TypeError(f"expected tuple of 3 elements but got {len(out)}")
    for i, o in enumerate(out):
        if not isinstance(o, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 8, but got "
                            f"{tp_name(o)}")
    if GRAD.enabled and any(t is not None and t.requires_grad
                            for t in (input, weight, bias, *out)):
        raise RuntimeError("native_batch_norm(): functions with out=... arguments don't "
                           "support automatic differentiation, but one of the arguments "
                           "requires grad.")
    stat = input._data.dtype  # float32 for a float16/bfloat16 input with float32 weights
    if stat in _dtype.FLOATING_NP and stat.itemsize < 4 and _stat_dtype(input, weight) is None:
        stat = np.dtype(np.float32)
    for o, want in ((out[1], stat), (out[2], stat), (out[0], input._data.dtype)):
        if o._data.dtype != want:
            raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(want)} but "
                               f"found {_dtype.scalar_type_name(o._data.dtype)}")


@register("native_group_norm", method=False)
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(out, mean, rstd)``: group norm of ``input`` (``N x C x *``, ``HxW`` elements per
    channel) in ``group`` groups; the statistics are ``N x group``."""
    from .normalization import _check_float, _group_norm_with_stats

    d = input._data
    if d.size != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    if d.ndim < 2 or d.shape[0] != N or d.shape[1] != C:
        raise RuntimeError(f"Expected input of shape [{N}, {C}, *], got "
                           f"[{shape_str(d.shape)}]")
    if group <= 0 or C % group:
        raise RuntimeError("Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape [{shape_str(d.shape)}] and "
                           f"num_groups={group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape "
                               f"[{shape_str(t._data.shape)}] and input of shape "
                               f"[{shape_str(d.shape)}]")
    _check_float(input, "GroupNormKernelImpl")
    out, mean, rstd = _group_norm_with_stats(input, group, weight, bias, eps)
    mean, rstd = _as_stat(mean, input, weight), _as_stat(rstd, input, weight)
    if GRAD.enabled and any(t is not None and t.requires_grad for t in (input, weight, bias)):
        from .linalg_common import record_multi

        # PyTorch's statistics are outputs 1 and 2 of the op's node, differentiable in the
        # input (not in weight and bias, which they do not read)
        record_multi(NativeGroupNormStatsBackward, (None, mean, rstd), (input,), (input,),
                     (group, eps))
    return out, mean, rstd


def _group_stats_bw(node, grads):
    """The input's gradient from the statistics' (``var_mean``'s backward over each group:
    ``d mean = 1/M``, ``d rstd = -rstd^3 (x - mean) / M``), in Tensor ops, so that it is
    itself differentiable. PyTorch's own backward drops the mean's gradient unless the
    rstd's comes too (``infinitely_differentiable_native_group_norm_backward``); this one
    is the derivative in every case (gradcheck)."""
    from .linalg_common import multi_ctx

    (input,) = node.saved
    group, eps = multi_ctx(node)
    _, g_mean, g_rstd = grads
    if g_mean is None and g_rstd is None:
        return (None,)
    dt = (g_mean if g_mean is not None else g_rstd).dtype
    x = input.reshape(input.shape[0], group, -1).to(dt)
    m = x.shape[-1]
    grad = None
    if g_mean is not None:
        grad = (g_mean.unsqueeze(-1) / m).expand(x.shape)
    if g_rstd is not None:
        xc = x - x.mean(-1, keepdim=True)
        rstd = ((xc * xc).mean(-1, keepdim=True) + eps).rsqrt()
        term = (g_rstd.unsqueeze(-1) * rstd.pow(3) / -m) * xc
        grad = term if grad is None else grad + term
    return (grad.reshape(input.shape).to(input.dtype),)


NativeGroupNormStatsBackward = make_node_class("NativeGroupNormBackward0", _group_stats_bw,
                                               n_out=3)


# -- convolution -------------------------------------------------------------------------------

@register("convolution", method=False)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """ATen's one convolution entry: ``conv{1,2,3}d`` or, ``transposed``, the transposed one,
    by the weight's number of dims; the input must be batched."""
    from .conv import _conv_transposend, _convnd

    n = weight.dim() - 2
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight [{shape_str(weight.shape)}], but got "
                           f"{input.dim()}-dimensional input of size "
                           f"[{shape_str(input.shape)}] instead")
    if n not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-, 4- or 5-dimensional weight, got "
                           f"{weight.dim()} dimensions")
    if transposed:
        return _conv_transposend(n, input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)
    return _convnd(n, input, weight, bias, stride, padding, dilation, groups)


# -- norms -------------------------------------------------------------------------------------

@register("frobenius_norm", method=False, out=True)
def frobenius_norm(input, dim, keepdim=False):
    """Deprecated: ``linalg.vector_norm(input, 2, dim, keepdim)`` over at most two dims."""
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    _warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It "
               "will be removed in a future PyTorch release. Please use "
               "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    return _ember().linalg.vector_norm(input, 2, dims if dims else None, keepdim)


@register("nuclear_norm", method=False, out=True)
def nuclear_norm(input, dim=None, keepdim=False):
    """Deprecated: ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``; ``nuclear_norm(input,
    keepdim)`` takes the last two dims."""
    if isinstance(dim, bool):  # the overload nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    _warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
               "will be removed in a future PyTorch release. Please use "
               "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if dim is None:
        dim = (-2, -1)
    elif isinstance(dim, numbers.Integral):
        dim = (dim,)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(int(d)) for d in dim)}")
    return _ember().linalg.matrix_norm(input, "nuc", tuple(dim), keepdim)


@register("norm_except_dim", method=False)
def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (weight
    norm's); ``dim=-1`` is the norm of all of ``v``."""
    if dim == -1:
        return v.norm(pow)
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {dim})")
    dim %= nd
    # ATen's v.contiguous().view(...): reshape is that view here, and forward AD can replay it
    # on a tangent of another layout
    if dim == 0:
        shape = (v.size(0),) + (1,) * (nd - 1)
        return v.contiguous().reshape(v.size(0), -1).norm(pow, 1).reshape(shape)
    if dim == nd - 1:
        shape = (1,) * (nd - 1) + (v.size(-1),)
        return v.contiguous().reshape(-1, v.size(-1)).norm(pow, 0).reshape(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


@register("embedding_renorm_", method=False, differentiable=False)
def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows of ``weight`` named by ``indices`` whose ``norm_type``-norm
    exceeds ``max_norm`` to norm ``max_norm`` (what ``embedding`` does with ``max_norm``);
    returns ``weight``."""
    if indices._data.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise RuntimeError("Expected tensor for argument #2 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{indices.type()} instead (while checking arguments for "
                           "embedding_renorm_)")
    if weight.dim() != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {weight.dim()}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "embedding_renorm_)")
    if GRAD.enabled and weight.requires_grad and weight.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    xp = xp_of(weight)
    rows = xp.unique(indices._data.reshape(-1))
    w = weight._data
    sel = w[rows].astype(np.float64) if w.dtype.itemsize < 4 else w[rows]
    if norm_type == math.inf:
        norms = xp.abs(sel).max(axis=1)
    else:
        norms = (xp.abs(sel) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    big = norms > max_norm
    if bool(big.any()):
        scale = max_norm / (norms[big] + 1e-7)
        w[rows[big]] = (sel[big] * scale[:, None]).astype(w.dtype)
        weight._bump_version()
    return weight


# -- segment_reduce ----------------------------------------------------------------------------

_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "max": "max", "amax": "max",
               "min": "min", "amin": "min"}


def _segment_arrays(d, lengths, axis, reduce, initial, xp):
    """The forward on arrays: ``d`` reduced along ``axis`` (= ``lengths.ndim - 1``) in
    segments of ``lengths`` (``d.shape[:axis] + (segments,)``)."""
    lead = d.shape[:axis]
    rest = d.shape[axis + 1:]
    rows = math.prod(lead)
    segs = lengths.shape[-1]
    x = d.reshape((rows, d.shape[axis]) + rest)
    lens = lengths.reshape(rows, segs)
    out = xp.empty((rows, segs) + rest, d.dtype)
    ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "max": xp.maximum,
             "min": xp.minimum}[reduce]
    identity = {"sum": 0, "mean": 0, "prod": 1, "max": -np.inf, "min": np.inf}[reduce]
    for r in range(rows):
        ln = lens[r]
        starts = xp.concatenate([xp.zeros(1, ln.dtype), xp.cumsum(ln)[:-1]])
        nonempty = ln > 0
        out[r] = identity
        if bool(nonempty.any()):
            out[r][nonempty] = ufunc.reduceat(x[r], starts[nonempty], axis=0)
    shape_l = (rows, segs) + (1,) * len(rest)
    ln = lens.reshape(shape_l)
    if initial is not None:
        if reduce in ("sum", "mean"):
            out += initial
        elif reduce == "prod":
            out *= initial
        else:
            out = ufunc(out, xp.asarray(initial, d.dtype))
    if reduce == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = out / xp.maximum(ln, 1)
            empty = xp.broadcast_to(ln == 0, out.shape)
            out = xp.where(empty, xp.asarray(np.nan if initial is None else initial, d.dtype),
                           mean).astype(d.dtype)
    return out.reshape(lead + (segs,) + rest)


def _expand_segments(t, lengths, axis, n):
    """``t`` (one value per segment along ``axis``) repeated over each segment's elements:
    the shape of the data (``n`` elements along ``axis``)."""
    lead = tuple(t.shape[:axis])
    rest = tuple(t.shape[axis + 1:])
    rows = math.prod(lead)
    segs = t.shape[axis]
    xp = xp_of(lengths)
    lens = lengths._data.reshape(rows, segs)
    ids = [xp.repeat(xp.arange(segs) + r * segs, lens[r]) for r in range(rows)]
    flat = xp.concatenate(ids) if ids else xp.zeros(0, np.int64)
    index = _make(flat.astype(np.int64), t._device)
    picked = t.reshape((rows * segs,) + rest).index_select(0, index)
    return picked.reshape(lead + (n,) + rest)


def _segment_backward(node, g):
    data, lengths = node.saved
    reduce, axis, initial = node.ctx
    out = node.output()
    n = data.shape[axis]
    ge = _expand_segments(g, lengths, axis, n)
    if reduce == "sum":
        return (ge,)
    lens = _expand_segments(lengths.to(g.dtype), lengths, axis, n)
    lens = lens.reshape(tuple(lens.shape) + (1,) * (data.dim() - lens.dim()))
    if reduce == "mean":
        return (ge / lens,)
    oe = _expand_segments(out, lengths, axis, n)
    if reduce in ("max", "min"):
        hit = (data == oe).to(g.dtype)
        count = _expand_segments(segment_reduce(hit, "sum", lengths=lengths, axis=axis),
                                 lengths, axis, n)
        return (ge * hit / count.clamp(min=1),)  # count 0: ``initial`` won
    # prod: out / x where x != 0; where x == 0, the product of the others (0 past one zero)
    zero = data == 0
    safe = data.masked_fill(zero, 1)
    others = _expand_segments(segment_reduce(safe, "prod", lengths=lengths, axis=axis,
                                             initial=initial), lengths, axis, n)
    zeros = _expand_segments(segment_reduce(zero.to(g.dtype), "sum", lengths=lengths,
                                            axis=axis), lengths, axis, n)
    lone = others.masked_fill(zeros != 1, 0)
    return (ge * _ember().where(zero, lone, oe / safe),)


def _segment_bw(node, g):
    return _segment_backward(node, g)


SegmentReduceBackward0 = make_node_class("SegmentReduceBackward0", _segment_bw)


@register("segment_reduce", method=False)
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """Reduce ``data`` along ``axis`` in consecutive segments given by ``lengths`` (or
    ``offsets``): ``reduce`` is ``"sum"``, ``"mean"``, ``"prod"``, ``"max"``/``"amax"`` or
    ``"min"``/``"amin"``; an empty segment gives ``initial`` (else the reduction's identity,
    NaN for the mean)."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    kind = _REDUCTIONS[reduce]
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    xp = xp_of(data)
    if lengths is not None:
        if lengths._data.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
            raise NotImplementedError("\"_segment_reduce_lengths_cpu_kernel1\" not implemented "
                                      f"for '{_dtype.scalar_type_name(lengths._data.dtype)}'")
        lens = lengths._data.astype(np.int64)
    elif offsets is not None:
        if offsets._data.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
            raise NotImplementedError("\"_segment_reduce_offsets_cpu_kernel1\" not implemented "
                                      f"for '{_dtype.scalar_type_name(offsets._data.dtype)}'")
        off = offsets._data.astype(np.int64)
        lens = off[..., 1:] - off[..., :-1]
    else:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    d = data._data
    if d.dtype not in _dtype.FLOATING_NP:
        raise NotImplementedError("\"_segment_reduce_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(d.dtype)}'")
    seg_axis = lens.ndim - 1
    axis = axis + d.ndim if axis < 0 else axis
    if axis != seg_axis:
        raise RuntimeError("segment_reduce(): Expected axis to be the last dimension of "
                           f"lengths but got {axis}.")
    if not unsafe:
        if bool((lens < 0).any()):
            raise RuntimeError("lengths contains negative value!")
        if lens.shape[:-1] != d.shape[:axis] or bool((lens.sum(-1) != d.shape[axis]).any()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
    wide = _dtype.widen(d)
    out_arr = _segment_arrays(wide, lens, axis, kind, initial, xp).astype(d.dtype, copy=False)
    out = _make(out_arr, data._device)
    if GRAD.enabled and data.requires_grad:
        record(SegmentReduceBackward0, out, (data,), (data, _make(lens, data._device)),
               (kind, axis, initial), save_output=True)
    return out


# -- plain exports ------------------------------------------------------------------------------

def set_default_tensor_type(t) -> None:
    """Deprecated (PyTorch 2.1): set the default floating dtype (and, for a CUDA type, the
    default device) from a legacy tensor type or its name (``ember.DoubleTensor``,
    ``'torch.DoubleTensor'``). Use ``set_default_dtype`` and ``set_default_device``."""
    from .._tensor_types import parse_type, tensortype

    if isinstance(t, str):
        name = t
    elif isinstance(t, tensortype) or t is Tensor:
        name = None
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=user_stacklevel())
    try:
        device_type, dt = parse_type(t)
    except ValueError:
        raise TypeError(f"invalid type: '{name}'") from None
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    ember = _ember()
    if device_type == "cuda" and not ember.cuda.is_available():
        shown = name if name is not None else f"torch.cuda.{t.__name__}"
        raise TypeError(f"type {shown} not available. Torch not compiled with CUDA enabled.")
    ember.set_default_dtype(dt)
    if device_type != "cpu":
        ember.set_default_device(device_type)


def _matmul(a, b):
    ember = _ember()
    if getattr(a, "is_sparse", False):
        return ember.sparse.mm(a, b)
    return ember.matmul(a, b)


def _floating_dtype(A):
    return A.dtype if A.dtype.is_floating_point or A.is_complex() else _dtype.float32


def _approximate_basis(A, q, niter, M):
    """An orthonormal ``Q`` whose span approximates ``A``'s range (Halko et al. 2009,
    algorithm 4.4), ``A - M`` when ``M`` is given: PyTorch's ``get_approximate_basis``."""
    ember = _ember()
    niter = 2 if niter is None else niter
    R = ember.randn(A.shape[-1], q, dtype=_floating_dtype(A), device=A.device)
    X = _matmul(A, R)
    if M is not None:
        X = X - _matmul(M, R)
    Q = ember.linalg.qr(X).Q
    for _ in range(niter):
        X = _matmul(A.mH, Q)
        if M is not None:
            X = X - _matmul(M.mH, Q)
        Q = ember.linalg.qr(X).Q
        X = _matmul(A, Q)
        if M is not None:
            X = X - _matmul(M, Q)
        Q = ember.linalg.qr(X).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    ember = _ember()
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:
        A = A.mH
        if M is not None:
            M = M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = _matmul(Q.mH, A) if not getattr(A, "is_sparse", False) else _matmul(A.mH, Q).mH
    if M is not None:
        B = B - _matmul(Q.mH, M)
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """``(U, S, V)``, an approximate rank-``q`` SVD of ``A`` (or of ``A - M``) by randomized
    subspace iteration with ``niter`` power steps, PyTorch's algorithm (``torch/_lowrank.py``):
    under the same seed it draws the same ``randn`` and gives the same factors. ``A`` may be
    sparse. ``q`` should be a little above the rank sought; the factors are differentiable."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """``(U, S, V)``, a principal component analysis of ``A`` (``*, m, n``) by
    ``svd_lowrank`` of the column-centred matrix: ``q`` components (``min(6, m, n)`` by
    default), ``niter`` power steps. ``A`` may be sparse (2-D)."""
    ember = _ember()
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    dtype = _floating_dtype(A)
    if not center:
        return _svd_lowrank(A, q, niter, None)
    if getattr(A, "is_sparse", False):
        if len(A.shape) != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        c = A.to_dense().sum(-2) / m
        ones = ember.ones(A.shape[:-2] + (1, m), dtype=dtype, device=A.device)
        M = c.to(dtype).reshape(n, 1).matmul(ones).mT
        return _svd_lowrank(A, q, niter, M)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter, None)


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed (PyTorch 1.9): raises, pointing to ``ember.linalg.matrix_rank``."""
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed.\n"
                       "Please use the `torch.linalg.matrix_rank` function instead. The "
                       "parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to "
                       "'hermitian'.")


def to_dlpack(tensor) -> object:
    """to_dlpack(tensor) -> PyCapsule: ``ember.utils.dlpack.to_dlpack`` (a legacy DLPack
    capsule sharing the tensor's memory)."""
    from ..utils.dlpack import to_dlpack as capsule  # imports ember._factory: at call time

    return capsule(tensor)


def _export_all():
    from .._while_loop import while_loop

    for fn in (set_default_tensor_type, svd_lowrank, pca_lowrank, matrix_rank, to_dlpack,
               while_loop):
        register_export(fn.__name__, fn)


_export_all()
