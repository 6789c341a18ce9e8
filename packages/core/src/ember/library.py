"""``ember.library``: define new ops in Python (PyTorch's ``torch.library``).

A custom op is a real op of ember's registry, not a Python function the framework looks
into: ``ember.export``/``ember.jit.trace`` record a call as one node named ``"ns::name"`` (a
saved program calling it loads and runs where the op is defined again, and names it when it
is not), ``ember.compile`` replays it, ``ember.func.vmap`` runs its ``register_vmap`` rule
(else one call per example), autograd runs its ``register_autograd`` formula, autocast its
``register_autocast`` rule, and ``__torch_function__`` modes see each call. So its kernel may
be anything: NumPy, CuPy, a C library. The ops of a namespace are ``ember.ops.<ns>.<name>``
(``.default`` and the other overloads).

The high-level API is :func:`custom_op` (see ``docs/custom_ops.md``)::

    @ember.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(np.sin(x.cpu().numpy())).to(x.device)

    @numpy_sin.register_fake
    def _(x):
        return ember.empty_like(x)

    numpy_sin.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0].cos(),
                                setup_context=lambda ctx, inputs, output:
                                ctx.save_for_backward(inputs[0]))

The low-level one is :class:`Library` (``define`` a schema, ``impl`` kernels per dispatch key:
a device type such as ``"CPU"``, ``"CompositeExplicitAutograd"`` for every device,
``"CompositeImplicitAutograd"`` for a kernel written with ember ops, ``"Autograd"``,
``"Meta"`` for the fake kernel).

Ember has no dispatch key sets, FakeTensor or ``__torch_dispatch__``: ``impl(...,
with_keyset=True)``, ``Library.fallback``, ``register_torch_dispatch``, ``get_kernel``,
``triton_op`` and ``wrap_triton`` are not provided; a fake kernel serves ``opcheck``.
"""

from __future__ import annotations

import sys
import warnings
import weakref
from collections.abc import Callable

from ._library import ops as _ops
from ._library.custom_ops import CustomOpDef, custom_op, get_opdef
from ._library.fake_impl import FakeImplCtx, get_ctx
from ._library.infer_schema import infer_schema
from ._library.opcheck import OpCheckError, opcheck
from ._library.ops import fallthrough_kernel
from ._library.schema import parse_namespace, parse_schema

__all__ = ["Library", "impl", "define", "fallthrough_kernel", "impl_abstract",
           "register_autocast", "register_fake", "register_kernel", "register_autograd",
           "register_vmap", "get_ctx", "custom_op", "infer_schema", "opcheck", "CustomOpDef",
           "FakeImplCtx", "OpCheckError"]

#: ``ns/name/dispatch_key`` of every kernel registered through a Library (PyTorch's
#: ``_impls``: ``allow_override=False`` checks it)
_impls: set = set()
_defs: set = set()
#: namespaces PyTorch reserves; "aten" is ember's own ops (not overridable here)
_reserved_namespaces = ["prim"]
#: the namespace that a DEF library holds (one per namespace), -> that library's id
_DEF_LIBS: dict = {}
#: the libraries of module-level registrations made without ``lib=`` (kept alive)
_keep_alive: list = []


class Library:
    """A set of registrations in one namespace (``torch.library.Library``).

    ``kind`` is ``"DEF"`` (the one library that defines the namespace's ops),
    ``"FRAGMENT"`` (a part of a namespace: any number of them) or ``"IMPL"`` (kernels for
    ops defined elsewhere); ``dispatch_key`` is the default key of ``impl``. Everything a
    library registered is undone when it is destroyed (``_destroy()``) or collected."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in _reserved_namespaces and kind in ("DEF", "FRAGMENT"):
            raise ValueError(f"{ns} is a reserved namespace. Please try creating a library "
                             "with another name.")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"Library: the namespace must be an identifier, got {ns!r}")
        _check_namespace(ns)
        f = sys._getframe(1)
        self._source = f"{f.f_code.co_filename}:{f.f_lineno}"
        if kind == "DEF":
            prev = _DEF_LIBS.get(ns)
            if prev is not None:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; "
                    "please put all of your definitions in a single TORCH_LIBRARY block.  If "
                    "you were trying to specify implementations, consider using "
                    "TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to "
                    "define operators for a single namespace in a distributed way, you can use "
                    "TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration "
                    f"of TORCH_LIBRARY was registered at {prev[1]}; latest registration was "
                    f"registered at {self._source}")
            _DEF_LIBS[ns] = (id(self), self._source)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._op_defs: set = set()
        self._op_impls: set = set()
        self._registration_handles: list = []
        self._alive = [True]
        _ops.namespace(ns, create=True)
        weakref.finalize(self, _del_library, self._op_impls, self._op_defs,
                         self._registration_handles, self._alive, ns, id(self))

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    @property
    def m(self):
        """Whether the library is alive (PyTorch's handle: None once destroyed)."""
        return self if self._alive[0] else None

    def _check_alive(self) -> None:
        if not self._alive[0]:
            raise AssertionError("Library object has been destroyed")

    def _register_handle(self, handle) -> None:
        self._registration_handles.append(handle)

    def define(self, schema: str, alias_analysis: str = "", *, tags=(), _stacklevel: int = 1
               ) -> str:
        """Define an op of this namespace from its schema (``"foo(Tensor x) -> Tensor"``,
        ``"foo.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"``); returns its name."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        self._check_alive()
        f = sys._getframe(_stacklevel)
        source = f"{f.f_code.co_filename}:{f.f_lineno}"
        head = schema.split("(", 1)[0]
        if self.kind == "IMPL":
            raise RuntimeError(
                f'def("{head.strip()}"): Cannot define an operator inside of a '
                "TORCH_LIBRARY_IMPL block.  All def()s should be placed in the (unique) "
                "TORCH_LIBRARY block for their namespace.  (Error occurred while processing "
                f"TORCH_LIBRARY_IMPL block at {self._source})")
        if "::" in head:
            ns, _, rest = schema.partition("::")
            if ns.strip() != self.ns:
                raise ValueError(f"Explicitly provided namespace ({ns.strip()}) in schema "
                                 f"string does not match namespace of enclosing "
                                 f"TORCH_LIBRARY_FRAGMENT block ({self.ns}).")
            schema = rest
        parsed = parse_schema(schema)
        if not isinstance(tags, (tuple, list)):
            tags = (tags,)
        op = _ops.define_op(self.ns, parsed, tuple(tags), source)
        self._op_defs.add(op.key)
        _defs.add(op.key)
        self._registration_handles.append(_ops.RegistrationHandle(
            lambda: _ops.undefine_op(op)))
        return parsed.name

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = True) -> None:
        """Register ``fn`` as the kernel of ``op_name`` (``"foo"``, ``"foo.out"``, an
        ``OpOverload``) for ``dispatch_key`` (default: the library's; ``""`` is
        ``CompositeImplicitAutograd``). ``fallthrough_kernel`` makes the op skip that key."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type "
                            f"{type(fn)}")
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        if with_keyset:
            raise NotImplementedError("Library.impl(..., with_keyset=True): Ember's custom ops "
                                      "have no dispatch key sets to pass to the kernel")
        name = self._resolve_op_name(op_name, "impl")
        key = f"{self.ns}/{name.split('::')[-1]}/{dispatch_key}"
        if not allow_override and key in _impls:
            raise RuntimeError(
                "This is not allowed since there's already a kernel registered from python "
                f"overriding {name.split('::')[-1]}'s behavior for {dispatch_key} dispatch key "
                f"and {self.ns} namespace.")
        self._check_alive()
        op = _lookup(name if "::" in name else f"{self.ns}::{name}")
        slot = _ops.slot_of(dispatch_key)
        if op.kernels.get(slot):
            _ops.warn_override(op, slot)
        f = sys._getframe(1)
        self._registration_handles.append(
            op.add_kernel(slot, fn, f"{f.f_code.co_filename}:{f.f_lineno}"))
        _impls.add(key)
        self._op_impls.add(key)

    def _resolve_op_name(self, op_name, api_name: str) -> str:
        if isinstance(op_name, str):
            return op_name
        if isinstance(op_name, _ops.OpOverload):
            return op_name._opdef.key
        raise RuntimeError(f"{api_name} should be passed either a name or an OpOverload object "
                           f"as the first argument, got {type(op_name)}")

    def _register_fake(self, op_name, fn: Callable, _stacklevel: int = 1, *,
                       allow_override: bool = True) -> None:
        """Register ``fn`` as the fake kernel of ``op_name`` (``register_fake``)."""
        self._check_alive()
        op = _lookup(f"{self.ns}::{op_name}" if "::" not in op_name else op_name)
        current = op.kernel("meta")
        if not allow_override and current is not None:
            raise RuntimeError(f"register_fake(...): the operator {op.key} already has a fake "
                               f"impl registered at {current.source}.")
        f = sys._getframe(_stacklevel)
        self._registration_handles.append(
            op.add_kernel("meta", fn, f"{f.f_code.co_filename}:{f.f_lineno}"))

    def _destroy(self) -> None:
        """Undo every registration of this library (its ops are deleted)."""
        _del_library(self._op_impls, self._op_defs, self._registration_handles, self._alive,
                     self.ns, id(self))


def _del_library(op_impls, op_defs, handles, alive, ns, lib_id) -> None:
    global _impls
    for handle in reversed(handles):
        handle.destroy()
    handles.clear()
    _impls -= op_impls
    _defs.difference_update(op_defs)
    alive[0] = False
    if _DEF_LIBS.get(ns, (None,))[0] == lib_id:
        del _DEF_LIBS[ns]


def _check_namespace(ns: str) -> None:
    """A namespace must not hide ember's own ops or an ``ember.ops`` module."""
    if ns == "aten":
        raise NotImplementedError("ember.library: 'aten' is Ember's built-in ops, which "
                                  "ember.library cannot define or override; use your own "
                                  "namespace")
    import ember.ops

    if ns in vars(ember.ops):
        raise ValueError(f"ember.library: the namespace {ns!r} would be hidden by the module "
                         f"ember.ops.{ns}; choose another namespace")


def _lookup(qualname: str) -> _ops.OpDef:
    """The op of ``"ns::name"`` / ``"ns::name.overload"`` (``.default`` is the plain name)."""
    ns, name = parse_namespace(qualname)
    if name.endswith(".default"):
        name = name[:-len(".default")]
    op = _ops.lookup(f"{ns}::{name}")
    if op is None:
        raise RuntimeError(f"operator {ns}::{name} does not exist")
    return op


def _resolve_op_for_registration(op, registration_name: str):
    if not isinstance(op, (str, _ops.OpOverload, CustomOpDef)):
        raise ValueError(f"{registration_name}({op}): got unexpected type for op: {type(op)}")
    if isinstance(op, _ops.OpOverload):
        op = op._opdef.key
    opdef = get_opdef(op)
    return opdef if opdef is not None else op


def _library_for_registration(namespace: str, lib: Library | None) -> Library:
    if lib is not None:
        return lib
    use_lib = Library(namespace, "FRAGMENT")
    _keep_alive.append(use_lib)
    return use_lib


# -- module-level registration ------------------------------------------------------------------

def define(qualname, schema, *legacy, lib: Library | None = None, tags=()):
    """Define a new op ``qualname`` (``"mylib::sin"``) with ``schema`` (``"(Tensor x) ->
    Tensor"``, without the name); implement it with :func:`impl` / :func:`register_kernel`.

    The old form ``define(lib, schema, alias_analysis="")`` is a decorator that defines the
    op in ``lib`` and registers the decorated function as its kernel."""
    if isinstance(qualname, Library):
        lib_, alias_analysis = qualname, legacy[0] if legacy else ""

        def wrap(f):
            name = lib_.define(schema, alias_analysis, _stacklevel=2)
            lib_.impl(name, f)
            return f

        return wrap
    if legacy:
        raise TypeError(f"define() takes 2 positional arguments but {2 + len(legacy)} were "
                        "given")
    if not isinstance(qualname, str):
        raise ValueError(f"define(qualname, schema): expected qualname to be instance of str, "
                         f"got {type(qualname)}")
    namespace, name = parse_namespace(qualname)
    if lib is None:
        lib = Library(namespace, "FRAGMENT")
        _keep_alive.append(lib)
    import re

    if not isinstance(schema, str) or not re.fullmatch(r"\(.*\) -> .*", schema):
        raise ValueError('define(qualname, schema, ...): expected schema to look like e.g. '
                         f'"(Tensor x) -> Tensor" but got "{schema}"')
    lib.define(name + schema, alias_analysis="", tags=tags, _stacklevel=2)


def impl(qualname, types, func: Callable | None = None, *, lib: Library | None = None):
    """Register ``func`` as the kernel of ``qualname`` for the device type(s) ``types``
    (``"cpu"``, ``"cuda"``, ``"default"`` for every device, or a dispatch key). A decorator
    when ``func`` is not given.

    The old form ``impl(lib, name, dispatch_key="")`` is a decorator registering the
    decorated function in ``lib``."""
    if isinstance(qualname, Library):
        lib_, name, key = qualname, types, func if isinstance(func, str) else ""

        def wrap(f):
            lib_.impl(name, f, key)
            return f

        return wrap
    keys = [types] if isinstance(types, str) else list(types)
    keys = ["CompositeExplicitAutograd" if k == "default" else k for k in keys]

    def register(func):
        namespace, _ = parse_namespace(qualname)
        use_lib = _library_for_registration(namespace, lib)
        for key in keys:
            use_lib.impl(qualname, func, key)

    if func is None:
        return register
    register(func)
    return None


def register_kernel(op, device_types, func: Callable | None = None, /, *,
                    lib: Library | None = None):
    """Register ``func`` as the op's implementation for ``device_types`` (None: every
    device). A decorator when ``func`` is not given."""
    op = _resolve_op_for_registration(op, "register_kernel")
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func)
    if device_types is None:
        device_types = "CompositeExplicitAutograd"
    return impl(op, device_types, func, lib=lib)


def register_fake(op, func: Callable | None = None, /, *, lib: Library | None = None,
                  _stacklevel: int = 1, allow_override: bool = True):
    """Register the op's fake implementation ("meta kernel"): the op's signature, returning
    tensors with the outputs' shapes, dtypes and devices, computed without reading the
    inputs' data (``ember.library.get_ctx().new_dynamic_size()`` for a size the data
    decides). Ember runs it in ``opcheck``; PyTorch's compile and export need it. A
    decorator when ``func`` is not given."""
    op = _resolve_op_for_registration(op, "register_fake")
    if isinstance(op, CustomOpDef):
        return op.register_fake if func is None else op.register_fake(func)
    stacklevel = _stacklevel

    def register(func):
        namespace, op_name = parse_namespace(op)
        use_lib = _library_for_registration(namespace, lib)
        use_lib._register_fake(op_name, func, _stacklevel=stacklevel + 1,
                               allow_override=allow_override)
        return func

    if func is None:
        return register
    stacklevel += 1
    return register(func)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel: int = 1):
    """Deprecated: renamed :func:`register_fake` (as in PyTorch 2.4)."""
    warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. "
                  "Please use that instead; we will remove `torch.library.impl_abstract` in a "
                  "future version of PyTorch.", FutureWarning, stacklevel=2)
    if func is not None:
        _stacklevel = _stacklevel + 1
    return register_fake(qualname, func, lib=lib, _stacklevel=_stacklevel)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib=None) -> None:
    """Register the op's backward formula: ``backward(ctx, *grads)`` returns a gradient per
    input; ``setup_context(ctx, inputs, output)`` (``setup_context(ctx, inputs,
    keyword_only_inputs, output)`` for an op with keyword-only arguments) saves what it needs
    on ``ctx`` (an ``autograd.Function``'s). Write ``backward`` with ember ops (or other
    custom ops): it is then differentiable again."""
    op = _resolve_op_for_registration(op, "register_autograd")
    if isinstance(op, CustomOpDef):
        op.register_autograd(backward, setup_context=setup_context)
        return
    opdef = _lookup(op)
    schema = opdef.schema
    if not schema.is_functional():
        raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                           f"{opdef.overload} with schema {schema}. Please create a functional "
                           "operator and register an autograd formula for that.")
    if schema.has_kwarg_only_tensors():
        raise NotImplementedError(f"register_autograd with kwarg-only Tensor args. In the "
                                  "original definition of the op, please make your tensors not "
                                  f"kwarg-only. Got: {schema}")
    use_lib = _library_for_registration(opdef.ns, lib)
    use_lib._register_handle(opdef.add_listed(
        "autograd", _ops.AutogradInfo(backward, setup_context)))


def register_vmap(op, func: Callable | None = None, /, *, lib=None):
    """Register the op's vmap rule, ``func(info, in_dims, *args, **kwargs) -> (output,
    out_dims)``: ``in_dims`` holds, per argument, the batched dimension of a tensor (None for
    an unbatched one or a non-tensor; a list for a tensor list), ``info.batch_size`` and
    ``info.randomness`` describe the vmap; ``out_dims`` gives each output's batched
    dimension (None: not batched), an int for all of them. Without a rule, vmap calls the op
    once per example. A decorator when ``func`` is not given."""
    op = _resolve_op_for_registration(op, "register_vmap")
    if isinstance(op, CustomOpDef):
        return op.register_vmap(func)
    opdef = _lookup(op)
    if opdef.schema.has_kwarg_only_tensors():
        raise NotImplementedError(f"register_vmap with kwarg-only Tensor args. In the original "
                                  "definition of the op, please make your tensors not "
                                  f"kwarg-only. Got: {opdef.schema}")

    def register(func):
        use_lib = _library_for_registration(opdef.ns, lib)
        use_lib._register_handle(opdef.add_listed("vmap", func))
        return func

    if func is None:
        return register
    return register(func)


def register_autocast(op, device_type: str, cast_inputs, /, *, lib: Library | None = None):
    """Inside ``ember.autocast(device_type)``, run the op with its floating inputs on that
    device (float64 excepted) cast to ``cast_inputs``, and autocast off inside it."""
    from .amp.autocast_mode import is_autocast_available

    op = _resolve_op_for_registration(op, "register_autocast")
    if not is_autocast_available(device_type):
        raise ValueError(f"Device type '{device_type}' does not support autocast.")
    if isinstance(op, CustomOpDef):
        return op.register_autocast(device_type, cast_inputs)
    opdef = _lookup(op)
    use_lib = _library_for_registration(opdef.ns, lib)
    had = device_type in opdef.autocast
    opdef.autocast[device_type] = cast_inputs
    if not had:
        use_lib._register_handle(_ops.RegistrationHandle(
            lambda: opdef.autocast.pop(device_type, None)))
    return None
