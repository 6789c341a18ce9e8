"""ember.nn.attention: SDPBackend and the sdpa_kernel context manager against PyTorch."""

import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def test_sdp_backend_values_match_torch():
    from torch.nn.attention import SDPBackend as TB

    from ember.nn.attention import SDPBackend
    assert {k: int(v) for k, v in SDPBackend.__members__.items()} == \
        {k: int(v) for k, v in TB.__members__.items()}
    for b in SDPBackend:
        assert repr(b) == repr(getattr(TB, b.name)) and str(b) == str(getattr(TB, b.name))


def _names(backends):
    return [b.name for b in backends]


@pytest.mark.parametrize("backends,prio", [
    ([("FLASH_ATTENTION"), ("MATH")], True), (["MATH", "EFFICIENT_ATTENTION"], False),
    ("CUDNN_ATTENTION", False), ([], False), (["ERROR"], False),
    (["OVERRIDEABLE", "MATH", "OVERRIDEABLE"], True),
])
def test_sdpa_kernel_sets_and_restores_like_torch(backends, prio):
    import torch.nn.attention as TA

    import ember.nn.attention as EA
    conv = (lambda mod: [getattr(mod.SDPBackend, b) for b in backends]
            if isinstance(backends, list) else getattr(mod.SDPBackend, backends))
    before = _names(EA._cur_sdpa_kernel_backends(True))
    assert before == _names(TA._cur_sdpa_kernel_backends(True))
    with EA.sdpa_kernel(conv(EA), set_priority=prio) as e, \
            TA.sdpa_kernel(conv(TA), set_priority=prio) as t:
        assert e == t == {}
        for wp in (False, True):
            assert _names(EA._cur_sdpa_kernel_backends(wp)) == \
                _names(TA._cur_sdpa_kernel_backends(wp))
        for shape in ((1, 2, 3, 4), (2, 3, 4)):  # flash takes 4-D inputs only
            _same_outcome(shape)
    assert _names(EA._cur_sdpa_kernel_backends(True)) == before


def _same_outcome(shape, **kwargs):
    """Ember's and PyTorch's scaled_dot_product_attention on the same CPU inputs under the
    current setting: the same output shape, or the same error and warnings (the choice among
    backends is the CPU's: explicit devices, also in a run on another default device)."""
    import warnings

    outcomes = []
    for lib, fn in ((ember, F.scaled_dot_product_attention),
                    (torch, torch.nn.functional.scaled_dot_product_attention)):
        q = lib.ones(*shape, device="cpu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcomes.append(("ok", tuple(fn(q, q, q, **kwargs).shape)))
            except RuntimeError as exc:
                outcomes.append(("error", str(exc)))
        outcomes[-1] += (sorted(str(w.message).split(" (Triggered")[0] for w in caught),)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("switch", ["flash", "math", "mem_efficient", "cudnn"])
def test_backends_cuda_switches_are_the_same_setting(switch):
    import torch.nn.attention as TA

    import ember.nn.attention as EA
    for lib in (ember, torch):
        assert getattr(lib.backends.cuda, f"{switch}_sdp_enabled")() is True
    try:
        for lib in (ember, torch):
            getattr(lib.backends.cuda, f"enable_{switch}_sdp")(False)
            assert getattr(lib.backends.cuda, f"{switch}_sdp_enabled")() is False
        assert _names(EA._cur_sdpa_kernel_backends()) == _names(TA._cur_sdpa_kernel_backends())
        for shape in ((1, 2, 3, 4), (2, 3, 4)):
            _same_outcome(shape)
            _same_outcome(shape, dropout_p=0.5)
    finally:
        for lib in (ember, torch):
            getattr(lib.backends.cuda, f"enable_{switch}_sdp")(True)


def test_deprecated_sdp_kernel_context_manager():
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        with ember.backends.cuda.sdp_kernel(enable_math=False, enable_mem_efficient=False):
            assert not ember.backends.cuda.math_sdp_enabled()
            assert ember.backends.cuda.flash_sdp_enabled()
            with pytest.raises(RuntimeError, match="No available kernel"):
                F.scaled_dot_product_attention(*[ember.ones(2, 3, 4, device="cpu")] * 3)
    assert ember.backends.cuda.math_sdp_enabled()


@pytest.mark.parametrize("shape, kwargs", [
    ((2, 3, 4, 8), {}),  # the fused kernel: q, k, v and the output are saved
    ((3, 4, 8), {}),  # 3-D: the math path, which saves only v of those
    ((2, 3, 4, 8), {"dropout_p": 0.3}),  # dropout: the math path too
])
@pytest.mark.parametrize("written", ["query", "key", "value", "output"])
def test_in_place_writes_after_attention_error_as_in_pytorch(shape, kwargs, written):
    """Which in-place write before backward is an error follows PyTorch's choice of kernel."""
    outcomes = []
    for lib, fn in ((ember, F.scaled_dot_product_attention),
                    (torch, torch.nn.functional.scaled_dot_product_attention)):
        lib.manual_seed(0)
        q, k, v = (lib.ones(*shape, dtype=lib.float64, device="cpu", requires_grad=True)
                   for _ in range(3))
        qq, kk, vv = q * 1, k * 1, v * 1
        out = fn(qq, kk, vv, **kwargs)
        {"query": qq, "key": kk, "value": vv, "output": out}[written].add_(1)
        try:
            out.sum().backward()
            outcomes.append("ok")
        except RuntimeError as exc:
            outcomes.append("modified by an inplace operation" in str(exc) or str(exc))
    assert outcomes[0] == outcomes[1]


def test_sdpa_kernel_rejects_other_types():
    from ember.nn.attention import sdpa_kernel
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a "
                                             "list of SDPBackend instances, got str"):
        with sdpa_kernel("MATH"):
            pass
