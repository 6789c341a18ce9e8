"""Ember hub, mirroring ``torch.hub``: ``load``, ``list``, ``help`` and the weights cache.

Models of other distributions are found through the ``ember.hub`` entry-point
group, never by a static import. Installed by the ``ember-hub`` distribution.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
import warnings
import zipfile
from typing import Any
from urllib.parse import urlparse

from . import _installed, _repo
from ._cache import get_dir, is_offline, set_dir
from .download import DownloadTimeoutError, OfflineError, download_url_to_file, fetch

__version__ = "0.1.0"

__all__ = [
    "DownloadTimeoutError",
    "OfflineError",
    "download_url_to_file",
    "fetch",
    "get_dir",
    "help",
    "list",
    "load",
    "load_state_dict_from_url",
    "set_dir",
]

# matches bfd8deac from resnet18-bfd8deac.pth
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")


def _is_installed_name(name) -> bool:
    return isinstance(name, str) and "/" not in name and not os.path.isdir(name)


def _repo_dir(github, force_reload, trust_repo, calling_fn, verbose, skip_validation) -> str:
    """A local directory as it is; "owner/repo[:ref]" downloaded into the hub cache."""
    if os.path.isdir(github):
        return github
    return _repo.get_cache_or_reload(github, force_reload, trust_repo, calling_fn,
                                     verbose=verbose, skip_validation=skip_validation)


def list(github: str | None = None, force_reload: bool = False, skip_validation: bool = False,
         trust_repo=None, verbose: bool = True) -> builtins.list[str]:
    """List the callable entrypoints of the hubconf.py of ``github`` ("owner/repo[:ref]",
    or a local directory).

    With no argument, list every model name that the installed distributions provide
    through the ``ember.hub`` entry-point group.
    """
    if github is None:
        return _installed.list_models()
    repo_dir = _repo_dir(github, force_reload, trust_repo, "list", verbose, skip_validation)
    return _repo.entrypoints(_repo.import_hubconf(repo_dir))


def help(github: str, model: str | None = None, force_reload: bool = False,
         skip_validation: bool = False, trust_repo=None) -> str | None:
    """Return the docstring of entrypoint ``model`` of ``github``'s hubconf.py (``github``
    is "owner/repo[:ref]" or a local directory).

    ``help("resnet18")`` returns the docstring of an installed model.
    """
    if model is None and _is_installed_name(github):
        return _installed.find_model(github).__doc__
    repo_dir = _repo_dir(github, force_reload, trust_repo, "help", True, skip_validation)
    return _repo.load_entry(_repo.import_hubconf(repo_dir), model).__doc__


def load(repo_or_dir: str, model: str | None = None, *args, source: str = "github",
         trust_repo=None, force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs) -> Any:
    """Load a model from a GitHub repo, a local directory, or an installed distribution.

    ``source="github"``: ``repo_or_dir`` is ``"owner/repo[:ref]"``; its archive is
    downloaded into :func:`get_dir` and ``model`` called from its hubconf.py.
    ``source="local"``: ``repo_or_dir`` is a directory with a hubconf.py.
    A name without ``/`` that is not a directory (``load("resnet18", weights=...)``) is
    resolved through the ``ember.hub`` entry points of installed distributions; the model
    is returned in eval mode. ``*args``/``**kwargs`` go to the entrypoint.
    """
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github" and _is_installed_name(repo_or_dir):
        if model is not None:  # load("resnet18", arg, ...): ``model`` is a positional arg
            args = (model, *args)
        return _installed.load_model(repo_or_dir, *args, **kwargs)
    if source == "github":
        repo_or_dir = _repo.get_cache_or_reload(repo_or_dir, force_reload, trust_repo, "load",
                                                verbose=verbose,
                                                skip_validation=skip_validation)
    return _repo.load_local(repo_or_dir, model, *args, **kwargs)


def _is_legacy_zip_format(filename: str) -> bool:
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def _legacy_zip_load(filename: str, model_dir: str, map_location, weights_only: bool):
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in "
                  "favor of default zipfile format introduced in 1.6. Please redo "
                  "torch.save() to save it in the new zipfile format.", FutureWarning,
                  stacklevel=3)
    import ember

    with zipfile.ZipFile(filename) as zf:
        members = zf.infolist()
        _repo.safe_extract_zip(zf, model_dir)
        extracted = os.path.join(model_dir, members[0].filename)
    return ember.load(extracted, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = True) -> dict[str, Any]:
    """Load the serialized object at ``url``, downloading it into ``model_dir`` first.

    ``model_dir`` defaults to ``<get_dir()>/checkpoints``. With ``check_hash`` the file
    name must be ``name-<sha256 prefix>.ext`` and the prefix is verified, also for a file
    already in the cache (a corrupt one is downloaded again). Read with ``ember.load``.
    """
    import ember

    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    hash_prefix = None
    if check_hash:
        r = HASH_REGEX.search(filename)
        hash_prefix = r.group(1) if r else None
    if not os.path.exists(cached_file) and not is_offline():
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
    fetch(url, cached_file, hash_prefix=hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    return ember.load(cached_file, map_location=map_location, weights_only=weights_only)
