"""Stochastic gradient descent (optionally with momentum), like ``torch.optim.SGD``, and its
functional form ``sgd``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor
from ember.ops import api

from ._single_tensor import _buffer, _grad_with_decay, _scalar, _unscale_or_skip
from ._validate import check_functional_call, check_fused, check_fused_group, check_lr_numel
from .optimizer import Optimizer

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent, with PyTorch's momentum, dampening and Nesterov rules.

    The state of a parameter is its ``momentum_buffer`` (only when ``momentum != 0``).

    Example:
        >>> w = ember.zeros(3, requires_grad=True)
        >>> opt = SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = ember.ones(3)
        >>> opt.step()
        >>> w
        tensor([-0.1000, -0.1000, -0.1000], requires_grad=True)
    """

    _legacy_group_defaults = {"nesterov": False, "maximize": False}

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay=0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        check_lr_numel(lr)
        if lr < 0.0:  # PyTorch's SGD lets a NaN through, unlike the others
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def _step_group(self, group) -> None:
        # SGD touches the state only with momentum (as PyTorch does): no per-parameter state
        # is made for plain SGD, the hot path of simple training loops
        momentum = group["momentum"]
        params, grads = [], []
        for p in group["params"]:
            g = p._grad
            if g is not None:
                params.append(p)
                grads.append(g)
        if group["fused"]:
            check_fused_group(self, params, grads, "`_fused_sgd` does not support sparse "
                              "gradients")
        states = [self.state[p] for p in params] if momentum != 0 else ()
        buffers = [state.get("momentum_buffer") for state in states]
        _single_tensor_sgd(params, grads, buffers, weight_decay=group["weight_decay"],
                           momentum=momentum, lr=group["lr"], dampening=group["dampening"],
                           nesterov=group["nesterov"], maximize=group["maximize"],
                           scratch=self._scratch)
        for state, buf in zip(states, buffers):  # the buffers made on the first step
            state["momentum_buffer"] = buf


def sgd(params: list[Tensor], d_p_list: list[Tensor], momentum_buffer_list: list[Tensor | None],
        has_sparse_grad: bool = False, foreach: bool | None = None, fused: bool | None = None,
        grad_scale: Tensor | None = None, found_inf: Tensor | None = None, *,
        weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
        maximize: bool) -> None:
    """Functional API that performs SGD algorithm computation (see :class:`SGD`).

    Updates ``params`` in place; with ``momentum != 0`` a ``None`` entry of
    ``momentum_buffer_list`` is replaced by a new buffer (a copy of the gradient) and the
    others are updated in place. ``foreach`` does not change the computation; ``fused=True``
    takes ``grad_scale``/``found_inf``.
    """
    check_functional_call(params, grad_scale=grad_scale, found_inf=found_inf,
                          fused=bool(fused))
    if fused and _unscale_or_skip(d_p_list, grad_scale, found_inf):
        return
    _single_tensor_sgd(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay,
                       momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                       maximize=maximize, scratch={})


def _single_tensor_sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr,
                       dampening, nesterov, maximize, scratch, native=True) -> None:
    lr, wd = _scalar(lr), _scalar(weight_decay)
    if any(g.is_sparse for g in grads if g.__class__ is not Tensor):
        with ember.no_grad():
            for i, (param, grad) in enumerate(zip(params, grads)):
                _sgd_step_tensors(param, grad, momentum_buffer_list, i, weight_decay=wd,
                                  momentum=momentum, lr=lr, dampening=dampening,
                                  nesterov=nesterov, maximize=maximize)
        return
    plain = not maximize and wd == 0
    native = api.native_kernel("ember_sgd_f32") if native and params else None
    if native is not None:
        # one pass per element (kernels.c), the same roundings as the passes below; a
        # parameter's first momentum step (its buffer a copy of the gradient) stays below
        flags = maximize | (nesterov << 1) | ((dampening != 0) << 2) | ((wd != 0) << 3)
        scalars = (flags, momentum, 1 - dampening, wd, lr, 0.0, 0.0, 0.0)
        rest = []
        for i, param in enumerate(params):
            d, g = param._data, grads[i]._data
            buf = momentum_buffer_list[i] if momentum != 0 else None
            b = None if buf is None else buf._data
            if (momentum == 0 or b is not None) and api.native_arrays(d, g, b):
                api.native_chunks(native, d.size, [api.native_address(d),
                                                   api.native_address(g),
                                                   None if b is None else api.native_address(b)],
                                  *scalars)
                param._bump_version()
            else:
                rest.append(i)
        if not rest:
            return
        if len(rest) < len(params):
            _single_tensor_sgd([params[i] for i in rest], [grads[i] for i in rest],
                               _Slots(momentum_buffer_list, rest), weight_decay=weight_decay,
                               momentum=momentum, lr=lr, dampening=dampening,
                               nesterov=nesterov, maximize=maximize, scratch=scratch,
                               native=False)
            return
    lr_of = _ScalarOf(lr)
    if momentum == 0 and plain:  # the hot path of simple training loops: d -= lr * g
        for param, grad in zip(params, grads):
            d = param._data
            tmp = _buffer(scratch, d)
            np.multiply(grad._data, lr_of(d), tmp)
            d -= tmp
            param._bump_version()
        return
    momentum_of = _ScalarOf(momentum)
    for i, param in enumerate(params):
        d = param._data
        grad = grads[i]
        g = grad._data if plain else _grad_with_decay(d, grad._data, maximize, wd)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = ember.empty_like(grad)  # a copy of the (decayed) gradient
                buf._data[...] = g
                momentum_buffer_list[i] = buf
            else:
                b = buf._data
                b *= momentum_of(b)
                if dampening == 0:
                    b += g
                else:
                    tmp = _buffer(scratch, d)
                    np.multiply(g, 1 - dampening, out=tmp)
                    b += tmp
            if nesterov:
                g = g + momentum * buf._data
            else:
                g = buf._data
        tmp = _buffer(scratch, d)
        np.multiply(g, lr_of(d), tmp)
        d -= tmp
        param._bump_version()


def _sgd_step_tensors(param, grad, momentum_buffer_list, i, *, weight_decay, momentum, lr,
                      dampening, nesterov, maximize) -> None:
    """One parameter's step in Tensor ops, as PyTorch writes it: the path of sparse gradients
    (``nn.Embedding(sparse=True)``), which stay sparse (a sparse gradient with weight decay is
    PyTorch's error: sparse + dense)."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    if momentum != 0:
        buf = momentum_buffer_list[i]
        if buf is None:
            buf = grad.clone().detach()
        else:
            buf = buf * momentum + (grad if dampening == 0 else grad * (1 - dampening))
        momentum_buffer_list[i] = buf
        grad = grad + buf * momentum if nesterov else buf
    param.add_(grad, alpha=-lr)


class _Slots:
    """The entries ``indices`` of ``items`` as a list of their own: reads and writes go
    through to ``items`` (a first step's new momentum buffers land in the caller's list)."""

    __slots__ = ("items", "indices")

    def __init__(self, items, indices) -> None:
        self.items, self.indices = items, indices

    def __getitem__(self, j):
        return self.items[self.indices[j]]

    def __setitem__(self, j, value) -> None:
        self.items[self.indices[j]] = value


class _ScalarOf:
    """``value`` as a 0-dim NumPy array of an array's dtype, made once per dtype: NumPy
    multiplies by one about twice as fast as by a Python float, with the same result (a
    Python float is cast to the array's dtype either way). CuPy arrays get the float."""

    __slots__ = ("value", "by_dtype")

    def __init__(self, value: float) -> None:
        self.value = value
        self.by_dtype: dict = {}

    def __call__(self, like):
        if type(like) is not np.ndarray:
            return self.value
        scalar = self.by_dtype.get(like.dtype)
        if scalar is None:
            scalar = self.by_dtype[like.dtype] = np.asarray(self.value, dtype=like.dtype)
        return scalar
