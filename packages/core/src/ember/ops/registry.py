"""The one op registry: Tensor methods, ``ember.<op>`` functions, in-place variants, and
later the graph-mode tracer and the C++ op list all read ``OPS``.

An op module defines a function once and registers it::

    @register("exp", inplace=True)
    def exp(input): ...

``install()`` (run at import of ``ember``) attaches methods to ``Tensor`` and exports the
functions into the ``ember`` namespace.

``varargs=True`` marks an op whose int-list parameter (the one after ``input``) its Tensor
method also takes as varargs, PyTorch's rule for a method whose only positional parameter is
an int list: ``t.flip(0, 2)`` is ``t.flip((0, 2))`` and ``torch.flip(t, (0, 2))``.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from .._front import front

__all__ = ["OpInfo", "OPS", "register", "register_method", "install", "varargs_method",
           "NN_FUNCTIONAL", "functional_kernels", "op_key", "register_batch_rule", "batch_rule",
           "batch_rules", "BATCH_RULES", "register_export"]


@dataclass
class OpInfo:
    """What an op is, for every consumer (methods, ``nn.functional``, the coverage report,
    the generic op tests; later the tracer, the ONNX mapping, autocast and the C++ op list).
    How to exercise it (sample inputs, references) is in ``ember.ops.opdb``."""

    name: str
    fn: Callable
    function: bool = True          # exported as ``ember.<name>``
    method: bool = True            # attached as ``Tensor.<name>``
    inplace: Callable | None = None  # ``Tensor.<name>_`` if any
    aliases: tuple = ()
    differentiable: bool = True    # has a backward (for floating inputs)
    tags: set = field(default_factory=set)
    varargs: bool = False          # ``Tensor.<name>(*ints)`` packs them into the int list
    view: bool = False             # the result shares the input's memory
    random: bool = False           # draws from a generator
    #: autocast's policy per device type ("lower", "fp32", "fp32_set_dtype", "promote"), from
    #: ``ops/autocast_policy.py``; an op without one runs in its inputs' dtypes
    autocast: dict = field(default_factory=dict)
    #: vmap's batching rule (``ember.ops.batching_rules``): ``rule(ctx, func, args, kwargs)``
    #: runs the op on physical tensors (batch in dim 0); None: vmap loops over the batch
    batch_rule: Callable | None = None
    #: the Tensor method when it differs from ``fn``: ``fn`` (``ember.<name>``) is the
    #: kernel's front (``ops._front``: PyTorch's NumPy keyword aliases, and ``out=`` with
    #: ``register(out=...)``); the method's front has no ``out=`` and no alias for ``self``
    method_fn: Callable | None = None
    #: the function as the op module defines it (the module's own name): no aliases, no out=
    kernel: Callable | None = None
    #: ``out=``'s dtype rule (``_inplace.OUT_DTYPE_RULES``) when ``fn`` takes ``out=``
    out: str | None = None

    @property
    def signature(self) -> inspect.Signature | None:
        """The function's parameters and defaults (None where Python cannot tell)."""
        sig = self.__dict__.get("_signature", False)
        if sig is False:
            try:
                sig = inspect.signature(self.fn)
            except (TypeError, ValueError):
                sig = None
            self.__dict__["_signature"] = sig
        return sig

    @property
    def supports_out(self) -> bool:
        sig = self.signature
        return sig is not None and "out" in sig.parameters

    @property
    def node_class(self) -> type | None:
        """The backward node class when the op declares one (factory-built ops)."""
        return getattr(self.fn, "_node", None)

    def sample_inputs(self, device=None, dtype="float64", requires_grad: bool = False):
        """Sample calls of this op (``ember.ops.opdb``); empty when it has no entry."""
        from .opdb import entry

        e = entry(self.name)
        return iter(()) if e is None else e.samples(device, dtype, requires_grad)


OPS: dict[str, OpInfo] = {}
#: extra Tensor methods that are not functions (``Tensor.view``, ``Tensor.add_``, dunders)
METHODS: dict[str, Callable] = {}
#: ``ember.<name>`` exports that are not ops of dense tensors (no ``OpInfo``, so no samples in
#: the op database): the sparse factories and layouts of ``ops/sparse_ops.py``
EXPORTS: dict[str, object] = {}


def register(name: str | None = None, *, function: bool = True, method: bool = True,
             inplace: bool | Callable = False, aliases: tuple = (),
             differentiable: bool | None = None, tags: tuple = (), varargs: bool = False,
             view: bool = False, random: bool = False, out: bool | str = False):
    """Register ``fn`` as op ``name``. ``inplace=True`` derives ``Tensor.<name>_``;
    ``varargs=True`` lets the method take its int list as varargs (see the module doc);
    ``out=True`` gives the function ``ember.<name>`` PyTorch's ``out=`` keyword (the Tensor
    method and the module's own name stay without); ``out="same"`` or ``"any"`` names its
    dtype rule (``_inplace.OUT_DTYPE_RULES``; True is ``"cast"``). The function and the
    method are the kernel's fronts (``ops._front``), which also take PyTorch's NumPy keyword
    aliases (``axis=`` for ``dim``, ...); the kernel ``fn`` is returned as it is."""

    def deco(fn):
        op_name = name or fn.__name__
        diff = differentiable
        if diff is None:  # an op built by a factory says whether it has a backward node
            diff = getattr(fn, "_node", True) is not None
        inplace_fn = None
        if inplace is True:
            from ._inplace import make_inplace

            inplace_fn = make_inplace(fn, op_name + "_")
        elif callable(inplace):
            inplace_fn = inplace
        out_rule = ("cast" if out is True else out) if out else None
        if out_rule is not None and out_rule not in ("cast", "same", "result", "any"):
            raise ValueError(f"out must be True, 'same', 'result' or 'any', not {out!r}")
        public = front(fn, name=op_name, out=out_rule, hot=True)
        mfn = front(fn, name=op_name, method=True, hot=True) if method else public
        OPS[op_name] = OpInfo(op_name, public, function, method, inplace_fn, tuple(aliases),
                              diff, set(tags), varargs, view, random,
                              method_fn=mfn if mfn is not public else None, kernel=fn,
                              out=out_rule)
        return fn

    return deco


#: batching rules by op key (``op_key``), including Tensor methods that are not registered ops
#: (``view``, ``expand``, ``index`` for ``__getitem__``, in-place variants)
BATCH_RULES: dict[str, Callable] = {}


def register_batch_rule(*names: str):
    """Register ``rule(ctx, func, args, kwargs)`` as vmap's batching rule of the ops
    ``names`` (op keys: ``"add"``, ``"add_"``, ``"view"``, ``"index"``, ...). The rule gets
    the vmap level ``ctx`` (``ember._functorch._batched.VmapLevel``: ``size``,
    ``batched(x)``, ``value(x)``, ``ldim(x)``, ``materialize(x)``) and the call as made; it
    returns the result with the batch in dim 0 of every output tensor, or ``NotImplemented``
    to leave the call to the per-example loop."""

    def deco(rule):
        for n in names:
            BATCH_RULES[n] = rule
            info = OPS.get(n)
            if info is not None:
                info.batch_rule = rule
        return rule

    return deco


def batch_rule(name: str) -> Callable | None:
    """The batching rule of op key ``name`` (None: vmap falls back to a loop)."""
    info = OPS.get(name)
    if info is not None and info.batch_rule is not None:
        return info.batch_rule
    return BATCH_RULES.get(name)


def batch_rules() -> list[str]:
    """The op keys that have a batching rule (the others run vmap's per-example loop)."""
    return sorted(BATCH_RULES)


_DUNDER_OPS = {"truediv": "div", "floordiv": "floor_divide", "getitem": "index",
               "setitem": "index_put_", "invert": "bitwise_not", "and": "bitwise_and",
               "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
               "rshift": "bitwise_right_shift", "pos": "positive"}
_REFLECTED = {"radd", "rsub", "rmul", "rtruediv", "rfloordiv", "rmatmul", "rpow", "rmod",
              "rand", "ror", "rxor", "rlshift", "rrshift"}
_INPLACE_DUNDERS = {"iadd", "isub", "imul", "itruediv", "ifloordiv", "imatmul", "ipow", "imod",
                    "iand", "ior", "ixor", "ilshift", "irshift"}


@functools.cache
def _key(name: str, module: str) -> str:
    if name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        suffix = ""
        if core in _REFLECTED:
            core = core[1:]
        elif core in _INPLACE_DUNDERS:
            core, suffix = core[1:], "_"
        name = _DUNDER_OPS.get(core, core) + suffix
    if module in ("ember.linalg", "ember.fft") and not name.startswith(module[6:] + "_"):
        return f"{module[6:]}_{name}"
    return name


def op_key(func) -> str:
    """The op a public callable runs, by PyTorch's ATen name (``Tensor.__matmul__`` ->
    ``"matmul"``, ``__iadd__`` -> ``"add_"``, ``ember.linalg.inv`` -> ``"linalg_inv"``): what
    the profiler names and the autocast policy is keyed by. A custom op (``ember.library``)
    carries its key: ``"mylib::numpy_sin"``."""
    key = getattr(func, "_ember_op_key", None)
    if key is not None:
        return key
    namespace = getattr(func, "_ember_namespace", None) or getattr(func, "__module__", None)
    name = getattr(func, "_ember_op_name", None) or getattr(func, "__name__", "op")
    return _key(name, namespace or "")


#: methods left without the NumPy keyword names, for speed: called in every forward pass
#: (``x.size(0)``), never with ``axis=`` in PyTorch code (a front costs ~60 ns a call)
_PLAIN_METHODS = frozenset(("size",))


def register_method(name: str, fn: Callable, *, varargs: bool = False) -> Callable:
    """A Tensor method that is not an ``ember.<name>`` function (``varargs`` as in
    ``register``). Its front (``ember._front``) takes PyTorch's NumPy keyword names
    (``t.unsqueeze_(axis=0)``), dunders and ``_PLAIN_METHODS`` aside."""
    method = fn
    if not name.startswith("__") and name not in _PLAIN_METHODS:
        method = front(fn, name=name, method=True, hot=True)
    METHODS[name] = varargs_method(method, name) if varargs else method
    return fn


def register_export(name: str, obj):
    """Export ``obj`` as ``ember.<name>`` at ``install`` without making it an op."""
    EXPORTS[name] = obj
    return obj


def varargs_method(fn: Callable, name: str) -> Callable:
    """``fn(self, ints, ...)`` as a method that also takes the int list as varargs.

    One positional argument passes through as it is (an int or a sequence, as PyTorch
    accepts both); several are the int list; none leaves the parameter to its keyword or
    default, and else is the empty list (PyTorch raises there, but ``t.reshape(*shape)``
    with an empty ``shape`` is common in ember's own ops). Views are on every backward's
    path: the common calls take the shortest way.
    """
    param = list(inspect.signature(fn).parameters.values())[1]
    required = param.default is inspect.Parameter.empty
    pname = param.name

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if len(args) == 1:
            return fn(self, args[0], **kwargs) if kwargs else fn(self, args[0])
        if not args and (pname in kwargs or not required):
            return fn(self, **kwargs)
        for a in args:
            if a.__class__ is not int:
                _check_ints(args, name, pname)
                break
        return fn(self, args, **kwargs) if kwargs else fn(self, args)

    return method


def _check_ints(args: tuple, name: str, pname: str) -> None:
    """PyTorch's error when varargs hold something other than integers."""
    for i, a in enumerate(args):
        try:
            operator.index(a)
        except TypeError:
            if i == 0:  # not the varargs form: a sequence and more arguments
                raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were "
                                "given") from None
            raise TypeError(f"{name}(): argument '{pname}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(a).__name__}\"") from None


#: ``torch.nn.functional``'s names that ember-core implements (``linear``, ``bilinear`` and the
#: multi-head attention live in ember-nn). Each is the registered op of that name, tagged
#: ``"nn.functional"`` at install, unless a kernel module (``_FUNCTIONAL_MODULES``) exports a
#: function of that name with F's own signature (``dropout(input, p, training, inplace)``
#: beside ATen's ``dropout(input, p, train)``); ``relu_`` and the like are in-place variants.
NN_FUNCTIONAL = (
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "ctc_loss", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "elu", "elu_", "embedding", "embedding_bag",
    "feature_alpha_dropout", "fold", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "gaussian_nll_loss", "gelu", "glu", "grid_sample",
    "group_norm", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hardtanh_", "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div",
    "l1_loss", "layer_norm", "leaky_relu", "leaky_relu_", "local_response_norm", "log_softmax",
    "logsigmoid", "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "mish", "mse_loss",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "native_channel_shuffle", "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance",
    "pdist", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu", "relu6",
    "relu_", "rms_norm", "rrelu", "rrelu_", "scaled_dot_product_attention", "selu", "selu_",
    "sigmoid", "silu", "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin", "softplus",
    "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "threshold_",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "unfold", "upsample",
    "upsample_bilinear", "upsample_nearest",
)
#: the ``NN_FUNCTIONAL`` names that are PyTorch's native functions (not Python code), so take
#: its argument parser's NumPy keyword names (``F.conv2d(x=...)``, ``F.pdist(...)``): their
#: ``F.<name>`` is the op's front
NN_FUNCTIONAL_NATIVE = frozenset((
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "channel_shuffle",
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "cosine_similarity", "gelu", "hardshrink", "logsigmoid",
    "native_channel_shuffle", "one_hot", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "prelu", "scaled_dot_product_attention", "softplus", "softshrink"))
_FUNCTIONAL_MODULES = ("normalization", "nn_misc", "conv", "pooling", "activation", "loss",
                       "attention")


def functional_kernels() -> dict:
    """``{name: function}`` for ``NN_FUNCTIONAL``: what ``ember.nn.functional`` exports."""
    import importlib

    modules = [importlib.import_module(f"ember.ops.{m}") for m in _FUNCTIONAL_MODULES]
    inplace = {info.name + "_": info.inplace for info in OPS.values() if info.inplace}
    out = {}
    for name in NN_FUNCTIONAL:
        fn = next((getattr(m, name) for m in modules
                   if name in getattr(m, "__all__", ()) and hasattr(m, name)), None)
        info = OPS.get(name)
        if fn is not None and info is not None and info.kernel is fn and (
                info.out is not None or name in NN_FUNCTIONAL_NATIVE):
            fn = info.fn  # the kernel module's own name is the one without ``out=``
        elif fn is not None and name in NN_FUNCTIONAL_NATIVE:
            fn = front(fn)
        if fn is None:
            fn = info.fn if info is not None else inplace.get(name)
        if fn is None:
            raise LookupError(f"torch.nn.functional.{name} is listed in NN_FUNCTIONAL, but "
                              "ember-core has no kernel of that name")
        out[name] = fn
    return out


def method_copy(fn: types.FunctionType, cls: type, name: str) -> types.FunctionType:
    """A method ``cls.name`` of its own for ``fn``, an ``ember`` function: the same code,
    defaults, closure and attributes, named where it lives (pickle finds it there), and
    ``_ember_original`` naming ``fn`` (the op it runs: what tables keyed by function look
    up)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    copy.__dict__.update(fn.__dict__)
    copy.__qualname__ = f"{cls.__qualname__}.{name}"
    copy.__module__ = cls.__module__
    copy.__doc__ = fn.__doc__
    copy.__annotations__ = fn.__annotations__
    copy._ember_original = fn
    return copy


def install(namespace: dict, tensor_cls: type) -> None:
    """Export registered functions into ``namespace`` and attach Tensor methods."""
    namespace.update(EXPORTS)
    methods: dict = {}
    for info in OPS.values():
        names = (info.name, *info.aliases)
        mfn = info.method_fn or info.fn
        method = varargs_method(mfn, info.name) if info.varargs and info.method else mfn
        for n in names:
            if info.function:
                namespace[n] = info.fn
            if info.method:
                methods[n] = method
            if info.inplace is not None:
                methods[n + "_"] = info.inplace
                if info.function:
                    namespace.setdefault(n + "_", info.inplace)
    methods.update(METHODS)
    functions = {id(v) for v in namespace.values()}
    copies: dict = {}
    for n, fn in methods.items():
        if id(fn) in functions and isinstance(fn, types.FunctionType):
            # Tensor.add is not ember.add, as in PyTorch: a __torch_function__ handler
            # tells x.add(1) from ember.add(x, 1) by the function it receives
            if id(fn) not in copies:
                copies[id(fn)] = method_copy(fn, tensor_cls, n)
            fn = copies[id(fn)]
        setattr(tensor_cls, n, fn)
    for n in NN_FUNCTIONAL:
        info = OPS.get(n)
        if info is not None:
            info.tags.add("nn.functional")
    from .autocast_policy import POLICIES

    for n, policy in POLICIES.items():
        info = OPS.get(n)
        if info is not None:
            info.autocast = policy
