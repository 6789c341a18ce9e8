"""``ember.autograd.functional``: Jacobians, Hessians and vector products of whole functions.

Signatures, return structures (a Tensor where PyTorch returns one, tuples where it returns
tuples) and error messages follow ``torch.autograd.functional``. Forward-mode products
(``jvp``, ``hvp`` and ``strategy="forward-mode"``) use the double-backward trick: the
gradient of a vector-Jacobian product with respect to the vector is a Jacobian-vector
product. ``vectorize=True`` computes every row (reverse mode) or column (forward mode) of a
Jacobian in one batched backward pass (``autograd.grad(..., is_grads_batched=True)``, vmap's
batched backward), as PyTorch vectorizes with vmap.
"""

from __future__ import annotations

from .. import _tensor
from .grad_mode import GRAD, enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- helpers (PyTorch's, one for one) ----------------------------------------------------------

def _as_tuple(inp, arg_name=None, fn_name=None):
    """``(was_tuple, tuple_of_tensors)``, with PyTorch's TypeError for non-tensors."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) \
            else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, _tensor.Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or "
                                f"a tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    # with create_graph, keep the link to the caller's graph through a view
    if create_graph:
        return tuple(inp.view(inp.shape) if inp.requires_grad
                     else inp.detach().requires_grad_(need_graph) for inp in inputs)
    return tuple(inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], _tensor.Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


_STRICT_MSGS = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
}


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_STRICT_MSGS[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    from . import grad

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph,
                is_grads_batched=is_grads_batched)


_ZERO_MSGS = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    from .._factory import zeros_like

    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MSGS[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _enable_after(create_graph):
    return set_grad_enabled(True if create_graph else GRAD.enabled)


def _prepare_v(v, ref, is_ref_tuple, create_graph, fn_name):
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, ref, is_ref_tuple)
    return v


def _single_output(outputs, is_outputs_tuple, fn_name):
    if is_outputs_tuple or not isinstance(outputs[0], _tensor.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def _prepare_inputs(inputs, create_graph, fn_name):
    """``(was_tuple, inputs)``: the inputs as a tuple of fresh leaves that require grad."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return is_inputs_tuple, _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)


def _call(func, inputs, strict, fn_name):
    """``(was_tuple, outputs)`` of ``func(*inputs)``, with PyTorch's checks."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


def _results(outputs, is_outputs_tuple, res, is_res_tuple, create_graph):
    """The ``(outputs, product)`` pair the vector products return."""
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_res_tuple))


# -- vector products ---------------------------------------------------------------------------

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    ``v`` may be omitted when ``func`` returns a single one-element tensor.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, "vjp")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "vjp")
        if v is not None:
            v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp")
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
    with _enable_after(create_graph):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return _results(outputs, is_outputs_tuple, res, is_inputs_tuple, create_graph)


def _double_backward_setup(func, inputs, strict):
    """Run ``func`` and the first backward of the double-backward trick."""
    from .._factory import zeros_like

    with enable_grad():
        is_outputs_tuple, outputs = _call(func, inputs, strict, "jvp")
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    return is_outputs_tuple, outputs, grad_outputs, grad_inputs


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``.

    Computed with the double-backward trick, so ``func`` must be twice differentiable.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, "jvp")
        if v is not None:
            v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp")
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
    is_outputs_tuple, outputs, grad_outputs, grad_inputs = _double_backward_setup(func, inputs,
                                                                                 strict)
    with _enable_after(create_graph):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return _results(outputs, is_outputs_tuple, res, is_outputs_tuple, create_graph)


# -- Jacobian and Hessian ----------------------------------------------------------------------

def _stack_rows(rows, shape, create_graph):
    """Rows (tensors of one shape) stacked on a new first dimension, then viewed as
    ``shape``; differentiable with ``create_graph``, plain array code otherwise."""
    if create_graph:
        from .. import stack

        return stack(rows, 0).reshape(shape)
    from .._device import xp_of
    from .._tensor import _make

    xp = xp_of(rows[0])
    return _make(xp.stack([r._data for r in rows]).reshape(shape), rows[0]._device)


def _basis(t, j):
    """A tensor like ``t``, zero but for a one at flat index ``j``."""
    from .._factory import zeros_like
    from .._memory_format import contiguous_format

    e = zeros_like(t, memory_format=contiguous_format)
    e._data.reshape(-1)[j] = 1
    return e


def _stacked(rows, out_shape, inp, create_graph):
    from .._factory import zeros

    shape = tuple(out_shape) + tuple(inp.shape)
    if not rows:
        return zeros(shape, dtype=inp.dtype, device=inp.device)
    return _stack_rows(rows, shape, create_graph)


def _jac_reverse(outputs, inputs, create_graph, strict):
    """Row by row: ``e_j^T J`` for each basis vector ``e_j`` of each output."""
    from .._factory import zeros_like

    jacobian = []
    for i, out in enumerate(outputs):
        rows = tuple([] for _ in inputs)
        if out.requires_grad and out.numel() and out.is_complex():
            # PyTorch differentiates each element as a scalar output with an implicit grad
            raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                               f"but got {out.dtype}")
        for j in range(out.numel()):
            vj = _autograd_grad((out,), inputs, (_basis(out, j),), retain_graph=True,
                                create_graph=create_graph)
            for k, (vj_el, inp_el) in enumerate(zip(vj, inputs)):
                if vj_el is not None:
                    if strict and create_graph and not vj_el.requires_grad:
                        raise RuntimeError("The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed "
                                           "in strict mode when create_graph=True.")
                    rows[k].append(vj_el)
                else:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed "
                                           "in strict mode.")
                    rows[k].append(zeros_like(inp_el))
        if not out.numel():  # PyTorch stacks the (no) rows of an empty output
            raise RuntimeError("stack expects a non-empty TensorList")
        jacobian.append(tuple(_stacked(r, out.shape, inputs[k], create_graph)
                              for k, r in enumerate(rows)))
    return tuple(jacobian)


def _standard_basis(tensors, numels):
    """PyTorch's ``_construct_standard_basis_for``: the identity of size ``sum(numels)`` split
    by columns, one ``(total, numel)`` block per tensor (its dtype and device)."""
    from .._factory import zeros

    total = sum(numels)
    blocks, offset = [], 0
    for t, n in zip(tensors, numels):
        b = zeros((total, n), dtype=t.dtype, device=t.device)
        if n:
            b._data[list(range(offset, offset + n)), list(range(n))] = 1
        blocks.append(b)
        offset += n
    return blocks


def _jac_reverse_vectorized(outputs, inputs, create_graph):
    """All rows at once: the outputs' standard basis as one batch of grad_outputs, one
    batched backward pass, split back per output."""
    from .._factory import zeros_like

    numels = tuple(o.numel() for o in outputs)
    total = sum(numels)
    grad_outputs = _standard_basis(outputs, numels)
    flat_outputs = tuple(o.reshape(-1) for o in outputs)
    vj = list(_autograd_grad(flat_outputs, inputs, grad_outputs, create_graph=create_graph,
                             is_grads_batched=True))
    for k, el in enumerate(vj):
        if el is None:
            vj[k] = zeros_like(inputs[k]).expand((total, *inputs[k].shape))
    per_input = [[jac.view(tuple(o.shape) + tuple(inp.shape))
                  for jac, o in zip(el.split(numels, 0), outputs)]
                 for el, inp in zip(vj, inputs)]
    return tuple(zip(*per_input))


def _jac_forward_vectorized(func, inputs, is_inputs_tuple):
    """All columns at once: the inputs' standard basis pushed through the double-backward
    graph in one batched backward pass, split back per input."""
    is_outputs_tuple, outputs, grad_outputs, grad_inputs = _double_backward_setup(func, inputs,
                                                                                 False)
    numels = tuple(inp.numel() for inp in inputs)
    total = sum(numels)
    tangents = tuple(b.reshape((total, *inp.shape))
                     for b, inp in zip(_standard_basis(inputs, numels), inputs))
    res = _autograd_grad(grad_inputs, grad_outputs, tangents, retain_graph=True,
                         is_grads_batched=True)
    from .._factory import zeros

    jacobian = []
    for o, out in enumerate(outputs):
        cols = res[o]
        if cols is None:
            cols = zeros((total, *out.shape), dtype=out.dtype, device=out.device)
        cols = cols.detach()
        per = []
        for c, inp in zip(cols.split(numels, 0), inputs):
            c = c.permute(*range(1, c.ndim), 0) if c.ndim > 1 else c
            per.append(c.reshape(tuple(out.shape) + tuple(inp.shape)))
        jacobian.append(per)
    return _tuple_postprocess(jacobian, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``.

    A Tensor for one input and one output; a tuple over inputs (or outputs) when either is a
    tuple; a tuple of tuples ``[output][input]`` when both are. Entry ``[i][j]`` has shape
    ``output_i.shape + input_j.shape``.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      'and `strategy="forward-mode"` are not supported '
                                      "together (yet). Please either set `create_graph=False` "
                                      'or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               '`strategy="forward-mode"` are not supported together (yet). '
                               'Please either set `strict=False` or `strategy="reverse-mode"`.')
        is_inputs_tuple, inputs = _prepare_inputs(inputs, False, "jacobian")
        if vectorize:
            return _jac_forward_vectorized(func, inputs, is_inputs_tuple)
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, "jacobian")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "jacobian")
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please "
                                   "either set `strict=False` or `vectorize=False`.")
            jac = _jac_reverse_vectorized(outputs, inputs, create_graph)
        else:
            jac = _jac_reverse(outputs, inputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function ``func`` at ``inputs``.

    A Tensor of shape ``input.shape * 2`` for one input; a tuple of tuples ``[i][j]`` of
    shape ``input_i.shape + input_j.shape`` for a tuple of inputs.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, _tensor.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar function ``func``."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_gradient(func, inputs, v,
                                                                    create_graph, strict, "vhp")
    with _enable_after(create_graph):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return _results(outputs, False, res, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar function ``func`` (double-backward trick)."""
    from .._factory import zeros_like

    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_gradient(func, inputs, v,
                                                                    create_graph, strict, "hvp")
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with _enable_after(create_graph):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return _results(outputs, False, res, is_inputs_tuple, create_graph)


def _hessian_v(v, inputs, is_inputs_tuple, create_graph, fn_name):
    if v is not None:
        return _prepare_v(v, inputs, is_inputs_tuple, create_graph, fn_name)
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return None


def _scalar_gradient(func, inputs, v, create_graph, strict, fn_name):
    """What ``vhp`` and ``hvp`` start from (under grad mode): ``(was_tuple, inputs, v,
    outputs, jac)`` with ``jac`` the gradient of the scalar ``func``, itself differentiable.
    ``func`` returns one tensor (its check raises otherwise)."""
    is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, fn_name)
    v = _hessian_v(v, inputs, is_inputs_tuple, create_graph, fn_name)
    is_outputs_tuple, outputs = _call(func, inputs, strict, fn_name)
    _single_output(outputs, is_outputs_tuple, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, outputs, jac
