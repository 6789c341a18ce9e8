"""``functional_call`` and ``stack_module_state`` (``torch.func``'s).

ember-core knows nothing of ``ember.nn``: a module is used through the interface every
``ember.nn.Module`` has (``named_parameters``, ``named_buffers``, the ``_parameters`` /
``_buffers`` dicts, ``training``), as in PyTorch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

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
    # _reparametrize_module's steps, without a generator-based context manager per call
    named_tensors = _untie_named_tensors_map(module, values) if tie_weights else values
    if strict:
        _check_keys(module, named_tensors)
    originals = _swap_tensors(module, named_tensors)
    try:
        return module(*args, **kwargs)
    finally:
        final = _swap_tensors(module, originals)
        values.update({k: final[k] for k in values if k in final})


#: marks a name the module did not have before a swap
_MISSING: Any = object()


def _untie_named_tensors_map(module, parameters_and_buffers: dict) -> dict:
    """``parameters_and_buffers`` with each value given for a tied tensor (one object under
    several names) also set under the tied names."""
    # every parameter and buffer name (named_parameters and named_buffers with
    # remove_duplicate=False, in one walk), by tensor identity
    names_by_tensor: dict = {}
    tied = False
    for prefix, m in module.named_modules(remove_duplicate=False):
        dot = prefix + "." if prefix else ""
        for members in (m._parameters, m._buffers):
            for k, tensor in members.items():
                if tensor is None:
                    continue
                names = names_by_tensor.get(id(tensor))
                if names is None:
                    names_by_tensor[id(tensor)] = {dot + k}
                else:
                    names.add(dot + k)
                    tied = tied or len(names) > 1
    if not tied:  # the common module: nothing to untie
        return dict(parameters_and_buffers)
    tied_names = {name: names for names in names_by_tensor.values() if len(names) > 1
                  for name in names}
    given_tied = {name for name in parameters_and_buffers if name in tied_names}
    for name in given_tied:
        names = tied_names[name]
        values = {id(parameters_and_buffers[n]) for n in names if n in given_tied}
        if len(names & given_tied) > 1 and len(values) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for tied_name in tied_names[name]:
            untied[tied_name] = parameters_and_buffers[name]
    return untied


def _swap_tensor(module, name: str, tensor):
    """Put ``tensor`` at ``module.<name>`` (``_MISSING``: remove it) and return what was
    there (``_MISSING`` if nothing). Parameters and buffers are replaced in their dicts, so a
    plain tensor may stand in for a parameter."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of ember.Tensor")
    for members in (module._parameters, module._buffers):
        if name in members:
            orig = members[name]
            if tensor is _MISSING:
                del members[name]
            else:
                members[name] = tensor
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of ember.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def _swap_tensors(module, named_tensors: dict) -> dict:
    """Swap every ``dotted name: tensor`` in; returns what was there, by name. On an error
    the tensors already swapped are put back."""
    originals: dict = {}
    owners: dict = {}  # each dotted prefix's submodule, looked up once
    try:
        for name, tensor in named_tensors.items():
            prefix, _, attr = name.rpartition(".")
            owner = owners.get(prefix)
            if owner is None:
                owner = owners[prefix] = module.get_submodule(prefix)
            originals[name] = _swap_tensor(owner, attr, tensor)
    except Exception:
        _swap_tensors(module, originals)
        raise
    return originals


def _check_keys(module, keys) -> None:
    """``strict``: the keys must be exactly the module's parameter and buffer names."""
    valid = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
    keys = set(keys)
    error_msgs = []
    if keys - valid:
        error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, sorted(keys - valid)))}.")
    if valid - keys:
        error_msgs.append(f"Missing key(s): {', '.join(map(repr, sorted(valid - keys)))}.")
    if error_msgs:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(error_msgs)))


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict,
                          tie_weights: bool = False, strict: bool = False):
    """Run the body with ``parameters_and_buffers`` swapped into ``module``; afterwards the
    originals are back, and ``parameters_and_buffers`` holds what the module held at the end
    (a forward may replace a buffer)."""
    if tie_weights:
        named_tensors = _untie_named_tensors_map(module, parameters_and_buffers)
    else:
        named_tensors = parameters_and_buffers
    if strict:
        _check_keys(module, named_tensors)
    originals: dict = {}
    try:
        originals = _swap_tensors(module, named_tensors)
        yield
    finally:
        final = _swap_tensors(module, originals)
        parameters_and_buffers.update({k: final[k] for k in parameters_and_buffers
                                       if k in final})


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
