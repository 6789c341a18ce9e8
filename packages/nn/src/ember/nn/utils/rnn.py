"""Variable-length sequence utilities (``torch.nn.utils.rnn``): padding and packing.

Every function is written with differentiable tensor ops (``cat``, ``stack``,
``index_select``, slicing); the Python loops run over time steps, never over elements.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import ember
from ember import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class PackedSequence_(NamedTuple):  # PyTorch's name for the NamedTuple base
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """Data and batch sizes of a packed batch of sequences (made by ``pack_*``)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence "
                             "should never be created manually. They should be instantiated "
                             "by functions like pack_sequence and pack_padded_sequences in "
                             "nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn."
                             "pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """Move/cast ``data`` (and the indices to its device); ``batch_sizes`` stays on CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        if "copy" in kwargs or sum(isinstance(a, bool) for a in args) > 1:
            raise RuntimeError(".to() does not accept copy argument")
        device = data.device
        sorted_indices = None if self.sorted_indices is None else self.sorted_indices.to(device)
        unsorted = None if self.unsorted_indices is None else self.unsorted_indices.to(device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted)

    def cpu(self, *args, **kwargs) -> PackedSequence:
        ex = ember.tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.device.type == "cpu":
            return self.to(*args, **kwargs)
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def cuda(self, *args, **kwargs) -> PackedSequence:
        ex = ember.tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.is_cuda:
            return self.to(*args, **kwargs)
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def double(self) -> PackedSequence:
        return self.to(dtype=ember.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=ember.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=ember.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=ember.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=ember.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=ember.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=ember.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    output = ember.empty_like(permutation)
    output.scatter_(0, permutation, ember.arange(0, permutation.numel(),
                                                device=permutation.device))
    return output


def _batch_sizes(sorted_lengths: list) -> list:
    """How many sequences are still running at each time step (lengths sorted decreasing)."""
    max_len = sorted_lengths[0]
    return [sum(1 for n in sorted_lengths if n > t) for t in range(max_len)]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (``T x B x *``, or ``B x T x *`` with ``batch_first``)."""
    if not isinstance(lengths, Tensor):  # (an int becomes a 0-d tensor, refused below)
        lengths = ember.as_tensor(lengths, dtype=ember.int64, device="cpu")
    bad_lengths = None
    if lengths.dim() != 1 or lengths.device.type != "cpu":
        bad_lengths = ("'lengths' argument should be a 1D CPU int64 tensor, but got "
                       f"{lengths.dim()}D {lengths.device} Long tensor")
        lengths = lengths.reshape(-1)
    lengths = lengths.to(dtype=ember.int64)
    if enforce_sorted:
        sorted_indices = None
        sorted_lengths = lengths.tolist()
    else:  # ``sort`` as PyTorch (its order of equal lengths is sort's)
        lengths, sorted_indices = ember.sort(lengths, descending=True)
        sorted_lengths = lengths.tolist()
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    batch_size = input.size(1)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if bad_lengths is not None:
        raise RuntimeError(bad_lengths)
    if len(sorted_lengths) != batch_size:
        raise RuntimeError("Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(sorted_lengths)} (batch_size={batch_size})")
    if sorted_lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(sorted_lengths[i] < sorted_lengths[i + 1] for i in range(batch_size - 1)):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                           "to pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if sorted_lengths[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be at most {input.shape[0]}, but got "
                           f"{sorted_lengths[0]}")
    sizes = _batch_sizes(sorted_lengths)
    data = ember.cat([input[t, :bs] for t, bs in enumerate(sizes)], 0)
    batch_sizes = ember.tensor(sizes, dtype=ember.int64, device="cpu")  # always, as in PyTorch
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Unpack to a padded batch; returns ``(padded, lengths)`` in the original order."""
    sizes = sequence.batch_sizes.tolist()
    max_seq_length = len(sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             "sequence in input, but got "
                             f"total_length={total_length} and max sequence length being "
                             f"{max_seq_length}")
        if not isinstance(total_length, int):
            raise TypeError("_pad_packed_sequence(): argument 'total_length' (position 5) must "
                            f"be int, not {type(total_length).__name__}")
        max_seq_length = total_length
    data = sequence.data
    batch = sizes[0]
    tail = tuple(data.shape[1:])
    steps = []
    offset = 0
    for bs in sizes:
        step = data[offset:offset + bs]
        offset += bs
        if bs < batch:
            fill = ember.full((batch - bs, *tail), padding_value, dtype=data.dtype,
                              device=data.device)
            step = ember.cat([step, fill], 0)
        steps.append(step)
    if max_seq_length > len(sizes):
        steps.extend([ember.full((batch, *tail), padding_value, dtype=data.dtype,
                                 device=data.device)] * (max_seq_length - len(sizes)))
    padded = ember.stack(steps, 0)
    lengths = ember.tensor([sum(1 for b in sizes if b > i) for i in range(batch)],
                           dtype=ember.int64, device="cpu")  # on the CPU, as in PyTorch
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return (padded.index_select(batch_dim, sequence.unsorted_indices),
                lengths[sequence.unsorted_indices.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack variable-length sequences (``L x *``) padded to the longest one."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if not isinstance(padding_value, (int, float)) and not (
            isinstance(padding_value, Tensor) and padding_value.dim() == 0):
        raise TypeError("pad_sequence(): argument 'padding_value' (position 3) must be float, "
                        f"not {type(padding_value).__name__}")
    if not isinstance(padding_side, (str, bytes)):
        raise TypeError("pad_sequence(): argument 'padding_side' (position 4) must be str, "
                        f"not {type(padding_side).__name__}")
    if isinstance(padding_side, bytes):
        padding_side = padding_side.decode()
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(s).__name__}")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    trailing = tuple(first.shape[1:])
    dtype = first.dtype
    if any(s.dim() == 0 for s in sequences):  # (PyTorch's ``size(0)`` of each)
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        if s.dtype != dtype:  # PyTorch copies every sequence into a tensor of the first's dtype
            s = s.to(dtype)
        if tuple(s.shape[1:]) != trailing:  # copy_ semantics: broadcast or fail like copy_
            s = ember.empty((s.shape[0], *trailing), dtype=dtype, device=s.device).copy_(s)
        missing = max_len - s.shape[0]
        if missing:
            fill = ember.full((missing, *trailing), padding_value, dtype=dtype,
                              device=s.device)
            s = ember.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return ember.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list:
    """Split a padded batch back into a list of sequences of the given lengths."""
    lengths.device  # noqa: B018 - PyTorch reads it (AttributeError for a list of lengths)
    if not batch_first:
        padded_sequences.transpose_(0, 1)  # in place, exactly as PyTorch does
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths, strict=True)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length sequences."""
    # on the CPU (PyTorch's ``as_tensor`` follows the default device, which then fails the
    # CPU-lengths check of pack_padded_sequence)
    lengths = ember.tensor([v.size(0) for v in sequences], dtype=ember.int64, device="cpu")
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences of a ``PackedSequence`` (inverse of ``pack_sequence``)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
