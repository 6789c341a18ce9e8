"""``Module``: the base class of every layer and model (``torch.nn.Module``).

Parameters, buffers and submodules are registered by assignment (``__setattr__``) into three
ordered dicts; everything else (traversal, ``state_dict``, moves, hooks, ``repr``) walks them.
Calling a module without hooks is one dict check and ``forward`` (the hot path of every layer).
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import ember
from ember import Tensor
from ember.ops import api
from ember.utils.hooks import BackwardHook, RemovableHandle

from ..parameter import Buffer, Parameter, is_lazy

__all__ = ["Module", "RemovableHandle", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

#: hooks that run for every module (``register_module_forward_pre_hook`` and friends), before
#: the module's own ones (after them for post hooks that say so), as in PyTorch
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
#: whether the global backward hooks are full ones (None: none registered yet)
_global_is_full_backward_hook: bool | None = None
#: hooks that run when any module registers a buffer, a submodule or a parameter
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__") else f"{module}.{name}"


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    rest = [(num_spaces * " ") + line if line.strip() else "" for line in lines]
    return first + "\n" + "\n".join(rest)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _register_global(hooks: OrderedDict, hook, extra_dict=None) -> RemovableHandle:
    handle = RemovableHandle(hooks, extra_dict=extra_dict)
    hooks[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """A hook ``hook(module, name, buffer)`` run every time a module registers a buffer; a
    non-None result replaces the buffer."""
    return _register_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """A hook ``hook(module, name, submodule)`` run every time a module registers a
    submodule; a non-None result replaces the submodule."""
    return _register_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """A hook ``hook(module, name, param)`` run every time a module registers a parameter
    (not ``None``); a non-None result replaces the parameter."""
    return _register_global(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """A forward pre-hook ``hook(module, args)`` run before every module's ``forward``, before
    the module's own pre-hooks; a non-None result replaces the arguments."""
    return _register_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook ``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
    with ``with_kwargs``) run after every module's ``forward``, before the module's own
    hooks; a non-None result replaces the output. ``always_call=True`` runs it even when
    ``forward`` raised."""
    handle = _register_global(_global_forward_hooks, hook,
                              extra_dict=_global_forward_hooks_always_called)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook) -> RemovableHandle:
    """A backward hook common to all modules, deprecated in PyTorch in favour of
    :func:`register_module_full_backward_hook`: it runs on the autograd node that made the
    module's (first) output, with that node's gradients."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as "
                           "a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return _register_global(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """A backward pre-hook ``hook(module, grad_output)`` common to all modules, run before the
    modules' own ones (see ``Module.register_full_backward_pre_hook``)."""
    return _register_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """A backward hook ``hook(module, grad_input, grad_output)`` common to all modules, run
    before the modules' own ones (see ``Module.register_full_backward_hook``)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as "
                           "a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return _register_global(_global_backward_hooks, hook)


def _run_registration_hooks(hooks: OrderedDict, module, name: str, value):
    """``value`` after the global registration ``hooks`` (each may return a replacement)."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _check_new_name(module, kind: str, store: str, name) -> None:
    """PyTorch's checks of the ``name`` a ``kind`` (buffer or parameter) is registered under
    in ``module``'s dict ``store`` (``_buffers`` or ``_parameters``)."""
    if store not in module.__dict__:
        raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(module, name) and name not in module.__dict__[store]:
        raise KeyError(f"attribute '{name}' already exists")


def _owner_attribute(module, target: str):
    """``(owner, name, value)`` of the attribute at the dotted path ``target`` below
    ``module`` (``get_parameter``, ``get_buffer``)."""
    module_path, _, name = target.rpartition(".")
    mod = module.get_submodule(module_path)
    if not hasattr(mod, name):
        raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
    return mod, name, getattr(mod, name)


def _future_flag(getter: str) -> bool:
    """The value of ``ember.__future__.<getter>()`` (PyTorch's ``torch.__future__``
    switches)."""
    return bool(getattr(ember.__future__, getter)())


def _swap_loaded(param, input_param, assign: bool) -> None:
    """``load_state_dict`` under the swap switch, as PyTorch's: the value goes through
    ``param.module_load`` and the result (a Parameter where ``param`` is one) is swapped in."""
    from ember.utils import swap_tensors

    new = param.module_load(input_param, assign=assign)
    if new is input_param or new is param:
        raise RuntimeError("module_load returned one of self or other, please .detach() the "
                           "result if returning one of the inputs in module_load")
    if isinstance(param, Parameter):
        if not isinstance(new, Parameter):
            new = Parameter(new, requires_grad=param.requires_grad)
        else:
            new.requires_grad_(param.requires_grad)
    swap_tensors(param, new)


def _forward_unimplemented(self, *input):
    """The forward of a module that did not define one."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              '"forward" function')


class Module:
    """Base class for all neural-network modules (``torch.nn.Module``)."""

    dump_patches: bool = False
    _version: int = 1
    training: bool
    #: what ``compile()`` made: calls go to it
    _compiled_call_impl = None
    call_super_init: bool = False

    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_hooks_always_called", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # -- registration ---------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. running statistics).

        A non-persistent buffer is left out of ``state_dict``.
        """
        _check_new_name(self, "buffer", "_buffers", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        if _global_buffer_registration_hooks:
            tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name,
                                             tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (``None`` registers the name with no value, like a missing bias)."""
        _check_new_name(self, "parameter", "_parameters", name)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(ember.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        if _global_parameter_registration_hooks:
            param = _run_registration_hooks(_global_parameter_registration_hooks, self, name,
                                            param)
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if _global_module_registration_hooks:
            module = _run_registration_hooks(_global_module_registration_hooks, self, name,
                                             module)
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias for ``add_module``."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` (``""`` is this module)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Set the submodule at the dotted path ``target`` to ``module``; its parent must exist.

        With ``strict=True`` only an existing submodule may be replaced.
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target``."""
        _, name, param = _owner_attribute(self, target)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``."""
        mod, name, buffer = _owner_attribute(self, target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    def get_extra_state(self):
        """Extra state to save in ``state_dict`` (override with ``set_extra_state``)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state) -> None:
        """Restore the extra state saved by ``get_extra_state``."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    # -- attribute access -----------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__

        def remove_from(*dicts_or_sets):
            for c in dicts_or_sets:
                if name in c:
                    if isinstance(c, dict):
                        del c[name]
                    else:
                        c.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                if _global_module_registration_hooks:
                    value = _run_registration_hooks(_global_module_registration_hooks, self,
                                                    name, value)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module "
                                    f"'{name}' (ember.nn.Module or None expected)")
                if _global_module_registration_hooks:
                    value = _run_registration_hooks(_global_module_registration_hooks, self,
                                                    name, value)
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(ember.nn.Buffer, ember.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    # a plain attribute of that name stays: register_buffer refuses it
                    self._register_buffer_from_setattr(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def _register_buffer_from_setattr(self, name: str, value, persistent: bool) -> None:
        """``register_buffer(name, value, persistent)``, or, as PyTorch allows, without
        ``persistent`` for a subclass whose ``register_buffer`` does not take it."""
        if getattr(self.register_buffer, "__func__", None) is Module.register_buffer:
            self.register_buffer(name, value, persistent)
        elif "persistent" in inspect.signature(self.register_buffer).parameters:
            self.register_buffer(name, value, persistent)
        elif not persistent:
            raise RuntimeError("Registering a non-persistent buffer on a Module subclass that "
                               "implements register_buffer() without the persistent argument "
                               "is not allowed.")
        else:
            self.register_buffer(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for attr in ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if attr not in self.__dict__:
                self.__dict__[attr] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # -- traversal ------------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse: bool = True):
        """An iterator over module parameters (each once)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """An iterator over ``(name, parameter)`` pairs with dotted names."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        """An iterator over module buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        """An iterator over ``(name, buffer)`` pairs with dotted names."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        """An iterator over immediate child modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """An iterator over ``(name, module)`` of immediate children (each once)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        """An iterator over all modules of the tree, this one first."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """An iterator over ``(dotted name, module)`` of the tree, this one first (``""``)."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    __hash__ = object.__hash__

    # -- modes ----------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and its descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to ``None`` by default)."""
        for p in self.parameters():
            g = p._grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def share_memory(self) -> Module:
        """Move the parameters, their gradients and the buffers to shared memory
        (``Tensor.share_memory_``: other processes of ``ember.multiprocessing`` then see the
        same memory); returns self."""
        return self._apply(lambda t: t.share_memory_())

    # -- moves and casts ------------------------------------------------------------------
    def _apply(self, fn, recurse: bool = True) -> Module:
        if recurse:
            for module in self.children():
                module._apply(fn)
        swap = _future_flag("get_swap_module_params_on_conversion")
        overwrite = _future_flag("get_overwrite_module_params_on_conversion")
        for key, param in self._parameters.items():
            if param is None:
                continue
            with ember.no_grad():
                param_applied = fn(param)
            g = param._grad
            if swap:
                # ``ember.__future__.set_swap_module_params_on_conversion(True)``: the same
                # Parameter objects, their contents exchanged with the converted tensors
                self._swap_param(key, param, param_applied, g, fn)
                continue
            if overwrite:
                # ``ember.__future__.set_overwrite_module_params_on_conversion(True)``: new
                # Parameter objects (the old ones, held by optimizers, keep the old values)
                out_param = Parameter(param_applied, param.requires_grad)
                self._parameters[key] = out_param
                if g is not None:
                    with ember.no_grad():
                        grad_applied = fn(g)
                    out_param.grad = grad_applied.requires_grad_(g.requires_grad)
                continue
            # keep the Parameter object (optimizers hold references): swap its data
            param.data = param_applied
            if g is not None:
                with ember.no_grad():
                    grad_applied = fn(g)
                if grad_applied is not g:
                    g.data = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def _swap_param(self, key: str, param, applied, grad, fn) -> None:
        """``_apply`` under the swap switch, as PyTorch's: ``param`` takes ``applied``'s
        contents (``swap_tensors``), its gradient ``fn(grad)``'s."""
        from ember.utils import swap_tensors

        try:
            if grad is not None:
                param.grad = None
            swap_tensors(param, Parameter(applied, requires_grad=param.requires_grad))
        except Exception as e:
            if grad is not None:
                param.grad = grad
            raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}") from e
        if grad is not None:
            with ember.no_grad():
                grad_applied = fn(grad)
            grad_applied.requires_grad_(grad.requires_grad)
            try:
                swap_tensors(grad, grad_applied)
            except Exception as e:
                raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}.grad") \
                    from e
            param.grad = grad

    def apply(self, fn) -> Module:
        """Call ``fn`` on every submodule (children first) and on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``. Only floating tensors change dtype.
        ``memory_format=ember.channels_last`` also lays out the 4-d and 5-d ones so
        (conv weights), as PyTorch does."""
        memory_format = kwargs.get("memory_format")
        device, dtype, _ = api.parse_to(*args, **kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
        if dtype is not None and dtype.is_complex:
            warnings.warn("Complex modules are a new feature under active development whose "
                          "design may change, and some modules might not work as expected when "
                          "using complex tensors as parameters or buffers. Please file an issue "
                          "at https://github.com/pytorch/pytorch/issues/new?template="
                          "bug-report.yml if a complex module does not work as expected.",
                          stacklevel=2)

        def convert(t):
            dt = dtype if t.is_floating_point() or t.is_complex() else None
            try:
                if memory_format is not None and t.dim() in (4, 5):
                    return t.to(device, dt, memory_format=memory_format)
                return t.to(device, dt)
            except NotImplementedError as e:
                if str(e) == "Cannot copy out of meta tensor; no data!":
                    raise NotImplementedError(
                        f"{e} Please use ember.nn.Module.to_empty() instead of "
                        "ember.nn.Module.to() when moving module from meta to a different "
                        "device.") from None
                raise

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Move parameters and buffers to ``device`` without copying their values: they
        hold uninitialized memory afterwards."""
        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def cuda(self, device=None) -> Module:
        """Move all parameters and buffers to a CUDA device."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self) -> Module:
        """Move all parameters and buffers to the CPU."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type) -> Module:
        """Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def _cast_floating(self, dtype) -> Module:
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> Module:
        """Cast floating parameters and buffers to ``float32``."""
        return self._cast_floating(ember.float32)

    def double(self) -> Module:
        """Cast floating parameters and buffers to ``float64``."""
        return self._cast_floating(ember.float64)

    def half(self) -> Module:
        """Cast floating parameters and buffers to ``float16``."""
        return self._cast_floating(ember.float16)

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to ``bfloat16``."""
        return self._cast_floating(ember.bfloat16)

    # -- state dict -----------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ``OrderedDict`` of every parameter and persistent buffer by dotted name."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning,
                          stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:  # the private API's hooks may replace the dict
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            # the private API's hooks are wrapped: they add the module themselves, or not
            args = (state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                    error_msgs)
            if isinstance(hook, _WrappedHook):
                hook(*args)
            else:
                hook(self, *args)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent.items()) if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "ember.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(input_param)}")
                continue
            if is_lazy(param):
                continue  # still uninitialized: the state dict's tensor is uninitialized too
            if param.dim() == 0 and input_param.shape == (1,):
                input_param = input_param[0]
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{input_param.shape} from checkpoint, the shape in current "
                                  f"model is {param.shape}.")
                continue
            try:
                with ember.no_grad():
                    if _future_flag("get_swap_module_params_on_conversion"):
                        _swap_loaded(param, input_param, assign)
                    elif assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param,
                                                        requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        if param.is_meta and not input_param.is_meta:
                            warnings.warn(
                                f"for {key}: copying from a non-meta parameter in the "
                                "checkpoint to a meta parameter in the current model, which is "
                                "a no-op. (Did you mean to pass `assign=True` to assign items "
                                "in the state dictionary to their corresponding key in the "
                                "module instead of copying them in place?)",
                                stacklevel=api.user_stacklevel())
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f"in the model are {param.size()} and whose dimensions in the "
                                  f"checkpoint are {input_param.size()}, an exception occurred "
                                  f": {ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module tree.

        Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``; with ``strict=True``
        any mismatch raises. ``assign=True`` assigns the checkpoint's tensors instead of
        copying into the existing ones.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list = []
        unexpected_keys: list = []
        error_msgs: list = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                # in the checkpoint's metadata itself, as PyTorch does
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, incompatible)
                if out is not None:
                    raise AssertionError("Hooks registered with "
                                         "``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys "
                                         "need to be modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # -- hooks ----------------------------------------------------------------------------
    @staticmethod
    def _add_hook(hooks, hook, prepend=False, extra=None):
        handle = RemovableHandle(hooks, extra_dict=extra)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``)
        runs before ``forward``; a non-None result replaces the arguments."""
        handle = self._add_hook(self._forward_pre_hooks, hook, prepend,
                                self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs
        after ``forward``; a non-None result replaces the output."""
        handle = self._add_hook(self._forward_hooks, hook, prepend,
                                [self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called])
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_backward_hook(self, hook) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` on the autograd node that made the
        module's (first) output: deprecated in PyTorch in favour of
        :meth:`register_full_backward_hook`, whose gradients are the module's own."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return self._add_hook(self._backward_hooks, hook)

    def _get_backward_hooks(self) -> tuple[list, list]:
        """The full and the non-full backward hooks to run, the global ones first."""
        full, non_full = [], []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self) -> list:
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients of the outputs are known;
        a non-None result replaces ``grad_output``."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the inputs
        are computed; a non-None result replaces ``grad_input``."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        return self._add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict``; it
        may change ``state_dict`` in place and must return None."""
        # marked, as in PyTorch: the hooks of the private API below may return a new dict
        hook._from_public_api = True
        return self._add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict``; a
        non-None result replaces the state dict (respected only at the root module)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via "
                               "register_state_dict_post_hook")
        return self._add_hook(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its entries."""
        return self._add_hook(self._load_state_dict_pre_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False
                                           ) -> RemovableHandle:
        """As ``register_load_state_dict_pre_hook``, but the hook is called without the
        module unless ``with_module``: ``hook(state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)``."""
        return self._add_hook(self._load_state_dict_pre_hooks,
                              _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict``."""
        return self._add_hook(self._load_state_dict_post_hooks, hook)

    # -- calling --------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    __call__ = _call_impl

    def compile(self, *args, **kwargs) -> None:
        """Compile this module in place (``torch.nn.Module.compile``): its ``forward`` runs
        through ``ember.compile`` (with ``ember.compile``'s arguments; the hooks run around
        it, as they run around any forward); the module stays this object, its
        ``state_dict`` keys unchanged (unlike ``ember.compile(module)``, which wraps it in an
        ``OptimizedModule``). ``_compiled_call_impl`` is the compiled function."""
        import ember

        compiled = ember.compile(type(self).forward.__get__(self), *args, **kwargs)
        self._compiled_call_impl = compiled
        self.forward = compiled

    def _call_with_hooks(self, args, kwargs):
        """``forward`` with the hooks, in PyTorch's order: global then own forward pre-hooks,
        backward hooks set up on the inputs, ``forward``, global then own forward hooks,
        backward hooks set up on the outputs; the ``always_call`` forward hooks still run
        when ``forward`` or a hook raised."""
        result = None
        called = set()
        try:
            full_backward_hooks, non_full_backward_hooks = [], []
            backward_pre_hooks = []
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
            for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                                 self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    pre_result = hook(self, args, kwargs)
                    if pre_result is not None:
                        if isinstance(pre_result, tuple) and len(pre_result) == 2:
                            args, kwargs = pre_result
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               "of (new_args, new_kwargs), but got "
                                               f"{pre_result}.")
                else:
                    pre_result = hook(self, args)
                    if pre_result is not None:
                        args = pre_result if isinstance(pre_result, tuple) else (pre_result,)
            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(),
                                                 self._forward_hooks.items()):
                if (hook_id in self._forward_hooks_always_called
                        or hook_id in _global_forward_hooks_always_called):
                    called.add(hook_id)
                if (hook_id in self._forward_hooks_with_kwargs
                        or hook_id in _global_forward_hooks_with_kwargs):
                    hook_result = hook(self, args, kwargs, result)
                else:
                    hook_result = hook(self, args, result)
                if hook_result is not None:
                    result = hook_result
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  "Tensor or a tuple of Tensors but received "
                                  f"{type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_backward_hooks:
                self._register_non_full_backward_hooks(non_full_backward_hooks, args, result)
            return result
        except Exception:
            self._run_always_called_hooks(args, kwargs, result, called)
            raise

    def _run_always_called_hooks(self, args, kwargs, result, called) -> None:
        """The ``always_call`` forward hooks not yet run, after ``forward`` raised (their own
        errors are warned about and dropped)."""
        # the global ones are called without kwargs, as in PyTorch
        for which, hooks, always_called, with_kwargs in (
                ("global module", _global_forward_hooks, _global_forward_hooks_always_called, ()),
                ("module", self._forward_hooks, self._forward_hooks_always_called,
                 self._forward_hooks_with_kwargs)):
            for hook_id, hook in hooks.items():
                if hook_id not in always_called or hook_id in called:
                    continue
                try:
                    if hook_id in with_kwargs:
                        hook_result = hook(self, args, kwargs, result)
                    else:
                        hook_result = hook(self, args, result)
                    if hook_result is not None:
                        result = hook_result
                except Exception as e:
                    warnings.warn(f"{which} forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised in "
                                  f"forward: {e}", stacklevel=3)

    def _register_non_full_backward_hooks(self, hooks, args, result) -> None:
        """PyTorch's deprecated module backward hooks: on the node that made the first tensor
        of the output, called as ``hook(module, grad_input, grad_output)`` with that node's
        gradients."""
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is None:
            return
        for hook in hooks:
            grad_fn.register_hook(_WrappedHook(hook, self))
        _warn_non_full_backward_hook(args, result, grad_fn)

    def _replicate_for_data_parallel(self) -> Module:
        """A shallow copy for ``replicate``: it shares buffers and submodules dicts' entries
        but holds no parameters of its own (the replica's are set as plain attributes)."""
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica._parameters = {}
        replica._buffers = replica._buffers.copy()
        replica._modules = replica._modules.copy()
        replica._is_replica = True
        return replica

    # -- repr -----------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module-specific part of ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


# -- backward hooks ----------------------------------------------------------------------------

class _WrappedHook:
    """A module hook run by an autograd node: called with the module (held weakly) first."""

    def __init__(self, hook, module=None) -> None:
        import functools
        import weakref

        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __getstate__(self) -> dict:
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict) -> None:
        import weakref

        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)


def _tensor_tuple(value, verb: str, grads: str) -> tuple | None:
    """``value`` (a Tensor or a tuple of Tensors) as a tuple, or None with PyTorch's warning
    that a non-full backward hook then misses ``grads``."""
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
        return value
    warnings.warn(f"Using non-full backward hooks on a Module that does not {verb} a single "
                  "Tensor or a tuple of Tensors is deprecated and will be removed in future "
                  f"versions. This hook will be missing some of the {grads}. Please use "
                  "register_full_backward_hook to get the documented behavior.", FutureWarning,
                  stacklevel=5)
    return None


def _warn_non_full_backward_hook(inputs, result, grad_fn) -> None:
    """PyTorch's FutureWarnings where a non-full backward hook will miss gradients."""
    result = _tensor_tuple(result, "return", "grad_output")
    if result is None:
        return
    inputs = _tensor_tuple(inputs, "take as input", "grad_input")
    if inputs is None:
        return
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warnings.warn("Using a non-full backward hook when outputs are nested in python data "
                      "structure is deprecated and will be removed in future versions. This "
                      "hook will be missing some grad_output.", FutureWarning, stacklevel=4)
    elif len(out_grad_fn) > 1:
        warnings.warn("Using a non-full backward hook when outputs are generated by different "
                      "autograd Nodes is deprecated and will be removed in future versions. "
                      "This hook will be missing some grad_output. Please use "
                      "register_full_backward_hook to get the documented behavior.",
                      FutureWarning, stacklevel=4)
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            warnings.warn("Using a non-full backward hook when the forward contains multiple "
                          "autograd Nodes is deprecated and will be removed in future versions. "
                          "This hook will be missing some grad_input. Please use "
                          "register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=4)
