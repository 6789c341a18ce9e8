"""End-to-end training on small synthetic data: a CNN, an LSTM language model and a
Transformer classifier each learn their task, and a PyTorch-written training loop gives
PyTorch's loss curve when started from PyTorch's weights."""

import numpy as np
import pytest

import ember
from ember import nn

pytestmark = pytest.mark.slow


def _fit(model, batches, lr=1e-2, steps=60, opt="adam"):
    optimizer = (ember.optim.Adam(model.parameters(), lr=lr) if opt == "adam"
                 else ember.optim.SGD(model.parameters(), lr=lr, momentum=0.9))
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        x, y = batches[step % len(batches)]
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_cnn_learns_bright_quadrant():
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(8):
        x = rng.random((32, 1, 12, 12)).astype(np.float32) * 0.2
        y = rng.integers(0, 4, 32)
        for i, q in enumerate(y):  # class = which quadrant is bright
            r, c = divmod(int(q), 2)
            x[i, 0, r * 6:(r + 1) * 6, c * 6:(c + 1) * 6] += 0.8
        batches.append((ember.as_tensor(x), ember.as_tensor(y)))
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(64, 4))
    losses = _fit(model, batches, lr=1e-2, steps=80)
    assert np.mean(losses[-8:]) < 0.1 < np.mean(losses[:4])
    model.eval()
    with ember.no_grad():
        acc = np.mean([(model(x).argmax(1) == y).float().mean().item() for x, y in batches])
    assert acc > 0.95


def test_lstm_language_model_learns_a_cycle():
    ember.manual_seed(0)
    vocab, seq = 7, 12
    text = np.arange(400) % vocab  # a deterministic cycle: next token = token + 1 mod 7

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, 16)
            self.lstm = nn.LSTM(16, 32, batch_first=True)
            self.head = nn.Linear(32, vocab)

        def forward(self, x):
            out, _ = self.lstm(self.embed(x))
            return self.head(out)

    rng = np.random.default_rng(0)
    batches = []
    for _ in range(6):
        starts = rng.integers(0, len(text) - seq - 1, 16)
        x = np.stack([text[s:s + seq] for s in starts])
        y = np.stack([text[s + 1:s + seq + 1] for s in starts])
        batches.append((ember.as_tensor(x), ember.as_tensor(y)))
    losses = _fit(LM(), batches, lr=2e-2, steps=80)
    assert losses[-1] < 0.1 and losses[0] > 1.5


def test_transformer_classifier_learns_majority_token():
    ember.manual_seed(0)
    rng = np.random.default_rng(1)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(3, 32)
            layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0,
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2)
            self.head = nn.Linear(32, 3)

        def forward(self, x):
            return self.head(self.encoder(self.embed(x)).mean(1))

    batches = []
    for _ in range(6):
        x = rng.integers(0, 3, (32, 9))
        y = np.array([np.bincount(row, minlength=3).argmax() for row in x])
        batches.append((ember.as_tensor(x), ember.as_tensor(y)))
    losses = _fit(Classifier(), batches, lr=3e-3, steps=120)
    assert np.mean(losses[-6:]) < 0.35 < np.mean(losses[:3])


def test_pytorch_script_follows_pytorch_loss_curve():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
    y_np = rng.integers(0, 5, 64)

    def script(lib, state=None):
        model = lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3), lib.nn.ReLU(), lib.nn.Flatten(),
                                  lib.nn.Linear(4 * 6 * 6, 5))
        if state is not None:
            model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = lib.as_tensor(x_np), lib.as_tensor(y_np)  # on the default device
        losses = []
        for _ in range(15):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return model, losses

    torch_model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(),
                                      torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
    state = {k: v.detach().numpy().copy() for k, v in torch_model.state_dict().items()}
    _, want = script(torch, state)
    _, got = script(ember, state)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
