"""``ember.utils.module_tracker``: which modules are running (``torch.utils.module_tracker``).

:class:`ModuleTracker` follows the ``nn.Module`` hierarchy through forward and backward, so
that other code (``ember.utils.flop_counter``, a ``TorchFunctionMode`` of one's own) can ask
which modules the current op runs in. Modules are ember-nn's (a separate distribution): where
ember-nn has not been imported there are no modules to follow, and ``parents`` stays
``{"Global"}``.
"""

from __future__ import annotations

import logging
import sys
import weakref

from .._tensor import Tensor
from ..autograd import engine as _engine
from ..autograd.graph import register_multi_grad_hook
from ._pytree import tree_leaves

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


def _flat_tensors(value) -> list:
    """The tensors that require grad among ``value``'s pytree leaves."""
    return [v for v in tree_leaves(value) if isinstance(v, Tensor) and v.requires_grad]


class ModuleTracker:
    """A context manager that tracks the ``nn.Module`` hierarchy while it runs.

    ``parents`` is the set of the fully qualified names of the modules whose forward (or
    backward) is running, always with ``"Global"``: a module first seen is named by its class
    (``"Net"``), its submodules by their attribute paths below it (``"Net.layer1.0.conv1"``).
    ``is_bw`` is True while a backward runs. Backward is followed through gradient hooks on
    each module's inputs and outputs; at the end of each backward ``parents`` is reset to
    ``{"Global"}``.

    Example::

        with ModuleTracker() as tracker:
            model(x)   # a forward hook or a TorchFunctionMode may read tracker.parents
    """

    parents: set

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._has_callback = False
        self._hooks: list = []
        self._handles: list = []

    @property
    def is_bw(self) -> bool:
        """True while a backward runs in this thread."""
        return _engine.current_graph_task_id() != -1

    def _maybe_set_engine_callback(self) -> None:
        if self._has_callback:
            return

        def callback() -> None:
            self.parents = {"Global"}
            self._has_callback = False

        _engine.queue_callback(callback)
        self._has_callback = True

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _get_append_fn(self, name: str, is_bw: bool):
        def fn(*args) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module "
                            "was already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)

        return fn

    def _get_pop_fn(self, name: str, is_bw: bool):
        def fn(*args) -> None:
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a "
                            "Module that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")

        return fn

    def _fw_pre_hook(self, mod, input) -> None:
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        tensors = _flat_tensors(input)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._get_pop_fn(name, True)))

    def _fw_post_hook(self, mod, input, output) -> None:
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        tensors = _flat_tensors(output)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors,
                                                        self._get_append_fn(name, True)))

    def __enter__(self):
        # (ember-nn lies above core: where nothing imported it, no module exists to follow)
        module = sys.modules.get("ember.nn.modules.module")
        if module is None:
            return self
        self._handles = [module.register_module_forward_pre_hook(self._fw_pre_hook),
                         module.register_module_forward_hook(self._fw_post_hook,
                                                             always_call=True)]
        return self

    def __exit__(self, *args) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
