"""Golden files of the ember::nn::functional tests (run by ctest before them, see
tests/CMakeLists.txt):

    python golden_functional.py GOLDEN_DIR

Writes GOLDEN_DIR/functional.safetensors: for every case "<case>.<name>", the fixed inputs
(drawn from a seeded NumPy generator, so C++ computes from exactly the same values), the
outputs Python Ember's ember.nn.functional gives for them and, for some cases, the
gradients of sum(output * proj) w.r.t. the inputs ("<case>.grad.<input>", proj saved as
"<case>.proj"). Running statistics updated in place by batch_norm are saved after the call
("<case>.running_mean_after").
"""

from __future__ import annotations

import os
import sys

import numpy as np


def main(golden: str) -> int:
    from safetensors.numpy import save_file

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(20240613)
    out: dict[str, np.ndarray] = {}

    def arr(shape, dtype=np.float32, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, size=shape).astype(dtype)

    def t(a, grad=False):
        return ember.tensor(a, requires_grad=grad)

    def put(name, value):
        if isinstance(value, ember.Tensor):
            value = value.detach().numpy()
        out[name] = np.array(value, order="C")  # (ascontiguousarray would make 0-d 1-d)

    def case(name, fn, inputs: dict, grads=(), **outputs_from):
        """Saves inputs, fn(**tensors) and the gradients of sum(out * proj) w.r.t. grads."""
        tensors = {k: t(v, k in grads) for k, v in inputs.items()}
        for k, v in inputs.items():
            put(f"{name}.{k}", v)
        result = fn(**tensors)
        put(f"{name}.out", result)
        if grads:
            proj = rng.uniform(0.5, 1.5, size=result.shape).astype(result.detach().numpy().dtype)
            put(f"{name}.proj", proj)
            (result * t(proj)).sum().backward()
            for k in grads:
                put(f"{name}.grad.{k}", tensors[k].grad)
        for k, v in outputs_from.items():
            put(f"{name}.{k}", v)
        return tensors

    # ---- linear, convolution, pooling --------------------------------------------------
    case(
        "linear",
        lambda x, w, b: F.linear(x, w, b),
        {"x": arr((4, 5)), "w": arr((3, 5)), "b": arr(3)},
    )
    case(
        "conv1d",
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
        {"x": arr((2, 3, 11)), "w": arr((4, 3, 3)), "b": arr(4)},
    )
    case(
        "conv2d",
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
        {"x": arr((2, 4, 7, 8)), "w": arr((6, 2, 3, 3)), "b": arr(6)},
    )
    case(
        "max_pool2d",
        lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        {"x": arr((2, 3, 9, 8))},
    )
    case(
        "max_pool2d_dil",
        lambda x: F.max_pool2d(x, (2, 3), stride=(1, 2), dilation=2),
        {"x": arr((1, 2, 9, 9))},
    )
    case(
        "avg_pool2d",
        lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        {"x": arr((2, 3, 8, 9))},
    )
    case("avg_pool2d_pad", lambda x: F.avg_pool2d(x, (2, 3), padding=1), {"x": arr((2, 2, 6, 7))})
    case(
        "adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), {"x": arr((2, 3, 7, 5))}
    )

    # ---- activations ---------------------------------------------------------------------
    act = arr((3, 7), lo=-4.0, hi=4.0)
    act[0, :3] = [0.0, 3.0, -1.0]  # include boundary values
    activations = {
        "relu": lambda x: F.relu(x),
        "relu6": lambda x: F.relu6(x * 2),
        "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.7),
        "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
        "elu": lambda x: F.elu(x, 1.3),
        "gelu": lambda x: F.gelu(x),
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "tanh": lambda x: F.tanh(x),
        "sigmoid": lambda x: F.sigmoid(x),
        "silu": lambda x: F.silu(x),
        "softplus": lambda x: F.softplus(x, beta=2.0, threshold=3.0),
        "logsigmoid": lambda x: F.logsigmoid(x),
        "softmax": lambda x: F.softmax(x, dim=1),
        "log_softmax": lambda x: F.log_softmax(x, dim=0),
        "normalize": lambda x: F.normalize(x, p=1.0, dim=0),
    }
    for name, fn in activations.items():
        case(f"act_{name}", fn, {"x": act})

    # ---- embedding, normalization --------------------------------------------------------
    case(
        "embedding",
        lambda idx, w: F.embedding(idx, w, padding_idx=2),
        {"idx": np.array([[0, 2, 4, 9], [2, 2, 1, 0], [5, 6, 7, 8]], np.int64), "w": arr((10, 5))},
        grads=("w",),
    )
    bn_inputs = {
        "x": arr((4, 3, 5, 5)),
        "rm": arr(3, lo=-0.5, hi=0.5),
        "rv": arr(3, lo=0.5, hi=1.5),
        "w": arr(3),
        "b": arr(3),
    }
    tensors = case(
        "batch_norm_train",
        lambda x, rm, rv, w, b: F.batch_norm(
            x, rm, rv, w, b, training=True, momentum=0.2, eps=1e-4
        ),
        bn_inputs,
        grads=("x", "w", "b"),
    )
    put("batch_norm_train.rm_after", tensors["rm"])
    put("batch_norm_train.rv_after", tensors["rv"])
    case(
        "batch_norm_eval",
        lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3),
        bn_inputs,
        grads=("x", "w", "b"),
    )
    tensors = case(
        "batch_norm_1d",
        lambda x, rm, rv: F.batch_norm(x, rm, rv, training=True),
        {"x": arr((6, 4)), "rm": np.zeros(4, np.float32), "rv": np.ones(4, np.float32)},
    )
    put("batch_norm_1d.rm_after", tensors["rm"])
    put("batch_norm_1d.rv_after", tensors["rv"])
    case(
        "layer_norm",
        lambda x, w, b: F.layer_norm(x, (4, 5), w, b, eps=1e-6),
        {"x": arr((2, 3, 4, 5)), "w": arr((4, 5)), "b": arr((4, 5))},
        grads=("x", "w", "b"),
    )
    case(
        "group_norm",
        lambda x, w, b: F.group_norm(x, 3, w, b),
        {"x": arr((2, 6, 4, 3)), "w": arr(6), "b": arr(6)},
    )

    # ---- losses ----------------------------------------------------------------------------
    reg = {"x": arr((4, 6)), "y": arr((4, 6))}
    for red in ("none", "mean", "sum"):
        case(f"mse_{red}", lambda x, y: F.mse_loss(x, y, reduction=red), reg)  # noqa: B023 (called at once)
        case(f"l1_{red}", lambda x, y: F.l1_loss(x, y, reduction=red), reg)  # noqa: B023 (called at once)
        case(f"smooth_l1_{red}", lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=0.5), reg)  # noqa: B023 (called at once)
        case(f"huber_{red}", lambda x, y: F.huber_loss(x, y, reduction=red, delta=0.7), reg)  # noqa: B023 (called at once)
    logits = arr((6, 5), lo=-3, hi=3)
    target = np.array([0, 4, 1, 1, 3, 2], np.int64)
    weight = arr(5, lo=0.2, hi=2.0)
    logp = F.log_softmax(t(logits), 1).detach().numpy()
    for red in ("none", "mean", "sum"):
        case(
            f"nll_{red}",
            lambda x, t_, w: F.nll_loss(x, t_, weight=w, ignore_index=1, reduction=red),  # noqa: B023 (called at once)
            {"x": logp, "t_": target, "w": weight},
            grads=("x",),
        )
        case(
            f"ce_{red}",
            lambda x, t_, w: F.cross_entropy(x, t_, weight=w, ignore_index=1, reduction=red),  # noqa: B023 (called at once)
            {"x": logits, "t_": target, "w": weight},
            grads=("x",),
        )
        case(
            f"ce_smooth_{red}",
            lambda x, t_, w: F.cross_entropy(
                x, t_, weight=w, ignore_index=1, reduction=red, label_smoothing=0.15  # noqa: B023 (called at once)
            ),
            {"x": logits, "t_": target, "w": weight},
            grads=("x",),
        )
    case(
        "ce_plain", lambda x, t_: F.cross_entropy(x, t_), {"x": logits, "t_": target}, grads=("x",)
    )
    case(
        "ce_spatial",
        lambda x, t_: F.cross_entropy(x, t_),
        {"x": arr((2, 4, 3, 2)), "t_": rng.integers(0, 4, size=(2, 3, 2)).astype(np.int64)},
        grads=("x",),
    )
    case(
        "ce_unbatched",
        lambda x, t_: F.cross_entropy(x, t_),
        {"x": arr(5), "t_": np.array(3, np.int64)},
        grads=("x",),
    )
    probs = rng.dirichlet(np.ones(5), size=6).astype(np.float32)
    case(
        "ce_probs",
        lambda x, p, w: F.cross_entropy(x, p, weight=w, label_smoothing=0.1),
        {"x": logits, "p": probs, "w": weight},
        grads=("x",),
    )
    case(
        "ce_f64",
        lambda x, t_: F.cross_entropy(x, t_, reduction="sum"),
        {"x": logits.astype(np.float64), "t_": target},
        grads=("x",),
    )
    bce = {
        "x": arr((3, 4), lo=0.02, hi=0.98),
        "y": arr((3, 4), lo=0.0, hi=1.0),
        "w": arr((3, 4), lo=0.5, hi=1.5),
    }
    bce["x"][0, 0], bce["x"][0, 1] = 0.0, 1.0  # clamped logs
    for red in ("none", "mean", "sum"):
        case(
            f"bce_{red}",
            lambda x, y, w: F.binary_cross_entropy(x, y, weight=w, reduction=red),  # noqa: B023 (called at once)
            bce,
            grads=("x", "y"),
        )
        case(
            f"bce_logits_{red}",
            lambda x, y, w, pw: F.binary_cross_entropy_with_logits(
                x, y, weight=w, reduction=red, pos_weight=pw  # noqa: B023 (called at once)
            ),
            {
                "x": arr((3, 4), lo=-5, hi=5),
                "y": bce["y"],
                "w": bce["w"],
                "pw": arr(4, lo=0.5, hi=3.0),
            },
            grads=("x", "y"),
        )

    # ---- attention ---------------------------------------------------------------------------
    q, k, v = arr((2, 3, 4, 8)), arr((2, 3, 6, 8)), arr((2, 3, 6, 5))
    bool_mask = rng.uniform(size=(4, 6)) > 0.3
    bool_mask[1, :] = False  # a fully masked row
    float_mask = arr((2, 1, 4, 6), lo=-1, hi=1)
    case(
        "sdpa",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        {"q": q, "k": k, "v": v},
        grads=("q", "k", "v"),
    )
    case(
        "sdpa_bool",
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        {"q": q, "k": k, "v": v, "m": bool_mask},
        grads=("q", "k", "v"),
    )
    case(
        "sdpa_float",
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
        {"q": q, "k": k, "v": v, "m": float_mask},
    )
    case(
        "sdpa_causal",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        {"q": q, "k": k, "v": v},
    )

    os.makedirs(golden, exist_ok=True)
    path = os.path.join(golden, "functional.safetensors")
    save_file(out, path + ".partial")
    os.replace(path + ".partial", path)
    print(f"golden_functional: wrote {len(out)} arrays to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
