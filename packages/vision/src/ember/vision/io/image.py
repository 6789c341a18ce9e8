"""Image reading and writing on uint8 ``CHW`` tensors, like ``torchvision.io`` (over Pillow)."""

from __future__ import annotations

import io
import os
import warnings
from enum import Enum

import numpy as np

import ember
from ember import Tensor

__all__ = [
    "ImageReadMode",
    "read_file",
    "write_file",
    "decode_image",
    "read_image",
    "decode_png",
    "decode_jpeg",
    "decode_gif",
    "decode_webp",
    "decode_avif",
    "decode_heic",
    "encode_png",
    "encode_jpeg",
    "write_png",
    "write_jpeg",
]


class ImageReadMode(Enum):
    """Channels to decode to: as stored, grayscale, grayscale + alpha, RGB, or RGB + alpha."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


_PIL_MODE = {
    ImageReadMode.GRAY: "L",
    ImageReadMode.GRAY_ALPHA: "LA",
    ImageReadMode.RGB: "RGB",
    ImageReadMode.RGB_ALPHA: "RGBA",
}


def read_file(path: str) -> Tensor:
    """The bytes of the file at ``path`` as a 1-D uint8 tensor."""
    with open(os.fspath(path), "rb") as f:
        data = f.read()
    return ember.from_numpy(np.frombuffer(bytearray(data), dtype=np.uint8))


def write_file(filename: str, data: Tensor) -> None:
    """Write a 1-D uint8 tensor's bytes to ``filename``."""
    with open(os.fspath(filename), "wb") as f:
        f.write(_bytes_of(data))


def _bytes_of(data: Tensor) -> bytes:
    if not isinstance(data, Tensor):
        raise TypeError(f"Expected a torch.Tensor, got {type(data)}")
    if data.dtype != ember.uint8:
        raise RuntimeError(f"Expected a uint8 tensor, got {data.dtype}")
    if data.dim() != 1:
        raise RuntimeError(f"Expected a 1-D tensor, got {data.dim()}-D")
    return np.asarray(data.cpu().numpy()).tobytes()


def _normalize_mode(mode) -> ImageReadMode:
    return ImageReadMode[mode.upper()] if isinstance(mode, str) else mode


def _unchanged(img):
    """Pillow's image in the channel layout a PNG/JPEG decoder returns when nothing is asked."""
    if img.mode in ("L", "LA", "RGB", "RGBA"):
        return img
    if img.mode == "P":
        return img.convert("RGBA" if "transparency" in img.info else "RGB")
    if img.mode == "PA":
        return img.convert("RGBA")
    if img.mode in ("1",):
        return img.convert("L")
    if img.mode.startswith("I;16"):
        return img
    return img.convert("RGB")


def _pil_to_tensor(img) -> Tensor:
    if img.mode.startswith("I;16"):
        arr = np.asarray(img).astype(np.uint16)[None]
    else:
        arr = np.asarray(img)
        arr = arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)
    return ember.from_numpy(np.ascontiguousarray(arr))


def _decode(data: Tensor, mode, apply_exif_orientation: bool, formats=None) -> Tensor:
    from PIL import Image, ImageOps

    raw = _bytes_of(data)
    mode = _normalize_mode(mode)
    try:
        img = Image.open(io.BytesIO(raw), formats=formats)
        img.load()
    except Exception as e:
        what = "/".join(formats) if formats else "image"
        raise RuntimeError(f"Unsupported {what} format or corrupted data: {e}") from None
    if img.format == "GIF":  # torchvision decodes every frame, in RGB whatever the mode
        return _gif_frames(img)
    if img.format == "WEBP":
        mode = _webp_mode(mode)
    if apply_exif_orientation:
        img = ImageOps.exif_transpose(img)
    img = _unchanged(img) if mode == ImageReadMode.UNCHANGED else img.convert(_PIL_MODE[mode])
    return _pil_to_tensor(img)


def _webp_mode(mode):
    if mode in (ImageReadMode.GRAY, ImageReadMode.GRAY_ALPHA):
        warnings.warn("Webp does not support grayscale conversions. The returned tensor will be "
                      "in the colorspace of the original image.", stacklevel=3)
        return ImageReadMode.UNCHANGED
    return mode


def decode_image(
    input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False
) -> Tensor:
    """Decode image bytes (a 1-D uint8 tensor) or the file at a path to a uint8 ``CHW`` tensor."""
    if not isinstance(input, Tensor):
        input = read_file(str(input))
    return _decode(input, mode, apply_exif_orientation)


def read_image(
    path: str, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False
) -> Tensor:
    """Read an image file into a uint8 ``CHW`` tensor."""
    return decode_image(read_file(path), mode, apply_exif_orientation=apply_exif_orientation)


def decode_png(
    input: Tensor, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False
) -> Tensor:
    """Decode PNG bytes into a uint8 ``CHW`` tensor (uint16 for 16-bit grayscale)."""
    return _decode(input, mode, apply_exif_orientation, formats=("PNG",))


def decode_jpeg(
    input, mode=ImageReadMode.UNCHANGED, device="cpu", apply_exif_orientation: bool = False
):
    """Decode JPEG bytes (or a list of them) into uint8 ``CHW`` tensors."""
    if isinstance(input, (list, tuple)):
        if len(input) == 0:
            raise ValueError("Input list must contain at least one element")
        if not all(isinstance(t, Tensor) for t in input):
            raise ValueError("All elements of the input list must be tensors.")
        return [decode_jpeg(t, mode, device, apply_exif_orientation) for t in input]
    return _decode(input, mode, apply_exif_orientation, formats=("JPEG",)).to(device)


def _open(input: Tensor, fmt: str):
    """Pillow's image of ``input``'s bytes, which must be a ``fmt`` file."""
    from PIL import Image

    try:
        img = Image.open(io.BytesIO(_bytes_of(input)), formats=(fmt,))
        img.load()
    except Exception as e:
        raise RuntimeError(f"Unsupported {fmt} format or corrupted data: {e}") from None
    return img


def decode_gif(input: Tensor) -> Tensor:
    """Decode a GIF into a uint8 RGB tensor: ``(C, H, W)`` for a single image, ``(N, C, H, W)``
    for an animation of ``N`` frames (each frame composited as displayed)."""
    return _gif_frames(_open(input, "GIF"))


def _gif_frames(img) -> Tensor:
    from PIL import ImageSequence

    frames = [np.asarray(frame.convert("RGB")).transpose(2, 0, 1)
              for frame in ImageSequence.Iterator(img)]
    out = frames[0] if len(frames) == 1 else np.stack(frames)
    return ember.from_numpy(np.ascontiguousarray(out))


def _decode_format(input: Tensor, mode, fmt: str) -> Tensor:
    mode = _normalize_mode(mode)
    if fmt == "WEBP":
        mode = _webp_mode(mode)
    img = _open(input, fmt)
    if mode == ImageReadMode.UNCHANGED:
        img = img if img.mode in ("RGB", "RGBA") else img.convert(
            "RGBA" if "A" in img.getbands() else "RGB")
    else:
        img = img.convert(_PIL_MODE[mode])
    return _pil_to_tensor(img)


def decode_webp(input: Tensor, mode=ImageReadMode.UNCHANGED) -> Tensor:
    """Decode a WebP image (its first frame) into a uint8 ``(C, H, W)`` RGB[A] tensor."""
    return _decode_format(input, mode, "WEBP")


def decode_avif(input: Tensor, mode=ImageReadMode.UNCHANGED) -> Tensor:
    """Decode an AVIF image into a uint8 ``(C, H, W)`` RGB[A] tensor, with Pillow's AVIF
    plugin (torchvision needs its extra-decoders package for this)."""
    from PIL import features

    if not features.check("avif"):
        raise RuntimeError("decode_avif needs Pillow built with AVIF support (Pillow >= 11.3 "
                           "wheels have it): pip install -U pillow")
    return _decode_format(input, mode, "AVIF")


def decode_heic(input: Tensor, mode=ImageReadMode.UNCHANGED) -> Tensor:
    """Decode a HEIC image into a uint8 ``(C, H, W)`` RGB[A] tensor through the ``pillow-heif``
    plugin (not a dependency: ``pip install pillow-heif``; torchvision needs its
    extra-decoders package for this)."""
    try:
        import pillow_heif
    except ImportError:
        raise RuntimeError("In order to decode HEIC images, ember.vision needs the pillow-heif "
                           "package: pip install pillow-heif") from None
    pillow_heif.register_heif_opener()
    return _decode_format(input, mode, "HEIF")


def _to_pil(input: Tensor, what: str):
    from PIL import Image

    if not isinstance(input, Tensor) or input.dtype != ember.uint8:
        raise RuntimeError(
            f"Input tensor dtype should be uint8, got {getattr(input, 'dtype', type(input))}"
        )
    if input.dim() != 3 or input.size(0) not in (1, 3) + ((2, 4) if what == "png" else ()):
        raise RuntimeError(
            f"The number of channels should be 1 or 3, got: {input.size(0) if input.dim() else 0}"
        )
    arr = np.ascontiguousarray(input.cpu().numpy().transpose(1, 2, 0))
    return Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)


def _encoded(img, fmt: str, **options) -> Tensor:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **options)
    return ember.from_numpy(np.frombuffer(bytearray(buf.getvalue()), dtype=np.uint8))


def encode_png(input: Tensor, compression_level: int = 6) -> Tensor:
    """Encode a uint8 ``CHW`` tensor as PNG bytes (a 1-D uint8 tensor)."""
    if not 0 <= compression_level <= 9:
        raise RuntimeError("Compression level should be between 0 and 9")
    return _encoded(_to_pil(input, "png"), "PNG", compress_level=compression_level)


def encode_jpeg(input, quality: int = 75):
    """Encode a uint8 ``CHW`` tensor (or a list of them) as JPEG bytes."""
    if quality < 1 or quality > 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, (list, tuple)):
        if not input:
            raise ValueError("encode_jpeg requires at least one input tensor when a list is passed")
        return [encode_jpeg(t, quality) for t in input]
    return _encoded(_to_pil(input, "jpeg"), "JPEG", quality=quality)


def write_png(input: Tensor, filename: str, compression_level: int = 6) -> None:
    """Encode a uint8 ``CHW`` tensor as PNG and write it to ``filename``."""
    write_file(filename, encode_png(input, compression_level))


def write_jpeg(input: Tensor, filename: str, quality: int = 75) -> None:
    """Encode a uint8 ``CHW`` tensor as JPEG and write it to ``filename``."""
    write_file(filename, encode_jpeg(input, quality))
