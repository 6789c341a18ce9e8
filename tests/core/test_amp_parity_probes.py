"""Mixed precision against PyTorch on the CPU: each probe runs the same program with ``ember``
and (where installed) ``torch`` and compares; each also asserts Ember's answer outright, so it
runs without torch too. Autocast's settings, state functions and their deprecation warnings,
``custom_fwd``/``custom_bwd``, and GradScaler's errors and its fused-optimizer protocol."""

from __future__ import annotations

import warnings

import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _outcome(fn, m):
    """``fn(m)``'s value, or its exception's type name and message, and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(m)
        except Exception as e:
            value = (type(e).__name__, str(e).split(" (Triggered internally")[0])
    said = [(w.category.__name__, str(w.message).split(" (Triggered internally")[0])
            for w in caught]
    return _plain(value, m), said


def _plain(v, m):
    if isinstance(v, m.dtype):
        return str(v).split(".")[-1]
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x, m) for x in v)
    if isinstance(v, dict):
        return {k: _plain(x, m) for k, x in v.items()}
    return v


def _same(fn):
    torch = _torch()
    assert _outcome(fn, ember) == _outcome(fn, torch)


# -- autocast's settings ---------------------------------------------------------------------------
def _cuda_autocast(m):
    ac = m.autocast("cuda")
    with ac:
        on = m.is_autocast_enabled("cuda")
    return ac._enabled, on, ac.fast_dtype


@pytest.mark.skipif(ember.cuda.is_available(), reason="CUDA autocast is on with a GPU")
def test_cuda_autocast_without_cuda_warns_and_disables():
    value, said = _outcome(_cuda_autocast, ember)
    assert value == (False, False, "float16")
    assert said == [("UserWarning", "CUDA is not available or torch_xla is imported. "
                                    "Disabling autocast.")]
    if ember.cuda.is_available() == _torch().cuda.is_available():
        _same(_cuda_autocast)


def _unsupported_dtype(m):
    ac = m.autocast("cpu", dtype=m.float32)
    return ac._enabled, ac.fast_dtype


def test_unsupported_dtype_warning_text():
    value, said = _outcome(_unsupported_dtype, ember)
    assert value == (False, "float32")
    assert said == [("UserWarning", "In CPU autocast, but the target dtype is not supported. "
                     "Disabling autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                     "torch.float16 currently.")]
    _same(_unsupported_dtype)


def _disabled_fast_dtype(m):
    return m.autocast("cpu", enabled=False).fast_dtype, m.autocast("cpu", enabled=False)._enabled


def test_disabled_autocast_still_has_the_default_dtype():
    assert _outcome(_disabled_fast_dtype, ember)[0] == ("bfloat16", False)
    _same(_disabled_fast_dtype)


def _decorate_non_callable(m):
    return m.autocast("cpu")(3)


def test_decorating_a_non_callable_is_a_type_error():
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable, but got int"):
        _decorate_non_callable(ember)
    _same(_decorate_non_callable)


def _availability(m):
    out = {d: m.amp.is_autocast_available(d) for d in ("cpu", "cuda", "mps", "xpu", "meta",
                                                       "cpu:0", "cuda:1")}
    try:
        m.amp.is_autocast_available("nowhere")
    except RuntimeError as e:
        out["nowhere"] = "device string: nowhere" in str(e)
    return out


def test_is_autocast_available_as_pytorch():
    got = _availability(ember)
    assert got == {"cpu": True, "cuda": True, "mps": True, "xpu": True, "meta": False,
                   "cpu:0": True, "cuda:1": True, "nowhere": True}
    _same(_availability)


def _state_names(m):
    out = {"mps": m.get_autocast_dtype("mps"), "hpu": m.get_autocast_dtype("hpu")}
    for bad in ("meta", "nowhere"):
        try:
            m.get_autocast_dtype(bad)
        except RuntimeError as e:
            out[bad] = "scalarType" in str(e) or "device string" in str(e)
    with m.autocast("cpu:0"):
        out["cpu:0"] = (m.is_autocast_enabled("cpu"), m.is_autocast_enabled("cpu:0"),
                        m.mm(m.ones(2, 2), m.ones(2, 2)).dtype)
    out["after"] = m.is_autocast_enabled("cpu")
    return out


def test_state_functions_take_device_strings():
    got = _outcome(_state_names, ember)[0]
    assert got == {"mps": "float16", "hpu": "bfloat16", "meta": True, "nowhere": True,
                   "cpu:0": (True, True, "bfloat16"), "after": False}
    _same(_state_names)


_DEPRECATED = [
    ("is_autocast_cpu_enabled", (), "torch.is_autocast_cpu_enabled() is deprecated. Please use "
                                    "torch.is_autocast_enabled('cpu') instead."),
    ("get_autocast_cpu_dtype", (), "torch.get_autocast_cpu_dtype() is deprecated. Please use "
                                   "torch.get_autocast_dtype('cpu') instead."),
    ("get_autocast_gpu_dtype", (), "torch.get_autocast_gpu_dtype() is deprecated. Please use "
                                   "torch.get_autocast_dtype('cuda') instead."),
    ("set_autocast_cpu_enabled", (False,), "torch.set_autocast_cpu_enabled(enabled) is "
     "deprecated. Please use torch.set_autocast_enabled('cpu', enabled) instead."),
    ("set_autocast_cpu_dtype", ("bfloat16",), "torch.set_autocast_cpu_dtype(dtype) is "
     "deprecated. Please use torch.set_autocast_dtype('cpu', dtype) instead."),
    ("set_autocast_gpu_dtype", ("float16",), "torch.set_autocast_gpu_dtype(dtype) is "
     "deprecated. Please use torch.set_autocast_dtype('cuda', dtype) instead."),
]


@pytest.mark.parametrize("name,args,message", _DEPRECATED, ids=[d[0] for d in _DEPRECATED])
def test_older_state_names_are_deprecated(name, args, message):
    def call(m):
        return getattr(m, name)(*(getattr(m, a) if isinstance(a, str) else a for a in args))

    assert _outcome(call, ember)[1] == [("DeprecationWarning", message)]
    _same(call)


# -- custom_fwd / custom_bwd ----------------------------------------------------------------------
def _custom_function(m, cast_inputs):
    seen = {}

    class Double(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, extra):
            seen["fwd"] = (m.is_autocast_enabled("cpu"), a.dtype, extra["b"].dtype)
            return a * 2

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = (m.is_autocast_enabled("cpu"), m.get_autocast_dtype("cpu"))
            seen["ctx"] = (ctx._fwd_used_autocast, ctx._dtype)
            return g * 2, None

    return Double, seen


def _custom_fwd_run(m, cast_inputs, autocast):
    Double, seen = _custom_function(m, cast_inputs)
    x = m.ones(3, requires_grad=True)
    with m.autocast("cpu", dtype=m.float16, enabled=autocast):
        out = Double.apply(x.to(m.bfloat16), {"b": m.ones(2)})
    out.float().sum().backward()
    return seen, out.dtype, x.grad.dtype


@pytest.mark.parametrize("autocast", [True, False])
@pytest.mark.parametrize("cast_inputs", [None, "float32", "float16"])
def test_custom_fwd_and_bwd_state_as_pytorch(cast_inputs, autocast):
    def run(m):
        return _custom_fwd_run(m, cast_inputs and getattr(m, cast_inputs), autocast)

    seen, out_dtype, _ = _outcome(run, ember)[0]
    if cast_inputs is not None:
        # a forward that ran with its inputs cast runs outside autocast, so does its backward
        assert seen["ctx"][0] is False and seen["bwd"][0] is False
        if autocast:
            assert seen["fwd"] == (False, cast_inputs, cast_inputs)
    else:
        assert seen["ctx"][0] is autocast and seen["bwd"][0] is autocast
    assert seen["ctx"][1] == "float16"  # recorded even when the region is disabled
    _same(run)


def _custom_fwd_bad_device(m):
    return m.amp.custom_fwd(device_type=m.device("cpu")), m.amp.custom_bwd(
        device_type=m.device("cpu"))


def test_custom_fwd_device_type_must_be_a_string():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        _custom_fwd_bad_device(ember)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.amp.custom_bwd(device_type=ember.device("cpu"))
    torch = _torch()
    assert _outcome(_custom_fwd_bad_device, ember)[0][0] == \
        _outcome(_custom_fwd_bad_device, torch)[0][0]


# -- GradScaler ----------------------------------------------------------------------------------
def _scaler_errors(m):
    out = {}
    for name, make in (("growth", lambda: m.amp.GradScaler("cpu", growth_factor=1.0)),
                       ("backoff", lambda: m.amp.GradScaler("cpu", backoff_factor=1.0))):
        try:
            make()
        except Exception as e:
            out[name] = (type(e).__name__, str(e))
    p = m.nn.Parameter(m.ones(3))
    opt = m.optim.SGD([p], lr=0.1)
    for name in ("step", "unscale_", "update"):
        try:
            getattr(m.amp.GradScaler("cpu"), name)(*(() if name == "update" else (opt,)))
        except Exception as e:
            out[name] = (type(e).__name__, str(e))
    s = m.amp.GradScaler("cpu")
    s.scale(m.ones(1))
    p.grad = m.ones(3)
    s.unscale_(opt)
    try:
        import pickle

        pickle.dumps(s)
    except Exception as e:
        out["pickle"] = type(e).__name__
    off = m.amp.GradScaler("cpu", enabled=False)
    out["off"] = (off._get_growth_tracker(), off.get_scale(), off.state_dict())
    return out


def test_grad_scaler_errors_are_pytorch_s():
    got = _outcome(_scaler_errors, ember)[0]
    assert got["growth"] == ("AssertionError", "The growth factor must be > 1.0.")
    assert got["backoff"] == ("AssertionError", "The backoff factor must be < 1.0.")
    assert got["step"][0] == "AssertionError" and "Attempted step but _scale is None" in \
        got["step"][1]
    assert got["update"][0] == got["unscale_"][0] == got["pickle"] == "AssertionError"
    assert got["off"] == (0, 1.0, {})
    _same(_scaler_errors)


def _scaler_found_inf(m):
    s = m.amp.GradScaler("cpu", init_scale=4.0)
    p = m.nn.Parameter(m.ones(3))
    opt = m.optim.SGD([p], lr=0.1)
    scaled = s.scale(iter([m.ones(1), m.ones(1)]))
    lazy = (type(scaled).__name__, [t.tolist() for t in scaled])
    p.grad = m.tensor([4.0, float("inf"), 8.0])
    checked = {str(d): (f.dtype, f.item()) for d, f in s._check_inf_per_device(opt).items()}
    unscaled_by_check = p.grad.tolist()
    s._per_optimizer_states.clear()
    p.grad = m.tensor([4.0, 2.0, 8.0])
    s.unscale_(opt)
    found = {str(d): (f.dtype, f.item()) for d, f in s._found_inf_per_device(opt).items()}
    return lazy, checked, unscaled_by_check, found, p.grad.tolist()


def test_grad_scaler_found_inf_per_device_and_lazy_scale():
    lazy, checked, raw, found, grads = _outcome(_scaler_found_inf, ember)[0]
    assert lazy == ("map", [[4.0], [4.0]])
    assert checked == {"cpu": ("float32", 1.0)} and raw[0] == 4.0
    assert found == {"cpu": ("float32", 0.0)} and grads == [1.0, 0.5, 2.0]
    _same(_scaler_found_inf)


def _fused_style(m):
    class Fused(m.optim.Optimizer):
        """Unscales and skips by itself, from the scaler's ``grad_scale``/``found_inf``."""
        _step_supports_amp_scaling = True

        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})
            self.seen = []

        def step(self, closure=None):
            self.seen.append((float(self.grad_scale), float(self.found_inf)))
            if float(self.found_inf) == 0:
                with m.no_grad():
                    for p in self.param_groups[0]["params"]:
                        p.sub_(p.grad / self.grad_scale * 0.5)

    p = m.nn.Parameter(m.ones(2))
    opt = Fused([p])
    s = m.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
    for g in ([8.0, 16.0], [float("nan"), 1.0], [8.0, 8.0]):
        s.scale(m.ones(1))
        p.grad = m.tensor(g)
        s.step(opt)
        s.update()
    return opt.seen, p.detach().tolist(), s.get_scale(), hasattr(opt, "grad_scale")


def test_grad_scaler_hands_scale_and_found_inf_to_a_fused_optimizer():
    seen, params, scale, left = _outcome(_fused_style, ember)[0]
    assert seen == [(8.0, 0.0), (16.0, 1.0), (8.0, 0.0)]
    assert params == [0.0, -0.5] and scale == 16.0 and left is False
    _same(_fused_style)
