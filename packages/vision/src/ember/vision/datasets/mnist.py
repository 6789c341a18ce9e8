"""MNIST, Fashion-MNIST and Kuzushiji-MNIST from their IDX files, as in ``torchvision.datasets``."""

from __future__ import annotations

import gzip
import os

import numpy as np

import ember

from .utils import check_integrity, download_and_extract_archive
from .vision import _SplitImageDataset

__all__ = [
    "MNIST",
    "FashionMNIST",
    "KMNIST",
    "read_sn3_pascalvincent_tensor",
    "read_image_file",
    "read_label_file",
]

#: IDX type codes -> big-endian NumPy dtypes
_IDX_TYPES = {8: ">u1", 9: ">i1", 11: ">i2", 12: ">i4", 13: ">f4", 14: ">f8"}


def _read_bytes(path: str) -> bytes:
    """The file's bytes; ``path + '.gz'`` is read (decompressed) when only that exists."""
    if not os.path.isfile(path) and os.path.isfile(path + ".gz"):
        with gzip.open(path + ".gz", "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def read_sn3_pascalvincent_tensor(path: str, strict: bool = True) -> ember.Tensor:
    """Parse an IDX ("SN3 Pascal Vincent") file into a tensor of its stored dtype and shape."""
    data = _read_bytes(path)
    magic = int.from_bytes(data[0:4], "big")
    nd, ty = magic % 256, magic // 256
    if not (1 <= nd <= 3 and ty in _IDX_TYPES):
        raise RuntimeError(f"{path} is not an IDX file (magic number {magic:#x})")
    shape = [int.from_bytes(data[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(nd)]
    parsed = np.frombuffer(data, dtype=_IDX_TYPES[ty], offset=4 * (nd + 1))
    if strict and parsed.shape[0] != int(np.prod(shape)):
        raise RuntimeError(
            f"{path}: expected {int(np.prod(shape))} values, found {parsed.shape[0]}"
        )
    parsed = parsed[: int(np.prod(shape))].astype(np.dtype(_IDX_TYPES[ty]).newbyteorder("="))
    return ember.from_numpy(parsed.reshape(shape))


def _read_uint8_file(path: str, ndim: int) -> ember.Tensor:
    """A uint8 IDX file of ``ndim`` dimensions, with torchvision's errors otherwise."""
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype}")
    if x.ndimension() != ndim:
        raise ValueError(f"x should have {ndim} dimension instead of {x.ndimension()}")
    return x


def read_label_file(path: str) -> ember.Tensor:
    """IDX labels as an int64 vector."""
    return _read_uint8_file(path, 1).long()


def read_image_file(path: str) -> ember.Tensor:
    """IDX images as a uint8 ``(N, H, W)`` tensor."""
    return _read_uint8_file(path, 3)


#: the four IDX files of an MNIST-like dataset, in ``resources`` order
_IDX_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


def _resources(*md5s: str) -> list[tuple[str, str]]:
    """``resources``: each of :data:`_IDX_FILES` with its MD5."""
    return list(zip(_IDX_FILES, md5s, strict=True))


class MNIST(_SplitImageDataset):
    """`MNIST <http://yann.lecun.com/exdb/mnist/>`_ handwritten digits.

    Reads ``root/<ClassName>/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (or the same
    names with ``.gz``); ``download=True`` fetches the archives from ``mirrors``, checks their
    MD5 and decompresses them there. Items are ``(PIL 'L' image, int label)``.
    """

    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    resources = _resources(
        "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "d53e105ee54ea40749a09fcbcd1e9432",
        "9fb629c4189551a2d022fa330f9573f3",
        "ec29112dd5afa0611ce80d1b7f02629c",
    )
    classes = [
        "0 - zero",
        "1 - one",
        "2 - two",
        "3 - three",
        "4 - four",
        "5 - five",
        "6 - six",
        "7 - seven",
        "8 - eight",
        "9 - nine",
    ]

    def _split_file(self, kind: str) -> str:
        name = "images-idx3" if kind == "images" else "labels-idx1"
        return os.path.join(self.raw_folder, f"{'train' if self.train else 't10k'}-{name}-ubyte")

    def _load_data(self):
        return read_image_file(self._split_file("images")), read_label_file(
            self._split_file("labels")
        )

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "processed")

    def _check_exists(self) -> bool:
        def present(name: str) -> bool:
            path = os.path.join(self.raw_folder, os.path.splitext(name)[0])
            return check_integrity(path) or check_integrity(path + ".gz")

        return all(present(name) for name, _ in self.resources)

    def download(self) -> None:
        """Download the IDX archives (trying each mirror) unless the files are already there
        (decompressed or, as this class also reads them, only as ``.gz``)."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            errors = []
            for mirror in self.mirrors:
                try:
                    download_and_extract_archive(
                        f"{mirror}{filename}",
                        download_root=self.raw_folder,
                        filename=filename,
                        md5=md5,
                    )
                except (RuntimeError, OSError) as e:
                    errors.append(e)
                    continue
                break
            else:
                s = f"Error downloading {filename}:\n"
                for mirror, err in zip(self.mirrors, errors):
                    s += f"Tried {mirror}, got:\n{err!s}\n"
                raise RuntimeError(s)


class FashionMNIST(MNIST):
    """`Fashion-MNIST <https://github.com/zalandoresearch/fashion-mnist>`_ (Zalando, MIT):
    28x28 clothing images."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = _resources(
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "25c81989df183df01b3e8a0aad5dffbe",
        "bef4ecab320f06d8554ea6380940ec79",
        "bb300cfdad3c16e7a12a480ee83cd310",
    )
    classes = [
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ]


class KMNIST(MNIST):
    """`Kuzushiji-MNIST <https://github.com/rois-codh/kmnist>`_: 28x28 cursive Japanese."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = _resources(
        "bdb82020997e1d708af4cf47b453dcf7",
        "e144d726b3acfaa3e44228e80efcd344",
        "5c965bf0a639b31b8f53240b1b52f4d7",
        "7320c461ea6c1c855c0b718fb2a4b134",
    )
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
