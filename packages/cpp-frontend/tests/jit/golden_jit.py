"""Golden files of the jit tests (run by ctest before them, see tests/CMakeLists.txt):

    python golden_jit.py GOLDEN_DIR

For each program below, Python Ember captures a model or function (``ember.export.export``,
with a dynamic batch ``Dim`` where the model allows, or ``ember.jit.trace``), saves it, and
runs the eager model or function on one or more inputs. GOLDEN_DIR then holds

    <name>.ember              the saved program
    <name>.after.safetensors  (programs captured in training mode) the state_dict after the
                              runs, which update batch norms' running statistics in place
    <name>.run<k>.safetensors in.<i>: the inputs of run k; out.<j>: Python's outputs,
                              flattened to their tensors depth first (a record's fields that
                              are not None, a dict's values, in order); metadata "structure":
                              the output's structure as JSON ("T" for a tensor, an int for a
                              size, {"tuple"|"list": [...]}, {"names": [...], "items": [...]}
                              for a dict, namedtuple or record), "kwargs": keyword arguments
                              of the call (JSON, numbers only)
    programs.txt              one line per program: name, kind, number of runs
    signatures.json           Python's signature of every op name a program may use
                              (FORMAT.md "Op names"), for the C++ op table's check

Weights are random (seeded); batch norms get random running statistics so that they matter.
"""

from __future__ import annotations

import collections
import copy
import inspect
import json
import os
import sys
import warnings

import ember
import ember.export as E
import ember.jit
import ember.nn as nn
from ember.safetensors import save_file

F = nn.functional
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))

PROGRAMS: list = []


def flatten(out, tensors: list):
    """The output's structure as JSON, its tensors appended to ``tensors``."""
    if isinstance(out, ember.Tensor):
        tensors.append(out.detach())
        return "T"
    if isinstance(out, bool) or out is None:
        return out
    if isinstance(out, int):
        return int(out)
    if hasattr(out, "_fields") and isinstance(out, tuple):  # namedtuple
        return {"names": list(out._fields), "items": [flatten(x, tensors) for x in out]}
    if isinstance(out, dict):
        return {"names": [str(k) for k in out],
                "items": [flatten(x, tensors) for x in out.values()]}
    if hasattr(out, "to_tuple") and hasattr(out, "keys"):  # a ModelOutput or a Record
        keys = list(out.keys())
        return {"names": keys, "items": [flatten(out[k], tensors) for k in keys]}
    if isinstance(out, (tuple, list)):
        return {"tuple" if isinstance(out, tuple) else "list": [flatten(x, tensors) for x in out]}
    raise TypeError(f"cannot flatten {type(out).__name__}")


def write(out_dir: str, name: str, kind: str, runs: list, save=None, after=None):
    """Save the program and each run's inputs and eager outputs (then ``after``'s state)."""
    save(os.path.join(out_dir, f"{name}.ember"))
    for k, (fn, args, kwargs) in enumerate(runs):
        with ember.no_grad():
            out = fn(*args, **kwargs)
        tensors: list = []
        structure = flatten(out, tensors)
        data = {f"in.{i}": a.detach().contiguous().clone() for i, a in enumerate(args)}
        data.update({f"out.{j}": t.contiguous().clone() for j, t in enumerate(tensors)})
        meta = {"structure": json.dumps(structure), "kwargs": json.dumps(kwargs)}
        save_file(data, os.path.join(out_dir, f"{name}.run{k}.safetensors"), metadata=meta)
    if after is not None:
        state = {k: v.detach().contiguous().clone() for k, v in after.state_dict().items()}
        save_file(state, os.path.join(out_dir, f"{name}.after.safetensors"))
    PROGRAMS.append((name, kind, len(runs)))


def write_program_list(out_dir: str, file_name: str) -> None:
    """`file_name` in `out_dir`: one "name kind runs" line per program written so far (PROGRAMS),
    the list a C++ test checks its own against (expect_written_programs)."""
    with open(os.path.join(out_dir, file_name), "w") as f:
        for name, kind, runs in PROGRAMS:
            f.write(f"{name} {kind} {runs}\n")


def export_program(out_dir, name, model, example, dynamic, others=(), kwargs=None):
    kwargs = kwargs or {}
    ep = E.export(model, example, kwargs or None, dynamic_shapes=dynamic)
    runs = [(model, example, kwargs)] + [(model, a, kwargs) for a in others]
    training = bool(getattr(model, "training", False))
    write(out_dir, name, "export", runs, save=lambda p: E.save(ep, p),
          after=model if training else None)


def trace_program(out_dir, name, model, example, others=()):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(model, example, strict=False)  # list and dict outputs too
    runs = [(model, example, {})] + [(model, a, {}) for a in others]
    write(out_dir, name, "jit", runs, save=lambda p: ember.jit.save(traced, p))


def randomize_norms(model) -> None:
    """Random running statistics and affine parameters for every batch norm."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with ember.no_grad():
                m.running_mean.copy_(ember.randn(m.running_mean.shape) * 0.1)
                m.running_var.copy_(ember.rand(m.running_var.shape) + 0.5)
                m.weight.copy_(ember.rand(m.weight.shape) + 0.5)
                m.bias.copy_(ember.randn(m.bias.shape) * 0.1)


# -- models -------------------------------------------------------------------------------------

def models(out_dir: str) -> None:
    batch = E.Dim("batch", min=1, max=64)

    ember.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.GELU(), nn.Linear(16, 4),
                        nn.LogSoftmax(dim=1)).eval()
    x = ember.randn(3, 8)
    export_program(out_dir, "mlp_export", mlp, (x,), {"input": {0: batch}}, [(ember.randn(7, 8),)])
    trace_program(out_dir, "mlp_trace", mlp, (x,), [(ember.randn(5, 8),)])

    sys.path.insert(0, os.path.join(REPO, "examples"))
    from train_digits import DigitsCNN

    ember.manual_seed(1)
    cnn = DigitsCNN()
    randomize_norms(cnn)
    cnn.eval()
    x = ember.rand(2, 1, 8, 8)
    export_program(out_dir, "digits_export", cnn, (x,), ({0: batch},),
                   [(ember.rand(5, 1, 8, 8),)])
    trace_program(out_dir, "digits_trace", cnn, (ember.rand(1, 1, 8, 8),),
                  [(ember.rand(4, 1, 8, 8),)])

    import ember.vision as vision

    ember.manual_seed(2)
    resnet = vision.models.resnet18()
    randomize_norms(resnet)
    resnet.eval()
    x = ember.randn(1, 3, 64, 64)
    export_program(out_dir, "resnet18_export", resnet, (x,), ({0: batch},),
                   [(ember.randn(2, 3, 64, 64),)])
    trace_program(out_dir, "resnet18_trace", resnet, (x,), [(ember.randn(2, 3, 64, 64),)])

    ember.manual_seed(3)
    lstm = nn.LSTM(6, 10, num_layers=2, batch_first=True).eval()
    x = ember.randn(2, 5, 6)
    export_program(out_dir, "lstm_export", lstm, (x,), ({0: batch},), [(ember.randn(3, 5, 6),)])
    trace_program(out_dir, "lstm_trace", lstm, (x,), [(ember.randn(4, 5, 6),)])

    ember.manual_seed(4)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True).eval()
    x = ember.randn(2, 7, 16)
    export_program(out_dir, "transformer_export", layer, (x,), ({0: batch},),
                   [(ember.randn(3, 7, 16),)])
    # the trace reads the sequence length from the input: other lengths run too
    trace_program(out_dir, "transformer_trace", layer, (x,), [(ember.randn(3, 11, 16),)])

    from ember.text.models import BertConfig, BertModel

    ember.manual_seed(5)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=20)
    bert = BertModel(config).eval()
    ids = ember.randint(0, 50, (2, 9))
    export_program(out_dir, "bert_export", bert, (ids,), ({0: batch},),
                   [(ember.randint(0, 50, (4, 9)),)])
    # the padding mask's arithmetic (the additive mask) is recorded when some token is padded
    mask = ember.ones(2, 9, dtype=ember.int64)
    mask[1, 6:] = 0
    mask3 = ember.ones(3, 12, dtype=ember.int64)
    mask3[0, 4:] = 0
    mask3[2, 10:] = 0
    trace_program(out_dir, "bert_trace", bert, (ids, mask),
                  [(ember.randint(0, 50, (3, 12)), mask3)])

    # issue 14's resampling and 3-D layers: a decoder (transposed convolutions, upsampling)
    # and a small video model (3-D convolution, pooling, transposed convolution)
    ember.manual_seed(7)
    decoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                            nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1),
                            nn.Upsample(scale_factor=2, mode="bilinear"), nn.ReLU(),
                            nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1),
                            nn.Upsample(size=(20, 24)), nn.Sigmoid()).eval()
    export_program(out_dir, "decoder_export", decoder, (ember.randn(2, 3, 5, 6),), ({0: batch},),
                   [(ember.randn(3, 3, 5, 6),)])
    trace_program(out_dir, "decoder_trace", decoder, (ember.randn(1, 3, 5, 6),))

    ember.manual_seed(8)
    video = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.BatchNorm3d(4), nn.ReLU(),
                          nn.MaxPool3d(2), nn.ConvTranspose3d(4, 3, 2, stride=2),
                          nn.AvgPool3d(3, stride=2, padding=1), nn.AdaptiveAvgPool3d((2, 1, 2)),
                          nn.Flatten(), nn.Linear(12, 5))
    randomize_norms(video)
    video.eval()
    export_program(out_dir, "video_export", video, (ember.randn(2, 2, 6, 8, 8),), ({0: batch},),
                   [(ember.randn(1, 2, 6, 8, 8),)])

    # the graph-mode gaps of issue 14: convolutions with padding="same" (an even kernel: the
    # extra padding element after the input) and "valid", adaptive max pooling
    ember.manual_seed(9)
    gaps = nn.Sequential(nn.Conv2d(3, 6, 4, padding="same"), nn.BatchNorm2d(6), nn.ReLU(),
                         nn.AdaptiveMaxPool2d((4, None)), nn.Conv2d(6, 4, 3, padding="valid"),
                         nn.ReLU(), nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(4, 3))
    randomize_norms(gaps)
    gaps.eval()
    export_program(out_dir, "gaps_export", gaps, (ember.randn(2, 3, 9, 7),), ({0: batch},),
                   [(ember.randn(3, 3, 9, 7),)])
    trace_program(out_dir, "gaps_trace", gaps, (ember.randn(2, 3, 9, 7),),
                  [(ember.randn(1, 3, 11, 8),)])

    # a float64 program; its C++ Module::to(kFloat32) is compared with Python's converted
    # module (jit.load(...).to(ember.float32)) in <name>.float32.safetensors
    ember.manual_seed(11)
    wide = nn.Sequential(nn.Conv2d(2, 4, 3, padding="same"), nn.BatchNorm2d(4), nn.Tanh(),
                         nn.AdaptiveMaxPool2d(2), nn.Flatten(), nn.Linear(16, 5)).double()
    randomize_norms(wide)
    wide.eval()
    x64 = ember.randn(2, 2, 6, 5, dtype=ember.float64)
    trace_program(out_dir, "f64_trace", wide, (x64,))
    converted = ember.jit.load(os.path.join(out_dir, "f64_trace.ember"))
    converted.to(ember.float32)
    x32 = ember.randn(3, 2, 6, 5)
    with ember.no_grad():
        y32 = converted(x32)
        eager = copy.deepcopy(wide).float()(x32)
    assert y32.dtype == ember.float32 and float((y32 - eager).abs().max()) < 1e-5
    save_file({"in.0": x32, "out.0": y32.contiguous()},
              os.path.join(out_dir, "f64_trace.float32.safetensors"))

    # training mode: batch statistics, and the running statistics updated in place (mutations)
    ember.manual_seed(6)
    bn = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).train()
    export_program(out_dir, "bn_train_export", bn, (ember.randn(2, 3, 6, 6),), ({0: batch},),
                   [(ember.randn(3, 3, 6, 6),)])


# -- op coverage programs --------------------------------------------------------------------

def pointwise(x, y):
    p = y.abs() + 0.5
    out = [x + y * 2, x - 1.5, 2 - x, x * y, x / p, 3 / p, x // 0.7, x % 0.9, p ** 2, 2 ** x,
           ember.maximum(x, y), ember.minimum(x, y), x.abs(), x.exp(), p.log(), p.sqrt(), p.rsqrt(),
           x.sin(), x.cos(), x.tanh(), x.sigmoid(), x.relu(), ember.erf(x), (x * 3).floor(),
           (x * 3).ceil(), (x * 3).round(), ember.round(x, decimals=1), (x * 3).trunc(), x.sign(),
           p.reciprocal(), x.square(), -x, p.log2(), p.log10(), p.log1p(),
           x.expm1(), x.exp2(),
           F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.hardswish(x), F.hardsigmoid(x),
           F.mish(x), F.softplus(x), F.elu(x), F.leaky_relu(x, 0.2), F.relu6(x * 4), F.hardtanh(x),
           F.logsigmoid(x), F.selu(x), F.celu(x, 0.5), F.softsign(x), F.tanhshrink(x),
           F.softshrink(x, 0.3), F.hardshrink(x, 0.3), F.threshold(x, 0.1, -1.0), F.glu(x, -1),
           x.clamp(-0.5, 0.5), x.clamp_min(0.1), x.clamp(max=0.3), ember.clamp(x, min=y),
           ember.where(x > 0, x, y), ember.where(x > 0, x, 0.0), x.masked_fill(x < 0, -2.0),
           ember.lerp(x, y, 0.3), ember.addcmul(x, x, y, value=0.5), ember.addcdiv(x, x, p),
           (x > y).float(), (x >= 0).int(), (x == x).long(), (x != y).double(), (x < 0.2).float(),
           (x <= y) & (x > -1), ((x > 0) | (y > 0)).float(), ((x > 0) ^ (y > 0)).float(),
           ember.logical_and(x > 0, y > 0), ember.logical_not(x > 0), ember.isnan(x),
           ember.isfinite(x / p), ember.fmod(x, 0.4), ember.remainder(x, -0.8), x.float_power(2),
           ember.div(x, p, rounding_mode="floor"), ember.div(x, p, rounding_mode="trunc"),
           x.to(ember.float64) * 2, x.double().float(), x.type_as(y), x.half().float()]
    return out


def reductions(x):
    return {"sum": x.sum(), "sum1": x.sum(1), "sum02": x.sum((0, 2), keepdim=True),
            "mean": x.mean(-1), "prod": x.prod(1), "amax": x.amax(1), "amin": x.amin((0, 1)),
            "max": x.max(), "max1": x.max(1).values, "argmax1": x.max(1).indices,
            "min2": ember.min(x, 2, keepdim=True).values, "argmax": x.argmax(1),
            "argmin": x.argmin(), "var": x.var(1), "std": x.std(unbiased=False),
            "var0": x.var(dim=(0, 2), correction=0), "norm": x.norm(), "norm1": x.norm(dim=1),
            "norm_p1": x.norm(p=1, dim=(1, 2)), "lse": x.logsumexp(2), "cumsum": x.cumsum(1),
            "softmax": x.softmax(-1), "log_softmax": F.log_softmax(x, dim=1),
            "softmin": F.softmin(x, dim=0), "all": (x > -10).all(), "any1": (x > 1).any(1),
            "count": ember.count_nonzero(x > 0, dim=1), "sum_int": (x > 0).sum(1),
            "mean_f64": x.mean(1, dtype=ember.float64), "sort": x.sort(1),
            "argsort": x.argsort(2, descending=True), "topk": x.topk(3, dim=2),
            "smallest": x.topk(2, 0, False)}


Shapes = collections.namedtuple("Shapes", ["view", "permute", "pieces", "index"])


def shapes(x):
    a = x.view(6, 4)
    b = x.reshape(3, -1)
    c = x.permute(2, 0, 1).contiguous()
    d = x.transpose(0, 2) * 1
    e = a.t() + a.T
    f = x.mT.flatten()
    g = x.unsqueeze(1).squeeze(1).flatten(1).unflatten(1, (3, 4))
    h = x[:, :1].expand(2, 3, 4) + x[0].expand_as(x)
    i = x.narrow(2, 1, 2).select(0, 1)
    chunks = x.chunk(2, dim=2)
    splits = x.split([1, 2], dim=1)
    parts = x.unbind(0)
    j = ember.cat([chunks[1], chunks[0]], dim=2)
    k = ember.stack(parts, dim=1)
    m = x.repeat(1, 2, 1) + 0
    n = ember.tile(x[0], (2,))
    o = ember.tril(a, -1) + ember.triu(a, 1)
    p = x.flip(0, 2)
    q = ember.movedim(x, 0, 2)
    r = x.clone()
    s = x[0, 1:, ::2]
    t = x[..., None, 1]
    u = x[:, [0, 2]]
    v = x[1, -1]
    w = x[:, 1:3, -2:]
    z = x.squeeze(0).diagonal(0, 1, 2)
    bt = ember.broadcast_to(x[:, :1, :], (2, 3, 4))
    return Shapes(view=(a, b, c, d, e, f, g), permute=(h, i, j, k, m, n, o, p, q, r),
                  pieces=[*chunks, *splits, *parts],
                  index=(s, t, u, v, w, z, bt, x.ravel(), x.swapaxes(0, 1)))


def indexing(x, idx):
    out = [x.index_select(0, idx), x.gather(1, idx[:2].view(2, 1).expand(2, 4) % 4),
           ember.zeros(5, 4).scatter(0, idx.view(3, 1).expand(3, 4), x[:3]),
           ember.zeros(5, 4).scatter_add(0, idx.view(3, 1).expand(3, 4), x[:3]),
           ember.zeros(5, 4).scatter(1, idx.view(3, 1) % 4, 7.0),
           x.index_add(0, idx, x[:3], alpha=2), x.masked_select(x > 0),
           (x > 0.5).nonzero(), F.one_hot(idx, 6), F.embedding(idx, x),
           ember.take_along_dim(x[:3], idx.view(3, 1) % 4, dim=1), x[idx], x[idx, 1:],
           x[x[:, 0] > 0], x[[0, 1], [2, 3]]]
    y = x.clone()
    y[1] = 0
    y[:, 2] = x[:, 0]
    y[idx, 0] = -1.0
    y[y > 1] = 1.0
    out.append(y)
    return out


def inplace_views(x):
    y = x.clone()
    row = y[1]
    row.add_(1)        # writes y through the view
    y.mul_(2)
    flat = y.view(-1)
    flat[0] = 5.0      # setitem through a view
    col = y.transpose(0, 1)
    col.relu_()
    y.sub_(x, alpha=0.5)
    z = y.clone()
    z += x
    z.sigmoid_()
    z.clamp_(0.2, 0.8)
    w = ember.zeros_like(x)
    w.copy_(x)
    w.masked_fill_(x > 0.5, 9.0)
    w.zero_()[0].fill_(3.0)
    return y, row, flat, col, z, w


def nn_ops(x, w, wg, seq, target):
    conv = F.conv2d(x, w, None, stride=1, padding=1)
    grouped = F.conv2d(x, wg, stride=2, padding=(1, 0), groups=3)
    dilated = F.conv2d(x, w, padding=2, dilation=2)
    pooled, indices = F.max_pool2d(conv, 3, stride=2, padding=1, return_indices=True)
    ceil = F.max_pool2d(conv, 2, ceil_mode=True)
    avg = F.avg_pool2d(conv, 3, stride=2, padding=1, count_include_pad=False)
    adaptive = F.adaptive_avg_pool2d(conv, (3, 2))
    padded = (F.pad(x, (1, 2)), F.pad(x, (1, 1, 2, 0), value=-1.0),
              F.pad(x, (2, 2, 1, 1), mode="reflect"), F.pad(x, (1, 1, 1, 1), mode="replicate"),
              F.pad(x, (1, 2, 0, 1), mode="circular"))
    gn = F.group_norm(conv, 3)
    ln = F.layer_norm(x, (8,), eps=1e-3)
    normalized = F.normalize(x, dim=1)
    q = seq.view(2, 5, 2, 4).transpose(1, 2)
    attn = F.scaled_dot_product_attention(q, q * 0.5, q, is_causal=True)
    masked = F.scaled_dot_product_attention(q, q, q, attn_mask=ember.tril(ember.ones(5, 5)) > 0)
    lin = F.linear(seq, seq[0, :3] * 0.1, ember.ones(3))
    mm = seq @ seq[0].t()
    bmm = ember.bmm(seq, seq.transpose(1, 2))
    addmm = ember.addmm(seq[0, :, :4], seq[0], seq[1].t()[:, :4], beta=0.5)
    conv1 = F.conv1d(seq, seq[1, :, :3].unsqueeze(0).expand(4, 5, 3) * 0.1, padding=1)
    losses = (F.cross_entropy(seq[0], target), F.cross_entropy(seq[0], target, label_smoothing=0.1),
              F.nll_loss(F.log_softmax(seq[0], 1), target, reduction="sum"),
              F.mse_loss(seq[0], seq[1]), F.l1_loss(seq[0], seq[1], reduction="none"),
              F.smooth_l1_loss(seq[0], seq[1]), F.huber_loss(seq[0], seq[1], delta=0.5),
              F.binary_cross_entropy(seq[0].sigmoid(), (seq[1] > 0).float()),
              F.binary_cross_entropy_with_logits(seq[0], (seq[1] > 0).float()))
    return (conv, grouped, dilated, pooled, indices, ceil, avg, adaptive, padded, gn, ln,
            normalized, attn, masked, lin, mm, bmm, addmm, conv1, losses)


def more_ops(x, m):
    """In-place variants and the rest of the table."""
    a = x.clone()
    a.exp_().log_().tanh_().sigmoid_().neg_().abs_().sqrt_().square_().reciprocal_().rsqrt_()
    b = x.clone()
    b.floor_divide_(0.3)
    c = x.clone()
    c.eq_(x * 1)
    d = x.clone()
    d.pow_(2).lerp_(x, 0.25).clamp_min_(-0.5).clamp_max_(0.5).addcmul_(x, x, value=2)
    e = ember.zeros(4, 6)
    e.scatter_(1, m % 6, 1.0).scatter_add_(0, m % 4, x[:, :2])
    e.index_add_(0, ember.tensor([0, 2]), x[:2, :6])
    f = x.clone()
    f.tril_(1)
    f.masked_fill_(f == 0, float("-inf"))
    g = x.clone()
    g.index_put_((ember.tensor([0, 3]), ember.tensor([1, 5])), ember.tensor([7.0, 8.0]),
                 accumulate=True)
    g.zero_()[1:3].fill_(ember.tensor(2.5))
    v, mean = ember.var_mean(x, 1, keepdim=True)
    s, smean = ember.std_mean(x, correction=0)
    rows, cols = ember.nonzero(x > 0.5, as_tuple=True)
    where_rows, where_cols = ember.where(x < -0.5)
    return (a, b, c, d, e, f, g, v, mean, s, smean, rows, cols, where_rows, where_cols,
            ember.sgn(x), ember.frac(x), ember.deg2rad(x), ember.rad2deg(x), +x, ~(x > 0),
            ember.logical_or(x > 0, x < -1), ember.logical_xor(x > 0, x > 1),
            (x > 0).to(ember.uint8), x.short(), x.bool(), x.char(), x.byte(),
            x.type(ember.float64), x.view_as(x.t().t()), x.reshape_as(ember.ones(6, 4)),
            x.as_strided((2, 2), (1, 6)), x.split_with_sizes([1, 3]),
            ember.mm(x, x.t()), ember.mv(x, x[0]), ember.dot(x[0], x[1]), ember.outer(x[0], x[1]),
            ember.addmv(x[:, 0], x, x[0]), ember.baddbmm(x.view(2, 2, 6)[:, :, :2], x.view(2, 2, 6),
                                                       x.view(2, 6, 2)),
            F.rms_norm(x, (6,)), F.prelu(x, ember.tensor([0.25])), F.unfold(x.view(1, 1, 4, 6), 2),
            F.fold(F.unfold(x.view(1, 1, 4, 6), 2), (4, 6), 2),
            F.avg_pool2d(x.view(1, 1, 4, 6), 2, divisor_override=3),
            x.cumsum(0, dtype=ember.float64),
            x.softmax(1, dtype=ember.float64), x.prod(dtype=ember.float64), (x > 0).all((0, 1)),
            x.amax(0, keepdim=True), ember.count_nonzero(x), ember.eye(3, 5), x.sum(keepdim=True),
            x.norm(keepdim=True), x.std(0),
            x.new_full((2, 2), 3), ember.full((2,), True), ember.arange(5.0), ember.arange(1, 7, 2),
            x[None, ..., 1:2, None], x[ember.tensor([True, False, True, False])],
            x[[[0, 1], [2, 3]]])


def nn_resampling(x, wt, wtg, bias, seq, wt1, x3, w3, w3g, wt3):
    """interpolate / upsample, transposed convolutions, 3-D convolution and pooling, 1-D
    pooling and einsum."""
    up = (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 7)),
          F.interpolate(x, scale_factor=(1.5, 0.75), mode="nearest-exact"),
          F.interpolate(x, size=(5, 9), mode="bilinear"),
          F.interpolate(x, size=(5, 9), mode="bilinear", align_corners=True),
          F.interpolate(x, scale_factor=1.7, mode="bilinear"),
          F.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
          F.interpolate(x, size=(6, 5), mode="bicubic"),
          F.interpolate(x, size=(7, 3), mode="bicubic", align_corners=True),
          F.interpolate(seq, size=11, mode="linear", align_corners=True),
          F.interpolate(seq, scale_factor=0.5, mode="linear"),
          F.interpolate(x3, scale_factor=2, mode="trilinear"),
          F.interpolate(x3, size=(3, 5, 6)),
          F.upsample(x, scale_factor=2, mode="bilinear", align_corners=False),
          F.upsample_bilinear(x, scale_factor=2), F.upsample_nearest(x, size=(3, 3)),
          F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True),
          F.interpolate(x, scale_factor=(0.6, 1.5), mode="bicubic", antialias=True),
          F.interpolate(x, size=(3, 2), mode="bicubic", antialias=True, align_corners=True),
          F.interpolate(x, size=(2, 2), mode="lanczos", antialias=True),
          F.interpolate(x, size=(3, 2), mode="area"), F.interpolate(seq, size=3, mode="area"),
          F.interpolate(x3, scale_factor=0.5, mode="area"))
    pixels = (x * 60 + 120).clamp(0, 255).to(ember.uint8)
    up = up + (F.interpolate(pixels, size=(7, 9), mode="bilinear"),
               F.interpolate(pixels, size=(3, 7), mode="bicubic", align_corners=True),
               F.interpolate(pixels, size=(2, 3), mode="bilinear", antialias=True),
               F.interpolate(pixels, size=(2, 6), mode="lanczos", antialias=True))
    transposed = (F.conv_transpose2d(x, wt, stride=2, padding=1, output_padding=1),
                  F.conv_transpose2d(x, wt, bias[:2], stride=(1, 2), dilation=(2, 1)),
                  F.conv_transpose2d(x, wtg, groups=3, stride=2, padding=(0, 1)),
                  F.conv_transpose2d(x[0], wt),
                  F.conv_transpose1d(seq, wt1, stride=3, padding=1, output_padding=2),
                  F.conv_transpose1d(seq, wt1, bias[:2], dilation=2),
                  F.conv_transpose3d(x3, wt3, stride=2, padding=1, output_padding=1),
                  F.conv_transpose3d(x3, wt3, bias[:2], stride=(1, 2, 1), dilation=(2, 1, 1)))
    conv3 = (F.conv3d(x3, w3, padding=1),
             F.conv3d(x3, w3, bias, stride=(2, 1, 2), dilation=(1, 2, 1)),
             F.conv3d(x3, w3g, groups=3, padding=(2, 0, 1)), F.conv3d(x3[0], w3))
    pools = (F.max_pool3d(x3, 2), F.max_pool3d(x3, 3, stride=2, padding=1, return_indices=True),
             F.max_pool3d(x3, 2, stride=2, ceil_mode=True),
             F.max_pool3d(x3, (2, 3, 2), stride=1, dilation=(2, 1, 2)),
             F.avg_pool3d(x3, 3, stride=2, padding=1),
             F.avg_pool3d(x3, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
             F.avg_pool3d(x3, 2, divisor_override=3), F.avg_pool3d(x3[0], (1, 2, 3)),
             F.adaptive_avg_pool3d(x3, (2, None, 3)), F.adaptive_avg_pool3d(x3, 3),
             F.max_pool1d(seq, 3, 2, 1, return_indices=True), F.max_pool1d(seq, 2, ceil_mode=True),
             F.avg_pool1d(seq, 3, 2, 1, count_include_pad=False), F.adaptive_avg_pool1d(seq, 3))
    m = seq[0]
    sums = (ember.einsum("bij,bjk->bik", seq, seq.transpose(1, 2)), ember.einsum("ij,jk", m, m.t()),
            ember.einsum("ii->i", m[:4, :4]), ember.einsum("ii", m[:4, :4]),
            ember.einsum("ij->", m),
            ember.einsum("i,j->ij", m[0], m[1]), ember.einsum("...ij,...jk->...ik", x, x),
            ember.einsum("bhqd,bhkd->bhqk", x, x * 0.5), ember.einsum("ij,jk,kl->il", m, m.t(), m),
            ember.einsum("bij->jb", seq), ember.einsum("ij,ij->i", m, m * 2),
            ember.einsum("b i j, b j -> b i", seq, seq[:, 0, :]),
            ember.einsum("iij->j", x[0, :2, :2]),
            ember.einsum("bij,bkj->bik", [seq, seq]))
    return up, transposed, conv3, pools, sums


def conv_pool_gaps(seq, w1, img, w2, vol, w3):
    """String paddings of the convolutions and adaptive max pooling, 1-D to 3-D."""
    convs = (F.conv1d(seq, w1, padding="same"), F.conv1d(seq, w1, padding="same", dilation=3),
             F.conv1d(seq, w1, padding="valid"), F.conv2d(img, w2, padding="same"),
             F.conv2d(img, w2, padding="same", dilation=(2, 1)), F.conv2d(img, w2, padding="valid"),
             F.conv3d(vol, w3, padding="same"), F.conv3d(vol[0], w3, padding="valid"))
    pools = (F.adaptive_max_pool1d(seq, 4), F.adaptive_max_pool1d(seq, 3, return_indices=True),
             F.adaptive_max_pool2d(img, (2, None), return_indices=True),
             F.adaptive_max_pool2d(img[0], 3), F.adaptive_max_pool3d(vol, (2, 3, None)),
             F.adaptive_max_pool3d(vol, 2, return_indices=True),
             nn.AdaptiveMaxPool2d((4, 7))(img), nn.AdaptiveMaxPool1d(5, return_indices=True)(seq))
    return convs, pools


def factories(x, *, scale=1.0):
    n = x.shape[0]
    z = ember.zeros(n, 3) + ember.arange(n).view(n, 1)
    o = ember.ones(n, 2, dtype=ember.int64) * 3
    full = ember.full((n, 2), 1.5)
    e = ember.eye(n)
    nz = x.new_zeros(n, 2) + x.new_ones(size=(n, 2)) + x.new_full((n, 2), 0.25)
    ar = ember.arange(0, 2 * n, 2, dtype=ember.float32)
    like = ember.zeros_like(x) + ember.ones_like(x) * ember.full_like(x, 2.0)
    lin = ember.linspace(0, 1, n)
    return {"z": z, "o": o, "full": full, "eye": e, "nz": nz, "ar": ar, "like": like * scale,
            "lin": lin, "size": n * 2}


def coverage(out_dir: str) -> None:
    ember.manual_seed(10)
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    trace_program(out_dir, "ops_pointwise", pointwise, (x, y),
                  [(ember.randn(5, 4), ember.randn(5, 4))])
    trace_program(out_dir, "ops_reductions", reductions, (ember.randn(4, 5, 6),))
    trace_program(out_dir, "ops_shapes", shapes, (ember.randn(2, 3, 4),))
    trace_program(out_dir, "ops_indexing", indexing, (ember.randn(5, 4), ember.tensor([4, 0, 2])))
    trace_program(out_dir, "ops_inplace_views", inplace_views, (ember.rand(3, 4),),
                  [(ember.rand(3, 4) - 0.5,)])
    target = ember.tensor([1, 0, 4, 2, 3])
    trace_program(out_dir, "ops_nn", nn_ops,
                  (ember.randn(2, 3, 8, 8), ember.randn(3, 3, 3, 3), ember.randn(6, 1, 3, 3),
                   ember.randn(2, 5, 8), target))
    trace_program(out_dir, "ops_more", more_ops,
                  (ember.randn(4, 6), ember.tensor([[0, 7], [3, 5], [2, 9], [11, 1]])))
    trace_program(out_dir, "ops_nn_resampling", nn_resampling,
                  (ember.randn(2, 3, 4, 4), ember.randn(3, 2, 3, 3), ember.randn(3, 1, 3, 2),
                   ember.randn(4), ember.randn(2, 5, 8), ember.randn(5, 2, 3),
                   ember.randn(2, 3, 5, 6, 7), ember.randn(4, 3, 3, 3, 3) * 0.2,
                   ember.randn(3, 1, 2, 3, 2) * 0.2, ember.randn(3, 2, 2, 3, 2) * 0.2))
    trace_program(out_dir, "ops_conv_pool_gaps", conv_pool_gaps,
                  (ember.randn(2, 3, 9), ember.randn(4, 3, 4), ember.randn(2, 3, 5, 6),
                   ember.randn(4, 3, 2, 3), ember.randn(2, 2, 4, 5, 6),
                   ember.randn(3, 2, 2, 3, 2) * 0.3))
    n = E.Dim("n", min=2, max=32)
    export_program(out_dir, "ops_factories", factories, (ember.randn(4, 3),), ({0: n},),
                   [(ember.randn(6, 3),)], kwargs={"scale": 0.5})


# -- issue 15's ops: the float math family, scans, more shapes, gathers and nn ops ------------

def math_extra(x, y):
    u = x.tanh() * 0.9  # in (-1, 1)
    p = y.abs() + 1.5   # > 1
    a = u.clone()
    a.asin_()
    b = x.clone()
    b.atan2_(y)
    c = x.clone()
    c.round_(decimals=1).hypot_(y).addmm_(x, ember.eye(4), beta=0.5)
    z = ember.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1.5])
    return (u.acos(), u.asin(), x.atan(), p.acosh(), x.asinh(), u.atanh(), x.sinh(), x.cosh(),
            x.erfc(), u.erfinv(), p.lgamma(), x.sinc(), a, b, c, ember.atan2(x, y),
            ember.hypot(x, y), ember.copysign(x, y), ember.copysign(x, -1.0),
            ember.ldexp(x, ember.tensor([2, 0, -1, 3])),
            ember.logaddexp(x, y), ember.logaddexp2(x, y), ember.xlogy(x, p),
            ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 3.0])), ember.fmax(x, z[:4]),
            ember.fmin(x, z[:4]), ember.heaviside(x.round(), ember.tensor(0.5)),
            ember.isclose(x, x + 1e-6), (u * 0.5 + 0.5).logit(), ember.logit(u, eps=0.1),
            z.nan_to_num(), z.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0), z.signbit(),
            z.isposinf(), z.isneginf(), ember.tensor([1, 2, 3]).asin())


def scans(x):
    z = x.clone()
    z[0, 1, 2] = float("nan")
    c = x.clone()
    c.cumsum_(1).cumprod_(2)
    return (c, x.cumprod(1), x.cumprod(0, dtype=ember.float64), (x > 0).long().cumprod(2),
            x.cummax(1), x.cummin(2), ember.cummax(z, 2), x.logcumsumexp(1), z.nansum(),
            z.nansum(1), z.nanmean((0, 2), keepdim=True), x.aminmax(), ember.aminmax(x, dim=1),
            x.msort(), x.kthvalue(2, 1), x.kthvalue(3, keepdim=True), x.median(), x.median(2),
            ember.median(x, 0, keepdim=True))


def shapes_extra(x, v):
    m = x[0]
    return (x.roll(1, 2), x.roll((1, -2), (0, 2)), x.roll(3), m.rot90(), m.rot90(2),
            x.rot90(-1, (1, 2)), m.fliplr(), x.flipud(), ember.atleast_1d(v[0]),
            ember.atleast_2d(v), ember.atleast_3d(m, v),
            ember.hstack([m, m]), ember.hstack([v, v]), ember.vstack([v, v]), ember.dstack([m, m]),
            ember.column_stack([v, v]), x.tensor_split(3, 2), x.tensor_split([1, 3], dim=2),
            m.hsplit(2), x.vsplit([1]), x.dsplit(2), ember.diag(v), ember.diag(v, -1),
            ember.diag(m, 1),
            ember.diagflat(m), ember.diag_embed(m), ember.trace(m), ember.tril_indices(3, 4),
            ember.triu_indices(4, 3, 1), ember.meshgrid(v, v[:2], indexing="ij"),
            ember.meshgrid(v, v[:2], indexing="xy"), ember.kron(m, m[:2, :2]), ember.inner(m, m),
            ember.diff(x), ember.diff(x, n=2, dim=1), ember.diff(v, prepend=v[:1], append=v[:2]),
            m.repeat_interleave(2), x.repeat_interleave(ember.tensor([1, 0, 2, 1]), dim=1),
            x.unsafe_chunk(2, 2), x.unsafe_split(1, 0))


def gathers_extra(x, idx):
    return (x.take(ember.tensor([[0, -1], [5, 7]])), ember.argwhere(x > 0),
            x.index_fill(1, idx % 4, -1.0), x.index_fill(0, idx[:2], ember.tensor(2.0)),
            x.index_copy(0, idx, x[:3] * 10), ember.zeros(2, 4).index_copy(1, idx % 4, x[:2, :3]),
            x.select_scatter(x[0] * 0, 0, 2), x.slice_scatter(x[:, :2] + 5, 1, 1, 4, 2),
            x[:4].diagonal_scatter(ember.ones(4), 0), x[:4].diagonal_scatter(ember.ones(3), 1))


def nn_extra(x, y, target, logp):
    return (F.pixel_shuffle(x, 2), F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2),
            F.channel_shuffle(x, 2), F.instance_norm(x),
            F.instance_norm(x, weight=ember.ones(8) * 2, bias=ember.arange(8.0)),
            F.local_response_norm(x, 3), F.local_response_norm(x[0], 2, alpha=0.1, beta=0.5, k=2.0),
            F.cosine_similarity(y, y.flip(0)), F.cosine_similarity(y, y * 2, dim=-1),
            F.pairwise_distance(y, y.flip(0)), F.pairwise_distance(y, y * 0.5, p=1.0, keepdim=True),
            F.kl_div(logp, target, reduction="batchmean"), F.kl_div(logp, target, reduction="none"),
            F.kl_div(logp, target.log(), reduction="sum", log_target=True),
            F.dropout2d(x, 0.3, training=False), F.alpha_dropout(x, 0.3, training=False),
            F.feature_alpha_dropout(x, 0.3, training=False))


def more_extra(x, y, m):
    """The second batch: windows, contractions, searches, modes and the margin losses."""
    bounds = ember.tensor([-1.0, 0.0, 0.5, 1.0])
    target = ember.tensor([1.0, -1.0, 1.0])
    labels = (y > 0).float()
    return (x.unfold(1, 2, 1), x.unfold(0, 2, 2), ember.tensordot(x, y.t(), 1),
            ember.tensordot(x.view(3, 2, 2), y.view(3, 2, 2), ([1, 2], [1, 2])),
            ember.block_diag(x[:2, :2], y[0], ember.tensor(7.0)),
            ember.cartesian_prod(bounds, target),
            ember.bucketize(x, bounds), ember.bucketize(x, bounds, right=True, out_int32=True),
            ember.searchsorted(bounds, x), ember.searchsorted(x.sort(1).values, y, side="right"),
            ember.isin(m, ember.tensor([1, 3])), ember.isin(m, ember.tensor([1, 3]), invert=True),
            m.mode(1), m.mode(0, keepdim=True),
            F.hinge_embedding_loss(x[:, 0], target),
            F.margin_ranking_loss(x[:, 0], y[:, 0], target),
            F.cosine_embedding_loss(x, y, target, margin=0.1, reduction="none"),
            F.triplet_margin_loss(x, y, x.flip(0)), F.triplet_margin_loss(x, y, y * 2, swap=True),
            F.soft_margin_loss(x, target.view(3, 1).expand(3, 4)),
            F.multilabel_soft_margin_loss(x, labels, reduction="sum"))


def extra_coverage(out_dir: str) -> None:
    ember.manual_seed(12)
    trace_program(out_dir, "ops_math_extra", math_extra, (ember.randn(3, 4), ember.randn(3, 4)))
    trace_program(out_dir, "ops_scans", scans, (ember.randn(3, 4, 5),))
    trace_program(out_dir, "ops_shapes_extra", shapes_extra, (ember.randn(2, 4, 4), ember.randn(3)))
    trace_program(out_dir, "ops_gathers_extra", gathers_extra,
                  (ember.randn(5, 4), ember.tensor([4, 0, 2])))
    target = ember.rand(3, 5).softmax(1)
    trace_program(out_dir, "ops_nn_extra", nn_extra,
                  (ember.randn(2, 8, 3, 4), ember.randn(3, 6), target,
                   ember.randn(3, 5).log_softmax(1)))
    trace_program(out_dir, "ops_more_extra", more_extra,
                  (ember.randn(3, 4), ember.randn(3, 4),
                   ember.tensor([[1, 3, 3, 2], [0, 0, 5, 5], [2, 1, 1, 2]])))

    # a model of the new layers (instance norm, channel shuffle, pixel shuffle, local response
    # norm, channel dropout): its program would not load before they were in the C++ table
    ember.manual_seed(13)
    shuffle = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True),
                            nn.ReLU(), nn.ChannelShuffle(4), nn.Conv2d(8, 12, 3, padding=1),
                            nn.PixelShuffle(2), nn.LocalResponseNorm(2), nn.Dropout2d(0.2),
                            nn.Hardswish(), nn.PixelUnshuffle(2), nn.Conv2d(12, 4, 1)).eval()
    export_program(out_dir, "shuffle_export", shuffle, (ember.randn(2, 3, 6, 5),),
                   ({0: E.Dim("batch", min=1, max=64)},), [(ember.randn(3, 3, 6, 5),)])


# -- the Python registry's signatures ----------------------------------------------------------

def signature_text(fn) -> str:
    """``inspect.signature`` without annotations: "input, other, *, alpha=1, out=None"."""
    sig = inspect.signature(fn)
    parts, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            parts.append("*" + p.name)
            star = True
            continue
        if p.kind is p.VAR_KEYWORD:
            parts.append("**" + p.name)
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return ", ".join(parts)


def _op_itself(fn):
    """``fn`` without the ``out=`` that ``ember.ops._inplace.accepts_out`` (and
    ``register(out=True)``) wraps around an op: the runner binds the op's own parameters (it
    runs no out= calls)."""
    inner = getattr(fn, "__wrapped__", None)
    if inner is None or "__signature__" not in vars(fn):
        return fn
    try:
        return fn if "out" in inspect.signature(inner).parameters else inner
    except (TypeError, ValueError):
        return fn


def python_signatures() -> dict:
    """Python's signature text (``signature_text``) of every op name a program may use; None
    where ``inspect`` cannot say. tests/integration/test_cpp_op_table.py checks the C++ op
    table's snapshot (op_signatures.json) against it without building C++."""
    from ember.export._ops import UnknownOpError, resolve
    from ember.ops.registry import OPS, functional_kernels

    names = set()
    for name, info in OPS.items():
        names.add(name)
        if info.inplace is not None:
            names.add(name + "_")
    names.update({"getitem", "setitem"})
    names.update("Tensor." + n for n in vars(ember.Tensor) if not n.startswith("_"))
    names.update("nn.functional." + n for n in functional_kernels())
    names.update("ember." + n for n in dir(ember) if not n.startswith("_"))
    names.update("linalg." + n for n in ember.linalg.__all__)  # ember.linalg's functions
    out = {}
    for name in sorted(names):
        try:
            fn = resolve(name)
        except UnknownOpError:
            continue
        base = name[:-1]
        if name.endswith("_") and base in OPS and OPS[base].inplace is fn:
            fn = OPS[base].fn  # the in-place variant takes the op's arguments
        fn = _op_itself(fn)
        try:
            out[name] = signature_text(fn)
        except (TypeError, ValueError):
            out[name] = None
    return out


def signatures(out_dir: str) -> None:
    with open(os.path.join(out_dir, "signatures.json"), "w") as f:
        json.dump(python_signatures(), f, indent=0, sort_keys=True)


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    models(out_dir)
    coverage(out_dir)
    extra_coverage(out_dir)
    signatures(out_dir)
    write_program_list(out_dir, "programs.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
