"""``gradcheck`` / ``gradgradcheck``: compare analytical gradients with central differences."""

from __future__ import annotations

import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytical and numerical gradients differ."""


def _as_tuple(x):
    from .._tensor import Tensor

    return (x,) if isinstance(x, Tensor) else tuple(x)


def _differentiable_inputs(inputs):
    from .._tensor import Tensor

    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func, inputs):
    from .._tensor import Tensor

    out = func(*inputs)
    outs = _as_tuple(out)
    return [o for o in outs if isinstance(o, Tensor) and o._data.dtype.kind == "f"]


def _numerical_jacobian(func, inputs, idx, out_sizes, eps):
    """d(all outputs flattened) / d(input idx flattened), by central differences."""
    x = inputs[idx]
    flat = x._data.reshape(-1) if x._data.flags.c_contiguous else None
    if flat is None:
        raise GradcheckError("gradcheck needs contiguous inputs")
    jac = np.zeros((x._data.size, sum(out_sizes)), dtype=np.float64)
    if True:  # outputs are computed with grad mode as the caller has it (gradgradcheck)
        for k in range(flat.size):
            orig = flat[k].item()
            flat[k] = orig + eps
            plus = np.concatenate([o._host().reshape(-1).astype(np.float64)
                                   for o in _outputs(func, inputs)]) if out_sizes else []
            flat[k] = orig - eps
            minus = np.concatenate([o._host().reshape(-1).astype(np.float64)
                                    for o in _outputs(func, inputs)]) if out_sizes else []
            flat[k] = orig
            if out_sizes:
                jac[k] = (plus - minus) / (2 * eps)
    return jac


def _analytical_jacobian(func, inputs, diff_idx, outs):
    from .. import _factory
    from . import grad as autograd_grad

    sizes = [o._data.size for o in outs]
    jacs = [np.zeros((inputs[i]._data.size, sum(sizes)), dtype=np.float64) for i in diff_idx]
    col = 0
    for o in outs:
        for j in range(o._data.size):
            g = _factory.zeros_like(o)
            g._data.reshape(-1)[j] = 1
            grads = autograd_grad([o], [inputs[i] for i in diff_idx], [g], retain_graph=True,
                                  allow_unused=True) if o.requires_grad else \
                [None] * len(diff_idx)
            for k, gr in enumerate(grads):
                if gr is not None:
                    jacs[k][:, col] = gr._host().reshape(-1)
            col += 1
    return jacs


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, fast_mode: bool = False, **_ignored) -> bool:
    """Check ``func``'s gradients against finite differences (use float64 inputs)."""
    inputs = _as_tuple(inputs)
    diff_idx = _differentiable_inputs(inputs)
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i]._data.dtype != np.float64:
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of "
                          "double precision floating point. ", UserWarning, stacklevel=2)
    outs = _outputs(func, inputs)
    sizes = [o._data.size for o in outs]
    analytical = _analytical_jacobian(func, inputs, diff_idx, outs)
    for k, i in enumerate(diff_idx):
        numerical = _numerical_jacobian(func, inputs, i, sizes, eps)
        if not np.allclose(analytical[k], numerical, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            raise GradcheckError(
                f"Jacobian mismatch for output 0 with respect to input {i},\n"
                f"numerical:{numerical}\nanalytical:{analytical[k]}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, **_ignored) -> bool:
    """Check second derivatives: gradcheck of the first-order gradient function."""
    from .. import _factory
    from . import grad as autograd_grad

    inputs = _as_tuple(inputs)
    diff_idx = _differentiable_inputs(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            g = _factory.tensor(rng.standard_normal(o._data.shape), dtype=o.dtype,
                                device=o.device)
            g.requires_grad_(True)
            grad_outputs.append(g)
    grad_outputs = list(_as_tuple(grad_outputs))
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        os_ = _outputs(func, ins)
        return autograd_grad(os_, [ins[i] for i in diff_idx], list(gos), create_graph=True,
                             allow_unused=True)

    def wrapped(*args):
        res = first_order(*args)
        return tuple(r for r in res if r is not None)

    return gradcheck(wrapped, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
