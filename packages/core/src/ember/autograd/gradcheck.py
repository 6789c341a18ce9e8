"""``gradcheck`` / ``gradgradcheck``: compare analytical gradients with central differences.

The checks and their messages are PyTorch's (slow mode): the Jacobian of every
differentiable output with respect to every input that requires grad, computed twice to
detect non-determinism (``nondet_tol``); gradients must be zero for zero ``grad_output``;
backward functions must accept undefined (None) output gradients (``check_undefined_grad``).
``fast_mode`` runs the full (slow) check. ``check_forward_ad`` also builds the Jacobian
with forward-mode AD (``ember.autograd.forward_ad``, one JVP per input element) and checks
it against the same central differences; ``check_backward_ad=False`` leaves the
reverse-mode checks out (a ``Function`` with only ``jvp``). ``check_batched_grad``,
``check_batched_forward_grad`` and ``masked`` are accepted and ignored.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a check fails."""


FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""

_UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in ' \
    '"tools/autograd/derivatives.yaml"'


def _tensor_cls():
    from .._tensor import Tensor

    return Tensor


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _tensors(outs):
    """The tensor outputs of ``func`` (other values are passed over)."""
    Tensor = _tensor_cls()
    return [o for o in _as_tuple(outs) if isinstance(o, Tensor)]


def _float_tensors(outs):
    """The floating-point and complex tensor outputs of ``func``: PyTorch's numerical
    Jacobians leave the others (integer, bool) out."""
    from .. import _dtype

    return [o for o in _tensors(outs) if o._data.dtype in _dtype.INEXACT_NP]


def _differentiable_outputs(outs):
    # PyTorch reads ``requires_grad`` of every output: a non-tensor one raises AttributeError
    return [o for o in _as_tuple(outs) if o.requires_grad]


def _check_outputs(outputs) -> None:
    if any(o.is_sparse for o in outputs):
        raise ValueError("Sparse output is not supported at gradcheck yet. Please call "
                         "to_dense(masked_grad=...) on the output of fn for gradcheck.")


def _diff_input_indices(inputs):
    Tensor = _tensor_cls()
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _host64(t) -> np.ndarray:
    """A float64 copy (outputs may share memory with the perturbed inputs)."""
    return np.array(t._host(), dtype=np.float64).reshape(-1)


def _as_display(arr: np.ndarray, like=None):
    """A Jacobian as an ember tensor, so that messages print like PyTorch's; of the dtype
    of the real tensor ``like`` (PyTorch's Jacobians take their output's or input's)."""
    from .. import _dtype
    from .._tensor import CPU, _make

    if like is not None and like._data.dtype in _dtype.FLOATING_NP \
            and like._data.dtype.kind == "f" and like._data.dtype != arr.dtype:
        arr = arr.astype(like._data.dtype)
    return _make(arr, CPU)


# -- checks on the inputs -----------------------------------------------------------------

def _check_inputs(inputs) -> None:
    from .. import _dtype

    idx = _diff_input_indices(inputs)
    for i in idx:
        t = inputs[i]
        if t.dtype not in (_dtype.float64, _dtype.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=3)
        if t.is_sparse:  # (its values are perturbed, not its memory)
            continue
        # an empty tensor overlaps nothing (NumPy may give it zero strides)
        if t._data.size and not all(st > 0 or sz <= 1
                                    for st, sz in zip(t._data.strides, t._data.shape)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only "
                               "supports inputs that are non-overlapping to be able to compute "
                               "the numerical gradients correctly. You should call .contiguous "
                               "on the input before passing it to gradcheck.")
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")


# -- numerical Jacobian -------------------------------------------------------------------

def _numerical_jacobians(func, inputs, eps, outputs):
    """``jac[i][k]``: d(tensor output k, flattened) / d(differentiable input i, flattened),
    by central differences, shape ``(input numel, output numel)``; ``outputs`` are
    ``func``'s tensor outputs at ``inputs`` (they size the Jacobians, also of an empty
    input)."""
    result = []
    for i in _diff_input_indices(inputs):
        data = inputs[i]._data
        if not getattr(data.flags, "writeable", True):  # CuPy arrays have no such flag
            raise GradcheckError(f"gradcheck cannot perturb input {i}: its memory is read-only")
        per_output = [np.zeros((data.size, o._data.size)) for o in outputs]
        for row, idx in enumerate(np.ndindex(*data.shape)):
            orig = data[idx].item()
            data[idx] = orig - eps
            minus = [_host64(o) for o in _float_tensors(func(*inputs))]
            data[idx] = orig + eps
            plus = [_host64(o) for o in _float_tensors(func(*inputs))]
            data[idx] = orig
            for jac, a, b in zip(per_output, minus, plus):
                jac[row] = (b - a) / (2 * eps)
        result.append(per_output)
    return result


# -- analytical Jacobian ------------------------------------------------------------------

def _analytical_jacobian(output, diff_inputs, check_grad_dtypes, nondet_tol):
    """The Jacobian of one output, row by row through ``autograd.grad``, computed twice."""
    from .. import _factory
    from .._memory_format import contiguous_format
    from . import grad as autograd_grad

    def rows():
        jacs = [np.zeros((t._data.size, output._data.size)) for t in diff_inputs]
        sizes_ok = types_ok = True
        basis = _factory.zeros_like(output, memory_format=contiguous_format)
        flat = basis._data.reshape(-1)
        for j in range(output._data.size):
            flat[:] = 0
            flat[j] = 1
            grads = autograd_grad([output], diff_inputs, [basis], retain_graph=True,
                                  allow_unused=True)
            for k, (g, t) in enumerate(zip(grads, diff_inputs)):
                if g is None:
                    continue
                if g._data.shape != t._data.shape:
                    sizes_ok = False
                    continue
                if g._data.dtype != t._data.dtype:
                    types_ok = False
                jacs[k][:, j] = _host64(g)
        return jacs, sizes_ok, types_ok

    jac1, sizes_ok, types_ok = rows()
    jac2, _, _ = rows()
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    for a, b in zip(jac1, jac2):
        if a.size and np.abs(a - b).max() > nondet_tol:
            raise GradcheckError("Backward is not reentrant, i.e., running backward with same "
                                 "input and grad_output multiple times gives different values, "
                                 "although analytical gradient matches numerical gradient."
                                 f"The tolerance for nondeterminism was {nondet_tol}."
                                 + FAILED_NONDET_MSG)
    return jac1


def _slow_gradcheck(func_out, inputs, outputs, numerical, rtol, atol, check_grad_dtypes,
                    nondet_tol):
    tensor_outs = _float_tensors(func_out)
    if not outputs:
        for per_input in numerical:
            for jac in per_input:
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    keep = [k for k, o in enumerate(tensor_outs) if o.requires_grad]
    diff_inputs = [inputs[i] for i in _diff_input_indices(inputs)]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(o, diff_inputs, check_grad_dtypes, nondet_tol)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                    f"numerical:{_as_display(n, o)}\nanalytical:"
                    f"{_as_display(a, diff_inputs[j])}\n")


def _forward_gradcheck(func, func_out, inputs, numerical, rtol, atol) -> None:
    """``check_forward_ad``: the Jacobian from forward-mode AD (``forward_ad``: one JVP per
    element of each differentiable input, its tangent a one-hot) against the central
    differences ``numerical``, with PyTorch's message."""
    from .. import _factory
    from .._memory_format import contiguous_format
    from . import forward_ad

    tensor_outs = _float_tensors(func_out)
    for j, i in enumerate(_diff_input_indices(inputs)):
        x = inputs[i]
        jacs = [np.zeros((x._data.size, o._data.size)) for o in tensor_outs]
        basis = _factory.zeros_like(x, memory_format=contiguous_format)
        flat = basis._data.reshape(-1)
        for row in range(x._data.size):
            flat[:] = 0
            flat[row] = 1
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(x, basis.clone())
                outs = _float_tensors(func(*args))
                for k, o in enumerate(outs):
                    tangent = forward_ad.unpack_dual(o).tangent
                    if tangent is not None:
                        jacs[k][row] = _host64(tangent)
        for k, (a, n) in enumerate(zip(jacs, numerical[j])):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {k:d} with "
                    f"respect to input {j:d},\nnumerical:{_as_display(n)}\n"
                    f"analytical:{_as_display(a)}\n")


# -- the other backward checks ---------------------------------------------------------

def _test_backward_mul_by_grad_output(outputs, inputs) -> None:
    from .. import _factory
    from . import grad as autograd_grad

    diff_inputs = [inputs[i] for i in _diff_input_indices(inputs)]
    grads = autograd_grad(outputs, diff_inputs, [_factory.zeros_like(o) for o in outputs],
                          allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if np.any(gi._host() != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi._data.dtype != di._data.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi._device != di._device:
            raise GradcheckError("grad is incorrect device")
        if gi._data.shape != di._data.shape:
            raise GradcheckError("grad is incorrect size")


def _undefined_grad_bw(node, grad):
    return (None,)


def _undefined_grad_node():
    from .graph import make_node_class

    global _UndefinedGrad
    if _UndefinedGrad is None:
        _UndefinedGrad = make_node_class("UndefinedGradBackward", _undefined_grad_bw)
    return _UndefinedGrad


_UndefinedGrad = None


def _undefined(o):
    """An alias of ``o`` whose gradient reaches ``o``'s backward as undefined (None)."""
    from .._tensor import _make
    from .graph import record

    return record(_undefined_grad_node(), _make(o._data, o._device), (o,))


def _test_undefined_backward_mode(func, outputs, inputs) -> None:
    from .. import _factory
    from . import grad as autograd_grad

    diff_inputs = [inputs[i] for i in _diff_input_indices(inputs)]

    def warn_bc_breaking():
        warnings.warn("Backwards compatibility: New undefined gradient support checking feature "
                      "is enabled by default, but it may break existing callers of this "
                      "function. If this is true for you, you can call this function with "
                      '"check_undefined_grad=False" to disable the feature', stacklevel=4)

    def check(outs):
        try:
            grads = autograd_grad(outs, diff_inputs, [_factory.zeros_like(o) for o in outs],
                                  allow_unused=True)
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError("Expected backward function to handle undefined output grads. "
                                 + _UNDEFINED_NOTE) from e
        for gi in grads:
            if gi is not None and np.any(gi._host() != 0):
                warn_bc_breaking()
                raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                     "output grads are undefined or zero. " + _UNDEFINED_NOTE)

    # every output undefined, then (with several outputs) one undefined at a time
    check([_undefined(o) for o in _differentiable_outputs(func(*inputs))])
    if len(outputs) > 1:
        for k in range(len(outputs)):
            outs = _differentiable_outputs(func(*inputs))
            check([_undefined(o) if i == k else o for i, o in enumerate(outs)])


# -- entry points ------------------------------------------------------------------------

def _check_flags(flags: dict, modes: tuple, **needs: str) -> None:
    """PyTorch's AssertionErrors for inconsistent arguments (``flags``: the caller's): one of
    the two ``modes`` must be on, and each flag named in ``needs`` only with its mode on."""
    if not (flags[modes[0]] or flags[modes[1]]):
        raise AssertionError(f"Expected at least one of {modes[0]} or {modes[1]} to be True")
    for name, mode in needs.items():
        if flags[name] and not flags[mode]:
            raise AssertionError(f"Setting {name}=True requires {mode} to be True")


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    Use float64 inputs; those with ``requires_grad=True`` are checked, against every output
    that requires grad. Returns True, or raises ``GradcheckError`` (returns False with
    ``raise_exception=False``).
    """
    _check_flags(locals(), ("check_forward_ad", "check_backward_ad"),
                 check_batched_grad="check_backward_ad",
                 check_batched_forward_grad="check_forward_ad")
    try:
        _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                          check_grad_dtypes, check_backward_ad, check_forward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _as_real_problem(func, inputs):
    """A complex problem as a real one, as PyTorch checks complex gradients: each complex
    input that requires grad becomes its ``view_as_real`` (a float leaf with a trailing 2),
    each complex output its ``view_as_real``. Under PyTorch's convention the gradient of
    ``z`` is ``dL/dx + i dL/dy``, so the real problem's gradients are exactly the complex
    ones' (real, imaginary) parts, and central differences check them."""
    from .. import _dtype
    from ..ops.complex_ops import view_as_complex, view_as_real

    Tensor = _tensor_cls()
    cplx = [isinstance(t, Tensor) and t.requires_grad and t._data.dtype in _dtype.COMPLEX_NP
            for t in inputs]
    real_inputs = tuple(view_as_real(t.detach().contiguous()).clone().requires_grad_()
                        if c else t for t, c in zip(inputs, cplx))

    def as_real(out):
        if isinstance(out, Tensor) and out._data.dtype in _dtype.COMPLEX_NP:
            return view_as_real(out.contiguous() if out._data.ndim else out)
        return out

    def real_func(*args):
        args = [view_as_complex(a) if c else a for a, c in zip(args, cplx)]
        out = func(*args)
        if isinstance(out, (tuple, list)):
            return tuple(as_real(o) for o in out)
        return as_real(out)

    return real_func, real_inputs


def _has_complex(func, inputs) -> bool:
    from .. import _dtype

    Tensor = _tensor_cls()
    if any(isinstance(t, Tensor) and t._data.dtype in _dtype.COMPLEX_NP for t in inputs):
        return True
    return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, check_backward_ad, check_forward_ad=False) -> None:
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    func_out = func(*inputs)
    _check_outputs(_differentiable_outputs(func_out))
    if _has_complex(func, inputs) or _complex_outputs(func_out):
        func, inputs = _as_real_problem(func, inputs)
        func_out = func(*inputs)
    outputs = _differentiable_outputs(func_out)
    numerical = _numerical_jacobians(func, inputs, eps, _float_tensors(func_out))  # both modes
    if check_forward_ad:
        _forward_gradcheck(func, func_out, inputs, numerical, rtol, atol)
    if not check_backward_ad:
        return
    _slow_gradcheck(func_out, inputs, outputs, numerical, rtol, atol, check_grad_dtypes,
                    nondet_tol)
    if not outputs:
        return
    _test_backward_mul_by_grad_output(outputs, inputs)
    if check_undefined_grad:
        _test_undefined_backward_mode(func, outputs, inputs)


def _complex_outputs(func_out) -> bool:
    """Whether ``func`` returned a complex tensor (``ember.fft.fft`` of a real signal)."""
    from .. import _dtype

    return any(o._data.dtype in _dtype.COMPLEX_NP for o in _tensors(func_out))


def _random_grad_output(x, noncontiguous: bool, rng):
    """A ``make_tensor(low=-1, high=1, requires_grad=True)`` like ``x``."""
    from .. import _dtype, _factory
    from .._tensor import _make

    dt = x._data.dtype
    if dt in _dtype.COMPLEX_NP:  # a complex output gets a complex grad_output (PyTorch's)
        np_dt = dt
        values = (rng.uniform(-1, 1, size=x._data.shape)
                  + 1j * rng.uniform(-1, 1, size=x._data.shape)).astype(np_dt)
    else:
        np_dt = dt if dt in _dtype.FLOATING_NP else np.dtype(np.float64)
        values = rng.uniform(-1, 1, size=x._data.shape).astype(np_dt)
    if noncontiguous and values.size > 1:
        wide = np.empty(values.shape + (2,), dtype=np_dt)
        wide[..., 0] = values
        values = wide[..., 0]
    if x._device.type == "cpu":
        g = _make(values, x._device)
    else:
        g = _factory.tensor(values, dtype=_dtype.FROM_NP[np_dt], device=x._device)
    g.requires_grad = True
    return g


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives: ``gradcheck`` of the first-order gradient function.

    ``grad_outputs`` default to random tensors (uniform in [-1, 1]) that require grad.
    """
    from . import grad as autograd_grad

    _check_flags(locals(), ("check_fwd_over_rev", "check_rev_over_rev"),
                 check_undefined_grad="check_rev_over_rev",
                 check_batched_grad="check_rev_over_rev")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        tupled_grad_outputs = tuple(
            _random_grad_output(x, gen_non_contig_grad_outputs, rng)
            for x in _differentiable_outputs(func(*tupled_inputs)))
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    Tensor = _tensor_cls()
    diff_input_args_indices = {i for i, x in enumerate(tupled_inputs)
                               if isinstance(x, Tensor) and x.requires_grad}
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_input_args_indices else x
                           for i, x in enumerate(args[:len(args) - num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(x.requires_grad_() if i in diff_grad_output_indices else x
                             for i, x in enumerate(args[len(args) - num_outputs:]))
        diff_input_args = tuple(x for i, x in enumerate(input_args)
                                if i in diff_input_args_indices)
        grad_inputs = autograd_grad(outputs, diff_input_args, grad_outputs, create_graph=True,
                                    allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)
