"""``map_location``: where each loaded storage goes, with ``torch.load``'s semantics.

Each storage is read into host memory and tagged with the location it was saved from
(``"cpu"``, ``"cuda:0"``, ``"testdev:1"``...). ``map_location`` is:

- None: the storage goes back to its saved location;
- a str (or bytes) or an ``ember.device``: every storage goes there;
- a dict: saved locations (keys) are renamed (values); others stay as saved;
- anything else is called as ``map_location(storage, location)`` (a ``Storage`` on the
  CPU, the saved location): it returns the final storage, or None for the default placement.
"""

from __future__ import annotations

from .._device import device as _device_cls
from .._tensor import CPU
from ..backends import backend_of
from . import _pickle
from ._pickle import Storage


class MapLocationError(Exception):
    """Carries an exception raised while placing a storage (``map_location`` is user code)
    out to ``ember.load``, which raises it unchanged."""

    def __init__(self, error: BaseException):
        super().__init__()
        self.error = error


def _device_of(location: str):
    """The interned device a location tag names, checked as PyTorch checks it."""
    try:
        dev = _device_cls(location)
    except (RuntimeError, ValueError, TypeError):
        raise RuntimeError("don't know how to restore data location of "
                           f"ember.storage.UntypedStorage (tagged with {location})") from None
    if dev.type == "cpu":
        return CPU
    _check_available(dev)
    from .._factory import resolve_device

    return resolve_device(dev)


def _check_available(dev) -> None:
    """Raise PyTorch's errors when ``dev`` has no backend here, or no such index."""
    kind = dev.type.upper()
    try:
        backend = backend_of(dev)
    except (RuntimeError, ImportError, AssertionError):  # no backend for it here
        backend = None
    if backend is None and dev.type != "cuda":
        raise RuntimeError(f"The {kind} device module is not registered. If you are running "
                           "on a CPU-only machine, please use ember.load with "
                           "map_location=ember.device('cpu') to map your storages to the CPU.")
    if backend is None or not backend.is_available():
        raise RuntimeError(f"Attempting to deserialize object on a {kind} device but "
                           f"ember.{dev.type}.is_available() is False. If you are running on "
                           "a CPU-only machine, please use ember.load with "
                           "map_location=ember.device('cpu') to map your storages to the CPU.")
    index, count = dev.index or 0, backend.device_count()
    if index >= count:
        raise RuntimeError(f"Attempting to deserialize object on {kind} device {index} but "
                           f"ember.{dev.type}.device_count() is {count}. Please use ember.load "
                           "with map_location to map your storages to an existing device.")


def restore_location(storage: Storage, location: str) -> Storage:
    """``storage`` (on the CPU) moved to ``location`` (PyTorch's
    ``default_restore_location``)."""
    dev = _device_of(location)
    if dev is CPU:
        return storage
    return Storage(backend_of(dev).to_device(storage.array, dev.index), dev, storage.dtype)


def _tag(value) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def _restorer(map_location):
    """``restore(storage, location) -> Storage`` for ``map_location``."""
    if map_location is None:
        return restore_location
    if isinstance(map_location, dict):
        return lambda storage, location: restore_location(
            storage, _tag(map_location.get(location, location)))
    if isinstance(map_location, (str, bytes, _device_cls)):
        target = _tag(map_location)
        return lambda storage, location: restore_location(storage, target)

    def restore(storage, location):
        result = map_location(storage, location)  # a TypeError if it cannot be called
        if result is None:
            return restore_location(storage, location)
        if not isinstance(result, Storage):
            raise TypeError(f"map_location should return a storage or None, not "
                            f"{type(result).__name__}")
        return result

    return restore


def placer(map_location):
    """``place(host_array, dtype, location) -> Storage`` applying ``map_location``."""
    restore = _restorer(map_location)

    def place(array, dtype, location):
        array = _pickle.from_raw(array, dtype)  # bfloat16 is read as its uint16 bytes
        try:
            return restore(Storage(array, CPU, dtype), location)
        except Exception as exc:
            raise MapLocationError(exc) from None

    return place
