"""ONNX interchange for Ember (the ``ember-nn[onnx]`` extra: ``pip install ember-nn[onnx]``).

Import: :func:`load_model` reads an ONNX file (as PyTorch's ``torch.onnx.export`` writes
them, among others) into an :class:`OnnxModule`, an ``ember.nn.Module`` that runs the graph
with Ember ops and trains like any other module. The ``onnx`` package is imported only when a
model is loaded.
"""

# -- import (ONNX -> Ember): _import.py; operators in _ops_import.py and _import_*.py ---------
from ._import import OnnxModule, load_model

# -- export (Ember -> ONNX): export.py (torch.onnx.export; onnx imported when a model is
# exported), the graph in _export_program.py, the op mappings in _export_ops*.py --------------
from .export import (
    OnnxExporterError,
    OperatorExportTypes,
    TrainingMode,
    UnsupportedOperatorError,
    export,
    is_in_onnx_export,
)

__all__ = ["OnnxModule", "load_model", "export", "is_in_onnx_export", "TrainingMode",
           "OperatorExportTypes",
           "OnnxExporterError", "UnsupportedOperatorError"]
__version__ = "0.1.0"
