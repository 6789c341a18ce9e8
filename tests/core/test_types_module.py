"""``torch.types`` and ``torch.SymInt``/``SymFloat``/``SymBool``: the names annotations and
``isinstance`` checks in model code reach for."""

import ember
from ember.export import Dim, export


def test_types_aliases_are_the_classes_they_name():
    from ember.types import Device, FileLike, Number, Storage, _int, _size

    assert _int is int
    assert ember.types is __import__("ember.types").types
    assert set(ember.types.__all__) == {"Number", "Device", "FileLike", "Storage"}
    assert float in Number.__args__ and bool in Number.__args__
    assert ember.device in Device.__args__ and type(None) in Device.__args__
    assert ember.Size in _size.__args__ and str in FileLike.__args__
    assert isinstance(ember.zeros(2).untyped_storage(), Storage)


def test_sym_classes_are_what_a_capture_gives():
    assert not isinstance(3, ember.SymInt) and not isinstance(2.0, ember.SymFloat)
    assert ember.types.py_sym_types == (ember.SymInt, ember.SymFloat, ember.SymBool)
    seen = []

    class M(ember.nn.Module):
        def forward(self, x):
            seen.append(x.size(0))
            return x * 2

    export(M(), (ember.randn(3, 2),), dynamic_shapes={"x": {0: Dim("batch")}})
    assert isinstance(seen[-1], ember.SymInt) and isinstance(seen[-1], int)
