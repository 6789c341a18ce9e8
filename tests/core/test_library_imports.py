"""Names that PyTorch libraries import or call at import time, found by running them under
``ember.as_torch`` (pyro, kornia, torch_geometric, opacus): each behaves as PyTorch's, and
PyTorch is the oracle where it is installed."""

import subprocess
import sys
import textwrap

import pytest

import ember

try:
    import torch
except ImportError:
    torch = None


def test_dataloader_type_aliases():
    """opacus annotates with ``torch.utils.data.dataloader._collate_fn_t``."""
    from ember.utils.data import dataloader

    assert dataloader._collate_fn_t.__args__[0] == list[dataloader._T]
    assert dataloader._worker_init_fn_t.__args__ == (int, None)
    assert dataloader._T_co is dataloader.T_co
    if torch is not None:
        from torch.utils.data import dataloader as theirs

        assert str(dataloader._collate_fn_t) == str(theirs._collate_fn_t)
        assert str(dataloader._worker_init_fn_t) == str(theirs._worker_init_fn_t)


def test_jit_overload_declarations():
    """``torch.jit._overload``: typed declarations (``pass``/``...`` bodies) recorded, the
    last definition called (torch_geometric declares its utilities so)."""
    from ember import jit

    @jit._overload
    def scale(x: int) -> int:
        pass

    @jit._overload
    def scale(x: float) -> float:  # noqa: F811
        """A docstring may stand beside the ``...``."""
        ...

    first = jit._get_overloads(scale)

    def scale(x):
        return 2 * x

    assert scale(3) == 6 and len(first) == 2
    assert jit._get_overloads(scale) == first  # kept under the function's name

    with pytest.raises(RuntimeError, match="Only `pass` statement or `...` can be the body "
                                           "of overload declaration"):
        @jit._overload
        def bad(x: int) -> int:
            return x

    class Layer:
        @jit._overload_method
        def forward(self, x: int) -> int:
            pass

        def forward(self, x):  # noqa: F811
            return x + 1

    assert Layer().forward(1) == 2


def test_tensor_str_helpers():
    """``torch._tensor_str._tensor_str`` (torch_geometric's mesh printing) and ``_str``."""
    from ember._tensor_str import PRINT_OPTS, _str, _tensor_str

    t = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert _tensor_str(t, 0) == "[[1., 2.],\n [3., 4.]]"
    assert _tensor_str(ember.tensor([1, 2]), 4) == "[1, 2]"
    assert _tensor_str(ember.zeros(0), 0) == "[]"
    assert _str(t) == repr(t) and PRINT_OPTS.threshold == 1000
    if torch is not None:
        from torch._tensor_str import _tensor_str as theirs

        for values in ([[1.5, -2.0], [3.0, 4.25]], list(range(2000)), [[1e-8, 1e8]]):
            assert _tensor_str(ember.tensor(values), 2) == theirs(torch.tensor(values), 2)


def test_rpc_is_not_built():
    """``torch.distributed.rpc`` as a PyTorch build without RPC has it (torch_geometric
    imports it and asks ``hasattr(rpc, "api")``)."""
    from ember.distributed import rpc

    assert rpc.is_available() is False and not hasattr(rpc, "api")
    assert ember.distributed.rpc is rpc


def test_is_in_onnx_export():
    pytest.importorskip("onnx")
    nn = pytest.importorskip("ember.nn")
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2

    assert ember.onnx.is_in_onnx_export() is False
    ember.onnx.export(Probe(), (ember.ones(2),))
    assert True in seen and ember.onnx.is_in_onnx_export() is False
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 3"):
        ember.onnx.export(Probe(), (ember.ones(2),), opset_version=3)
    assert ember.onnx.is_in_onnx_export() is False  # reset after a failed export


def test_pyro_style_patch_of_torch_under_as_torch(tmp_path):
    """pyro patches ``torch`` only when ``torch.__name__ == "torch"`` and registers KL pairs
    with its own Distribution base; under ``as_torch`` both hold (and ``torch.__spec__``
    stays Ember's)."""
    program = textwrap.dedent("""
        import torch
        from torch.distributions import Normal, kl_divergence, register_kl
        from torch.serialization import MAP_LOCATION

        def patch_dependency(target, root_module=torch):
            parts = target.split(".")
            assert parts[0] == root_module.__name__
            module = root_module
            for part in parts[1:-1]:
                module = getattr(module, part)
            return module, parts[-1]

        module, name = patch_dependency("torch.distributions.transforms.Transform.__getstate__")
        class Base:  # a library's own Distribution base
            pass
        class Delta(Base):
            pass
        register_kl(Delta, Base)(lambda p, q: 0.0)
        print(module.__name__, name, torch.__spec__.name, MAP_LOCATION is not None,
              torch.torch is torch)
        """)
    (tmp_path / "prog.py").write_text(program)
    run = subprocess.run([sys.executable, "-m", "ember.as_torch", "prog.py"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["Transform", "__getstate__", "ember", "True", "True"]
