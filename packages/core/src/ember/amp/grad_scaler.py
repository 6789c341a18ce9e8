"""``GradScaler``: dynamic loss scaling for low-precision training (``torch.amp.GradScaler``).

The loss is multiplied by a scale before ``backward`` so that small float16 gradients do not
flush to zero; ``step`` unscales the gradients (in float32 arithmetic, as PyTorch's kernel),
skips the optimizer step when any is inf or NaN, and ``update`` halves the scale after such a
step or doubles it after ``growth_interval`` clean ones: the same scale sequence as PyTorch's
on the same gradients.
"""

from __future__ import annotations

import enum
import inspect
import warnings
from collections import abc, defaultdict

import numpy as np

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scales the loss, unscales and checks the gradients, skips bad steps, adapts the scale.

    ``device`` is where the scale lives (PyTorch's default is ``"cuda"``; without a GPU that
    scaler disables itself with PyTorch's warning: pass ``"cpu"`` to scale on the CPU)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and self._device == "cuda" and not _cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states: dict = defaultdict(_fresh_state)

    # -- the scale --------------------------------------------------------------------------------
    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        from .._dtype import float32, int32
        from .._factory import full

        self._scale = full((), self._init_scale, dtype=float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=dev)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier " \
              "in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _get_scale_async(self):
        return self._scale

    def scale(self, outputs):
        """``outputs`` (a tensor, or tensors in lists/tuples) multiplied by the scale."""
        if not self._enabled:
            return outputs
        from .._tensor import Tensor

        def apply(v):
            if isinstance(v, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(v.device)
                return v * self._scale.to(device=v.device)
            if isinstance(v, abc.Iterable):
                iterable = map(apply, v)
                return type(v)(iterable) if isinstance(v, (list, tuple)) else iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    # -- gradients --------------------------------------------------------------------------------
    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        """Multiply ``optimizer``'s gradients by ``inv_scale`` (a float32 scalar tensor) in
        place; returns ``{device: found_inf}``, a float32 scalar per device, 1.0 where a
        gradient there had an inf or NaN (``_amp_foreach_non_finite_check_and_unscale_``)."""
        from .._tensor import Tensor
        from ..autograd.grad_mode import no_grad

        found: dict = {}
        inv = float(np.float32(inv_scale.item()))
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if not isinstance(p, Tensor):
                        raise AssertionError(
                            f"expected param to be torch.Tensor, got {type(p).__name__}")
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype == _float16():
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    flag = found.get(g.device)
                    if flag is None:
                        flag = found[g.device] = found_inf.to(device=g.device, copy=True)
                    if not bool(g.isfinite().all()):
                        flag.fill_(1.0)
                    if inv != 1.0:
                        g.mul_(inv)
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale now (to clip them, say); ``step``
        then does not unscale again. Once per optimizer per ``update``."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _full_f32(0.0, self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless ``unscale_`` did) and run ``optimizer.step`` unless a gradient is
        inf or NaN; returns what ``optimizer.step`` returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._fused_step(optimizer, state, *args, **kwargs)
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def _fused_step(self, optimizer, state, *args, **kwargs):
        """An optimizer that unscales and skips by itself (``_step_supports_amp_scaling``)
        gets ``grad_scale`` and ``found_inf`` attributes for its step, as PyTorch passes them
        (or, with a ``grad_scaler`` keyword in its ``step``, the scaler itself)."""
        has_grad_scaler_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if has_grad_scaler_kwarg:
            warnings.warn(
                "GradScaler is going to stop passing itself as a keyword argument to the passed "
                "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                "`found_inf: Tensor` to the passed optimizer and let the optimizer use them "
                "directly.", FutureWarning, stacklevel=3)
            kwargs.update({"grad_scaler": self})
        else:
            if state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scaler = self._get_scale_async()
            found_inf = sum(t.to(scaler.device) for t in state["found_inf_per_device"].values())
            optimizer.grad_scale = getattr(optimizer, "grad_scale", None) \
                if state["stage"] == OptState.UNSCALED \
                else scaler * getattr(optimizer, "grad_scale", 1)
            optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        if not has_grad_scaler_kwarg:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    def update(self, new_scale=None) -> None:
        """Adapt the scale: times ``backoff_factor`` if this iteration found inf/NaN, times
        ``growth_factor`` after ``growth_interval`` clean iterations (or set ``new_scale``)."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                          "or torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device or new_scale.numel() != 1 \
                        or new_scale.requires_grad is True:
                    raise AssertionError(reason)
                # PyTorch copies into the 0-d scale; a [1] tensor is taken too (it is 1-element)
                scale.copy_(new_scale.reshape(()))
        else:
            found = [v for s in self._per_optimizer_states.values()
                     for v in s["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(bool(v.item()) for v in found))
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _update_scale(self, found_inf: bool) -> None:
        """PyTorch's ``_amp_update_scale_`` in float32."""
        scale = np.float32(self._scale.item())
        tracker = int(self._growth_tracker.item())
        if found_inf:
            scale = np.float32(scale * np.float32(self._backoff_factor))
            tracker = 0
        else:
            successful = tracker + 1
            if successful == self._growth_interval:
                grown = np.float32(scale * np.float32(self._growth_factor))
                if np.isfinite(grown):
                    scale = grown
                tracker = 0
            else:
                tracker = successful
        self._scale.fill_(float(scale))
        self._growth_tracker.fill_(tracker)

    # -- settings and state -----------------------------------------------------------------------
    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (empty when disabled), as PyTorch saves them."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                   "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer) -> dict:
        """Record which devices' gradients of ``optimizer`` hold an inf or NaN, unscaling
        nothing (for optimizers that unscale by themselves)."""
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = _full_f32(1.0, scale.device)
        found_inf = _full_f32(0.0, scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = \
            self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]


def _cuda_available() -> bool:
    from .. import cuda

    return cuda.is_available()


def _full_f32(value: float, device):
    from .._dtype import float32
    from .._factory import full

    return full((), value, dtype=float32, device=device)


def _float16():
    from .._dtype import float16

    return float16
