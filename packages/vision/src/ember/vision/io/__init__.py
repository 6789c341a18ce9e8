"""Image reading and writing, mirroring ``torchvision.io``."""

from .image import (
    ImageReadMode,
    decode_avif,
    decode_gif,
    decode_heic,
    decode_image,
    decode_jpeg,
    decode_png,
    decode_webp,
    encode_jpeg,
    encode_png,
    read_file,
    read_image,
    write_file,
    write_jpeg,
    write_png,
)

__all__ = [
    "ImageReadMode",
    "decode_avif",
    "decode_gif",
    "decode_heic",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "decode_webp",
    "encode_jpeg",
    "encode_png",
    "read_file",
    "read_image",
    "write_file",
    "write_jpeg",
    "write_png",
]
