"""The unpicklers of ``ember.load``.

``WeightsUnpickler`` (``weights_only=True``, the default) interprets a pickle opcode by opcode
in Python, as PyTorch's ``torch/_weights_only_unpickler.py`` does, so that every effect is
checked where it happens:

- only allow-listed globals resolve (``_pickle.ALLOWED_GLOBALS``, and the user's
  ``add_safe_globals``/``safe_globals`` entries, ``_safe_globals``), never one of a blocked
  module (``os``, ``sys``...); only ``_pickle.CALLABLE_GLOBALS`` and the user's globals may
  be called (REDUCE), only containers, ``Parameter`` and the user's classes constructed
  (NEWOBJ);
- BUILD applies a state only to tensors, parameters, ``OrderedDict`` and ``Counter``, and
  only to the fields their class allows (``_pickle.set_state``), or to instances of the
  user's classes (their ``__setstate__``, else their ``__dict__`` and slots, as PyTorch
  does): never to a shared object such as a dtype, a device, a storage type or a function;
- APPEND/SETITEM/ADDITEMS only fill lists, dicts and sets;
- opcodes a checkpoint writer never emits are refused at once, before anything else is
  read: those that run code by other routes (INST, OBJ, EXT*, NEWOBJ_EX, out-of-band
  buffers) and those that do nothing (POP, POP_MARK, DUP). Opcode bombs made of other no-op
  sequences (an empty MARK..APPENDS batch, an object memoized twice in a row, an empty or
  oversized FRAME) are refused at their first occurrence, and no pickle may run more than
  ``MAX_OPS`` opcodes or nest ``MAX_MARK_DEPTH`` marks.

Malformed data ends in ``pickle.UnpicklingError`` (or ``EOFError`` when the pickle stops
before its STOP opcode, as in PyTorch); ``ember.load`` words it as ``torch.load`` does
(``weights_only_message``). ``FullUnpickler`` (``weights_only=False``) is the C unpickler,
which imports and runs whatever the file names: for trusted files only.
"""

from __future__ import annotations

import _compat_pickle
import collections
import enum
import io
import pickle
import re
import struct

from .. import _dtype
from .._size import Size
from .._tensor import Tensor
from . import _pickle, _safe_globals
from ._pickle import ALLOWED_GLOBALS, CALLABLE_GLOBALS, StorageType

MAX_OPS = 50_000_000
MAX_MARK_DEPTH = 10_000

_REFUSED = {  # opcodes no checkpoint writer emits, and why they are refused
    pickle.INST: "calls a class", pickle.OBJ: "calls a class",
    pickle.NEWOBJ_EX: "calls a class", pickle.EXT1: "resolves an extension code",
    pickle.EXT2: "resolves an extension code", pickle.EXT4: "resolves an extension code",
    pickle.NEXT_BUFFER: "reads an out-of-band buffer",
    pickle.READONLY_BUFFER: "reads an out-of-band buffer",
    pickle.POP: "does nothing", pickle.POP_MARK: "does nothing", pickle.DUP: "does nothing",
}

# Errors of malformed data inside the stock opcode handlers, reported as UnpicklingError.
_MALFORMED = (LookupError, TypeError, ValueError, AttributeError, ArithmeticError,
              struct.error)

_CALLABLE_IDS = frozenset(id(ALLOWED_GLOBALS[name]) for name in CALLABLE_GLOBALS)
_FILLABLE = {pickle.APPEND: (list,), pickle.APPENDS: (list,), pickle.ADDITEMS: (set,),
             pickle.SETITEM: (dict, collections.OrderedDict, collections.Counter),
             pickle.SETITEMS: (dict, collections.OrderedDict, collections.Counter)}
_FILL_WORDS = {  # PyTorch's wording of what each opcode fills
    pickle.APPEND: "append to lists", pickle.APPENDS: "extend lists",
    pickle.ADDITEMS: "ADDITEMS for set",
    pickle.SETITEM: "SETITEM for dict, collections.OrderedDict, collections.Counter",
    pickle.SETITEMS: "SETITEMS for dict, collections.OrderedDict, collections.Counter"}
_NEW_OBJECT_TYPES = (collections.OrderedDict, collections.Counter, set, frozenset, complex,
                     Size)
_NOTHING = object()


class _Stop(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


class _Passthrough(Exception):
    """Carries an exception from the storage loader (``map_location`` is user code) out of
    the unpickler unchanged."""

    def __init__(self, error: BaseException):
        super().__init__()
        self.error = error


def unsafe_global(full: str) -> pickle.UnpicklingError:
    """PyTorch's error for a global that is not allowed (``builtins.`` left out of the name)."""
    shown = full[len("builtins."):] if full.startswith("builtins.") else full
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`ember.serialization.add_safe_globals([{shown}])` or the "
        f"`ember.serialization.safe_globals([{shown}])` context manager to allowlist this "
        "global if you trust this class/function.")


def _blocked(module: str, full: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module "
                                  f"{module} is blocked.")


def _refuse(opcode: bytes, why: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(f"Unsupported operand {opcode[0]} ({why})")


_DOCS_MESSAGE = ("\n\nCheck the documentation of ember.load (docs/serialization.md) to learn "
                 "more about types accepted by default with weights_only.")


def weights_only_message(message: str) -> str:
    """An error of the ``weights_only`` unpickler as ``ember.load`` reports it: the layout of
    ``torch.load``'s messages, with Ember's names."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two "
                "options, \033[1mdo those steps only if you trust the source of the "
                f"checkpoint\033[0m. \n\t(1) {_pickle.UNSAFE_MESSAGE}\n\t(2) Alternatively, to "
                "load with `weights_only=True` please check the recommended steps in the "
                f"following error message.\n\tWeightsUnpickler error: {message}{_DOCS_MESSAGE}")
    text = f"Weights only load failed. {_pickle.UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        text += ("Please file an issue with the following so that we can make "
                 "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
    return f"{text}\n\n{message}{_DOCS_MESSAGE}"


def compat_name(module: str, name: str) -> tuple[str, str]:
    """``(module, name)`` of a pickled global under Python 3's names: protocol 2 pickles name
    Python 2's modules (``__builtin__.set``)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def resolve(module: str, name: str) -> tuple[str, object]:
    """``(full name, default allow-listed object or None)`` of a pickled global."""
    module, name = compat_name(module, name)
    full = f"{module}.{name}"
    return full, ALLOWED_GLOBALS.get(full)


def _storage_record(pid) -> tuple:
    """(dtype, key, location, numel, view) of a pickled storage id, checked."""
    if isinstance(pid, tuple) and pid and pid[0] not in ("storage", b"storage"):
        raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got "
                                     f"{type(pid[0])}")
    if not isinstance(pid, tuple) or len(pid) not in (5, 6):
        raise pickle.UnpicklingError(f"Unknown saved id: {pid!r:.100}")
    storage_type, key, location, numel = pid[1:5]
    if isinstance(storage_type, StorageType):
        dtype = storage_type.dtype
    elif isinstance(storage_type, _dtype.dtype):
        dtype = storage_type
    else:
        raise pickle.UnpicklingError(f"invalid storage type {storage_type!r:.80}")
    if isinstance(location, bytes):
        location = location.decode("ascii")
    if isinstance(key, bytes):
        key = key.decode("ascii")
    if not isinstance(key, (str, int)) or not isinstance(location, str) \
            or type(numel) is not int or numel < 0:
        raise pickle.UnpicklingError(f"invalid storage record {pid!r:.100}")
    return dtype, str(key), location, numel, pid[5] if len(pid) == 6 else None


class WeightsUnpickler(pickle._Unpickler):
    """The ``weights_only=True`` unpickler (see the module docstring). ``data`` is the whole
    pickle stream (bytes, or a seekable binary file positioned at its start);
    ``storage_loader(dtype, key, location, numel, view)`` returns each storage."""

    def __init__(self, data, storage_loader, encoding: str = "utf-8"):
        file = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else data
        super().__init__(file, encoding=encoding)
        self._file = file
        self._storage_loader = storage_loader
        self._user = _safe_globals.UserGlobals()  # as this load began
        self._user_ids = self._user.ids
        start = file.tell()
        self._end = file.seek(0, io.SEEK_END)
        file.seek(start)

    def load(self):
        """The unpickled object; the stream is left just after its STOP opcode."""
        try:
            return self._run()
        except _Passthrough as wrapped:
            raise wrapped.error from None
        except RecursionError:
            raise pickle.UnpicklingError("pickle nesting is too deep") from None
        except (pickle.UnpicklingError, EOFError, RuntimeError, MemoryError):
            raise
        except _MALFORMED as exc:
            if self._file.tell() >= self._end:
                raise pickle.UnpicklingError("pickle data was truncated") from None
            raise pickle.UnpicklingError(f"malformed pickle: {type(exc).__name__}: "
                                         f"{exc}") from None

    def _run(self):
        f = self._file
        # Frames are a buffering hint (FRAME only checks its length): read the stream direct.
        self.read, self.readline, self.readinto = f.read, f.readline, f.readinto
        self.metastack, self.stack = [], []
        self.append = self.stack.append
        self.proto = 0
        self._last_memoized = _NOTHING
        read, dispatch = f.read, self._dispatch
        try:
            for _ in range(MAX_OPS):
                key = read(1)
                if not key:
                    raise EOFError  # PyTorch's weights-only unpickler: no message
                dispatch[key[0]](self)
        except _Stop as stop:
            return stop.value
        raise pickle.UnpicklingError(f"pickle has more than {MAX_OPS} opcodes")

    # -- globals, calls and state ------------------------------------------------------------

    def find_class(self, module, name):
        module, name = compat_name(module, name)
        full = f"{module}.{name}"
        if module in _safe_globals.BLOCKED_MODULES:
            raise _blocked(module, full)
        found = ALLOWED_GLOBALS.get(full)
        if found is None:
            found = self._user.find(full)
        if found is None:
            raise unsafe_global(full)
        return found

    def persistent_load(self, pid):
        record = _storage_record(pid)
        try:
            return self._storage_loader(*record)
        except Exception as exc:
            raise _Passthrough(exc) from None

    def call(self, func, args):
        """REDUCE: ``func(*args)`` for an allow-listed callable or a user's safe global only."""
        if id(func) not in _CALLABLE_IDS and id(func) not in self._user_ids:
            raise pickle.UnpicklingError(f"Trying to call reduce for unrecognized function "
                                         f"{func!r:.80}")
        if type(args) is not tuple:
            raise pickle.UnpicklingError("REDUCE arguments must be a tuple")
        return func(*args)

    def build(self, inst, state) -> None:
        """BUILD: set ``state`` on ``inst`` within what its class allows."""
        if isinstance(inst, Tensor):
            _pickle.build_tensor(inst, state)
        elif type(inst) in (collections.OrderedDict, collections.Counter):
            _pickle.set_state(inst, state)
        elif id(type(inst)) in self._user_ids:
            _build_allowed(inst, state)
        else:
            raise pickle.UnpicklingError(f"Can only build Tensor, Parameter, OrderedDict or "
                                         f"types allowlisted via `add_safe_globals`, but got "
                                         f"{type(inst)}")

    def _load_reduce(self):
        args = self.stack.pop()
        self.stack[-1] = self.call(self.stack[-1], args)

    def _load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is _pickle._ParameterType:
            self.append(self.call(cls, args))
        elif type(args) is tuple and (cls in _NEW_OBJECT_TYPES or (
                id(cls) in self._user_ids and isinstance(cls, type))):
            self.append(cls.__new__(cls, *args))
        else:
            raise pickle.UnpicklingError(f"Can only create new object for nn.Parameter or "
                                         f"classes allowlisted via `add_safe_globals` but got "
                                         f"{cls!r:.80}")

    def _load_build(self):
        state = self.stack.pop()
        self.build(self.stack[-1], state)

    # -- containers, memo, framing -----------------------------------------------------------

    def _check_target(self, opcode: bytes, target) -> None:
        if type(target) not in _FILLABLE[opcode]:
            raise pickle.UnpicklingError(f"Can only {_FILL_WORDS[opcode]}, but got "
                                         f"{type(target)}")

    def _load_append(self):
        self._check_target(pickle.APPEND, self.stack[-2])
        super().load_append()

    def _load_setitem(self):
        self._check_target(pickle.SETITEM, self.stack[-3])
        super().load_setitem()

    def _batch(self, opcode: bytes):
        items = self.pop_mark()
        if not items:
            raise _refuse(opcode, "an empty batch does nothing")
        self._check_target(opcode, self.stack[-1])
        return items

    def _load_appends(self):
        items = self._batch(pickle.APPENDS)
        self.stack[-1].extend(items)

    def _load_setitems(self):
        items = self._batch(pickle.SETITEMS)
        target = self.stack[-1]
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _load_additems(self):
        items = self._batch(pickle.ADDITEMS)
        self.stack[-1].update(items)

    def _load_mark(self):
        if len(self.metastack) >= MAX_MARK_DEPTH:
            raise pickle.UnpicklingError("pickle nesting is too deep")
        super().load_mark()

    def _memoize(self, index: int) -> None:
        top = self.stack[-1]
        if top is self._last_memoized:
            raise _refuse(pickle.MEMOIZE, "memoizing an object twice does nothing")
        if not 0 <= index <= len(self.memo):
            raise pickle.UnpicklingError(f"invalid pickle memo index {index}: "
                                         f"{len(self.memo)} objects are memoized")
        self.memo[index] = self._last_memoized = top

    def _load_put(self):
        self._memoize(int(self.readline()[:-1]))

    def _load_binput(self):
        self._memoize(self.read(1)[0])

    def _load_long_binput(self):
        self._memoize(struct.unpack("<I", self.read(4))[0])

    def _load_memoize(self):
        self._memoize(len(self.memo))

    def _read_length(self, opcode: bytes, least: int = 0) -> int:
        """An 8-byte length that must fit in what is left of the pickle."""
        size = struct.unpack("<Q", self.read(8))[0]
        if not least <= size <= self._end - self._file.tell():
            raise _refuse(opcode, f"{size} bytes declared in a pickle of {self._end} bytes")
        return size

    def _load_frame(self):
        self._read_length(pickle.FRAME, least=1)  # a frame is only a buffering hint

    def _load_bytearray8(self):  # the stock handler allocates the length before reading
        self.append(bytearray(self.read(self._read_length(pickle.BYTEARRAY8))))

    def _load_stop(self):
        raise _Stop(self.stack.pop())


def _build_allowed(inst, state) -> None:
    """BUILD on an instance of a user-allowed class, as PyTorch (and pickle) does it: its
    ``__setstate__``, else an update of its ``__dict__`` and slots. Enum members are
    process-wide singletons that pickle never builds: refused."""
    if isinstance(inst, enum.Enum):
        raise pickle.UnpicklingError(f"Can not build the enum member {inst!r:.80}")
    setstate = getattr(inst, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slotstate = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slotstate = state
    if state:
        inst.__dict__.update(state)
    if slotstate:
        for key, value in slotstate.items():
            setattr(inst, key, value)


def _make_dispatch() -> list:
    def refuser(opcode: bytes, why: str):
        def refuse(self):
            raise _refuse(opcode, why)
        return refuse

    table = [refuser(bytes([code]), "not a pickle opcode") for code in range(256)]
    for code, handler in pickle._Unpickler.dispatch.items():
        table[code] = handler
    own = {pickle.REDUCE: "_load_reduce", pickle.NEWOBJ: "_load_newobj",
           pickle.BUILD: "_load_build", pickle.APPEND: "_load_append",
           pickle.APPENDS: "_load_appends", pickle.SETITEM: "_load_setitem",
           pickle.SETITEMS: "_load_setitems", pickle.ADDITEMS: "_load_additems",
           pickle.MARK: "_load_mark", pickle.PUT: "_load_put", pickle.BINPUT: "_load_binput",
           pickle.LONG_BINPUT: "_load_long_binput", pickle.MEMOIZE: "_load_memoize",
           pickle.FRAME: "_load_frame", pickle.BYTEARRAY8: "_load_bytearray8",
           pickle.STOP: "_load_stop"}
    for opcode, name in own.items():
        table[opcode[0]] = getattr(WeightsUnpickler, name)
    for opcode, why in _REFUSED.items():
        table[opcode[0]] = refuser(opcode, why)
    return table


WeightsUnpickler._dispatch = _make_dispatch()


class FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: full pickle (trusted files only), ``torch.*`` globals mapped to
    ember, storages through ``storage_loader``."""

    def __init__(self, file, storage_loader, **kwargs):
        super().__init__(file, **kwargs)
        self._storage_loader = storage_loader

    def find_class(self, module, name):
        full, found = resolve(module, name)
        if found is not None:
            return found
        if module == "torch" or module.startswith("torch."):
            module = "ember" + module[len("torch"):]
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and len(pid) == 4 and pid[0] in ("module", b"module"):
            return pid[1]  # a legacy file's module class (PyTorch checks its source: not here)
        return self._storage_loader(*_storage_record(pid))


def unpickle(data: bytes, storage_loader, weights_only: bool, pickle_module=None,
             load_args: dict | None = None):
    """Unpickle ``data`` resolving storages through
    ``storage_loader(dtype, key, location, numel, view)``; ``load_args`` are the unpickler's
    keyword arguments (only ``encoding`` with ``weights_only``)."""
    load_args = {"encoding": "utf-8", **(load_args or {})}
    if weights_only:
        return WeightsUnpickler(data, storage_loader, load_args["encoding"]).load()
    base = FullUnpickler
    if pickle_module is not None and pickle_module is not pickle:
        base = type("Unpickler", (FullUnpickler, pickle_module.Unpickler), {})
    return base(io.BytesIO(data), storage_loader, **load_args).load()
