"""Write a small MNIST look-alike in MNIST's idx format, for PyTorch's mnist and dcgan examples.

The images are the embedded 8x8 handwritten digits (examples/data/digits.csv.gz, UCI optdigits,
CC BY 4.0), each pixel repeated 3x3 (24x24) and centred in 28x28 as MNIST centres its 20x20
digits; grey levels 0..16 become 0..255. The first ``--train`` digits go to
train-images-idx3-ubyte / train-labels-idx1-ubyte, the next ``--test`` to t10k-*. Standard
library only, so it runs under any Python.

    python examples/cpp/pytorch/make_mnist_idx.py OUT_DIR --train 640 --test 200
"""

from __future__ import annotations

import argparse
import gzip
import struct
from pathlib import Path

DIGITS = Path(__file__).resolve().parents[2] / "data" / "digits.csv.gz"
SIDE, SCALE, PAD = 28, 3, 2  # 8 * 3 + 2 * 2 == 28
IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049


def load_digits() -> list[tuple[list[int], int]]:
    """(64 grey levels in 0..16, label) per digit, in the file's order."""
    with gzip.open(DIGITS, "rt") as f:
        rows = [[int(float(v)) for v in line.split(",")] for line in f if line.strip()]
    return [(row[:64], row[64]) for row in rows]


def upscale(pixels: list[int]) -> bytes:
    """An 8x8 digit as a 28x28 MNIST image (row-major bytes)."""
    image = bytearray(SIDE * SIDE)
    for y in range(8 * SCALE):
        for x in range(8 * SCALE):
            level = pixels[(y // SCALE) * 8 + x // SCALE]
            image[(y + PAD) * SIDE + x + PAD] = (level * 255 + 8) // 16
    return bytes(image)


def write_split(out: Path, prefix: str, digits: list[tuple[list[int], int]]) -> None:
    n = len(digits)
    images = b"".join(upscale(pixels) for pixels, _ in digits)
    (out / f"{prefix}-images-idx3-ubyte").write_bytes(
        struct.pack(">IIII", IMAGE_MAGIC, n, SIDE, SIDE) + images)
    (out / f"{prefix}-labels-idx1-ubyte").write_bytes(
        struct.pack(">II", LABEL_MAGIC, n) + bytes(label for _, label in digits))


def write_mnist(out: Path, train: int, test: int) -> None:
    """The train and t10k idx files of ``train`` and ``test`` digits in ``out``."""
    digits = load_digits()
    if train + test > len(digits):
        raise SystemExit(f"only {len(digits)} digits: --train {train} --test {test} is too many")
    out.mkdir(parents=True, exist_ok=True)
    write_split(out, "train", digits[:train])
    write_split(out, "t10k", digits[train:train + test])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for the four idx files")
    parser.add_argument("--train", type=int, default=640, help="training images (default 640)")
    parser.add_argument("--test", type=int, default=200, help="test images (default 200)")
    args = parser.parse_args()
    write_mnist(args.out, args.train, args.test)


if __name__ == "__main__":
    main()
