"""docs/tutorials/deploy_digits.md runs as written: a trained CNN exported with ember.export,
ember.jit and ember.onnx runs from its files (a fresh process without the model's class,
onnxruntime, ONNX import) with the trained model's outputs."""

import re

import numpy as np
import pytest

pytest.importorskip("ember.vision")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import ember

PAGE = "deploy_digits.md"


@pytest.mark.slow
def test_deploy_digits(run_tutorial, capsys):
    ns = run_tutorial(PAGE)
    out = capsys.readouterr().out
    assert ns["accuracy"] >= 0.9

    # the graph prints one line per op, the batch dimension symbolic
    graph = str(ns["program"].graph)
    assert "conv2d" in graph and "linear" in graph and "batch" in graph
    # the fresh process reproduced the logits
    gap = float(re.search(r"largest difference from the training process: (\S+)", out).group(1))
    assert gap <= 1e-5
    assert "jit round trip identical: True" in out
    onnx_gap = float(re.search(r"ONNX Runtime vs Ember, largest difference: (\S+)", out)[1])
    assert onnx_gap <= 1e-4
    assert "same predictions: True" in out
    imported_gap = float(re.search(r"imported ONNX model vs Ember: (\S+)", out)[1])
    assert imported_gap <= 1e-4

    # the exported program refuses a batch past the declared maximum, naming the input
    module = ember.export.load(run_tutorial.workdir / "digits.ember").module()
    with pytest.raises(Exception, match="x"):
        module(ember.zeros(1025, 1, 8, 8))
    assert np.isfinite(ns["onnx_logits"]).all()
