"""``torch._dynamo``'s reset/explain/config on Ember (``ember._dynamo``): what
pytorch/tutorials' torch.compile tutorial calls."""

from __future__ import annotations

import warnings

import pytest

import ember


def _branchy(x):
    y = x.sin() + 1
    if y.sum() > 0:  # data-dependent control flow: a graph break
        return y * 2
    return y - 1


def _straight(x):
    return (x.sin() + 1) * 2


def test_explain_counts_graphs_ops_and_breaks():
    x = ember.randn(4)
    out = ember._dynamo.explain(_straight)(x)
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 3)
    assert out.ops_per_graph == [["sin", "add", "mul"]] and len(out.graphs) == 1
    assert out.out_guards and all(g.startswith("not (") for g in out.out_guards)
    text = str(out)
    for heading in ("Graph Count: 1", "Graph Break Count: 0", "Op Count: 3", "Break Reasons:",
                    "Ops per Graph:", "  Ops 1:", "    sin", "Out Guards:"):
        assert heading in text.splitlines()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the run's graph-break warning is not shown
        broken = ember._dynamo.explain(_branchy)(x)
    assert broken.graph_break_count == 1 and broken.graph_count == 0
    assert "data-dependent control flow" in broken.break_reasons[0].reason
    assert "Break Reason 1:" in str(broken)


def test_explain_old_form_and_reset_and_config():
    with pytest.warns(FutureWarning, match="explain\\(f, \\*args, \\*\\*kwargs\\) is deprecated"):
        out = ember._dynamo.explain(_straight, ember.randn(3))
    assert out.graph_count == 1
    compiled = ember.compile(_straight)
    compiled(ember.randn(2))
    assert ember._compile.explain(compiled)["entries"]
    ember._dynamo.reset()
    assert not ember._compile.explain(compiled)["entries"]
    assert ember._dynamo.config is ember._compile.config
    assert ember._dynamo.config.cache_size_limit == 8
    assert not ember._dynamo.is_compiling()
