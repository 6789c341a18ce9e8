"""Optical flow datasets, as torchvision's ``Sintel``, ``FlyingChairs``, ``FlyingThings3D``
(``.flo`` and ``.pfm`` flow files), ``KittiFlow`` and ``HD1K`` (flow in 16-bit RGB PNGs, which
Pillow decodes only to 8 bits: :func:`_read_png_rgb16` reads them).
"""

from __future__ import annotations

import itertools
import os
import re
import struct
import zlib
from collections.abc import Callable
from glob import glob
from pathlib import Path
from typing import Any

import numpy as np

from .folder import default_loader
from .utils import verify_str_arg
from .vision import VisionDataset

__all__ = ["FlowDataset", "Sintel", "FlyingChairs", "FlyingThings3D", "KittiFlow", "HD1K"]


class FlowDataset(VisionDataset):
    """Pairs of consecutive frames with the flow from the first to the second: items are
    ``(img1, img2, flow)`` (``flow`` a float32 ``(2, H, W)`` array, ``None`` without ground
    truth); ``transforms`` takes and returns ``(img1, img2, flow, valid_flow_mask)``."""

    _has_builtin_flow_mask = False

    def __init__(
        self, root, transforms: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root=root)
        self.transforms = transforms
        self._flow_list: list[str] = []
        self._image_list: list[list[str]] = []
        self._loader = loader

    def _read_img(self, file_name: str) -> Any:
        return self._loader(file_name)

    def _read_flow(self, file_name: str):
        raise NotImplementedError

    def __getitem__(self, index: int) -> tuple:
        img1 = self._read_img(self._image_list[index][0])
        img2 = self._read_img(self._image_list[index][1])
        if self._flow_list:  # empty for the test split of some datasets
            flow = self._read_flow(self._flow_list[index])
            if self._has_builtin_flow_mask:
                flow, valid_flow_mask = flow
            else:
                valid_flow_mask = None
        else:
            flow = valid_flow_mask = None
        if self.transforms is not None:
            img1, img2, flow, valid_flow_mask = self.transforms(img1, img2, flow, valid_flow_mask)
        if self._has_builtin_flow_mask or valid_flow_mask is not None:
            return img1, img2, flow, valid_flow_mask
        return img1, img2, flow

    def __len__(self) -> int:
        return len(self._image_list)

    def __rmul__(self, v: int):
        from ember.data import ConcatDataset

        return ConcatDataset([self] * v)


class Sintel(FlowDataset):
    """`MPI Sintel <http://sintel.is.tue.mpg.de/>`_ flow: ``root/Sintel/{training,test}/
    <pass>/<scene>/*.png`` with ``training/flow/<scene>/*.flo``; ``pass_name`` is ``clean``,
    ``final`` or ``both``. Like torchvision, scenes are taken in the file system's order."""

    def __init__(
        self,
        root,
        split: str = "train",
        pass_name: str = "clean",
        transforms: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        passes = ["clean", "final"] if pass_name == "both" else [pass_name]
        root = Path(root) / "Sintel"
        flow_root = root / "training" / "flow"
        split_dir = "training" if split == "train" else split
        for name in passes:
            image_root = root / split_dir / name
            for scene in os.listdir(image_root):
                image_list = sorted(glob(str(image_root / scene / "*.png")))
                for i in range(len(image_list) - 1):
                    self._image_list += [[image_list[i], image_list[i + 1]]]
                if split == "train":
                    self._flow_list += sorted(glob(str(flow_root / scene / "*.flo")))

    def _read_flow(self, file_name: str) -> np.ndarray:
        return _read_flo(file_name)


class FlyingChairs(FlowDataset):
    """`FlyingChairs <https://lmb.informatik.uni-freiburg.de/resources/datasets/
    FlyingChairs.en.html>`_: ``root/FlyingChairs/data/*.{ppm,flo}`` split by
    ``FlyingChairs_train_val.txt`` (1 train, 2 val)."""

    def __init__(self, root, split: str = "train", transforms: Callable | None = None) -> None:
        super().__init__(root=root, transforms=transforms)
        verify_str_arg(split, "split", valid_values=("train", "val"))
        root = Path(root) / "FlyingChairs"
        images = sorted(glob(str(root / "data" / "*.ppm")))
        flows = sorted(glob(str(root / "data" / "*.flo")))
        split_file_name = "FlyingChairs_train_val.txt"
        if not os.path.exists(root / split_file_name):
            raise FileNotFoundError(
                "The FlyingChairs_train_val.txt file was not found - please download it from "
                "the dataset page (see docstring)."
            )
        split_list = np.loadtxt(str(root / split_file_name), dtype=np.int32)
        for i in range(len(flows)):
            split_id = split_list[i]
            if (split == "train" and split_id == 1) or (split == "val" and split_id == 2):
                self._flow_list += [flows[i]]
                self._image_list += [[images[2 * i], images[2 * i + 1]]]

    def _read_flow(self, file_name: str) -> np.ndarray:
        return _read_flo(file_name)


class FlyingThings3D(FlowDataset):
    """`FlyingThings3D <https://lmb.informatik.uni-freiburg.de/resources/datasets/
    SceneFlowDatasets.en.html>`_ flow (``.pfm``), forwards and backwards, for ``pass_name``
    ``clean``, ``final`` or ``both`` and ``camera`` ``left``, ``right`` or ``both``."""

    def __init__(
        self,
        root,
        split: str = "train",
        pass_name: str = "clean",
        camera: str = "left",
        transforms: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        split = split.upper()
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        passes = {
            "clean": ["frames_cleanpass"],
            "final": ["frames_finalpass"],
            "both": ["frames_cleanpass", "frames_finalpass"],
        }[pass_name]
        verify_str_arg(camera, "camera", valid_values=("left", "right", "both"))
        cameras = ["left", "right"] if camera == "both" else [camera]
        root = Path(root) / "FlyingThings3D"
        directions = ("into_future", "into_past")
        for pass_dir, cam, direction in itertools.product(passes, cameras, directions):
            image_dirs = sorted(Path(d) / cam for d in glob(str(root / pass_dir / split / "*/*")))
            flow_dirs = sorted(
                Path(d) / direction / cam
                for d in glob(str(root / "optical_flow" / split / "*/*"))
            )
            if not image_dirs or not flow_dirs:
                raise FileNotFoundError(
                    "Could not find the FlyingThings3D flow images. "
                    "Please make sure the directory structure is correct."
                )
            for image_dir, flow_dir in zip(image_dirs, flow_dirs):
                images = sorted(glob(str(image_dir / "*.png")))
                flows = sorted(glob(str(flow_dir / "*.pfm")))
                for i in range(len(flows) - 1):
                    if direction == "into_future":
                        self._image_list += [[images[i], images[i + 1]]]
                        self._flow_list += [flows[i]]
                    else:
                        self._image_list += [[images[i + 1], images[i]]]
                        self._flow_list += [flows[i + 1]]

    def _read_flow(self, file_name: str) -> np.ndarray:
        return _read_pfm(file_name)


class KittiFlow(FlowDataset):
    """`KITTI 2015 flow <http://www.cvlibs.net/datasets/kitti/eval_scene_flow.php>`_:
    ``root/KittiFlow/{training,testing}/image_2/*_1{0,1}.png`` with ``flow_occ/*_10.png``;
    items are ``(img1, img2, flow, valid_flow_mask)`` (``None`` flow and mask for ``test``)."""

    _has_builtin_flow_mask = True

    def __init__(
        self,
        root,
        split: str = "train",
        transforms: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        root = Path(root) / "KittiFlow" / (split + "ing")
        images1 = sorted(glob(str(root / "image_2" / "*_10.png")))
        images2 = sorted(glob(str(root / "image_2" / "*_11.png")))
        if not images1 or not images2:
            raise FileNotFoundError(
                "Could not find the Kitti flow images. Please make sure the directory "
                "structure is correct."
            )
        for img1, img2 in zip(images1, images2):
            self._image_list += [[img1, img2]]
        if split == "train":
            self._flow_list = sorted(glob(str(root / "flow_occ" / "*_10.png")))

    def _read_flow(self, file_name: str) -> tuple[np.ndarray, np.ndarray]:
        return _read_16bits_png_with_flow_and_valid_mask(file_name)


class HD1K(FlowDataset):
    """`HD1K <http://hci-benchmark.iwr.uni-heidelberg.de/>`_ flow: the 36 training sequences
    of ``root/hd1k/{hd1k_input/image_2,hd1k_flow_gt/flow_occ}`` or the challenge's test
    pairs; items are ``(img1, img2, flow, valid_flow_mask)``."""

    _has_builtin_flow_mask = True

    def __init__(
        self,
        root,
        split: str = "train",
        transforms: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        root = Path(root) / "hd1k"
        if split == "train":
            for seq_idx in range(36):
                flows = sorted(
                    glob(str(root / "hd1k_flow_gt" / "flow_occ" / f"{seq_idx:06d}_*.png"))
                )
                images = sorted(
                    glob(str(root / "hd1k_input" / "image_2" / f"{seq_idx:06d}_*.png"))
                )
                for i in range(len(flows) - 1):
                    self._flow_list += [flows[i]]
                    self._image_list += [[images[i], images[i + 1]]]
        else:
            images1 = sorted(glob(str(root / "hd1k_challenge" / "image_2" / "*10.png")))
            images2 = sorted(glob(str(root / "hd1k_challenge" / "image_2" / "*11.png")))
            for image1, image2 in zip(images1, images2):
                self._image_list += [[image1, image2]]
        if not self._image_list:
            raise FileNotFoundError(
                "Could not find the HD1K images. Please make sure the directory structure is "
                "correct."
            )

    def _read_flow(self, file_name: str) -> tuple[np.ndarray, np.ndarray]:
        return _read_16bits_png_with_flow_and_valid_mask(file_name)


def _read_16bits_png_with_flow_and_valid_mask(file_name: str) -> tuple[np.ndarray, np.ndarray]:
    """KITTI's flow PNG: channels u, v (``(value - 2**15) / 64``) and a validity mask."""
    flow_and_valid = _read_png_rgb16(file_name).transpose(2, 0, 1).astype(np.float32)
    flow = (flow_and_valid[:2] - 2**15) / 64
    return flow, flow_and_valid[2].astype(bool)


def _paeth(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def _read_png_rgb16(file_name: str) -> np.ndarray:
    """A non-interlaced 16-bit RGB PNG as a uint16 ``(H, W, 3)`` array."""
    with open(file_name, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{file_name} is not a PNG file")
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None or header[2:4] != (16, 2) or header[6] != 0:
        raise ValueError(f"{file_name} is not a non-interlaced 16-bit RGB PNG")
    w, h = header[0], header[1]
    stride, bpp = 6 * w, 6
    rows = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    if rows.size != h * (stride + 1):
        raise ValueError(f"{file_name}: truncated image data")
    rows = rows.reshape(h, stride + 1)
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 1:  # Sub: a running sum over the pixels, per byte of a pixel
            cur = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) & 0xFF
        elif kind == 2:  # Up
            cur = (line + prev) & 0xFF
        elif kind in (3, 4):  # Average, Paeth: each pixel needs the one before it
            cur = line.copy()
            left = np.zeros(bpp, np.int32)
            up_left = np.zeros(bpp, np.int32)
            for x in range(0, stride, bpp):
                up = prev[x : x + bpp]
                pred = (left + up) >> 1 if kind == 3 else _paeth(left, up, up_left)
                left = (line[x : x + bpp] + pred) & 0xFF
                cur[x : x + bpp] = left
                up_left = up
        else:
            raise ValueError(f"{file_name}: unknown PNG filter type {kind}")
        out[y] = cur
        prev = cur
    return out.view(">u2").reshape(h, w, 3).astype(np.uint16)


def _read_flo(file_name: str) -> np.ndarray:
    """A Middlebury ``.flo`` file (little-endian) as a float32 ``(2, H, W)`` array."""
    with open(file_name, "rb") as f:
        if f.read(4) != b"PIEH":
            raise ValueError("Magic number incorrect. Invalid .flo file")
        w = np.fromfile(f, "<i4", count=1).item()
        h = np.fromfile(f, "<i4", count=1).item()
        data = np.fromfile(f, "<f4", count=2 * w * h)
    return data.reshape(h, w, 2).transpose(2, 0, 1)


def _read_pfm(file_name, slice_channels: int = 2) -> np.ndarray:
    """A ``.pfm`` file (1 or 3 channels) as float32 ``(C, H, W)``, rows top first, at most
    ``slice_channels`` channels."""
    with open(file_name, "rb") as f:
        header = f.readline().rstrip()
        if header not in [b"PF", b"Pf"]:
            raise ValueError("Invalid PFM file")
        dim_match = re.match(rb"^(\d+)\s(\d+)\s$", f.readline())
        if not dim_match:
            raise Exception("Malformed PFM header.")
        w, h = (int(dim) for dim in dim_match.groups())
        scale = float(f.readline().rstrip())
        endian = "<" if scale < 0 else ">"  # a negative scale means little-endian
        data = np.fromfile(f, dtype=endian + "f")
    channels = 3 if header == b"PF" else 1
    data = data.reshape(h, w, channels).transpose(2, 0, 1)
    data = np.flip(data, axis=1)  # rows are stored bottom first
    return data[:slice_channels, :, :].astype(np.float32)
