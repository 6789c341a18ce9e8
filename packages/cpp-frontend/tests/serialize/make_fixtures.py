"""Fixture checkpoints for the C++ serialization tests (tests/serialize/*.cpp).

    python make_fixtures.py [OUT_DIR]      # writes the fixtures and OUT_DIR/expected.tsv
    python make_fixtures.py --dump FILE    # prints FILE's tensors (a safetensors file) as
                                           # expected.tsv lines, read by Python's safetensors
                                           # and checked against ember.safetensors
    python make_fixtures.py --dump-torch FILE  # the same for a PyTorch zip checkpoint of a
                                           # state dict, read by torch.load(weights_only=True)
                                           # and checked against ember.load, in file order

Run with an interpreter that has Python Ember, PyTorch and safetensors (the repository's
.nox/tests environment). OUT_DIR defaults to the fixtures/ folder beside this script, where
a copy is checked in (the C++ tests read it unless EMBER_SERIALIZE_FIXTURES names another
folder). Every fixture is deterministic except the random serialization id torch.save and
ember.save write into their archives.

expected.tsv has one line per tensor, tab-separated:
    file  name  dtype  requires_grad  shape  strides  storage_offset  hex
with dtype in Ember's spelling (bfloat16 storages appear as the float32 they are read as),
shape and strides comma-separated ("-" for a 0-d tensor), hex the tensor's elements packed
in row-major order, little-endian ("-" when empty). Lines starting with "#" are comments;
"share<TAB>file<TAB>a<TAB>b" lines say that tensors a and b view one storage.
"""

from __future__ import annotations

import collections
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

NP_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
             "float64"]


def values(dtype: str, n: int) -> np.ndarray:
    """n deterministic elements of numpy dtype ``dtype`` (negatives, fractions, wraps)."""
    i = np.arange(n, dtype=np.int64)
    if dtype == "bool":
        return i % 3 == 0
    if dtype == "uint8":
        return ((i * 37 + 5) % 256).astype(np.uint8)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        v = (i * 7919 - 3 * n) * (1 + int(info.max) // 100000)
        return np.clip(v, info.min, info.max).astype(dtype)
    return ((i * 1.25 - n / 3.0) / 7.0).astype(dtype)


def line(file: str, name: str, arr: np.ndarray, dtype_name: str, requires_grad=False,
         strides=None, offset=0) -> str:
    shape = ",".join(str(d) for d in arr.shape) or "-"
    if strides is None:
        strides = [int(s) for s in contiguous_strides(arr.shape)]
    stride_text = ",".join(str(s) for s in strides) or "-"
    data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes().hex() or "-"
    return "\t".join([file, name, dtype_name, str(int(bool(requires_grad))), shape, stride_text,
                      str(offset), data])


def contiguous_strides(shape) -> list[int]:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= max(d, 1)
    return out[::-1]


# ------------------------------------------------------------------------------ safetensors

def safetensors_fixtures(out: str, lines: list[str]) -> None:
    from safetensors.numpy import save_file

    shapes = {"bool": (2, 3), "uint8": (5,), "int8": (3, 1, 2), "int16": (4,), "int32": (2, 2),
              "int64": (3,), "float16": (2, 5), "float32": (3, 4), "float64": (2,)}
    tensors = {f"t_{dt}": values(dt, int(np.prod(shapes[dt]))).reshape(shapes[dt])
               for dt in NP_DTYPES}
    tensors["scalar_f32"] = np.array(2.5, np.float32)          # 0-d
    tensors["empty_i64"] = np.zeros((0, 3), np.int64)           # no elements
    tensors["a.dotted/name-é"] = values("float32", 3)           # non-ASCII name
    tensors["same_dtype_b"] = values("int32", 2)                # ties broken by name
    tensors["same_dtype_a"] = values("int32", 3)
    save_file(tensors, os.path.join(out, "st_all_dtypes.safetensors"),
              metadata={"format": "pt"})
    for name, arr in sorted(tensors.items()):
        lines.append(line("st_all_dtypes.safetensors", name, arr, str(arr.dtype)))

    meta = {"note": 'quote" back\\slash /é\n\t\x01\x1f\x7f'}
    save_file({"w": values("float64", 4).reshape(2, 2)},
              os.path.join(out, "st_metadata.safetensors"), metadata=meta)
    lines.append(line("st_metadata.safetensors", "w", values("float64", 4).reshape(2, 2),
                      "float64"))
    save_file({}, os.path.join(out, "st_empty.safetensors"))


# ----------------------------------------------------------------------------- PyTorch

def torch_fixtures(out: str, lines: list[str]) -> None:
    import torch

    torch.manual_seed(0)
    to_np = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8",
             torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
             torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}

    def record(file: str, name: str, t) -> None:
        rg = t.requires_grad
        t = t.detach()
        if t.dtype == torch.bfloat16:
            arr, dt = t.float().numpy(), "float32"
        else:
            arr, dt = t.numpy(), to_np[t.dtype]
        lines.append(line(file, name, arr, dt, rg, list(t.stride()), t.storage_offset()))

    # a module's state dict: OrderedDict with _metadata, int64 num_batches_tracked
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.Linear(4, 2))
    model(torch.randn(5, 3))  # updates the running statistics
    sd = model.state_dict()
    torch.save(sd, os.path.join(out, "torch_state_dict.pt"))
    for name, t in sd.items():
        record("torch_state_dict.pt", name, t)

    # every dtype, views of one storage, non-contiguous, 0-d, empty, parameters
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    tensors = {}
    for dt in to_np:
        n = 6
        arr = values(to_np[dt], n)
        tensors[f"d_{to_np[dt]}"] = torch.from_numpy(arr.copy()).reshape(2, 3)
    tensors["d_bfloat16"] = (torch.arange(5, dtype=torch.float32) - 2.5).to(torch.bfloat16)
    tensors["x"] = base
    tensors["x_row"] = base[1]            # offset 4, shares x's storage
    tensors["x_t"] = base.t()             # strides (1, 4)
    tensors["x_cols"] = base[:, 1::2]     # strides (4, 2), offset 1
    tensors["scalar"] = torch.tensor(-1.5, dtype=torch.float64)
    tensors["empty"] = torch.zeros(0, 4, dtype=torch.int32)
    tensors["param"] = torch.nn.Parameter(torch.linspace(-1, 1, 6).reshape(2, 3))
    tensors["frozen"] = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    tensors["grad_leaf"] = torch.ones(3, dtype=torch.float16).requires_grad_()
    # protocol 4 (FRAME, STACK_GLOBAL, MEMOIZE, SHORT_BINUNICODE...): a few of them
    subset = {k: tensors[k] for k in ("d_float32", "d_bfloat16", "x", "x_row", "x_t",
                                      "scalar", "empty", "param")}
    for proto, file, chosen in ((2, "torch_tensors.pt", tensors),
                                (4, "torch_tensors_proto4.pt", subset)):
        torch.save(chosen, os.path.join(out, file), pickle_protocol=proto)
        for name, t in chosen.items():
            record(file, name, t)
        for a, b in (("x", "x_row"), ("x", "x_t"), ("x", "x_cols")):
            if b in chosen:
                lines.append("\t".join(["share", file, a, b]))

    nested = {"model": sd, "epoch": 3, "best": 0.5, "name": "run-1",
              "optimizer": {"lr": 0.1, "state": {}}}
    torch.save(nested, os.path.join(out, "torch_nested.pt"))
    for name, t in sd.items():
        record("torch_nested.pt", "model/" + name, t)

    # scalars beside the tensors (skipped by the C++ reader), and tensors with Python
    # attributes (pickled through _rebuild_from_type_v2 / _rebuild_parameter_with_state)
    attr = torch.arange(3, dtype=torch.int16)
    attr.note = "kept in Python, dropped in C++"
    pattr = torch.nn.Parameter(torch.full((2,), 0.5))
    pattr.tag = 1
    scalars = collections.OrderedDict(w=torch.ones(2), epoch=7, note="x", none=None,
                                      flag=True, lr=1e-3, raw=b"\x00\x01", attr=attr,
                                      pattr=pattr)
    torch.save(scalars, os.path.join(out, "torch_scalars.pt"))
    for name in ("w", "attr", "pattr"):
        record("torch_scalars.pt", name, scalars[name])


def ember_fixtures(out: str, lines: list[str]) -> None:
    import ember
    import ember.nn as nn

    ember.manual_seed(0)

    def record(file: str, name: str, t) -> None:
        arr = t.detach().numpy()
        lines.append(line(file, name, arr, str(arr.dtype), t.requires_grad, list(t.stride()),
                          t.storage_offset()))

    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    sd = model.state_dict()
    ember.save(sd, os.path.join(out, "ember_state_dict.pt"))
    for name, t in sd.items():
        record("ember_state_dict.pt", name, t)

    base = ember.arange(12, dtype=ember.float64).reshape(3, 4) / 8
    tensors = {f"d_{dt}": ember.tensor(values(dt, 6).reshape(2, 3)) for dt in NP_DTYPES}
    tensors.update(x=base, x_row=base[2], x_t=base.t(), scalar=ember.tensor(7, dtype=ember.int64),
                   empty=ember.zeros(2, 0), param=nn.Parameter(ember.ones(2, 2) / 3))
    ember.save(tensors, os.path.join(out, "ember_tensors.pt"))
    for name, t in tensors.items():
        record("ember_tensors.pt", name, t)
    lines.append("\t".join(["share", "ember_tensors.pt", "x", "x_row"]))
    lines.append("\t".join(["share", "ember_tensors.pt", "x", "x_t"]))

    ember.safetensors.save_file({"a": ember.ones(2, 3), "b": ember.arange(4)},
                                os.path.join(out, "ember_model.safetensors"))
    lines.append(line("ember_model.safetensors", "a", np.ones((2, 3), np.float32), "float32"))
    lines.append(line("ember_model.safetensors", "b", np.arange(4, dtype=np.int64), "int64"))


def dump(path: str) -> None:
    """Print a safetensors file's tensors as expected.tsv lines (read by the safetensors
    package), after checking that ember.safetensors reads the same."""
    from safetensors import safe_open

    import ember.safetensors

    name = os.path.basename(path)
    with safe_open(path, framework="np") as f:
        meta = f.metadata() or {}
        for key in sorted(f.keys()):
            arr = f.get_tensor(key)
            mine = ember.safetensors.load_file(path)[key].numpy()
            assert mine.dtype == arr.dtype and mine.shape == arr.shape, key
            assert mine.tobytes() == arr.tobytes(), key
            print(line(name, key, arr, str(arr.dtype)))
    for k, v in sorted(meta.items()):
        print("\t".join(["meta", name, k.encode("unicode_escape").decode("ascii"),
                         v.encode("unicode_escape").decode("ascii")]))


def dump_torch(path: str) -> None:
    """Print the state dict of a PyTorch zip checkpoint as expected.tsv lines in its order
    (read by torch.load(weights_only=True)), after checking that ember.load reads the same
    names, dtypes, shapes, strides and elements, and a "type" comment line naming the
    container ("# type OrderedDict")."""
    import torch

    import ember

    name = os.path.basename(path)
    theirs = torch.load(path, weights_only=True)
    mine = ember.load(path)
    print(f"# type {type(theirs).__name__} {type(mine).__name__}")
    assert list(theirs) == list(mine), (list(theirs), list(mine))
    for key, t in theirs.items():
        m = mine[key]
        dtype = str(t.dtype).removeprefix("torch.")
        assert str(m.dtype).removeprefix("ember.") == dtype, (key, m.dtype, t.dtype)
        arr = t.numpy()
        other = m.numpy()
        assert other.dtype == arr.dtype and other.shape == arr.shape, key
        assert np.ascontiguousarray(other).tobytes() == np.ascontiguousarray(arr).tobytes(), key
        assert tuple(m.stride()) == tuple(t.stride()), (key, m.stride(), t.stride())
        assert m.storage_offset() == t.storage_offset(), key
        print(line(name, key, arr, dtype, t.requires_grad, list(t.stride()), t.storage_offset()))


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--dump":
        dump(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "--dump-torch":
        dump_torch(argv[2])
        return 0
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "fixtures")
    os.makedirs(out, exist_ok=True)
    lines = ["# generated by make_fixtures.py: file, name, dtype, requires_grad, shape, "
             "strides, storage_offset, hex"]
    safetensors_fixtures(out, lines)
    torch_fixtures(out, lines)
    ember_fixtures(out, lines)
    with open(os.path.join(out, "expected.tsv"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
