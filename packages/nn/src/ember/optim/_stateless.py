"""``swap_in_optimizer_params_and_state``, like ``torch.optim.swap_in_optimizer_params_and_state``
(PyTorch keeps it in ``torch/optim/_stateless.py``)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, NamedTuple

from ember import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwapIn(NamedTuple):
    """One parameter group to swap: the live group dict (changed in place), the group of the
    given state dict (hyper-parameters plus packed ``params`` ids) and the tensors that stand
    in for the live group's parameters, in the order of those ids."""

    live_group: dict[str, Any]
    swapin_group: dict[str, Any]
    swapin_params: list[Tensor]


def _check_state(state: Any) -> dict[Any, Any]:
    """``state`` must map packed parameter ids to per-parameter state dicts."""
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    return state


def _check_param_groups(optimizer, param_groups: Any) -> list[dict[str, Any]]:
    if not isinstance(param_groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(param_groups).__name__}.")
    if len(optimizer.param_groups) != len(param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    return param_groups


def _check_group(idx: int, group: dict[str, Any], swapin_group: Any) -> list[int]:
    """The packed ids of ``swapin_group``, after checking it against the live ``group``."""
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           "param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           "params than the live optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           "exactly match the live optimizer group keys for group "
                           f"{idx}. Keys only in swap-in: {swapin_only}. Keys only in live: "
                           f"{live_only}.")
    return ids


def _prepare(optimizer, swapin_parameters: dict[str, Tensor],
             swapin_optim_state: dict[str, Any]) -> tuple[dict, list[_GroupSwapIn]]:
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    swapin_groups = _check_param_groups(optimizer, swapin_optim_state.get("param_groups"))
    # packed ids address parameters by position: the given tensors are matched to the groups in
    # order (groups [[0, 1], [2]] take the tensors [p0, p1] and [p2])
    flat = list(swapin_parameters.values())
    offset = 0
    seen: set[int] = set()
    swaps = []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, swapin_groups)):
        ids = _check_group(idx, group, swapin_group)
        seen.update(ids)
        end = offset + len(ids)
        if end > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        swaps.append(_GroupSwapIn(group, swapin_group, flat[offset:end]))
        offset = end
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, swaps


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]):
    """Temporarily replace an optimizer's parameters and state, restoring them on exit.

    Inside the context every optimizer API (hooks included) sees the given parameters, the
    hyper-parameters of ``swapin_optim_state["param_groups"]`` and its per-parameter state, so
    ``optimizer.step()`` updates the given tensors. Unlike ``load_state_dict``, the parameters
    are swapped too.

    Args:
        optimizer: the live optimizer; its state must already be initialized.
        swapin_parameters: the tensors to use as parameters, in the order of the optimizer's
            parameters (usually ``dict(model.named_parameters())``).
        swapin_optim_state: a dict shaped like ``optimizer.state_dict()``: ``"state"`` keyed by
            packed parameter ids, ``"param_groups"`` matching the live groups' keys. In-place
            changes to its tensors persist; any other change made inside the context (such as
            assigning a new tensor to a state entry) does not.
    """
    state, swaps = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    # shallow copies: they keep the identity of each original ``params`` list
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict = defaultdict(dict)
        for swap in swaps:
            swap.live_group["params"] = swap.swapin_params
            for key, value in swap.swapin_group.items():
                if key != "params":
                    swap.live_group[key] = value
            for param, pid in zip(swap.swapin_params, swap.swapin_group["params"]):
                # a copy of the per-parameter dict: tensors are shared (in-place updates
                # reach the caller's state dict), new entries stay local
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
