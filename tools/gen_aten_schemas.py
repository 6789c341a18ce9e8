"""Regenerate ``_SCHEMAS`` in ``packages/core/src/ember/ops/_aten.py``: the ATen schemas (PyTorch's
public operator signatures: names, argument types, defaults) of the ops Ember runs, in
PyTorch's overload order, with out= and in-place variants that only add the written argument
kept in a short form. Run where the PyTorch oracle is installed (``.nox/tests/bin/python
tools/gen_aten_schemas.py``); ``tests/core/test_ops_aten.py`` checks the table against it.
"""
import collections
import pathlib
import sys

import torch

from ember.ops import _aten

PATH = pathlib.Path(__file__).resolve().parents[1] / "packages/core/src/ember/ops/_aten.py"

def resolvable(n):
    try:
        _aten._target(n)
        return True
    except NotImplementedError:
        return False

byname = collections.OrderedDict()
for s in torch._C._jit_get_all_schemas():
    if not s.name.startswith("aten::"):
        continue
    n = s.name[6:]
    key = s.name + ("." + s.overload_name if s.overload_name else "")
    if not torch._C._dispatch_has_kernel(key):
        continue
    text = str(s)
    if any(t in text for t in ("Dimname", "Storage", "Stream", "SymInt[]?[]")):
        continue
    if not resolvable(n):
        continue
    byname.setdefault(n, []).append(s)
full = []
for n in sorted(byname):
    order = getattr(torch.ops.aten, n).overloads()
    for s in sorted(byname[n], key=lambda s: order.index(s.overload_name or "default")):
        full.append(str(s)[6:])
# keep the overloads whose plan Ember can make
_aten._SCHEMAS = "\n".join(full)
_aten._INDEX = None
kept, dropped = [], []
for line in full:
    head = line.partition("(")[0]
    name, _, ovl = head.partition(".")
    try:
        op = _aten.AtenOp(name, ovl)
        op.plan()
        kept.append(line)
    except NotImplementedError as e:
        dropped.append((head, str(e)))
    except Exception as e:
        dropped.append((head, "ERR " + repr(e)))
print("dropped", len(dropped), file=sys.stderr)
for h, e in dropped:
    print(f"  not run: {h}: {e}", file=sys.stderr)

# compress
heads = {l.partition("(")[0]: l for l in kept}
def split(l):
    head, _, rest = l.partition("(")
    args, _, ret = rest.rpartition(") -> ")
    return head, args, ret
def out_of(ref):
    _, args, ret = split(ref)
    if ret != "Tensor":
        return None
    if "*" in args.split(", "):
        return args + ", Tensor(a!) out", "Tensor(a!)"
    return (args + ", *, Tensor(a!) out" if args else "*, Tensor(a!) out"), "Tensor(a!)"
def inplace_of(ref):
    _, args, ret = split(ref)
    if ret != "Tensor" or not args.startswith("Tensor self"):
        return None
    return "Tensor(a!) self" + args[len("Tensor self"):], "Tensor(a!)"
out = []
for l in kept:
    head, args, ret = split(l)
    name, _, ovl = head.partition(".")
    short = None
    if name.endswith("_") and not name.endswith("__"):
        ref = heads.get(name[:-1] + ("." + ovl if ovl else ""))
        if ref is not None and "(a" not in ref and inplace_of(ref) == (args, ret):
            short = f"{head}<{ovl}"
    else:
        for h, ref in heads.items():
            rname, _, rov = h.partition(".")
            if rname == name and rov != ovl and "(a" not in ref and out_of(ref) == (args, ret):
                short = f"{head}<{rov}"
                break
    out.append(short or l)
text = "\n".join(out) + "\n"
print(len(byname), len(kept), len(text), file=sys.stderr)
src = open(PATH).read()
start = src.index('_SCHEMAS = """\\\n') + len('_SCHEMAS = """\\\n')
end = src.index('"""', start)
src = src[:start] + text + src[end:]
open(PATH, "w").write(src)
