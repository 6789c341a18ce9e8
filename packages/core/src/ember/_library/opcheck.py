"""``opcheck``: is a custom op registered correctly (``torch.library.opcheck``)?

The checks are PyTorch's, run the way Ember can run them:

* ``test_schema``: the op writes only the arguments its schema marks as written
  (``Tensor(a!)``), and its outputs are neither its inputs nor views of them or of each other
  (PyTorch's SchemaCheckMode);
* ``test_autograd_registration``: with inputs that require grad, an op without an autograd
  registration (``register_autograd``, an Autograd or CompositeImplicitAutograd kernel) does
  not return outputs that require grad (they would come from a kernel that recorded autograd
  history by itself, which ``register_autograd`` should express);
* ``test_faketensor``: the op has a fake implementation, and it gives outputs of the real
  kernel's shapes, dtypes, devices, strides and storage offsets (on copies of the real
  inputs: Ember has no FakeTensor);
* ``test_aot_dispatch_dynamic`` / ``test_aot_dispatch_static``: ``ember.compile`` of a call of
  the op gives the eager outputs, and the eager gradients when inputs require grad.
"""

from __future__ import annotations

import functools

from .._tensor import Tensor
from . import ops as _ops

__all__ = ["opcheck", "OpCheckError", "DEFAULT_TEST_UTILS"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """An ``opcheck`` test failed (``raise_exception=True``)."""


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=DEFAULT_TEST_UTILS,
            raise_exception: bool = True, rtol: float | None = None,
            atol: float | None = None) -> dict:
    """Check that ``op``'s registrations are consistent, on the sample ``args``/``kwargs``.

    Returns ``{test name: "SUCCESS" or the exception}``; with ``raise_exception`` (the
    default) the first failure raises :class:`OpCheckError`. ``test_utils`` names the tests
    (default: all but ``test_aot_dispatch_static``; ``"ALL"``: all). Call it with several
    representative inputs, with ``requires_grad=True`` ones if the op supports autograd, on
    each device it supports; it tests the registrations, ``gradcheck`` tests the formula."""
    if (rtol is None) ^ (atol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify "
                         "both")
    kwargs = {} if kwargs is None else kwargs
    opdef = _opdef_of(op)
    if test_utils == "ALL":
        test_utils = tuple(ALL_TEST_UTILS)
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not isinstance(test_utils, (tuple, list)) or not set(test_utils) <= set(ALL_TEST_UTILS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to "
                         f"be subset of {tuple(ALL_TEST_UTILS)} but it was not")
    results = {}
    for name in test_utils:
        try:
            ALL_TEST_UTILS[name](opdef, args, kwargs, rtol=rtol, atol=atol)
            results[name] = "SUCCESS"
        except Exception as ex:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {ex} (scroll up for "
                                   "stack trace)") from ex
            results[name] = ex
    return results


def _opdef_of(op):
    from .custom_ops import CustomOpDef

    if isinstance(op, CustomOpDef):
        return op._opdef
    if isinstance(op, _ops.OpOverloadPacket):
        overloads = op.overloads()
        if len(overloads) != 1:
            raise ValueError(f"opcheck(op, ...): {op} has overloads {overloads}; pass one of "
                             f"them (e.g. {op}.{overloads[0]})")
        op = getattr(op, overloads[0])
    if isinstance(op, _ops.OpOverload):
        return op._opdef
    raise ValueError("opcheck(op, ...): op must be instance of an OpOverload, e.g. "
                     f"ember.ops.mylib.foo.default, or a CustomOpDef, got {type(op)}")


# -- helpers ------------------------------------------------------------------------------------

def _clone(t: Tensor) -> Tensor:
    c = t.detach().clone()
    if t.requires_grad:
        c.requires_grad_(True)
    return c


def _copy_inputs(args, kwargs):
    def copy(v):
        if isinstance(v, Tensor):
            return _clone(v)
        if isinstance(v, (list, tuple)):
            return type(v)(copy(x) for x in v)
        return v

    return tuple(copy(a) for a in args), {k: copy(v) for k, v in kwargs.items()}


def _flat_tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _flat_tensors(v)


def _named_inputs(opdef, args, kwargs):
    """``(argument, tensor)`` for each tensor argument of the call, by schema name."""
    bound_args, bound_kwargs = opdef.schema.bind(args, kwargs)
    out = []
    for i, a in enumerate(opdef.schema.arguments):
        v = bound_kwargs[a.name] if a.kwarg_only else bound_args[i]
        for t in _flat_tensors([v]):
            out.append((a, t))
    return out


def _same_values(a: Tensor, b: Tensor) -> bool:
    import ember

    if a.shape != b.shape:
        return False
    a, b = a.detach(), b.detach()
    same = a == b
    if a.dtype.is_floating_point or a.dtype.is_complex:
        same = same | ((a != a) & (b != b))
    return bool(ember.all(same))


# -- the checks -----------------------------------------------------------------------------

def schema_check(opdef, args, kwargs, *, rtol=None, atol=None) -> None:
    from .ops import _storage_keys

    args, kwargs = _copy_inputs(args, kwargs)
    inputs = _named_inputs(opdef, args, kwargs)
    before = [(a, t, t.detach().clone()) for a, t in inputs]
    out = opdef.overload(*args, **kwargs)
    for a, t, snap in before:
        if not a.is_write and not _same_values(t, snap):
            name = "input" if a.name == "self" else a.name
            raise RuntimeError(f"Argument {name} is not defined as mutable but was mutated")
    outs = list(_flat_tensors(out if isinstance(out, (tuple, list)) else (out,)))
    for j, o in enumerate(outs):
        for a, t in inputs:
            name = "input" if a.name == "self" else a.name
            if o is t:
                raise RuntimeError("Dispatcher operators below autograd are not allowed to "
                                   f"directly return inputs.\nHowever, we found that "
                                   f"`outputs[{j}] is {name}")
            if a.alias_info is None and set(_storage_keys(o)) & set(_storage_keys(t)):
                raise RuntimeError(f"Argument {name} is not defined to alias output but was "
                                   "aliasing")
        for i in range(j):
            if set(_storage_keys(outs[i])) & set(_storage_keys(o)):
                raise RuntimeError(f"Outputs {i} and {j} alias unexpectedly")


def autograd_registration_check(opdef, args, kwargs, *, rtol=None, atol=None) -> None:
    args, kwargs = _copy_inputs(args, kwargs)
    tensors = list(_flat_tensors((*args, *kwargs.values())))
    if not any(t.requires_grad for t in tensors):
        return  # nothing to test without inputs that require grad (PyTorch skips too)
    bound_args, bound_kwargs = opdef.schema.bind(args, kwargs)
    if opdef.has_autograd(opdef.device_type(bound_args, bound_kwargs)):
        return
    prev = _ops.STATE.fallback
    _ops.STATE.fallback = "nothing"
    try:
        out = opdef.overload(*args, **kwargs)
    finally:
        _ops.STATE.fallback = prev
    ids = {id(t) for t in tensors}
    outs = _flat_tensors(out if isinstance(out, (tuple, list)) else (out,))
    if any(o.requires_grad and id(o) not in ids for o in outs):
        raise AssertionError(
            f"{opdef.key}: at least one output of this operator has requires_grad=True but the "
            "operator does not have an autograd kernel defined at an autograd key (e.g. "
            "DispatchKey::Autograd). This could mean that you have incorrectly registered an "
            "autograd kernel to a non-Autograd DispatchKey, which may lead to silently "
            "incorrect results. If your operator consists of regular PyTorch operations, "
            "consider not using an operator at all or registering your operator as "
            "CompositeImplicitAutograd. If you have an autograd.Function registered to a "
            "backend (CPU/CUDA/XPU) key, the correct location for it is the Autograd key.")


def fake_check(opdef, args, kwargs, *, rtol=None, atol=None) -> None:
    from ..autograd.grad_mode import no_grad
    from .fake_impl import FakeImplCtx, set_ctx_getter

    if opdef.kernel("implicit") is not None and opdef.kernel("default") is None:
        return  # a composite op decomposes into ops that have fake kernels
    fake = opdef.fake_kernel()
    if fake is None:
        raise RuntimeError(f"{opdef.key}: there is no fake impl registered for this operator "
                           "(ember.library.register_fake). It is necessary for "
                           "torch.compile/export/fx tracing to work in PyTorch (Ember's "
                           "compile and export run the real kernel)")
    real_args, real_kwargs = _copy_inputs(args, kwargs)
    with no_grad():
        real = opdef.overload(*real_args, **real_kwargs)
    fake_args, fake_kwargs = _copy_inputs(args, kwargs)
    fake_args, fake_kwargs = opdef.schema.bind(fake_args, fake_kwargs)
    ctx = FakeImplCtx(opdef.overload)
    with no_grad(), set_ctx_getter(lambda: ctx):
        got = fake(*fake_args, **fake_kwargs)
    _compare_meta(opdef, real, got, ctx.dynamic)


def _compare_meta(opdef, real, fake, dynamic: bool) -> None:
    def as_list(v):
        return list(v) if isinstance(v, (tuple, list)) else [v]

    reals, fakes = as_list(real), as_list(fake)
    where = (f"When comparing the output of {opdef.key} on the fake impl and on concrete "
             "Tensors, found")
    if len(reals) != len(fakes):
        raise RuntimeError(f"{where} {len(fakes)} outputs from the fake impl and "
                           f"{len(reals)} from the kernel")
    for i, (r, f) in enumerate(zip(reals, fakes)):
        if isinstance(r, (list, tuple)):
            _compare_meta(opdef, r, f, dynamic)
            continue
        if not isinstance(r, Tensor):
            if isinstance(f, Tensor):
                raise RuntimeError(f"{where} a Tensor for output {i} from the fake impl but "
                                   f"a {type(r).__name__} from the kernel")
            continue
        if not isinstance(f, Tensor):
            raise RuntimeError(f"{where} a {type(f).__name__} for output {i} from the fake "
                               "impl but a Tensor from the kernel")
        if dynamic and r.dim() != f.dim() or not dynamic and r.shape != f.shape:
            raise RuntimeError(f"{where} mismatched tensor metadata for output {i}: Shapes "
                               f"{r.shape} and {f.shape} are not equal!")
        if r.dtype != f.dtype:
            raise RuntimeError(f"{where} mismatched tensor metadata for output {i}: Dtypes "
                               f"{r.dtype} and {f.dtype} are not equal!")
        if r.device != f.device:
            raise RuntimeError(f"{where} mismatched tensor metadata for output {i}: Devices "
                               f"{r.device} and {f.device} are not equal!")
        if dynamic or r.layout != f.layout or r.is_sparse or r.numel() == 0:
            continue
        # PyTorch's compare_tensor_meta(check_strides=True): the strides of the dimensions
        # longer than 1, then the storage offset (a fake kernel must match both)
        rs, fs = r.stride(), f.stride()
        for d in range(r.dim()):
            if r.shape[d] > 1 and rs[d] != fs[d]:
                raise RuntimeError(f"{where} mismatched tensor metadata for output {i}: Stride "
                                   f"mismatch! Strides are {tuple(rs)} and {tuple(fs)} "
                                   f"(mismatched at {d})!")
        if r.storage_offset() != f.storage_offset():
            raise RuntimeError(f"{where} mismatched storage offset for output {i}: Storage "
                               f"offsets are {r.storage_offset()} and {f.storage_offset()}!")


def compile_check(opdef, args, kwargs, *, dynamic: bool, rtol=None, atol=None) -> None:
    """``ember.compile`` of a call of the op against the eager call: the outputs (under
    ``no_grad``), then, when inputs require grad, the gradients of a compiled training step
    (``loss.backward()`` inside the compiled function)."""
    import ember
    from ember.testing import assert_close

    tensors = list(_flat_tensors((*args, *kwargs.values())))

    def rebuild(values, it):
        out = []
        for v in values:
            if isinstance(v, Tensor):
                out.append(next(it).clone())
            elif isinstance(v, (list, tuple)):
                out.append(type(v)(rebuild(v, it)))
            else:
                out.append(v)
        return out

    def func(*ts):
        it = iter(ts)
        call_args = rebuild(args, it)
        call_kwargs = dict(zip(kwargs, rebuild(list(kwargs.values()), it)))
        return opdef.overload(*call_args, **call_kwargs)

    def outputs(out):
        return list(_flat_tensors(out if isinstance(out, (tuple, list)) else (out,)))

    close = functools.partial(assert_close, rtol=rtol, atol=atol, equal_nan=True)
    with ember.no_grad():
        eager = outputs(func(*[t.detach().clone() for t in tensors]))
        compiled = outputs(ember.compile(func, dynamic=dynamic)(
            *[t.detach().clone() for t in tensors]))
    if len(eager) != len(compiled):
        raise AssertionError(f"{opdef.key}: ember.compile gave {len(compiled)} outputs, eager "
                             f"{len(eager)}")
    for e, c in zip(eager, compiled):
        close(c, e)
    if not any(t.requires_grad for t in tensors):
        return

    def step(*ts):
        outs = [o for o in outputs(func(*ts)) if o.requires_grad]
        if not outs:
            return None
        loss = outs[0].sum()
        for o in outs[1:]:
            loss = loss + o.sum()
        loss.backward()
        return loss.detach()

    def grads_of(fn):
        leaves = [_clone(t) for t in tensors]
        fn(*leaves)
        return [t.grad for t in leaves]

    try:
        eager_grads = grads_of(step)
    except RuntimeError as exc:
        if "no autograd formula was registered" in str(exc):
            return  # not differentiable: no gradients to compare (PyTorch's "auto")
        raise
    compiled_grads = grads_of(ember.compile(step, dynamic=dynamic))
    for i, (g, cg) in enumerate(zip(eager_grads, compiled_grads)):
        if (g is None) != (cg is None):
            raise AssertionError(f"{opdef.key}: the gradient of tensor input {i} is None in "
                                 f"{'eager' if g is None else 'ember.compile'} only")
        if g is not None:
            close(cg, g)


ALL_TEST_UTILS = {
    "test_schema": schema_check,
    "test_autograd_registration": autograd_registration_check,
    "test_faketensor": fake_check,
    "test_aot_dispatch_static": functools.partial(compile_check, dynamic=False),
    "test_aot_dispatch_dynamic": functools.partial(compile_check, dynamic=True),
}
