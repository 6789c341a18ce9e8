"""hubconf.py repositories: GitHub archives (downloaded, extracted safely) and local dirs.

The archive URL is ``{GITHUB_URL}/owner/repo/zipball/ref``; ``GITHUB_URL`` defaults to
``https://github.com`` and is read from ``EMBER_HUB_GITHUB_URL`` (tests point it at a
local server). Branch validation asks ``{GITHUB_API_URL}/repos/owner/repo/branches`` and
``/tags`` (``EMBER_HUB_GITHUB_API_URL``, default ``https://api.github.com``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import stat
import struct
import sys
import warnings
import zipfile
from pathlib import Path
from types import ModuleType

import requests

from . import download
from ._cache import ENV_OFFLINE, get_dir, is_offline

ENV_GITHUB_URL = "EMBER_HUB_GITHUB_URL"
ENV_GITHUB_API_URL = "EMBER_HUB_GITHUB_API_URL"
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
GITHUB_URL: str | None = None  # module-level override of the archive host
GITHUB_API_URL: str | None = None
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
MAX_ARCHIVE_MEMBERS = 100_000
MAX_ARCHIVE_BYTES = 2 * 1024**3  # uncompressed total

_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")


def github_url() -> str:
    return (GITHUB_URL or os.getenv(ENV_GITHUB_URL) or "https://github.com").rstrip("/")


def github_api_url() -> str:
    return (GITHUB_API_URL or os.getenv(ENV_GITHUB_API_URL)
            or "https://api.github.com").rstrip("/")


def git_archive_link(owner: str, name: str, ref: str) -> str:
    return f"{github_url()}/{owner}/{name}/zipball/{ref}"


def parse_repo_info(github: str) -> tuple[str, str, str | None]:
    """``"owner/repo[:ref]"`` -> (owner, repo, ref or None)."""
    repo_info, _, ref = github.partition(":")
    parts = repo_info.split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f'Invalid GitHub repository "{github}": expected '
                         '"repo_owner/repo_name[:ref]"')
    return parts[0], parts[1], ref or None


# --- safe extraction -----------------------------------------------------------------

MAX_NAME_BYTES = 4096  # PATH_MAX: a longer name cannot be extracted anyway
MAX_DEFLATE_RATIO = 1032  # deflate never turns one byte into more than 1032
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")


def _check_member(member: zipfile.ZipInfo) -> None:
    """Refuse a member that could write outside the target, or is not a plain file or
    directory, or claims more data than its compressed bytes can hold."""
    name = member.filename
    if "\0" in member.orig_filename:
        raise ValueError(f"Archive entry name contains a NUL byte: {member.orig_filename!r}")
    if name.startswith(("/", "\\")) or (len(name) >= 2 and name[1] == ":"):
        raise ValueError(f"Archive entry has absolute path: {name}")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise ValueError(f"Archive entry contains directory traversal: {name}")
    if len(name.encode()) > MAX_NAME_BYTES or any(len(p.encode()) > 255 for p in parts):
        raise ValueError(f"Archive entry name is too long: {name[:100]}...")
    mode = member.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise ValueError(f"Archive entry is a symbolic link: {name}")
    if member.create_system == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ValueError(f"Archive entry is not a regular file or directory: {name}")
    if member.flag_bits & 0x1:
        raise ValueError(f"Archive entry is encrypted: {name}")
    if member.compress_type not in _METHODS:
        raise ValueError(f"Archive entry uses unsupported compression "
                         f"{member.compress_type}: {name}")
    if member.compress_type == zipfile.ZIP_DEFLATED and \
            member.file_size > MAX_DEFLATE_RATIO * member.compress_size + 1024:
        raise ValueError(f"Archive entry {name} declares {member.file_size} bytes from "
                         f"{member.compress_size} compressed bytes, more than deflate can give")


def _check_layout(zf: zipfile.ZipFile, members: list) -> None:
    """Refuse duplicate names, a name that is both a file and a directory, and members
    whose data overlap (a zip bomb's trick to inflate the same bytes many times)."""
    names: set[str] = set()
    parents: set[str] = set()
    for member in members:
        name = member.filename.rstrip("/")
        if name in names:
            raise ValueError(f"Archive has duplicate entry: {name}")
        names.add(name)
        parts = name.split("/")
        parents.update("/".join(parts[:i]) for i in range(1, len(parts)))
    files = {m.filename for m in members if not m.is_dir()}
    both = sorted(files & parents)
    if both:
        raise ValueError(f"Archive entry is both a file and a directory: {both[0]}")
    spans = sorted((m.header_offset, _data_end(zf, m), m.filename) for m in members)
    for (_, end, name), (start, _, other) in zip(spans, spans[1:]):
        if end > start:
            raise ValueError(f"Archive entries overlap: {name} and {other}")


def _data_end(zf: zipfile.ZipFile, member: zipfile.ZipInfo) -> int:
    zf.fp.seek(member.header_offset)
    header = zf.fp.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\003\004":
        raise zipfile.BadZipFile(f"Bad local header for archive entry {member.filename}")
    fields = _LOCAL_HEADER.unpack(header)
    return member.header_offset + len(header) + fields[10] + fields[11] + member.compress_size


def safe_extract_zip(zf: zipfile.ZipFile, extract_to: str | os.PathLike) -> None:
    """Extract ``zf`` into ``extract_to``. Everything is checked before anything is written:
    absolute paths, ``..``, NUL bytes and overlong names, symlinks and special files,
    encryption, duplicate names, files that are also directories, overlapping members, a
    member claiming more than deflate can produce, and archives above
    ``MAX_ARCHIVE_MEMBERS`` entries or ``MAX_ARCHIVE_BYTES`` uncompressed (:mod:`zipfile`
    then never writes more than a member declares, and checks its CRC-32)."""
    root = Path(extract_to).resolve()
    members = zf.infolist()
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise ValueError(f"Archive has {len(members)} entries, more than the limit "
                         f"{MAX_ARCHIVE_MEMBERS}")
    total = sum(m.file_size for m in members)
    if total > MAX_ARCHIVE_BYTES:
        raise ValueError(f"Archive unpacks to {total} bytes, more than the limit "
                         f"{MAX_ARCHIVE_BYTES}")
    for member in members:
        _check_member(member)
        if not (root / member.filename).resolve().is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
    _check_layout(zf, members)
    for member in members:
        zf.extract(member, root)


# --- trust ---------------------------------------------------------------------------

def check_repo_is_trusted(owner: str, name: str, owner_name_branch: str, trust_repo,
                          calling_fn: str = "load") -> None:
    """torch.hub's trust check: None warns and trusts, "check" prompts for unknown repos,
    False always prompts, True trusts. Trusted repos are kept in ``<hub_dir>/trusted_list``."""
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, "trusted_list")
    Path(filepath).touch()
    with open(filepath) as f:
        trusted_repos = tuple(line.strip() for line in f)
    # A repo already downloaded counts as trusted (torch's legacy rule).
    trusted_legacy = next(os.walk(hub_dir))[1]
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted_repos or owner_name_branch in trusted_legacy
                  or owner in _TRUSTED_REPO_OWNERS)

    if trust_repo is None:
        if not is_trusted:
            warnings.warn(
                "You are about to download and run code from an untrusted repository. In a "
                "future release, this won't be allowed. To add the repository to your trusted "
                f"list, change the command to {calling_fn}(..., trust_repo=False) and a "
                "command prompt will appear asking for an explicit confirmation of trust, "
                f"or {calling_fn}(..., trust_repo=True), which will assume that the prompt is "
                f"to be answered with 'yes'. You can also use {calling_fn}(..., "
                "trust_repo='check') which will only prompt for confirmation if the repo is "
                "not already trusted. This will eventually be the default behaviour",
                stacklevel=4)
    elif trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories "
            "and as such cannot be downloaded. Do you trust this repository and wish to add it "
            "to the trusted list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {response}.")

    if not is_trusted:
        with open(filepath, "a") as f:
            f.write(owner_name + "\n")


# --- GitHub download -----------------------------------------------------------------

_MAX_PAGES = 100


def _validate_not_a_forked_repo(owner: str, name: str, ref: str) -> None:
    headers = {"Accept": "application/vnd.github.v3+json", "User-Agent": download.USER_AGENT}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for kind in ("branches", "tags"):
        for page in range(1, _MAX_PAGES + 1):  # bounded: a server repeating a page can't hang us
            url = f"{github_api_url()}/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            response = requests.get(url, headers=headers, timeout=download.DEFAULT_TIMEOUT)
            response.raise_for_status()
            entries = response.json()
            for entry in entries:
                if entry["name"] == ref or entry["commit"]["sha"].startswith(ref):
                    return
            if len(entries) < 100:  # the last page
                break
    raise ValueError(f"Cannot find {ref} in https://github.com/{owner}/{name}. If it's a "
                     "commit from a forked repo, please call hub.load() with forked repo "
                     "directly.")


def _download_archive(owner: str, name: str, ref: str | None, dst: str) -> str:
    """Download the zipball; without a ref try ``main`` then ``master``. Returns the ref."""
    for candidate in ([ref] if ref else ["main", "master"]):
        url = git_archive_link(owner, name, candidate)
        sys.stdout.write(f'Downloading: "{url}" to {dst}\n')
        try:
            download.download_url_to_file(url, dst, progress=False)
            return candidate
        except requests.HTTPError as err:
            status = err.response.status_code if err.response is not None else None
            if ref or status != 404 or candidate == "master":
                raise
    raise AssertionError("unreachable")


def _cached_repo_dir(hub_dir: str, owner: str, name: str, ref: str | None) -> str | None:
    for candidate in ([ref] if ref else ["main", "master"]):
        path = os.path.join(hub_dir, f"{owner}_{name}_{candidate.replace('/', '_')}")
        if os.path.isdir(path):
            return path
    return None


def get_cache_or_reload(github: str, force_reload: bool, trust_repo, calling_fn: str,
                        verbose: bool = True, skip_validation: bool = False) -> str:
    """The directory of the extracted ``github`` repository, downloading it if needed."""
    owner, name, ref = parse_repo_info(github)
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    branch_for_name = ref or "main"
    owner_name_branch = f"{owner}_{name}_{branch_for_name.replace('/', '_')}"
    check_repo_is_trusted(owner, name, owner_name_branch, trust_repo, calling_fn)

    cached = _cached_repo_dir(hub_dir, owner, name, ref)
    if cached and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {cached}\n")
        return cached
    if is_offline():
        expected = os.path.join(hub_dir, owner_name_branch)
        url = git_archive_link(owner, name, branch_for_name)
        raise download.OfflineError(f"{ENV_OFFLINE} is set: cannot download {url}; the "
                                    f"repository is not in the cache at {expected}")
    if not skip_validation and ref:
        _validate_not_a_forked_repo(owner, name, ref)

    archive = os.path.join(hub_dir, f"{owner}_{name}_{branch_for_name.replace('/', '_')}.zip")
    ref = _download_archive(owner, name, ref, archive)
    repo_dir = os.path.join(hub_dir, f"{owner}_{name}_{ref.replace('/', '_')}")
    staging = os.path.join(hub_dir, f".{os.path.basename(repo_dir)}.extract")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        with zipfile.ZipFile(archive) as zf:
            safe_extract_zip(zf, staging)
        top = os.listdir(staging)
        source = os.path.join(staging, top[0]) if len(top) == 1 else staging
        if not os.path.isdir(source):
            source = staging
        shutil.rmtree(repo_dir, ignore_errors=True)
        shutil.move(source, repo_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.remove(archive)
    return repo_dir


# --- hubconf -------------------------------------------------------------------------

@contextlib.contextmanager
def _add_to_sys_path(path: str):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def import_hubconf(repo_dir: str) -> ModuleType:
    """Import ``<repo_dir>/hubconf.py`` as a fresh module (repo_dir on sys.path meanwhile)."""
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No {MODULE_HUBCONF} found in {repo_dir}")
    with _add_to_sys_path(repo_dir):
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def check_dependencies(module: ModuleType) -> None:
    dependencies = getattr(module, VAR_DEPENDENCY, None)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def entrypoints(module: ModuleType) -> list[str]:
    """Public callables of a hubconf module (names starting with ``_`` are helpers)."""
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def load_entry(module: ModuleType, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    check_dependencies(module)
    func = getattr(module, model, None) if model in dir(module) else None
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def load_local(hubconf_dir: str, model: str, *args, **kwargs):
    """Call entrypoint ``model`` of ``<hubconf_dir>/hubconf.py`` with the given arguments."""
    with _add_to_sys_path(hubconf_dir):
        module = import_hubconf(hubconf_dir)
        entry = load_entry(module, model)
        return entry(*args, **kwargs)
