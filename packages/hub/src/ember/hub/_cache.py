"""Where the hub keeps its files, and whether it may use the network.

``get_dir()`` follows ``torch.hub.get_dir`` with Ember's variables: an explicit
``set_dir`` wins, then ``$EMBER_HOME/hub``, then ``$XDG_CACHE_HOME/ember/hub``,
then ``~/.cache/ember/hub``. ``EMBER_HUB_OFFLINE=1`` forbids every network access.
"""

from __future__ import annotations

import os

ENV_EMBER_HOME = "EMBER_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
ENV_OFFLINE = "EMBER_HUB_OFFLINE"
DEFAULT_CACHE_DIR = "~/.cache"

_hub_dir: str | None = None


def _get_ember_home() -> str:
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "ember")
    return os.path.expanduser(os.getenv(ENV_EMBER_HOME, default))


def get_dir() -> str:
    """Return the hub cache directory used for downloaded repositories and weights.

    Unless :func:`set_dir` was called it is ``$EMBER_HOME/hub``, where ``$EMBER_HOME``
    defaults to ``$XDG_CACHE_HOME/ember`` and ``$XDG_CACHE_HOME`` to ``~/.cache``.
    """
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_ember_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Set the hub cache directory used for downloaded repositories and weights."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def is_offline() -> bool:
    """True when ``EMBER_HUB_OFFLINE`` is set to 1/true/yes/on: never touch the network."""
    return os.getenv(ENV_OFFLINE, "").strip().lower() in ("1", "true", "yes", "on")
