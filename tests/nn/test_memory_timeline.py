"""profile.export_memory_timeline (ember.profiler._memory_profiler): the memory a profiled
training step holds over time, by PyTorch's categories, in PyTorch's three file formats."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest

import ember
from ember import nn
from ember.profiler import ProfilerActivity, profile
from ember.profiler._memory_profiler import _CATEGORY_TO_INDEX, Action, Category

FLAGS = dict(profile_memory=True, record_shapes=True, with_stack=True)


def _train(t, steps=2):
    """Two Adam steps of an MLP (for ember or torch); returns the model and the batch."""
    t.manual_seed(0)
    model = t.nn.Sequential(t.nn.Linear(256, 512), t.nn.ReLU(), t.nn.Linear(512, 10))
    opt = t.optim.Adam(model.parameters())
    x, y = t.randn(64, 256), t.randint(0, 10, (64,))
    with t.profiler.profile(activities=[t.profiler.ProfilerActivity.CPU], **FLAGS) as prof:
        for _ in range(steps):
            opt.zero_grad()
            t.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    return prof, model, x, y


def _export(prof, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        prof.export_memory_timeline(str(path))


def _final(path) -> dict:
    times, sizes = json.loads(path.read_text())
    return {c: sizes[-1][i + 1] for c, i in _CATEGORY_TO_INDEX.items()}


def test_training_step_categories(tmp_path):
    prof, model, x, y = _train(ember)
    _export(prof, tmp_path / "timeline.json")
    final = _final(tmp_path / "timeline.json")
    params = sum(p.nbytes for p in model.parameters())
    # at the end: the parameters, their gradients, Adam's two moments and step counters, the
    # batch; every activation and intermediate gradient has been freed
    assert final[Category.PARAMETER] == params
    assert final[Category.GRADIENT] == params
    # (Adam's step counters are CPU scalars, as PyTorch's: on another device they are not
    # that device's memory)
    steps = 4 * 4 if model[0].weight.device.type == "cpu" else 0
    assert final[Category.OPTIMIZER_STATE] == 2 * params + steps
    assert final[Category.INPUT] == x.nbytes + y.nbytes
    assert final[Category.ACTIVATION] == final[Category.AUTOGRAD_DETAIL] == 0
    assert final[Category.TEMPORARY] == final[None] == 0
    times, sizes = json.loads((tmp_path / "timeline.json").read_text())
    assert times == sorted(times) and len(times) == len(sizes) > 10
    assert all(len(s) == len(_CATEGORY_TO_INDEX) + 1 and s[0] == 0 for s in sizes)
    peak = [max(s[i + 1] for s in sizes) for i in _CATEGORY_TO_INDEX.values()]
    # the forward's activations (the hidden layer: 64 x 512 floats, before and after ReLU)
    # and the gradients flowing back were held at some point
    assert peak[_CATEGORY_TO_INDEX[Category.ACTIVATION]] >= 2 * 64 * 512 * 4
    assert peak[_CATEGORY_TO_INDEX[Category.AUTOGRAD_DETAIL]] >= 64 * 512 * 4


def test_final_state_equals_the_oracle(tmp_path):
    torch = pytest.importorskip("torch")
    with ember.device("cpu"):  # (torch runs on the CPU)
        e_prof = _train(ember)[0]
    t_prof = _train(torch)[0]
    for prof, name in ((e_prof, "e.json"), (t_prof, "t.json")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            prof.export_memory_timeline(str(tmp_path / name), device="cpu")
    assert json.loads((tmp_path / "e.json").read_text())[1][-1] == \
        json.loads((tmp_path / "t.json").read_text())[1][-1]


def test_raw_and_gzipped_formats(tmp_path):
    prof = _train(ember, steps=1)[0]
    _export(prof, tmp_path / "timeline.raw.json.gz")
    _export(prof, tmp_path / "timeline.json.gz")
    _export(prof, tmp_path / "timeline.json")
    with gzip.open(tmp_path / "timeline.raw.json.gz", "rt") as f:
        raw = json.load(f)
    actions = {a.value for a in Action}
    assert raw and all(len(e) == 4 and e[1] in actions for e in raw)
    assert all((e[2] < 0) == (e[1] == Action.DESTROY.value) for e in raw)
    assert {e[3] for e in raw} <= set(_CATEGORY_TO_INDEX.values())
    # the bytes created, pre-existing and destroyed add up to what the timeline ends with
    held = sum(e[2] for e in raw)
    with gzip.open(tmp_path / "timeline.json.gz", "rt") as f:
        assert json.load(f) == json.loads((tmp_path / "timeline.json").read_text())
    assert sum(json.loads((tmp_path / "timeline.json").read_text())[1][-1]) == held


def test_html_plot(tmp_path, monkeypatch, capsys):
    prof = _train(ember, steps=1)[0]
    pytest.importorskip("matplotlib")
    _export(prof, tmp_path / "timeline.html")
    html = (tmp_path / "timeline.html").read_text()
    assert html.startswith("<html>") and "src='data:image/png;base64," in html
    # without matplotlib: PyTorch's message, no file
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    _export(prof, tmp_path / "none.html")
    assert not (tmp_path / "none.html").exists()
    assert "export_memory_timeline_html failed because matplotlib was not found." in \
        capsys.readouterr().out


def test_errors_and_warning(tmp_path):
    x = ember.randn(3, 3)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        x @ x
    with pytest.raises(ValueError, match=r"^record_shapes=True, with_stack=True required for "
                                         r"memory profiling\.$"):
        _export(prof, tmp_path / "t.json")
    unsaved = profile(activities=[ProfilerActivity.CPU], **FLAGS)
    with pytest.raises(RuntimeError, match="no saved trace yet"):
        _export(unsaved, tmp_path / "t.json")
    with profile(activities=[ProfilerActivity.CPU], **FLAGS) as prof:
        x @ x
    with pytest.warns(FutureWarning, match="`export_memory_timeline` is deprecated"):
        prof.export_memory_timeline(str(tmp_path / "t.json"))
    # another device: nothing of it was held
    _export_device = prof.export_memory_timeline
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _export_device(str(tmp_path / "cuda.json"), device="cuda:0")
    assert json.loads((tmp_path / "cuda.json").read_text()) == [[], []]


def test_inference_holds_temporaries_only(tmp_path):
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    x = ember.randn(8, 32)
    with ember.no_grad(), profile(activities=[ProfilerActivity.CPU], **FLAGS) as prof:
        out = model(x)
    _export(prof, tmp_path / "t.json")
    final = _final(tmp_path / "t.json")
    assert final[Category.PARAMETER] == sum(p.nbytes for p in model.parameters())
    assert final[Category.INPUT] == x.nbytes
    assert final[Category.TEMPORARY] == out.nbytes  # the output, still held
    assert final[Category.ACTIVATION] == 0


def test_optimizer_step_is_a_profiled_range():
    prof = _train(ember, steps=1)[0]
    names = [e.name for e in prof.events()]
    # PyTorch's ranges around the optimizer's calls
    assert names.count("Optimizer.step#Adam.step") == 1
    assert names.count("Optimizer.zero_grad#Adam.zero_grad") == 1
