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
        q = ember.randn(1, 2, 3, 4)
        assert F.scaled_dot_product_attention(q, q, q).shape == (1, 2, 3, 4)  # always math
    assert _names(EA._cur_sdpa_kernel_backends(True)) == before


def test_sdpa_kernel_rejects_other_types():
    from ember.nn.attention import sdpa_kernel
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a "
                                             "list of SDPBackend instances, got str"):
        with sdpa_kernel("MATH"):
            pass
