"""Golden files of the nn module tests (run by ctest before them, see tests/CMakeLists.txt):

    python golden_nn.py GOLDEN_DIR

For each case below, builds the module in Python Ember from a seed, gives its floating point
parameters and buffers random values (so that every weight matters), runs it on a random
input and backpropagates sum(output * w) for a fixed random w. GOLDEN_DIR/<case>.safetensors
then holds

    state.<key>       the state_dict before the forward (what C++ loads by name)
    input.<i>         the inputs
    output.<j>        the outputs (an LSTM's output, h_n, c_n; an attention's output, weights)
    weight.<j>        the w of each output in the loss
    grad.<key>        the gradient of every parameter (absent: no gradient)
    grad.input.<i>    the gradient of every floating point input
    after.<key>       the state_dict after the forward (BatchNorm's running statistics)

and its "__metadata__": "state_dict" (the state_dict keys in order, comma-separated),
"parameters" and "buffers" (named_parameters() and named_buffers() keys), "repr"
(repr(module)) and "train" ("1": training mode, "0": eval mode). The C++ tests build the
same module, copy the state in by name and compare.

The files are written with the small safetensors writer of tests/common/safetensors_writer.py
(NumPy only: the `safetensors` package is not needed).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_writer import save_safetensors

import ember
import ember.nn as nn


def randn(*shape, dtype=ember.float32):
    return ember.randn(*shape, dtype=dtype)


# Each case: (module factory, input factory, forward, mode). forward(module, inputs) returns
# a tuple of outputs (None for an absent one).
def _call(m, xs):
    return (m(*xs),)


CASES = {}


def case(name, make, inputs, forward=_call, train=True):
    CASES[name] = (make, inputs, forward, train)


f64 = ember.float64
case("linear", lambda: nn.Linear(4, 3), lambda: [randn(2, 5, 4)])
case(
    "linear_nobias_f64",
    lambda: nn.Linear(4, 3, bias=False, dtype=f64),
    lambda: [randn(3, 4, dtype=f64)],
)
case("conv1d", lambda: nn.Conv1d(2, 4, 3, stride=2, padding=1), lambda: [randn(2, 2, 9)])
case("conv2d", lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: [randn(2, 3, 6, 6)])
case(
    "conv2d_groups_f64",
    lambda: nn.Conv2d(
        4,
        6,
        (3, 2),
        stride=(2, 1),
        padding=(1, 0),
        dilation=(1, 2),
        groups=2,
        bias=False,
        dtype=f64,
    ),
    lambda: [randn(2, 4, 7, 6, dtype=f64)],
)
# padding modes (F.pad, then a convolution without padding) and transposed convolutions
case(
    "conv2d_reflect",
    lambda: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"),
    lambda: [randn(2, 2, 5, 6)],
)
case(
    "conv1d_circular_same",
    lambda: nn.Conv1d(2, 3, 4, padding="same", dilation=2, padding_mode="circular"),
    lambda: [randn(2, 2, 9)],
)
case(
    "conv3d_replicate_f64",
    lambda: nn.Conv3d(2, 2, (2, 3, 2), stride=(1, 2, 1), padding=1, padding_mode="replicate",
                      dtype=f64),
    lambda: [randn(1, 2, 3, 5, 4, dtype=f64)],
)
case(
    "conv_transpose1d",
    lambda: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
    lambda: [randn(2, 3, 6)],
)
case(
    "conv_transpose2d_groups_f64",
    lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2, bias=False,
                               dilation=(1, 2), dtype=f64),
    lambda: [randn(2, 4, 4, 5, dtype=f64)],
)
case(
    "conv_transpose2d_output_size",
    lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
    lambda: [randn(2, 3, 4, 5)],
    lambda m, xs: (m(xs[0], output_size=[2, 2, 8, 10]),),
)
case("conv_transpose3d_unbatched", lambda: nn.ConvTranspose3d(2, 3, 2, stride=2),
     lambda: [randn(2, 2, 3, 2)])
case("reflection_pad1d", lambda: nn.ReflectionPad1d((3, 1)), lambda: [randn(2, 3, 5)])
case("reflection_pad2d", lambda: nn.ReflectionPad2d((1, 1, 2, 0)), lambda: [randn(2, 3, 4, 5)])
case("reflection_pad3d", lambda: nn.ReflectionPad3d(1), lambda: [randn(2, 3, 3, 4)])
case("replication_pad1d", lambda: nn.ReplicationPad1d(2), lambda: [randn(3, 4)])
case("replication_pad2d", lambda: nn.ReplicationPad2d((0, 3, 1, 2)), lambda: [randn(1, 2, 3, 3)])
case(
    "replication_pad3d", lambda: nn.ReplicationPad3d((1, 2, 0, 1, 2, 1)),
    lambda: [randn(1, 2, 3, 3, 4)],
)
case("zero_pad1d", lambda: nn.ZeroPad1d((2, 0)), lambda: [randn(2, 3, 4)])
case("zero_pad2d", lambda: nn.ZeroPad2d(2), lambda: [randn(2, 3, 3)])
case("zero_pad3d", lambda: nn.ZeroPad3d((1, 0, 0, 2, 1, 1)), lambda: [randn(1, 2, 2, 3, 3)])
case("constant_pad1d", lambda: nn.ConstantPad1d((3, 1), 3.5), lambda: [randn(2, 4)])
case("constant_pad2d", lambda: nn.ConstantPad2d((-1, 2, 1, 0), -2.0), lambda: [randn(2, 3, 4)])
case("constant_pad3d", lambda: nn.ConstantPad3d(1, 0.25), lambda: [randn(1, 2, 2, 3, 2)])
case("circular_pad1d", lambda: nn.CircularPad1d((2, 3)), lambda: [randn(2, 3, 4)])
case("circular_pad2d", lambda: nn.CircularPad2d((1, 2, 2, 0)), lambda: [randn(3, 4, 5)])
case("circular_pad3d", lambda: nn.CircularPad3d((1, 1, 0, 2, 1, 0)), lambda: [randn(1, 2, 2, 3, 3)])
case("batchnorm2d_train", lambda: nn.BatchNorm2d(3), lambda: [randn(4, 3, 5, 5)])
case("batchnorm2d_eval", lambda: nn.BatchNorm2d(3), lambda: [randn(4, 3, 5, 5)], train=False)
case(
    "batchnorm1d_train_f64",
    lambda: nn.BatchNorm1d(4, momentum=None, dtype=f64),
    lambda: [randn(8, 4, dtype=f64)],
)
case(
    "batchnorm1d_noaffine_3d",
    lambda: nn.BatchNorm1d(3, affine=False, eps=1e-3, momentum=0.3),
    lambda: [randn(4, 3, 6)],
)
case("layernorm", lambda: nn.LayerNorm([3, 4]), lambda: [randn(2, 5, 3, 4)])
case(
    "layernorm_nobias_f64",
    lambda: nn.LayerNorm(6, eps=1e-6, bias=False, dtype=f64),
    lambda: [randn(3, 6, dtype=f64)],
)
case(
    "embedding",
    lambda: nn.Embedding(10, 3, padding_idx=1),
    lambda: [ember.tensor([[0, 1, 2, 1], [9, 3, 1, 0]], dtype=ember.int64)],
)
case("dropout_eval", lambda: nn.Dropout(0.3), lambda: [randn(4, 5)], train=False)
case("relu", lambda: nn.ReLU(), lambda: [randn(3, 7)])
case("gelu", lambda: nn.GELU(), lambda: [randn(3, 7)])
case("gelu_tanh", lambda: nn.GELU("tanh"), lambda: [randn(3, 7)])
case("tanh", lambda: nn.Tanh(), lambda: [randn(3, 7)])
case("sigmoid", lambda: nn.Sigmoid(), lambda: [randn(3, 7)])
case("silu", lambda: nn.SiLU(), lambda: [randn(3, 7)])
case("leaky_relu", lambda: nn.LeakyReLU(0.2), lambda: [randn(3, 7)])
case("softmax", lambda: nn.Softmax(dim=1), lambda: [randn(3, 7)])
case("log_softmax", lambda: nn.LogSoftmax(dim=0), lambda: [randn(3, 7)])
case("maxpool2d", lambda: nn.MaxPool2d(3, stride=2, padding=1), lambda: [randn(2, 3, 7, 7)])
case("avgpool2d", lambda: nn.AvgPool2d(2), lambda: [randn(2, 3, 6, 6)])
case(
    "avgpool2d_ceil",
    lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    lambda: [randn(2, 3, 6, 6)],
)
case("adaptive_avgpool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: [randn(2, 3, 7, 8)])
case(
    "adaptive_avgpool2d_none", lambda: nn.AdaptiveAvgPool2d((None, 2)), lambda: [randn(2, 3, 5, 7)]
)
case("flatten", lambda: nn.Flatten(), lambda: [randn(2, 3, 4, 5)])
case(
    "sequential_cnn",
    lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.0),
        nn.Linear(4 * 3 * 3, 5),
    ),
    lambda: [randn(3, 1, 6, 6)],
)


def _lstm_call(m, xs):
    out, (h, c) = m(xs[0]) if len(xs) == 1 else m(xs[0], (xs[1], xs[2]))
    return out, h, c


case(
    "lstm",
    lambda: nn.LSTM(3, 5, num_layers=2, batch_first=True),
    lambda: [randn(2, 4, 3)],
    _lstm_call,
)
case(
    "lstm_bidirectional_hx",
    lambda: nn.LSTM(3, 4, bidirectional=True),
    lambda: [randn(5, 2, 3), randn(2, 2, 4), randn(2, 2, 4)],
    _lstm_call,
)
case(
    "lstm_proj_nobias_f64",
    lambda: nn.LSTM(3, 6, proj_size=2, bias=False, dtype=f64),
    lambda: [randn(4, 3, dtype=f64)],
    _lstm_call,
)


def _self_attention(m, xs):
    x = xs[0]
    mask = ember.tensor([[False, False, False, True], [False, False, False, False]])
    return m(x, x, x, key_padding_mask=mask)


def _cross_attention(m, xs):
    q, k, v, mask = xs
    return m(q, k, v, attn_mask=mask, need_weights=False)


def _attention_heads(m, xs):
    q, kv = xs
    return m(q, kv, kv, average_attn_weights=False)


case("mha_self", lambda: nn.MultiheadAttention(8, 2), lambda: [randn(4, 2, 8)], _self_attention)
case(
    "mha_cross_f64",
    lambda: nn.MultiheadAttention(
        6, 3, kdim=5, vdim=4, add_bias_kv=True, add_zero_attn=True, batch_first=True, dtype=f64
    ),
    lambda: [
        randn(2, 3, 6, dtype=f64),
        randn(2, 4, 5, dtype=f64),
        randn(2, 4, 4, dtype=f64),
        randn(3, 4, dtype=f64),
    ],
    _cross_attention,
)
case(
    "mha_kv_heads",
    lambda: nn.MultiheadAttention(4, 2, bias=False),
    lambda: [randn(3, 2, 4), randn(5, 2, 4)],
    _attention_heads,
)


def _encoder_mask(m, xs):
    mask = ember.tensor([[False, False, True, True, True], [False, False, False, False, True]])
    return (m(xs[0], src_key_padding_mask=mask),)


case(
    "transformer_encoder",
    lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    lambda: [randn(5, 2, 8)],
    train=False,
)
case(
    "transformer_encoder_norm_first_gelu",
    lambda: nn.TransformerEncoderLayer(
        8, 4, dim_feedforward=12, activation="gelu", batch_first=True, norm_first=True
    ),
    lambda: [randn(2, 5, 8)],
    _encoder_mask,
    train=False,
)


def numpy_of(t):
    return t.detach().numpy().copy()


def run_case(name, make, inputs, forward, train):
    ember.manual_seed(sum(name.encode()))
    m = make()
    m.train(train)
    with ember.no_grad():
        for key, t in m.state_dict().items():
            if t.is_floating_point():
                t.copy_(ember.randn(*t.shape, dtype=t.dtype) * 0.5 + (1.0 if "var" in key else 0.0))
                if "var" in key:
                    t.abs_()
    xs = inputs()
    xs = [x.requires_grad_(True) if x.is_floating_point() else x for x in xs]
    state = {"state." + k: numpy_of(v) for k, v in m.state_dict().items()}
    outs = forward(m, xs)
    loss = None
    files = dict(state)
    for j, out in enumerate(outs):
        if out is None:
            continue
        files[f"output.{j}"] = numpy_of(out)
        w = ember.randn(*out.shape, dtype=out.dtype)
        files[f"weight.{j}"] = numpy_of(w)
        term = (out * w).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    for i, x in enumerate(xs):
        files[f"input.{i}"] = numpy_of(x)
        if x.is_floating_point() and x.grad is not None:
            files[f"grad.input.{i}"] = numpy_of(x.grad)
    for k, p in m.named_parameters():
        if p.grad is not None:
            files["grad." + k] = numpy_of(p.grad)
    for k, v in m.state_dict().items():
        files["after." + k] = numpy_of(v)
    metadata = {
        "state_dict": ",".join(m.state_dict().keys()),
        "parameters": ",".join(k for k, _ in m.named_parameters()),
        "buffers": ",".join(k for k, _ in m.named_buffers()),
        "repr": repr(m),
        "train": "1" if train else "0",
    }
    return files, metadata


def main(golden: str) -> int:
    os.makedirs(golden, exist_ok=True)
    for name, (make, inputs, forward, train) in CASES.items():
        files, metadata = run_case(name, make, inputs, forward, train)
        save_safetensors(os.path.join(golden, name + ".safetensors"), files, metadata)
    print(f"golden_nn: wrote {len(CASES)} cases to {golden}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
