"""Golden files of the checkpoint and gzip tests (run by ctest before them, see
tests/CMakeLists.txt):

    python golden_checkpoint.py GOLDEN_DIR

GOLDEN_DIR/gzip/
    cases.tsv         kind (gzip | deflate), compressed file, expected file: streams Python's
                      gzip and zlib write (levels 0, 1, 6, 9; fixed-Huffman, Huffman-only, RLE
                      and filtered strategies; small windows; FNAME, FEXTRA, FCOMMENT and FHCRC
                      headers; several members with zero padding; the examples' digits file)
    *.gz, *.deflate, *.bin
    fuzz_deflate.tsv  mutated and truncated raw deflate streams and what zlib makes of each:
                      hex input, status (ok | error | truncated), bytes consumed, output length,
                      output CRC-32
    fuzz_gzip.tsv     the same for gzip files (mutations after the 10-byte header) and
                      Python's gzip.decompress: hex input, status (ok | error), output length,
                      output CRC-32
GOLDEN_DIR/modules/  (Python Ember; PyTorch where importable)
    net.safetensors, net.pt, net_deflated.pt, net_torch.pt, net_io.safetensors
                      the state dict of a small CNN (Conv2d, BatchNorm2d after a training step,
                      Linear) in each format, and an input with the eval-mode output
    wrong_error.txt   Python's load_state_dict error for a model that does not fit it
    tensors.safetensors, tensors.pt
                      a plain dict of tensors of every dtype (0-d, empty, views sharing a
                      storage, a transposed view in the .pt)
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------------------ gzip

def payloads() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    text = "".join(f"{i},{i * i % 17},{(i * 7919) % 1000}\n" for i in range(20000)).encode()
    floats = (np.sin(np.arange(50000, dtype=np.float32) / 50) * 8).round(1).astype(np.float32)
    repeats = b"ab" * 30000 + b"abc" * 20000 + bytes(range(256)) * 40 + b"x" * 70000
    mixed = b"".join(rng.bytes(3000) + text[i * 5000:(i + 1) * 5000] for i in range(12))
    return {
        "empty": b"",
        "one": b"a",
        "text": text,
        "random": rng.bytes(150_000),
        "zeros": bytes(1_000_000),
        "floats": floats.tobytes(),
        "repeats": repeats,
        "mixed": mixed,
    }


def raw_deflate(data: bytes, level: int = 6, wbits: int = -15, strategy: int = 0,
                mem_level: int = 8) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
    return c.compress(data) + c.flush()


def gzip_with_header_fields(data: bytes) -> bytes:
    """A member with FEXTRA, FNAME, FCOMMENT and FHCRC (Python's gzip writes only FNAME)."""
    flags = 2 | 4 | 8 | 16
    header = bytes([0x1F, 0x8B, 8, flags]) + struct.pack("<I", 0) + bytes([0, 3])
    extra = b"AB" + struct.pack("<H", 4) + b"test"
    header += struct.pack("<H", len(extra)) + extra + b"name.txt\0" + b"a comment\0"
    header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return header + raw_deflate(data) + trailer


def find_digits() -> str | None:
    d = HERE
    for _ in range(6):
        candidate = os.path.join(d, "examples", "data", "digits.csv.gz")
        if os.path.exists(candidate):
            return candidate
        d = os.path.dirname(d)
    return None


def write_gzip_cases(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    cases = []

    def case(kind: str, name: str, compressed: bytes, expected: bytes) -> None:
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(compressed)
        with open(os.path.join(out, name + ".bin"), "wb") as fh:
            fh.write(expected)
        cases.append((kind, name, name + ".bin"))

    data = payloads()
    for pname, payload in data.items():
        for level in (0, 1, 6, 9):
            case("gzip", f"{pname}.{level}.gz", gzip.compress(payload, level, mtime=0), payload)
    strategies = {"fixed": zlib.Z_FIXED, "huffman": zlib.Z_HUFFMAN_ONLY, "rle": zlib.Z_RLE,
                  "filtered": zlib.Z_FILTERED}
    for pname in ("one", "text", "floats", "repeats", "mixed", "empty"):
        for sname, strategy in strategies.items():
            case("deflate", f"{pname}.{sname}.deflate", raw_deflate(data[pname], strategy=strategy),
                 data[pname])
        case("deflate", f"{pname}.w9.deflate", raw_deflate(data[pname], 9, wbits=-9, mem_level=1),
             data[pname])
    text = data["text"]
    named = io.BytesIO()
    with gzip.GzipFile(filename="digits.csv", mode="wb", fileobj=named, mtime=1234567890) as fh:
        fh.write(text)
    case("gzip", "named.gz", named.getvalue(), text)
    case("gzip", "header_fields.gz", gzip_with_header_fields(text[:5000]), text[:5000])
    members = (gzip.compress(text[:7000], 6, mtime=0) + gzip.compress(b"", 9, mtime=0)
               + gzip.compress(data["repeats"], 1, mtime=0) + bytes(16))
    case("gzip", "members.gz", members, text[:7000] + data["repeats"])
    digits = find_digits()
    if digits is not None:
        with open(digits, "rb") as fh:
            raw = fh.read()
        case("gzip", "digits.csv.gz", raw, gzip.decompress(raw))

    with open(os.path.join(out, "cases.tsv"), "w") as fh:
        for row in cases:
            fh.write("\t".join(row) + "\n")


def zlib_outcome(stream: bytes) -> tuple[str, int, bytes]:
    d = zlib.decompressobj(-15)
    try:
        produced = d.decompress(stream)
    except zlib.error:
        return "error", 0, b""
    if not d.eof:
        return "truncated", 0, b""
    return "ok", len(stream) - len(d.unused_data), produced


def mutations(rng, base: bytes, count: int, start: int = 0):
    """Truncations (every length for short streams, else a sample) and random edits at or
    after `start`: flipped bits, replaced bytes, deleted or inserted bytes."""
    n = len(base)
    cuts = range(1, n) if n <= 300 else sorted(set(rng.integers(1, n, 60).tolist()))
    for cut in cuts:
        yield base[:cut]
    for _ in range(count):
        m = bytearray(base)
        op = rng.integers(0, 4)
        pos = int(rng.integers(start, n))
        if op == 0:
            for _ in range(int(rng.integers(1, 4))):
                p = int(rng.integers(start, n))
                m[p] ^= 1 << int(rng.integers(0, 8))
        elif op == 1:
            m[pos] = int(rng.integers(0, 256))
        elif op == 2:
            del m[pos]
        else:
            m.insert(pos, int(rng.integers(0, 256)))
        yield bytes(m)


def write_fuzz_cases(out: str) -> None:
    rng = np.random.default_rng(1)
    sources = [
        raw_deflate(b"hello, hello, hello world\n" * 20),
        raw_deflate(bytes(range(200)) * 3, 9),
        raw_deflate(b"the quick brown fox jumps over the lazy dog. " * 30, strategy=zlib.Z_FIXED),
        raw_deflate(rng.bytes(150), 0),
        raw_deflate(rng.integers(0, 8, 2000, dtype=np.uint8).tobytes(), 6),
        raw_deflate(b"a" * 3000 + b"b" * 3000, 1, strategy=zlib.Z_RLE),
    ]
    with open(os.path.join(out, "fuzz_deflate.tsv"), "w") as fh:
        for src in sources:
            for m in mutations(rng, src, 400):
                status, consumed, produced = zlib_outcome(m)
                fh.write(f"{m.hex() or '-'}\t{status}\t{consumed}\t{len(produced)}\t"
                         f"{zlib.crc32(produced)}\n")
    gz_sources = [gzip.compress(b"line %d\n" % i * 3, 6, mtime=0) for i in (1, 50, 400)]
    with open(os.path.join(out, "fuzz_gzip.tsv"), "w") as fh:
        for src in gz_sources:
            for m in mutations(rng, src, 400, start=10):
                try:
                    produced = gzip.decompress(m)
                    status = "ok"
                except (OSError, EOFError, zlib.error):
                    status, produced = "error", b""
                fh.write(f"{m.hex()}\t{status}\t{len(produced)}\t{zlib.crc32(produced)}\n")


# --------------------------------------------------------------------------- modules

def write_module_cases(out: str) -> None:
    import ember
    import ember.safetensors
    from ember import nn

    os.makedirs(out, exist_ok=True)
    ember.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten())
            self.head = nn.Linear(4 * 4 * 4, 3)

        def forward(self, x):
            return self.head(self.features(x))

    net = Net()
    x = ember.randn(5, 1, 8, 8)
    net.train()
    net(x)  # running statistics move, num_batches_tracked becomes 1
    net.eval()
    with ember.no_grad():
        y = net(x)
    sd = net.state_dict()
    ember.safetensors.save_file(sd, os.path.join(out, "net.safetensors"))
    ember.save(sd, os.path.join(out, "net.pt"))
    ember.safetensors.save_file({"x": x, "y": y}, os.path.join(out, "net_io.safetensors"))
    # the same archive re-packed with deflate, as `zip -r` or Python's zipfile would
    with zipfile.ZipFile(os.path.join(out, "net.pt")) as src, \
            zipfile.ZipFile(os.path.join(out, "net_deflated.pt"), "w",
                            zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))

    class Wrong(Net):  # a head of another size and a parameter the checkpoint lacks
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4 * 4 * 4, 5)
            self.scale = nn.Parameter(ember.ones(1))

    extended = dict(sd)
    extended["extra.weight"] = ember.zeros(2)
    extended["head.bias2"] = ember.zeros(3)
    try:
        Wrong().load_state_dict(extended)
    except RuntimeError as e:
        with open(os.path.join(out, "wrong_error.txt"), "w") as fh:
            fh.write(str(e))

    base = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    tensors = {
        "f32": ember.randn(3, 4),
        "f64": ember.randn(2, 3, dtype=ember.float64),
        "f16": ember.randn(5).to(ember.float16),
        "i64": ember.arange(-3, 3),
        "i32": ember.arange(6, dtype=ember.int32).reshape(2, 3),
        "i16": ember.tensor([-7, 8], dtype=ember.int16),
        "i8": ember.tensor([-128, 127], dtype=ember.int8),
        "u8": ember.tensor([0, 255], dtype=ember.uint8),
        "bool": ember.tensor([True, False, True]),
        "scalar": ember.tensor(2.5),
        "empty": ember.zeros(0, 3),
    }
    ember.safetensors.save_file(tensors, os.path.join(out, "tensors.safetensors"))
    views = dict(tensors)
    views["base"] = base
    views["row"] = base[1]          # shares base's storage, offset 6
    views["t"] = base.t()           # a transposed view: strides (1, 6)
    ember.save(views, os.path.join(out, "tensors.pt"))

    try:
        import torch
    except ImportError:
        return
    tsd = {k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()}
    torch.save(tsd, os.path.join(out, "net_torch.pt"))


def main(golden: str) -> int:
    write_gzip_cases(os.path.join(golden, "gzip"))
    write_fuzz_cases(os.path.join(golden, "gzip"))
    write_module_cases(os.path.join(golden, "modules"))
    print(f"golden_checkpoint: wrote {golden}/gzip and {golden}/modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
