"""Calling a module with other parameters and buffers (``torch.nn.utils.stateless``)."""

from __future__ import annotations

import contextlib
from typing import Any

from ember import Tensor

from ..modules.module import Module

__all__ = ["functional_call"]

#: marks a name the module did not have before a swap
_MISSING: Any = object()


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """``parameters_and_buffers`` with each value given for a tied tensor (one object under
    several names) also set under the tied names."""
    all_named_tensors = dict(module.named_parameters(remove_duplicate=False))
    all_named_tensors.update(module.named_buffers(remove_duplicate=False))
    names_by_tensor: dict = {}
    for name, tensor in all_named_tensors.items():
        names_by_tensor.setdefault(tensor, set()).add(name)
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


def _swap_tensor(module: Module, name: str, tensor):
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


def _swap_tensors(module: Module, named_tensors: dict) -> dict:
    """Swap every ``dotted name: tensor`` in; returns what was there, by name. On an error
    the tensors already swapped are put back."""
    originals: dict = {}
    try:
        for name, tensor in named_tensors.items():
            prefix, _, attr = name.rpartition(".")
            originals[name] = _swap_tensor(module.get_submodule(prefix), attr, tensor)
    except Exception:
        _swap_tensors(module, originals)
        raise
    return originals


def _check_keys(module: Module, keys) -> None:
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
            module._get_name(), "\n\t".join(error_msgs)))


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict,
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


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by
    ``parameters_and_buffers`` (dotted name -> tensor) for the duration of the call.

    Names left out keep the module's own tensors. With ``tie_weights`` a value given for a
    tied tensor is used under all its names; with ``strict`` the names must be exactly the
    module's parameters and buffers. Gradients flow to the given tensors, not to the
    module's::

        >>> m = ember.nn.Linear(2, 1)
        >>> w = ember.ones(1, 2, requires_grad=True)
        >>> y = functional_call(m, {"weight": w, "bias": ember.zeros(1)}, (ember.ones(1, 2),))
        >>> y.tolist()
        [[2.0]]
    """
    from ..parallel import DataParallel  # ember.nn.parallel imports the modules, which import us

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)
