"""The main job: train a small CNN on the embedded 8x8 handwritten digits, the PyTorch way.

UCI optdigits (1,797 images, CC BY 4.0; see data/ATTRIBUTION.md). 80% train / 20% held out.
Prints a progress bar per epoch with the loss, then the held-out accuracy; saves the model with
``ember.save``, reloads it into a fresh model and checks the predictions survive. Exits
non-zero below 97% held-out accuracy. With ``--export DIR`` it also writes the model as
safetensors and as an ``ember.export`` program, and the held-out indices with its predictions,
which the C++ examples ``examples/cpp/digits/predict_digits`` and ``run_exported`` load to check
that C++ predicts the same.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, TensorDataset

DATA = Path(__file__).with_name("data") / "digits.csv.gz"


def load_digits():
    """Images as float32 (N, 1, 8, 8) scaled to [0, 1] and int64 labels."""
    raw = np.loadtxt(gzip.open(DATA), delimiter=",", dtype=np.float32)
    images = (raw[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    return torch.from_numpy(images), torch.from_numpy(raw[:, 64].astype(np.int64))


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),                                   # 32 x 4 x 4
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def progress(iterable, desc: str, total: int):
    try:
        from tqdm import tqdm
    except ImportError:  # the demo session installs tqdm; a plain run still works
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stdout)


def evaluate(model, loader) -> tuple[float, torch.Tensor]:
    model.eval()
    correct, predictions = 0, []
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(1)
            correct += (pred == y).sum().item()
            predictions.append(pred)
    return correct / len(loader.dataset), torch.cat(predictions)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--export", metavar="DIR", type=Path,
                        help="also write DIR/digits_cnn.safetensors (the state dict) and "
                             "DIR/heldout.safetensors (the held-out indices and the "
                             "predictions), for examples/cpp/digits/predict_digits")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    images, labels = load_digits()
    train_set, test_set = torch.utils.data.random_split(
        TensorDataset(images, labels), [0.8, 0.2], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)

    model = DigitsCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                                weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        bar = progress(train_loader, f"epoch {epoch:2d}/{args.epochs}", len(train_loader))
        for x, y in bar:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        scheduler.step()
        accuracy, _ = evaluate(model, test_loader)
        print(f"epoch {epoch:2d}  loss {total / len(train_set):.4f}  "
              f"held-out accuracy {accuracy:.2%}")
    elapsed = time.perf_counter() - start
    accuracy, predictions = evaluate(model, test_loader)
    print(f"trained in {elapsed:.1f} s; held-out accuracy {accuracy:.2%}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "digits_cnn.pt"
        torch.save(model.state_dict(), path)
        restored = DigitsCNN()
        restored.load_state_dict(torch.load(path))
        same = torch.equal(evaluate(restored, test_loader)[1], predictions)
        print(f"saved to {path.name} ({path.stat().st_size // 1024} KiB) and reloaded: "
              f"predictions {'identical' if same else 'DIFFER'}")
    if not same:
        return 1
    if args.export is not None:
        export(model, test_set.indices, predictions, args.export)
    return 0 if accuracy >= 0.97 else 1


def export(model, indices, predictions, out: Path) -> None:
    """The model as safetensors and as an ember.export program, with the held-out set and its
    predictions, for C++."""
    from ember.safetensors import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file(model.state_dict(), out / "digits_cnn.safetensors")
    save_file({"indices": torch.tensor(list(indices), dtype=torch.int64),
               "predictions": predictions.to(torch.int64)}, out / "heldout.safetensors")
    # the same model as a program (graph + weights, no class needed): ember::jit::load reads it
    model.eval()
    example = torch.zeros(2, 1, 8, 8)
    batch = torch.export.Dim("batch", min=1, max=4096)
    torch.export.save(torch.export.export(model, (example,), dynamic_shapes={"x": {0: batch}}),
                      out / "digits.ember")
    print(f"exported the model and {len(predictions)} held-out predictions to {out}")


if __name__ == "__main__":
    sys.exit(main())
