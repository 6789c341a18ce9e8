"""How much of PyTorch's public API Ember has: coverage per namespace and the missing names.

Usage::

    python tools/compat_report.py              # coverage per namespace
    python tools/compat_report.py --missing    # and every missing name, with its reason
    python tools/compat_report.py --json       # everything, for machines
    python tools/compat_report.py --markdown   # the table for README.md

PyTorch (and torchvision, for the ``ember.vision`` rows) must be importable by the
interpreter that runs this: its public names are the reference, Ember's are checked
against them. A name counts as present when it exists in Ember (presence, not behaviour).
The gaps are justified, one reason each, in ``tools/compat_allowlist.py``; a missing
name without a reason is reported as ``UNJUSTIFIED``. The script is a report: it exits 0.

Importable: :func:`collect` returns one :class:`Coverage` per namespace, and
``tests/integration/test_compat_report.py`` asserts on them.

What counts as a public name of a namespace:

* its ``__all__`` where it has one, else ``dir()`` without ``_`` names;
* minus modules that are not its own submodules (``math``, ``np`` in ``torch.nn.functional``),
  re-exports from outside PyTorch (``Optional``, ``Callable``, ``PIL.Image.Image``) or of a
  name another row checks (:data:`REEXPORTS`), and names a namespace only imports for its own
  use (:data:`IMPORTED_HELPERS`);
* without ``__all__``, only classes, callables and dtypes count (not docstring fragments such
  as ``torch.nn.functional.reproducibility_notes``).

Besides the namespaces, the *module paths* rows check item 4 of issue 18: every public class
and function of ``torch.nn.modules.<mod>``, ``torch.optim.<mod>``, ``torch.utils.data.<mod>``,
... exists at ``ember.nn.modules.<mod>`` and so on, so that pickled class paths and
``isinstance`` checks written against full paths work.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

# (PyTorch's namespace, Ember's)
NAMESPACES = [
    ("torch", "ember"),
    ("torch.Tensor", "ember.Tensor"),
    ("torch.nn", "ember.nn"),
    ("torch.nn.functional", "ember.nn.functional"),
    ("torch.nn.init", "ember.nn.init"),
    ("torch.nn.utils", "ember.nn.utils"),
    ("torch.optim", "ember.optim"),
    ("torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    ("torch.utils.data", "ember.utils.data"),
    ("torch.utils.checkpoint", "ember.utils.checkpoint"),
    ("torch.serialization", "ember.serialization"),
    ("torch.linalg", "ember.linalg"),
    ("torch.autograd", "ember.autograd"),
    ("torch.autograd.forward_ad", "ember.autograd.forward_ad"),
    ("torch.fft", "ember.fft"),
    ("torch.special", "ember.special"),
    ("torch.distributions", "ember.distributions"),
    ("torch.func", "ember.func"),
    ("torch.sparse", "ember.sparse"),
    ("torch.distributed", "ember.distributed"),
    ("torch.distributed.device_mesh", "ember.distributed.device_mesh"),
    ("torch.distributed.tensor", "ember.distributed.tensor"),
    ("torch.distributed.tensor.parallel", "ember.distributed.tensor.parallel"),
    ("torch.distributed.fsdp", "ember.distributed.fsdp"),
    ("torch.distributed.checkpoint", "ember.distributed.checkpoint"),
    ("torch.distributed.checkpoint.state_dict", "ember.distributed.checkpoint.state_dict"),
]
TORCH_MODULES = ("torch.* modules", "ember")  # PyTorch's public subpackages: torch.fft, ...
# torch.utils' modules (flop_counter, hooks, dlpack, model_zoo, ...), and _pytree, which is
# private by name but imported by libraries and user code alike
TORCH_UTILS_MODULES = ("torch.utils modules", "ember.utils")
VISION_NAMESPACES = [
    ("torchvision.models", "ember.vision.models"),
    ("torchvision.models.segmentation", "ember.vision.models.segmentation"),
    ("torchvision.models.video", "ember.vision.models.video"),
    ("torchvision.models.optical_flow", "ember.vision.models.optical_flow"),
    ("torchvision.models.detection", "ember.vision.models.detection"),
    ("torchvision.transforms", "ember.vision.transforms"),
    ("torchvision.transforms.v2", "ember.vision.transforms.v2"),
    ("torchvision.transforms.v2.functional", "ember.vision.transforms.v2.functional"),
    ("torchvision.tv_tensors", "ember.vision.tv_tensors"),
    ("torchvision.transforms.functional", "ember.vision.transforms.functional"),
    ("torchvision.ops", "ember.vision.ops"),
    ("torchvision.datasets", "ember.vision.datasets"),
    ("torchvision.io", "ember.vision.io"),
    ("torchvision.utils", "ember.vision.utils"),
]
# Packages whose submodules' classes and functions must exist at Ember's full paths too.
MODULE_PATH_ROOTS = [
    ("torch.nn.modules", "ember.nn.modules"),
    ("torch.nn.parallel", "ember.nn.parallel"),
    ("torch.nn.utils", "ember.nn.utils"),
    ("torch.optim", "ember.optim"),
    ("torch.utils.data", "ember.utils.data"),
    ("torch.autograd", "ember.autograd"),
]
# Private bases that real code checks with isinstance (timm, mmcv, torchvision): their full
# paths count as API although they start with ``_``.
PRIVATE_BASES = {
    "torch.nn.modules": ["batchnorm._BatchNorm", "batchnorm._NormBase", "conv._ConvNd",
                         "conv._ConvTransposeNd", "dropout._DropoutNd",
                         "instancenorm._InstanceNorm", "loss._Loss", "loss._WeightedLoss",
                         "pooling._AdaptiveAvgPoolNd", "pooling._AdaptiveMaxPoolNd",
                         "pooling._AvgPoolNd", "pooling._MaxPoolNd"],
    "torch.optim": ["lr_scheduler._LRScheduler"],
}
# The rows the done-when holds to 95%.
HEADLINE = ("torch.Tensor", "torch.nn", "torch.nn.functional")

LIBRARIES = ("torch", "torchvision")  # a name re-exported from elsewhere is not their API
# Names that PyTorch's namespaces import for their own use, not API of theirs.
IMPORTED_HELPERS = {
    "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "boolean_dispatch",
    "handle_torch_function", "has_torch_function", "has_torch_function_unary",
    "has_torch_function_variadic",
}
# Re-exports of a name another row checks at its home: torch.nn.functional.Tensor is torch.Tensor.
REEXPORTS = {"torch.nn.functional": {"Tensor"}, "torch.fft": {"Tensor"}}
# The dunders of torch.Tensor that user code relies on (operators, protocols, conversions).
TENSOR_DUNDERS = {
    f"__{prefix}{op}__"
    for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
               "or", "xor", "lshift", "rshift")
    for prefix in ("", "r", "i")
} | {
    f"__{name}__"
    for name in ("neg", "pos", "abs", "invert", "eq", "ne", "lt", "le", "gt", "ge", "getitem",
                 "setitem", "len", "iter", "reversed", "contains", "bool", "int", "float",
                 "complex", "index", "array", "dlpack", "dlpack_device", "deepcopy",
                 "reduce_ex", "setstate", "format", "hash", "torch_function")
}


@dataclass
class Coverage:
    """PyTorch's public names in one namespace, and which of them Ember lacks."""

    namespace: str
    ember: str
    names: list[str]
    missing: list[str]
    reasons: dict[str, str] = field(default_factory=dict)  # missing name -> allow-list reason

    @property
    def covered(self) -> int:
        return len(self.names) - len(self.missing)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / len(self.names) if self.names else 100.0

    @property
    def not_yet(self) -> list[str]:
        """Missing names whose reason is that nobody has done them yet: work to do."""
        return [name for name, reason in self.reasons.items() if "not yet" in reason]

    @property
    def unjustified(self) -> list[str]:
        """Missing names the allow-list gives no reason for."""
        return [name for name in self.missing if name not in self.reasons]

    def as_dict(self) -> dict:
        return {"namespace": self.namespace, "ember": self.ember, "total": len(self.names),
                "covered": self.covered, "percent": round(self.percent, 1),
                "not_yet": len(self.not_yet), "unjustified": len(self.unjustified),
                "missing": {name: self.reasons.get(name, "UNJUSTIFIED")
                            for name in self.missing}}


# -- PyTorch's side: the public names -------------------------------------------------------

def _is_foreign(obj: object) -> bool:
    """A re-export from outside PyTorch: a typing helper, a builtin, ``PIL.Image.Image``..."""
    if obj.__class__.__module__ in ("typing", "typing_extensions"):
        return True
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] not in LIBRARIES


def _is_api_object(obj: object) -> bool:
    """Without ``__all__``, a class, a callable or a dtype is API; plain data is not."""
    import torch

    return inspect.isclass(obj) or callable(obj) or isinstance(obj, torch.dtype)


def _keep(module: types.ModuleType, name: str, explicit: bool) -> bool:
    """Whether ``module.name`` is a public name of ``module`` (see the module docstring)."""
    if name in IMPORTED_HELPERS or name in REEXPORTS.get(module.__name__, ()):
        return False
    try:
        obj = getattr(module, name)
    except AttributeError:
        return False
    if isinstance(obj, types.ModuleType):
        return obj.__name__ == f"{module.__name__}.{name}"
    if _is_foreign(obj):
        return False
    return explicit or _is_api_object(obj)


def public_names(module: types.ModuleType) -> list[str]:
    """The public names of one of PyTorch's namespaces. Without ``__all__`` a submodule counts
    when a fresh ``import`` of the namespace makes it an attribute: another import in this
    process (a test's ``torch.distributed.elastic``) must not add names to the row."""
    explicit = getattr(module, "__all__", None)
    candidates = explicit if explicit is not None else [
        name for name in dir(module) if not name.startswith("_")]
    kept = {name for name in candidates if _keep(module, name, explicit is not None)}
    submodules = tuple(sorted(name for name in kept
                              if isinstance(getattr(module, name), types.ModuleType)))
    if explicit is None and submodules:
        kept -= set(submodules) - set(attribute_paths(module.__name__, submodules))
    return sorted(kept)


def tensor_names() -> list[str]:
    """torch.Tensor's public methods and properties, and the dunders that matter."""
    import torch

    return sorted(name for name in dir(torch.Tensor)
                  if not name.startswith("_") or name in TENSOR_DUNDERS)


def torch_submodules() -> list[str]:
    """PyTorch's public subpackages (``fft``, ``cuda``, ``jit``, ...), as they lie on disk."""
    import torch

    return sorted(info.name for info in pkgutil.iter_modules(torch.__path__)
                  if not info.name.startswith("_"))


def torch_utils_modules() -> list[str]:
    """torch.utils' public modules as they lie on disk, and ``_pytree``."""
    import torch.utils

    return sorted([info.name for info in pkgutil.iter_modules(torch.utils.__path__)
                   if not info.name.startswith("_")] + ["_pytree"])


def _defined_in(module: types.ModuleType) -> set[str]:
    """Public classes and functions whose home is ``module`` (in or out of its __all__)."""
    return {name for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == module.__name__}


def module_path_names(root: str) -> list[str]:
    """``<submodule>.<Name>`` for every public class and function of ``root``'s submodules."""
    package = importlib.import_module(root)
    names = set()
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{root}.{info.name}")
        except Exception:  # a submodule that needs an optional dependency PyTorch lacks here
            continue
        public = set(getattr(module, "__all__", ())) | _defined_in(module)
        names |= {f"{info.name}.{name}" for name in public
                  if name not in IMPORTED_HELPERS and not _is_foreign(
                      getattr(module, name, None))}
    return sorted(names | set(PRIVATE_BASES.get(root, ())))


# Run in a fresh interpreter: which dotted paths are attributes right after ``import <top>``.
# (In this process the report's own imports would have made every submodule an attribute.)
_ATTRIBUTE_PROBE = """
import functools, importlib, json, sys
top = importlib.import_module(sys.argv[1])
def reachable(path):
    try:
        functools.reduce(getattr, path.split("."), top)
    except (AttributeError, ImportError):
        return False
    return True
print(json.dumps([path for path in json.loads(sys.argv[2]) if reachable(path)]))
"""
MODULE_ATTRIBUTES = "submodules as attributes"  # the row's name


@functools.cache
def attribute_paths(top: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``paths`` (relative to ``top``) that a fresh ``import top`` makes attributes."""
    probe = subprocess.run([sys.executable, "-c", _ATTRIBUTE_PROBE, top, json.dumps(paths)],
                           capture_output=True, text=True, check=True)
    return tuple(json.loads(probe.stdout))


def submodule_attributes() -> list[str]:
    """The submodules of the module-path packages that ``import torch`` makes attributes
    (``nn.modules.batchnorm``), so that ``torch.nn.modules.batchnorm._BatchNorm`` works
    without importing it; Ember's must be attributes after ``import ember`` as well."""
    candidates = []
    for root, _ in MODULE_PATH_ROOTS:
        package = importlib.import_module(root)
        candidates += [f"{root}.{info.name}"[len("torch."):]
                       for info in pkgutil.iter_modules(package.__path__)
                       if not info.name.startswith("_")]
    return sorted(attribute_paths("torch", tuple(candidates)))


# -- Ember's side: is the name there? -------------------------------------------------------

@functools.cache
def _module_exists(path: str) -> bool:
    try:
        return importlib.util.find_spec(path) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


_ABSENT = object()


def _resolve(path: str) -> object:
    """The object at a dotted path (``ember.nn.modules.conv.Conv2d``), or ``_ABSENT``."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        module_path = ".".join(parts[:split])
        if not _module_exists(module_path):
            continue
        try:
            obj = importlib.import_module(module_path)
        except ImportError:  # present but needs an optional dependency: still present
            return None if split == len(parts) else _ABSENT
        for attr in parts[split:]:
            try:
                obj = getattr(obj, attr)
            except (AttributeError, ImportError):
                return _ABSENT
        return obj
    return _ABSENT


def ember_has(ember: str, name: str) -> bool:
    """Whether ``<ember>.<name>`` exists (an attribute or an importable submodule).

    A class attribute set to None counts as absent: that is how Python spells "this class
    has no ``__hash__``" (and ``__iter__``, ...).
    """
    obj = _resolve(f"{ember}.{name}")
    return obj is not _ABSENT and (obj is not None or not name.startswith("__"))


# -- the report -----------------------------------------------------------------------------

ALLOWLIST_PATH = Path(__file__).with_name("compat_allowlist.py")


def _allowlist_module() -> types.ModuleType:
    """tools/compat_allowlist.py, loaded by path (tools/ is not a package), afresh each time
    so that a pruned list is what the next report reads."""
    spec = importlib.util.spec_from_file_location("compat_allowlist", ALLOWLIST_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _allowlist() -> dict[str, dict[str, str]]:
    """tools/compat_allowlist.py's entries: namespace -> {name or glob: reason}."""
    return _allowlist_module().entries()


def oracle_matches(namespace: str) -> bool:
    """Whether the installed library behind a row is the release the allow-list was written
    for (torch for the torch rows, torchvision for its own)."""
    library = "torchvision" if namespace.startswith("torchvision") else "torch"
    version = importlib.import_module(library).__version__
    return version.startswith(_allowlist_module().ORACLES[library])


def _reasons(missing: list[str], allowed: dict[str, str]) -> dict[str, str]:
    """The allow-list's reason for each missing name; exact entries win over globs."""
    reasons = {}
    for name in missing:
        if name in allowed:
            reasons[name] = allowed[name]
            continue
        for pattern, reason in allowed.items():
            if fnmatch.fnmatchcase(name, pattern):
                reasons[name] = reason
                break
    return reasons


def coverage(namespace: str, ember: str, names: list[str], allowed: dict[str, str]) -> Coverage:
    """Check ``names`` of a PyTorch namespace against Ember's ``ember`` namespace."""
    missing = [name for name in names if not ember_has(ember, name)]
    return Coverage(namespace, ember, names, missing, _reasons(missing, allowed))


def _names_of(namespace: str) -> list[str]:
    """PyTorch's public names in one row."""
    if namespace == "torch.Tensor":
        return tensor_names()
    if namespace == TORCH_MODULES[0]:
        return torch_submodules()
    if namespace == TORCH_UTILS_MODULES[0]:
        return torch_utils_modules()
    return public_names(importlib.import_module(namespace))


def torchvision_available() -> bool:
    """The torchvision rows run only where torchvision is installed."""
    return _module_exists("torchvision")


def collect(vision: bool = True) -> list[Coverage]:
    """Coverage of every namespace (torchvision's only where torchvision is installed)."""
    allow = _allowlist()
    pairs = NAMESPACES + [TORCH_MODULES, TORCH_UTILS_MODULES]
    if vision and torchvision_available():
        pairs += VISION_NAMESPACES
    rows = [coverage(ns, ember, _names_of(ns), allow.get(ns, {})) for ns, ember in pairs]
    for root, ember in MODULE_PATH_ROOTS:
        namespace = f"{root}.*"
        rows.append(coverage(namespace, ember, module_path_names(root), allow.get(namespace, {})))
    rows.append(_attributes_row(allow.get(MODULE_ATTRIBUTES, {})))
    return rows


def _attributes_row(allowed: dict[str, str]) -> Coverage:
    """Which of torch's attribute-reachable submodules are attributes in Ember too."""
    names = submodule_attributes()
    present = set(attribute_paths("ember", tuple(names)))
    missing = [name for name in names if name not in present]
    return Coverage(MODULE_ATTRIBUTES, "ember", names, missing, _reasons(missing, allowed))


def stale_entries(rows: list[Coverage]) -> dict[str, list[str]]:
    """Allow-list entries of the checked namespaces that match no missing name any more."""
    stale = {}
    allow = _allowlist()
    for row in rows:
        used = set()
        for name in row.missing:
            used |= {entry for entry in allow.get(row.namespace, {})
                     if entry == name or fnmatch.fnmatchcase(name, entry)}
        unused = sorted(set(allow.get(row.namespace, {})) - used)
        if unused:
            stale[row.namespace] = unused
    return stale


def prune_allowlist(stale: dict[str, list[str]], path: Path = ALLOWLIST_PATH) -> int:
    """Delete the stale entries from the allow-list's source; returns how many went.

    Each entry is a string literal inside its namespace's block, so the block is found by its
    key and the literal (with the separator after it) removed there; a list left empty stays
    (an empty list is valid) for a reader to delete with its reason."""
    text = path.read_text()
    removed = 0
    for namespace, names in stale.items():
        start = text.index(f'    "{namespace}": {{')
        end = text.index("\n    },", start)
        block = text[start:end]
        for name in names:
            block, n = re.subn(rf'"{re.escape(name)}",? ?', "", block, count=1)
            removed += n
        block = "\n".join(line.rstrip() for line in block.split("\n") if line.strip())
        block = re.sub(r",\s*\]", "]", block)
        text = text[:start] + block + text[end:]
    path.write_text(text)
    return removed


def format_table(rows: list[Coverage]) -> str:
    """Covered/total and % per namespace; "not yet" counts the gaps that are work to do."""
    width = max(len(row.namespace) for row in rows)
    lines = [f"{'PyTorch':<{width}}  {'covered':>9}  {'%':>6}  {'not yet':>7}  unjustified",
             "-" * (width + 41)]
    for row in rows:
        lines.append(f"{row.namespace:<{width}}  {row.covered:>4}/{len(row.names):<4}  "
                     f"{row.percent:>5.1f}%  {len(row.not_yet):>7}  {len(row.unjustified)}")
    return "\n".join(lines)


def format_markdown(rows: list[Coverage]) -> str:
    """The table in Markdown, as README.md's "Where Ember knowingly differs" section shows it."""
    lines = ["| PyTorch | Ember has | not yet |", "|---|---|---|"]
    for row in rows:
        lines.append(f"| `{row.namespace}` | {row.covered}/{len(row.names)} "
                     f"({row.percent:.0f}%) | {len(row.not_yet)} |")
    return "\n".join(lines)


def format_missing(rows: list[Coverage]) -> str:
    """The missing names of each namespace, grouped by the allow-list's reason."""
    lines = []
    for row in rows:
        if not row.missing:
            continue
        lines.append(f"\n{row.namespace} -> {row.ember}: {len(row.missing)} missing")
        groups: dict[str, list[str]] = {}
        for name in row.missing:
            groups.setdefault(row.reasons.get(name, "UNJUSTIFIED"), []).append(name)
        for reason, names in sorted(groups.items()):
            lines.append(f"  [{reason}] ({len(names)})")
            lines.append("    " + ", ".join(names))
    return "\n".join(lines)


def registry_summary() -> dict:
    """What ember-core's op registry says of its ops: how many there are, and how many are
    differentiable, have an in-place variant or ``out=``, are views, draw random numbers, or
    are ``torch.nn.functional`` kernels; and which ``torch`` functions and ``Tensor`` methods
    of PyTorch Ember has only outside the registry (plain functions the tracer, the ONNX
    mapping and autocast cannot see yet)."""
    import ember
    from ember.ops.registry import OPS

    infos = list(OPS.values())
    registered = {n + suffix for info in infos for n in (info.name, *info.aliases)
                  for suffix in ("", "_") if not suffix or info.inplace is not None}
    summary = {
        "ops": len(infos),
        "differentiable": sum(info.differentiable for info in infos),
        "inplace": sum(info.inplace is not None for info in infos),
        "out": sum(info.supports_out for info in infos),
        "view": sum(info.view for info in infos),
        "random": sum(info.random for info in infos),
        "nn.functional": sum("nn.functional" in info.tags for info in infos),
    }
    try:
        import torch
    except ImportError:
        return summary
    torch_fns = {n for n in dir(torch) if not n.startswith("_")
                 and callable(getattr(torch, n)) and not isinstance(getattr(torch, n), type)}
    summary["torch functions outside the registry"] = sorted(
        n for n in torch_fns if hasattr(ember, n) and n not in registered
        and callable(getattr(ember, n)) and not isinstance(getattr(ember, n), type))
    return summary


def format_registry(summary: dict) -> str:
    lines = ["ember-core's op registry:"]
    for key, value in summary.items():
        if isinstance(value, list):
            lines.append(f"  {key} ({len(value)}): {', '.join(value)}")
        else:
            lines.append(f"  {key}: {value}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the report; always exit 0 (it is a report: the test is what fails)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--missing", action="store_true", help="list the missing names")
    parser.add_argument("--registry", action="store_true",
                        help="summarise the op registry (and the torch functions outside it)")
    parser.add_argument("--prune", action="store_true",
                        help="delete allow-list entries for names Ember now has")
    args = parser.parse_args(argv)
    if not _module_exists("torch"):
        print("PyTorch is not installed: nothing to compare against.", file=sys.stderr)
        return 0
    rows = collect()
    if args.prune:
        print(f"pruned {prune_allowlist(stale_entries(rows))} allow-list entries")
        rows = collect()
    if args.json:
        print(json.dumps({"namespaces": [row.as_dict() for row in rows],
                          "stale_allowlist": stale_entries(rows)}, indent=2))
        return 0
    print(format_markdown(rows) if args.markdown else format_table(rows))
    if not torchvision_available():
        print("(torchvision is not installed: the ember.vision rows are skipped)")
    if args.missing:
        print(format_missing(rows))
    if args.registry:
        print(format_registry(registry_summary()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
