"""Custom ops as registry ops: their definitions, kernel tables and the dispatch of a call.

An op defined through ``ember.library`` (``custom_op``, ``Library.define``) is an
:class:`OpDef`: its parsed schema and, per *slot*, the kernels registered to it (the last
registration wins; destroying the ``Library`` that made one restores the one before):

* a device type (``"cpu"``, ``"cuda"``, a registered test device): that device's kernel;
* ``"default"`` (``CompositeExplicitAutograd``): the kernel for every device;
* ``"implicit"`` (``CompositeImplicitAutograd``, ``Library.impl``'s default): a kernel
  written with ember ops, differentiated through them;
* ``"autograd"`` / ``"autograd:<device type>"``: a kernel that does its own autograd;
* ``"meta"``: the fake kernel (``register_fake``; ``opcheck`` runs it).

Each op is also an entry of ``ember.ops.registry.OPS`` (keyed ``"ns::name"``, or
``"ns::name.overload"``), so everything built on the registry sees it as one op: the capture
of ``ember.export``/``ember.jit.trace``/``ember.compile`` records a call as one node and a
loaded program resolves the name back to it, vmap uses its batching rule (``register_vmap``)
or its per-example loop, the profiler and autocast key it by that name, and
``__torch_function__`` modes see each call (their ``func`` is the :class:`OpOverload`).

A call (:meth:`OpDef.call`) binds its arguments to the schema, then runs the autograd layer
(the op's autograd kernel, its ``register_autograd`` formula, or PyTorch's fallback) and the
backend kernel of the device of its first tensor argument, bumping the version counter of
every argument the schema marks as written (``Tensor(a!)``).
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
import warnings

from .. import overrides as _overrides
from .._forksafe import reinit_in_child
from .._tensor import Tensor
from ..autograd.grad_mode import GRAD
from .schema import FunctionSchema

__all__ = ["OpDef", "OpOverload", "OpOverloadPacket", "OpNamespace", "RegistrationHandle",
           "lookup", "namespace", "define_op", "slot_of", "fallthrough_kernel"]

_LOCK = reinit_in_child(threading.RLock())
#: every defined op, by registry key ("ns::name" or "ns::name.overload")
_DEFS: dict = {}
#: the ``ember.ops.<ns>`` namespaces that exist (a Library or an op made them)
_NAMESPACES: dict = {}


def fallthrough_kernel():
    """A dummy function to pass to ``Library.impl`` in order to register a fallthrough: the
    op skips that slot (on ``"Autograd"``: the op is not differentiable, and its outputs
    do not require grad)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class RegistrationHandle:
    """Undoes one registration (``Library._destroy`` calls each of its handles)."""

    def __init__(self, on_destroy):
        self._on_destroy = on_destroy

    def destroy(self) -> None:
        fn, self._on_destroy = self._on_destroy, None
        if fn is not None:
            fn()


class Kernel:
    """A registered function and where it was registered."""

    __slots__ = ("func", "source", "fallthrough")

    def __init__(self, func, source: str = ""):
        self.func = func
        self.source = source
        self.fallthrough = func is fallthrough_kernel

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


# -- dispatch keys ----------------------------------------------------------------------------

_KEY_SLOTS = {
    "": "implicit", "CompositeImplicitAutograd": "implicit",
    "CompositeExplicitAutograd": "default", "default": "default",
    "Autograd": "autograd", "Meta": "meta", "CPU": "cpu", "CUDA": "cuda",
}
_SLOT_KEYS = {"implicit": "CompositeImplicitAutograd", "default": "CompositeExplicitAutograd",
              "autograd": "Autograd", "meta": "Meta", "cpu": "CPU", "cuda": "CUDA"}


def slot_of(key: str) -> str:
    """The kernel-table slot of a dispatch key or a device type (``"CPU"`` and ``"cpu"`` are
    ``"cpu"``; ``"AutogradCUDA"`` is ``"autograd:cuda"``)."""
    if not isinstance(key, str):
        raise TypeError(f"a dispatch key is a string, got {type(key).__name__}")
    slot = _KEY_SLOTS.get(key)
    if slot is not None:
        return slot
    if key.startswith("Autograd") and len(key) > len("Autograd"):
        rest = key[len("Autograd"):]
        return "autograd:" + slot_of(rest) if rest not in ("Other", "") else "autograd"
    if key.isidentifier() and key.islower():
        return key  # a device type: "cpu", "cuda", "meta", "xla", a registered test device
    if key.isidentifier() and key.isupper() and key.lower() in _registered_types():
        return key.lower()  # "TESTDEV": a registered device type's key
    raise NotImplementedError(
        f"ember.library: the dispatch key {key!r} has no counterpart in Ember, whose custom ops "
        "dispatch by device type (CPU, CUDA, ...), CompositeExplicitAutograd, "
        "CompositeImplicitAutograd, Autograd and Meta (vmap: register_vmap)")


def _registered_types() -> list:
    from .. import backends

    return backends.available_types()


def _key_name(slot: str) -> str:
    if slot.startswith("autograd:"):
        return "Autograd" + _key_name(slot[len("autograd:"):])
    return _SLOT_KEYS.get(slot, slot.upper())


def get_source(stacklevel: int) -> str:
    """``file:line`` of the caller ``stacklevel`` frames up."""
    f = sys._getframe(stacklevel + 1)
    return f"{f.f_code.co_filename}:{f.f_lineno}"


# -- thread state -------------------------------------------------------------------------------

class _State(threading.local):
    def __init__(self):
        self.below_autograd: list = []   # ops whose autograd kernel is running in this thread
        self.fallback = "warn"           # PyTorch's autograd fallback mode ("nothing": opcheck)


STATE = _State()


# -- ops ----------------------------------------------------------------------------------------

class AutogradInfo:
    """A backward formula and its ``setup_context`` (``register_autograd``)."""

    __slots__ = ("backward", "setup_context")

    def __init__(self, backward, setup_context):
        self.backward = backward
        self.setup_context = setup_context


class OpDef:
    """One defined operator (one overload): its schema, kernels and registrations."""

    def __init__(self, ns: str, schema: FunctionSchema, tags: tuple, source: str):
        self.ns = ns
        self.name = schema.name
        self.overload_name = schema.overload_name
        self.qualname = f"{ns}::{schema.name}"
        self.key = self.qualname + (f".{schema.overload_name}" if schema.overload_name else "")
        schema.qualname = self.qualname
        self.schema = schema
        self.tags = tuple(tags)
        self.source = source
        self.kernels: dict = {}        # slot -> [Kernel], last wins
        self.autograd: list = []       # [AutogradInfo], last wins
        self.vmap: list = []           # [vmap function], last wins
        self.autocast: dict = {}       # device type -> dtype (register_autocast)
        self.custom = None             # the CustomOpDef that made it, if any
        self.destroyed = False
        self._generated = None         # the autograd.Function of its formula (made lazily)
        self._mutated = [(i, a) for i, a in enumerate(schema.arguments) if a.is_write]
        self.entry = self._make_entry()
        self.overload = OpOverload(self)

    def __repr__(self) -> str:
        return f"<OpDef {self.key}>"

    def _make_entry(self):
        """The registry function: what ``OPS[key].fn`` is, what a loaded program calls."""
        op = self

        def entry(*args, **kwargs):
            return op.call(args, kwargs)

        entry.__name__ = entry.__qualname__ = self.key
        entry.__module__ = f"ember.ops.{self.ns}"
        entry.__doc__ = f"The custom op {self.schema}."
        entry.__signature__ = _signature(self.schema)
        entry._ember_op_key = self.key
        return entry

    # -- registrations ------------------------------------------------------------------------
    def add_kernel(self, slot: str, func, source: str = "") -> RegistrationHandle:
        k = Kernel(func, source)
        with _LOCK:
            self.kernels.setdefault(slot, []).append(k)

        def remove():
            with _LOCK:
                stack = self.kernels.get(slot, [])
                if k in stack:
                    stack.remove(k)
                if not stack:
                    self.kernels.pop(slot, None)

        return RegistrationHandle(remove)

    def kernel(self, slot: str) -> Kernel | None:
        """The current kernel of ``slot`` (None if none, or a fallthrough)."""
        stack = self.kernels.get(slot)
        if not stack or stack[-1].fallthrough:
            return None
        return stack[-1]

    def is_fallthrough(self, slot: str) -> bool:
        stack = self.kernels.get(slot)
        return bool(stack) and stack[-1].fallthrough

    def add_listed(self, attr: str, value) -> RegistrationHandle:
        """Push ``value`` on the list ``attr`` (``autograd``, ``vmap``); the handle pops it."""
        with _LOCK:
            getattr(self, attr).append(value)
            if attr == "vmap":
                self._sync_batch_rule()

        def remove():
            with _LOCK:
                items = getattr(self, attr)
                if value in items:
                    items.remove(value)
                if attr == "vmap":
                    self._sync_batch_rule()

        return RegistrationHandle(remove)

    def _sync_batch_rule(self) -> None:
        from ..ops.registry import OPS

        info = OPS.get(self.key)
        if info is not None and info.fn is self.entry:
            info.batch_rule = _batch_rule(self) if self.vmap else None

    def fake_kernel(self):
        """The fake kernel (None when the op needs none: it mutates and returns nothing)."""
        k = self.kernel("meta")
        if k is not None:
            return k
        if self.schema.is_mutable and not self.schema.returns:
            return _trivial_fake
        return None

    def has_autograd(self, device_type: str | None) -> bool:
        """Whether autograd has a rule for this op other than PyTorch's fallback."""
        if self.autograd or self._autograd_kernel(device_type) is not None:
            return True
        try:
            return self._backend(device_type)[1] == "implicit"
        except (NotImplementedError, RuntimeError):  # no kernel at all: the call will say so
            return False

    # -- calls ------------------------------------------------------------------------------
    def call(self, args: tuple, kwargs: dict):
        """Run the op: bind the arguments, then the autograd layer, then the backend."""
        if self.destroyed:
            raise RuntimeError(f"{self.key}: this operator no longer exists (the Library "
                               "that defined it was destroyed)")
        args, kwargs = self.schema.bind(args, kwargs)
        if self.autocast:
            args, kwargs = self._autocast(args, kwargs)
        dt = self.device_type(args, kwargs)
        if GRAD.enabled and _any_requires_grad(args, kwargs) \
                and self not in STATE.below_autograd:
            return self._autograd_call(dt, args, kwargs)
        kernel, slot = self._backend(dt)
        if slot == "implicit":
            return kernel(*args, **kwargs)
        return self.run_backend(kernel, args, kwargs)

    def _autograd_call(self, dt, args, kwargs):
        k = self._autograd_kernel(dt)
        if k is not None:  # the kernel does its own autograd; the op below it does not
            STATE.below_autograd.append(self)
            try:
                return k(*args, **kwargs)
            finally:
                STATE.below_autograd.pop()
        kernel, slot = self._backend(dt)
        if self.autograd:
            from . import autograd

            return autograd.apply(self, self.autograd[-1], kernel, args, kwargs)
        if slot == "implicit":  # differentiated through the ember ops it calls
            return kernel(*args, **kwargs)
        out = self.run_backend(kernel, args, kwargs)
        if STATE.fallback == "warn" and not self.is_fallthrough("autograd"):
            from . import autograd

            autograd.not_implemented_fallback(self, args, kwargs, out)
        return out

    def _autograd_kernel(self, dt):
        if dt is not None:
            k = self.kernel("autograd:" + dt)
            if k is not None:
                return k
        return self.kernel("autograd")

    def run_backend(self, kernel, args, kwargs):
        """The backend kernel's call: versions of written arguments bumped, the result
        checked against the schema (and, for ``custom_op``, for aliasing)."""
        if not GRAD.enabled:
            # below autograd (or under no_grad) PyTorch's kernels may call ``x.numpy()`` on an
            # input that requires grad; Ember's ``numpy()`` refuses that in any grad mode, so
            # the kernel gets aliases outside the graph (same memory and version counter)
            args = tuple(_detached(a) for a in args)
            kwargs = {k: _detached(v) for k, v in kwargs.items()}
        out = kernel(*args, **kwargs)
        for i, a in self._mutated:
            _bump(args[i] if not a.kwarg_only else kwargs[a.name])
        out = self.check_returns(out)
        if self.custom is not None and not self.schema.is_view:
            check_aliasing(self.name, args, kwargs, out, kernel)
        return out

    def device_type(self, args, kwargs) -> str | None:
        """The device type a call dispatches on: its first tensor's, else its ``device``
        argument's; None for neither."""
        for a in (*args, *kwargs.values()):
            if isinstance(a, Tensor):
                return a._device.type
            if isinstance(a, list):
                for x in a:
                    if isinstance(x, Tensor):
                        return x._device.type
        i = self.schema.device_arg_index()
        if i is not None:
            arg = self.schema.arguments[i]
            d = kwargs.get(arg.name) if arg.kwarg_only else args[i]
            if d is not None:
                return d.type
        return None

    def _backend(self, dt):
        """``(kernel, slot)`` of the backend that runs a call on device type ``dt``."""
        for slot in ((dt,) if dt is not None else ()) + ("default", "implicit"):
            k = self.kernel(slot)
            if k is not None:
                return k, slot
        if dt is not None and not self.schema.has_tensor_arg() \
                and self.schema.device_arg_index() is not None:
            raise RuntimeError(f"{self.name} does not have a kernel registered for {dt}. "
                               "Please use register_kernel to do so.")
        where = _key_name(dt) if dt is not None else "CompositeExplicitAutograd"
        have = [_key_name(s) for s in sorted(self.kernels) if self.kernel(s) is not None]
        raise NotImplementedError(
            f"Could not run '{self.qualname}' with arguments from the '{where}' backend. This "
            "could be because the operator doesn't exist for this backend, or was omitted "
            f"during the selective/custom build process (if using custom build). "
            f"'{self.qualname}' is only available for these backends: [{', '.join(have)}].")

    def _autocast(self, args, kwargs):
        amp = sys.modules.get("ember.amp.autocast_mode")
        if amp is None:
            return args, kwargs
        for dt, dtype in self.autocast.items():
            if amp.is_autocast_enabled(dt):
                def cast(a, dt=dt, dtype=dtype):
                    return amp._cast_arg(a, dtype, dt)

                args = amp._map(tuple(args), cast)
                kwargs = {k: amp._map(v, cast) for k, v in kwargs.items()}
        return args, kwargs

    def check_returns(self, out):
        """The kernel's result checked against the schema's returns (PyTorch's errors)."""
        rets = self.schema.returns
        if not rets:
            if out is not None:
                raise RuntimeError(f"Expected PythonKernelHolder for {self.qualname} to return "
                                   "None but it returned something else instead.")
            return None
        if len(rets) == 1 and not self.schema.returns_tuple:
            return _check_return(rets[0], out)
        if not isinstance(out, (tuple, list)) or len(out) != len(rets):
            got = f"{len(out)} values" if isinstance(out, (tuple, list)) \
                else f"a {type(out).__name__}"
            raise RuntimeError(f"{self.qualname}: its schema returns "
                               f"{self.schema.returns_text()} ({len(rets)} values), but the "
                               f"kernel returned {got}")
        return tuple(_check_return(r, o) for r, o in zip(rets, out))


def _trivial_fake(*args, **kwargs):
    return None


def _check_return(ret, value):
    t = ret.type
    if value is None and t.optional:
        return None
    if t.is_tensor:
        if isinstance(value, Tensor):
            return value
    elif t.is_tensor_list:
        if isinstance(value, (list, tuple)) and all(
                isinstance(v, Tensor) or v is None and t.elem_optional for v in value):
            return list(value)
    elif t.base in ("int", "SymInt", "float", "bool", "Scalar"):
        from .schema import _CastError, _convert_one

        try:
            return _convert_one(t, value)
        except _CastError:
            pass
    else:
        return value
    raise RuntimeError(f"Unable to cast {value!r} to {t}")


def _signature(schema: FunctionSchema) -> inspect.Signature:
    params = []
    for a in schema.arguments:
        kind = inspect.Parameter.KEYWORD_ONLY if a.kwarg_only \
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = a.default if a.has_default else inspect.Parameter.empty
        params.append(inspect.Parameter(a.name, kind, default=default))
    try:
        return inspect.Signature(params)
    except ValueError:  # a default before a required positional: keep the names only
        return inspect.Signature([inspect.Parameter(p.name, p.kind) for p in params])


def _any_requires_grad(args, kwargs) -> bool:
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            if a.requires_grad:
                return True
        elif isinstance(a, list):
            for x in a:
                if isinstance(x, Tensor) and x.requires_grad:
                    return True
    return False


def _detached(v):
    if isinstance(v, Tensor):
        return v.detach() if v.requires_grad else v
    if isinstance(v, list):
        return [_detached(x) for x in v]
    return v


def _bump(value) -> None:
    if isinstance(value, Tensor):
        value._bump_version()
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, Tensor):
                v._bump_version()


def _storage_keys(t: Tensor) -> tuple:
    """What identifies the memory of ``t``: its version counter (shared with its views) and
    the array that owns its data."""
    arr = t._data
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    vc = t._vc
    return (("vc", id(vc)) if vc is not None else ("t", id(t))), ("arr", id(arr))


def _tensors_of(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Tensor):
                    yield x


def check_aliasing(name: str, args, kwargs, out, kernel) -> None:
    """A custom op's outputs may be neither its inputs nor views of them or of each other."""
    seen = set()
    for t in _tensors_of((*args, *kwargs.values())):
        seen.update(_storage_keys(t))
    outs = out if isinstance(out, tuple) else (out,)
    for t in _tensors_of(outs):
        keys = _storage_keys(t)
        if seen.intersection(keys):
            func = getattr(kernel, "func", kernel)
            module = inspect.getmodule(getattr(func, "_ember_user_fn", func))
            raise RuntimeError(
                f"{name} (with implementation in {module}): The output of this custom operator "
                "(1) must not also be an input to this custom operator and (2) may not alias "
                "any inputs to this custom operator or other returns. The most common way to "
                "trigger this error is if we have y = custom_op(x) and y and x are the same "
                "Tensor. Please instead return a clone of the offending output tensor(s) (e.g. "
                "return x.clone()) or refactor the custom operator to not return y.")
        seen.update(keys)


# -- vmap --------------------------------------------------------------------------------------

class VmapInfo:
    """What a ``register_vmap`` function learns of the vmap: ``batch_size``, ``randomness``."""

    __slots__ = ("batch_size", "randomness")

    def __init__(self, batch_size: int, randomness: str):
        self.batch_size, self.randomness = batch_size, randomness

    def __repr__(self) -> str:
        return f"VmapInfo(batch_size={self.batch_size}, randomness='{self.randomness}')"


def _batch_rule(op: OpDef):
    """vmap's batching rule of ``op``: its ``register_vmap`` function on the physical
    tensors (batch in dim 0), its outputs' batch dims moved to 0."""

    def rule(lvl, func, args, kwargs):
        if not op.vmap:
            return NotImplemented
        fn = op.vmap[-1]
        args, kwargs = op.schema.bind(args, kwargs)

        def dim_of(a):
            if isinstance(a, list):
                return [0 if lvl.batched(x) else None for x in a]
            return 0 if lvl.batched(a) else None

        in_dims = tuple(dim_of(a) for a in args)
        phys = tuple([lvl.value(x) for x in a] if isinstance(a, list) else lvl.value(a)
                     for a in args)
        result = fn(VmapInfo(lvl.size, lvl.randomness), in_dims, *phys, **kwargs)
        if not isinstance(result, tuple) or len(result) != 2:
            raise RuntimeError(f"{op.key}: the vmap function registered with register_vmap "
                               "must return a tuple (output, out_dims), got "
                               f"{type(result).__name__}")
        out, out_dims = result
        return _move_batch_dims(lvl, op, out, out_dims)

    return rule


def _move_batch_dims(lvl, op, out, out_dims):
    def move(o, d):
        if not isinstance(o, Tensor):
            if d is not None:
                raise ValueError(f"{op.key}: vmap: out_dims is {d} for an output that is not a "
                                 f"Tensor ({type(o).__name__})")
            return o
        if d is None:
            return lvl.materialize(o)
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"{op.key}: vmap: an out_dim must be an int or None, got {d!r}")
        return o.movedim(d, 0) if d not in (0, -o.dim()) else o

    if isinstance(out, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(out)
        if len(dims) != len(out):
            raise ValueError(f"{op.key}: vmap: the vmap function returned {len(out)} outputs "
                             f"but out_dims {out_dims!r} has {len(dims)} entries")
        moved = [move(o, d) for o, d in zip(out, dims)]
        return type(out)(moved)
    if isinstance(out_dims, (tuple, list)):
        if len(out_dims) != 1:
            raise ValueError(f"{op.key}: vmap: one output but out_dims {out_dims!r}")
        out_dims = out_dims[0]
    return move(out, out_dims)


# -- public handles: ember.ops.<ns>.<name>[.<overload>] -----------------------------------------

class OpOverload:
    """One overload of a custom op: ``ember.ops.mylib.foo.default`` (``torch._ops.OpOverload``).

    Calling it runs the op; ``__torch_function__`` modes and Tensor subclasses see the call
    with this object as ``func``."""

    def __init__(self, op: OpDef):
        self._opdef = op
        self._schema = op.schema
        self._name = op.qualname
        self._opname = op.name
        self._overloadname = op.overload_name or "default"
        self.namespace = op.ns
        self.__name__ = f"{op.name}.{self._overloadname}"
        self.__qualname__ = self.__name__
        self.__module__ = f"ember.ops.{op.ns}"
        self.__doc__ = f"The custom op {op.schema}."
        self._ember_original = op.entry   # the undispatched op (ember.overrides' convention)
        self._ember_op_key = op.key

    def name(self) -> str:
        return self._opdef.key

    @property
    def tags(self) -> list:
        """The op's tags (``ember.Tag`` members), a new list each time as PyTorch's."""
        return list(self._opdef.tags)

    @property
    def op(self):
        return self._opdef.entry

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self.namespace}.{self._opname}', " \
               f"overload='{self._overloadname}')>"

    def __str__(self) -> str:
        return f"{self.namespace}.{self._opname}.{self._overloadname}"

    def __hash__(self) -> int:
        return id(self)

    def __call__(self, /, *args, **kwargs):  # ``/``: a schema argument may be named self
        st = _overrides._STATE
        if not st.all_disabled:
            if st.modes:
                return _overrides._call_mode(self, args, kwargs)
            relevant = _overrides._relevant_args(args, kwargs)
            if relevant:
                return _overrides.handle_torch_function(self, relevant, *args, **kwargs)
        return self._opdef.call(args, kwargs)

    def __reduce__(self):
        return (_overload_by_key, (self._opdef.key,))


def _overload_by_key(key: str) -> OpOverload:
    op = lookup(key)
    if op is None:
        raise RuntimeError(f"operator {key} does not exist")
    return op.overload


class OpOverloadPacket:
    """All overloads of one op name: ``ember.ops.mylib.foo`` (``torch._ops.OpOverloadPacket``).

    ``.default``, ``.<overload>`` give the overloads; calling it calls the overload whose
    schema takes the arguments (``default`` first)."""

    def __init__(self, ns: str, name: str):
        self._ns = ns
        self._opname = name
        self._qualified_op_name = f"{ns}::{name}"
        self.__name__ = name
        self._overloads: dict = {}

    def __getattr__(self, key: str):
        if key.startswith("__"):
            raise AttributeError(key)
        op = self.__dict__.get("_overloads", {}).get(key)
        if op is None:
            raise AttributeError(f"The underlying op of '{self._ns}.{self._opname}' has no "
                                 f"overload name '{key}'")
        return op.overload

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._overloads))

    def overloads(self) -> list:
        return list(self._overloads)

    @property
    def op(self):
        return self.default.op

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._ns}.{self._opname}')>"

    def __str__(self) -> str:
        return f"{self._ns}.{self._opname}"

    def __call__(self, /, *args, **kwargs):
        ops = list(self._overloads.values())
        if len(ops) == 1:
            return ops[0].overload(*args, **kwargs)
        ops.sort(key=lambda o: o.overload_name != "")
        for op in ops:
            try:
                op.schema.bind(args, kwargs)
            except RuntimeError:
                continue
            return op.overload(*args, **kwargs)
        schemas = "\n".join(f"  {op.schema}" for op in ops)
        raise RuntimeError(f"{self._qualified_op_name}() takes none of these argument lists "
                           f"(got {len(args)} positional and {sorted(kwargs)} keyword "
                           f"arguments):\n{schemas}")


class OpNamespace(types.ModuleType):
    """``ember.ops.<ns>``: the ops of one namespace (``torch._ops._OpNamespace``)."""

    def __init__(self, name: str):
        super().__init__(f"ember.ops.{name}")
        self.name = name
        self._packets: dict = {}

    def __getattr__(self, op_name: str):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = self.__dict__.get("_packets", {}).get(op_name)
        if packet is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return packet

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._packets))

    def __repr__(self) -> str:
        return f"<module 'ember.ops.{self.name}' from 'ember.ops'>"


def namespace(name: str, create: bool = False) -> OpNamespace | None:
    """The namespace ``ember.ops.<name>`` (made when ``create``; None if it does not exist)."""
    with _LOCK:
        ns = _NAMESPACES.get(name)
        if ns is None and create:
            ns = _NAMESPACES[name] = OpNamespace(name)
        return ns


def lookup(key: str) -> OpDef | None:
    """The op of a registry key (``"ns::name"``, ``"ns::name.overload"``), or None."""
    return _DEFS.get(key)


def define_op(ns: str, schema: FunctionSchema, tags: tuple, source: str) -> OpDef:
    """Define one op: it joins ``ember.ops.<ns>`` and the op registry."""
    op = OpDef(ns, schema, tags, source)
    with _LOCK:
        if op.key in _DEFS:
            prev = _DEFS[op.key]
            raise RuntimeError(
                f"Tried to register an operator ({prev.schema}) with the same name and "
                "overload name multiple times. Each overload's schema should only be "
                "registered with a single call to def(). Duplicate registration: registered "
                f"at {source}. Original registration: registered at {prev.source}")
        _DEFS[op.key] = op
        ns_obj = namespace(ns, create=True)
        packet = ns_obj._packets.get(op.name)
        if packet is None:
            packet = ns_obj._packets[op.name] = OpOverloadPacket(ns, op.name)
        packet._overloads[op.overload_name or "default"] = op
        _register_in_registry(op)
    return op


def undefine_op(op: OpDef) -> None:
    """Remove ``op`` from its namespace and the registry (``Library._destroy``)."""
    from ..ops.registry import OPS

    with _LOCK:
        if _DEFS.get(op.key) is not op:
            return
        op.destroyed = True
        del _DEFS[op.key]
        ns_obj = _NAMESPACES.get(op.ns)
        if ns_obj is not None:
            packet = ns_obj._packets.get(op.name)
            if packet is not None:
                packet._overloads.pop(op.overload_name or "default", None)
                if not packet._overloads:
                    del ns_obj._packets[op.name]
        info = OPS.get(op.key)
        if info is not None and info.fn is op.entry:
            del OPS[op.key]
        _forget_in_capture(op.key)


def _register_in_registry(op: OpDef) -> None:
    from ..ops.registry import OPS, OpInfo

    OPS[op.key] = OpInfo(op.key, op.entry, function=False, method=False, differentiable=True,
                         tags={"custom_op"}, view=op.schema.is_view)
    _forget_in_capture(op.key)


def _forget_in_capture(key: str) -> None:
    """Make ``ember.export``'s op tables see the registry's change (they are built once)."""
    mod = sys.modules.get("ember.export._ops")
    if mod is None:
        return
    with mod._LOCK:
        mod._TABLE[:] = [None, False]
        mod._RESOLVED.pop(key, None)


def warn_override(op: OpDef, slot: str) -> None:
    """PyTorch's warning when a kernel replaces another of the same slot (once a process)."""
    if _WARNED_OVERRIDE[0]:
        return
    _WARNED_OVERRIDE[0] = True
    warnings.warn("Warning only once for all operators,  other operators may also be "
                  "overridden.\n  Overriding a previously registered kernel for the same "
                  f"operator and the same dispatch key\n  operator: {op.schema}\n  dispatch "
                  f"key: {_key_name(slot)}", UserWarning, stacklevel=4)


_WARNED_OVERRIDE = [False]
