"""Model and optimizer state dicts keyed by parameter name, sharded or full (PyTorch's
``torch.distributed.checkpoint.state_dict``).

``get_state_dict(model, optimizers)`` gives the model's state dict with canonical names
(no DDP ``module.``, ``torch.compile`` ``_orig_mod.`` or activation-checkpoint prefixes) and
the optimizers' state dicts keyed by those names instead of integer ids, which is what a
distributed checkpoint stores. With ``StateDictOptions(full_state_dict=True)`` DTensors are
gathered (``cpu_offload=True``: kept on rank 0 only); ``set_state_dict`` loads either form
back, distributing full tensors into the model's shards (``broadcast_from_rank0=True``: only
rank 0 needs the full state dict). Core never imports ember-nn: modules and optimizers are
used through their methods.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import asdict, dataclass, field
from itertools import chain
from typing import Any, NamedTuple

from ..._tensor import Tensor

__all__ = ["FQNS_T", "PrimitiveType", "ValueType", "DictValueType", "ListDictValueType",
           "OptimizerStateType", "StateDictOptions", "get_model_state_dict",
           "get_optimizer_state_dict", "get_state_dict", "set_model_state_dict",
           "set_optimizer_state_dict", "set_state_dict"]

FQNS_T = set
PrimitiveType = Any
ValueType = Any
DictValueType = dict
ListDictValueType = list
OptimizerStateType = dict

_STATE, _PG, _PARAMS = "state", "param_groups", "params"
_CHECKPOINT_PREFIX = "_checkpoint_wrapped_module."
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_WRAPPER_NAMES = ("module", "_orig_mod", _CHECKPOINT_PREFIX[:-1])


@dataclass
class StateDictOptions:
    """How ``get_state_dict``/``set_state_dict`` work (PyTorch's fields and defaults):
    ``full_state_dict`` gathers DTensors into whole tensors; ``cpu_offload`` moves tensors to
    the CPU, and with ``full_state_dict`` keeps them on rank 0 only (the others get ``{}``);
    ``ignore_frozen_params`` leaves out parameters without ``requires_grad``;
    ``keep_submodule_prefixes`` (with the deprecated ``submodules``); ``strict`` for loading;
    ``broadcast_from_rank0`` loads a full state dict that only rank 0 holds;
    ``flatten_optimizer_state_dict`` gives the optimizer state as flat
    ``state.<fqn>.<key>``/``param_groups.<fqn>.<key>`` entries."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


@dataclass
class _StateDictInfo(StateDictOptions):
    fqns_of: dict = field(default_factory=dict)  # id(param) -> its fqns
    param_of: dict = field(default_factory=dict)  # fqn -> param
    shared: set = field(default_factory=set)  # fqns of parameters reachable by several names
    submodule_prefixes: set = field(default_factory=set)
    handle_model: bool = True
    handle_optim: bool = True


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class _EXTRA_STATE:
    pass


# -- names ----------------------------------------------------------------
def _is_ddp(module) -> bool:
    return any(c.__name__ == "DistributedDataParallel" for c in type(module).__mro__) \
        and hasattr(module, "module")


def _is_compiled(module) -> bool:
    from ..._dynamo.eval_frame import OptimizedModule

    return isinstance(module, OptimizedModule)


def _get_fqns(model, name: str, dsd_fqn_modifiers: str = "_fqn_modifiers",
              skip_ddp_prefix: bool = True, skip_compiler_prefix: bool = True) -> set:
    """The canonical name of ``model``'s state ``name``: wrapper prefixes removed."""
    name = name.replace(_CHECKPOINT_PREFIX, "")
    if "." not in name:
        return {name}
    parts = name.split(".")
    kept: list[str] = []
    obj = model
    for i, part in enumerate(parts):
        if _is_ddp(obj):
            if part != "module":
                raise AssertionError(f"Expected 'module', got '{part}'")
            obj = obj.module
            if not skip_ddp_prefix:
                kept.append(part)
        elif _is_compiled(obj):
            if part != "_orig_mod":
                raise AssertionError(f"Expected '_orig_mod', got '{part}'")
            obj = obj._orig_mod
            if not skip_compiler_prefix:
                kept.append(part)
        else:
            modifiers = getattr(obj, dsd_fqn_modifiers, None)
            if modifiers is not None:
                removed = modifiers().get(part)
                if removed and hasattr(obj, removed):
                    obj = getattr(obj, removed)
            kept.append(part)
            if part == _EXTRA_STATE_KEY_SUFFIX:
                if i != len(parts) - 1:
                    raise RuntimeError("Expect `_extra_state` to be the last obj name")
            else:
                obj = getattr(obj, part)
    return {".".join(kept).replace(_CHECKPOINT_PREFIX, "")}


def _only_wrapper_names_added(key: str, fqn: str) -> bool:
    """``key`` is ``fqn`` with wrapper names in between (DDP's ``module``, ``_orig_mod``,
    ``_checkpoint_wrapped_module``), as PyTorch checks a renamed key."""
    if len(fqn) >= len(key):
        return False
    wanted, parts = fqn.split("."), key.split(".")
    matched = 0
    for i, part in enumerate(parts):
        if part == wanted[matched]:
            matched += 1
            if matched == len(wanted):
                return i == len(parts) - 1
        elif part not in _WRAPPER_NAMES:
            return False
    return True


def _iterate_valid_model_state(model, dsd_fqn_modifiers: str = "_fqn_modifiers"):
    """``(name, value)`` of every parameter, persistent buffer and extra state, as the
    model's ``state_dict`` names them (each module once)."""
    visited: set = set()

    def walk(module, prefix: str):
        visited.add(id(module))
        prefix = f"{prefix}." if prefix else ""
        modifiers = getattr(module, dsd_fqn_modifiers, None)
        skipped = set(modifiers().values()) if modifiers is not None else set()
        for name, child in module.named_children():
            if id(child) in visited:
                continue
            yield from walk(child, prefix[:-1] if name in skipped else f"{prefix}{name}")
        non_persistent = getattr(module, "_non_persistent_buffers_set", set())
        for name, obj in chain(module.named_buffers(recurse=False),
                               module.named_parameters(recurse=False)):
            if name not in non_persistent:
                yield f"{prefix}{name}", obj
        base = getattr(type(module), "get_extra_state", None)
        if base is not None and getattr(base, "__qualname__", "") != "Module.get_extra_state":
            yield f"{prefix}{_EXTRA_STATE_KEY_SUFFIX}", _EXTRA_STATE()

    yield from walk(model, "")


def _verify_options(model, optims: tuple, optim_only: bool, *, submodules=None,
                    options: StateDictOptions | None = None) -> _StateDictInfo:
    if submodules:
        warnings.warn("Getting submodules only model/optim state_dict is deprecated and will "
                      "be removed in 2.5. This feature can be achieved by manually filtering "
                      "out the state_dict returned from get_state_dict.", FutureWarning,
                      stacklevel=3)
    if optim_only and not optims:
        raise RuntimeError("Optimizers are not passed in but optim_only is set to True.")
    options = options or StateDictOptions()
    if options.broadcast_from_rank0 and not options.full_state_dict:
        raise ValueError("full_state_dict must be True when broadcast_from_rank0 is True.")
    fqns_of: dict = {}
    param_of: dict = {}
    shared: set = set()
    for name, value in _iterate_valid_model_state(model, options.dsd_fqn_modifiers):
        if isinstance(value, _EXTRA_STATE):
            continue
        fqns = _get_fqns(model, name, options.dsd_fqn_modifiers)
        if id(value) in fqns_of:
            fqns_of[id(value)] |= fqns
            shared |= fqns_of[id(value)]
        else:
            fqns_of[id(value)] = set(fqns)
        for fqn in fqns:
            param_of[fqn] = value
    prefixes: set = set()
    if submodules:
        wanted = {id(m) for m in submodules}
        for name, module in model.named_modules():
            if id(module) in wanted:
                prefixes |= {f"{fqn}." for fqn in _get_fqns(model, name)}
    return _StateDictInfo(**asdict(options), fqns_of=fqns_of, param_of=param_of,
                          shared=shared, submodule_prefixes=prefixes,
                          handle_model=not optim_only, handle_optim=len(optims) > 0)


def _verify_state_dict(model_state_dict: dict, optim_state_dict: dict,
                       info: _StateDictInfo) -> None:
    if (info.handle_model and not model_state_dict and not info.submodule_prefixes
            and not info.ignore_frozen_params and not (info.cpu_offload and info.full_state_dict)
            and info.strict and not info.broadcast_from_rank0):
        raise RuntimeError(f"The option indicates that model state_dict is required to save "
                           f"or load, but model state_dict is empty."
                           f"rank = dist.get_rank()={_rank()}.")
    if info.handle_optim and not optim_state_dict \
            and not (info.cpu_offload and info.full_state_dict) and not info.broadcast_from_rank0:
        raise RuntimeError(f"The option indicates that model state_dict is required to save, or "
                           f"load but optim state_dict is empty. {optim_state_dict}")


# -- gathering and distributing ----------------------------------------------------------------
def _rank() -> int:
    from .. import distributed_c10d as c10d

    return c10d.get_rank() if c10d.is_initialized() else 0


def _dtensor():
    from ..tensor import DTensor

    return DTensor


_PLAIN = (int, float, str, bytes, io.BytesIO, type(None))


def _unexpected(value):
    if not isinstance(value, _PLAIN):
        raise ValueError(f"Unexpected value type {type(value)}")
    return value


def _gather(value, cpu_offload: bool):
    """``value`` with every DTensor gathered whole (every rank takes part)."""
    if isinstance(value, Tensor):
        if isinstance(value, _dtensor()):
            value = value.full_tensor()
        return value.cpu() if cpu_offload else value
    if isinstance(value, dict):
        return {k: _gather(v, cpu_offload) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_gather(v, cpu_offload) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return _unexpected(value)


def _to_cpu(value):
    if isinstance(value, Tensor):
        if isinstance(value, _dtensor()):
            return value.cpu() if value._local_tensor.device.type != "cpu" else value
        return value.cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_to_cpu(v) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return _unexpected(value)


def _maybe_full_or_cpu_state_dict(state_dict: dict, info: _StateDictInfo) -> dict:
    if info.full_state_dict:
        from .. import distributed_c10d as c10d

        gathered = _gather(state_dict, info.cpu_offload)
        if info.cpu_offload and c10d.is_initialized() and c10d.get_rank() != 0:
            return {}
        return gathered
    if info.cpu_offload:
        return _to_cpu(state_dict)
    return state_dict


class _TensorInfo(NamedTuple):
    size: tuple
    dtype: Any


def _place(local, full):
    """``full`` laid out like ``local``: a DTensor gets its shard copied in (a meta DTensor
    becomes a new one), anything else becomes ``full`` on ``local``'s device."""
    DTensor = _dtensor()
    if isinstance(local, DTensor):
        from ..tensor._utils import compute_local_shape_and_global_offset

        shape, offset = compute_local_shape_and_global_offset(tuple(full.shape),
                                                              local.device_mesh, local.placements)
        part = full[tuple(slice(o, o + s) for s, o in zip(shape, offset))]
        if local.is_meta:
            return DTensor.from_local(part.detach().clone(), local.device_mesh, local.placements,
                                      shape=local.shape, stride=local.stride())
        local._local_tensor.copy_(part)
        return local
    if isinstance(local, Tensor) and not local.is_meta:
        return full.detach().to(local.device)
    return full.detach()


def _broadcast_state_dict(full: dict, local: dict, strict: bool = False,
                          cpu_offload: bool = False) -> None:
    """Fill ``local`` (flat: name -> this rank's value) from rank 0's ``full``: non-tensors and
    0-d tensors go as objects, other tensors are broadcast one by one and placed."""
    from .. import distributed_c10d as c10d

    meta: dict = {}
    if c10d.get_rank() == 0:
        for key, value in full.items():
            if not isinstance(value, Tensor):
                meta[key] = value
            elif value.dim() == 0:
                meta[key] = value.cpu()
            else:
                meta[key] = _TensorInfo(tuple(value.shape), value.dtype)
    box = [meta]
    c10d.broadcast_object_list(box, src=0)
    meta = box[0]
    from ..._factory import empty

    for key, value in meta.items():
        if not isinstance(value, _TensorInfo):
            if key in local:
                local[key] = value
            continue
        if c10d.get_rank() == 0:
            tensor = full[key].detach().cpu().contiguous()
        else:
            tensor = empty(value.size, dtype=value.dtype)
        c10d.broadcast(tensor, src=0)
        if key in local:
            placed = _place(local[key], tensor)
            local[key] = placed.cpu() if cpu_offload and not isinstance(placed, _dtensor()) \
                else placed
    if strict:
        for key in set(local) - set(meta):
            local.pop(key)


def _distribute_state_dict(full: dict, local: dict) -> None:
    """Fill ``local`` from the full state dict every rank holds."""
    for key, value in full.items():
        if not isinstance(value, Tensor):
            local[key] = value
        elif value.dim() == 0:
            local[key] = value.cpu()
        elif key in local:
            local[key] = _place(local[key], value)


# -- model ----------------------------------------------------------------
def _get_model_state_dict(model, info: _StateDictInfo) -> dict:
    from ...autograd.grad_mode import no_grad

    if not info.handle_model:
        return {}
    with no_grad():
        state_dict = type(model).state_dict(model)
        for key in list(state_dict):
            fqns = _get_fqns(model, key, info.dsd_fqn_modifiers)
            if len(fqns) != 1:
                raise AssertionError(f"Expected 1 FQN for key '{key}', got {len(fqns)}: {fqns}")
            fqn = next(iter(fqns))
            if fqn != key:
                if not _only_wrapper_names_added(key, fqn):
                    raise RuntimeError(f"An unexpected key, {key}, exists. FQN is {fqn}")
                state_dict[fqn] = state_dict.pop(key)
        if info.submodule_prefixes:
            kept = {}
            for fqn, value in state_dict.items():
                for prefix in info.submodule_prefixes:
                    if fqn.startswith(prefix):
                        kept[fqn if info.keep_submodule_prefixes else fqn[len(prefix):]] = value
            state_dict = kept
        if info.ignore_frozen_params:
            for key, param in model.named_parameters():
                if not param.requires_grad:
                    for fqn in _get_fqns(model, key, info.dsd_fqn_modifiers):
                        state_dict.pop(fqn, None)
        return _maybe_full_or_cpu_state_dict(state_dict, info)


def _load_model_state_dict(model, state_dict: dict, info: _StateDictInfo):
    from ...autograd.grad_mode import no_grad

    if not info.handle_model or (not state_dict and not info.broadcast_from_rank0):
        return _IncompatibleKeys([], [])
    state_dict = dict(state_dict)
    local: dict = {}
    for key, value in _iterate_valid_model_state(model, info.dsd_fqn_modifiers):
        fqns = _get_fqns(model, key, info.dsd_fqn_modifiers)
        prefixed = _get_fqns(model, key, info.dsd_fqn_modifiers, skip_ddp_prefix=False,
                             skip_compiler_prefix=False)
        for fqn, with_prefix in zip(fqns, prefixed):
            if (not info.broadcast_from_rank0 or _rank() == 0) and fqn != with_prefix:
                loaded = state_dict.pop(fqn, None)
                if loaded is None:
                    if info.strict:
                        raise RuntimeError(f"Missing key: {fqn}.")
                else:
                    state_dict[with_prefix] = loaded
            local[with_prefix] = value
    assign = False
    with no_grad():
        if info.broadcast_from_rank0 or info.full_state_dict:
            assign = any(isinstance(v, Tensor) and v.is_meta for v in local.values())
            if info.broadcast_from_rank0:
                _broadcast_state_dict(state_dict, local, strict=info.strict,
                                      cpu_offload=info.cpu_offload)
            else:
                _distribute_state_dict(state_dict, local)
            state_dict.update(local)
        return type(model).load_state_dict(model, state_dict, strict=info.strict, assign=assign)


# -- optimizers ----------------------------------------------------------------
def _init_optim_state(optim) -> None:
    """Give ``optim`` its state by one step on zero gradients with the learning rate at 0
    (nothing to do when it has state or any gradient)."""
    if optim.state:
        return
    for group in optim.param_groups:
        for param in group[_PARAMS]:
            if param.grad is not None:
                return
    import ember

    for group in optim.param_groups:
        for param in group[_PARAMS]:
            if param.requires_grad:
                param.grad = ember.zeros_like(param)
    lrs = []
    for group in optim.param_groups:
        if "lr" in group:
            lrs.append(group["lr"])
            group["lr"] = ember.tensor(0.0) if isinstance(group["lr"], Tensor) else 0.0
    optim.step(closure=None)
    for group in optim.param_groups:
        if "lr" in group:
            group["lr"] = lrs.pop(0)
    optim.zero_grad(set_to_none=True)


def _flatten_optim_state_dict(state_dict: dict) -> dict:
    """PyTorch's flat form: ``state.<fqn>.<key>`` (nested states joined by dots) and
    ``param_groups.<fqn>.<key>`` for every parameter of every group."""
    out: dict = {}

    def flat(nested: dict, prefix: str) -> None:
        for key, value in nested.items():
            full_key = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                flat(value, full_key)
            else:
                if not isinstance(value, (Tensor, int, float)):
                    raise NotImplementedError(
                        f"Flattening optimizer state_dict only supports tensor, int, float, "
                        f"dict states now. Type is {type(value)}.")
                out[full_key] = value

    for fqn, state in state_dict[_STATE].items():
        flat(state, f"{_STATE}.{fqn}")
    for group in state_dict[_PG]:
        group = dict(group)
        for fqn in group.pop(_PARAMS):
            for k, v in group.items():
                out[f"{_PG}.{fqn}.{k}"] = v
    return out


def _unflatten_optim_state_dict(optim, state_dict: dict, info: _StateDictInfo) -> dict:
    state: dict = {}
    groups: list = []
    for group in optim.param_groups:
        groups.append({_PARAMS: []})
        for param in group[_PARAMS]:
            for fqn in sorted(info.fqns_of[id(param)]):
                if fqn in info.shared and not any(
                        f"{_PG}.{fqn}.{k}" in state_dict for k in group if k != _PARAMS):
                    continue
                groups[-1][_PARAMS].append(fqn)
                if not param.requires_grad:
                    continue
                state[fqn] = {}
                for name in optim.state[param]:
                    key = f"{_STATE}.{fqn}.{name}"
                    if key in state_dict:
                        state[fqn][name] = state_dict[key]
                    else:
                        nested: dict = {}
                        for k, v in state_dict.items():
                            if k.startswith(key + "."):
                                cur = nested
                                parts = k[len(key) + 1:].split(".")
                                for part in parts[:-1]:
                                    cur = cur.setdefault(part, {})
                                cur[parts[-1]] = v
                        state[fqn][name] = nested
        first = groups[-1][_PARAMS][0]
        for k in group:
            if k == _PARAMS:
                continue
            value = state_dict[f"{_PG}.{first}.{k}"]
            if k not in groups[-1]:
                groups[-1][k] = value
            elif groups[-1][k] != value:
                raise RuntimeError(f"All the parameters in the same parameter group should have "
                                   f"the same saved param_group value. But {first}.{k} is "
                                   f"{value} while other(s) is {groups[-1][k]}.")
    return {_STATE: state, _PG: groups}


def _get_optim_state_dict(model, optimizers: tuple, info: _StateDictInfo) -> dict:
    from ...autograd.grad_mode import no_grad

    if not info.handle_optim:
        return {}
    out: dict = {_STATE: {}, _PG: []}
    with no_grad():
        for optim in optimizers:
            _init_optim_state(optim)
            osd = type(optim).state_dict(optim)
            params = list(chain.from_iterable(g[_PARAMS] for g in optim.param_groups))
            pid_of = {id(p): i for i, p in enumerate(params)}
            names: dict = {}
            for key, param in model.named_parameters():
                fqns = _get_fqns(model, key, info.dsd_fqn_modifiers)
                if len(fqns) != 1:
                    raise AssertionError(f"Expected 1 FQN for key '{key}', got {len(fqns)}")
                if id(param) in pid_of:
                    names[pid_of[id(param)]] = next(iter(fqns))
            missing = [i for i in range(len(params)) if i not in names]
            if missing:
                raise RuntimeError(f"the optimizer holds parameters that are not the model's "
                                   f"(positions {missing}): pass the model it optimizes")
            osd = {_STATE: {names[k]: v for k, v in osd[_STATE].items()},
                   _PG: [{**g, _PARAMS: [names[i] for i in g[_PARAMS]]} for g in osd[_PG]]}
            out[_STATE].update(osd[_STATE])
            out[_PG].extend(osd[_PG])
        if info.flatten_optimizer_state_dict:
            out = _flatten_optim_state_dict(out)
        return _maybe_full_or_cpu_state_dict(out, info)


def _split_optim_state_dict(model, optim, osd: dict, info: _StateDictInfo) -> dict:
    """The part of the name-keyed ``osd`` (of several optimizers) that is ``optim``'s."""
    ids = chain(osd[_STATE], chain.from_iterable(g[_PARAMS] for g in osd[_PG]))
    if all(isinstance(k, int) for k in ids):  # the optimizer's own state_dict(): as it is
        return osd  # (PyTorch looks at the state only, and splits no stateless optimizers)
    state: dict = {}
    groups: list = []
    mapping: dict = {}
    for group in optim.param_groups:
        groups.append({_PARAMS: []})
        for param in group[_PARAMS]:
            for fqn in sorted(info.fqns_of[id(param)]):
                if fqn in info.shared and not any(fqn in g[_PARAMS] for g in osd[_PG]):
                    continue
                groups[-1][_PARAMS].append(fqn)
                # strict: every trained parameter's state, unless neither the checkpoint nor
                # the optimizer has any (stateless SGD; PyTorch refuses to split those)
                if param.requires_grad:
                    if fqn in osd[_STATE]:
                        state[fqn] = osd[_STATE][fqn]
                    elif info.strict and (osd[_STATE] or param in optim.state):
                        raise RuntimeError(
                            f"Missing optimizer state for parameter '{fqn}' in checkpoint. The "
                            f"parameter requires gradients but has no saved optimizer state. To "
                            f"load anyway, use StateDictOptions(strict=False).")
                for loaded in osd[_PG]:
                    if fqn in loaded[_PARAMS]:
                        mapping[id(loaded)] = len(groups) - 1
        if not group[_PARAMS]:
            empty = [g for g in osd[_PG] if not g[_PARAMS]]
            if len(empty) != 1:
                raise ValueError("There are param groups that have zero parameters. In such a "
                                 "case, DSD only support exactly one param group with zero "
                                 "parameters.But the loaded state_dict has zero or more than "
                                 "one param groups that have zero parameters.")
            if len(osd[_PG]) != len(optim.param_groups):
                raise ValueError("When there is a parameter group that has zero parameters, "
                                 "multiple optimizers are not supported.")
            mapping[id(empty[0])] = len(groups) - 1
    for loaded in osd[_PG]:
        index = mapping.get(id(loaded), -1)
        if index != -1:
            groups[index].update({k: v for k, v in loaded.items() if k != _PARAMS})
    return {_STATE: state, _PG: groups}


def _load_optim_state_dict(model, optimizers: tuple, state_dict: dict,
                           info: _StateDictInfo) -> None:
    from ...autograd.grad_mode import no_grad
    from .default_planner import flatten_state_dict, unflatten_state_dict

    if not info.handle_optim:
        return
    with no_grad():
        for optim in optimizers:
            _init_optim_state(optim)
            if state_dict:
                osd = (_split_optim_state_dict(model, optim, state_dict, info)
                       if _STATE in state_dict
                       else _unflatten_optim_state_dict(optim, state_dict, info))
            else:
                osd = {}
            if info.full_state_dict:
                info.full_state_dict = False
                try:
                    local_osd = _get_optim_state_dict(model, (optim,), info)
                finally:
                    info.full_state_dict = True
                if info.flatten_optimizer_state_dict:  # compare in the nested form
                    local_osd = _unflatten_optim_state_dict(optim, local_osd, info)
                flat, mapping = flatten_state_dict(osd)
                flat_local, local_mapping = flatten_state_dict(local_osd)
                if info.broadcast_from_rank0:
                    _broadcast_state_dict(flat, flat_local)
                else:
                    _distribute_state_dict(flat, flat_local)
                for key in flat:
                    if key not in flat_local:
                        flat_local[key] = flat[key]
                        local_mapping[key] = mapping[key]
                osd = unflatten_state_dict(flat_local, local_mapping)
                for group in osd.get(_PG, []):
                    group.setdefault(_PARAMS, [])
            type(optim).load_state_dict(optim, osd)


# -- public API ----------------------------------------------------------------
def _optimizer_tuple(optimizers) -> tuple:
    if optimizers is None:
        return ()
    if hasattr(optimizers, "param_groups"):
        return (optimizers,)
    return tuple(optimizers)


def get_model_state_dict(model, *, submodules=None,
                         options: StateDictOptions | None = None) -> dict:
    """``model``'s state dict with canonical names (see ``get_state_dict``)."""
    info = _verify_options(model, (), optim_only=False, submodules=submodules, options=options)
    sd = _get_model_state_dict(model, info)
    _verify_state_dict(sd, {}, info)
    return sd


def get_optimizer_state_dict(model, optimizers, *, submodules=None,
                             options: StateDictOptions | None = None) -> dict:
    """The optimizers' state dict keyed by parameter names (see ``get_state_dict``)."""
    optimizers = _optimizer_tuple(optimizers)
    info = _verify_options(model, optimizers, optim_only=True, submodules=submodules,
                           options=options)
    osd = _get_optim_state_dict(model, optimizers, info)
    _verify_state_dict({}, osd, info)
    return osd


def get_state_dict(model, optimizers, *, submodules=None,
                   options: StateDictOptions | None = None) -> tuple[dict, dict]:
    """``(model state dict, optimizer state dict)``: the model's with canonical names (no
    wrapper prefixes), the optimizers' (one or several) merged, keyed by the same names; the
    optimizers get their state first if they have none (one zero step at lr 0).
    ``options`` choose sharded or full values (see ``StateDictOptions``)."""
    optimizers = _optimizer_tuple(optimizers)
    info = _verify_options(model, optimizers, optim_only=False, submodules=submodules,
                           options=options)
    sd = _get_model_state_dict(model, info)
    osd = _get_optim_state_dict(model, optimizers, info)
    _verify_state_dict(sd, osd, info)
    return sd, osd


def _unflatten_model_state_dict(model, state_dict: dict) -> dict:
    if not state_dict:
        return {}
    if isinstance(next(iter(state_dict.keys())), str):
        return state_dict
    warnings.warn("Passing model_state_dict as a ``Dict[nn.Module, Dict[str, Any]]``is "
                  "deprecated and will be removed in 2.5. If you need this feature, please "
                  "preprocessing the model_state_dict to achieve the same functionality.",
                  FutureWarning, stacklevel=3)
    out: dict = {}
    for submodule, sub_sd in state_dict.items():
        for name, m in model.named_modules():
            if m is submodule:
                for fqn in _get_fqns(model, name):
                    prefix = f"{fqn}."
                    out.update({prefix + k: v for k, v in sub_sd.items()})
    return out


def set_model_state_dict(model, model_state_dict: dict, *,
                         options: StateDictOptions | None = None) -> _IncompatibleKeys:
    """Load ``model_state_dict`` (canonical names; full or sharded values) into ``model``;
    ``model.load_state_dict``'s missing and unexpected keys."""
    model_state_dict = _unflatten_model_state_dict(model, model_state_dict)
    info = _verify_options(model, (), optim_only=False, options=options)
    _verify_state_dict(model_state_dict, {}, info)
    return _load_model_state_dict(model, model_state_dict, info)


def set_optimizer_state_dict(model, optimizers, optim_state_dict: dict, *,
                             options: StateDictOptions | None = None) -> None:
    """Load a name-keyed optimizer state dict into the optimizers of ``model``."""
    optimizers = _optimizer_tuple(optimizers)
    info = _verify_options(model, optimizers, optim_only=True, options=options)
    _verify_state_dict({}, optim_state_dict, info)
    _load_optim_state_dict(model, optimizers, optim_state_dict, info)


def set_state_dict(model, optimizers, *, model_state_dict: dict, optim_state_dict: dict,
                   options: StateDictOptions | None = None) -> _IncompatibleKeys:
    """Load what ``get_state_dict`` gave (either form) into ``model`` and ``optimizers``.
    With ``broadcast_from_rank0`` the model is loaded on every rank even where its dict is
    empty (PyTorch skips it there, and rank 0's broadcast then waits for ranks that never
    join)."""
    model_state_dict = _unflatten_model_state_dict(model, model_state_dict)
    optimizers = _optimizer_tuple(optimizers)
    optim_only = not model_state_dict and not (options and options.broadcast_from_rank0)
    info = _verify_options(model, optimizers, optim_only=optim_only, options=options)
    _verify_state_dict(model_state_dict, optim_state_dict, info)
    _load_optim_state_dict(model, optimizers, optim_state_dict, info)
    return _load_model_state_dict(model, model_state_dict, info)


def _patch_model_state_dict(model, *, options: StateDictOptions | None = None) -> None:
    """Make ``model.state_dict``/``load_state_dict`` these functions (with ``options``)."""
    def state_dict_call():
        return get_model_state_dict(model, options=options)

    def load_state_dict_call(state_dict):
        return set_model_state_dict(model, state_dict, options=options)

    model.state_dict = state_dict_call
    model.load_state_dict = load_state_dict_call


def _patch_optimizer_state_dict(model, *, optimizers,
                                options: StateDictOptions | None = None) -> None:
    """Make the optimizers' ``state_dict``/``load_state_dict`` these functions (several
    optimizers share one merged state dict, as in PyTorch)."""
    optimizers = _optimizer_tuple(optimizers)

    def state_dict_call():
        return get_optimizer_state_dict(model, optimizers, options=options)

    def load_state_dict_call(state_dict):
        set_optimizer_state_dict(model, optimizers, state_dict, options=options)

    for optim in optimizers:
        optim.state_dict = state_dict_call
        optim.load_state_dict = load_state_dict_call
