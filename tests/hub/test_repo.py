"""hubconf.py repositories: GitHub archives from a local server, local dirs, trust prompts."""

from __future__ import annotations

import io
import stat
import sys
import zipfile

import pytest

import ember
import ember.hub
from ember.hub import OfflineError, _repo

HUBCONF = '''
"""A test hubconf."""
dependencies = ["os"]


def tiny(scale=1, *, bias=0):
    """Build tiny."""
    return {"scale": scale, "bias": bias}


def _private():
    return None


CONSTANT = 3
'''


def make_zip(files: dict[str, bytes | str], symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


def repo_zip(hubconf: str = HUBCONF, extra: dict | None = None) -> bytes:
    files = {"owner-repo-abc123/hubconf.py": hubconf, "owner-repo-abc123/README": "hi"}
    files.update(extra or {})
    return make_zip(files)


@pytest.fixture
def github(server, hub_dir, monkeypatch):
    monkeypatch.setattr(_repo, "GITHUB_URL", server.base)
    monkeypatch.setattr(_repo, "GITHUB_API_URL", server.base + "/api")
    return server


def test_load_from_github_archive(github, hub_dir):
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip()))
    out = ember.hub.load("owner/repo:v1", "tiny", 2, bias=5, trust_repo=True,
                         skip_validation=True)
    assert out == {"scale": 2, "bias": 5}
    assert (hub_dir / "owner_repo_v1" / "hubconf.py").is_file()
    assert (hub_dir / "trusted_list").read_text().split() == ["owner_repo"]
    assert not list(hub_dir.glob("*.zip"))


def test_cached_repo_is_reused_and_force_reload_downloads(github, hub_dir, capsys):
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip()))
    kwargs = {"trust_repo": True, "skip_validation": True}
    assert ember.hub.list("owner/repo:v1", **kwargs) == ["tiny"]
    assert ember.hub.list("owner/repo:v1", **kwargs) == ["tiny"]
    assert "Using cache found in" in capsys.readouterr().err
    assert len(github.requests_to("/owner/repo/zipball/v1")) == 1
    ember.hub.list("owner/repo:v1", force_reload=True, **kwargs)
    assert len(github.requests_to("/owner/repo/zipball/v1")) == 2


def test_default_branch_falls_back_from_main_to_master(github, hub_dir):
    github.route("/owner/repo/zipball/master", github.serve(repo_zip()))
    assert ember.hub.help("owner/repo", "tiny", trust_repo=True) == "Build tiny."
    assert (hub_dir / "owner_repo_master").is_dir()
    assert len(github.requests_to("/owner/repo/zipball/main")) == 1


def test_validation_accepts_a_known_branch_and_rejects_others(github, hub_dir):
    import json

    github.route("/owner/repo/zipball/dev", github.serve(repo_zip()))
    branches = json.dumps([{"name": "dev", "commit": {"sha": "abc"}}]).encode()
    github.route("/api/repos/owner/repo/branches", lambda req, n: github.send_bytes(
        req, 200, branches if req.path.endswith("&page=1") else b"[]"))
    github.route("/api/repos/owner/repo/tags", lambda req, n: github.send_bytes(req, 200, b"[]"))
    assert ember.hub.list("owner/repo:dev", trust_repo=True) == ["tiny"]
    with pytest.raises(ValueError, match="Cannot find nope in https://github.com/owner/repo"):
        ember.hub.list("owner/repo:nope", trust_repo=True)


def test_missing_dependencies(github, hub_dir):
    conf = 'dependencies = ["os", "surely_not_a_module_xyz"]\ndef m():\n    return 1\n'
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip(conf)))
    with pytest.raises(RuntimeError, match="Missing dependencies: surely_not_a_module_xyz"):
        ember.hub.load("owner/repo:v1", "m", trust_repo=True, skip_validation=True)


def test_unknown_entrypoint(github, hub_dir):
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip()))
    with pytest.raises(RuntimeError, match="Cannot find callable nothere in hubconf"):
        ember.hub.load("owner/repo:v1", "nothere", trust_repo=True, skip_validation=True)


@pytest.mark.parametrize("name, message", [
    ("owner-repo-abc123/../../evil.py", "directory traversal"),
    ("/etc/evil.py", "absolute path"),
    ("../evil.py", "directory traversal"),
])
def test_archive_with_unsafe_paths_is_refused(github, hub_dir, tmp_path, name, message):
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip(extra={name: "x"})))
    with pytest.raises(ValueError, match=message):
        ember.hub.load("owner/repo:v1", "tiny", trust_repo=True, skip_validation=True)
    assert not (tmp_path / "evil.py").exists()
    assert not (hub_dir / "owner_repo_v1").exists()  # nothing extracted at all


def test_archive_with_a_symlink_is_refused(github, hub_dir):
    data = make_zip({"owner-repo-abc123/hubconf.py": HUBCONF},
                    symlinks={"owner-repo-abc123/link": "/etc/passwd"})
    github.route("/owner/repo/zipball/v1", github.serve(data))
    with pytest.raises(ValueError, match="symbolic link"):
        ember.hub.load("owner/repo:v1", "tiny", trust_repo=True, skip_validation=True)


def test_archive_above_the_size_limit_is_refused(github, hub_dir, monkeypatch):
    monkeypatch.setattr(_repo, "MAX_ARCHIVE_BYTES", 100)
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip(extra={
        "owner-repo-abc123/big.bin": b"\0" * 1000})))
    with pytest.raises(ValueError, match="more than the limit 100"):
        ember.hub.load("owner/repo:v1", "tiny", trust_repo=True, skip_validation=True)


def test_offline_repo_missing_fails_naming_url_and_cache(github, hub_dir, offline):
    with pytest.raises(OfflineError) as info:
        ember.hub.load("owner/repo:v1", "tiny", trust_repo=True, skip_validation=True)
    assert f"{github.base}/owner/repo/zipball/v1" in str(info.value)
    assert str(hub_dir / "owner_repo_v1") in str(info.value)
    assert github.log == []


# --- trust ---------------------------------------------------------------------------

@pytest.fixture
def served_repo(github):
    github.route("/owner/repo/zipball/v1", github.serve(repo_zip()))
    return github


def _load(trust_repo):
    return ember.hub.load("owner/repo:v1", "tiny", trust_repo=trust_repo,
                          skip_validation=True)


def test_trust_none_warns_and_records(served_repo, hub_dir, recwarn):
    assert _load(None) == {"scale": 1, "bias": 0}
    assert any("untrusted repository" in str(w.message) for w in recwarn.list)
    assert (hub_dir / "trusted_list").read_text().split() == ["owner_repo"]
    recwarn.clear()
    _load(None)  # now trusted: no second warning
    assert not any("untrusted repository" in str(w.message) for w in recwarn.list)


def test_trust_check_prompts_and_yes_records(served_repo, hub_dir, monkeypatch):
    prompts = []
    monkeypatch.setattr("builtins.input", lambda msg: prompts.append(msg) or "y")
    _load("check")
    assert len(prompts) == 1
    assert "The repository owner_repo does not belong to the list of trusted" in prompts[0]
    assert (hub_dir / "trusted_list").read_text().split() == ["owner_repo"]
    _load("check")  # trusted now: no second prompt
    assert len(prompts) == 1


@pytest.mark.parametrize("answer", ["n", "", "no"])
def test_trust_check_no_refuses_without_download(served_repo, hub_dir, monkeypatch, answer):
    monkeypatch.setattr("builtins.input", lambda msg: answer)
    with pytest.raises(Exception, match="Untrusted repository."):
        _load("check")
    assert served_repo.log == []


def test_trust_unrecognized_answer(served_repo, hub_dir, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda msg: "maybe")
    with pytest.raises(ValueError, match="Unrecognized response maybe."):
        _load(False)


def test_trust_false_always_prompts(served_repo, hub_dir, monkeypatch, capsys):
    prompts = []
    monkeypatch.setattr("builtins.input", lambda msg: prompts.append(msg) or "yes")
    _load(True)
    _load(False)
    assert len(prompts) == 1
    assert "The repository is already trusted." in capsys.readouterr().out


def test_trusted_owner_needs_no_prompt(github, hub_dir, monkeypatch):
    github.route("/pytorch/repo/zipball/v1", github.serve(repo_zip()))
    monkeypatch.setattr("builtins.input", lambda msg: pytest.fail("prompted"))
    assert ember.hub.list("pytorch/repo:v1", trust_repo="check", skip_validation=True) == [
        "tiny"]


# --- local -----------------------------------------------------------------------------

@pytest.fixture
def local_repo(tmp_path):
    d = tmp_path / "local_repo"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF + "from helper import VALUE\n")
    (d / "helper.py").write_text("VALUE = 42\n")
    return d


def test_local_load_list_help(local_repo, hub_dir):
    assert ember.hub.load(str(local_repo), "tiny", 3, source="local") == {"scale": 3, "bias": 0}
    # the repo dir is importable while hubconf runs, and removed from sys.path after
    assert str(local_repo) not in sys.path
    assert ember.hub.list(str(local_repo)) == ["tiny"]
    assert ember.hub.help(str(local_repo), "tiny") == "Build tiny."
    assert not (hub_dir / "trusted_list").exists()  # local code needs no trust prompt


def test_local_source_needs_a_hubconf(tmp_path, hub_dir):
    with pytest.raises(FileNotFoundError, match="No hubconf.py found"):
        ember.hub.load(str(tmp_path), "tiny", source="local")


def test_unknown_source(local_repo):
    with pytest.raises(ValueError, match='Unknown source: "svn". Allowed values: "github" | '
                                         '"local".'):
        ember.hub.load(str(local_repo), "tiny", source="svn")


# --- load_state_dict_from_url ------------------------------------------------------------

def _checkpoint_bytes(tmp_path) -> bytes:
    path = tmp_path / "ckpt.pth"
    ember.save({"w": ember.arange(6, dtype=ember.float32).reshape(2, 3)}, path)
    return path.read_bytes()


def test_load_state_dict_from_url_with_hash(server, hub_dir, tmp_path):
    import hashlib

    data = _checkpoint_bytes(tmp_path)
    name = f"model-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    url = server.route(f"/w/{name}", server.serve(data))
    sd = ember.hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    assert sd["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    cached = hub_dir / "checkpoints" / name
    assert cached.read_bytes() == data
    ember.hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    assert len(server.requests_to(f"/w/{name}")) == 1
    cached.write_bytes(data[:-10])  # truncated: detected and downloaded again
    sd = ember.hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    assert sd["w"].shape == (2, 3)
    assert len(server.requests_to(f"/w/{name}")) == 2


def test_load_state_dict_from_url_file_name_and_model_dir(server, hub_dir, tmp_path):
    url = server.route("/w/x.pth", server.serve(_checkpoint_bytes(tmp_path)))
    sd = ember.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "m"),
                                            file_name="y.pth", progress=False)
    assert (tmp_path / "m" / "y.pth").is_file() and set(sd) == {"w"}


def test_load_state_dict_from_legacy_single_file_zip(server, hub_dir, tmp_path):
    wrapped = make_zip({"inner.pth": _checkpoint_bytes(tmp_path)})
    url = server.route("/w/old.zip", server.serve(wrapped))
    with pytest.warns(FutureWarning, match="Falling back to the old format"):
        sd = ember.hub.load_state_dict_from_url(url, progress=False)
    assert sd["w"].tolist()[1] == [3, 4, 5]


def test_load_state_dict_offline_with_empty_cache(server, hub_dir, offline):
    url = server.url("/w/resnet18-f37072fd.pth")
    with pytest.raises(OfflineError) as info:
        ember.hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    assert url in str(info.value)
    assert str(hub_dir / "checkpoints" / "resnet18-f37072fd.pth") in str(info.value)
    assert server.log == []


# --- get_dir / set_dir ----------------------------------------------------------------

def test_get_dir_follows_the_environment(monkeypatch, tmp_path):
    from ember.hub import _cache

    monkeypatch.setattr(_cache, "_hub_dir", None)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "eh"))
    assert ember.hub.get_dir() == str(tmp_path / "eh" / "hub")
    monkeypatch.delenv("EMBER_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ember.hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ember.hub.get_dir() == str(tmp_path / "home" / ".cache" / "ember" / "hub")
    ember.hub.set_dir("~/elsewhere")
    assert ember.hub.get_dir() == str(tmp_path / "home" / "elsewhere")


def test_github_host_from_the_environment(server, hub_dir, monkeypatch):
    monkeypatch.setenv("EMBER_HUB_GITHUB_URL", server.base)
    monkeypatch.setattr(_repo, "GITHUB_URL", None)
    server.route("/owner/repo/zipball/main", server.serve(repo_zip()))
    assert ember.hub.list("owner/repo", trust_repo=True) == ["tiny"]


def test_offline_uses_a_cached_repo(served_repo, hub_dir, monkeypatch):
    _load(True)
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    assert _load(True) == {"scale": 1, "bias": 0}
    assert len(served_repo.log) == 1
