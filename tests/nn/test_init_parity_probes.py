"""ember.nn.init against torch.nn.init, where differential probes found them apart:
trunc_normal_'s sampler (PyTorch's rejection sampling: its errors and its edge cases), meta
tensors left as they are, PyTorch's private ``_no_grad_*`` helpers, 0-d tensors as bounds.

Each test asserts Ember's outcome and, when PyTorch is importable, that PyTorch's is the same."""

import math
import re
import warnings

import numpy as np
import pytest

import ember
from ember.nn import init


def _torch():
    return pytest.importorskip("torch")


def _truncnorm_ks(values, mean, std, a, b) -> float:
    """Kolmogorov-Smirnov statistic times sqrt(n) of ``values`` against N(mean, std^2)
    truncated to [a, b] (below 1.63 with 99% probability for a right sampler)."""
    def cdf(z):
        return 0.5 * (1 + np.vectorize(math.erf)((z - mean) / (std * math.sqrt(2))))

    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = len(x)
    c = (cdf(x) - cdf(a)) / (cdf(b) - cdf(a))
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n)) * math.sqrt(n)


def test_trunc_normal_reports_its_own_bounds_when_a_exceeds_b():
    message = "uniform_ expects to return a [from, to) range, but found from=2 > to=1"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        init.trunc_normal_(ember.empty(3), a=2, b=1)
    torch = _torch()
    with pytest.raises(RuntimeError, match=re.escape(message)):
        torch.nn.init.trunc_normal_(torch.empty(3), a=2, b=1)


def test_trunc_normal_with_negative_std_samples_like_torch():
    """PyTorch's sampler squares ``(x - mean) / std``: a negative std draws as its absolute
    value (the old inverse-CDF sampler raised)."""
    ember.manual_seed(0)
    t = init.trunc_normal_(ember.empty(20000), std=-1)
    assert t.abs().max().item() <= 2
    assert _truncnorm_ks(t.numpy(), 0, 1, -2, 2) < 1.63
    torch = _torch()
    assert torch.nn.init.trunc_normal_(torch.empty(20000), std=-1).abs().max() <= 2


@pytest.mark.parametrize("mean,std,a,b", [(0, 1, -2, 2), (0.5, 0.3, 0, 1), (0, 1, 1, 1.5),
                                          (0, 1, 3, 4), (0, 0.02, -2, 2)])
def test_trunc_normal_distribution_kept(mean, std, a, b):
    """Both branches of PyTorch's sampler (wide intervals: normal draws redrawn outside;
    narrow ones: uniform draws accepted by the density), on a non-contiguous tensor: values
    inside [a, b] with the truncated normal's distribution. (A guard of the new sampler: the
    old inverse-CDF one passed it too.)"""
    ember.manual_seed(1)
    base = ember.zeros(200, 100)
    t = base.t()
    assert init.trunc_normal_(t, mean=mean, std=std, a=a, b=b) is t
    values = base.numpy()
    assert values.min() >= a and values.max() <= b
    assert (values == a).sum() + (values == b).sum() <= 1
    assert _truncnorm_ks(values, mean, std, a, b) < 1.63
    torch = _torch()
    theirs = torch.nn.init.trunc_normal_(torch.empty(20000), mean=mean, std=std, a=a, b=b)
    assert theirs.min() >= a and theirs.max() <= b


def test_trunc_normal_integer_tensor_error_like_torch():
    message = "\"normal_kernel_cpu\" not implemented for 'Long'"
    with pytest.raises(NotImplementedError, match=re.escape(message)):
        init.trunc_normal_(ember.empty(3, dtype=ember.int64))
    torch = _torch()
    with pytest.raises(NotImplementedError, match=re.escape(message)):
        torch.nn.init.trunc_normal_(torch.empty(3, dtype=torch.int64))


def test_trunc_normal_generator_and_float16_kept():
    """A guard of the new sampler: seeded generators repeat, float16 stays in bounds."""
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    a = init.trunc_normal_(ember.empty(500, device="cpu"), a=-1, b=1, generator=g1)
    b = init.trunc_normal_(ember.empty(500, device="cpu"), a=-1, b=1, generator=g2)
    assert ember.equal(a, b)
    h = init.trunc_normal_(ember.empty(2000, dtype=ember.float16), a=-1, b=1)
    assert h.dtype is ember.float16 and h.abs().max().item() <= 1
    torch = _torch()
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(torch.nn.init.trunc_normal_(torch.empty(500), a=-1, b=1, generator=g1),
                       torch.nn.init.trunc_normal_(torch.empty(500), a=-1, b=1, generator=g2))


@pytest.mark.parametrize("name,shape,args", [("sparse_", (3, 4), (0.5,))])
def test_meta_tensors_are_left_as_they_are(name, shape, args):
    out = getattr(init, name)(ember.empty(*shape, device="meta"), *args)
    assert out.is_meta and out.shape == shape
    torch = _torch()
    theirs = getattr(torch.nn.init, name)(torch.empty(*shape, device="meta"), *args)
    assert theirs.is_meta and theirs.shape == shape


@pytest.mark.parametrize("name,args", [("_no_grad_uniform_", (0, 1)), ("_no_grad_normal_", (0, 1)),
                                       ("_no_grad_fill_", (2.0,)), ("_no_grad_zero_", ()),
                                       ("_no_grad_trunc_normal_", (0, 1, -2, 2))])
def test_private_no_grad_helpers_exist(name, args):
    """Third-party code calls them (``nn.init._no_grad_trunc_normal_`` in model zoos)."""
    p = ember.nn.Parameter(ember.empty(2, 3))
    out = getattr(init, name)(p, *args)
    assert out is p and p.requires_grad and p.grad_fn is None
    if name == "_no_grad_fill_":
        assert (p == 2).all()
    torch = _torch()
    tp = torch.nn.Parameter(torch.empty(2, 3))
    assert getattr(torch.nn.init, name)(tp, *args) is tp


def test_no_grad_trunc_normal_warns_at_its_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        init._no_grad_trunc_normal_(ember.empty(3), 10, 1, -2, 2)
        init.trunc_normal_(ember.empty(3), mean=10)
    assert [w.filename for w in caught] == [__file__] * 2
    assert "mean is more than 2 std from [a, b]" in str(caught[0].message)


@pytest.mark.parametrize("fn,kwargs", [(init.uniform_, {"a": 0.0, "b": 1.0}),
                                       (init.normal_, {"mean": 0.0, "std": 1.0})])
def test_0d_tensors_as_bounds(fn, kwargs):
    t = fn(ember.empty(50), **{k: ember.tensor(v) for k, v in kwargs.items()})
    assert t.shape == (50,) and t.isfinite().all()
    torch = _torch()
    tfn = getattr(torch.nn.init, fn.__name__)
    assert tfn(torch.empty(50), **{k: torch.tensor(v) for k, v in kwargs.items()}).shape == (50,)


@pytest.mark.parametrize("shape,kwargs", [
    ((4,), dict(std=0.5, a=-0.5, b=0.5)),                # narrow: uniform draws accepted
    ((300, 7), dict(std=1.0, a=-2.0, b=2.0)),            # wide: normal draws redrawn
    ((50,), dict(mean=0.0, std=1.0, a=1.0, b=1.5)),
    ((1000,), dict(std=0.02)),                           # ViT's init: nothing redrawn
    ((64, 3), dict(mean=0.5, std=0.3, a=0.0, b=1.0)),
])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trunc_normal_draws_pytorchs_values(shape, kwargs, layout, dtype):
    """Under one seed, PyTorch's values exactly: its sampler redraws a whole tensor's worth
    each round, so drawing only for the rejected elements (Ember's sampler until session 50)
    gave other values wherever a draw was rejected."""
    torch = _torch()

    def draw(lib):
        lib.manual_seed(7)
        t = lib.empty(*shape[::-1], dtype=getattr(lib, dtype))
        t = t.t() if layout == "transposed" and len(shape) == 2 else t.reshape(shape)
        return lib.nn.init.trunc_normal_(t, **kwargs)

    np.testing.assert_array_equal(draw(ember).numpy(), draw(torch).numpy())


@pytest.mark.parametrize("shape,sparsity", [((4, 3), 0.5), ((10, 7), 0.25), ((3, 4), 1.0)])
def test_sparse_draws_pytorchs_values(shape, sparsity):
    """PyTorch's sparse_ zeroes each column's first rows of a ``randperm`` drawn from the
    global generator, whatever ``generator`` is (that one draws the normal values)."""
    torch = _torch()

    def draw(lib):
        lib.manual_seed(3)
        # on the CPU whatever the run's default device: a CPU generator, and the randperm
        # indices are made on the default device (as PyTorch's, which then refuses to index
        # a CPU tensor with CUDA ones)
        with lib.device("cpu"):
            return lib.nn.init.sparse_(lib.empty(*shape), sparsity,
                                       generator=lib.Generator().manual_seed(9))

    np.testing.assert_array_equal(draw(ember).numpy(), draw(torch).numpy())
