"""Checkpoint save/load of a 100 MB state_dict, Ember vs PyTorch (issue: serialization)."""

from __future__ import annotations

import collections
import os
import tempfile

import numpy as np
from harness import compare

N_TENSORS = 25
NUMEL = 1 << 20  # 25 float32 tensors of 4 MiB: 100 MiB


def _state_dict(rng) -> collections.OrderedDict:
    return collections.OrderedDict(
        (f"layer{i}.weight", rng.standard_normal(NUMEL, dtype=np.float32).reshape(1024, -1))
        for i in range(N_TENSORS))


def workloads(torch):
    import ember

    arrays = _state_dict(np.random.default_rng(0))
    esd = collections.OrderedDict((k, ember.from_numpy(v)) for k, v in arrays.items())
    tsd = None
    if torch is not None:
        tsd = collections.OrderedDict((k, torch.from_numpy(v)) for k, v in arrays.items())
    tmp = tempfile.mkdtemp(prefix="ember-bench-")
    epath, tpath = os.path.join(tmp, "ember.pt"), os.path.join(tmp, "torch.pt")
    results = []
    try:
        results.append(compare(
            "save 100 MB state_dict", lambda: ember.save(esd, epath),
            (lambda: torch.save(tsd, tpath)) if torch else None, number=1, repeat=6, pause=0.5))
        results.append(compare(
            "load 100 MB state_dict", lambda: ember.load(epath),
            (lambda: torch.load(tpath, weights_only=True)) if torch else None,
            number=1, repeat=6, pause=0.5))
        results.append(compare(
            "load 100 MB state_dict (mmap)", lambda: ember.load(epath, mmap=True),
            (lambda: torch.load(tpath, weights_only=True, mmap=True)) if torch else None,
            number=3, repeat=6, pause=0.5))
    finally:
        for path in (epath, tpath):
            if os.path.exists(path):
                os.remove(path)
        os.rmdir(tmp)
    return results
