"""ember.nn.functional.linear_cross_entropy, nn.LinearCrossEntropyLoss and
nn.LinearCrossEntropyOptions (reference and chunked paths: PyTorch parity, gradcheck, errors),
and the other ember.nn additions that came with them (nn.utils.convert_conv*d_weight_memory_format).
"""

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck

Options = nn.LinearCrossEntropyOptions


def host(t):
    return t.detach().cpu().numpy()


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _inputs(rng, n, f, c, out_features=(), probabilities=False, ignore=None, unbatched=False):
    x = rng.standard_normal((f,) if unbatched else (n, f))
    w = rng.standard_normal((c, *out_features, f))
    b = rng.standard_normal((c, *out_features))
    batch = () if unbatched else (n,)
    if probabilities:
        t = rng.random((*batch, c, *out_features))
        t /= t.sum(axis=len(batch), keepdims=True)
    else:
        t = rng.integers(0, c, (*batch, *out_features))
        if ignore is not None and not unbatched:
            t.reshape(-1)[1] = ignore
    return x, w, b, t


# (configuration, kwargs, options): reference and chunked paths
CONFIGS = [
    (dict(), dict(), None),
    (dict(ignore=-100), dict(), None),
    (dict(ignore=2), dict(ignore_index=2, reduction="sum"), None),
    (dict(), dict(reduction="none", label_smoothing=0.2), None),
    (dict(out_features=(2, 3)), dict(), None),
    (dict(out_features=(2,), ignore=-100), dict(reduction="none"), None),
    (dict(probabilities=True), dict(label_smoothing=0.1), None),
    (dict(probabilities=True, out_features=(2,)), dict(reduction="sum"), None),
    (dict(unbatched=True), dict(), None),
    (dict(unbatched=True, probabilities=True), dict(reduction="none"), None),
    (dict(ignore=-100), dict(), Options()),
    (dict(ignore=-100), dict(), Options(batch_chunk_size=3)),
    (dict(ignore=4), dict(ignore_index=4, reduction="sum"), Options(batch_chunk_size=2)),
    (dict(ignore=-100), dict(reduction="none"), Options(batch_chunk_size=4)),
    (dict(), dict(reduction="mean"), Options(chunking_method="aspect_ratio:2")),
    (dict(unbatched=True), dict(), Options()),
    (dict(unbatched=True), dict(reduction="none"), Options(batch_chunk_size=1)),
]


@pytest.mark.parametrize("bias,class_weight", [(False, False), (True, True)])
@pytest.mark.parametrize("config,kwargs,options", CONFIGS)
def test_matches_torch_loss_and_gradients(torch, config, kwargs, options, bias, class_weight):
    rng = np.random.default_rng(0)
    n, f, c = 7, 4, 6
    x, w, b, t = _inputs(rng, n, f, c, **config)
    cw = rng.random(c) + 0.5
    results = []
    for lib, functional in ((torch, torch.nn.functional), (ember, F)):
        xs, ws, bs = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        opts = None
        if options is not None:
            cls = torch.nn.LinearCrossEntropyOptions if lib is torch else Options
            opts = cls(batch_chunk_size=options.batch_chunk_size,
                       chunking_method=options.chunking_method)
        loss = functional.linear_cross_entropy(
            xs, ws, lib.tensor(t), linear_bias=bs if bias else None,
            weight=lib.tensor(cw) if class_weight else None, options=opts, **kwargs)
        upstream = lib.tensor(np.linspace(0.5, 1.5, max(loss.numel(), 1)).reshape(loss.shape))
        (loss * upstream).sum().backward()
        results.append([loss, xs.grad, ws.grad, bs.grad if bias else None])
    for theirs, ours in zip(*results):
        if theirs is None:
            assert ours is None
            continue
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_reference_path_is_linear_then_cross_entropy():
    rng = np.random.default_rng(1)
    x, w, b, t = _inputs(rng, 5, 3, 4, out_features=(2,))
    x, w, b, t = ember.tensor(x), ember.tensor(w), ember.tensor(b), ember.tensor(t)
    loss = F.linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1)
    logits = F.linear(x, w.reshape(8, 3), b.reshape(8)).reshape(5, 4, 2)
    assert loss.item() == pytest.approx(F.cross_entropy(logits, t, label_smoothing=0.1).item(),
                                        rel=1e-12)
    assert loss.dtype is ember.float64


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunked", [False, True])
def test_gradcheck_float64(reduction, chunked):
    rng = np.random.default_rng(2)
    x, w, b, t = _inputs(rng, 5, 3, 4, ignore=-100)
    xs, ws, bs = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    target, cw = ember.tensor(t), ember.tensor(rng.random(4) + 0.5)
    # gradcheck runs backward once per output element: the scalar reductions need permission
    options = Options(batch_chunk_size=2, allow_retain_graph=True) if chunked else None

    def fn(x, w, b):
        return F.linear_cross_entropy(x, w, target, linear_bias=b, weight=cw,
                                      reduction=reduction, options=options)

    assert gradcheck(fn, (xs, ws, bs))


def test_gradcheck_k_dimensional_and_probabilities():
    rng = np.random.default_rng(3)
    x, w, b, t = _inputs(rng, 3, 2, 3, out_features=(2,), probabilities=True)
    xs, ws, bs = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    ts = ember.tensor(t, requires_grad=True)
    assert gradcheck(lambda x, w, b, t: F.linear_cross_entropy(
        x, w, t, linear_bias=b, label_smoothing=0.3), (xs, ws, bs, ts))


def test_reference_path_has_second_derivatives():
    rng = np.random.default_rng(4)
    x, w, _, t = _inputs(rng, 4, 3, 5)
    xs = ember.tensor(x, requires_grad=True)
    ws, target = ember.tensor(w), ember.tensor(t)
    (g,) = ember.autograd.grad(F.linear_cross_entropy(xs, ws, target), xs, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), xs)
    assert gg.shape == xs.shape and np.any(host(gg) != 0)


def test_chunked_equals_reference_for_every_chunk_size():
    rng = np.random.default_rng(5)
    x, w, b, t = _inputs(rng, 9, 5, 7, ignore=-100)
    reference = None
    for chunk in (None, 1, 2, 4, 9, 20):
        xs, ws, bs = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
        options = None if chunk is None else Options(batch_chunk_size=chunk)
        loss = F.linear_cross_entropy(xs, ws, ember.tensor(t), linear_bias=bs, options=options)
        loss.backward()
        values = [host(loss), host(xs.grad), host(ws.grad), host(bs.grad)]
        if reference is None:
            reference = values
        for a, r in zip(values, reference):
            np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-14)


def test_chunked_path_never_holds_the_full_logits():
    import tracemalloc

    rng = np.random.default_rng(12)
    n, f, c = 1024, 4, 1024  # float32 logits: 4 MiB, their gradient as much again
    x = ember.tensor(rng.standard_normal((n, f)).astype(np.float32), requires_grad=True)
    w = ember.tensor(rng.standard_normal((c, f)).astype(np.float32), requires_grad=True)
    t = ember.tensor(rng.integers(0, c, n))
    peaks = []
    for options in (None, Options(batch_chunk_size=64)):
        tracemalloc.start()
        try:
            F.linear_cross_entropy(x, w, t, options=options).backward()
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[0] > 4 * 2**20 and peaks[1] < peaks[0] / 4


def test_chunked_float32_and_float16_accumulation():
    rng = np.random.default_rng(6)
    x, w, _, t = _inputs(rng, 6, 4, 5)
    ref = F.linear_cross_entropy(ember.tensor(x), ember.tensor(w), ember.tensor(t))
    for dtype, rtol in ((ember.float32, 1e-6), (ember.float16, 1e-2)):
        xs = ember.tensor(x, dtype=dtype, requires_grad=True)
        ws = ember.tensor(w, dtype=dtype, requires_grad=True)
        loss = F.linear_cross_entropy(xs, ws, ember.tensor(t), options=Options())
        loss.backward()
        assert loss.dtype is dtype and xs.grad.dtype is dtype and ws.grad.dtype is dtype
        assert loss.item() == pytest.approx(ref.item(), rel=rtol)


def test_chunked_mean_of_nothing_is_nan():
    rng = np.random.default_rng(7)
    x, w, _, _ = _inputs(rng, 3, 2, 4)
    target = ember.tensor([-100, -100, -100])
    for options in (None, Options()):
        xs = ember.tensor(x, requires_grad=True)
        loss = F.linear_cross_entropy(xs, ember.tensor(w), target, options=options)
        assert np.isnan(loss.item())
    empty = F.linear_cross_entropy(ember.zeros(0, 2, dtype=ember.float64), ember.tensor(w),
                                   ember.zeros(0, dtype=ember.int64), options=Options())
    assert np.isnan(empty.item())


def test_chunked_backward_once_unless_allowed():
    rng = np.random.default_rng(8)
    x, w, _, t = _inputs(rng, 4, 3, 5)
    xs = ember.tensor(x, requires_grad=True)
    loss = F.linear_cross_entropy(xs, ember.tensor(w), ember.tensor(t), options=Options())
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match=r"linear_cross_entropy chunked backward called twice; "
                                           r"retain_graph=True / double backward are not "
                                           r"supported."):
        loss.backward()
    xs.grad = None
    loss = F.linear_cross_entropy(xs, ember.tensor(w), ember.tensor(t),
                                  options=Options(allow_retain_graph=True))
    loss.backward(retain_graph=True)
    first = host(xs.grad).copy()
    loss.backward()
    np.testing.assert_allclose(host(xs.grad), 2 * first)
    # reduction='none' recomputes its gradients in backward: retain_graph just works
    xs.grad = None
    rows = F.linear_cross_entropy(xs, ember.tensor(w), ember.tensor(t), reduction="none",
                                  options=Options())
    rows.sum().backward(retain_graph=True)
    rows.sum().backward()
    np.testing.assert_allclose(host(xs.grad), 2 * first * 4)


def test_chunked_skips_gradients_nobody_needs():
    rng = np.random.default_rng(9)
    x, w, b, t = _inputs(rng, 4, 3, 5)
    xs, ws, bs = ember.tensor(x), ember.tensor(w, requires_grad=True), ember.tensor(b)
    loss = F.linear_cross_entropy(xs, ws, ember.tensor(t), linear_bias=bs, options=Options())
    loss.backward()
    assert xs.grad is None and bs.grad is None and ws.grad is not None
    with ember.no_grad():
        out = F.linear_cross_entropy(xs, ws, ember.tensor(t), options=Options())
    assert out.grad_fn is None and not out.requires_grad


def test_unsupported_options_warn_and_take_the_reference_path():
    rng = np.random.default_rng(10)
    x, w, b, t = _inputs(rng, 4, 3, 5, out_features=(2,))
    x, w, b, t = ember.tensor(x), ember.tensor(w), ember.tensor(b), ember.tensor(t)
    with pytest.warns(UserWarning, match=r"linear_cross_entropy: ``options`` ignored; chunked "
                                         r"path needs reduction in \{'mean','sum','none'\}, "
                                         r"label_smoothing == 0, target.dtype == int64, "
                                         r"out_features == \(\). Got reduction='mean', "
                                         r"label_smoothing=0.0, target.dtype=ember.int64, "
                                         r"out_features=\(2,\), tracing=False, "
                                         r"linear_bias.shape=\(5, 2\)."):
        loss = F.linear_cross_entropy(x, w, t, linear_bias=b, options=Options())
    assert loss.item() == pytest.approx(F.linear_cross_entropy(x, w, t, linear_bias=b).item())
    x2, w2, _, t2 = _inputs(rng, 4, 3, 5)
    with pytest.warns(UserWarning, match="label_smoothing=0.1"):
        F.linear_cross_entropy(ember.tensor(x2), ember.tensor(w2), ember.tensor(t2),
                               label_smoothing=0.1, options=Options())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.linear_cross_entropy(ember.tensor(x2), ember.tensor(w2), ember.tensor(t2),
                               options=Options())


def test_functional_errors():
    x, w, t = ember.randn(2, 3), ember.randn(4, 3), ember.tensor([0, 1])
    cases = [
        ((ember.randn(2, 2, 3), w, t), {}, "expected input with dimensionality 1 or 2, got 3"),
        ((ember.tensor(1.0), w, t), {}, "expected input with dimensionality 1 or 2, got 0"),
        ((x, ember.randn(3), t), {}, "expected linear_weight with dimensionality at least 2, "
                                     "got 1"),
        ((x, ember.randn(4, 5), t), {}, "expected equal input and linear_weight last dimensions "
                                        r"\(in_features\), got 3 and 5, respectively"),
        ((x, w, t), {"linear_bias": ember.randn(3)}, r"expected linear_bias shape \(4,\), got "
                                                     r"\(3,\)"),
        ((ember.randn(3), ember.randn(4, 2, 3), ember.tensor([0, 1])), {},
         r"K-dimensional loss defined by linear_weight shape \(4, 2, 3\) requires batched "
         r"input, \(N, 3\), got unbatched input with shape \(3,\)"),
        ((x, w, ember.rand(2, 4)), {"ignore_index": 1}, "ignore_index cannot be specified when "
                                                        "target contains probabilities"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(RuntimeError, match="^" + message + "$"):
            F.linear_cross_entropy(*args, **kwargs)
    with pytest.raises(RuntimeError, match=r"linear_cross_entropy supports float32 acc_dtype "
                                           r"with float16/bfloat16 inputs, but got ember.float64 "
                                           r"acc_dtype and ember.float32 inputs."):
        F.linear_cross_entropy(x, w, t, options=Options(acc_dtype=ember.float64))
    with pytest.raises(ValueError, match=r"batch_chunk_size \(=3\) and chunking_method "
                                         r"\('aspect_ratio'\) give different chunk sizes \(3 vs "
                                         r"1\); pass only one."):
        F.linear_cross_entropy(x, w, t, options=Options(batch_chunk_size=3,
                                                        chunking_method="aspect_ratio"))


def test_functional_errors_match_torch(torch):
    cases = [((2, 2, 3), (4, 3), (2,), {}), ((2, 3), (3,), (2,), {}), ((2, 3), (4, 5), (2,), {}),
             ((2, 3), (4, 3), (2,), {"linear_bias": (3,)}), ((3,), (4, 2, 3), (2,), {}),
             ((2, 3), (4, 3), (2, 4), {"ignore_index": 1})]
    for x_shape, w_shape, t_shape, extra in cases:
        messages = []
        for lib, functional in ((torch, torch.nn.functional), (ember, F)):
            target = lib.rand(*t_shape) if len(t_shape) == 2 else lib.zeros(t_shape,
                                                                            dtype=lib.int64)
            kwargs = {k: (lib.randn(*v) if k == "linear_bias" else v) for k, v in extra.items()}
            with pytest.raises(RuntimeError) as info:
                functional.linear_cross_entropy(lib.randn(*x_shape), lib.randn(*w_shape), target,
                                                **kwargs)
            messages.append(str(info.value))
        assert messages[0] == messages[1]


# -- options ------------------------------------------------------------------------------
def test_options_defaults_and_validation():
    opts = Options()
    assert repr(opts) == ("LinearCrossEntropyOptions(allow_retain_graph=False, "
                          "batch_chunk_size=None, chunking_method='auto', acc_policy='auto', "
                          "acc_dtype=None)")
    with pytest.raises(AttributeError):
        opts.batch_chunk_size = 3  # frozen
    with pytest.raises(ValueError, match="invalid acc_policy: 'fast'"):
        Options(acc_policy="fast")
    for method in ("ratio", "aspect_ratio:0", "aspect_ratio:x"):
        with pytest.raises(ValueError, match=f"invalid chunking_method: '{method}'"):
            Options(chunking_method=method)
    for size in (0, -2, 1.5):
        with pytest.raises(ValueError, match=f"batch_chunk_size must be positive int or None, "
                                             f"got {size}"):
            Options(batch_chunk_size=size)
    with pytest.raises(ValueError, match="acc_dtype must be one of"):
        Options(acc_dtype=ember.int32)
    Options(chunking_method="aspect_ratio:4", acc_policy="compact", acc_dtype=ember.float32)


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_chunk_size=5), dict(acc_policy="accurate"),
                                    dict(chunking_method="aspect_ratio"),
                                    dict(chunking_method="aspect_ratio:3"),
                                    dict(chunking_method=None)])
@pytest.mark.parametrize("shape", [(64, 16, 1000), (10, 8, 4), (1, 3, 100), (0, 3, 5)])
def test_options_adjust_matches_torch(torch, kwargs, shape):
    n, f, c = shape
    for ours_dtype, theirs_dtype in ((ember.float32, torch.float32),
                                     (ember.float16, torch.float16)):
        ours = Options(**kwargs)._adjust(n, f, c, ours_dtype, ember.device("cpu"))
        theirs = torch.nn.LinearCrossEntropyOptions(**kwargs)._adjust(
            n, f, c, theirs_dtype, torch.device("cpu"))
        assert ours.batch_chunk_size == theirs.batch_chunk_size
        assert ours.acc_policy == theirs.acc_policy
        assert ours.chunking_method == theirs.chunking_method
        assert str(ours.acc_dtype).split(".")[1] == str(theirs.acc_dtype).split(".")[1]


# -- the module ---------------------------------------------------------------------------
def test_module_matches_torch(torch):
    rng = np.random.default_rng(11)
    for kwargs in (dict(), dict(out_features=(2, 3), bias=True, reduction="sum",
                                label_smoothing=0.1, ignore_index=1),
                   dict(bias=True, options=True)):
        ours_kwargs, theirs_kwargs = dict(kwargs), dict(kwargs)
        if kwargs.get("options"):
            ours_kwargs["options"] = Options(batch_chunk_size=2)
            theirs_kwargs["options"] = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
        ours = nn.LinearCrossEntropyLoss(4, 5, dtype=ember.float64, **ours_kwargs)
        theirs = torch.nn.LinearCrossEntropyLoss(4, 5, dtype=torch.float64, **theirs_kwargs)
        assert repr(ours) == repr(theirs).replace("torch", "ember")
        assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
        theirs.load_state_dict({k: torch.tensor(host(v)) for k, v in ours.state_dict().items()})
        x = rng.standard_normal((6, 4))
        t = rng.integers(0, 5, (6, *kwargs.get("out_features", ())))
        a, b = ours(ember.tensor(x), ember.tensor(t)), theirs(torch.tensor(x), torch.tensor(t))
        a.backward()
        b.backward()
        np.testing.assert_allclose(host(a), b.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(host(ours.linear.weight.grad),
                                   theirs.linear.weight.grad.numpy(), rtol=1e-10)


def test_module_layout_and_errors():
    loss = nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True,
                                     weight=ember.ones(4))
    assert tuple(loss.linear.weight.shape) == (8, 3) and tuple(loss.linear.bias.shape) == (8,)
    assert set(loss.state_dict()) == {"weight", "linear.weight", "linear.bias"}
    assert loss.ignore_index is None and loss.reduction == "mean" and loss.options is None
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(4,\), got \(3,\)"):
        nn.LinearCrossEntropyLoss(3, 4, weight=ember.ones(3))
    with pytest.raises(RuntimeError, match=r"expected label_smoothing to be in range \[0, 1\], "
                                           "got 1.5"):
        nn.LinearCrossEntropyLoss(3, 4, label_smoothing=1.5)
    with pytest.raises(TypeError):
        nn.LinearCrossEntropyLoss(3, 4, (2,))  # out_features is keyword-only


def test_names_and_module_paths():
    from ember.nn.modules import loss as loss_module

    assert nn.LinearCrossEntropyLoss is loss_module.LinearCrossEntropyLoss
    assert nn.LinearCrossEntropyOptions is loss_module.LinearCrossEntropyOptions
    assert nn.modules.LinearCrossEntropyLoss is nn.LinearCrossEntropyLoss
    for name in ("LinearCrossEntropyLoss", "LinearCrossEntropyOptions"):
        assert name in nn.__all__ and name in nn.modules.__all__
    assert "linear_cross_entropy" in F.__all__
    assert nn.utils.memory_format.convert_conv2d_weight_memory_format is \
        nn.utils.convert_conv2d_weight_memory_format
    assert "convert_conv3d_weight_memory_format" in nn.utils.__all__


# -- nn.utils.convert_conv*d_weight_memory_format -----------------------------------------
def test_convert_conv2d_weight_memory_format():
    from ember.nn.utils import convert_conv2d_weight_memory_format

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.ConvTranspose2d(4, 2, 3)),
                          nn.Conv3d(2, 2, 1), nn.Linear(2, 2))
    weight, values = model[0].weight, host(model[0].weight).copy()
    out = convert_conv2d_weight_memory_format(model, ember.channels_last)
    assert out is model and model[0].weight is weight  # the same Parameter, new layout
    assert model[0].weight.is_contiguous(memory_format=ember.channels_last)
    assert model[0].weight.stride() == (27, 1, 9, 3)
    assert model[1][0].weight.is_contiguous(memory_format=ember.channels_last)
    assert model[2].weight.is_contiguous()  # a Conv3d: untouched
    np.testing.assert_array_equal(host(model[0].weight), values)
    x = ember.randn(1, 3, 6, 6)
    assert model[0](x).shape == (1, 4, 4, 4)
    convert_conv2d_weight_memory_format(model, ember.contiguous_format)
    assert model[0].weight.stride() == (27, 9, 3, 1)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        convert_conv2d_weight_memory_format(model, ember.channels_last_3d)
    with pytest.raises(RuntimeError, match="Unsupported memory formatPreserve"):
        convert_conv2d_weight_memory_format(model, ember.preserve_format)


def test_convert_conv3d_weight_memory_format():
    from ember.nn.utils import convert_conv3d_weight_memory_format

    model = nn.Sequential(nn.Conv3d(2, 3, 2), nn.ConvTranspose3d(3, 2, 1), nn.Conv2d(2, 2, 1))
    assert convert_conv3d_weight_memory_format(model, ember.channels_last_3d) is model
    assert model[0].weight.is_contiguous(memory_format=ember.channels_last_3d)
    assert model[1].weight.is_contiguous(memory_format=ember.channels_last_3d)
    assert model[2].weight.is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        convert_conv3d_weight_memory_format(model, ember.channels_last)


def test_convert_conv_weight_memory_format_matches_torch(torch):
    from ember.nn.utils import convert_conv2d_weight_memory_format

    ours = nn.Sequential(nn.Conv2d(3, 5, 3), nn.ConvTranspose2d(5, 2, 2))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 5, 3), torch.nn.ConvTranspose2d(5, 2, 2))
    convert_conv2d_weight_memory_format(ours, ember.channels_last)
    torch.nn.utils.convert_conv2d_weight_memory_format(theirs, torch.channels_last)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert a.stride() == b.stride()


def test_signatures_match_torch(torch):
    import inspect

    def signature(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    tu = torch.nn.utils
    for ours, theirs in [(F.linear_cross_entropy, torch.nn.functional.linear_cross_entropy),
                         (nn.LinearCrossEntropyLoss, torch.nn.LinearCrossEntropyLoss),
                         (Options, torch.nn.LinearCrossEntropyOptions),
                         (nn.utils.convert_conv2d_weight_memory_format,
                          tu.convert_conv2d_weight_memory_format),
                         (nn.utils.convert_conv3d_weight_memory_format,
                          tu.convert_conv3d_weight_memory_format)]:
        assert signature(ours) == signature(theirs), ours.__qualname__
