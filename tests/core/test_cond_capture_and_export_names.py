"""``ember.cond`` under capture and vmap (both branches, selected with ``where``), and the
torch.export / torch._logging names PyTorch's export tutorial uses."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.func import vmap


def _branches(x):
    return ember.cond(x.sum() > 0, lambda t: (t.sin(), t * 2), lambda t: (t.cos(), t - 1),
                      (x,))


def test_exported_cond_follows_pred_at_run_time(tmp_path):
    ep = ember.export.export(_branches, (ember.randn(3, 3),))
    m = ep.module()
    pos, neg = ember.ones(3, 3), -ember.ones(3, 3)
    for x in (pos, neg):
        got, ref = m(x), _branches(x)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g.numpy(), r.numpy())
    ember.export.save(ep, tmp_path / "c.ember")  # both branches survive the round trip
    m2 = ember.export.load(tmp_path / "c.ember").module()
    np.testing.assert_array_equal(m2(neg)[0].numpy(), neg.cos().numpy())


def test_compiled_cond_and_its_gradient_reach_only_the_branch_taken():
    f = ember.compile(lambda x: _branches(x)[0].sum(), fullgraph=True)
    for sign in (1.0, -1.0):
        x = (sign * ember.ones(2, 2, dtype=ember.float64)).requires_grad_(True)
        y = f(x)
        y.backward()
        ref = x.detach().sin() if sign > 0 else x.detach().cos()
        assert abs(y.item() - ref.sum().item()) < 1e-12
        expected = x.detach().cos() if sign > 0 else -x.detach().sin()
        np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), rtol=1e-12)


def test_vmapped_cond_selects_per_example():
    xs = ember.stack([ember.ones(3), -ember.ones(3)])
    out = vmap(lambda x: ember.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(),
                                    (x,)))(xs)
    np.testing.assert_allclose(out[0].numpy(), np.sin(np.ones(3, np.float32)), rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), np.cos(-np.ones(3, np.float32)), rtol=1e-6)


def test_captured_cond_needs_equal_shapes():
    def f(x):
        return ember.cond(x.sum() > 0, lambda t: t[:1].clone(), lambda t: t.clone(), (x,))

    with pytest.raises(RuntimeError, match="different shapes"):
        ember.export.export(f, (ember.randn(3),))


def test_functorch_experimental_control_flow():
    from ember.functorch.experimental.control_flow import cond, map

    assert cond is ember.cond
    assert map(lambda x: x * 2, ember.arange(3.0)).tolist() == [0.0, 2.0, 4.0]


def test_importing_the_cond_submodule_keeps_the_function():
    # ``import ember._higher_order_ops.cond`` (a tutorial's import) after the package must
    # leave the package's ``cond`` the function (a fresh process: the import order matters)
    code = ("import ember._higher_order_ops as h, ember._higher_order_ops.cond, ember\n"
            "from ember.functorch.experimental.control_flow import cond\n"
            "assert h.cond is ember.cond is cond, h.cond\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_exported_program_accessors():
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 2)
            self.bn = ember.nn.BatchNorm1d(2)

        def forward(self, x):
            return self.bn(self.lin(x)).relu()

    ep = ember.export.export(M().eval(), (ember.randn(2, 3),))
    assert [n for n, _ in ep.named_parameters()] == ["lin.weight", "lin.bias", "bn.weight",
                                                      "bn.bias"]
    assert [n for n, _ in ep.named_buffers()] == ["bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"]
    assert len(list(ep.parameters())) == 4 and len(list(ep.buffers())) == 3
    assert ep.tensor_constants is ep.constants
    gm = ep.graph_module
    assert gm is ep.graph_module
    text = gm.print_readable(print_output=False)
    assert text.startswith("class GraphModule(ember.nn.Module):\n    def forward(")
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(gm(x).detach().numpy(), ep.module()(x).detach().numpy())


def test_set_logs():
    from ember._compile import config

    try:
        ember._logging.set_logs(graph_breaks=True)
        assert config.warn_on_graph_break
        ember._logging.set_logs()
        assert not config.warn_on_graph_break
        ember._logging.set_logs(dynamic=logging.INFO, dynamo=logging.INFO)
        assert config.warn_on_graph_break
        ember._logging.set_logs(dynamo=logging.WARNING, recompiles=True, guards=True)
        assert not config.warn_on_graph_break
        with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
            ember._logging.set_logs(foo=True)
    finally:
        ember._logging.set_logs()
