"""``ember.torch_version``: ``TorchVersion``, a version string that compares as a version
(``torch.torch_version``).

``TorchVersion("2.13.0") > "2.9"`` is True (a plain string comparison says False), and it
compares with tuples (``>= (2, 1)``) and other version objects the same way. Versions are
read by PEP 440's rules (epoch, release, pre/post/dev parts, local label), as PyTorch reads
them with ``packaging``; a side that is no version at all falls back to string comparison.
``__version__`` is Ember's own version as a ``TorchVersion``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion"]


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


# PEP 440's grammar, as ``packaging.version.VERSION_PATTERN`` writes it
_VERSION = re.compile(r"""
    ^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?
    (?P<dev>[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""", re.VERBOSE | re.IGNORECASE)

_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_NO_PRE, _ONLY_DEV = (3, 0), (-1, 0)  # no pre part sorts after any; a bare dev, before any


def _sort_key(version: str) -> tuple:
    """The PEP 440 ordering of ``version`` as a tuple (``packaging``'s ``_cmpkey``)."""
    m = _VERSION.match(version)
    if m is None:
        raise InvalidVersion(f"Invalid version: {version!r}")
    release = [int(part) for part in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:  # 1.0 == 1.0.0
        release.pop()
    if m["pre"]:
        pre = (_PRE_RANK[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif m["dev"] and not m["post"]:
        pre = _ONLY_DEV
    else:
        pre = _NO_PRE
    post = int(m["post_n1"] or m["post_n2"] or 0) if m["post"] else -1
    dev = int(m["dev_n"] or 0) if m["dev"] else float("inf")
    local = ()  # no local label sorts before any; numeric parts after alphanumeric ones
    if m["local"]:
        local = tuple((1, int(part), "") if part.isdigit() else (0, 0, part.lower())
                      for part in re.split(r"[-_.]", m["local"]))
    return int(m["epoch"] or 0), tuple(release), pre, post, dev, local


def _as_key(other: Any) -> tuple:
    if isinstance(other, TorchVersion | str):
        return _sort_key(str(other))
    if hasattr(other, "release") and hasattr(other, "epoch"):  # a packaging Version
        return _sort_key(str(other))
    if isinstance(other, Iterable):
        return _sort_key(".".join(str(item) for item in other))
    raise InvalidVersion(other)


class TorchVersion(str):
    """A string that compares with strings, tuples and version objects as a version.

    Examples::

        >>> TorchVersion("1.10.0a") > "1.2"
        True
        >>> TorchVersion("1.10.0a") > (1, 2, 1)
        True
        >>> TorchVersion("2.13.0") == (2, 13)
        True
    """

    __slots__ = ()

    def _compare(self, other: Any, method: str):
        try:
            return getattr(_sort_key(self), method)(_as_key(other))
        except InvalidVersion:
            return getattr(str, method)(self, other)

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, "__gt__")

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, "__lt__")

    def __ge__(self, other: Any) -> bool:
        return self._compare(other, "__ge__")

    def __le__(self, other: Any) -> bool:
        return self._compare(other, "__le__")

    def __eq__(self, other: Any) -> bool:
        return self._compare(other, "__eq__")

    __hash__ = str.__hash__  # equal strings hash alike; ``!=`` stays str's, as in PyTorch


def __getattr__(name: str):
    if name == "__version__":  # ember-core's installed version (``ember.version``'s answer)
        from . import version

        return TorchVersion(version.__version__)
    raise AttributeError(f"module 'ember.torch_version' has no attribute '{name}'")
