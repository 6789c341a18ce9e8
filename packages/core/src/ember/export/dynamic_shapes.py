"""``torch.export.dynamic_shapes``: where ``Dim`` and ``dims`` live in PyTorch
(``from torch.export.dynamic_shapes import Dim`` imports them here too), and
``refine_dynamic_shapes_from_suggested_fixes``."""

from __future__ import annotations

import re

from ._symbolic import Dim, dims

__all__ = ["Dim", "dims", "refine_dynamic_shapes_from_suggested_fixes"]

_FIX = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*$")
_DIM = re.compile(r"^Dim\(\s*['\"]([A-Za-z_]\w*)['\"]\s*((?:,\s*(?:min|max)\s*=\s*-?\d+\s*)*)\)$")


def _parse_fixes(msg: str) -> dict:
    """``{dim name: int | dim name | (min, max)}`` from the message's "Suggested fixes:"."""
    head, sep, tail = msg.partition("Suggested fixes:")
    if not sep:
        raise ValueError("refine_dynamic_shapes_from_suggested_fixes: the message has no "
                         "'Suggested fixes:' section")
    fixes: dict = {}
    for line in tail.splitlines()[1:] if tail.startswith("\n") else tail.splitlines():
        if not line.strip():
            if fixes:
                break
            continue
        m = _FIX.match(line)
        if m is None:
            break
        name, rhs = m.groups()
        if re.fullmatch(r"-?\d+", rhs):
            fixes[name] = int(rhs)
        elif re.fullmatch(r"[A-Za-z_]\w*", rhs):
            fixes[name] = rhs
        else:
            d = _DIM.match(rhs)
            if d is None or d.group(1) != name:
                raise ValueError(f"refine_dynamic_shapes_from_suggested_fixes: cannot read the "
                                 f"fix {line.strip()!r}")
            bounds = dict(re.findall(r"(min|max)\s*=\s*(-?\d+)", d.group(2)))
            fixes[name] = (int(bounds["min"]) if "min" in bounds else None,
                           int(bounds["max"]) if "max" in bounds else None)
    return fixes


def refine_dynamic_shapes_from_suggested_fixes(msg: str, dynamic_shapes):
    """``dynamic_shapes`` with the fixes an export error suggested applied: a dim fixed to
    a constant (``a = 4``) becomes that int, a dim equal to another (``b = a``) becomes the
    other's ``Dim``, a narrowed range (``a = Dim('a', max=100)``) a new ``Dim`` of that
    range; the rest of the structure is kept. For a retry::

        try:
            ep = ember.export.export(model, args, dynamic_shapes=ds)
        except ember.export.ConstraintViolationError as exc:
            ds = refine_dynamic_shapes_from_suggested_fixes(str(exc), ds)
            ep = ember.export.export(model, args, dynamic_shapes=ds)
    """
    fixes = _parse_fixes(str(msg))
    by_name: dict = {}

    def collect(tree):
        if isinstance(tree, dict):
            for v in tree.values():
                collect(v)
        elif isinstance(tree, (list, tuple)):
            for v in tree:
                collect(v)
        elif getattr(tree, "__name__", None) is not None and hasattr(tree, "min"):
            by_name.setdefault(tree.__name__, tree)

    collect(dynamic_shapes)
    made: dict = {}

    def replacement(name):
        if name in made:
            return made[name]
        fix = fixes[name]
        if isinstance(fix, int):
            value = fix
        elif isinstance(fix, str):
            value = replacement(fix) if fix in fixes else by_name.get(fix) or Dim(fix)
        else:
            old = by_name.get(name)
            lo = fix[0] if fix[0] is not None else (old.min if old is not None else 0)
            value = Dim(name, min=lo, max=fix[1])
        made[name] = value
        return value

    def apply(tree):
        if isinstance(tree, dict):
            return {k: apply(v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(apply(v) for v in tree)
        name = getattr(tree, "__name__", None)
        if name is not None and hasattr(tree, "min") and name in fixes:
            return replacement(name)
        return tree

    return apply(dynamic_shapes)
