"""``ember.utils.model_zoo``: PyTorch's ``torch.utils.model_zoo``, ``load_url`` and ``tqdm``.

Both come from ember-hub's side, which ember-core does not depend on: ``load_url`` is
``ember.hub.load_state_dict_from_url``, imported when it is called, and ``tqdm`` the
progress bar of the ``tqdm`` package ember-hub installs, imported when it is first asked
for. When they are missing the error says which distribution to ``pip install``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["load_url", "tqdm"]  # noqa: F822 (tqdm: module __getattr__, on first use)

_HUB = "ember.hub"  # in the ember-hub distribution, above core: never imported statically
_HUB_DIST = "ember-hub"


def _hub():
    """``ember.hub``, imported now; ModuleNotFoundError naming its distribution if absent."""
    try:
        return importlib.import_module(_HUB)
    except ModuleNotFoundError as exc:
        if exc.name != _HUB:
            raise
        raise ModuleNotFoundError(f"{__name__} needs {_HUB}, which is not installed: "
                                  f"pip install {_HUB_DIST}", name=_HUB) from None


def load_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
             check_hash: bool = False, file_name: str | None = None,
             weights_only: bool = True) -> dict[str, Any]:
    """``ember.hub.load_state_dict_from_url``: download the checkpoint at ``url`` into
    ``model_dir`` (default ``<hub dir>/checkpoints``) unless it is already there, and load
    it with ``ember.load``."""
    return _hub().load_state_dict_from_url(
        url, model_dir=model_dir, map_location=map_location, progress=progress,
        check_hash=check_hash, file_name=file_name, weights_only=weights_only)


def __getattr__(name: str):
    # torchvision imports tqdm from here: the progress bar the hub's downloader uses (the
    # tqdm package, a dependency of ember-hub)
    if name == "tqdm":
        try:
            return importlib.import_module("tqdm.auto").tqdm
        except ModuleNotFoundError as exc:
            if exc.name not in ("tqdm", "tqdm.auto"):
                raise
            raise ModuleNotFoundError(f"{__name__}.tqdm needs the tqdm package, which "
                                      f"{_HUB_DIST} installs: pip install {_HUB_DIST}",
                                      name="tqdm") from None
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
