"""Golden file of the padding and transposed convolution tests (test_pad_conv_transpose.cpp;
run by ctest before them, see tests/CMakeLists.txt):

    python golden_pad_conv_transpose.py GOLDEN_DIR

Writes GOLDEN_DIR/pad_conv_transpose.safetensors: for every case "<case>.<name>", the fixed
inputs (drawn from a seeded NumPy generator), Python Ember's output ("<case>.out") and the
gradients of sum(out * proj) w.r.t. the inputs ("<case>.grad.<input>", proj saved as
"<case>.proj"). F.pad in every mode (negative pads crop), F.conv_transpose1d/2d/3d with
strides, paddings, output paddings (also one not smaller than the stride, allowed by a larger
dilation), groups, dilations and unbatched inputs.
"""

from __future__ import annotations

import sys

import numpy as np


def main(golden: str) -> int:
    from safetensors.numpy import save_file

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(20260315)
    out: dict[str, np.ndarray] = {}

    def arr(shape, dtype=np.float32):
        return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)

    def put(name, value):
        if isinstance(value, ember.Tensor):
            value = value.detach().numpy()
        out[name] = np.array(value, order="C")

    def case(name, fn, inputs: dict):
        tensors = {k: ember.tensor(v, requires_grad=True) for k, v in inputs.items()}
        for k, v in inputs.items():
            put(f"{name}.{k}", v)
        result = fn(**tensors)
        put(f"{name}.out", result)
        proj = rng.uniform(0.5, 1.5, size=result.shape).astype(inputs["x"].dtype)
        put(f"{name}.proj", proj)
        (result * ember.tensor(proj)).sum().backward()
        for k in inputs:
            put(f"{name}.grad.{k}", tensors[k].grad)

    # ---- F.pad: constant (any number of dims, negative pads crop)
    case("constant1d", lambda x: F.pad(x, (2, 1), value=1.5), {"x": arr((2, 3, 5))})
    case("constant3of4", lambda x: F.pad(x, (1, -2, 0, 3, 2, 2)), {"x": arr((2, 3, 4, 5))})
    case("constant_all4", lambda x: F.pad(x, (1, 1, -1, 2, 1, 0, 2, 1), value=-3.0),
         {"x": arr((2, 3, 4, 5))})
    case("constant_crop_only", lambda x: F.pad(x, (-1, -2, 0, -1)), {"x": arr((3, 4, 6))})
    # reflect (edge not repeated; each pad smaller than its dim)
    case("reflect1d", lambda x: F.pad(x, (3, 2), mode="reflect"), {"x": arr((2, 3, 5))})
    case("reflect1d_unbatched", lambda x: F.pad(x, (1, 4), mode="reflect"), {"x": arr((3, 5))})
    case("reflect2d", lambda x: F.pad(x, (1, 2, 3, 0), mode="reflect"), {"x": arr((2, 2, 4, 5))})
    case("reflect2d_crop", lambda x: F.pad(x, (-1, 3, 2, -1), mode="reflect"),
         {"x": arr((3, 4, 5))})
    case("reflect3d", lambda x: F.pad(x, (1, 2, 0, 1, 2, 1), mode="reflect"),
         {"x": arr((2, 2, 3, 4, 5))})
    case("reflect3d_unbatched_f64", lambda x: F.pad(x, (2, 1, 1, 1, 1, 0), mode="reflect"),
         {"x": arr((2, 3, 3, 4), np.float64)})
    # replicate (edge values repeated; pads of any size)
    case("replicate1d", lambda x: F.pad(x, (4, 1), mode="replicate"), {"x": arr((2, 3, 3))})
    case("replicate2d", lambda x: F.pad(x, (2, 0, 1, 5), mode="replicate"), {"x": arr((2, 4, 5))})
    case("replicate2d_crop", lambda x: F.pad(x, (-2, 1, 1, -1), mode="replicate"),
         {"x": arr((1, 2, 4, 5))})
    case("replicate3d", lambda x: F.pad(x, (1, 1, 2, 0, 0, 3), mode="replicate"),
         {"x": arr((1, 2, 3, 3, 4))})
    # circular (wrapped around at most once; negative pads crop first)
    case("circular1d", lambda x: F.pad(x, (2, 5), mode="circular"), {"x": arr((2, 3, 5))})
    case("circular1d_crop", lambda x: F.pad(x, (-1, 3), mode="circular"), {"x": arr((2, 5))})
    case("circular2d", lambda x: F.pad(x, (1, 2, 4, 1), mode="circular"), {"x": arr((2, 2, 4, 5))})
    case("circular3d", lambda x: F.pad(x, (1, 0, 2, 1, 1, 2), mode="circular"),
         {"x": arr((2, 3, 3, 4))})

    # ---- F.conv_transpose1d/2d/3d
    case("ct1d", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1, output_padding=2),
         {"x": arr((2, 3, 6)), "w": arr((3, 2, 4)), "b": arr(2)})
    case("ct1d_groups_dil", lambda x, w: F.conv_transpose1d(x, w, groups=2, dilation=2, padding=2),
         {"x": arr((2, 4, 7)), "w": arr((4, 3, 3))})
    case("ct1d_unbatched", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2),
         {"x": arr((3, 5)), "w": arr((3, 4, 2)), "b": arr(4)})
    case("ct2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
         {"x": arr((2, 3, 4, 5)), "w": arr((3, 2, 3, 3)), "b": arr(2)})
    case("ct2d_groups",
         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 1), padding=(0, 1),
                                            dilation=(1, 2), groups=3),
         {"x": arr((2, 6, 4, 4)), "w": arr((6, 2, 2, 3)), "b": arr(6)})
    case("ct2d_outpad_dilation",
         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=1, dilation=2, output_padding=1),
         {"x": arr((1, 3, 4, 4)), "w": arr((3, 2, 3, 3)), "b": arr(2)})
    case("ct2d_large_padding",
         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(3, 2), padding=(2, 1),
                                            output_padding=(2, 1)),
         {"x": arr((2, 2, 2, 3)), "w": arr((2, 3, 1, 2)), "b": arr(3)})
    case("ct2d_unbatched_f64", lambda x, w: F.conv_transpose2d(x, w, stride=(1, 3), padding=(1, 0)),
         {"x": arr((3, 4, 3), np.float64), "w": arr((3, 2, 3, 4), np.float64)})
    case("ct3d",
         lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(1, 1, 0),
                                            output_padding=(1, 0, 1)),
         {"x": arr((2, 3, 3, 4, 3)), "w": arr((3, 2, 2, 3, 2)), "b": arr(2)})
    case("ct3d_groups_dil",
         lambda x, w: F.conv_transpose3d(x, w, stride=2, dilation=(2, 1, 2), groups=2, padding=1),
         {"x": arr((1, 4, 3, 3, 2)), "w": arr((4, 1, 2, 2, 3))})
    case("ct3d_unbatched", lambda x, w, b: F.conv_transpose3d(x, w, b),
         {"x": arr((2, 2, 3, 2)), "w": arr((2, 3, 2, 2, 2)), "b": arr(3)})

    save_file(out, f"{golden}/pad_conv_transpose.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
