"""``vmap``: map a function over a batch dimension (``torch.func.vmap``'s API and errors).

See ``_batched`` for how a call inside vmap runs (batching rules per op, a per-example loop
for ops without one).
"""

from __future__ import annotations

import functools
import itertools

from .._tensor import Tensor
from . import _batched, _interpreter
from ._batched import BatchedTensor, VmapLevel, VmapMode
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _get_name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorize ``func`` over a dimension of its inputs (``torch.func.vmap``).

    ``vmap(func)(*inputs)`` returns what calling ``func`` on each slice of the inputs along
    the mapped dimension and stacking the results would, in one batched call: each op runs
    its batching rule (registered per op in ``ember.ops.batching_rules``) on the whole batch;
    an op without one runs once per example (slice, call, stack) as a fallback.

    Args:
        func: a function of tensors (positional arguments are mapped; keyword arguments are
            passed through unmapped) returning a tensor or a (nested) tuple, list or dict of
            them.
        in_dims: the mapped dimension of each input: an int (every input), None (not
            mapped), or a (nested) tuple matching the structure of the positional inputs.
            Negative dims count from the end.
        out_dims: where the mapped dimension goes in each output: an int, None (the output
            must not depend on the mapped inputs), or a tuple matching the outputs.
        randomness: random ops inside ``func``: ``"error"`` (raise), ``"different"`` (each
            example draws its own numbers) or ``"same"`` (every example sees the same draw).
        chunk_size: map at most this many examples at a time (less memory, more calls);
            None maps the whole batch at once.

    Example::

        >>> x = ember.randn(5, 3)
        >>> ember.func.vmap(ember.dot)(x, x).shape
        ember.Size([5])
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. "
                         f"(got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, spec = _process_inputs(in_dims, args, func)
        if chunk_size is None or chunk_size >= batch_size:
            return _vmap_call(func, flat_args, flat_in_dims, spec, batch_size, out_dims,
                              randomness, kwargs)
        return _chunked(func, flat_args, flat_in_dims, spec, batch_size, out_dims,
                        randomness, kwargs, chunk_size)

    return wrapped


def _check_out_dims(out_dims, func) -> None:
    if out_dims is None or type(out_dims) is int:  # the usual out_dims: nothing to check
        return
    leaves, _ = tree_flatten(out_dims)
    for x in leaves:
        if x is not None and not isinstance(x, int):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` "
                             f"must be an int, None or a python collection of ints "
                             f"representing where in the outputs the vmapped dimension "
                             f"should appear.")


def _process_inputs(in_dims, args, func):
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_get_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_get_name(func)})(<inputs>): got no inputs. Maybe you forgot "
                         f"to add inputs, or you are trying to vmap over a function with no "
                         f"inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in_dims = broadcast_prefix(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({_get_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims "
                         f"is not compatible with the structure of `inputs`. in_dims has "
                         f"structure {tree_flatten(in_dims)[1]} but inputs has structure "
                         f"{spec}.")
    sizes = []
    for i, d in enumerate(flat_in_dims):
        if d is None:  # not mapped: nothing to check
            continue
        arg = flat_args[i]
        if type(d) is not int:
            _check_in_dim(in_dims, func, arg, d)
        if not isinstance(arg, Tensor):
            raise ValueError(f"vmap({_get_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but the input is of type {type(arg)}. "
                             f"We cannot vmap over non-Tensor arguments, please use None as "
                             f"the respective in_dim")
        n = arg.dim()
        if d < -n or d >= n:
            raise ValueError(f"vmap({_get_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        if d < 0:
            d = flat_in_dims[i] = d % n
        sizes.append(arg.size(d))
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, spec


def _check_in_dim(in_dims, func, arg, d) -> None:
    """An in_dim that is not a plain int: an int subclass other than bool passes, anything
    else is PyTorch's error."""
    if not isinstance(d, int) or isinstance(d, bool):
        raise ValueError(f"vmap({_get_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                         f"in_dim={d} for an input but in_dim must be either an integer "
                         f"dimension or None.")


def _vmap_call(func, flat_args, flat_in_dims, spec, batch_size, out_dims, randomness,
               kwargs):
    levels = _batched.current_levels()
    lvl = VmapLevel(len(levels) + 1, batch_size, randomness)
    batched_args = [a if d is None else _batched.wrap(a.movedim(d, 0) if d else a, lvl.level)
                    for a, d in zip(flat_args, flat_in_dims)]
    args = tree_unflatten(batched_args, spec)
    levels.append(lvl)
    _interpreter.push(_interpreter.TransformType.Vmap, batch_size, randomness, lvl.level)
    try:
        with VmapMode(lvl):
            out = _batched.dispatching(func)(*args, **kwargs)
    finally:
        _interpreter.pop()
        levels.pop()
    return _unwrap_outputs(out, out_dims, lvl, func)


def _unwrap_outputs(out, out_dims, lvl, func):
    name = _get_name(func)
    flat, spec = tree_flatten(out)
    if isinstance(out, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        else:
            flat_dims = None
    else:
        flat_dims = broadcast_prefix(out_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    return tree_unflatten([_remove_batch_dim(name, o, d, lvl)
                           for o, d in zip(flat, flat_dims)], spec)


def _remove_batch_dim(name, out, out_dim, lvl):
    if out_dim is None:
        if isinstance(out, BatchedTensor) and out._level == lvl.level:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                             f"when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    if isinstance(out, BatchedTensor) and out._level == lvl.level:
        phys = out._value
    else:  # the output does not depend on the mapped inputs: every example gets a copy
        phys = out.unsqueeze(0).expand((lvl.size, *out.shape))
    rank = phys.dim()
    if not -rank <= out_dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {out_dim})")
    out_dim %= rank
    return phys.movedim(0, out_dim) if out_dim else phys


def _chunked(func, flat_args, flat_in_dims, spec, batch_size, out_dims, randomness, kwargs,
             chunk_size):
    import ember

    bounds = list(range(0, batch_size, chunk_size)) + [batch_size]
    outs = []
    # "same" randomness: every chunk starts from the same generator state, as in PyTorch
    states = _batched._generator_states(flat_args, {}) if randomness == "same" else ()
    for lo, hi in itertools.pairwise(bounds):
        chunk = [a if d is None else a.narrow(d, lo, hi - lo)
                 for a, d in zip(flat_args, flat_in_dims)]
        for gen, state in states:
            gen.set_state(state)
        outs.append(_vmap_call(func, chunk, flat_in_dims, spec, hi - lo, out_dims, randomness,
                               kwargs))
    flat0, out_spec = tree_flatten(outs[0])
    flat_dims = ([out_dims] if isinstance(out_dims, int) or out_dims is None
                 else list(out_dims)) if isinstance(outs[0], Tensor) \
        else broadcast_prefix(out_dims, out_spec)
    columns = [tree_flatten(o)[0] for o in outs]
    joined = []
    for i, d in enumerate(flat_dims):
        parts = [c[i] for c in columns]
        joined.append(parts[0] if d is None else ember.cat(parts, d))
    return tree_unflatten(joined, out_spec)
