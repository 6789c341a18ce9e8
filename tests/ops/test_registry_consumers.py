"""The op registry is the list its consumers read: ``ember.nn.functional`` and the coverage
report (``tools/compat_report.py --registry``)."""

from __future__ import annotations

import importlib.util
import inspect
import pathlib
import sys

import ember
import ember.nn.functional as F
from ember.ops import api
from ember.ops.registry import NN_FUNCTIONAL, OPS

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_nn_functional_exports_what_the_registry_lists():
    kernels = api.functional_kernels()
    assert set(kernels) == set(NN_FUNCTIONAL)
    own = {"linear", "bilinear", "linear_cross_entropy"}
    assert set(F.__all__) == set(kernels) | own
    assert callable(F.multi_head_attention_forward)  # ember-nn's own, as in PyTorch
    for name, fn in kernels.items():
        exported = getattr(F, name)
        # the kernel itself, or it behind F's ``inplace=`` flag (relu, silu, ...)
        assert exported is fn or "inplace" in inspect.signature(exported).parameters, name


def test_functional_ops_are_tagged():
    tagged = {info.name for info in OPS.values() if "nn.functional" in info.tags}
    assert tagged == {n for n in NN_FUNCTIONAL if n in OPS}
    assert {"relu", "conv2d", "cross_entropy", "layer_norm"} <= tagged


def test_kernels_with_their_own_signature_win_over_the_op():
    # ATen's dropout(input, p, train) is the op; F's dropout(input, p, training, inplace)
    assert "training" in inspect.signature(api.functional_kernels()["dropout"]).parameters
    assert "train" in inspect.signature(ember.dropout).parameters


def test_compat_report_summarises_the_registry(monkeypatch):
    spec = importlib.util.spec_from_file_location("compat_report",
                                                  ROOT / "tools" / "compat_report.py")
    report = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "compat_report", report)  # dataclasses look it up
    spec.loader.exec_module(report)
    summary = report.registry_summary()
    assert summary["ops"] == len(OPS)
    assert summary["differentiable"] == sum(i.differentiable for i in OPS.values())
    assert summary["nn.functional"] == len({n for n in NN_FUNCTIONAL if n in OPS})
    text = report.format_registry(summary)
    assert f"ops: {len(OPS)}" in text
