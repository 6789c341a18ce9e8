"""``torch.__future__``: switches for behaviour that PyTorch plans to make the default.

Both concern how ``nn.Module`` converts its parameters (``.to()``, ``.float()``,
``.cuda()``, ``to_empty``) and, for the swap switch, how ``load_state_dict`` loads them:

- ``set_overwrite_module_params_on_conversion(True)``: a conversion assigns new
  ``Parameter`` objects to the module instead of changing the existing ones in place (an
  optimizer built before the conversion then holds the old parameters);
- ``set_swap_module_params_on_conversion(True)`` (takes precedence): the existing parameter
  objects stay, their contents exchanged with the converted tensors by
  ``ember.utils.swap_tensors``, gradients too; ``load_state_dict`` loads each value through
  ``param.module_load(value, assign)`` and swaps the result in.

Both default to False: a conversion sets ``param.data`` in place.
"""

from __future__ import annotations

__all__ = ["set_overwrite_module_params_on_conversion",
           "get_overwrite_module_params_on_conversion",
           "set_swap_module_params_on_conversion", "get_swap_module_params_on_conversion"]

_overwrite_module_params_on_conversion: bool = False
_swap_module_params_on_conversion: bool = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether converting an ``nn.Module`` assigns new parameters rather than changing the
    existing ones in place."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion() -> bool:
    """See ``set_overwrite_module_params_on_conversion`` (default False)."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether converting an ``nn.Module`` (and ``load_state_dict``) swaps the parameters'
    contents with ``ember.utils.swap_tensors`` instead of setting ``.data`` (or copying)."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    """See ``set_swap_module_params_on_conversion`` (default False)."""
    return _swap_module_params_on_conversion
