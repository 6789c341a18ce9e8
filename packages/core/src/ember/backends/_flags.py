"""Settable backend flags, as PyTorch's ``torch.backends.*`` attributes.

A flag is read and assigned as a module attribute (``ember.backends.cudnn.benchmark =
True``); a value of the wrong type raises PyTorch's error. A flag module's class is a
``ModuleType`` subclass whose ``BoolFlag`` descriptors hold the values, process-wide as in
PyTorch.
"""

from __future__ import annotations

from .. import _settings

__all__ = ["BoolFlag", "CuBLASFlags", "check_bool"]


def check_bool(setter: str, value) -> bool:
    """``value`` if it is a bool; else PyTorch's error naming its C++ ``setter``."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
    return value


class BoolFlag:
    """A bool attribute of a flag module; ``setter`` names PyTorch's setter in its error."""

    def __init__(self, default: bool, setter: str):
        self.value = default
        self.setter = setter

    def __get__(self, obj, objtype=None):
        return self if obj is None else self.value

    def __set__(self, obj, value) -> None:
        self.value = check_bool(self.setter, value)


def _reduction_setting(value, attr: str) -> tuple[bool, bool]:
    """``(allow_reduced_precision, allow_splitk)`` from a bool or a 1-2 element sequence."""
    if isinstance(value, bool):
        return value, True
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{attr} expects a bool or a tuple/list of bools, but got {type(value)!r}")
    if not value:
        raise TypeError(f"{attr} expects at least one boolean argument")
    if len(value) > 2:
        raise TypeError(f"{attr} expects at most two boolean arguments")
    names = ("allow_reduced_precision", "allow_splitk")
    for item, which in zip(value, names):
        if not isinstance(item, bool):
            raise TypeError(f"{attr} expects a bool for {which}, but got {type(item)!r}")
    return value[0], value[1] if len(value) == 2 else True


def _reduction_flag(kind: str, split_k: bool = False) -> property:
    """``allow_<kind>_reduced_precision_reduction`` of ``CuBLASFlags`` (set with a bool or a
    1-2 element sequence), or with ``split_k`` its read-only ``_split_k`` part."""
    attr = f"allow_{kind}_reduced_precision_reduction"

    def get(self) -> bool:
        return self._state[kind][split_k]

    def set(self, value) -> None:
        self._state[kind] = _reduction_setting(value, attr)

    return property(get) if split_k else property(get, set)


class CuBLASFlags:
    """``ember.backends.cuda.matmul``: the cuBLAS settings of ``torch.backends.cuda.matmul``.

    ``allow_tf32`` is ``set_float32_matmul_precision`` seen as a bool ('highest' is False)
    and takes effect in CuPy's float32 products. The reduced-precision-reduction and fp16
    accumulation flags are stored only: CuPy picks its own accumulation for half types.
    """

    _SETTABLE = frozenset({"allow_tf32", "allow_fp16_reduced_precision_reduction",
                           "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation",
                           "fp32_precision"})

    def __init__(self):
        object.__setattr__(self, "_state", {"fp16": (True, True), "bf16": (True, True),
                                            "fp16_accumulation": False,
                                            "fp32_precision": "none"})

    @property
    def fp32_precision(self) -> str:
        """PyTorch's newer spelling of ``allow_tf32`` ('none', 'ieee' or 'tf32'; the
        numerical-accuracy note recommends it): 'tf32' while float32 products may round
        (``set_float32_matmul_precision`` not 'highest'), else 'ieee' once a program asked
        for exact products through either API, else 'none' (inherit the default)."""
        if _settings.get_float32_matmul_precision() != "highest":
            return "tf32"
        return self._state["fp32_precision"]

    @fp32_precision.setter
    def fp32_precision(self, value) -> None:
        if not isinstance(value, str):
            raise TypeError(f"fp32_precision must be a str, not {type(value).__name__}")
        if value == "bf16":
            raise RuntimeError("backend 'cuda' does not support precision 'bf16'")
        if value not in ("none", "ieee", "tf32"):
            raise RuntimeError(f"Unknown precision: {value}")
        self._state["fp32_precision"] = "none" if value == "none" else "ieee"
        _settings.set_float32_matmul_precision("high" if value == "tf32" else "highest")

    def __getattr__(self, name: str):  # only names that are not properties get here
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name: str, value) -> None:
        if name not in self._SETTABLE:
            raise AttributeError("Unknown attribute " + name)
        object.__setattr__(self, name, value)

    @property
    def allow_tf32(self) -> bool:
        return _settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value) -> None:
        check_bool("set_allow_tf32_cublas", value)
        self._state["fp32_precision"] = "ieee"
        _settings.set_float32_matmul_precision("high" if value else "highest")

    allow_fp16_reduced_precision_reduction = _reduction_flag("fp16")
    allow_fp16_reduced_precision_reduction_split_k = _reduction_flag("fp16", split_k=True)
    allow_bf16_reduced_precision_reduction = _reduction_flag("bf16")
    allow_bf16_reduced_precision_reduction_split_k = _reduction_flag("bf16", split_k=True)

    @property
    def allow_fp16_accumulation(self) -> bool:
        return self._state["fp16_accumulation"]

    @allow_fp16_accumulation.setter
    def allow_fp16_accumulation(self, value) -> None:
        self._state["fp16_accumulation"] = check_bool("set_allow_fp16_accumulation_cublas",
                                                      value)
