"""Download, checksum and safe archive extraction, as in ``torchvision.datasets.utils``."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import pathlib
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterable

__all__ = [
    "calculate_md5",
    "check_md5",
    "check_integrity",
    "download_url",
    "extract_archive",
    "download_and_extract_archive",
    "verify_str_arg",
    "UnsafeArchiveError",
]


class UnsafeArchiveError(RuntimeError):
    """An archive member would land outside the target folder or is not a plain file or folder."""


def calculate_md5(fpath, chunk_size: int = 1024 * 1024) -> str:
    """Hex MD5 of a file, read in chunks."""
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath, md5: str, **kwargs) -> bool:
    """Whether the file's MD5 is ``md5``."""
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath, md5: str | None = None) -> bool:
    """Whether ``fpath`` is a file and, when ``md5`` is given, has that checksum."""
    if not os.path.isfile(fpath):
        return False
    if md5 is None:
        return True
    return check_md5(fpath, md5)


def download_url(
    url: str, root, filename=None, md5: str | None = None, max_redirect_hops: int = 3
) -> None:
    """Download ``url`` into ``root/filename`` (kept when already there with the right MD5),
    through ember-hub's downloader (retries, resume, atomic rename, checksum)."""
    from ember.hub.download import fetch  # lazy: only downloads need ember-hub

    root = os.path.expanduser(root)
    fpath = os.fspath(os.path.join(root, filename or os.path.basename(url)))
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5):
        return
    try:
        fetch(url, fpath, md5=md5, force=True)
    except RuntimeError as e:
        raise RuntimeError(f"File not found or corrupted. ({e})") from None
    if not check_integrity(fpath, md5):
        raise RuntimeError("File not found or corrupted.")


_CHUNK = 1 << 20  # bytes copied at a time when extracting

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_ALIASES = {
    ".tgz": (".tar", ".gz"),
    ".tbz": (".tar", ".bz2"),
    ".tbz2": (".tar", ".bz2"),
    ".txz": (".tar", ".xz"),
}


def _detect_file_type(file) -> tuple[str, str | None, str | None]:
    """``(suffix, archive type, compression)`` from the file name."""
    suffixes = pathlib.Path(file).suffixes
    if not suffixes:
        raise RuntimeError(
            f"File '{file}' has no suffixes that could be used to detect the archive type "
            "and compression."
        )
    suffix = suffixes[-1]
    if suffix in _ALIASES:
        return (suffix, *_ALIASES[suffix])
    if suffix in (".tar", ".zip"):
        return suffix, suffix, None
    if suffix in _COMPRESSED:
        if len(suffixes) > 1 and suffixes[-2] == ".tar":
            return ".tar" + suffix, ".tar", suffix
        return suffix, None, suffix
    known = sorted(set(_ALIASES) | {".tar", ".zip"} | set(_COMPRESSED))
    raise RuntimeError(
        f"Unknown compression or archive type: '{suffix}'.\nKnown suffixes are: '{known}'."
    )


def _member_target(to_path: str, name: str, archive) -> str:
    """Where ``name`` extracts to; absolute paths and ``..`` escaping ``to_path`` are refused."""
    parts = name.replace("\\", "/").split("/")
    if (
        name.startswith(("/", "\\"))
        or os.path.isabs(name)
        or (parts and ":" in parts[0])
        or ".." in parts
    ):
        raise UnsafeArchiveError(
            f"Refusing to extract {name!r} from {archive}: the path leaves the target folder"
        )
    root = os.path.realpath(to_path)
    target = os.path.realpath(os.path.join(root, *[p for p in parts if p not in ("", ".")]))
    if target != root and not target.startswith(root + os.sep):
        raise UnsafeArchiveError(
            f"Refusing to extract {name!r} from {archive}: the path leaves the target folder"
        )
    return target


def _extract_members(from_path, to_path: str, members, open_member) -> None:
    """Write ``members`` (``(name, is_dir, unsafe_kind or None, member)``) under ``to_path``.

    Every member is checked before anything is written: a path leaving ``to_path`` or an
    ``unsafe_kind`` (a link, a device, ...) raises :class:`UnsafeArchiveError`. Files are
    copied from ``open_member(member)``."""
    for name, _, unsafe_kind, _ in members:
        _member_target(to_path, name, from_path)
        if unsafe_kind is not None:
            raise UnsafeArchiveError(
                f"Refusing to extract {name!r} from {from_path}: it is a {unsafe_kind}"
            )
    for name, is_dir, _, member in members:
        target = _member_target(to_path, name, from_path)
        if is_dir:
            os.makedirs(target, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open_member(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)


def _tar_unsafe_kind(m: tarfile.TarInfo) -> str | None:
    if m.isfile() or m.isdir():
        return None
    return "link" if (m.issym() or m.islnk()) else "device or special file"


def _zip_unsafe_kind(info: zipfile.ZipInfo) -> str | None:
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the archiver stored no type
    if kind in (0, stat.S_IFREG, stat.S_IFDIR):
        return None
    return "link" if kind == stat.S_IFLNK else "device or special file"


def _extract_tar(from_path, to_path: str, compression: str | None) -> None:
    mode = f"r:{compression[1:]}" if compression else "r"
    with tarfile.open(from_path, mode) as tar:
        members = [(m.name, m.isdir(), _tar_unsafe_kind(m), m) for m in tar.getmembers()]
        _extract_members(from_path, to_path, members, tar.extractfile)


def _extract_zip(from_path, to_path: str, compression: str | None) -> None:
    with zipfile.ZipFile(from_path) as zf:
        members = [(i.filename, i.is_dir(), _zip_unsafe_kind(i), i) for i in zf.infolist()]
        _extract_members(from_path, to_path, members, zf.open)


_EXTRACTORS = {".tar": _extract_tar, ".zip": _extract_zip}


def _decompress(from_path, to_path, remove_finished: bool = False) -> pathlib.Path:
    suffix, archive_type, compression = _detect_file_type(from_path)
    if not compression:
        raise RuntimeError(f"Couldn't detect a compression from suffix {suffix}.")
    with _COMPRESSED[compression](from_path, "rb") as rfh, open(to_path, "wb") as wfh:
        shutil.copyfileobj(rfh, wfh, _CHUNK)
    if remove_finished:
        os.remove(from_path)
    return pathlib.Path(to_path)


def extract_archive(from_path, to_path=None, remove_finished: bool = False):
    """Extract a tar/zip archive (optionally gz/bz2/xz compressed) or decompress a single file.

    Members with absolute paths, ``..`` components, links, devices or other special files are
    refused with :class:`UnsafeArchiveError` before anything is written.
    Returns the folder extracted to (the decompressed file for a plain compressed file).
    """
    as_str = isinstance(from_path, str)
    if to_path is None:
        to_path = os.path.dirname(from_path)
    suffix, archive_type, compression = _detect_file_type(from_path)
    if not archive_type:
        out = _decompress(
            from_path,
            os.path.join(to_path, os.path.basename(from_path).replace(suffix, "")),
            remove_finished,
        )
        return os.fspath(out) if as_str else out
    os.makedirs(to_path, exist_ok=True)
    _EXTRACTORS[archive_type](from_path, os.fspath(to_path), compression)
    if remove_finished:
        os.remove(from_path)
    return os.fspath(to_path) if as_str else pathlib.Path(to_path)


def download_and_extract_archive(
    url: str,
    download_root,
    extract_root=None,
    filename=None,
    md5: str | None = None,
    remove_finished: bool = False,
) -> None:
    """:func:`download_url` then :func:`extract_archive`."""
    download_root = os.path.expanduser(download_root)
    if extract_root is None:
        extract_root = download_root
    filename = filename or os.path.basename(url)
    download_url(url, download_root, filename, md5)
    extract_archive(os.path.join(download_root, filename), extract_root, remove_finished)


def iterable_to_str(iterable: Iterable) -> str:
    return "'" + "', '".join([str(item) for item in iterable]) + "'"


def verify_str_arg(
    value,
    arg: str | None = None,
    valid_values: Iterable | None = None,
    custom_msg: str | None = None,
) -> str:
    """Check that ``value`` is a string among ``valid_values``; torchvision's messages."""
    if not isinstance(value, str):
        msg = (
            "Expected type str"
            + (f" for argument {arg}" if arg is not None else "")
            + f", but got type {type(value)}."
        )
        raise ValueError(msg)
    if valid_values is None:
        return value
    if value not in valid_values:
        msg = custom_msg or (
            f"Unknown value '{value}' for argument {arg}. "
            f"Valid values are {{{iterable_to_str(valid_values)}}}."
        )
        raise ValueError(msg)
    return value
