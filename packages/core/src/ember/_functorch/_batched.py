"""vmap's machinery: batched tensors, levels, and the mode that applies batching rules.

A :class:`BatchedTensor` is a *logical* tensor (what the vmapped function sees) backed by a
*physical* tensor ``_value`` that carries the batch in dimension 0: logical shape
``value.shape[1:]``. Each ``vmap`` call is a *level* (1 for the outermost); nested vmaps nest
the wrappers (a level-2 BatchedTensor's value may be a level-1 BatchedTensor), outer wrapper
= higher level, so the innermost physical tensor holds the batch dims of its levels in
increasing order in front.

While a vmap runs, a :class:`VmapMode` (``ember.overrides.TorchFunctionMode``) sees every
ember function and Tensor method called on this thread. A call with no argument batched at
its level passes through (to an outer level, or the kernel); otherwise the op's batching rule
(``ember.ops.registry.batch_rule``: registered per op in ``ember.ops.batching_rules``) runs
on the physical tensors, or, for an op without a rule, the documented fallback: a loop over
the batch (slice, call, stack). Autograd records the physical ops, so ``grad`` inside
``vmap`` differentiates physical tensors (``ember.func``'s transforms).

Outside a vmap nothing here runs: modes cost nothing outside their scope.
"""

from __future__ import annotations

import threading

from .. import overrides as _overrides
from .._tensor import Tensor

__all__ = ["BatchedTensor", "VmapLevel", "VmapMode", "current_levels", "is_batched",
           "unwrap_to_level", "wrap", "to_physical", "from_physical", "levels_of"]

_new = object.__new__
_DISPATCH = _overrides._STATE  # this thread's dispatch state (modes, flags)
_relevant_args = _overrides._relevant_args


class _State(threading.local):
    def __init__(self):
        self.levels: list = []  # active VmapLevel objects, outermost first


_STATE = _State()


def current_levels() -> list:
    """This thread's active vmap levels, outermost first."""
    return _STATE.levels


class VmapLevel:
    """One active ``vmap``: its level number, batch size and randomness mode. Batching rules
    receive it as ``ctx`` and use its helpers."""

    __slots__ = ("level", "size", "randomness")

    def __init__(self, level: int, size: int, randomness: str):
        self.level, self.size, self.randomness = level, size, randomness

    # -- helpers for batching rules ---------------------------------------------------------
    def batched(self, x) -> bool:
        """Whether ``x`` is batched at this level."""
        return type(x) is BatchedTensor and x._level == self.level

    def value(self, x):
        """The physical tensor of ``x`` (batch in dim 0) if batched here, else ``x``."""
        if type(x) is BatchedTensor and x._level == self.level:
            return x._value
        return x

    def ldim(self, x) -> int:
        """The logical rank of a tensor."""
        if type(x) is BatchedTensor and x._level == self.level:
            return x._value.dim() - 1
        return x.dim()

    def materialize(self, x):
        """``x`` as a physical tensor batched in dim 0 (an unbatched ``x`` is expanded)."""
        if type(x) is BatchedTensor and x._level == self.level:
            return x._value
        if passes_through(x):  # a plain tensor: one broadcast view, by its kernel
            return _raw(Tensor.expand)(x, (self.size, *x._data.shape))
        return x.unsqueeze(0).expand((self.size, *x.shape))

    def unwrap(self, tree):
        """``tree`` (args, lists, dicts) with this level's BatchedTensors as their physical
        tensors."""
        return _map_tree(tree, self.value)


class BatchedTensor(Tensor):
    """A tensor seen inside ``vmap``: logical shape ``_value.shape[1:]`` at level
    ``_level``. Ops on it go to the level's :class:`VmapMode`."""

    __slots__ = ("_value", "_level")
    __torch_function__ = _overrides.disabled_torch_function_impl

    # metadata is the logical tensor's
    @property
    def shape(self):
        return self._value.shape[1:]

    def size(self, dim: int | None = None):
        shape = self._value.shape[1:]
        if dim is None:
            return shape
        n = len(shape)
        if not -max(n, 1) <= dim < max(n, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})")
        return shape[dim]

    def dim(self) -> int:
        return self._value.dim() - 1

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._value.dim() - 1

    def numel(self) -> int:
        n = 1
        for s in self._value.shape[1:]:
            n *= s
        return n

    nelement = numel

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    @property
    def requires_grad(self):
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._value.requires_grad = value

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @grad_fn.setter
    def grad_fn(self, value):
        pass

    @property
    def is_leaf(self) -> bool:
        return self._value.is_leaf

    # tensor-valued properties that Tensor does not dispatch: through the ops
    @property
    def real(self):
        import ember

        return ember.real(self)

    @property
    def imag(self):
        import ember

        return ember.imag(self)

    @property
    def data(self):
        return wrap(self._value.data, self._level)

    def is_floating_point(self) -> bool:
        return self._value.is_floating_point()

    def is_complex(self) -> bool:
        return self._value.is_complex()

    def stride(self, dim: int | None = None):
        strides = self._value.stride()[1:]
        return strides if dim is None else strides[dim]

    def is_contiguous(self, *args, **kwargs) -> bool:
        return self._value.is_contiguous(*args, **kwargs)

    def __len__(self) -> int:
        shape = self._value.shape
        if len(shape) == 1:
            raise TypeError("len() of a 0-d tensor")
        return shape[1]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self[i] for i in range(len(self))])

    # data-dependent Python: PyTorch's errors
    def item(self):
        raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't "
                           "support vmap over calling .item() on a Tensor, please try to "
                           "rewrite what you're doing with other operations. If error is "
                           "occurring somewhere inside PyTorch internals, please file a bug "
                           "report.")

    def __bool__(self):
        raise RuntimeError(_DATA_DEPENDENT)

    # (PyTorch converts to a Python number through .item(): its error)
    def __int__(self):
        return self.item()

    __float__ = __index__ = __complex__ = __int__

    def tolist(self):
        raise RuntimeError("vmap: It looks like you're calling .tolist() on a Tensor. We "
                           "don't support vmap over calling .tolist() on a Tensor, please try "
                           "to rewrite what you're doing with other operations.")

    def numpy(self, *, force: bool = False):
        raise RuntimeError("vmap: It looks like you're calling .numpy() on a Tensor. We don't "
                           "support vmap over calling .numpy() on a Tensor, please try to "
                           "rewrite what you're doing with other operations.")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        raise RuntimeError("vmap: backward() is not supported on a tensor inside vmap: "
                           "differentiate with ember.func.grad, vjp or jacrev inside the "
                           "vmapped function instead (vmap(grad(f)))")

    def __repr__(self) -> str:
        value = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n    {value}\n)"

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol):
        raise RuntimeError("vmap: cannot pickle a BatchedTensor (a tensor inside vmap)")


_DATA_DEPENDENT = ("vmap: It looks like you're attempting to use a Tensor in some "
                   "data-dependent control flow. We don't support that yet, please file an "
                   "issue at https://github.com/pytorch/pytorch/issues .")


def wrap(value, level: int) -> BatchedTensor:
    """``value`` (batch in dim 0) as a BatchedTensor of ``level``."""
    t = _new(BatchedTensor)
    t._value = value
    t._level = level
    inner = value
    while type(inner) is BatchedTensor:
        inner = inner._value
    nd = _new(_NoData)  # _NoData(inner._data) without the __init__ call
    nd._array = inner._data
    t._data = nd
    t._device = inner._device
    return t


class _NoData:
    """What a BatchedTensor holds as its array: a kernel reached without dispatch (an op
    module's own function, ``ember.ops.fft_ops.fft_rfft``, rather than ``ember.fft.rfft``)
    gets a clear error instead of silently computing on the physical batch."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    @property
    def dtype(self):
        return self._array.dtype

    @property
    def itemsize(self):
        return self._array.itemsize

    def __getattr__(self, name):
        raise RuntimeError(_UNDISPATCHED)

    def __array__(self, *args, **kwargs):
        raise RuntimeError(_UNDISPATCHED)

    def _undispatched(self, *args, **kwargs):
        raise RuntimeError(_UNDISPATCHED)

    # what an array is used for without an attribute (indexing, arithmetic, len): the same
    __getitem__ = __setitem__ = __len__ = __iter__ = __bool__ = __float__ = __int__ = \
        __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = \
        __rtruediv__ = __neg__ = __pow__ = __matmul__ = __rmatmul__ = __lt__ = __le__ = \
        __gt__ = __ge__ = __eq__ = __ne__ = __array_ufunc__ = __array_function__ = \
        _undispatched
    __hash__ = object.__hash__


_UNDISPATCHED = (
    "vmap: a kernel ran on a tensor inside vmap without going through dispatch: an op "
    "module's own function (ember.ops.*) or a NumPy array taken from the tensor. Call the "
    "public function (`ember.dot`, `F.relu`) or method (`x.dot(y)`) inside vmapped "
    "functions.")


def dispatching(func):
    """The dispatching public version of a raw ember function (``vmap(ember.dot)`` where
    ``ember.dot`` was read before dispatch went on), else ``func`` itself."""
    if _overrides.is_dispatching(func) or getattr(func, "_ember_original", None) is not None:
        return func
    name = getattr(func, "__name__", None)
    if name is None or not (getattr(func, "__module__", None) or "").startswith("ember"):
        return func
    for owner in (*_overrides._NAMESPACES, Tensor):
        w = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if getattr(w, "_ember_original", None) is func:
            return w
    return func


def is_batched(x) -> bool:
    return type(x) is BatchedTensor


def _map_tree(x, f):
    tp = type(x)
    if tp is tuple or tp is list:
        return tp(_map_tree(v, f) for v in x)
    if tp is dict:
        return {k: _map_tree(v, f) for k, v in x.items()}
    if isinstance(x, Tensor):
        return f(x)
    return x


def _any_batched(args, kwargs, level: int) -> bool:
    for a in args:
        tp = type(a)
        if tp is BatchedTensor:
            if a._level == level:
                return True
        elif tp is tuple or tp is list:
            if _any_batched(a, None, level):
                return True
    if kwargs:
        return _any_batched(kwargs.values(), None, level)
    return False


def unwrap_to_level(x, level: int):
    """``x`` without its wrappers of levels >= ``level`` (physical below them)."""
    while type(x) is BatchedTensor and x._level >= level:
        x = x._value
    return x


def levels_of(x) -> list:
    """The vmap levels ``x`` is batched at, innermost wrapper's (lowest) first."""
    out = []
    while type(x) is BatchedTensor:
        out.append(x._level)
        x = x._value
    return out[::-1]


def to_physical(x, levels: list):
    """The physical tensor of ``x`` with one leading dim per level of ``levels`` (VmapLevel
    objects, outermost first), expanding ``x`` over the levels it is not batched at.

    ``x`` batched at active levels outside ``levels`` (vmap over vjp's function: levels
    entered since; or levels a transform's graph does not vary over, see
    ``eager_transforms._Diff``) stays batched there: the result is that physical tensor
    wrapped at those levels, which a backward pass runs as a batch."""
    if type(x) is not BatchedTensor:
        if not levels:
            return x
        # batched at none of them (grad's per-example copy of an unbatched input): one
        # broadcast view in front, what unsqueezing per level and expanding gives
        expand = _raw(Tensor.expand) if passes_through(x) else Tensor.expand
        return expand(x, (*[lv.size for lv in levels], *x.shape))
    phys, have = lift(x)
    if have == [lv.level for lv in levels]:
        return phys
    own = {lv.level for lv in levels}
    extra = [h for h in have if h not in own]
    n = len(extra)
    if extra:
        if not levels:
            return x
        active = {lv.level for lv in _STATE.levels}
        if any(h not in active for h in extra):
            raise RuntimeError("vmap: a tensor of an exited vmap level escaped its vmap")
        # their dims go in front, and the result is wrapped back at them around the
        # physical tensor at ``levels``
        k = len(have)
        front = [i for i, h in enumerate(have) if h not in own]
        kept = [i for i, h in enumerate(have) if h in own]
        if front + kept != list(range(k)):
            phys = _permute(phys, [*front, *kept, *range(k, phys.dim())])
        have = [h for h in have if h in own]
    logical_rank = phys.dim() - n - len(have)
    raw = passes_through(phys)
    unsqueeze = _raw(Tensor.unsqueeze) if raw else Tensor.unsqueeze
    sizes = []
    pos = 0
    for lv in levels:
        if pos < len(have) and have[pos] == lv.level:
            pos += 1
        else:
            phys = unsqueeze(phys, n + len(sizes))
        sizes.append(lv.size)
    if pos != len(have):
        raise RuntimeError("vmap: a tensor of an exited vmap level escaped its vmap")
    expand = _raw(Tensor.expand) if raw else Tensor.expand
    m = n + len(sizes)
    phys = expand(phys, (*phys.shape[:n], *sizes, *phys.shape[m:m + logical_rank]))
    return lower(phys, extra) if extra else phys


def _raw(method):
    """The kernel behind a (possibly dispatching) Tensor method or ember function."""
    return _overrides.undispatched(method) or method


def passes_through(*tensors) -> bool:
    """Whether dispatch would hand a call on exactly these plain tensors straight to its
    kernel: every active mode is a :class:`VmapMode` (each passes a call with nothing batched
    at its level through) and no tensor is a subclass (BatchedTensor or one that overrides).
    The transforms' own bookkeeping on physical tensors then calls the kernels directly."""
    for t in tensors:
        if type(t) is not Tensor:
            return False
    for m in _overrides._STATE.modes:
        if type(m) is not VmapMode:
            return False
    return True


def from_physical(phys, levels: list):
    """``phys`` (one leading dim per level of ``levels``) wrapped back at those levels. A
    ``phys`` batched at other levels (``to_physical`` kept them) gets all its batch dims in
    level order, the wrappers too."""
    if type(phys) is BatchedTensor and levels:
        p, later = lift(phys)
        n, m = len(later), len(levels)
        # dims now: ``later``'s, then ``levels``'; wrapped back in level order
        have = later + [lv.level for lv in levels]
        order = sorted(range(n + m), key=have.__getitem__)
        if order != list(range(n + m)):
            p = _permute(p, [*order, *range(n + m, p.dim())])
        return lower(p, [have[i] for i in order])
    for lv in levels:
        phys = wrap(phys, lv.level)
    return phys


def _permute(p, dims):
    return (_raw(Tensor.permute) if passes_through(p) else Tensor.permute)(p, dims)


# -- the mode -------------------------------------------------------------------------------------

class VmapMode(_overrides.TorchFunctionMode):
    """Routes this thread's ember calls inside one ``vmap`` level to batching rules."""

    def __init__(self, lvl: VmapLevel):
        self.lvl = lvl

    #: the handler never reads ``types``: the mode call skips computing them
    _ember_reads_types = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # most calls inside a vmap pass through (the grad machinery's and backward's ops on
        # physical tensors): the scan for an argument batched at this level is inlined
        lvl = self.lvl
        level = lvl.level
        for a in args:
            tp = type(a)
            if tp is BatchedTensor:
                if a._level == level:
                    return dispatch(lvl, func, args, kwargs or {})
            elif (tp is tuple or tp is list) and _any_batched(a, None, level):
                return dispatch(lvl, func, args, kwargs or {})
        if kwargs:
            if _any_batched(kwargs.values(), None, level):
                return dispatch(lvl, func, args, kwargs)
            if lvl.randomness != "same" and _is_random_factory(func):
                return _random_factory(lvl, func, args, kwargs)
            return func(*args, **kwargs)
        if lvl.randomness != "same" and _is_random_factory(func):
            return _random_factory(lvl, func, args, {})
        if not _DISPATCH.modes:  # the innermost mode: what func's dispatch would do next
            fn = _overrides.undispatched(func)
            if fn is not None and not _DISPATCH.all_disabled and _plain(args):
                return fn(*args)
        return func(*args)


def _plain(args) -> bool:
    """Whether no argument takes part in ``__torch_function__`` dispatch (the common call:
    plain tensors and numbers, checked inline; anything else asks ``overrides``)."""
    for a in args:
        tp = type(a)
        if tp is not Tensor and tp is not int and tp is not float and tp is not bool \
                and a is not None:
            return not _relevant_args(args, None)
    return True


def dispatch(lvl: VmapLevel, func, args, kwargs):
    """Run ``func`` on batched arguments at level ``lvl``: its rule, or the loop."""
    key = _KEYS.get(func)
    if key is None:
        key = _op_key(func)
    if kwargs and kwargs.get("out") is not None:
        raise RuntimeError(f"Batching rule not implemented for aten::{key}.out; the fallback "
                           f"path doesn't work on out= or view ops.")
    if key in _MAYBE_RANDOM and _draws(key, func, args, kwargs):
        if lvl.randomness == "error":
            raise RuntimeError(_RANDOM_ERROR)
        if lvl.randomness == "same":
            if key in _SAME_UNSUPPORTED and _any_batched(
                    args[1:] if key == "bernoulli_" else args, kwargs, lvl.level):
                raise RuntimeError(_SAME_BATCHED_ERROR)
            return _loop(lvl, func, args, kwargs, key, same_random=True)
    if key in _DYNAMIC_SHAPE:
        _refuse_dynamic_shape(lvl, key, args, kwargs)
    info = _REGISTRY.OPS.get(key)  # registry.batch_rule, inlined
    rule = info.batch_rule if info is not None else None
    if rule is None:
        rule = _REGISTRY.BATCH_RULES.get(key)
    if rule is not None:
        out = rule(lvl, func, args, kwargs)
        if out is not NotImplemented:
            return _wrap_out(out, lvl.level)
    return _loop(lvl, func, args, kwargs, key)


def _op_key(func) -> str:
    """``registry.op_key(func)``, remembered (``_KEYS``); binds the registry and the set of
    random ops on first use (their modules import after this one)."""
    global _REGISTRY, _MAYBE_RANDOM
    from ..ops import registry

    if _REGISTRY is None:  # the random set first: a thread that sees the registry sees it
        _MAYBE_RANDOM = _random_ops() | _RANDOM_INPLACE
        _REGISTRY = registry
    if len(_KEYS) > 4096:  # callables made on the fly (wrappers of wrappers): stay small
        _KEYS.clear()
    key = _KEYS[func] = registry.op_key(func)
    return key


#: ``ember.ops.registry`` once a call was dispatched (``_op_key``)
_REGISTRY = None
#: the op keys that may draw random numbers (random ops, factories and in-place fills)
_MAYBE_RANDOM: frozenset = frozenset()


#: op key (``registry.op_key``) per callable that dispatch handed over
_KEYS: dict = {}


def _wrap_out(out, level: int):
    if isinstance(out, Tensor):
        if type(out) is BatchedTensor and out._level == level:
            return out
        return wrap(out, level)
    tp = type(out)
    if tp is tuple or tp is list:
        return tp(_wrap_out(o, level) for o in out)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return tp(*(_wrap_out(o, level) for o in out))
    if tp is dict:  # jacrev with respect to a dict of parameters
        return {k: _wrap_out(v, level) for k, v in out.items()}
    return out


# -- the fallback: a loop over the batch ----------------------------------------------------------

def _is_inplace(key: str) -> bool:
    return key.endswith("_") and not key.endswith("__")


def _loop(lvl: VmapLevel, func, args, kwargs, key: str, same_random: bool = False):
    """The fallback for an op without a batching rule: call it once per example on the
    slices of the batched arguments and stack the results (correct, but one call per
    example: give the op a rule in ``ember.ops.batching_rules`` to make it fast)."""
    level = lvl.level
    if _is_inplace(key) and args:
        self_arg = args[0]
        if not lvl.batched(self_arg):
            _inplace_error(lvl, self_arg, args, kwargs, key, func)
    states = _generator_states(args, kwargs) if same_random else ()
    results = []
    for b in range(lvl.size):
        for gen, state in states:  # "same" randomness: every example draws the same numbers
            gen.set_state(state)

        def pick(x, b=b):
            if type(x) is BatchedTensor and x._level == level:
                return x._value[b]
            return x

        results.append(func(*_map_tree(args, pick), **_map_tree(kwargs, pick)))
    if _is_inplace(key) and args:
        return args[0]
    return _wrap_out(_stack_results(results, key), level)


#: ops whose output shape depends on the values, which PyTorch refuses under vmap whatever
#: the examples' shapes (``_refuse_dynamic_shape``); ``argwhere``, ``bincount`` and the like
#: have no such rule there: its fallback loops and fails only where the shapes differ
_DYNAMIC_SHAPE = frozenset({"nonzero", "unique", "unique_consecutive", "where",
                            "masked_select"})


def _refuse_dynamic_shape(lvl, key: str, args, kwargs):
    """PyTorch's refusal of a value-dependent shape under vmap: ``nonzero`` (``as_tuple``:
    ``nonzero_numpy`` has no fallback), ``unique`` (``_unique2``, or ``unique_dim`` with a
    dim), ``unique_consecutive``, ``where(condition)``, ``masked_select`` over a batched
    mask (a batched input alone selects the same elements of each example)."""
    if key == "where":
        if len(args) + len(kwargs) != 1:
            return  # where(condition, input, other): shapes known
    elif key == "masked_select":
        mask = args[1] if len(args) > 1 else kwargs.get("mask")
        if not lvl.batched(mask):
            return
        raise RuntimeError("vmap: Attempted to vmap over `mask` in torch.masked_select(self, "
                           "mask) We cannot support this because for each batch this would "
                           "return a differently shaped Tensor. Please file an issue at "
                           "https://github.com/pytorch/pytorch/issues if you need this "
                           "feature.")
    elif key == "nonzero" and kwargs.get("as_tuple"):
        raise RuntimeError("Batching rule not implemented for aten::nonzero_numpy. We could "
                           "not generate a fallback.")
    elif key == "unique":
        key = "_unique2" if kwargs.get("dim") is None else "unique_dim"
    _dynamic_shape_error(key)


def _dynamic_shape_error(key: str):
    """PyTorch's error for an op whose output shape depends on the values (``nonzero``, a
    boolean mask): the loop got examples of different shapes, which no batch can hold."""
    if key in ("index", "getitem", "__getitem__"):
        raise RuntimeError("vmap: We do not support batching operators that can support "
                           "dynamic shape. Attempting to batch over indexing with a boolean "
                           "mask.")
    raise RuntimeError(f"vmap: We do not support batching operators that can output dynamic "
                       f"shape. Attempted to vmap over aten::{key}. Please file an issue at "
                       f"https://github.com/pytorch/pytorch/issues if you need this feature.")


def _generator_states(args, kwargs) -> list:
    """``(generator, state)`` of the default generators the call may draw from: the CPU's,
    the default device's and those of its tensors' devices."""
    from .. import _random
    from .._device import get_default_device

    gens = [_random.default_generator]
    devices = [t._device for t in (*args, *kwargs.values()) if isinstance(t, Tensor)]
    devices.append(get_default_device())
    for dev in devices:
        if dev.type != "cpu":
            gen = _random.default_generator_for(dev)
            if all(g is not gen for g in gens):
                gens.append(gen)
    return [(g, g.get_state()) for g in gens]


#: in-place ops whose PyTorch batching rule names them "inplace arithmetic" in its error
_INPLACE_ARITHMETIC = frozenset({"sub_", "subtract_", "mul_", "multiply_", "div_", "divide_",
                                 "true_divide_", "masked_fill_", "copy_", "clamp_min_",
                                 "clamp_max_"})
#: the ones PyTorch names as they are; any other in-place op is ``aten::<name>`` (its fallback)
_INPLACE_NAMED = {"fill_": "fill_", "index_put_": "index_put_", "index_add_": "index_add_",
                  "bernoulli_": "inplace bernoulli"}


def _inplace_error(lvl, self_arg, args, kwargs, key: str = "add_", func=None):
    """PyTorch's error for an in-place op on a tensor not batched at this level with a batched
    argument (the result would need the batch dim ``self`` does not have)."""
    if key == "add_":  # PyTorch's add_ reaches its kernel: the broadcast error
        _broadcast_error(lvl, self_arg, args, kwargs)
    if getattr(func, "__name__", None) == "__setitem__":
        key = "copy_" if _basic_index(args[1]) else "index_put_"
        if key == "copy_" and lvl.batched(args[2]) and lvl.ldim(args[2]) == 0 \
                and self_arg[args[1]].dim():
            key = "fill_"  # a batched 0-dim value into a view with dims: PyTorch fills it
    if key in _INPLACE_ARITHMETIC:
        name, where = "inplace arithmetic", "in a vmap"
    elif key in _INPLACE_NAMED:
        name, where = _INPLACE_NAMED[key], "in a vmap"
    else:
        name, where = f"aten::{key}", f"at level {lvl.level}"
    raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists "
                       f"a Tensor `other` in extra_args that has more elements than `self`. "
                       f"This happened due to `other` being vmapped over but `self` not being "
                       f"vmapped over {where}. Please try to use out-of-place operators "
                       f"instead of {name}. If said operator is being called inside the "
                       f"PyTorch framework, please file a bug report instead.")


def _basic_index(index) -> bool:
    """Whether ``x[index] = v`` writes through a view (ints, slices, None, Ellipsis)."""
    parts = index if type(index) is tuple else (index,)
    return all(p is None or p is Ellipsis or type(p) in (int, slice, bool) for p in parts)


def _broadcast_error(lvl, self_arg, args, kwargs):
    shape = list(self_arg.shape) if isinstance(self_arg, Tensor) else []
    logical = [lvl.value(a) for a in (*args[1:], *kwargs.values()) if lvl.batched(a)]
    bshape = [lvl.size, *shape]
    if logical:
        other = logical[0].shape[1:]
        n = max(len(shape), len(other))
        a = [1] * (n - len(shape)) + shape
        o = [1] * (n - len(other)) + list(other)
        bshape = [lvl.size] + [max(x, y) for x, y in zip(a, o)]
    raise RuntimeError(f"output with shape [{', '.join(map(str, shape))}] doesn't match the "
                       f"broadcast shape [{', '.join(map(str, bshape))}]")


def _stack_results(results, key: str = ""):
    import ember

    first = results[0]
    if isinstance(first, Tensor):
        shape = first.shape
        if key in ("index", "getitem", "__getitem__"):
            for r in results:
                if isinstance(r, Tensor) and r.shape != shape:
                    _dynamic_shape_error(key)
        return ember.stack(results)  # examples of other shapes: PyTorch's fallback's error
    tp = type(first)
    if tp is tuple or tp is list or (isinstance(first, tuple) and hasattr(first, "_fields")):
        cols = [_stack_results([r[i] for r in results], key) for i in range(len(first))]
        return tp(*cols) if hasattr(first, "_fields") else tp(cols)
    if tp is dict and all(type(r) is dict and r.keys() == first.keys() for r in results):
        return {k: _stack_results([r[k] for r in results], key) for k in first}
    if first is None or all(r == first for r in results[1:]):
        return first
    raise RuntimeError(_DATA_DEPENDENT)


# -- randomness -----------------------------------------------------------------------------------

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")

#: random ops that take no tensor to batch over (``ember.randn(3)`` inside vmap)
_RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "normal", "poisson",
                               "rand_like", "randn_like", "randint_like", "bernoulli",
                               "multinomial", "binomial", "dropout1d", "dropout2d",
                               "dropout3d"})
_RANDOM_INPLACE = frozenset({"uniform_", "normal_", "bernoulli_", "random_", "exponential_",
                             "cauchy_", "log_normal_", "geometric_"})


def _random_ops() -> frozenset:
    from ..ops.registry import OPS

    return frozenset(n for n, i in OPS.items() if i.random) | _RANDOM_FACTORIES


class _LazyRandom:
    value = None

    def __contains__(self, key) -> bool:
        if self.value is None:
            self.value = _random_ops() | _RANDOM_INPLACE
        return key in self.value


_RANDOM_OPS = _LazyRandom()


def _draws(key: str, func, args, kwargs) -> bool:
    """Whether a random op's call draws numbers (dropout in eval mode or with p=0 does
    not; sdpa only with a dropout probability)."""
    if "dropout" not in key and key not in ("scaled_dot_product_attention", "rrelu", "rrelu_"):
        return True
    from ..ops.batching_rules import _bind

    ba = _bind(func, args, kwargs)
    if ba is None:
        return True
    a = ba.arguments
    if key == "scaled_dot_product_attention":
        return bool(a.get("dropout_p", 0.0))
    if a.get("training", a.get("train", True)) is False:
        return False
    return a.get("p", 0.5) != 0


_RANDOM_BY_FN: dict = {}


def _is_random_factory(func) -> bool:
    fn = getattr(func, "_ember_original", func)
    known = _RANDOM_BY_FN.get(fn)
    if known is None:
        from ..ops.registry import op_key

        known = _RANDOM_BY_FN[fn] = op_key(func) in _RANDOM_OPS
    return known


#: random ops whose draws depend on their tensors' values: PyTorch has no "same" for them
_SAME_UNSUPPORTED = frozenset({"bernoulli", "bernoulli_", "poisson", "multinomial", "normal",
                               "binomial"})
_SAME_BATCHED_ERROR = ("Vmap does not currently support same randomness with a batched tensor "
                       "input. Please file an issue with functorch")
_INPLACE_DIFFERENT_ERROR = ("vmap: Cannot ask for different inplace randomness on an unbatched "
                            "tensor. This will appear like same randomness. If this is "
                            "necessary for your usage, please file an issue with functorch.")


def _random_factory(lvl: VmapLevel, func, args, kwargs):
    """A random op with nothing batched: an error, or (``"different"``) a draw per example,
    as PyTorch draws them: one call with the batch size in front of the shape where the op
    has one (so the numbers, and their order under nested vmaps, are PyTorch's), else one
    call per example."""
    key = _KEYS.get(func) or _op_key(func)
    if not _draws(key, func, args, kwargs):
        return func(*args, **kwargs)
    if lvl.randomness == "error":
        raise RuntimeError(_RANDOM_ERROR)
    if key in _RANDOM_INPLACE:
        raise RuntimeError(_INPLACE_DIFFERENT_ERROR)
    out = _draw_batched(lvl.size, key, func, args, kwargs)
    if out is not None:
        return wrap(out, lvl.level)
    results = [func(*args, **kwargs) for _ in range(lvl.size)]
    return _wrap_out(_stack_results(results), lvl.level)


def _draw_batched(n: int, key: str, func, args, kwargs):
    """``func`` called once for ``n`` examples (the batch dim in front), or None where the
    call has no size to extend."""
    if key in ("rand", "randn"):
        if "size" in kwargs:
            if args:
                return None
            kwargs = dict(kwargs, size=(n, *kwargs["size"]))
            return func(**kwargs)
        size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        return func(n, *size, **kwargs)
    if key == "randint":
        if "size" in kwargs:
            return func(*args, **dict(kwargs, size=(n, *kwargs["size"])))
        if not args or not isinstance(args[-1], (tuple, list)):
            return None
        return func(*args[:-1], (n, *args[-1]), **kwargs)
    if key == "normal":
        ba = [*args, *kwargs.values()]
        if any(isinstance(a, Tensor) for a in ba):
            return None
        if len(args) >= 3:
            return func(*args[:2], (n, *args[2]), *args[3:], **kwargs)
        if "size" in kwargs:
            return func(*args, **dict(kwargs, size=(n, *kwargs["size"])))
        return None
    if key in ("rand_like", "randn_like", "randint_like") and args \
            and type(args[0]) is Tensor:
        x = args[0]
        return func(x.unsqueeze(0).expand((n, *x.shape)), *args[1:], **kwargs)
    return None


# -- backward on batched gradients ----------------------------------------------------------------

#: node classes whose backward reads arrays (or branches on values): run per example
_PER_EXAMPLE_NODES: set = set()


def has_batched(grads) -> bool:
    """Whether any of ``grads`` (tensors or None) is a BatchedTensor."""
    return any(type(g) is BatchedTensor for g in grads)


def backward_node(node, grad, call=None):
    """One node's backward inside the engine when gradients flowing back are batched by vmap
    (``jacrev``, ``vmap`` over ``vjp``'s function or over ``autograd.grad``): one call on
    the whole batch, the node's backward ops dispatching to their batching rules, as
    PyTorch batches its backward formulas. A backward that reads arrays or branches on
    values (a vmap error) runs once per example instead, its class remembered; so does a
    custom ``autograd.Function``'s (user code, as before). ``call(node, grad)`` replaces
    ``node.backward`` (anomaly mode, the profiler)."""
    cls = node.__class__
    if not has_batched(grad if isinstance(grad, list) else (grad,)):
        out = node.backward(grad) if call is None else call(node, grad)
        return out if out.__class__ is tuple else (out,)
    if cls not in _PER_EXAMPLE_NODES and not hasattr(cls, "_forward_cls"):
        try:
            out = node.backward(grad) if call is None else call(node, grad)
        except RuntimeError as exc:
            if not str(exc).startswith("vmap:"):
                raise
            _PER_EXAMPLE_NODES.add(cls)
        else:
            return out if out.__class__ is tuple else (out,)
    return _node_per_example(node, grad, call)


def _node_per_example(node, grad, call):
    """The node's backward as an op without a batching rule: vmap's loop over the innermost
    batched level (an outer level still batched takes ``backward_node`` again)."""
    flat = grad if isinstance(grad, list) else [grad]
    level = max(g._level for g in flat if type(g) is BatchedTensor)
    lvl = next(lv for lv in _STATE.levels if lv.level == level)
    return _loop(lvl, lambda g: backward_node(node, g, call), (grad,), {}, "backward")


def lift(x):
    """``(physical, levels)`` of a tensor batched by vmap: the plain tensor below every
    wrapper, its leading dims one per level (in ``levels``' order), for backward code that
    handles leading batch dims itself; ``lower(physical, levels)`` wraps it back."""
    return unwrap_to_level(x, 0), levels_of(x)


def lower(phys, levels):
    """``phys`` wrapped back at ``levels`` (what ``lift`` took off)."""
    for level in levels:
        phys = wrap(phys, level)
    return phys


def on_physical(t, fn):
    """``fn(physical, k)`` for a tensor batched by vmap (``k`` leading batch dims, which an
    array kernel run over any leading dims treats as more batch), wrapped back at ``t``'s
    levels: backward code's form for a batched gradient."""
    phys, levels = lift(t)
    return lower(fn(phys, len(levels)), levels)
