"""``ember.utils.tensorboard``: log to TensorBoard (``torch.utils.tensorboard``).

:class:`SummaryWriter` writes scalars, histograms, images, figures, text, hyperparameters,
embeddings, PR curves and model graphs into TensorBoard event files under ``runs/``::

    from ember.utils.tensorboard import SummaryWriter

    with SummaryWriter() as writer:           # runs/<Mon DD_HH-MM-SS>_<hostname>/
        for step in range(100):
            writer.add_scalar("Loss/train", loss.item(), step)
        writer.add_histogram("fc1.weight", model.fc1.weight, step)

then ``tensorboard --logdir runs``. The events are the ``tensorboard`` package's protobufs in
its CRC-framed record files, written by a background thread; it is the optional extra
``pip install 'ember-core[tensorboard]'``.
"""

from __future__ import annotations

try:
    import tensorboard as _tensorboard
except ImportError as _exc:
    raise ModuleNotFoundError(
        "TensorBoard logging requires TensorBoard version 1.15 or above: "
        "pip install 'ember-core[tensorboard]'", name="tensorboard") from _exc


def _version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


if _version_tuple(getattr(_tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above "
                      f"(found {getattr(_tensorboard, '__version__', 'unknown')}): "
                      "pip install -U 'ember-core[tensorboard]'")
del _tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
