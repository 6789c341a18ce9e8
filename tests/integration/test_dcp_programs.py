"""Distributed checkpoints in PyTorch programs run unchanged on Ember.

* PyTorch's distributed-checkpoint recipe (``dcp_programs/fsdp_dcp.py``: an FSDP2 model and
  its AdamW in a ``Stateful`` app state, ``get_state_dict``/``set_state_dict``,
  ``dcp.save``/``dcp.load``) runs under PyTorch's launcher and Ember's; a checkpoint PyTorch
  wrote on 2 ranks resumes on 4 Ember ranks, one Ember wrote on 4 ranks resumes on 2 PyTorch
  ranks, and every run ends with the parameters of PyTorch's uninterrupted run (float64).
* PyTorch's FSDP2 example (pytorch/examples ``distributed/FSDP2``, unedited) trains, saves
  and resumes on 2 CPU ranks with both of its checkpoint paths (``--dcp-api``: the
  ``state_dict`` helpers with full state dicts broadcast from rank 0; without: DTensor by
  hand), plain, with mixed precision and with explicit prefetching. The example is written
  for GPUs: a driver (``dcp_programs/fsdp2_example.py``) answers its GPU-count check and
  drops the CPU ``device_id`` that PyTorch (and Ember) refuse in ``init_process_group``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "dcp_programs"
RECIPE = PROGRAMS / "fsdp_dcp.py"

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


def _needs_mpi() -> None:
    from mpi_launch import mpi_available

    if not mpi_available():
        pytest.skip("needs mpi4py and mpiexec (pip install 'ember-core[distributed]')")


def _run_group(cmd, cwd: Path, env: dict | None = None, timeout: float = 300) -> str:
    """Run ``cmd`` in a session of its own (its launcher's ranks end with it, also on a
    timeout); its stdout, after asserting it succeeded."""
    from testutils import run_in_session

    code, out, err = run_in_session(cmd, timeout, cwd=cwd, env={**os.environ, **(env or {})})
    assert code == 0, (out + err)[-4000:]
    return out


def on_pytorch(n: int, program: Path, *args: str, cwd: Path, env: dict | None = None) -> str:
    """The program on PyTorch's launcher (its ranks skip the interpreter's teardown, where
    PyTorch's gloo now and then aborts: ``testutils.torchrun``)."""
    from testutils import torchrun

    return _run_group(torchrun(n, program, *args), cwd, env)


def on_ember(n: int, program: Path, *args: str, cwd: Path, env: dict | None = None) -> str:
    return _run_group([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(n),
                       "-m", "ember.as_torch", str(program), *args], cwd, env)


def test_dcp_recipe_checkpoints_cross_between_pytorch_and_ember(tmp_path):
    pytest.importorskip("torch")
    _needs_mpi()
    import ember

    on_pytorch(2, RECIPE, "0", "6", "reference.pt", cwd=tmp_path)
    on_pytorch(2, RECIPE, "0", "3", "half.pt", "--save", "from_pytorch", cwd=tmp_path)
    on_ember(4, RECIPE, "3", "6", "ember_resumed.pt", "--load", "from_pytorch", cwd=tmp_path)
    on_ember(4, RECIPE, "0", "3", "ember_half.pt", "--save", "from_ember", cwd=tmp_path)
    on_pytorch(2, RECIPE, "3", "6", "pytorch_resumed.pt", "--load", "from_ember", cwd=tmp_path)
    on_ember(2, RECIPE, "0", "6", "ember_whole.pt", cwd=tmp_path)
    reference = ember.load(tmp_path / "reference.pt")
    assert sorted(reference["params"]) == ["net1.bias", "net1.weight", "net2.bias",
                                           "net2.weight"]
    assert reference["step"].item() == 6
    for name in ("ember_resumed.pt", "pytorch_resumed.pt", "ember_whole.pt"):
        got = ember.load(tmp_path / name)
        assert got["step"].item() == 6, name
        for key, want in reference["params"].items():
            assert got["params"][key].dtype == ember.float64
            assert ember.allclose(got["params"][key], want, rtol=0, atol=1e-12), (name, key)
    # the halves agree too: the checkpoints hold the same training state
    a, b = ember.load(tmp_path / "half.pt"), ember.load(tmp_path / "ember_half.pt")
    for key, want in a["params"].items():
        assert ember.allclose(b["params"][key], want, rtol=0, atol=1e-12), key


FSDP2_DRIVER = PROGRAMS / "fsdp2_example.py"


def _latest(folder: Path) -> Path:
    return folder / str(max(int(p.name) for p in folder.iterdir()))


def _same_checkpoints(a: Path, b: Path) -> None:
    """The model and optimizer files of two checkpoints hold equal values."""
    import ember

    for name in ("model_state_dict.pt", "optim_state_dict.pt"):
        x, y = _by_name(ember.load(a / name)), _by_name(ember.load(b / name))
        assert _equal(x, y), f"{a / name} != {b / name}"


def _by_name(sd: dict) -> dict:
    """An optimizer state dict keyed by parameter position (the DTensor path saves
    ``optimizer.state_dict()``'s integer ids, the API path parameter names, in one order)."""
    if "param_groups" not in sd:
        return sd
    ids = [p for g in sd["param_groups"] for p in g["params"]]
    names = {p: f"param{i}" for i, p in enumerate(ids)}
    return {"state": {names[k]: v for k, v in sd["state"].items()},
            "param_groups": [{**g, "params": [names[p] for p in g["params"]]}
                             for g in sd["param_groups"]]}


def _equal(x, y) -> bool:
    import ember

    if isinstance(x, ember.Tensor):
        return isinstance(y, ember.Tensor) and x.dtype == y.dtype and ember.equal(x, y)
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_equal(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_equal(u, v) for u, v in zip(x, y))
    return x == y


def test_fsdp2_example_trains_saves_and_resumes(tmp_path):
    _needs_mpi()
    import shutil

    from testutils import upstream

    import ember

    example = upstream("pytorch/examples") / "distributed" / "FSDP2"
    work = tmp_path / "FSDP2"
    shutil.copytree(example, work)
    out = on_ember(2, FSDP2_DRIVER, cwd=work)
    assert "Transformer(" in out  # rank 0 printed the model (inspect_model)
    on_ember(2, FSDP2_DRIVER, "--dcp-api", cwd=work)
    by_hand, by_api = work / "checkpoints" / "dtensor_api", work / "checkpoints" / "dcp_api"
    first = _latest(by_hand)
    # the two ways of gathering the full state dicts give the same files
    _same_checkpoints(first, _latest(by_api))
    optim = ember.load(first / "optim_state_dict.pt")
    assert len(optim["state"]) == len(optim["param_groups"][0]["params"])
    assert all(s["step"].item() == 10 for s in optim["state"].values())
    # resumed runs (the DTensor path: distribute_tensor + load_state_dict(assign=True); the
    # API path: set_model/optimizer_state_dict broadcast from rank 0) continue alike
    on_ember(2, FSDP2_DRIVER, cwd=work)
    on_ember(2, FSDP2_DRIVER, "--dcp-api", cwd=work)
    second = _latest(by_hand)
    assert second != first
    _same_checkpoints(second, _latest(by_api))
    resumed = ember.load(second / "optim_state_dict.pt")
    assert all(s["step"].item() == 20 for s in resumed["state"].values())
    assert not _equal(ember.load(second / "model_state_dict.pt"),
                      ember.load(first / "model_state_dict.pt"))
    # mixed precision (bfloat16 compute, float32 shards) with explicit prefetching, resumed
    on_ember(2, FSDP2_DRIVER, "--dcp-api", "--mixed-precision", "--explicit-prefetching",
             cwd=work)
    model = ember.load(_latest(by_api) / "model_state_dict.pt")
    assert all(v.dtype == ember.float32 for v in model.values())


def test_pytorch_resumes_the_fsdp2_example_from_ember(tmp_path):
    pytest.importorskip("torch")
    _needs_mpi()
    import shutil

    from testutils import upstream

    work = tmp_path / "FSDP2"
    shutil.copytree(upstream("pytorch/examples") / "distributed" / "FSDP2", work)
    for flags in ((), ("--dcp-api",)):
        on_ember(2, FSDP2_DRIVER, *flags, cwd=work)
        on_pytorch(2, FSDP2_DRIVER, *flags, cwd=work)  # loads Ember's files, trains, saves
        on_ember(2, FSDP2_DRIVER, *flags, cwd=work)  # and Ember loads PyTorch's
    for folder in ("dtensor_api", "dcp_api"):
        assert len(list((work / "checkpoints" / folder).iterdir())) == 3
