"""``ember.fx.experimental.optimization.fuse``: PyTorch's CPU tuning guide folds batch norms
into the convolutions and linear layers before them for inference."""

from __future__ import annotations

import pytest
from testutils import assert_allclose

import ember
import ember.fx.experimental.optimization as optimization
import ember.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.conv1d = nn.Conv1d(4, 4, 1)
        self.bn1d = nn.BatchNorm1d(4)  # after conv1d, whose output is also used elsewhere
        self.fc = nn.Linear(4, 5)
        self.bnfc = nn.BatchNorm1d(5)
        self.plain = nn.BatchNorm1d(5, track_running_stats=False)

    def forward(self, x):
        h = ember.relu(self.bn(self.conv(x))).flatten(2)
        c = self.conv1d(h)
        h = (self.bn1d(c) + c).mean(2)
        return self.plain(self.bnfc(self.fc(h)))


def _model():
    ember.manual_seed(0)
    model = Net()
    with ember.no_grad():
        for bn in (model.bn, model.bn1d, model.bnfc):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 2)
            bn.bias.uniform_(-1, 1)
    return model.eval()


def test_fuse_folds_the_batch_norms_that_follow_a_layer():
    model = _model()
    fused = optimization.fuse(model)
    x = ember.randn(3, 3, 8, 8)
    assert_allclose(fused(x), model(x), rtol=1e-5, atol=1e-5)
    targets = [n.target for n in fused.graph.nodes if n.op == "call_module"]
    # bn and bnfc are folded; bn1d stays (conv1d's output has another use), and so does the
    # batch norm without running statistics
    assert targets == ["conv", "conv1d", "bn1d", "fc", "plain"]
    assert isinstance(fused, ember.fx.GraphModule)
    assert model.bn.training is False and dict(model.named_modules())["bn"] is model.bn
    same = optimization.fuse(model, inplace=True)
    assert_allclose(same(x), fused(x), rtol=1e-6, atol=1e-6)


def test_fuse_needs_eval_mode_and_matches_pytorch():
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        optimization.fuse(_model().train())
    torch = pytest.importorskip("torch")
    import torch.fx.experimental.optimization as topt
    from testutils import copy_state_to_torch

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.bn = torch.nn.BatchNorm2d(4)
            self.conv1d = torch.nn.Conv1d(4, 4, 1)
            self.bn1d = torch.nn.BatchNorm1d(4)
            self.fc = torch.nn.Linear(4, 5)
            self.bnfc = torch.nn.BatchNorm1d(5)
            self.plain = torch.nn.BatchNorm1d(5, track_running_stats=False)

        def forward(self, x):
            h = torch.relu(self.bn(self.conv(x))).flatten(2)
            c = self.conv1d(h)
            h = (self.bn1d(c) + c).mean(2)
            return self.plain(self.bnfc(self.fc(h)))

    model, theirs = _model(), TNet()
    copy_state_to_torch(model, theirs)
    theirs.eval()
    fused, tfused = optimization.fuse(model), topt.fuse(theirs)
    assert [n.target for n in fused.graph.nodes if n.op == "call_module"] == \
        [n.target for n in tfused.graph.nodes if n.op == "call_module"]
    x = ember.randn(3, 3, 8, 8)
    assert_allclose(fused(x), tfused(torch.tensor(x.numpy())).detach().numpy(),
                    rtol=1e-5, atol=1e-5)
