"""Public programs that Ember's tests run unedited, read from outside this repository.

Some tests run other people's PyTorch programs as they are (pytorch/examples' Python and C++
examples, karpathy/nanoGPT) to show that PyTorch programs run on Ember. Their code is not part
of this repository: each is read at a pinned commit from a local git copy of its upstream
repository, found in the directory that ``EMBER_UPSTREAM`` names, as ``owner+name`` there:

    $EMBER_UPSTREAM/pytorch+examples        a clone, a bare git directory, or a directory
    $EMBER_UPSTREAM/karpathy+nanoGPT        holding one named ``repo``
    $EMBER_UPSTREAM/p-ranav+argparse
    $EMBER_UPSTREAM/karpathy+minGPT
    $EMBER_UPSTREAM/karpathy+makemore
    $EMBER_UPSTREAM/karpathy+ng-video-lecture

(``git clone --bare https://github.com/pytorch/examples $EMBER_UPSTREAM/pytorch+examples``
makes one). The pinned commit's files are written once into a cache directory
(``EMBER_UPSTREAM_CACHE``, by default ``ember-upstream`` in the system's temporary directory)
and reused; files the local copy lacks (a partial snapshot without its largest files) are left
out. Without a local copy the tests that need it skip, saying what to provide; with
``EMBER_UPSTREAM_REQUIRED=1`` (as CI sets it where it has the copies) they fail instead.

    python tools/upstream_sources.py pytorch/examples    # prints the checkout's path
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The commits the tests were written against (their expected outputs are these programs').
PINS = {
    "pytorch/examples": "77f55b912142e11fcfdf5b530231fb9c52f181e8",  # 2025-08-25
    "karpathy/nanoGPT": "3adf61e154c3fe3fca428ad6bc3818b27a3b8291",  # 2025-11-12
    "p-ranav/argparse": "d924b84eba1f0f0adf38b20b7b4829f6f65b6570",  # header dcgan.cpp needs
    "karpathy/minGPT": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",  # 2023-01-08
    "karpathy/makemore": "988aa59e4d8fefa526d06f3b453ad116258398d4",  # 2022-11-20
    "karpathy/ng-video-lecture": "52201428ed7b46804849dea0b3ccf0de9df1a5c3",  # 2023-02-07
}
ENV = "EMBER_UPSTREAM"


def required() -> bool:
    """Whether a missing upstream program is an error (``EMBER_UPSTREAM_REQUIRED=1``)."""
    return os.environ.get("EMBER_UPSTREAM_REQUIRED", "") not in ("", "0")


def git_dir(repo: str) -> Path | None:
    """The local git directory of ``repo`` ("owner/name") under ``$EMBER_UPSTREAM``, or None."""
    root = os.environ.get(ENV)
    if not root:
        return None
    base = Path(root) / repo.replace("/", "+")
    for candidate in (base / ".git", base / "repo", base / "repo" / ".git", base):
        if (candidate / "objects").is_dir() and (candidate / "HEAD").is_file():
            return candidate
    return None


def missing_reason(repo: str) -> str:
    """Why ``checkout(repo)`` is None, and what to provide."""
    where = os.environ.get(ENV)
    place = (f"no git copy of it in {where}/{repo.replace('/', '+')}" if where
             else f"{ENV} is not set")
    return (f"{repo} at {PINS[repo][:12]} is not available here ({place}); set {ENV} to a "
            f"directory holding a clone of https://github.com/{repo} as "
            f"{repo.replace('/', '+')} (tools/upstream_sources.py)")


def _git(gitdir: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True,
                          capture_output=True, **kwargs)


def _write_tree(gitdir: Path, commit: str, dest: Path) -> None:
    """Every file of ``commit`` whose blob ``gitdir`` holds, written under ``dest``."""
    listing = _git(gitdir, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    entries = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":  # symbolic links are left out
            entries.append((mode, sha.decode(), path.decode()))
    batch = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert batch.stdin is not None and batch.stdout is not None
    try:
        for mode, sha, path in entries:
            batch.stdin.write(sha.encode() + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline().split()
            if header[-1] == b"missing":
                continue  # not in a partial snapshot
            data = batch.stdout.read(int(header[2]))
            batch.stdout.read(1)  # the newline after the contents
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if mode == b"100755":
                target.chmod(0o755)
    finally:
        batch.stdin.close()
        batch.wait()


def checkout(repo: str) -> Path | None:
    """A directory holding ``repo`` at its pinned commit (written on the first call, then
    reused), or None when no local copy of it is found (see ``missing_reason``)."""
    gitdir = git_dir(repo)
    if gitdir is None:
        return None
    commit = PINS[repo]
    cache = Path(os.environ.get("EMBER_UPSTREAM_CACHE")
                 or Path(tempfile.gettempdir()) / "ember-upstream")
    dest = cache / f"{repo.replace('/', '+')}-{commit[:12]}"
    if dest.is_dir():
        return dest
    try:
        _git(gitdir, "cat-file", "-e", f"{commit}^{{commit}}")
    except subprocess.CalledProcessError:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    # written beside its final place, then renamed: a test running in parallel sees either no
    # checkout or a whole one
    part = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=cache))
    try:
        _write_tree(gitdir, commit, part)
        part.rename(dest)
    except OSError:
        if not dest.is_dir():
            raise
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return dest


def main() -> None:
    unknown = [repo for repo in sys.argv[1:] if repo not in PINS]
    if not sys.argv[1:] or unknown:
        raise SystemExit(f"usage: {sys.argv[0]} REPO...  (REPO one of {', '.join(PINS)})")
    for repo in sys.argv[1:]:
        path = checkout(repo)
        if path is None:
            raise SystemExit(missing_reason(repo))
        print(path)


if __name__ == "__main__":
    main()
