"""The main job: train a classifier on the embedded 8x8 digits with ember-core alone.

Until ember.nn lands (the nn issue) this trains a two-layer perceptron written with core
tensor ops and autograd, with a hand-written SGD-with-momentum step. It prints a progress
bar per epoch, the loss and held-out accuracy, and exits non-zero if accuracy is poor.
"""

from __future__ import annotations

import argparse
import gzip
import math
import sys
import time
from pathlib import Path

import numpy as np

import ember

DATA = Path(__file__).with_name("data") / "digits.csv.gz"


def load_digits():
    """Images scaled to [0, 1] as float32 (N, 64) and int64 labels."""
    raw = np.loadtxt(gzip.open(DATA), delimiter=",", dtype=np.float32)
    return raw[:, :64] / 16.0, raw[:, 64].astype(np.int64)


def progress(iterable, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # the demo session installs tqdm; plain runs still work
        return iterable
    return tqdm(iterable, desc=desc, leave=False, file=sys.stdout)


def cross_entropy(logits, labels):
    log_probs = logits - logits.logsumexp(1, keepdim=True)
    return -(log_probs.gather(1, labels.unsqueeze(1))).mean()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    ember.manual_seed(args.seed)
    x_all, y_all = load_digits()
    order = np.random.default_rng(args.seed).permutation(len(x_all))
    split = int(0.8 * len(order))
    train_idx, test_idx = order[:split], order[split:]
    x_train, y_train = ember.from_numpy(x_all[train_idx]), ember.from_numpy(y_all[train_idx])
    x_test, y_test = ember.from_numpy(x_all[test_idx]), ember.from_numpy(y_all[test_idx])

    hidden = 128
    w1 = (ember.randn(64, hidden) * math.sqrt(2 / 64)).requires_grad_()
    b1 = ember.zeros(hidden, requires_grad=True)
    w2 = (ember.randn(hidden, 10) * math.sqrt(1 / hidden)).requires_grad_()
    b2 = ember.zeros(10, requires_grad=True)
    params = [w1, b1, w2, b2]
    velocity = [ember.zeros_like(p) for p in params]

    def forward(x):
        return (x @ w1 + b1).relu() @ w2 + b2

    start = time.perf_counter()
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        perm = ember.randperm(len(x_train))
        total, batches = 0.0, range(0, len(x_train), args.batch_size)
        for i in progress(batches, desc=f"epoch {epoch:2d}"):
            idx = perm[i:i + args.batch_size]
            loss = cross_entropy(forward(x_train[idx]), y_train[idx])
            for p in params:
                p.grad = None
            loss.backward()
            with ember.no_grad():
                for p, v in zip(params, velocity):
                    v.mul_(0.9).add_(p.grad)
                    p.sub_(v, alpha=args.lr)
            total += loss.item() * len(idx)
        with ember.no_grad():
            accuracy = (forward(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch:2d}  loss {total / len(x_train):.4f}  "
              f"held-out accuracy {accuracy:.2%}")
    print(f"trained in {time.perf_counter() - start:.1f} s; held-out accuracy {accuracy:.2%}")
    return 0 if accuracy >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
