"""``ember.export``: capture a model into a graph of registry ops (``torch.export``).

``export(model, args)`` runs the model once on example inputs and records every op it calls
through ember's one op registry into an :class:`ExportedProgram`: a flat graph of typed,
shaped values whose parameters and buffers are named inputs, with constants folded and the
capture's assumptions kept as guards. ``print(ep.graph)`` shows it; ``ep.module()`` runs it;
``save``/``load`` keep it in one ``.ember`` file (FORMAT.md) that loads without running code::

    batch = ember.export.Dim("batch", min=1, max=1024)
    ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    ember.export.save(ep, "model.ember")
    out = ember.export.load("model.ember").module()(x)

Data-dependent sizes (``nonzero``, ``masked_select``, ``x[mask]``, ``unique``) are unbacked
symbols ``u0``, ``u1``, ... that the shapes of the ops after them carry (``x[x > 0] * 2`` is
``float32[u0]``); the program runs for any count.

``x.item()`` gives a symbolic scalar (``SymFloat``, an unbacked ``SymInt``, ``SymBool``, as
torch.export's), the output of a ``Tensor.item`` node: ops it is passed to refer to it (``x *
n`` is ``mul(%x, %item)``), arithmetic and comparisons on it are ``operator.*`` scalar nodes,
and the program runs with each call's value (file format version 2.1). Python control flow on
it (``if n > 0``, ``float(n)``, ``int(n)``) and sizes made from it (``ember.zeros(n)``,
``x[:n]``) raise :class:`DataDependentError`.

An op whose result nests tuples or lists of tensors (``histogramdd``'s ``(hist, (edges_0,
edges_1))``) is one node with a graph value per tensor leaf (``%histogramdd_1_0``) that keeps
the nesting: the program returns the same structure, and its file is format version 2 (a
graph without such a node stays version 1).

The capture sees ops through their namespaces (``ember.abs``, ``F.relu``, Tensor methods),
which dispatch only while a capture runs: a reference to an op function taken before it
(``f = ember.abs``) holds the plain function. ``export`` routes the references it can find:
the exported callable itself (``export(F.grid_sample, args)``), its closure variables and
default arguments, globals of the files that define it or the model's classes, and module
attributes (``self.act = F.relu``). One held elsewhere (in a list, on another object) runs
unseen and raises :class:`UntracedTensorError`: call the op through its namespace inside the
function you export (``ember.abs(x)``), or wrap it in a lambda defined there.
"""

from __future__ import annotations

from . import dynamic_shapes
from ._capture import (
    ConstraintViolationError,
    DataDependentError,
    ExportError,
    TracerWarning,
    UntracedTensorError,
    is_tracing,
)
from ._export import export
from ._graph import FormatError, Graph, InputSpec, Node, TensorMeta
from ._ops import UnknownOpError
from ._program import (
    CustomDecompTable,
    ExportedProgram,
    ExportGraphSignature,
    GraphModule,
    GuardError,
    InputKind,
    OutputKind,
    default_decompositions,
)
from ._serialize import FORMAT_VERSION, load, save
from ._symbolic import Dim, SymInt, dims

__all__ = ["export", "save", "load", "Dim", "dims", "ExportedProgram", "ExportGraphSignature",
           "InputKind", "OutputKind", "GraphModule", "Graph", "Node", "InputSpec", "TensorMeta",
           "SymInt", "ExportError", "DataDependentError", "UntracedTensorError",
           "ConstraintViolationError", "GuardError", "FormatError", "UnknownOpError",
           "TracerWarning", "FORMAT_VERSION", "is_tracing", "CustomDecompTable",
           "default_decompositions"]
