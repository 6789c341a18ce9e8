"""What the datasets share: torchtext's split argument, the download through ember-hub's
downloader, members read out of archives, and a streaming dataset sharded over workers."""

from __future__ import annotations

import functools
import importlib.resources
import inspect
import itertools
import lzma
import os
import tarfile
import uuid
import zipfile
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import urlsplit

from ember.data import IterableDataset, get_worker_info

#: an HTTP(S) base that replaces the host of every dataset URL: ``<mirror>/<host>/<path>``
#: (e.g. a local copy of the files, or the test server); unset, the real URLs are used
ENV_MIRROR = "EMBER_TEXT_MIRROR"

#: where torchtext's download datasets keep their files when ``root`` is not given (torchtext's
#: own default root, ``.data``); they go under ``<root>/datasets/<NAME>``
DEFAULT_ROOT = ".data"


class SplitError(TypeError, ValueError):
    """An unknown split: torchtext's ``TypeError``, and a ``ValueError`` as for other bad
    argument values, with torchtext's message."""


def check_split(split, splits: tuple[str, ...], dataset_name: str) -> tuple[str, ...]:
    """``split`` (a name or a tuple of names) as a tuple, each among ``splits``; torchtext's
    errors otherwise."""
    if isinstance(split, str):
        split = (split,)
    if not isinstance(split, tuple):
        raise ValueError("Internal error: Expected split to be of type tuple.")
    if not set(split).issubset(set(splits)):
        raise SplitError(f"Given selection {split} of splits is not supported for dataset "
                         f"{dataset_name}. Please choose from {splits}.")
    return split


def check_single_split(split, splits: tuple[str, ...], dataset_name: str) -> str:
    """``split``, one name among ``splits`` (a dataset class makes one split at a time)."""
    check_split(split, splits, dataset_name)
    if not isinstance(split, str):
        raise TypeError(f"{dataset_name} takes one split name, got {split!r}")
    return split


_DOC = """{name} Dataset

    For additional details refer to {details}

    Number of lines per split:
{counts}

    Args:
        root: Directory where the datasets are saved (under ``datasets/{name}``).
            Default: ``.data``
        split: split or splits to be returned. Can be a string or tuple of strings.
            Default: {default}

    :returns: an ``IterableDataset`` that yields {returns}
    :rtype: {rtype}
    """


def dataset(name: str, num_lines: dict[str, int], details: str, returns: str,
            rtype: str) -> Callable:
    """torchtext's ``_create_dataset_directory`` + ``_wrap_split_argument``: the decorated
    ``fn(root, split)`` makes one split; the result is ``NAME(root=".data", split=splits)``
    (the splits being the keys of ``num_lines``, in order), which makes
    ``<root>/datasets/<name>`` and returns one dataset for a split name and a tuple of
    datasets for a tuple of names. Its docstring is torchtext's, from the other arguments."""
    splits = tuple(num_lines)

    def decorate(fn: Callable[[str, str], object]) -> Callable:
        @functools.wraps(fn)
        def make(root: str | os.PathLike = DEFAULT_ROOT, split: str | tuple[str, ...] = splits):
            selected = check_split(split, splits, name)
            folder = os.path.join(os.path.expanduser(os.fspath(root)), "datasets", name)
            os.makedirs(folder, exist_ok=True)
            made = tuple(fn(folder, s) for s in selected)
            return made[0] if isinstance(split, str) else made

        params = [inspect.Parameter("root", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=DEFAULT_ROOT),
                  inspect.Parameter("split", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=splits)]
        make.__signature__ = inspect.Signature(params)
        make.__doc__ = _DOC.format(
            name=name, details=details, returns=returns, rtype=rtype,
            counts="\n".join(f"        - {s}: {n}" for s, n in num_lines.items()),
            default="(" + ", ".join(f"`{s}`" for s in splits) + ")")
        return make

    return decorate


def read_corpus(root: str | os.PathLike | None, name: str) -> str:
    """The text of an embedded corpus file (``_data/<name>``, xz-compressed), or of
    ``<root>/<name>`` when ``root`` is given (``.xz`` or, without the suffix, plain), as it
    is (line ends kept)."""
    if root is None:
        data = lzma.decompress((importlib.resources.files(__package__) / "_data" / name)
                               .read_bytes())
    else:
        path = os.path.join(os.path.expanduser(os.fspath(root)), name)
        plain = path.removesuffix(".xz")
        if not os.path.isfile(path) and os.path.isfile(plain):
            with open(plain, "rb") as f:
                data = f.read()
        else:
            with lzma.open(path) as f:
                data = f.read()
    return data.decode("utf-8")


def source_url(url: str) -> str:
    """``url``, or its copy under ``$EMBER_TEXT_MIRROR`` (``<mirror>/<host>/<path>``)."""
    mirror = os.environ.get(ENV_MIRROR, "").strip()
    if not mirror:
        return url
    parts = urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def download(url: str, path: str, md5: str) -> str:
    """``path``, downloaded from ``url`` (or its mirror) unless a copy with this MD5 is there.

    ember-hub's downloader retries, resumes, verifies and renames into place; offline
    (``EMBER_HUB_OFFLINE=1``) a missing file raises its ``OfflineError``. A file whose MD5
    is not ``md5`` raises ``RuntimeError`` naming the file and where it came from.
    """
    from ember.hub import OfflineError, fetch

    source = source_url(url)
    try:
        return fetch(source, path, md5=md5)
    except OfflineError:
        raise
    except RuntimeError as exc:  # the downloader's checksum mismatch
        raise RuntimeError(f"checksum mismatch for {path} downloaded from {source}: {exc}; "
                           "the file was not kept") from None


def write_atomic(path: str, chunks: Iterable[bytes]) -> str:
    """Write ``chunks`` to a temporary file beside ``path``, then rename it into place, so
    that ``path`` exists only complete."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}.partial"
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _member_name(names: Iterable[str], inner: str, archive: str) -> str:
    """The archive member that is ``inner`` (``/``-separated), exactly or below a folder."""
    wanted = inner.replace(os.sep, "/")
    names = list(names)
    for name in names:
        if name == wanted or name.endswith("/" + wanted):
            return name
    raise RuntimeError(f"{archive} has no member {wanted!r}; is it the right archive?")


def extract_member(archive: str, inner: str, target: str) -> str:
    """``target``: the member ``inner`` of the zip ``archive``, written once (atomically)."""
    if os.path.isfile(target):
        return target
    with zipfile.ZipFile(archive) as zf:
        name = _member_name(zf.namelist(), inner, archive)
        with zf.open(name) as member:
            write_atomic(target, iter(lambda: member.read(1 << 20), b""))
    return target


def archive_member(root: str, url: str, md5: str, inner: str,
                   archive_name: str | None = None) -> str:
    """``<root>/<inner>``, taken from the zip at ``url`` (downloaded to ``<root>/<archive_name>``,
    the URL's file name by default) unless it was extracted before, as torchtext caches it."""
    target = os.path.join(root, inner)
    if os.path.isfile(target):
        return target
    archive = download(url, os.path.join(root, archive_name or os.path.basename(url)), md5)
    return extract_member(archive, inner, target)


def read_lines(path: str) -> Iterator[str]:
    """The lines of a UTF-8 text file, each with its newline (torchdata's
    ``readlines(strip_newline=False)``)."""
    with open(path, encoding="utf-8") as f:
        yield from f


def tar_members(archive: str, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of each regular file of a (compressed) tar archive whose name is
    ``wanted``, in order, streamed: the archive is read once, front to back. Names are only
    looked at, never used as paths."""
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if member.isfile() and wanted(member.name):
                yield member.name, tar.extractfile(member).read()


def shard(items: Iterable) -> Iterator:
    """The items of this DataLoader worker: round robin over the workers (torchtext's
    ``sharding_filter``), all of them in the main process."""
    info = get_worker_info()
    if info is None or info.num_workers <= 1:
        return iter(items)
    return itertools.islice(items, info.id, None, info.num_workers)


class TextDataset(IterableDataset):
    """One split of a text dataset, streamed from its files: ``reader(source)`` yields the
    items; each DataLoader worker gets every ``num_workers``-th item. ``len()`` is the
    number of items torchtext documents (``NUM_LINES``)."""

    def __init__(self, name: str, split: str, source, reader: Callable[..., Iterator],
                 num_lines: int) -> None:
        self.name, self.split, self.source = name, split, source
        self.reader, self.num_lines = reader, num_lines

    def __iter__(self) -> Iterator:
        return shard(self.reader(self.source))

    def __len__(self) -> int:
        return self.num_lines

    def __repr__(self) -> str:
        return f"{self.name}(split={self.split!r}, source={self.source!r})"
