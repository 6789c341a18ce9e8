"""``ember._C``: the torch._C names that model code probes (timm's optimizers and jit utils)."""

from __future__ import annotations

import pytest

import ember


def test_tensor_base_and_generator_are_embers():
    assert ember._C.TensorBase is ember.Tensor and ember._C._TensorBase is ember.Tensor
    assert isinstance(ember.zeros(1), ember._C.TensorBase)
    assert ember._C.Generator is ember.Generator


def test_missing_names_raise_attribute_error_so_getattr_probes_work():
    assert getattr(ember._C, "_CudaDeviceProperties", None) is None
    with pytest.raises(AttributeError):
        ember._C._no_such_binding  # noqa: B018


def test_set_grad_enabled_and_its_type_error():
    try:
        ember._C._set_grad_enabled(False)
        assert not ember.is_grad_enabled()
        assert not (ember.ones(1, requires_grad=True) * 2).requires_grad
    finally:
        ember._C._set_grad_enabled(True)
    assert ember.is_grad_enabled()
    with pytest.raises(TypeError, match=r"'enabled' \(position 1\) must be bool, not int"):
        ember._C._set_grad_enabled(1)


def test_tracing_state_follows_jit_trace():
    seen = []

    def f(x):
        seen.append((ember._C._get_tracing_state(), ember._C._is_tracing()))
        return x * 2

    assert ember._C._get_tracing_state() is None and not ember._C._is_tracing()
    ember.jit.trace(f, (ember.ones(2),), check_trace=False)
    assert seen[0][0] and seen[0][1] is True


def test_jit_switches_return_what_pytorchs_return():
    c = ember._C
    before = c._jit_set_profiling_executor(False)
    try:
        assert before is True
        assert c._jit_set_profiling_executor(True) is False
        assert c._jit_set_profiling_mode(True) is True
        assert c._jit_set_texpr_fuser_enabled(False) is None and not c._jit_texpr_fuser_enabled()
        c._jit_set_texpr_fuser_enabled(True)
        assert c._jit_override_can_fuse_on_cpu(True) is None and c._jit_can_fuse_on_cpu()
        assert c._jit_set_nvfuser_enabled(False) is False
    finally:
        c._jit_set_profiling_executor(True)
    assert c._get_privateuse1_backend_name() == "privateuseone"
    c._log_api_usage_once("ember.test")
    with pytest.raises(TypeError, match="bad argument type"):
        c._log_api_usage_once(3)


def test_cudnn_switch_is_backends_cudnn_enabled():
    was = ember._C._get_cudnn_enabled()
    try:
        ember._C._set_cudnn_enabled(False)
        assert ember.backends.cudnn.enabled is False or not ember.backends.cudnn.enabled
    finally:
        ember._C._set_cudnn_enabled(was)
    assert ember._C._get_cudnn_enabled() == was


def test_oracle_agrees_on_the_switch_return_values():
    torch = pytest.importorskip("torch")
    c = torch._C
    before = c._jit_set_profiling_executor(False)
    try:
        assert c._jit_set_profiling_executor(True) is False
    finally:
        c._jit_set_profiling_executor(before)
    assert c._jit_set_texpr_fuser_enabled(c._jit_texpr_fuser_enabled()) is None
    assert c._get_tracing_state() is None


def test_get_accelerator_is_the_cpu_without_one():
    """transformers picks its device mesh's type with ``torch._C._get_accelerator()``."""
    acc = ember._C._get_accelerator()
    want = ember.accelerator.current_accelerator(check_available=True) or ember.device("cpu")
    assert acc == want and isinstance(acc, ember.device)
