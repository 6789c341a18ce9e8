"""Golden file of the random-stream tests (run by ctest before them, see tests/CMakeLists.txt):

    python golden_random.py GOLDEN_DIR

Python Ember draws PyTorch's CPU random numbers bit for bit (ember/_torch_rng.py, checked
against PyTorch by tests/core/test_torch_rng_streams.py). Each case below seeds Python Ember
and makes the same calls that tests/random/test_streams.cpp makes in C++; GOLDEN_DIR/
random.safetensors holds every result as "<case>.<i>", and the C++ tests compare them bit for
bit (orthogonal_'s QR with a tolerance: the factorisation is not the same code).

The file is written with the small safetensors writer of tests/common/safetensors_writer.py.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_writer import save_safetensors

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.nn.init as init
from ember.data import DataLoader, RandomSampler, TensorDataset

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# Each case returns the list of tensors (or arrays) that its C++ twin computes, in order.

@case
def uniform():
    ember.manual_seed(0)
    out = [ember.rand(5, 7), ember.rand(13, dtype=ember.float64),
           ember.rand(10, dtype=ember.float16)]
    out.append(ember.empty(20).uniform_(-2, 3))
    out.append(ember.empty(9, dtype=ember.float64).uniform_(-0.5, 0.25))
    out.append(ember.empty(6, 4).t().uniform_(1, 2))  # strided: memory order
    return out


@case
def normal():
    ember.manual_seed(1)
    out = [ember.randn(37), ember.randn(5), ember.randn(3), ember.randn(16)]
    out += [ember.randn(40, dtype=ember.float64), ember.randn(7, dtype=ember.float64)]
    out.append(ember.randn(20, dtype=ember.float16))
    out.append(ember.empty(4, 5).normal_(1.5, 0.5))
    out.append(ember.empty(5, 4).t().normal_(-1, 2))  # strided: pairs, memory order
    out.append(ember.empty(3, 40)[:, ::2].normal_())  # strided rows
    return out


@case
def integers():
    ember.manual_seed(2)
    out = [ember.randint(0, 10, (20,)), ember.randint(-5, 1 << 40, (6,)), ember.randint(7, (3, 4))]
    out += [ember.randperm(50), ember.randperm(3), ember.randperm(1)]
    out.append(ember.empty(10, dtype=ember.int64).random_(3, 100))
    out.append(ember.empty(4, 3, dtype=ember.float32).random_(0, 1 << 20))
    return out


@case
def bernoulli_exponential():
    ember.manual_seed(3)
    out = [ember.empty(30).bernoulli_(0.3)]
    p32 = ember.rand(4, 6)
    p64 = ember.rand(9, dtype=ember.float64)
    out += [p32, p64, ember.bernoulli(p32), ember.bernoulli(p64)]
    out.append(ember.empty(10, dtype=ember.float64).exponential_(2.0))
    out.append(ember.empty(10).exponential_())
    return out


@case
def dropout():
    ember.manual_seed(4)
    x = ember.randn(4, 8)
    y = ember.randn(8, 6, dtype=ember.float64)
    out = [x, y, F.dropout(x, 0.3, training=True), F.dropout(y, 0.5, training=True)]
    out.append(F.dropout(x.t(), 0.25, training=True))  # dense, transposed: its memory order
    z = ember.randn(2, 3, 4, 4)
    out += [z, F.dropout2d(z, 0.5, training=True)]
    out.append(ember.rand(3))  # the stream after
    return out


@case
def multinomial():
    ember.manual_seed(5)
    p = ember.tensor([[0.1, 0.2, 0.3, 0.15, 0.25], [1.0, 0.0, 3.0, 2.0, 0.5]])
    out = [ember.multinomial(p, 3), ember.multinomial(p, 10, replacement=True),
           ember.multinomial(p[0], 1), ember.multinomial(p.double(), 4)]
    return out


@case
def init_functions():
    ember.manual_seed(6)
    out = [init.kaiming_uniform_(ember.empty(8, 5), a=math.sqrt(5)),
           init.kaiming_normal_(ember.empty(6, 20)),
           init.xavier_uniform_(ember.empty(4, 7)),
           init.xavier_normal_(ember.empty(3, 5)),
           init.uniform_(ember.empty(11), -1, 1),
           init.normal_(ember.empty(17), 0.5, 2.0),
           init.trunc_normal_(ember.empty(40), 0.0, 1.0, -2.0, 2.0),
           init.trunc_normal_(ember.empty(30), 0.0, 1.0, 1.0, 3.0),
           init.sparse_(ember.empty(6, 4), 0.5),
           # rejections in a transposed tensor: each round draws in its memory order
           init.trunc_normal_(ember.empty(8, 5).t(), 0.0, 0.5, -0.5, 0.5),
           init.trunc_normal_(ember.empty(30, 7, dtype=ember.float64).t(), 0.0, 1.0, -1.0, 1.0),
           init.sparse_(ember.empty(5, 3), 0.25, generator=ember.Generator().manual_seed(9)),
           init.orthogonal_(ember.empty(4, 6))]
    return out


@case
def modules():
    ember.manual_seed(7)
    lin = nn.Linear(5, 3)
    conv = nn.Conv2d(2, 4, 3)
    emb = nn.Embedding(10, 4)
    lstm = nn.LSTM(3, 4)
    out = [lin.weight, lin.bias, conv.weight, conv.bias, emb.weight]
    out += [p for p in lstm.parameters()]
    out.append(ember.rand(2))
    return [t.detach() for t in out]


@case
def samplers():
    ember.manual_seed(8)
    s = RandomSampler(range(10))
    out = [np.array(list(s), np.int64), np.array(list(s), np.int64)]
    g = ember.Generator().manual_seed(9)
    s2 = RandomSampler(range(12), generator=g)
    out += [np.array(list(s2), np.int64), np.array(list(s2), np.int64)]
    ds = TensorDataset(ember.arange(11))
    loader = DataLoader(ds, batch_size=3, shuffle=True)
    for _ in range(2):
        out.append(np.concatenate([b[0].numpy() for b in loader]).astype(np.int64))
    out.append(ember.rand(2))  # the default generator after two epochs
    return out


@case
def state():
    ember.manual_seed(10)
    ember.randn(3)  # an odd count of pair normals: one cached for the next draw
    saved = ember.get_rng_state()
    out = [saved, ember.randn(4), ember.rand(3)]
    g = ember.Generator().manual_seed((1 << 40) + 5)  # the engine takes the low 32 bits
    out.append(ember.rand(4, generator=g))
    ember.set_rng_state(saved)
    out.append(ember.randn(4))
    return out


def main() -> None:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    tensors = {}
    for name, fn in CASES.items():
        for i, t in enumerate(fn()):
            tensors[f"{name}.{i}"] = t.numpy() if isinstance(t, ember.Tensor) else t
    save_safetensors(os.path.join(out_dir, "random.safetensors"), tensors)


if __name__ == "__main__":
    main()
