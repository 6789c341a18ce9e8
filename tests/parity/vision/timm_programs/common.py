"""Shared by reference.py (real PyTorch) and check.py (Ember under ``ember.as_torch``)."""

import numpy as np

#: attributes that timm's blocks read as dropout or stochastic-depth rates
_RATES = ("drop_rate", "drop_prob", "drop_path_rate", "drop_path_prob", "attn_drop_rate",
          "proj_drop_rate", "pos_drop_rate", "drop_block_rate")


def no_dropout(model, nn) -> None:
    """Zero every dropout-like rate, so that train mode is deterministic in both libraries
    (their random streams differ)."""
    dropouts = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)
    for module in model.modules():
        if isinstance(module, dropouts):
            module.p = 0.0
        for attr in _RATES:
            value = getattr(module, attr, None)
            if isinstance(value, float) and value > 0:
                setattr(module, attr, 0.0)


def fingerprint(a: np.ndarray) -> np.ndarray:
    """``[max |a|, a . r1, a . r2]`` for two fixed pseudo-random vectors: a gradient's
    summary in three numbers, which any wrong element moves (the reference files stay small)."""
    flat = np.asarray(a, dtype=np.float64).ravel()
    rng = np.random.default_rng(flat.size)
    r = rng.standard_normal((2, flat.size))
    return np.concatenate([[np.abs(flat).max() if flat.size else 0.0], r @ flat])
