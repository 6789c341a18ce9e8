"""Parity probes for ember.jit / ember.export error behaviour against PyTorch 2.13."""
import io
import re
import warnings

import pytest

import ember as E


def _torch():
    return pytest.importorskip("torch")


def _both(fn, exc, msg):
    """Run ``fn(lib)`` for Ember (and PyTorch when importable): each raises ``exc``, ``msg``."""
    libs = [E]
    try:
        import torch  # noqa: F401
        libs.append(_torch())
    except ImportError:
        pass
    for lib in libs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=re.escape(msg)):
                fn(lib)


def test_jit_load_missing_file_is_value_error(tmp_path):
    path = str(tmp_path / "missing.pt")
    _both(lambda lib: lib.jit.load(path), ValueError,
          f"The provided filename {path} does not exist")


def test_jit_load_directory_is_value_error(tmp_path):
    path = str(tmp_path)
    _both(lambda lib: lib.jit.load(path), ValueError,
          f"The provided filename {path} is a directory")


def test_jit_freeze_training_module_raises():
    def go(lib):
        m = lib.jit.trace(lib.nn.Linear(3, 2), lib.ones(1, 3))
        lib.jit.freeze(m)
    _both(go, RuntimeError, "Freezing is currently only implemented for modules in eval mode. "
          "Please call .eval() on your module before freezing.")


def test_jit_freeze_eval_module_ok():
    m = E.jit.trace(E.nn.Linear(3, 2).eval(), E.ones(1, 3))
    assert E.jit.freeze(m)(E.ones(1, 3)).shape == (1, 2)


def test_jit_save_missing_parent_dir(tmp_path):
    path = str(tmp_path / "nodir" / "x.pt")
    parent = str(tmp_path / "nodir")

    def go(lib):
        m = lib.jit.trace(lib.nn.Linear(3, 2), lib.ones(1, 3))
        m.save(path)
    _both(go, RuntimeError, f"Parent directory {parent} does not exist.")


def test_jit_save_bytesio_roundtrip_still_works():
    m = E.jit.trace(E.nn.Linear(3, 2), E.ones(1, 3))
    b = io.BytesIO()
    E.jit.save(m, b)
    b.seek(0)
    loaded = E.jit.load(b, map_location="cpu")
    assert sorted(loaded.state_dict()) == ["bias", "weight"]


def test_jit_trace_non_callable():
    _both(lambda lib: lib.jit.trace(3, lib.ones(2)), RuntimeError,
          "Could not get name of python class object")


def test_jit_script_builtin_instance():
    _both(lambda lib: lib.jit.script(3), TypeError, "<class 'int'> is a built-in class")


def test_export_dim_inconsistent_min_max():
    _both(lambda lib: lib.export.Dim("b", min=5, max=2), AssertionError,
          "Cannot create Dim with inconsistent min=5, max=2")


def test_export_dim_equal_min_max_is_inconsistent():
    _both(lambda lib: lib.export.Dim("b", min=3, max=3), AssertionError,
          "Cannot create Dim with inconsistent min=3, max=3")


def test_export_dim_bad_name_is_assertion_error():
    _both(lambda lib: lib.export.Dim("a b"), AssertionError,
          "Dim name must be a valid identifier, got a b")


@pytest.mark.parametrize("kw, text", [({}, "Dim('b', min=0)"),
                                      ({"min": 2, "max": 10}, "Dim('b', max=10)"),
                                      ({"min": 3}, "Dim('b', min=3)"),
                                      ({"min": 1, "max": 8}, "Dim('b', min=1, max=8)")])
def test_export_dim_repr(kw, text):
    assert repr(E.export.Dim("b", **kw)) == text
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    assert repr(_torch().export.Dim("b", **kw)) == text


def test_export_save_non_program(tmp_path):
    path = str(tmp_path / "x.pt2")
    _both(lambda lib: lib.export.save(3, path), TypeError,
          "The 'ep' parameter must be an instance of 'ExportedProgram', got 'int' instead.")


def test_compile_non_callable():
    _both(lambda lib: lib.compile(3), AssertionError,
          "A callable function is expected, but <class 'int'> is provided.")


def test_jit_trace_kwarg_inputs_take_precedence_over_example_inputs():
    x = E.ones(1, 3)
    m = E.jit.trace(E.nn.Linear(3, 2), (x,), example_kwarg_inputs={"input": x})
    assert m(x).shape == (1, 2)
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    t = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = t.jit.trace(t.nn.Linear(3, 2), (t.ones(1, 3),),
                         example_kwarg_inputs={"input": t.ones(1, 3)})
    assert tuple(tm(t.ones(1, 3)).shape) == (1, 2)


def test_jit_trace_kwarg_inputs_unknown_name():
    _both(lambda lib: lib.jit.trace(lib.nn.Linear(3, 2),
                                    example_kwarg_inputs={"bogus": lib.ones(1, 3)}),
          NameError, "'bogus' is not in forward() method's arguments,\n"
          "                         valid arguments name are [input]")
