"""``custom_op``: a Python function as an Ember op (``torch.library.custom_op``)."""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Callable, Iterable, Sequence

from . import ops as _ops
from .schema import parse_namespace

__all__ = ["custom_op", "CustomOpDef", "get_opdef"]

log = logging.getLogger(__name__)

#: the live CustomOpDef of each qualname
OPDEFS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
#: the Library behind each qualname's CustomOpDef (redefining the name destroys it)
OPDEF_TO_LIB: dict = {}


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Sequence[str] | None = None, schema: str | None = None,
              tags=None):
    """Wrap a function into a custom operator (decorator, or call with ``fn``).

    The op is a real Ember op: ``ember.export``/``ember.jit.trace`` record a call as one node
    (named ``name``), ``ember.compile`` replays it, ``ember.func.vmap`` runs its
    ``register_vmap`` rule (else one call per example), autograd uses its
    ``register_autograd`` formula, and ``__torch_function__`` modes see it. Its kernel is
    opaque to all of them: it may use NumPy, CuPy, anything.

    Args:
        name: ``"namespace::name"`` (``"mylib::my_linear"``); it is how exported programs
            name the op, so a program that calls it loads where the op is defined again.
        mutates_args: the names of the arguments the function writes (their version counters
            are bumped after each call), or ``"unknown"`` (every Tensor argument).
        device_types: the device type(s) the function serves (``"cpu"``, ``"cuda"``); None:
            every device. ``register_kernel`` adds others.
        schema: the op's schema (``"(Tensor x, int y) -> (Tensor, Tensor)"``); None infers
            it from the type annotations (``infer_schema``), which is recommended.

    Example::

        >>> import numpy as np
        >>> @ember.library.custom_op("mylib::numpy_sin", mutates_args=())
        ... def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        ...     y = np.sin(x.cpu().numpy())
        ...     return ember.from_numpy(y).to(x.device)
        >>> x = ember.randn(3)
        >>> bool(ember.allclose(numpy_sin(x), x.sin()))
        True
    """

    def inner(fn: Callable) -> CustomOpDef:
        from .infer_schema import infer_schema

        if schema is None:
            schema_str = infer_schema(fn, mutates_args=mutates_args)
        else:
            schema_str = schema
        if not isinstance(name, str):
            raise ValueError(f"custom_op(name, ...): expected name to be a str, got "
                             f"{type(name).__name__}")
        namespace, opname = parse_namespace(name)
        result = CustomOpDef(namespace, opname, schema_str, fn, tags)
        if schema is not None:
            expected = {a.name for a in result._opdef.schema.arguments if a.is_write}
            given = set(mutates_args) if not isinstance(mutates_args, str) else mutates_args
            if expected != given:
                result._lib._destroy()
                raise ValueError(
                    f"Attempted to create a custom op with `mutates_args={mutates_args}` and "
                    f"`schema={schema}. The schema suggests that the op mutates {expected}"
                    "which is different from what was provided to us in `mutates_args`. "
                    "Please make these consistent.")
        result.register_kernel(device_types)(fn)
        return result

    if fn is None:
        return inner
    return inner(fn)


class CustomOpDef:
    """A function turned into a custom op (``custom_op``): call it like the function;
    register more behaviour with its methods."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, tags=None):
        from ..library import Library

        self._namespace = namespace
        self._name = name
        self._schema = schema
        self._tags = tuple(tags) if isinstance(tags, (list, tuple)) else \
            (() if tags is None else (tags,))
        self._init_fn = fn
        self._backend_fns: dict = {}
        self._abstract_fn = None
        self._setup_context_fn = None
        self._backward_fn = None
        self._vmap_fn = None
        self._disabled_kernel: set = set()
        self._lib = _library_allowing_overwrite(namespace, name, Library)
        # as PyTorch's custom_op, the op is declared pt2-compliant, ahead of the given tags
        from .tags import Tag

        tags = (Tag.pt2_compliant_tag,) + tuple(t for t in self._tags
                                                 if t is not Tag.pt2_compliant_tag)
        self._lib.define(name + schema, tags=tags, _stacklevel=3)
        self._opdef = _ops.lookup(self._qualname)
        self._opdef.custom = self
        schema_obj = self._opdef.schema
        if schema_obj.has_kwarg_only_tensors():
            self._lib._destroy()
            raise NotImplementedError(f"custom_op with kwarg-only Tensor args. Please make "
                                      f"your tensors not kwarg-only. Got: {name}{schema}")
        self._opoverload = self._opdef.overload
        self._register_fake_slot()
        self._autograd_info = _ops.AutogradInfo(None, None)
        self._lib._register_handle(self._opdef.add_listed("autograd", self._autograd_info))
        OPDEFS[self._qualname] = self

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    # -- kernels --------------------------------------------------------------------------
    def register_kernel(self, device_types, fn: Callable | None = None, /) -> Callable:
        """Register ``fn`` as the op's implementation for ``device_types`` (a device type, a
        sequence of them, or None for all). A decorator when ``fn`` is not given."""

        def inner(fn):
            if not callable(fn):
                raise TypeError(f"Input function is required to be a callable but found type "
                                f"{type(fn)}")
            dtypes = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for device_type in dtypes:
                if device_type not in self._backend_fns:
                    slot = "default" if device_type is None else _ops.slot_of(device_type)
                    self._lib._register_handle(
                        self._opdef.add_kernel(slot, self._backend_kernel(device_type)))
                self._backend_fns[device_type] = fn
            return fn

        if device_types is not None and not self._opdef.schema.has_tensor_arg() \
                and self._opdef.schema.device_arg_index() is None:
            raise ValueError("Functions without tensor inputs are required to have a "
                             "`device: torch.device` argument")
        if fn is None:
            return inner
        return inner(fn)

    def _backend_kernel(self, device_type):
        """The kernel of one device type: its function, or ``_init_fn`` while disabled."""
        op = self

        def backend_impl(*args, **kwargs):
            if device_type in op._disabled_kernel:
                return op._init_fn(*args, **kwargs)
            return op._backend_fns[device_type](*args, **kwargs)

        backend_impl._ember_user_fn = self._init_fn
        return backend_impl

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        """Inside the block, disable (or re-enable) the kernel of ``device_type``: the
        function given to ``custom_op`` runs instead of it."""
        action = "enable" if enabled else "disable"
        originally_disabled = device_type in self._disabled_kernel
        if device_type not in self._backend_fns:
            log.warning("Attempted to %s kernel for %s but no kernel was registered for this "
                        "device type.", action, device_type)
        if not enabled:
            if originally_disabled:
                log.warning("Attempted to disable kernel for %s but it was already disabled.",
                            device_type)
            else:
                self._disabled_kernel.add(device_type)
        else:
            if not originally_disabled:
                log.warning("Attempted to enable kernel for  %s but it was already enabled.",
                            device_type)
            else:
                self._disabled_kernel.remove(device_type)
        try:
            yield
        finally:
            if originally_disabled:
                self._disabled_kernel.add(device_type)
            else:
                self._disabled_kernel.discard(device_type)

    # -- fake, autograd, vmap, autocast ---------------------------------------------------
    def _register_fake_slot(self) -> None:
        op = self

        def fake_impl(*args, **kwargs):
            if op._abstract_fn is None:
                schema = op._opdef.schema
                if schema.is_mutable and not schema.returns:
                    return None
                raise RuntimeError(
                    f"There was no fake impl registered for {op}. This is necessary for "
                    "torch.compile/export/fx tracing to work (Ember's compile and export run "
                    f"the real kernel, but PyTorch needs it). Please use "
                    f"`{getattr(op._init_fn, '__name__', 'op')}.register_fake` to add an fake "
                    "impl.")
            return op._abstract_fn(*args, **kwargs)

        fake_impl._ember_custom_fake = self
        self._lib._register_handle(self._opdef.add_kernel("meta", fake_impl))

    def register_fake(self, fn: Callable, /) -> Callable:
        """Register the op's fake implementation: the same signature as the op, returning
        tensors of the outputs' shapes, dtypes and devices without computing their values
        (``opcheck`` checks it against the real kernel; ``get_ctx().new_dynamic_size()``
        stands for a data-dependent size)."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None
                          ) -> None:
        """Register the op's backward formula.

        ``setup_context(ctx, inputs, output)`` runs in the forward (``ctx`` is an
        ``autograd.Function``'s: ``save_for_backward``, attributes);
        ``setup_context(ctx, inputs, keyword_only_inputs, output)`` for an op with
        keyword-only arguments. ``backward(ctx, *grads)`` returns one gradient (or None) per
        input, written with ember ops (so that it is differentiable again)."""
        schema = self._opdef.schema
        if not schema.is_functional(allow_valid_view=True):
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                               f"{self} with schema {schema}. Please create a functional "
                               "operator and register an autograd formula for that.")
        self._backward_fn = backward
        self._setup_context_fn = setup_context
        self._autograd_info.backward = backward
        self._autograd_info.setup_context = setup_context

    def register_vmap(self, func: Callable | None = None):
        """Register the op's vmap rule ``func(info, in_dims, *args, **kwargs) -> (output,
        out_dims)`` (see ``ember.library.register_vmap``). A decorator when ``func`` is not
        given."""

        def register(func):
            need_register = self._vmap_fn is None
            self._vmap_fn = func
            if need_register:
                def rule(*args, **kwargs):
                    return self._vmap_fn(*args, **kwargs)

                self._lib._register_handle(self._opdef.add_listed("vmap", rule))
            return func

        if func is None:
            return register
        return register(func)

    def register_autocast(self, device_type: str, cast_inputs):
        """Inside ``ember.autocast(device_type)``, cast the op's floating inputs on that
        device (float64 excepted) to ``cast_inputs`` and run it with autocast off."""
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        from ..amp.autocast_mode import is_autocast_available

        if not is_autocast_available(device_type):
            raise ValueError(f"Device type '{device_type}' does not support autocast.")
        self._opdef.autocast.setdefault(device_type, cast_inputs)


def _library_allowing_overwrite(namespace: str, name: str, Library):
    qualname = f"{namespace}::{name}"
    old = OPDEF_TO_LIB.pop(qualname, None)
    if old is not None:
        old._destroy()
    lib = Library(namespace, "FRAGMENT")
    OPDEF_TO_LIB[qualname] = lib
    return lib


def get_opdef(op) -> CustomOpDef | None:
    """The CustomOpDef of ``op`` (a CustomOpDef, an OpOverload or a qualname), or None."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, _ops.OpOverload):
        op = op._opdef.key
    if isinstance(op, str):
        found = OPDEFS.get(op)
        if found is not None and not found._opdef.destroyed:
            return found
    return None

