"""The projector plugin's files: ``tensors.tsv``, ``metadata.tsv``, ``sprite.png`` and the
``projector_config.pbtxt`` that lists the embeddings (the layout PyTorch writes)."""

from __future__ import annotations

import io
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert import make_grid

__all__ = ["join", "make_tsv", "make_sprite", "make_mat", "get_embedding_info", "write_pbtxt"]


def join(a: str, b: str) -> str:
    """``a/b`` for local paths and for the filesystems ``tf.io.gfile`` knows (``s3://``)."""
    if hasattr(tf.io.gfile, "join"):
        return tf.io.gfile.join(a, b)
    return tf.io.gfile.get_filesystem(a).join(a, b)


def _write(path: str, data: bytes) -> None:
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def make_tsv(metadata: list, save_path: str, metadata_header: list | None = None) -> None:
    """``metadata.tsv``: one label per line, or with a header, tab-separated columns."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if any(len(row) != len(metadata_header) for row in metadata):
            raise ValueError("len of header must be equal to the number of columns in "
                             "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header, *metadata]]
    _write(join(save_path, "metadata.tsv"), ("\n".join(lines) + "\n").encode("utf_8"))


def make_sprite(label_img: np.ndarray, save_path: str) -> None:
    """``sprite.png``: the ``N x C x H x W`` label images tiled in a square grid."""
    from PIL import Image

    ncols = math.ceil(label_img.shape[0] ** 0.5)
    scale = 1 if label_img.dtype == np.uint8 else 255
    grid = make_grid(label_img, ncols=ncols).transpose(1, 2, 0)  # H x W x C
    side = max(grid.shape[0], grid.shape[1])
    square = np.zeros((side, side, grid.shape[2]), dtype=np.float32)
    square[:grid.shape[0], :grid.shape[1]] = grid
    picture = Image.fromarray((square * scale).clip(0, 255).astype(np.uint8))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    _write(join(save_path, "sprite.png"), buffer.getvalue())


def make_mat(mat: np.ndarray, save_path: str) -> None:
    """``tensors.tsv``: one embedding vector per line, tab-separated."""
    lines = ("\t".join(str(v) for v in row) + "\n" for row in mat.tolist())
    _write(join(save_path, "tensors.tsv"), "".join(lines).encode("utf_8"))


def get_embedding_info(metadata, label_img, subdir: str, global_step: int,
                       tag: str) -> EmbeddingInfo:
    """The projector config entry for one embedding (paths relative to the log dir)."""
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return info


def write_pbtxt(save_path: str, contents: str) -> None:
    """``projector_config.pbtxt`` in the log dir."""
    _write(join(save_path, "projector_config.pbtxt"), contents.encode("utf_8"))
