"""Stereo matching datasets, as torchvision's ``CarlaStereo``, ``Kitti2012Stereo``,
``Kitti2015Stereo``, ``Middlebury2014Stereo``, ``CREStereo``, ``FallingThingsStereo``,
``SceneFlowStereo``, ``SintelStereo``, ``InStereo2k`` and ``ETH3DStereo``.

Items are ``(left image, right image, disparity)`` or, for datasets with a validity mask,
``(left, right, disparity, valid_mask)``; disparities are float ``(1, H, W)`` arrays (``None``
without ground truth). ``transforms`` takes and returns ``(images, disparities, masks)``.
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
from collections.abc import Callable
from glob import glob
from pathlib import Path
from typing import Any

import numpy as np

from ._optical_flow import _read_pfm
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = [
    "StereoMatchingDataset", "CarlaStereo", "Kitti2012Stereo", "Kitti2015Stereo",
    "Middlebury2014Stereo", "CREStereo", "FallingThingsStereo", "SceneFlowStereo",
    "SintelStereo", "InStereo2k", "ETH3DStereo",
]

_read_pfm_file = functools.partial(_read_pfm, slice_channels=1)


def _open(path) -> Any:
    from PIL import Image

    return Image.open(path)


class StereoMatchingDataset(VisionDataset):
    """Left/right image pairs with their disparity maps (see the module docstring)."""

    _has_built_in_disparity_mask = False

    def __init__(self, root, transforms: Callable | None = None) -> None:
        super().__init__(root=root)
        self.transforms = transforms
        self._images: list = []
        self._disparities: list = []

    def _read_img(self, file_path) -> Any:
        img = _open(file_path)
        if img.mode != "RGB":
            img = img.convert("RGB")
        return img

    def _scan_pairs(self, paths_left_pattern: str, paths_right_pattern: str | None = None):
        left_paths = sorted(glob(paths_left_pattern))
        if paths_right_pattern:
            right_paths: list = sorted(glob(paths_right_pattern))
        else:
            right_paths = [None for _ in left_paths]
        if not left_paths:
            raise FileNotFoundError(
                f"Could not find any files matching the patterns: {paths_left_pattern}"
            )
        if not right_paths:
            raise FileNotFoundError(
                f"Could not find any files matching the patterns: {paths_right_pattern}"
            )
        if len(left_paths) != len(right_paths):
            raise ValueError(
                f"Found {len(left_paths)} left files but {len(right_paths)} right files using:\n "
                f"left pattern: {paths_left_pattern}\nright pattern: {paths_right_pattern}\n"
            )
        return list(zip(left_paths, right_paths))

    def _read_disparity(self, file_path: str):
        raise NotImplementedError

    def __getitem__(self, index: int) -> tuple:
        imgs = (self._read_img(self._images[index][0]), self._read_img(self._images[index][1]))
        dsp_map_left, valid_mask_left = self._read_disparity(self._disparities[index][0])
        dsp_map_right, valid_mask_right = self._read_disparity(self._disparities[index][1])
        dsp_maps = (dsp_map_left, dsp_map_right)
        valid_masks = (valid_mask_left, valid_mask_right)
        if self.transforms is not None:
            imgs, dsp_maps, valid_masks = self.transforms(imgs, dsp_maps, valid_masks)
        if self._has_built_in_disparity_mask or valid_masks[0] is not None:
            return imgs[0], imgs[1], dsp_maps[0], valid_masks[0]
        return imgs[0], imgs[1], dsp_maps[0]

    def __len__(self) -> int:
        return len(self._images)


class CarlaStereo(StereoMatchingDataset):
    """CARLA high-resolution stereo (from CREStereo): ``root/carla-highres/trainingF/*/``
    ``im{0,1}.png`` with ``disp{0,1}GT.pfm``."""

    def __init__(self, root, transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        root = Path(root) / "carla-highres" / "trainingF"
        self._images = self._scan_pairs(str(root / "*" / "im0.png"), str(root / "*" / "im1.png"))
        self._disparities = self._scan_pairs(
            str(root / "*" / "disp0GT.pfm"), str(root / "*" / "disp1GT.pfm")
        )

    def _read_disparity(self, file_path: str):
        return np.abs(_read_pfm_file(file_path)), None


class Kitti2012Stereo(StereoMatchingDataset):
    """`KITTI 2012 stereo <http://www.cvlibs.net/datasets/kitti/eval_stereo_flow.php>`_:
    ``root/Kitti2012/{training,testing}/colored_{0,1}/*_10.png`` with ``disp_noc/*.png``."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split: str = "train", transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        root = Path(root) / "Kitti2012" / (split + "ing")
        self._images = self._scan_pairs(
            str(root / "colored_0" / "*_10.png"), str(root / "colored_1" / "*_10.png")
        )
        if split == "train":
            self._disparities = self._scan_pairs(str(root / "disp_noc" / "*.png"), None)
        else:
            self._disparities = [(None, None) for _ in self._images]

    def _read_disparity(self, file_path: str | None):
        if file_path is None:
            return None, None
        return (np.asarray(_open(file_path)) / 256.0)[None, :, :], None


class Kitti2015Stereo(StereoMatchingDataset):
    """`KITTI 2015 stereo <http://www.cvlibs.net/datasets/kitti/eval_scene_flow.php>`_:
    ``root/Kitti2015/{training,testing}/image_{2,3}/*.png`` with ``disp_occ_{0,1}/*.png``."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split: str = "train", transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        root = Path(root) / "Kitti2015" / (split + "ing")
        self._images = self._scan_pairs(
            str(root / "image_2" / "*.png"), str(root / "image_3" / "*.png")
        )
        if split == "train":
            self._disparities = self._scan_pairs(
                str(root / "disp_occ_0" / "*.png"), str(root / "disp_occ_1" / "*.png")
            )
        else:
            self._disparities = [(None, None) for _ in self._images]

    def _read_disparity(self, file_path: str | None):
        if file_path is None:
            return None, None
        return (np.asarray(_open(file_path)) / 256.0)[None, :, :], None


class Middlebury2014Stereo(StereoMatchingDataset):
    """`Middlebury 2014 <https://vision.middlebury.edu/stereo/data/scenes2014/>`_:
    ``root/Middlebury2014/<split>/<scene>-<calibration>/im{0,1}.png`` with ``disp{0,1}.pfm``;
    ``use_ambient_views`` picks the right image among its lighting variants at random."""

    splits = {
        "train": ["Adirondack", "Jadeplant", "Motorcycle", "Piano", "Pipes", "Playroom",
                  "Playtable", "Recycle", "Shelves", "Vintage"],
        "additional": ["Backpack", "Bicycle1", "Cable", "Classroom1", "Couch", "Flowers",
                       "Mask", "Shopvac", "Sticks", "Storage", "Sword1", "Sword2", "Umbrella"],
        "test": ["Plants", "Classroom2E", "Classroom2", "Australia", "DjembeL", "CrusadeP",
                 "Crusade", "Hoops", "Bicycle2", "Staircase", "Newkuba", "AustraliaP", "Djembe",
                 "Livingroom", "Computer"],
    }
    _has_built_in_disparity_mask = True

    def __init__(
        self,
        root,
        split: str = "train",
        calibration: str | None = "perfect",
        use_ambient_views: bool = False,
        transforms: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test", "additional"))
        self.split = split
        if calibration:
            verify_str_arg(calibration, "calibration",
                           valid_values=("perfect", "imperfect", "both", None))
            if split == "test":
                raise ValueError(
                    "Split 'test' has only no calibration settings, please set "
                    "`calibration=None`."
                )
        elif split != "test":
            raise ValueError(
                f"Split '{split}' has calibration settings, however None was provided as an "
                f"argument.\nSetting calibration to 'perfect' for split '{split}'. Available "
                "calibration settings are: 'perfect', 'imperfect', 'both'."
            )
        if download:
            self._download_dataset(root)
        root = Path(root) / "Middlebury2014"
        if not os.path.exists(root / split):
            raise FileNotFoundError(
                f"The {split} directory was not found in the provided root directory"
            )
        split_scenes = self.splits[split]
        if not any(
            scene.startswith(s) for scene in os.listdir(root / split) for s in split_scenes
        ):
            raise FileNotFoundError(
                f"Provided root folder does not contain any scenes from the {split} split."
            )
        suffixes = {None: [""], "perfect": ["-perfect"], "imperfect": ["-imperfect"],
                    "both": ["-perfect", "-imperfect"]}[calibration]
        for suffix in suffixes:
            scenes = root / split / ("*" + suffix)
            self._images += self._scan_pairs(str(scenes / "im0.png"), str(scenes / "im1.png"))
            if split == "test":
                self._disparities = [(None, None) for _ in self._images]
            else:
                self._disparities += self._scan_pairs(
                    str(scenes / "disp0.pfm"), str(scenes / "disp1.pfm")
                )
        self.use_ambient_views = use_ambient_views

    def _read_img(self, file_path) -> Any:
        file_path = Path(file_path)
        if file_path.name == "im1.png" and self.use_ambient_views:
            ambient = [file_path.parent / v for v in ("im1E.png", "im1L.png")]
            ambient = [p for p in ambient if os.path.exists(p)]
            ambient.append(file_path)
            file_path = random.choice(ambient)
        return super()._read_img(file_path)

    def _read_disparity(self, file_path: str | None):
        if file_path is None:
            return None, None
        disparity_map = np.abs(_read_pfm_file(file_path))
        disparity_map[disparity_map == np.inf] = 0
        return disparity_map, (disparity_map > 0).squeeze(0)

    def _download_dataset(self, root) -> None:
        base_url = "https://vision.middlebury.edu/stereo/data/scenes2014/zip"
        root = Path(root) / "Middlebury2014"
        if self.split != "test":
            split_root = root / self.split
            for split_scene in self.splits[self.split]:
                for calibration in ["perfect", "imperfect"]:
                    scene_name = f"{split_scene}-{calibration}"
                    if not (split_root / scene_name).exists():
                        download_and_extract_archive(
                            url=f"{base_url}/{scene_name}.zip", filename=f"{scene_name}.zip",
                            download_root=str(split_root), remove_finished=True,
                        )
        else:
            os.makedirs(root / "test")
            if any(s not in os.listdir(root / "test") for s in self.splits["test"]):
                download_and_extract_archive(
                    url="https://vision.middlebury.edu/stereo/submit3/zip/MiddEval3-data-F.zip",
                    download_root=str(root), remove_finished=True,
                )
                for scene_dir, scene_names, _ in os.walk(str(root / "MiddEval3/testF")):
                    for scene in scene_names:
                        os.makedirs(root / "test", exist_ok=True)
                        shutil.move(str(Path(scene_dir) / scene), str(root / "test"))
                shutil.rmtree(str(root / "MiddEval3"))


class CREStereo(StereoMatchingDataset):
    """`CREStereo <https://github.com/megvii-research/CREStereo>`_ synthetic data:
    ``root/CREStereo/{shapenet,reflective,tree,hole}/*_{left,right}.jpg`` with
    ``*_{left,right}.disp.png`` (disparity x 32)."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        root = Path(root) / "CREStereo"
        for s in ["shapenet", "reflective", "tree", "hole"]:
            self._images += self._scan_pairs(
                str(root / s / "*_left.jpg"), str(root / s / "*_right.jpg")
            )
            self._disparities += self._scan_pairs(
                str(root / s / "*_left.disp.png"), str(root / s / "*_right.disp.png")
            )

    def _read_disparity(self, file_path: str):
        disparity_map = np.asarray(_open(file_path), dtype=np.float32)
        return disparity_map[None, :, :] / 32.0, None


class FallingThingsStereo(StereoMatchingDataset):
    """`FallingThings <https://research.nvidia.com/publication/2018-06_falling-things>`_:
    disparity from the ``*.depth.png`` maps and the camera's focal length."""

    def __init__(self, root, variant: str = "single", transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        root = Path(root) / "FallingThings"
        verify_str_arg(variant, "variant", valid_values=("single", "mixed", "both"))
        variants = {"single": ["single"], "mixed": ["mixed"], "both": ["single", "mixed"]}[variant]
        split_prefix = {"single": Path("*") / "*", "mixed": Path("*")}
        for s in variants:
            folder = root / s / split_prefix[s]
            self._images += self._scan_pairs(
                str(folder / "*.left.jpg"), str(folder / "*.right.jpg")
            )
            self._disparities += self._scan_pairs(
                str(folder / "*.left.depth.png"), str(folder / "*.right.depth.png")
            )

    def _read_disparity(self, file_path: str):
        depth = np.asarray(_open(file_path))
        with open(Path(file_path).parent / "_camera_settings.json") as f:
            intrinsics = json.load(f)
        focal = intrinsics["camera_settings"][0]["intrinsic_settings"]["fx"]
        baseline, pixel_constant = 6, 100
        disparity_map = baseline * focal * pixel_constant / depth.astype(np.float32)
        return disparity_map[None, :, :], None


class SceneFlowStereo(StereoMatchingDataset):
    """`SceneFlow <https://lmb.informatik.uni-freiburg.de/resources/datasets/
    SceneFlowDatasets.en.html>`_ stereo (``FlyingThings3D``, ``Driving`` or ``Monkaa``)."""

    def __init__(
        self,
        root,
        variant: str = "FlyingThings3D",
        pass_name: str = "clean",
        transforms: Callable | None = None,
    ) -> None:
        super().__init__(root, transforms)
        root = Path(root) / "SceneFlow"
        verify_str_arg(variant, "variant", valid_values=("FlyingThings3D", "Driving", "Monkaa"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        passes = {"clean": ["frames_cleanpass"], "final": ["frames_finalpass"],
                  "both": ["frames_cleanpass", "frames_finalpass"]}[pass_name]
        root = root / variant
        prefix = {"Monkaa": Path("*"), "FlyingThings3D": Path("*") / "*" / "*",
                  "Driving": Path("*") / "*" / "*"}[variant]
        for p in passes:
            self._images += self._scan_pairs(
                str(root / p / prefix / "left" / "*.png"),
                str(root / p / prefix / "right" / "*.png"),
            )
            self._disparities += self._scan_pairs(
                str(root / "disparity" / prefix / "left" / "*.pfm"),
                str(root / "disparity" / prefix / "right" / "*.pfm"),
            )

    def _read_disparity(self, file_path: str):
        return np.abs(_read_pfm_file(file_path)), None


class SintelStereo(StereoMatchingDataset):
    """`MPI Sintel stereo <http://sintel.is.tue.mpg.de/stereo>`_: disparities encoded in RGB
    PNGs, valid where neither occluded nor out of frame."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, pass_name: str = "final", transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        verify_str_arg(pass_name, "pass_name", valid_values=("final", "clean", "both"))
        root = Path(root) / "Sintel"
        pass_names = {"final": ["final"], "clean": ["clean"], "both": ["final", "clean"]}[pass_name]
        for p in pass_names:
            self._images += self._scan_pairs(
                str(root / "training" / f"{p}_left" / "*" / "*.png"),
                str(root / "training" / f"{p}_right" / "*" / "*.png"),
            )
            self._disparities += self._scan_pairs(
                str(root / "training" / "disparities" / "*" / "*.png"), None
            )

    def _get_occlussion_mask_paths(self, file_path: str) -> tuple[str, str]:
        fpath = Path(file_path)
        scenedir = fpath.parent
        sampledir = scenedir.parent.parent
        occlusion_path = str(sampledir / "occlusions" / scenedir.name / fpath.name)
        outofframe_path = str(sampledir / "outofframe" / scenedir.name / fpath.name)
        if not os.path.exists(occlusion_path):
            raise FileNotFoundError(f"Occlusion mask {occlusion_path} does not exist")
        if not os.path.exists(outofframe_path):
            raise FileNotFoundError(f"Out of frame mask {outofframe_path} does not exist")
        return occlusion_path, outofframe_path

    def _read_disparity(self, file_path: str | None):
        if file_path is None:
            return None, None
        rgb = np.asarray(_open(file_path), dtype=np.float32)
        r, g, b = np.split(rgb, 3, axis=-1)
        disparity_map = np.transpose(r * 4 + g / 2**6 + b / 2**14, (2, 0, 1))
        occluded_path, out_of_frame_path = self._get_occlussion_mask_paths(file_path)
        valid_mask = np.asarray(_open(occluded_path)) == 0
        off_mask = np.asarray(_open(out_of_frame_path)) == 0
        return disparity_map, np.logical_and(off_mask, valid_mask)


class InStereo2k(StereoMatchingDataset):
    """`InStereo2K <https://github.com/YuhuaXu/StereoDataset>`_: ``root/InStereo2k/<split>/*/``
    ``{left,right}.png`` with ``{left,right}_disp.png`` (disparity x 1024)."""

    def __init__(self, root, split: str = "train", transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        root = Path(root) / "InStereo2k" / split
        verify_str_arg(split, "split", valid_values=("train", "test"))
        self._images = self._scan_pairs(str(root / "*" / "left.png"),
                                        str(root / "*" / "right.png"))
        self._disparities = self._scan_pairs(str(root / "*" / "left_disp.png"),
                                             str(root / "*" / "right_disp.png"))

    def _read_disparity(self, file_path: str):
        disparity_map = np.asarray(_open(file_path), dtype=np.float32)
        return disparity_map[None, :, :] / 1024.0, None


class ETH3DStereo(StereoMatchingDataset):
    """`ETH3D two-view stereo <https://www.eth3d.net/datasets>`_: ``root/ETH3D/
    two_view_{training,test}/*/im{0,1}.png`` with ``two_view_training_gt/*/disp0GT.pfm``
    and its ``mask0nocc.png``."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split: str = "train", transforms: Callable | None = None) -> None:
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        root = Path(root) / "ETH3D"
        img_dir = "two_view_training" if split == "train" else "two_view_test"
        self._images = self._scan_pairs(str(root / img_dir / "*" / "im0.png"),
                                        str(root / img_dir / "*" / "im1.png"))
        if split == "test":
            self._disparities = [(None, None) for _ in self._images]
        else:
            self._disparities = self._scan_pairs(
                str(root / "two_view_training_gt" / "*" / "disp0GT.pfm"), None
            )

    def _read_disparity(self, file_path: str | None):
        if file_path is None:
            return None, None
        disparity_map = np.abs(_read_pfm_file(file_path))
        valid_mask = np.asarray(_open(Path(file_path).parent / "mask0nocc.png")).astype(bool)
        return disparity_map, valid_mask
