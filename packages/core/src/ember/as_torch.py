"""Run a PyTorch program on Ember without editing it: ``python -m ember.as_torch train.py
--epochs 2`` runs ``train.py`` with ``import torch`` (and ``torch.nn``, ``torch.utils.data``,
...) resolving to ``ember`` (``ember.nn``, ``ember.utils.data``, ...), ``torchvision`` to
``ember.vision``, ``torchtext`` to ``ember.text`` (where those packages are installed) and
``functorch`` (PyTorch's former home of ``torch.func``) to ``ember.functorch``.

While the alias is installed, Ember's objects print as PyTorch's do (``torch.float32``,
``torch.Size([2, 3])``, ``x.type() == 'torch.FloatTensor'``), ``torch.__name__`` is
``"torch"`` (submodules keep their Ember names: ``torch.nn.__name__ == "ember.nn"``) and
``torch.__version__`` is the
PyTorch release Ember follows, with Ember's own version as its local label
(``2.13.0+ember.0.1.0``): programs compare and gate on these.

``ember.as_torch.install()`` does the same inside a running interpreter (before the program's
first ``import torch``); ``uninstall()`` takes it back. A submodule Ember does not have fails
to import with ``ModuleNotFoundError`` naming both names (``torch.fx`` -> ``ember.fx``).
Modules already imported under the real names (a real PyTorch imported earlier in the
process) are left alone: install first.

Child processes started with the ``spawn`` or ``forkserver`` methods (``torch.multiprocessing``
with ``mp.set_start_method("spawn")``, DataLoader workers in such a context) begin a fresh
interpreter that imports the program's main module again: while the alias is installed,
their bootstrap installs it first, so they see Ember too (``fork`` children inherit it). So do
the ranks of ``python -m ember.as_torch -m torch.distributed.run --nproc-per-node 2
train.py`` (torchrun's command, on Ember's launcher), through the ``EMBER_AS_TORCH``
environment variable.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

__all__ = ["install", "uninstall", "installed", "main"]

#: the PyTorch distribution names and the Ember packages that stand in for them
ALIASES = {"torch": "ember", "torchvision": "ember.vision", "torchtext": "ember.text",
           "functorch": "ember.functorch"}  # torch.func's names and make_functional & co.

#: set to "1" while the alias is installed: the ranks ``ember.distributed.run`` starts (and
#: so ``python -m ember.as_torch -m torch.distributed.run ... train.py``) install it too
ENV = "EMBER_AS_TORCH"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``torch[.x]`` as the already-importable ``ember[.x]``: the module object is
    Ember's own, so ``torch.nn is ember.nn`` and classes pickle under their Ember paths."""

    def __init__(self):
        self._own_specs: dict = {}  # alias name -> the Ember module's spec, while importing

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in ALIASES:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        top, _, rest = spec.name.partition(".")
        target = ALIASES[top] + ("." + rest if rest else "")
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (exc.name == target or target.startswith(exc.name + ".")):
                raise ModuleNotFoundError(f"No module named '{spec.name}': running on Ember "
                                          f"(ember.as_torch), which has no '{target}'",
                                          name=spec.name) from None
            raise
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the module is Ember's, already executed; only the alias name is registered. The
        # import system has just set its __spec__ to the alias's: give it its own back, so
        # that it keeps its Ember name (importlib.reload, overrides' namespace names)
        spec = module.__spec__
        if spec is not None and spec.loader is self:
            module.__spec__ = self._own_specs.pop(spec.name, spec)


_FINDER = _AliasFinder()


def installed() -> bool:
    """Whether ``torch`` imports resolve to Ember in this interpreter."""
    return _FINDER in sys.meta_path


#: what a spawned or forkserver child runs before its bootstrap program (``-c``)
_CHILD_PREFIX = "import ember.as_torch; ember.as_torch.install(); "


def _spawnv_passfds(path, args, passfds):
    """``multiprocessing.util.spawnv_passfds`` (how ``spawn`` and ``forkserver`` start a
    child interpreter on POSIX) with the alias installed first in the child's ``-c``
    program, while the alias is installed here."""
    args = list(args)
    if installed() and "-c" in args:
        i = args.index("-c") + 1
        if i < len(args) and args[i].startswith("from multiprocessing"):
            args[i] = _CHILD_PREFIX + args[i]
    return _ORIGINAL_SPAWNV[0](path, args, passfds)


_ORIGINAL_SPAWNV: list = [None]


def install() -> None:
    """Make ``import torch`` (``torchvision``, ``torchtext``) import Ember from now on, in
    this interpreter and in the ``spawn``/``forkserver`` children it starts."""
    if not installed():
        sys.meta_path.insert(0, _FINDER)
    from . import _naming

    _naming.PREFIX[0] = "torch"  # PyTorch's spellings: torch.float32, x.type(), __version__
    sys.modules["ember"].__name__ = "torch"  # programs check it (pyro's patches of torch)
    os.environ[ENV] = "1"  # for the ranks of ember.distributed.run (its _bootstrap reads it)
    from multiprocessing import util

    if _ORIGINAL_SPAWNV[0] is None and hasattr(util, "spawnv_passfds"):
        _ORIGINAL_SPAWNV[0] = util.spawnv_passfds
        util.spawnv_passfds = _spawnv_passfds


def uninstall() -> None:
    """Undo :func:`install` and forget the alias modules already imported."""
    if installed():
        sys.meta_path.remove(_FINDER)
    from . import _naming

    _naming.PREFIX[0] = "ember"
    sys.modules["ember"].__name__ = "ember"
    os.environ.pop(ENV, None)
    if _ORIGINAL_SPAWNV[0] is not None:
        from multiprocessing import util

        util.spawnv_passfds, _ORIGINAL_SPAWNV[0] = _ORIGINAL_SPAWNV[0], None
    for name in list(sys.modules):
        if name.partition(".")[0] in ALIASES and \
                getattr(sys.modules[name], "__spec__", None) is not None and \
                sys.modules[name].__spec__.name.startswith("ember"):
            del sys.modules[name]


def _ember_name(module: str) -> str:
    """The Ember module a ``-m`` name stands for (``torch.distributed.run`` ->
    ``ember.distributed.run``); other names as they are."""
    top, dot, rest = module.partition(".")
    return ALIASES[top] + dot + rest if top in ALIASES else module


def main(argv: list[str] | None = None) -> int:
    """``python -m ember.as_torch script.py [args...]``, ``-m module [args...]`` or ``-c
    command [args...]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m ember.as_torch script.py [args...]\n"
              "       python -m ember.as_torch -m module [args...]\n"
              "       python -m ember.as_torch -c command [args...]\n\n"
              + __doc__.split("\n\n")[0], file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    install()
    if argv[0] == "-c":  # python -c: sys.argv ['-c', args...], the working directory on the path
        if len(argv) < 2:
            print("ember.as_torch: -c needs a command", file=sys.stderr)
            return 2
        sys.argv = ["-c", *argv[2:]]
        main_module = type(sys)("__main__")
        sys.modules["__main__"] = main_module
        exec(compile(argv[1], "<string>", "exec"), main_module.__dict__)
    elif argv[0] == "-m":
        if len(argv) < 2:
            print("ember.as_torch: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(_ember_name(argv[1]), run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        # ``python script.py`` puts the script's directory first on sys.path and not the
        # working directory; ``python -m ember.as_torch`` put the working directory there
        # (or '' ), which would shadow PYTHONPATH and the standard library: replace it
        script_dir = str(__import__("pathlib").Path(argv[0]).resolve().parent)
        if sys.path and not sys.flags.safe_path and sys.path[0] in ("", os.getcwd()):
            sys.path[0] = script_dir
        else:
            sys.path.insert(0, script_dir)
        # the script's __file__ absolute, as ``python script.py`` makes it (Python 3.9+)
        runpy.run_path(os.path.abspath(argv[0]), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
