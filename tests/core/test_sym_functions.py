"""``ember.sym_int``, ``sym_float``, ``sym_max``, ``sym_min``, ``sym_not``, ``sym_sqrt``,
``sym_sum``, ``sym_ite``, ``sym_fresh_size``, ``sym_constrain_range`` and
``sym_constrain_range_for_size``: their eager behaviour on Python numbers, bools and tensors,
value and type, against PyTorch's (and its errors)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from testutils import assert_same_error

import ember


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _arg(lib, a):
    """``a`` for library ``lib``: ("t", value) is a 0-d (or n-d) tensor of ``lib``."""
    if isinstance(a, tuple) and a and a[0] == "t":
        return lib.tensor(a[1])
    if isinstance(a, list):
        return [_arg(lib, v) for v in a]
    return a


CALLS = [
    ("sym_int", (2.7,)), ("sym_int", (-2.7,)), ("sym_int", (3,)), ("sym_int", (True,)),
    ("sym_int", (("t", 2.5),)), ("sym_int", (("t", 3),)), ("sym_int", ("3",)),
    ("sym_int", (np.int64(4),)), ("sym_int", (2.0 ** 70,)),
    ("sym_float", (2,)), ("sym_float", (2.5,)), ("sym_float", (True,)),
    ("sym_float", (("t", 2.5),)), ("sym_float", (("t", 3),)), ("sym_float", ("2.5",)),
    ("sym_max", (2, 3)), ("sym_max", (2, 3.0)), ("sym_max", (2.0, 3)), ("sym_max", (3, 2.0)),
    ("sym_max", (True, False)), ("sym_max", (1.5, True)), ("sym_max", (np.int64(3), 2)),
    ("sym_max", (np.float32(3), 2)),
    ("sym_min", (2, 3)), ("sym_min", (2.0, 3)), ("sym_min", (2, 3.0)), ("sym_min", (False, 2)),
    ("sym_not", (True,)), ("sym_not", (False,)), ("sym_not", (0,)), ("sym_not", (3,)),
    ("sym_not", (None,)), ("sym_not", (("t", True),)), ("sym_not", (("t", 2.5),)),
    ("sym_sqrt", (4,)), ("sym_sqrt", (2.0,)), ("sym_sqrt", (True,)),
    ("sym_sqrt", (("t", 2.5),)), ("sym_sqrt", (("t", 3),)),
    ("sym_sum", ([1, 2, 3],)), ("sym_sum", ([1, 2.5],)), ("sym_sum", ([],)), ("sym_sum", ()),
    ("sym_sum", (1, 2, 3)), ("sym_sum", ((4, 5),)), ("sym_sum", ([("t", 2.5), ("t", 3)],)),
    ("sym_sum", ([("t", 2.5), 1],)), ("sym_sum", (("t", [1, 2]), 3)),
    ("sym_ite", (True, 1, 2)), ("sym_ite", (False, 1, 2)), ("sym_ite", (True, [1], [2])),
    ("sym_ite", (False, ("t", 1), ("t", 2))),
    ("sym_fresh_size", (5,)), ("sym_fresh_size", (2.5,)), ("sym_fresh_size", (True,)),
    ("sym_fresh_size", ([1],)),
]


def _same_value(got, expected, torch):
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, ember.Tensor)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    elif isinstance(expected, list):
        assert got == expected
    else:
        assert type(got) is type(expected), (got, expected)
        assert got == expected or (math.isnan(got) and math.isnan(expected))


@pytest.mark.parametrize("name, args", CALLS, ids=[f"{n}{i}" for i, (n, _) in
                                                   enumerate(CALLS)])
def test_eager_values_are_pytorchs(name, args, torch):
    expected = getattr(torch, name)(*_arg(torch, list(args)))
    got = getattr(ember, name)(*_arg(ember, list(args)))
    _same_value(got, expected, torch)


ERRORS = [
    ("sym_int", (("t", [1, 2]),)), ("sym_int", (float("inf"),)), ("sym_int", (None,)),
    ("sym_float", (None,)), ("sym_float", (("t", [1.0, 2.0]),)),
    ("sym_max", (("t", 2.5), ("t", 3))), ("sym_max", (("t", 2.5), 1)), ("sym_max", (1, None)),
    ("sym_min", (("t", 2.5), ("t", 3))), ("sym_min", (1, ("t", 2.5))),
    ("sym_not", (("t", [1, 2]),)), ("sym_not", (("t", []),)),
    ("sym_sqrt", (-1,)), ("sym_sqrt", ("a",)), ("sym_sqrt", (("t", [1.0, 2.0]),)),
    ("sym_sum", ([1, 2], [3])),
    ("sym_ite", (1, 1, 2)), ("sym_ite", (("t", True), 1, 2)), ("sym_ite", (True, 1, 2.0)),
]


@pytest.mark.parametrize("name, args", ERRORS, ids=[f"{n}{i}" for i, (n, _) in
                                                    enumerate(ERRORS)])
def test_errors_are_pytorchs(name, args, torch):
    def run(lib):
        return lambda: getattr(lib, name)(*_arg(lib, list(args)))

    if name in ("sym_max", "sym_min", "sym_ite") and any(isinstance(a, tuple) for a in args) \
            or name == "sym_max" and None in args:
        # PyTorch lists the accepted types and names the one it got (torch.Tensor there)
        with pytest.raises(AssertionError) as theirs:
            run(torch)()
        with pytest.raises(AssertionError) as mine:
            run(ember)()
        assert str(mine.value).split(", got")[0] == str(theirs.value).split(", got")[0]
        return
    assert_same_error(run(ember), run(torch))


def test_sym_sum_of_a_generator_is_an_error():
    with pytest.raises(TypeError):
        ember.sym_sum(x for x in [1, 2])


# -- sym_constrain_range, sym_constrain_range_for_size -------------------------------------

RANGES = [
    ("sym_constrain_range", (5,), {"min": 0, "max": 10}),
    ("sym_constrain_range", (5,), {}),
    ("sym_constrain_range", (5,), {"min": None, "max": None}),
    ("sym_constrain_range", (5,), {"min": None, "max": 5}),
    ("sym_constrain_range", (-3.7,), {"min": -3, "max": 0}),
    ("sym_constrain_range", (5,), {"min": 6}),
    ("sym_constrain_range", (5,), {"max": 4}),
    ("sym_constrain_range", (("t", 3),), {"min": 0, "max": 1}),
    ("sym_constrain_range", (("t", 2.5),), {"min": 3}),
    ("sym_constrain_range", (2.5,), {"min": 0, "max": 1}),
    ("sym_constrain_range", (True,), {"min": 0, "max": 0}),
    ("sym_constrain_range", (5,), {"min": 10, "max": 3}),
    ("sym_constrain_range", (10,), {"min": 10, "max": 3}),
    ("sym_constrain_range", (5,), {"min": 2.5}),
    ("sym_constrain_range", (5,), {"min": True}),
    ("sym_constrain_range", ("a",), {}),
    ("sym_constrain_range", (None,), {}),
    ("sym_constrain_range", (("t", [3]),), {"min": 4}),
    ("sym_constrain_range", (complex(1, 2),), {}),
    ("sym_constrain_range", (2 ** 63,), {}),
    ("sym_constrain_range", (5, 0, 10), {}),
    ("sym_constrain_range", (), {"size": 5, "min": 1}),
    ("sym_constrain_range_for_size", (5,), {}),
    ("sym_constrain_range_for_size", (0,), {}),
    ("sym_constrain_range_for_size", (1,), {}),
    ("sym_constrain_range_for_size", (5,), {"min": -1}),
    ("sym_constrain_range_for_size", (5,), {"min": 6}),
    ("sym_constrain_range_for_size", (-1,), {}),
    ("sym_constrain_range_for_size", (1,), {"max": 0}),
    ("sym_constrain_range_for_size", (5,), {"max": 2}),
    ("sym_constrain_range_for_size", (5,), {"max": 3}),
    ("sym_constrain_range_for_size", (5,), {"min": -1, "max": 3}),
    ("sym_constrain_range_for_size", (1,), {"min": 2}),
    ("sym_constrain_range_for_size", (5,), {"min": 10, "max": 3}),
    ("sym_constrain_range_for_size", (5,), {"min": 4, "max": 3}),
    ("sym_constrain_range_for_size", (("t", 3),), {"max": 1}),
    ("sym_constrain_range_for_size", (), {"size": 5, "max": 2}),
]


@pytest.mark.parametrize("name, args, kwargs", RANGES,
                         ids=[f"{n}{i}" for i, (n, _, _) in enumerate(RANGES)])
def test_constrain_range_checks_eagerly_as_pytorch(name, args, kwargs, torch):
    def run(lib):
        return getattr(lib, name)(*_arg(lib, list(args)), **kwargs)

    try:
        expected = run(torch)
    except Exception:
        assert_same_error(lambda: run(ember), lambda: run(torch))
        return
    assert expected is None and run(ember) is None


def test_sizes_of_an_export_capture_stay_symbolic():
    """Inside ``ember.export`` a dynamic size is a ``SymInt``: ``sym_int`` keeps it, so a view
    built from it records the symbol, not the example's value."""
    import ember.export as E

    def f(x):
        n = ember.sym_int(x.shape[0])
        ember.sym_constrain_range_for_size(n)
        return x.view(n, -1) * ember.sym_float(2)

    batch = E.Dim("batch", min=2)
    ep = E.export(f, (ember.rand(3, 2, 2),), dynamic_shapes=({0: batch},))
    x = ember.rand(5, 2, 2)
    np.testing.assert_allclose(ep.module()(x).numpy(), x.numpy().reshape(5, 4) * 2)
