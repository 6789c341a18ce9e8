"""The ``Optimizer`` base class, like ``torch.optim.Optimizer``.

The base class walks the parameter groups, owns ``state`` and keeps PyTorch's ``state_dict``
layout exactly (integer parameter ids, ``step`` as a float32 0-dim CPU tensor), so
checkpoints move between Ember and PyTorch. A concrete optimizer writes

* its per-parameter state, made on the first step: ``step`` plus the zero tensors named in
  ``_zero_state`` (the default ``_init_state``), or its own ``_init_state(p, state, group)``,
* its functional form at PyTorch's path (``ember.optim.adam.adam``): lists of parameters,
  gradients and state tensors, keyword-only hyper-parameters, the update done in place on
  the arrays with ufuncs (``out=``) in a loop over ``_single_tensor._walk_params`` (step
  counts, ``maximize``, weight decay and version counters, the same for every optimizer), and
* ``_step_group(group)``: gather the group's lists (:meth:`Optimizer._group_tensors`) and
  call the functional form's implementation, so the math lives in one place.

Checkpoints pickled by older versions load through ``__setstate__``: the class names the group
options they may lack (``_legacy_group_defaults``) and the scalar state they kept as Python
numbers (``_legacy_scalar_state``).

``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted for compatibility and
stored in the groups (so state dicts match PyTorch's), but they do not change the computation:
every update is the single-tensor algorithm on the parameter's array, outside autograd (so
``differentiable=True`` records no graph through the update). ``fused=True`` honours
``grad_scale`` and ``found_inf`` in the functional forms, as PyTorch's fused kernels do.
"""

from __future__ import annotations

import functools
import sys
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

import ember
from ember import Tensor
from ember.autograd.graph import RemovableHandle
from ember.autograd.profiler import record_function

from ._single_tensor import _buffer, _lerp_

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "required"]

#: hooks that run around every optimizer's ``step`` (``register_optimizer_step_pre_hook``...)
_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """Register a pre hook common to all optimizers: ``hook(optimizer, args, kwargs)`` runs
    before every ``step`` (before the optimizer's own pre hooks) and may return new
    ``(args, kwargs)``; ``args`` starts with the optimizer, as in PyTorch."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """Register a post hook common to all optimizers: ``hook(optimizer, args, kwargs)`` runs
    after every ``step`` (after the optimizer's own post hooks)."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _opaque_to_compile(fn):
    """Run ``fn`` as one opaque call inside an ``ember.compile`` capture
    (``ember.compiler.disable``): the update is already vectorised array code, replayed as it
    is on every compiled step. Outside a capture it is ``fn`` plus one thread-local read."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        compiler = sys.modules.get("ember.compiler")
        if compiler is not None and compiler.is_compiling():
            return compiler.disable(fn)(*args, **kwargs)
        return fn(*args, **kwargs)

    return wrapper


class _RequiredParameter:
    """Singleton marking a hyper-parameter that has no default (like ``torch.optim.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


def _scalar_dtype():
    """The dtype of scalar state such as ``step`` (``torch.optim.optimizer._get_scalar_dtype``):
    float64 when the default dtype is float64, else float32."""
    return ember.float64 if ember.get_default_dtype() == ember.float64 else ember.float32


def _scalar_state(value: float, device=None) -> Tensor:
    """A 0-dim scalar state tensor (``step`` and the like) of :func:`_scalar_dtype`, on
    ``device``, else on the CPU whatever the default device: PyTorch deliberately hosts
    ``step`` on the CPU unless ``capturable``/``fused`` (its note "special device hosting for
    step": kernel launches are costly on CUDA)."""
    return ember.tensor(value, dtype=_scalar_dtype(), device="cpu" if device is None else device)


def _with_step_hooks(step):
    """Wrap a subclass's ``step`` so the global and the optimizer's pre/post hooks run around
    it, in PyTorch's order: global pre, own pre, step, own post, global post. The hooks get
    ``(optimizer, args, kwargs)`` where ``args`` includes the optimizer, as in PyTorch."""
    if getattr(step, "_ember_hooked", False):
        return step

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        pre = getattr(self, "_optimizer_step_pre_hooks", None)
        if pre is None:
            # a subclass that never ran Optimizer.__init__ (HuggingFace accelerate's
            # AcceleratedOptimizer wraps another optimizer): PyTorch patches step in __init__,
            # so such a step runs bare, its inner optimizer's step with the hooks
            return step(*args, **kwargs)
        if pre or _global_optimizer_pre_hooks:
            for hook in list(chain(_global_optimizer_pre_hooks.values(), pre.values())):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"{step} must return None or a tuple of (new_args, new_kwargs), "
                            f"but got {result}.")
                    args, kwargs = result
        # PyTorch's range: profiles show the step (and the memory timeline its state)
        with record_function(f"Optimizer.step#{type(self).__name__}.step"):
            out = step(*args, **kwargs)
        post = self._optimizer_step_post_hooks
        if post or _global_optimizer_post_hooks:
            for hook in list(chain(post.values(), _global_optimizer_post_hooks.values())):
                hook(self, args, kwargs)
        return out

    wrapper._ember_hooked = True
    return wrapper


#: the implementation flags that pickles of older versions may lack, with the values they had
_FLAG_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False,
                  "capturable": False}


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of tensors, or of dicts defining parameter groups.
        defaults: default values of the optimization options, used when a parameter group
            does not specify them.
    """

    #: the state that the default ``_init_state`` makes next to ``step``: zero tensors like the
    #: parameter, in this order
    _zero_state: tuple[str, ...] = ()
    #: group options that pickles of older versions may lack, with the values they had then
    #: (what each PyTorch optimizer's ``__setstate__`` puts back)
    _legacy_group_defaults: dict[str, Any] = {}
    #: scalar state that older versions kept as Python numbers; made tensors again on load
    _legacy_scalar_state: tuple[str, ...] = ()
    #: PyTorch's error for a sparse gradient (raised by ``_group_tensors`` before the
    #: parameter gets state); None where sparse gradients are supported (SGD, Adagrad)
    _sparse_grad_error: str | None = None

    @staticmethod
    def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices: bool = False):
        """PyTorch's helper for foreach optimizers written against it: the tensor lists
        split by the first list's (device, dtype), ``ember.utils._foreach_utils``'s."""
        from ember.ops.api import group_tensors_by_device_and_dtype

        return group_tensors_by_device_and_dtype(tensorlistlist, with_indices)

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._scratch: dict = {}
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_step_hooks(cls.__dict__["step"])

    # -- pickling and repr ----------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.__dict__.setdefault("_scratch", {})
        for group in self.param_groups:  # groups saved by older versions lack newer keys
            for key, value in self.defaults.items():
                if value is not required:
                    group.setdefault(key, value)
            for key, value in self._legacy_group_defaults.items():
                group.setdefault(key, value)
            if self._legacy_scalar_state:
                self._tensorize_scalar_state(group)

    def _tensorize_scalar_state(self, group: dict[str, Any]) -> None:
        """Make tensors of the ``_legacy_scalar_state`` entries that are Python numbers."""
        for p in group["params"]:
            p_state = self.state.get(p)
            if not p_state:
                continue
            for key in self._legacy_scalar_state:
                if not isinstance(p_state[key], Tensor):
                    p_state[key] = _scalar_state(float(p_state[key]),
                                                 self._scalar_state_device(p, group))

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += "\n"
            text += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        text += ")"
        return text

    # -- parameter groups -----------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (a dict with ``params`` and optional options) to the optimizer."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            import warnings

            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients and steps --------------------------------------------------------------
    @_opaque_to_compile
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to ``None`` by default)."""
        with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
            for group in self.param_groups:
                for p in (_locals(group["params"]) if self._has_wrapped(group)
                          else group["params"]):
                    g = p._grad
                    if g is None:
                        continue
                    if set_to_none:
                        p._grad = None
                    else:
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        if g.__class__ is not Tensor and g.is_sparse:
                            g.zero_()  # no stored elements left, as PyTorch's
                            continue
                        g._data[...] = 0
                        g._bump_version()

    @_opaque_to_compile
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns
        the loss."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if self._has_wrapped(group):
                self._step_local(group)
            else:
                self._step_group(group)
        return loss

    def _has_wrapped(self, group: dict[str, Any]) -> bool:
        """Whether ``group`` holds a parameter whose elements live in a local tensor (a
        DTensor): its gradient and update are the local tensor's. Worked out once per params
        list (and again when its length changes), in this optimizer."""
        params = group["params"]
        seen = self.__dict__.setdefault("_wrapped_groups", {})
        hit = seen.get(id(params))
        if hit is None or hit[0] is not params or hit[1] != len(params):
            hit = seen[id(params)] = (params, len(params), any(_is_wrapped(p) for p in params))
        return hit[2]

    def _step_local(self, group: dict[str, Any]) -> None:
        """A step of a group holding DTensor parameters: the update runs on each one's local
        tensor and gradient (every optimizer here but Adafactor, Muon and LBFGS updates
        element by element, so the shards' update is the whole tensor's); the state stays
        filed under the parameter and holds local tensors (this rank's shard of it)."""
        if type(self).__name__ in _WHOLE_TENSOR_OPTIMIZERS:
            raise RuntimeError(f"{type(self).__name__} needs whole parameters: it cannot "
                               f"step DTensor parameters on their shards")
        params = group["params"]
        local = _locals(params)
        state = self.state
        for p, t in zip(params, local):
            if t is not p and p in state:
                state[t] = state.pop(p)
        try:
            self._step_group({**group, "params": local})
        finally:
            for p, t in zip(params, local):
                if t is not p and t in state:
                    state[p] = state.pop(t)

    def _step_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def _group_tensors(self, group: dict[str, Any], *keys: str):
        """The group's parameters that have a gradient, their gradients and, for each state
        ``key``, the list of that state entry (made by ``_init_state`` on the first step; an
        entry a parameter lacks, like ``max_exp_avg_sq`` without amsgrad, is left out):
        ``_init_group`` of PyTorch's optimizers."""
        params, grads, states = [], [], []
        state_of = self.state
        sparse_error = self._sparse_grad_error
        for p in group["params"]:
            g = p._grad
            if g is not None:
                if sparse_error is not None and g.__class__ is not Tensor and g.is_sparse:
                    raise RuntimeError(sparse_error)
                state = state_of[p]
                if not state:
                    self._init_state(p, state, group)
                params.append(p)
                grads.append(g)
                states.append(state)
        columns = []
        for key in keys:
            column = [state.get(key) for state in states]
            columns.append(column if not column or column[0] is not None else [])
        return (params, grads, *columns)

    def _init_state(self, p: Tensor, state: dict, group: dict) -> None:
        """Make a parameter's state on its first step: ``step``, then ``_zero_state``."""
        state["step"] = self._step_tensor()
        for key in self._zero_state:
            state[key] = ember.zeros_like(p)

    def _params_with_state(self, group: dict[str, Any], name: str) -> list[Tensor]:
        """The group's parameters that have a gradient, every one checked (``name`` does not
        support complex parameters) and given its state before any is updated: PyTorch's
        ``_init_group`` of the optimizers that update parameter by parameter."""
        params = [p for p in group["params"] if p._grad is not None]
        for p in params:  # checked and given state one by one, as PyTorch's
            if p.is_complex():
                raise RuntimeError(f"{name} does not support complex parameters")
            g = p._grad
            if g.__class__ is not Tensor and g.is_sparse:
                raise RuntimeError(f"{name} does not support sparse gradients")
            state = self.state[p]
            if not state:
                self._init_state(p, state, group)
        return params

    # -- helpers for the updates ----------------------------------------------------------
    def _buffer(self, like, slot: int = 0):
        """A scratch array shaped like ``like``, reused across steps (not part of the state)."""
        return _buffer(self._scratch, like, slot)

    @staticmethod
    def _step_tensor(device=None) -> Tensor:
        """The ``step`` state: a 0-dim tensor of :func:`_scalar_dtype` (float32 unless the default
        dtype is float64), on the CPU unless ``device`` is given, like PyTorch >= 1.12."""
        return _scalar_state(0.0, device)

    def _scalar_state_device(self, p: Tensor, group: dict[str, Any]):
        """The device of a parameter's scalar state such as ``step``: the CPU (``None``)."""
        return None

    _lerp_ = staticmethod(_lerp_)  # ``out.lerp_(end, weight)`` on arrays, PyTorch's formula

    # -- state dict -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer state as ``{'state': {id: {...}}, 'param_groups': [...]}`` (PyTorch's
        layout: parameters are replaced by integer ids)."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k):
                        (_sharded_state(k, v) if _is_wrapped(k) else v)
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_state_value(param: Tensor, value: Tensor, key) -> Tensor:
        if _is_wrapped(value):  # a DTensor state of a DTensor parameter: its local shard
            if _is_wrapped(param) and tuple(value.placements) != tuple(param.placements):
                value = value.redistribute(param.device_mesh, param.placements)
            value = value.to_local()
        if key == "step":
            return value  # stays a float32 CPU tensor, as PyTorch keeps it
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state made by :meth:`state_dict` (PyTorch's too, tensors converted)."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                return self._cast_state_value(param, value, key)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- hooks ----------------------------------------------------------------------------
    @staticmethod
    def _register(hooks: OrderedDict, hook, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return new
        ``(args, kwargs)``."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs before ``state_dict``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs after ``state_dict``; may return a new dict."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs before ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)


Optimizer.step = _with_step_hooks(Optimizer.step)


#: optimizers whose update of a parameter reads all of it (factored or orthogonalised)
_WHOLE_TENSOR_OPTIMIZERS = frozenset({"Adafactor", "Muon", "LBFGS"})


def _is_wrapped(p) -> bool:
    return getattr(p.__class__, "_ember_wrapper_subclass", False)


def _sharded_state(p, state: dict) -> dict:
    """A DTensor parameter's state as ``state_dict`` gives it: the entries shaped like its
    shard (steps update shards, so they hold local tensors) wrapped as DTensors laid out like
    the parameter, sharing memory (a checkpoint loaded into them lands in the state)."""
    from ember.distributed.tensor import DTensor

    local_shape = p.to_local().shape
    out = {}
    for key, value in state.items():
        if key != "step" and isinstance(value, Tensor) and not _is_wrapped(value) \
                and value.shape == local_shape:
            value = DTensor.from_local(value, p.device_mesh, p.placements, shape=p.shape,
                                       stride=p.stride())
        out[key] = value
    return out


def _locals(params) -> list:
    return [p.to_local() if _is_wrapped(p) else p for p in params]


