"""``functional_call`` and ``stack_module_state`` (``torch.func``'s).

ember-core knows nothing of ``ember.nn``: a module is used through the interface every
``ember.nn.Module`` has (``named_parameters``, ``named_buffers``, the ``_parameters`` /
``_buffers`` dicts, ``training``), as in PyTorch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from .._tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module`` with its parameters and buffers replaced by the given tensors
    (``torch.func.functional_call``).

    Args:
        module: the module to call (an ``ember.nn.Module``).
        parameter_and_buffer_dicts: ``{name: tensor}`` by ``state_dict`` names, or a tuple or
            list of such dicts (parameters and buffers apart; a key in two dicts is an error).
            Names not given keep the module's own tensors (unless ``strict``).
        args: positional arguments of the call (a tuple, or one argument).
        kwargs: keyword arguments of the call.
        tie_weights: tied tensors (one tensor under several names) take the value given for
            any of their names; False replaces only the names given.
        strict: the dict must name exactly the module's parameters and buffers.

    The module is restored afterwards, even when the call raises. Inside ``vmap`` and
    ``grad`` the given tensors may be batched or differentiated: the tutorial's
    ``vmap(grad(loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)``.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, values, tie_weights, strict):
        return module(*args, **kwargs)


def _named_tensors(module) -> dict:
    out = dict(module.named_parameters(remove_duplicate=False))
    out.update(module.named_buffers(remove_duplicate=False))
    return out


def _untie(module, values: dict) -> dict:
    """``values`` with every name of a tied tensor given the value passed for that tensor."""
    by_tensor: dict = {}
    for name, t in _named_tensors(module).items():
        by_tensor.setdefault(id(t), set()).add(name)
    tied = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given = [n for n in values if n in tied]
    for n in given:
        names = tied[n]
        if len(names.intersection(given)) > 1 and len({id(values[m]) for m in names
                                                       if m in values}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             f"which are tied. Consider using tie_weights=False")
    out = dict(values)
    for n in given:
        for m in tied[n]:
            out[m] = values[n]
    return out


def _owner(module, name: str):
    *path, leaf = name.split(".")
    m = module
    for p in path:
        sub = getattr(m, "_modules", {}).get(p)
        if sub is None:
            sub = getattr(m, p)
        m = sub
    return m, leaf


@contextlib.contextmanager
def _reparametrize(module, values: dict, tie_weights: bool, strict: bool):
    if tie_weights:
        values = _untie(module, values)
    if strict:
        names = set(_named_tensors(module))
        unexpected = [k for k in values if k not in names]
        missing = [k for k in names if k not in values]
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                type(module).__name__, "\n\t".join(msgs)))
    saved = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            for store in ("_parameters", "_buffers"):
                d = owner.__dict__.get(store)
                if d is not None and leaf in d:
                    saved.append((d, leaf, d[leaf], True))
                    d[leaf] = value
                    break
            else:
                had = leaf in owner.__dict__
                saved.append((owner, leaf, owner.__dict__.get(leaf), had))
                object.__setattr__(owner, leaf, value)
        yield
    finally:
        for target, leaf, old, had in reversed(saved):
            if isinstance(target, dict):
                target[leaf] = old
            elif had:
                object.__setattr__(target, leaf, old)
            else:
                target.__dict__.pop(leaf, None)


def stack_module_state(models) -> tuple[dict, dict]:
    """Stack the parameters and buffers of ``M`` modules of one class into
    ``({name: (M, ...) tensor}, {name: (M, ...) tensor})`` for ensembling with ``vmap``
    (``torch.func.stack_module_state``). The stacked parameters are new leaves (optimizable),
    unrelated to the modules' own.

    Example::

        params, buffers = stack_module_state(models)
        def call(p, b, x):
            return functional_call(base_model, (p, b), (x,))
        out = vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    typ = type(models[0])
    if not all(type(m) is typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors: list, name: str) -> Tensor:
    import ember

    req = [t.requires_grad for t in tensors]
    if any(req) and not all(req):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out = ember.stack([t.detach() for t in tensors])
    if all(req):
        out = out.requires_grad_()
    return out
