"""``ember.utils.data``: PyTorch's import path for ``ember.data``.

The names are ``ember.data``'s, and so are the submodules: ``ember.utils.data.dataloader``,
``ember.utils.data.sampler``, ``ember.utils.data._utils.collate``... are the very modules of
``ember.data`` (aliased in ``sys.modules``), so both paths see the same classes and state.
"""

import sys

import ember.data as _data
from ember.data import *  # noqa: F403
from ember.data import _utils, dataloader, dataset, distributed, sampler
from ember.data._utils import collate, fetch, worker

__all__ = _data.__all__

for _name, _module in list(sys.modules.items()):
    if _name.startswith("ember.data."):
        sys.modules.setdefault("ember.utils.data." + _name[len("ember.data."):], _module)
del _name, _module
