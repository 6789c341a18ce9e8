"""ember.optim against PyTorch 2.13 on the edges that differential probes found: complex
parameters (updated as real pairs), sparse-gradient errors, checkpoints with Python-number
``step``, tensor hyper-parameters and ASGD's rounding of its scalar state.

Each behaviour has a check that runs without PyTorch (a NumPy or pure-value reference) and,
where PyTorch is installed, the same program run in both libraries and compared.
"""

import numpy as np
import pytest

import ember
import ember.optim as optim

#: the optimizers that PyTorch updates on ``view_as_real`` of a complex parameter
COMPLEX = [
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, amsgrad=True, maximize=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
    ("Adagrad", dict(lr=0.1)),
    ("Adadelta", dict(lr=1.0)),
    ("Adamax", dict(lr=0.1)),
    ("NAdam", dict(lr=0.1)),
    ("RAdam", dict(lr=0.1)),
    ("Rprop", dict(lr=0.1)),
    ("ASGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
]

Z0 = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j], dtype=np.complex64)
GRADS = [np.array([0.5 + 0.1j, -1j, 0.3 - 0.7j], dtype=np.complex64),
         np.array([-0.2 + 0.4j, 0.6 + 0.6j, -1 + 0j], dtype=np.complex64),
         np.array([0.1 - 0.3j, -0.5 + 0.2j, 0.25 + 0.5j], dtype=np.complex64)]


def _as_pairs(z):
    """A complex array as PyTorch's ``view_as_real``: real and imaginary parts side by side."""
    return np.stack([z.real, z.imag], axis=-1)


def _run(lib, name, kwargs, z0, grads):
    """Step ``name`` over ``grads`` from ``z0``; the parameter and the state dict's arrays."""
    p = lib.nn.Parameter(lib.tensor(z0))
    opt = getattr(lib.optim, name)([p], **kwargs)
    for g in grads:
        p.grad = lib.tensor(g)
        opt.step()
    state = opt.state_dict()["state"].get(0, {})
    return (np.asarray(p.detach().numpy()),
            {k: np.asarray(v.detach().numpy()) for k, v in state.items()
             if hasattr(v, "detach")})


@pytest.mark.parametrize("name,kwargs", COMPLEX, ids=lambda v: str(v))
def test_complex_parameter_updates_as_real_pairs(name, kwargs):
    z, zstate = _run(ember, name, kwargs, Z0, GRADS)
    r, rstate = _run(ember, name, kwargs, _as_pairs(Z0), [_as_pairs(g) for g in GRADS])
    np.testing.assert_allclose(_as_pairs(z), r, rtol=1e-6, atol=1e-7)
    for key, value in zstate.items():
        if np.iscomplexobj(value):
            np.testing.assert_allclose(_as_pairs(value), rstate[key], rtol=1e-6, atol=1e-7,
                                       err_msg=key)


@pytest.mark.parametrize("name,kwargs", COMPLEX, ids=lambda v: str(v))
def test_complex_parameter_matches_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    z, zstate = _run(ember, name, kwargs, Z0, GRADS)
    t, tstate = _run(torch, name, kwargs, Z0, GRADS)
    np.testing.assert_allclose(z, t, rtol=1e-5, atol=1e-6)
    assert list(zstate) == list(tstate)
    for key in tstate:
        assert zstate[key].dtype == tstate[key].dtype, key
        np.testing.assert_allclose(zstate[key], tstate[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_rprop_complex_step_size_starts_at_lr_in_both_parts():
    p = ember.nn.Parameter(ember.tensor(Z0))
    p.grad = ember.tensor(GRADS[0])
    opt = optim.Rprop([p], lr=0.25)
    opt.step()
    # both parts start at lr (the first step keeps them: there is no previous gradient)
    np.testing.assert_allclose(opt.state[p]["step_size"].numpy(),
                               np.full(3, 0.25 + 0.25j, dtype=np.complex64))
    # and both parts moved by -sign(grad) * lr
    g = GRADS[0]
    expected = Z0 - 0.25 * (np.sign(g.real) + 1j * np.sign(g.imag))
    np.testing.assert_allclose(p.detach().numpy(), expected)


def _lbfgs(lib, z0, **kwargs):
    w = lib.nn.Parameter(lib.tensor(z0))
    opt = lib.optim.LBFGS([w], **kwargs)

    def closure():
        opt.zero_grad()
        loss = ((w - 0.3).abs() ** 2).sum() + (w.abs() ** 4).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(2)]
    return np.asarray(w.detach().numpy()), losses, opt.state[w]["func_evals"]


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_complex_parameter_steps_on_real_pairs(line_search_fn):
    z0 = np.array([1 + 1j, -0.5 + 2j], dtype=np.complex64)
    z, losses, _ = _lbfgs(ember, z0, line_search_fn=line_search_fn)
    assert z.dtype == np.complex64
    assert losses[-1] < losses[0]
    # the flat vectors of the state hold the real pairs: twice the parameter's length
    w = ember.nn.Parameter(ember.tensor(z0))
    opt = optim.LBFGS([w], line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = ((w - 0.3).abs() ** 2).sum() + (w.abs() ** 4).sum()
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state[w]
    assert state["d"].dtype == ember.float32 and state["d"].shape == (4,)
    assert state["prev_flat_grad"].shape == (4,)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_complex_parameter_matches_torch(line_search_fn):
    torch = pytest.importorskip("torch")
    z0 = np.array([1 + 1j, -0.5 + 2j], dtype=np.complex64)
    ez, elosses, eevals = _lbfgs(ember, z0, line_search_fn=line_search_fn)
    tz, tlosses, tevals = _lbfgs(torch, z0, line_search_fn=line_search_fn)
    np.testing.assert_allclose(ez, tz, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(elosses, tlosses, rtol=1e-5)
    assert eevals == tevals


def test_lbfgs_sparse_gradient_is_densified():
    w = ember.nn.Parameter(ember.tensor([1.0, 2.0, 3.0]))
    opt = optim.LBFGS([w], max_iter=1)

    def closure():
        opt.zero_grad()
        w.grad = ember.sparse_coo_tensor(ember.tensor([[0, 2]]), ember.tensor([1.0, -1.0]),
                                         (3,))
        return ember.tensor(1.0)

    opt.step(closure)
    # first iteration: t = min(1, 1/|g|_1) * lr = 0.5, d = -g
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 2.0, 3.5])


SPARSE_ERRORS = [
    ("Adam", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("RMSprop", "RMSprop does not support sparse gradients"),
    ("Adadelta", "Adadelta does not support sparse gradients"),
    ("Adamax", "Adamax does not support sparse gradients"),
    ("NAdam", "NAdam does not support sparse gradients"),
    ("RAdam", "RAdam does not support sparse gradients"),
    ("ASGD", "ASGD does not support sparse gradients"),
    ("Rprop", "Rprop does not support sparse gradients"),
    ("Adafactor", "Adafactor does not support sparse gradients"),
    ("Muon", "Muon does not support sparse gradients"),
]


def _sparse_case(lib, name):
    """Two parameters, the second with a sparse gradient: the first gets its state before
    the error, as in PyTorch, and nothing is updated."""
    dense = lib.nn.Parameter(lib.ones(2, 3))
    sparse = lib.nn.Parameter(lib.ones(2, 3))
    dense.grad = lib.ones(2, 3)
    sparse.grad = lib.sparse_coo_tensor(lib.tensor([[0]]), lib.ones(1, 3), (2, 3))
    opt = getattr(lib.optim, name)([dense, sparse], lr=0.01)
    with pytest.raises(RuntimeError) as info:
        opt.step()
    return (str(info.value), dense.detach().numpy().tolist(), sparse.detach().numpy().tolist(),
            len(opt.state), sorted(opt.state_dict()["state"]))


@pytest.mark.parametrize("name,message", SPARSE_ERRORS)
def test_sparse_gradient_error(name, message):
    text, dense, sparse, n_state, ids = _sparse_case(ember, name)
    assert text == message
    assert dense == [[1.0] * 3] * 2 and sparse == [[1.0] * 3] * 2


@pytest.mark.parametrize("name,message", SPARSE_ERRORS)
def test_sparse_gradient_error_matches_torch(name, message):
    torch = pytest.importorskip("torch")
    if not hasattr(torch.optim, name):
        pytest.skip(f"torch.optim.{name} missing")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's sparse invariant-checks notice
        expected = _sparse_case(torch, name)
    assert _sparse_case(ember, name) == expected


LEGACY_STEP = [("Adam", ("step",)), ("AdamW", ("step",)), ("Adadelta", ("step",)),
               ("Adagrad", ("step",)), ("Adamax", ("step",)), ("RAdam", ("step",)),
               ("RMSprop", ("step",)), ("NAdam", ("step", "mu_product"))]


def _legacy_load(lib, name, keys):
    p = lib.nn.Parameter(lib.tensor([1.0, -2.0, 0.5]))
    p.grad = lib.tensor([0.3, -0.1, 0.2])
    opt = getattr(lib.optim, name)([p], lr=0.1)
    opt.step()
    saved = opt.state_dict()
    for key in keys:  # a checkpoint of the days when these were Python numbers
        saved["state"][0][key] = float(saved["state"][0][key])
    fresh = getattr(lib.optim, name)([p], lr=0.1)
    fresh.load_state_dict(saved)
    loaded = {k: (type(v).__name__, str(v.dtype), float(v)) for k, v in
              fresh.state[p].items() if k in keys}
    fresh.step()
    return loaded, p.detach().numpy().tolist(), float(fresh.state[p]["step"])


@pytest.mark.parametrize("name,keys", LEGACY_STEP)
def test_python_number_step_loads_as_tensor(name, keys):
    loaded, _, step = _legacy_load(ember, name, keys)
    for key in keys:
        kind, dtype, _ = loaded[key]
        assert kind == "Tensor" and dtype == "ember.float32", key
    assert step == 2.0


@pytest.mark.parametrize("name,keys", LEGACY_STEP)
def test_python_number_step_loads_as_torch(name, keys):
    torch = pytest.importorskip("torch")
    eloaded, eparam, estep = _legacy_load(ember, name, keys)
    tloaded, tparam, tstep = _legacy_load(torch, name, keys)
    assert {k: (v[1].split(".")[-1], v[2]) for k, v in eloaded.items()} == \
        {k: (v[1].split(".")[-1], v[2]) for k, v in tloaded.items()}
    np.testing.assert_allclose(eparam, tparam, rtol=1e-6)
    assert estep == tstep


def _adam_tensor_options(lib):
    out = []
    p = lib.nn.Parameter(lib.ones(2))
    for kwargs in [dict(lr=lib.tensor(0.1), foreach=True),
                   dict(lr=lib.tensor(0.1), foreach=True, capturable=True),
                   dict(betas=(lib.tensor(0.9), lib.tensor(0.99)), foreach=True),
                   dict(betas=(lib.tensor([0.9]), lib.tensor([0.99]))),
                   dict(betas=(lib.tensor([0.9, 0.8]), lib.tensor(0.99))),
                   dict(betas=(0.9, lib.tensor(0.99)))]:
        for cls in (lib.optim.Adam, lib.optim.AdamW):
            try:
                opt = cls([p], **kwargs)
            except (ValueError, RuntimeError) as e:
                out.append((type(e).__name__, str(e)))
                continue
            betas = opt.defaults["betas"]
            out.append(tuple((type(b).__name__, tuple(b.shape), round(float(b), 6))
                             if hasattr(b, "shape") else b for b in betas))
    return out


def test_adam_tensor_options():
    got = _adam_tensor_options(ember)
    lr_error = ("ValueError", "lr as a Tensor is not supported for capturable=False and "
                "foreach=True")
    assert got[0] == got[1] == lr_error
    assert got[2] == got[3] == (0.9, 0.999)  # capturable=True: accepted
    assert got[4][1].startswith("betas[0] as a Tensor is not supported")
    # 1-element betas stay tensors, made 0-dim (PyTorch's ``_to_scalar``)
    assert got[6] == (("Tensor", (), 0.9), ("Tensor", (), 0.99))
    assert got[8] == ("RuntimeError", "Boolean value of Tensor with more than one value is "
                      "ambiguous")  # the range check comes first, as in PyTorch
    assert got[10] == ("ValueError", "betas must be either both floats or both Tensors")


def test_adam_tensor_options_match_torch():
    torch = pytest.importorskip("torch")
    assert _adam_tensor_options(ember) == _adam_tensor_options(torch)


def test_adam_tensor_betas_step_like_float_betas():
    a = ember.nn.Parameter(ember.tensor([1.0, -2.0]))
    b = ember.nn.Parameter(ember.tensor([1.0, -2.0]))
    opt_a = optim.Adam([a], lr=0.1, betas=(ember.tensor(0.5), ember.tensor(0.75)))
    opt_b = optim.Adam([b], lr=0.1, betas=(0.5, 0.75))
    for _ in range(3):
        a.grad = ember.tensor([0.3, -0.7])
        b.grad = ember.tensor([0.3, -0.7])
        opt_a.step()
        opt_b.step()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _asgd_float64(lib):
    p = lib.nn.Parameter(lib.tensor([1.0, -2.0], dtype=lib.float64))
    opt = lib.optim.ASGD([p], lr=0.1, lambd=0.01, t0=1)
    for _ in range(3):
        p.grad = lib.tensor([0.5, 0.25], dtype=lib.float64)
        opt.step()
    state = opt.state[p]
    return float(state["eta"]), float(state["mu"]), p.detach().numpy().tolist()


def test_asgd_scalar_state_rounds_like_torch_as_tensor():
    eta, mu, _ = _asgd_float64(ember)
    # PyTorch computes the new eta in Python and makes it with torch.as_tensor: float32
    expected = float(np.float32(0.1 / (1 + 0.01 * 0.1 * 3) ** 0.75))
    assert eta == expected
    assert eta != 0.1 / (1 + 0.01 * 0.1 * 3) ** 0.75
    assert mu == float(np.float32(1 / 2))


def test_asgd_scalar_state_matches_torch():
    torch = pytest.importorskip("torch")
    assert _asgd_float64(ember) == _asgd_float64(torch)


def _fused_case(lib, name, grad_kind):
    """``fused=True`` with a complex parameter or a sparse gradient: the error, and whether
    anything moved."""
    if grad_kind == "complex":
        p = lib.nn.Parameter(lib.ones(3, dtype=lib.complex64))
        p.grad = lib.ones(3, dtype=lib.complex64)
    else:
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.sparse_coo_tensor(lib.tensor([[0, 2]]), lib.tensor([1.0, 2.0]), (3,))
    opt = getattr(lib.optim, name)([p], lr=0.1, fused=True)
    with pytest.raises(RuntimeError) as info:
        opt.step()
    return str(info.value), p.detach().numpy().tolist()


FUSED = [("SGD", "sparse", "`_fused_sgd` does not support sparse gradients"),
         ("Adagrad", "sparse", "`fused` does not support sparse grad or complex param"),
         ("Adam", "sparse", "Adam does not support sparse gradients, please consider "
                            "SparseAdam instead")]
FUSED += [(name, "complex", "`fused=True` requires all the params to be floating point "
                            "Tensors of supported devices")
          for name in ("SGD", "Adagrad", "Adam", "AdamW")]


@pytest.mark.parametrize("name,grad_kind,message", FUSED)
def test_fused_rejects_sparse_gradients_and_complex_params(name, grad_kind, message):
    text, values = _fused_case(ember, name, grad_kind)
    assert text.startswith(message)
    assert values == ([1 + 0j] * 3 if grad_kind == "complex" else [1.0] * 3)


@pytest.mark.parametrize("name,grad_kind,message", FUSED)
def test_fused_errors_match_torch(name, grad_kind, message):
    torch = pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_text, t_values = _fused_case(torch, name, grad_kind)
    e_text, e_values = _fused_case(ember, name, grad_kind)
    assert e_values == t_values
    if grad_kind == "complex":  # the device list and dtype names are each library's own
        assert e_text.split(":")[0] == t_text.split(":")[0]
    else:
        assert e_text == t_text


def test_fused_sgd_float_parameters_still_step():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    p.grad = ember.tensor([1.0, -1.0])
    opt = optim.SGD([p], lr=0.5, fused=True)
    opt.step()
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.0, 3.0])
