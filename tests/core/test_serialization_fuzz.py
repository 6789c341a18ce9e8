"""Malformed and malicious checkpoints: only clean errors escape ``ember.load``, no payload
runs. The corpus in data/bad_checkpoints/ is made by data/make_bad_checkpoints.py."""

import io
import os
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

CLEAN = (RuntimeError, ValueError, pickle.UnpicklingError)
CORPUS = os.path.join(os.path.dirname(__file__), "data", "bad_checkpoints")
FILES = sorted(os.listdir(CORPUS))


def _valid(legacy=False) -> bytes:
    base = ember.arange(12.0).reshape(3, 4)
    obj = {"w": base, "v": base[1:, ::2], "b": ember.ones(3, dtype=ember.int64),
           "meta": {"step": ember.tensor(2.0), "name": "x"}}
    buf = io.BytesIO()
    ember.save(obj, buf, _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


VALID = _valid()
VALID_LEGACY = _valid(legacy=True)


def test_corpus_is_present():
    assert len(FILES) >= 20


@pytest.mark.parametrize("name", FILES)
def test_bad_checkpoint_raises_cleanly(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CLEAN) as info:
        ember.load(os.path.join(CORPUS, name))
    assert str(info.value)
    if "exec" in name:
        assert "Unsupported global" in str(info.value)
        assert not os.path.exists("ember_pwned_marker")


def _load_or_clean_error(data: bytes) -> None:
    try:
        ember.load(io.BytesIO(data))
    except CLEAN:
        pass


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_mutated_bytes(data, legacy):
    raw = bytearray(VALID_LEGACY if legacy else VALID)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    _load_or_clean_error(bytes(raw))


@settings(max_examples=40, deadline=5000)
@given(st.booleans(), st.integers(0, 10_000))
def test_truncated(legacy, cut):
    raw = VALID_LEGACY if legacy else VALID
    _load_or_clean_error(raw[: cut % len(raw)])


@settings(max_examples=40, deadline=5000)
@given(st.binary(max_size=300))
def test_random_pickles_inside_a_valid_archive(payload):
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02" + payload)
    _load_or_clean_error(buf.getvalue())
