"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``
(``torch.func``'s API, return structures and errors).

Each transform differentiates *physical* tensors: an input it differentiates becomes a fresh
tensor that requires grad, with one leading dim per active vmap level. An input unbatched at
an active level is expanded over that batch first (a per-example copy), so inside ``vmap``
``d(sum of the per-example outputs)/d(copy)`` is the per-example gradient: batching rules
never mix examples. ``jvp`` and ``jacfwd`` use the double-vjp trick (the gradient of a
vector-Jacobian product ``u -> J^T u`` with respect to ``u`` is ``J``), exact because
backward formulas are written in differentiable Tensor ops.

Nesting (``grad(grad(f))``, ``jacfwd(jacrev(f))``) keeps the graph: a transform running
inside another one (or on inputs that already require grad) differentiates with
``create_graph=True``; otherwise its results are detached, as ``torch.func`` returns them.
"""

from __future__ import annotations

import functools
import threading
import types as _types

from .. import autograd as _autograd
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from . import _batched, _interpreter
from ._pytree import tree_flatten, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


#: ``Tensor.detach``'s kernel (what dispatch runs for a plain tensor when only vmap modes are on)
_DETACH = _batched._raw(Tensor.detach)
_REQUIRES_GRAD_ = _batched._raw(Tensor.requires_grad_)
_VIEW_AS = _batched._raw(Tensor.view_as)


class _Depth(threading.local):
    value = 0


_DEPTH = _Depth()


# -- under ember.compile's capture -------------------------------------------------------------

def _capture():
    """The ``ember.compile`` capture running on this thread (a compiled function's first
    call), or None."""
    from .._compile._capture import current_compile

    return current_compile()


def _outside_capture(cap, api: str, fn, args, kwargs):
    """``fn(*args, **kwargs)`` with the capture off, on the real tensors: the transforms
    differentiate with ``autograd.grad`` over graphs the capture does not record (their
    gradients came out as zeros), so a transform is a graph break, as in PyTorch's dynamo
    where it cannot inline one, and the entry runs eagerly."""
    from .._compile._capture import _suspended

    cap.graph_break(f"torch.func.{api} is not compiled")
    args, kwargs = _real_tree(cap, (args, kwargs))
    with _suspended(cap):
        return fn(*args, **kwargs)


def _uncaptured(api: str, body):
    """``body`` run outside a running compile capture (``_outside_capture``); a closure of
    its own, so that ``body`` needs no reference to itself (a cycle per call)."""

    def run(*args, **kwargs):
        cap = _capture()
        if cap is not None:
            return _outside_capture(cap, api, body, args, kwargs)
        return body(*args, **kwargs)

    return run


def _real_tree(cap, tree):
    """``tree`` with the capture's traced tensors as their real tensors, also below vmap's
    wrappers."""
    def real(x):
        if type(x) is _batched.BatchedTensor:
            phys, levels = _batched.lift(x)
            return _batched.lower(cap.real(phys), levels)
        return cap.real(x)

    return _map(tree, real)


# -- argnums --------------------------------------------------------------------------------------

def _check_argnums(argnums, num_args: int):
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if -num_args <= a < num_args:
            return a % num_args
        raise RuntimeError(f"Got argnum={a}, but only {num_args} positional inputs")

    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return one(argnums)
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        out = tuple(one(a) for a in argnums)
        if len(set(out)) != len(out):
            raise RuntimeError(f"argnums elements must be unique, got {out}")
        return out
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _argnum_list(argnums) -> tuple:
    return (argnums,) if isinstance(argnums, int) else argnums


# -- differentiable physical inputs ---------------------------------------------------------------

#: how many objects ``_levels_reached`` looks at before it gives up (then: every level)
_SCAN_BUDGET = 4000


def _levels_reached(objs):
    """The vmap levels of the BatchedTensors reachable from ``objs`` (the transformed
    function, through closures, defaults, partials, bound methods and object attributes, and
    its arguments): the levels its outputs can vary over. None where the scan ran out of
    budget."""
    found: set = set()
    seen: set = set()
    stack = [objs]
    budget = _SCAN_BUDGET
    while stack:
        x = stack.pop()
        tp = type(x)
        if tp is _batched.BatchedTensor:
            found.update(_batched.levels_of(x))
            continue
        if x is None or tp in _ATOMS or isinstance(x, (Tensor, type, _types.ModuleType)):
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        budget -= 1
        if not budget:
            return None
        if isinstance(x, (tuple, list, set, frozenset)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif tp is _types.FunctionType:
            for cell in x.__closure__ or ():
                try:
                    stack.append(cell.cell_contents)
                except ValueError:  # a cell not filled yet
                    pass
            stack.append(x.__defaults__)
            stack.append(x.__kwdefaults__)
            stack.append(x.__dict__)  # functools.wraps' __wrapped__
        elif tp is _types.MethodType:
            stack.append(x.__self__)
            stack.append(x.__func__)
        elif isinstance(x, functools.partial):
            stack.extend((x.func, x.args, x.keywords))
        else:
            d = getattr(x, "__dict__", None)
            if type(d) is dict:
                stack.append(d)
            slots = getattr(tp, "__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                stack.append(getattr(x, name, None))
    return found


_ATOMS = frozenset({int, float, bool, str, bytes, complex})


def _diff_levels(objs) -> tuple:
    """``(levels, all)``: the active vmap levels a transform's leaves are expanded over.

    A leaf is the per-example copy of an input at each of these levels, so that the
    gradient of the summed outputs is per example there; at a level the function's outputs
    do not vary over, every example's gradient is the same, so the leaf need not be copied
    there: the forward and backward run once for that level, not once per example (vmap of
    vjp inside vmap: the NTK's inner transforms would run 20x over). The levels are those of
    the batched tensors the function can reach (``_levels_reached``); ``_covers`` checks the
    outputs after the call and the transform runs again over every level where they vary
    elsewhere (a batched tensor reached through a global). With a randomness other than
    "error" at some level every level is kept (draws are made per example)."""
    levels = list(_batched.current_levels())
    if not levels:
        return levels, True
    for lv in levels:
        if lv.randomness != "error":
            return levels, True
    found = _levels_reached(objs)
    if found is None:
        return levels, True
    some = [lv for lv in levels if lv.level in found]
    return some, len(some) == len(levels)


def _covers(flat, levels) -> bool:
    """Whether ``flat`` (the outputs) vary over no active level outside ``levels``."""
    own = {lv.level for lv in levels}
    for o in flat:
        if type(o) is _batched.BatchedTensor:
            for h in _batched.levels_of(o):
                if h not in own:
                    return False
    return True


class _Diff:
    """The differentiable version of some inputs: the physical leaves (one leading dim per
    vmap level of ``levels``: ``_diff_levels``), their logical wrappers, and whether to keep
    the graph."""

    def __init__(self, trees, levels):
        self.levels = levels
        self.leaves, self.logical, self.specs = [], [], []
        connected = False
        for tree in trees:
            flat, spec = tree_flatten(tree)
            self.specs.append(spec)
            for x in flat:
                if not isinstance(x, Tensor):
                    raise ValueError(f"Thing passed to transform API must be Tensor, got "
                                     f"{type(x)}")
                phys = _batched.to_physical(x, levels)
                if phys.requires_grad:
                    connected = True
                    leaf = _VIEW_AS(phys, phys) if _batched.passes_through(phys) \
                        else phys.view_as(phys)
                elif _batched.passes_through(phys):  # what dispatch would run, without it
                    leaf = _REQUIRES_GRAD_(_DETACH(phys), True)
                else:
                    leaf = phys.detach().requires_grad_(True)
                self.leaves.append(leaf)
                self.logical.append(_batched.from_physical(leaf, levels))
        self.create_graph = is_grad_enabled() and (connected or _DEPTH.value > 0)

    def trees(self) -> list:
        """The inputs rebuilt from the differentiable leaves."""
        out, i = [], 0
        for spec in self.specs:
            n = spec.num_leaves
            out.append(tree_unflatten(self.logical[i:i + n], spec))
            i += n
        return out

    def unflatten(self, flat):
        out, i = [], 0
        for spec in self.specs:
            n = spec.num_leaves
            out.append(tree_unflatten(flat[i:i + n], spec))
            i += n
        return out


def _inexact(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def _zeros_for(leaf):
    import ember

    return ember.zeros_like(leaf)


def _grads(outputs, leaves, grad_outputs, create_graph: bool, retain_graph: bool | None = None):
    """``autograd.grad`` with zeros for the leaves the outputs do not depend on."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return [_zeros_for(leaf) for leaf in leaves]
    outs, gos = zip(*pairs)
    res = _autograd.grad(list(outs), leaves, list(gos), create_graph=create_graph,
                         retain_graph=create_graph if retain_graph is None else retain_graph,
                         allow_unused=True)
    return [_zeros_for(leaf) if r is None else r for r, leaf in zip(res, leaves)]


def _level_out(x, levels, create_graph: bool):
    """A result (physical) as the logical tensor at ``levels``, detached unless the graph is
    kept."""
    if not create_graph:
        x = _DETACH(x) if _batched.passes_through(x) else x.detach()
    return _batched.from_physical(x, levels)


def _undo(tree, create_graph: bool):
    if create_graph:
        return tree
    return _map(tree, lambda t: t.detach())


def _map(tree, fn):
    flat, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) if isinstance(x, Tensor) else x for x in flat], spec)


#: the transforms whose ``_call`` is forward-mode (a ``Jvp`` interpreter), by their api name
_FORWARD_APIS = ("jvp", "jacfwd", "linearize")


def _call(func, args, kwargs, has_aux: bool, api: str):
    """``(output, aux)`` of ``func(*args, **kwargs)`` run as a transformed function (nested
    transforms see the depth), with PyTorch's error when ``has_aux`` finds no pair."""
    _DEPTH.value += 1
    _interpreter.push(_interpreter.TransformType.Jvp if api.startswith(_FORWARD_APIS)
                      else _interpreter.TransformType.Grad)
    try:
        out = func(*args, **kwargs)
    finally:
        _interpreter.pop()
        _DEPTH.value -= 1
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           f"has_aux is True")
    _check_aux(out[1])
    return out


def _check_aux(aux):
    for x in tree_flatten(aux)[0]:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")


# -- grad -----------------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``(gradient, value)`` of a scalar function (``torch.func.grad_and_value``).

    ``grad_and_value(f, argnums)(*args)`` returns the gradient of ``f(*args)`` (a 0-dim
    tensor) with respect to ``args[argnums]`` (an int: one gradient with that argument's
    structure, e.g. a dict of parameters; a tuple: a tuple of them) and the value. With
    ``has_aux=True``, ``f`` returns ``(output, aux)`` and the result is
    ``(gradient, (value, aux))``. Composes with ``vmap`` (per-sample gradients) and with
    itself (higher derivatives).
    """

    def body(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        levels, every = _diff_levels((func, args, kwargs))
        with enable_grad():
            while True:
                diff = _Diff([args[i] for i in _argnum_list(nums)], levels)
                new_args = list(args)
                for i, tree in zip(_argnum_list(nums), diff.trees()):
                    new_args[i] = tree
                output, aux = _call(func, new_args, kwargs, has_aux,
                                    "grad_and_value(f)(*args)")
                if every or _covers([output], levels):
                    break
                levels, every = list(_batched.current_levels()), True
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   f"you wanted to use the vjp or jacrev APIs instead?")
            if output.is_complex():
                raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                   f"outputs but got {output.dtype}")
            phys = _batched.to_physical(output, levels)
            total = phys.sum() if phys.dim() else phys
            import ember

            gs = _grads([total], diff.leaves, [ember.ones_like(total)], diff.create_graph)
        gs = [_level_out(g, levels, diff.create_graph) for g in gs]
        trees = diff.unflatten(gs)
        grads = trees[0] if isinstance(nums, int) else tuple(trees)
        value = _undo(output, diff.create_graph)
        if has_aux:
            return grads, (value, _undo(aux, diff.create_graph))
        return grads, value

    return functools.wraps(func)(_uncaptured("grad", body))


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of a scalar function (``torch.func.grad``): ``grad(f)(x)`` is
    ``df/dx`` at ``x``, shaped like ``x`` (a pytree of tensors gives a pytree of gradients).
    ``argnums`` picks the differentiated positional argument(s); ``has_aux=True`` means ``f``
    returns ``(output, aux)`` and the result is ``(gradient, aux)``.

    Per-sample gradients: ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)``.

    Example::

        >>> ember.func.grad(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
        tensor([ 3., 12.])
    """

    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = inner(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


# -- vjp ------------------------------------------------------------------------------------------

def _check_outputs(flat, api: str):
    if not flat or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` is the vector-Jacobian product
    of ``func`` at ``primals`` (``torch.func.vjp``), a tuple with one gradient per primal.
    ``vjp_fn`` may be called many times, and under ``vmap`` (what ``jacrev`` does).
    With ``has_aux=True`` the result is ``(output, vjp_fn, aux)``."""
    cap = _capture()
    if cap is not None:
        return _outside_capture(cap, "vjp", vjp, (func, *primals), {"has_aux": has_aux})
    levels, every = _diff_levels((func, primals))
    with enable_grad():
        while True:
            diff = _Diff(list(primals), levels)
            out, aux = _call(func, diff.trees(), {}, has_aux, "vjp(f, *primals)")
            flat_out, out_spec = tree_flatten(out)
            if every or _covers(flat_out, levels):
                break
            levels, every = list(_batched.current_levels()), True
        _check_outputs(flat_out, "vjp(f, *primals)")
        for o in flat_out:
            if not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {o.dtype}")
        phys_out = [_batched.to_physical(o, levels) for o in flat_out]
    create_graph = diff.create_graph

    def vjp_body(cotangents, *, retain_graph=True, create_graph=create_graph):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{treespec_pprint(ct_spec)}, primal output: "
                               f"{treespec_pprint(out_spec)}")
        for c, o in zip(flat_ct, flat_out):
            if not isinstance(c, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got "
                                f"{type(c).__name__}")
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{c.shape} and output[0] has a shape of {o.shape}.")
        with enable_grad():
            # (a cotangent batched at vmap levels entered since, jacrev's: kept batched there,
            # one backward pass for the batch)
            cts = [_batched.to_physical(c, levels) for c in flat_ct]
            gs = _grads(phys_out, diff.leaves, cts, create_graph, retain_graph)
        gs = [_level_out(g, levels, create_graph) for g in gs]
        return tuple(diff.unflatten(gs))

    vjp_fn = _uncaptured("vjp", vjp_body)
    value = _undo(out, create_graph)
    if has_aux:
        return value, vjp_fn, _undo(aux, create_graph)
    return value, vjp_fn


# -- jvp ------------------------------------------------------------------------------------------

def _jvp_checks(primals, tangents, api="jvp(f, primals, tangents)"):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {spec_p} and "
                           f"tangents with structure {spec_t}")
    for flat, name in ((flat_p, "primals"), (flat_t, "tangents")):
        if not flat:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got "
                                   f"{type(x)}")
    for p, t in zip(flat_p, flat_t):  # make_dual's checks, in its order
        for x, name in ((p, "primal"), (t, "tangent")):
            if not (x.is_floating_point() or x.is_complex()):
                raise ValueError(f"Expected {name} to be floating point or complex, but got: "
                                 f"{x.dtype}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size "
                               f"than that of the original Tensor, this is not supported. "
                               f"Tensor is of size {list(p.shape)} while the given forward "
                               f"gradient is of size {list(t.shape)}.")
    return flat_t


class _Linearized:
    """``func`` run once at the primals with a dummy cotangent ``u``: ``g = J^T u`` with its
    graph, so that ``J t = d(g . t)/du`` for any tangent ``t`` (the double-vjp trick)."""

    def __init__(self, func, primals, has_aux: bool, api: str):
        self.levels, every = _diff_levels((func, primals))
        with enable_grad():
            while True:
                self.diff = _Diff(list(primals), self.levels)
                out, self.aux = _call(func, self.diff.trees(), {}, has_aux, api)
                self.out = out
                self.flat_out, self.out_spec = tree_flatten(out)
                if every or _covers(self.flat_out, self.levels):
                    break
                self.levels, every = list(_batched.current_levels()), True
            _check_outputs(self.flat_out, api)
            phys = [_batched.to_physical(o, self.levels) for o in self.flat_out]
            import ember

            # an integer or bool output has no derivative: its tangent (and Jacobian) is
            # zeros of its dtype, as in PyTorch (``jacfwd(lambda x: x.long())``)
            self.u = [ember.zeros_like(p).requires_grad_(True) if _inexact(p)
                      else ember.zeros_like(p) for p in phys]
            #: whether an output does not depend on the inputs (``jvp``'s strict error)
            self.independent = not all(p.requires_grad for p in phys)
            pairs = [(p, u) for p, u in zip(phys, self.u) if p.requires_grad]
            if pairs:
                ps, us = zip(*pairs)
                g = _autograd.grad(list(ps), self.diff.leaves, list(us), create_graph=True,
                                   retain_graph=True, allow_unused=True)
            else:
                g = [None] * len(self.diff.leaves)
            self.g = list(g)

    def push(self, tangents_phys: list, create_graph: bool) -> list:
        """``J t`` (physical, one per output) for physical tangents, one per leaf."""
        pairs = [(g, t) for g, t in zip(self.g, tangents_phys)
                 if g is not None and g.requires_grad]
        if not pairs:
            return [_zeros_for(u) for u in self.u]
        gs, ts = zip(*pairs)
        us = [u for u in self.u if u.requires_grad]
        with enable_grad():
            res = iter(_autograd.grad(list(gs), us, list(ts), create_graph=create_graph,
                                      retain_graph=True, allow_unused=True) if us else ())
        outs = [next(res) if u.requires_grad else None for u in self.u]
        return [_zeros_for(u) if r is None else r for r, u in zip(outs, self.u)]


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product of ``func`` at
    ``primals`` (``torch.func.jvp``). ``primals`` and ``tangents`` are tuples of the same
    structure. Computed exactly by the double-vjp trick. With ``has_aux=True`` the result is
    ``(output, jvp_out, aux)``. ``strict=True`` makes an output that does not depend on the
    inputs an error."""
    cap = _capture()
    if cap is not None:
        return _outside_capture(cap, "jvp", jvp, (func, primals, tangents),
                                {"strict": strict, "has_aux": has_aux})
    flat_t = _jvp_checks(primals, tangents)
    if _forward_mode_ok(primals, flat_t):
        try:
            return _jvp_forward_mode(func, primals, flat_t, has_aux, strict)
        except NotImplementedError as exc:
            # a custom autograd.Function without a jvp: the double-vjp trick (through its
            # backward) runs ``func`` again, as Ember's jvp always could
            if "implement the jvp function" not in str(exc):
                raise
    lin = _Linearized(func, primals, has_aux, "jvp(f, primals, tangents)")
    if strict and lin.independent:
        raise RuntimeError(_STRICT_ERROR)
    create_graph = lin.diff.create_graph
    t_phys = [_batched.to_physical(t, lin.levels) for t in flat_t]
    outs = _push_mixed(lin, t_phys, create_graph)
    jvp_out = tree_unflatten([_level_out(o, lin.levels, create_graph) for o in outs],
                             lin.out_spec)
    value = _undo(lin.out, create_graph)
    if has_aux:
        return value, jvp_out, _undo(lin.aux, create_graph)
    return value, jvp_out


def _push_mixed(lin, t_phys: list, create_graph: bool) -> list:
    """``lin.push`` for tangents whose dtype may differ from their primals' (PyTorch keeps a
    tangent's dtype, ``jvp(f, (x32,), (t64,))``): pushed in the primals' dtypes (a complex
    tangent of a real primal by its real part), the results promoted with the tangents'
    dtypes as forward mode's formulas promote them (``forward_ad._mixed_tangent_dtype``:
    a real output keeps its dtype for a complex tangent)."""
    leaves = lin.diff.leaves
    if all(t.dtype == leaf.dtype for t, leaf in zip(t_phys, leaves)):
        return lin.push(t_phys, create_graph)
    cast = []
    for t, leaf in zip(t_phys, leaves):
        if t.is_complex() and not leaf.is_complex():
            t = t.real
        cast.append(t if t.dtype == leaf.dtype else t.to(leaf.dtype))
    from .._dtype import promote_types

    outs = []
    for o in lin.push(cast, create_graph):
        want = o.dtype
        for t in t_phys:
            if want.is_complex or not t.dtype.is_complex:
                want = promote_types(want, t.dtype)
        outs.append(o if want == o.dtype else o.to(want))
    return outs


def _forward_mode_ok(primals, flat_t) -> bool:
    """Whether ``jvp`` can run as one forward pass with dual tensors (PyTorch's way): at the
    top level (no vmap, grad or other transform around it, no dual level entered) with plain
    real floating tensors that do not require grad; elsewhere the double-vjp trick."""
    from ..autograd import forward_ad

    if _batched.current_levels() or _DEPTH.value or forward_ad._LEVEL[0] is not None:
        return False
    for p in (*tree_flatten(primals)[0], *flat_t):
        if type(p) is not Tensor or p.requires_grad or not (p.is_floating_point()
                                                            or p.is_complex()):
            return False
    return True


_STRICT_ERROR = ("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                 "inputs. This is not allowed with strict=True.")


def _jvp_forward_mode(func, primals, flat_t, has_aux, strict=False):
    from ..autograd import forward_ad as fwAD

    flat_p, spec = tree_flatten(primals)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        out, aux = _call(func, tree_unflatten(duals, spec), {}, has_aux,
                         "jvp(f, primals, tangents)")
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, "jvp(f, primals, tangents)")
        values, jvps = [], []
        for o in flat_out:
            primal, tangent = fwAD.unpack_dual(o)
            if tangent is None and strict:
                raise RuntimeError(_STRICT_ERROR)
            values.append(primal.detach())
            jvps.append(_zeros_for(primal) if tangent is None else tangent.detach())
        if has_aux:
            aux = _map(aux, lambda t: fwAD.unpack_dual(t).primal.detach())
    value, jvp_out = tree_unflatten(values, out_spec), tree_unflatten(jvps, out_spec)
    if has_aux:
        return value, jvp_out, aux
    return value, jvp_out


# -- Jacobians and the Hessian --------------------------------------------------------------------

def _slice_args(args, nums):
    return [args[i] for i in _argnum_list(nums)]


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None,
           _preallocate_and_copy: bool = False):
    """The Jacobian of ``func`` by reverse mode (``torch.func.jacrev``): one vjp per output
    element (``vmap`` over the standard basis; ``chunk_size`` bounds how many at a time).
    ``jacrev(f)(x)[i..., j...]`` is ``d f(x)[i...] / d x[j...]``; several outputs or
    ``argnums`` give nested tuples (outputs outer, arguments inner)."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def body(*args, **kwargs):
        _error_if_complex("jacrev", args, is_input=True)
        nums = _check_argnums(argnums, len(args))
        diff_args = _slice_args(args, nums)
        f = _of_diff_args(func, args, kwargs, nums)

        res = vjp(f, *diff_args, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(out)
        _error_if_complex("jacrev", flat_out, is_input=False)
        import ember

        from .vmap import vmap

        jac_per_out = []
        for i, o in enumerate(flat_out):
            n = o.numel()
            basis = ember.eye(n, dtype=o.dtype, device=o.device).reshape((n, *o.shape))

            def push(b, i=i):
                cts = [b if j == i else ember.zeros_like(x) for j, x in enumerate(flat_out)]
                return vjp_fn(tree_unflatten(cts, out_spec))

            rows = vmap(push, chunk_size=chunk_size)(basis) if n else \
                _empty_rows(diff_args, o)
            # rows: tuple over args of pytrees with leaves (n, *arg.shape)
            per_arg = tuple(_map(r, lambda t, o=o: t.reshape((*o.shape, *t.shape[1:])))
                            for r in rows)
            jac_per_out.append(per_arg[0] if isinstance(nums, int) else per_arg)
        jac = tree_unflatten(jac_per_out, out_spec)
        if has_aux:
            return jac, res[2]
        return jac

    return functools.wraps(func)(_uncaptured("jacrev", body))


def _error_if_complex(api: str, tree, is_input: bool) -> None:
    """jacrev and jacfwd refuse complex inputs (all arguments, differentiated or not) and
    outputs, with PyTorch's error."""
    for idx, x in enumerate(tree_flatten(tree)[0]):
        if isinstance(x, Tensor) and x.is_complex():
            what = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {what} to be real but received complex "
                               f"tensor at flattened input idx: {idx}")


def _of_diff_args(func, args, kwargs, nums):
    """``func`` as a function of the differentiated arguments alone (the others fixed)."""

    def f(*diff):
        new = list(args)
        for i, d in zip(_argnum_list(nums), diff):
            new[i] = d
        return func(*new, **kwargs)

    return f


def _empty_rows(diff_args, o):
    import ember

    return tuple(_map(a, lambda t: ember.zeros((0, *t.shape), dtype=t.dtype, device=t.device))
                 for a in diff_args)


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` by forward mode (``torch.func.jacfwd``): one Jacobian-vector
    product per input element, each exact by the double-vjp trick on one evaluation of
    ``func``. Same layout as ``jacrev``. ``randomness``: ``"error"`` (the default) makes a
    random op in ``func`` vmap's error, as in PyTorch; ``"same"``: ``func`` runs once, so
    every column sees the same draws; ``"different"``: as PyTorch, a ``vmap`` of ``jvp`` over
    the standard basis of all the differentiated inputs together, so each column draws its
    own numbers (the draws of ``vmap(randomness="different")``, PyTorch's under the same
    seed) and ``aux`` is the first column's."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    def body(*args, **kwargs):
        _error_if_complex("jacfwd", args, is_input=True)
        nums = _check_argnums(argnums, len(args))
        diff_args = _slice_args(args, nums)
        f = _of_diff_args(func, args, kwargs, nums)

        for x in tree_flatten(diff_args)[0]:  # what jvp's make_dual checks in PyTorch
            if isinstance(x, Tensor) and not (x.is_floating_point() or x.is_complex()):
                raise ValueError(f"Expected primal to be floating point or complex, but got: "
                                 f"{x.dtype}")
        if randomness == "different":
            return _jacfwd_per_column(f, diff_args, nums, has_aux)
        with _random_guard(randomness):
            lin = _Linearized(f, diff_args, has_aux, "jvp(f, primals, tangents)")
        _error_if_complex("jacfwd", lin.flat_out, is_input=False)
        create_graph = lin.diff.create_graph
        levels = lin.levels
        nlev = len(levels)
        import ember

        from .vmap import vmap

        flat_in = [leaf for leaf in lin.diff.leaves]
        # per input: its columns J_i e_k for every element k, pushed as one batch (a vmap
        # over the basis: one backward pass of the double-vjp graph), physical
        per_input = []
        for idx, leaf in enumerate(flat_in):
            logical_shape = tuple(leaf.shape[nlev:])
            n = 1
            for s in logical_shape:
                n *= s

            def push(e, idx=idx, leaf=leaf, logical_shape=logical_shape):
                tangents = [ember.zeros_like(x) for x in flat_in]
                tangents[idx] = e.reshape(logical_shape).expand(tuple(leaf.shape))
                return tuple(lin.push(tangents, create_graph))

            cols = vmap(push)(ember.eye(n, dtype=leaf.dtype, device=leaf.device)) if n \
                else None
            per_input.append((cols, logical_shape, n))
        jac_per_out = []
        for i in range(len(lin.flat_out)):
            per_leaf = []
            for cols, shape, n in per_input:
                if n:
                    stacked = cols[i].movedim(0, -1)
                else:
                    p = lin.u[i]
                    stacked = ember.zeros((*p.shape, 0), dtype=p.dtype, device=p.device)
                phys = stacked.reshape((*stacked.shape[:-1], *shape))
                per_leaf.append(_level_out(phys, levels, create_graph))
            trees = lin.diff.unflatten(per_leaf)
            jac_per_out.append(trees[0] if isinstance(nums, int) else tuple(trees))
        jac = tree_unflatten(jac_per_out, lin.out_spec)
        if has_aux:
            return jac, _undo(lin.aux, create_graph)
        return jac

    return functools.wraps(func)(_uncaptured("jacfwd", body))


def _jacfwd_per_column(f, diff_args: list, nums, has_aux: bool):
    """``jacfwd(randomness="different")``: PyTorch's own algorithm, ``vmap(jvp)`` over one
    standard basis of all the differentiated inputs (``N`` columns, their numels summed), so
    that a random op in ``f`` draws ``N`` batches of numbers, one per column."""
    import ember

    from .vmap import vmap

    flat, spec = tree_flatten(tuple(diff_args))
    numels = [x.numel() for x in flat]
    total = sum(numels)
    flat_basis, offset = [], 0
    for x, n in zip(flat, numels):
        b = ember.zeros((total, n), dtype=x.dtype, device=x.device)
        if n:
            b[offset:offset + n] = ember.eye(n, dtype=x.dtype, device=x.device)
        flat_basis.append(b.reshape((total, *x.shape)))
        offset += n

    def push_jvp(basis):
        res = jvp(f, tuple(diff_args), basis, has_aux=has_aux)
        _error_if_complex("jacfwd", res[0], is_input=False)
        return (res[1], res[2]) if has_aux else res[1]

    results = vmap(push_jvp, randomness="different")(tree_unflatten(flat_basis, spec))
    aux = None
    if has_aux:
        results, aux = results
        aux = _map(aux, lambda t: t[0])  # the first column's: ``func``'s own output
    jac_outs, out_spec = tree_flatten(results)
    per_out = []
    for jac_out in jac_outs:
        parts = jac_out.movedim(0, -1).split(numels, dim=-1)
        ins = [p.reshape((*p.shape[:-1], *x.shape)) for p, x in zip(parts, flat)]
        trees = tree_unflatten(ins, spec)
        per_out.append(trees[0] if isinstance(nums, int) else trees)
    jac = tree_unflatten(per_out, out_spec)
    return (jac, aux) if has_aux else jac


def _random_guard(randomness: str):
    """``randomness="error"``: a random op while ``func`` runs is vmap's error, as in PyTorch's
    jacfwd (a vmap over jvp); otherwise nothing (``func`` runs once: every column sees the
    same draws)."""
    import contextlib

    if randomness != "error":
        return contextlib.nullcontext()
    # a mode of no vmap level (no tensor is batched at it): it only sees random ops
    return _batched.VmapMode(_batched.VmapLevel(0, 1, "error"))


def hessian(func, argnums=0):
    """The Hessian of a scalar function (``torch.func.hessian``):
    ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product of
    ``func`` at ``primals`` (``torch.func.linearize``), reusing one evaluation of ``func``
    for every call (the double-vjp trick's graph is kept)."""
    cap = _capture()
    if cap is not None:
        return _outside_capture(cap, "linearize", linearize, (func, *primals), {})
    flat_p, spec_p = tree_flatten(primals)
    for p in flat_p:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"linearize: Expected primals to only contain Tensors, got "
                               f"{type(p)}")
    lin = _Linearized(func, primals, False, "linearize(f, *primals)")
    create_graph = lin.diff.create_graph

    def jvp_body(*tangents):
        flat_t, spec_t = tree_flatten(tangents)
        if spec_t != spec_p:
            raise RuntimeError(f"Expected the tangents {spec_t} to have the same argspec as "
                               f"the primals {spec_p}")
        for i, (p, t) in enumerate(zip(flat_p, flat_t)):
            for what in ("shape", "device", "dtype"):
                if getattr(t, what) != getattr(p, what):
                    raise RuntimeError(f"tangent:{i} with {what} {getattr(t, what)} in "
                                       f"flattened pytree doesn't match the {what} "
                                       f"{getattr(p, what)} of the corresponding primal.")
        # (vmap(jvp_fn): tangents batched at later levels stay so, one pass for the batch)
        t_phys = [_batched.to_physical(t, lin.levels) for t in flat_t]
        outs = lin.push(t_phys, create_graph)
        return tree_unflatten([_level_out(o, lin.levels, create_graph) for o in outs],
                              lin.out_spec)

    return _undo(lin.out, create_graph), _uncaptured("linearize", jvp_body)
