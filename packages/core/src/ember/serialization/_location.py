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


def _moved(storage: Storage, location: str) -> Storage:
    """``storage`` (on the CPU) moved to ``location``, or PyTorch's error for a location no
    device here can hold."""
    dev = _device_of(location)
    if dev is CPU:
        return storage
    return Storage(backend_of(dev).to_device(storage.array, dev.index), dev, storage.dtype)


def validate_device(location, backend_name: str) -> int:
    """The device index of ``location`` after PyTorch's checks that ``backend_name``'s
    devices are available and the index exists (``validate_cuda_device``)."""
    dev = _device_cls(location)
    if backend_name == "cuda":
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        _check_available(dev)
    elif dev.type == backend_name and _known(dev):
        _check_available(dev)
    return dev.index or 0


def _known(dev) -> bool:
    """Whether Ember has a backend for ``dev``'s device type (available or not)."""
    try:
        return backend_of(dev) is not None
    except (RuntimeError, ImportError, AssertionError):
        return False


# -- the package registry (``register_package``): taggers name a storage's location when it
# is saved, deserializers place a loaded storage; both run in priority order (lower first)
# until one returns something other than None. Ember's own pair (priority 10) tags every
# device it has and places storages on the CPU, CUDA and the devices it has backends for;
# other locations fall through to registered packages and then to PyTorch's errors.

def _ember_tag(storage) -> str | None:
    dev = getattr(storage, "device", None)
    if dev is None:
        return None
    dev = _device_cls(dev)
    if dev.type == "cuda" and dev.index is None:
        return "cuda:0"
    return str(dev)


def _ember_deserialize(storage: Storage, location: str) -> Storage | None:
    try:
        dev = _device_cls(location)
    except (RuntimeError, ValueError, TypeError):
        return None
    if dev.type not in ("cpu", "cuda") and not _known(dev):
        return None
    return _moved(storage, location)


_DEFAULT_PACKAGE = (10, _ember_tag, _ember_deserialize)
#: (priority, tagger, deserializer), sorted: ``serialization.register_package`` adds to it
PACKAGES: list = [_DEFAULT_PACKAGE]


def register_package(priority: int, tagger, deserializer) -> None:
    """``torch.serialization.register_package``: ``tagger(storage) -> str | None`` names the
    location a storage is saved with, ``deserializer(storage, location) -> storage | None``
    places a loaded one; the registered pairs run in the order of ``priority`` (lower first)
    until one returns something other than None."""
    PACKAGES.append((priority, tagger, deserializer))
    PACKAGES.sort(key=lambda entry: entry[0])


def custom_packages() -> bool:
    """Whether a package other than Ember's own is registered (saving then asks the taggers
    about each storage)."""
    return len(PACKAGES) > 1


def location_tag(storage) -> str:
    """``torch.serialization.location_tag``: the location the registered taggers give
    ``storage``."""
    for _, tagger, _ in PACKAGES:
        location = tagger(storage)
        if location:
            return location
    from .._settings import typename

    raise RuntimeError("don't know how to determine data location of " + typename(storage))


def restore_location(storage: Storage, location: str) -> Storage:
    """``storage`` (on the CPU) placed at ``location`` by the registered deserializers
    (PyTorch's ``default_restore_location``)."""
    if len(PACKAGES) == 1:
        return _moved(storage, location)
    for _, _, deserializer in PACKAGES:
        result = deserializer(storage, location)
        if result is not None:
            return result
    return _moved(storage, location)  # PyTorch's error for the location


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
