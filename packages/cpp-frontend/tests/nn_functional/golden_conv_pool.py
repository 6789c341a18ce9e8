"""Golden file of the string-padding convolutions and adaptive max pooling tests
(test_conv_padding_pool.cpp; run by ctest before them, see tests/CMakeLists.txt):

    python golden_conv_pool.py GOLDEN_DIR

Writes GOLDEN_DIR/conv_pool.safetensors: for every case "<case>.<name>", the fixed inputs
(drawn from a seeded NumPy generator), Python Ember's outputs ("<case>.out", and
"<case>.indices" for the pools) and the gradients of sum(out * proj) w.r.t. the inputs
("<case>.grad.<input>", proj saved as "<case>.proj").
"""

from __future__ import annotations

import sys

import numpy as np


def main(golden: str) -> int:
    from safetensors.numpy import save_file

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(20261129)
    out: dict[str, np.ndarray] = {}

    def arr(shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    def put(name, value):
        if isinstance(value, ember.Tensor):
            value = value.detach().numpy()
        out[name] = np.array(value, order="C")

    def case(name, fn, inputs: dict, grads=True):
        tensors = {k: ember.tensor(v, requires_grad=grads) for k, v in inputs.items()}
        for k, v in inputs.items():
            put(f"{name}.{k}", v)
        result = fn(**tensors)
        if isinstance(result, tuple):
            result, indices = result
            put(f"{name}.indices", indices)
        put(f"{name}.out", result)
        if grads:
            proj = rng.uniform(0.5, 1.5, size=result.shape).astype(np.float32)
            put(f"{name}.proj", proj)
            (result * ember.tensor(proj)).sum().backward()
            for k in inputs:
                put(f"{name}.grad.{k}", tensors[k].grad)

    # ---- string padding: "same" (odd and even totals, dilation, groups) and "valid"
    case("same1d", lambda x, w, b: F.conv1d(x, w, b, padding="same"),
         {"x": arr((2, 3, 9)), "w": arr((4, 3, 4)), "b": arr(4)})
    case("same1d_dil", lambda x, w: F.conv1d(x, w, padding="same", dilation=3),
         {"x": arr((2, 2, 10)), "w": arr((3, 2, 4))})
    case("same2d", lambda x, w, b: F.conv2d(x, w, b, padding="same", groups=2),
         {"x": arr((2, 4, 6, 7)), "w": arr((6, 2, 4, 3)), "b": arr(6)})
    case("same2d_dil", lambda x, w: F.conv2d(x, w, padding="same", dilation=(2, 3)),
         {"x": arr((1, 3, 8, 9)), "w": arr((2, 3, 3, 2))})
    case("valid2d", lambda x, w, b: F.conv2d(x, w, b, padding="valid", dilation=2),
         {"x": arr((2, 3, 8, 7)), "w": arr((4, 3, 2, 3)), "b": arr(4)})
    case("same3d", lambda x, w, b: F.conv3d(x, w, b, padding="same"),
         {"x": arr((2, 2, 4, 5, 6)), "w": arr((3, 2, 2, 3, 4)), "b": arr(3)})
    case("conv3d", lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 2),
                                            dilation=(2, 1, 1), groups=2),
         {"x": arr((2, 4, 6, 7, 5)), "w": arr((2, 2, 2, 3, 2)), "b": arr(2)})
    case("valid3d_unbatched", lambda x, w: F.conv3d(x, w, padding="valid"),
         {"x": arr((2, 4, 5, 6)), "w": arr((3, 2, 3, 2, 2))})

    # ---- adaptive max pooling (windows that overlap, grow and shrink; ties; None sizes)
    case("amp1d", lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True),
         {"x": arr((2, 3, 11))})
    case("amp1d_up", lambda x: F.adaptive_max_pool1d(x, 7, return_indices=True),
         {"x": arr((3, 5))})
    case("amp2d", lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True),
         {"x": arr((2, 3, 7, 9))})
    case("amp2d_none", lambda x: F.adaptive_max_pool2d(x, (None, 2), return_indices=True),
         {"x": arr((3, 5, 6))})
    ties = rng.integers(0, 3, size=(2, 2, 6, 5)).astype(np.float32)
    case("amp2d_ties", lambda x: F.adaptive_max_pool2d(x, (4, 3), return_indices=True),
         {"x": ties})
    case("amp3d", lambda x: F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True),
         {"x": arr((2, 2, 5, 6, 7))})
    nan = arr((1, 2, 6, 6))
    nan[0, 0, 1, 1] = nan[0, 0, 2, 0] = nan[0, 1, 5, 5] = np.nan
    case("amp2d_nan", lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True), {"x": nan},
         grads=False)

    save_file(out, f"{golden}/conv_pool.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
