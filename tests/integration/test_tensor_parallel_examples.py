"""pytorch/examples' tensor-parallel programs (``distributed/tensor_parallelism``, unedited)
on CPU ranks, under Ember's launcher, as upstream's ``run_distributed_examples.sh`` runs them
(``torchrun --nproc_per_node=4 <program>``).

* ``tensor_parallel_example.py`` (a Megatron MLP by ``ColwiseParallel``/``RowwiseParallel``),
  ``sequence_parallel_example.py`` (its input and output sharded on the sequence dim) and
  ``fsdp_tp_example.py`` (a Llama-2 with tensor and sequence parallelism on the ``tp`` dim of
  a (dp, tp) mesh and FSDP2 on ``dp``) train their 10 AdamW steps on 4 ranks and print what
  they print on PyTorch. The programs are written for GPUs: a driver
  (``distributed_programs/cpu_accelerator.py``) answers their GPU-count check and makes
  ``torch.accelerator.current_accelerator()`` the CPU, for both libraries.
* The first two run on PyTorch the same way (where it is installed) and log the same lines.
  ``fsdp_tp_example.py`` does not run on PyTorch's CPU ranks at all: its attention fails with
  "Operator aten._scaled_dot_product_flash_attention_for_cpu.default does not have a sharding
  strategy registered".
* The Llama-2 of that example (``llama2_model.py``) under the example's plan on a 2 x 2 mesh
  computes what the same model computes in one process: logits, every gradient and the
  parameters after three AdamW steps (``distributed_programs/llama_2d_check.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from testutils import run_in_session, torchrun, upstream

PROGRAMS = Path(__file__).parent / "distributed_programs"
DRIVER = PROGRAMS / "cpu_accelerator.py"

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


def _needs_mpi() -> None:
    from mpi_launch import mpi_available

    if not mpi_available():
        pytest.skip("needs mpi4py and mpiexec (pip install 'ember-core[distributed]')")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The upstream folder, copied (the programs import their neighbours)."""
    src = upstream("pytorch/examples") / "distributed" / "tensor_parallelism"
    dst = tmp_path_factory.mktemp("tp") / "tensor_parallelism"
    shutil.copytree(src, dst)
    return dst


def _run(cmd: list, cwd: Path, timeout: float = 420) -> str:
    code, out, err = run_in_session(cmd, timeout, cwd=cwd, env={**os.environ})
    assert code == 0, (out + err)[-5000:]
    return out + err


def on_ember(n: int, cwd: Path, *args: str) -> str:
    return _run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(n),
                 "-m", "ember.as_torch", *args], cwd)


def on_pytorch(n: int, cwd: Path, program: str, *args: str) -> str:
    """On PyTorch's launcher, its ranks skipping the interpreter's teardown, where PyTorch's
    gloo now and then aborts (``testutils.torchrun``)."""
    return _run(torchrun(n, program, *args), cwd)


def _log(out: str, what: str) -> list[str]:
    """Rank 0's logged lines about ``what`` (the programs' ``rank_log``), timestamps dropped
    (the ranks' own prints interleave, so they are not compared)."""
    stamp = re.compile(r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d [AP]M\s+(.*)$")
    found = (stamp.match(line) for line in out.splitlines())
    return [m.group(1).strip() for m in found if m and what in m.group(1)]


EXPECTED = {
    "tensor_parallel_example.py": ("Tensor Parallel", "Starting PyTorch TP example on rank"),
    "sequence_parallel_example.py": ("Sequence Parallel",
                                     "Starting PyTorch Sequence Parallel example on rank"),
    "fsdp_tp_example.py": ("2D", "Starting PyTorch 2D (FSDP + TP) example on rank"),
}


@pytest.mark.parametrize("program", list(EXPECTED))
def test_tensor_parallel_example_runs(folder, program):
    _needs_mpi()
    out = on_ember(4, folder, str(DRIVER), program)
    what, start = EXPECTED[program]
    for r in range(4):
        assert f"{start} {r}." in out, out[-3000:]
    lines = _log(out, what)
    steps = [f"{what} iter {i} complete{'d' if what != '2D' else ''}" for i in range(10)]
    assert [line for line in lines if " iter " in line] == steps, lines
    assert lines[-1] == (f"{what} training completed!" if what != "2D"
                         else "2D training successfully completed!"), lines
    if what != "2D":
        assert f"{what} training starting..." in lines, lines
    pytest.importorskip("torch")
    if program == "fsdp_tp_example.py":
        return  # PyTorch's CPU ranks have no sharding strategy for its attention (above)
    theirs = on_pytorch(4, folder, str(DRIVER), program)
    assert _log(theirs, what) == lines, (_log(theirs, what), lines)
    assert "Device Mesh created: device_mesh=DeviceMesh(" in theirs and \
        "Device Mesh created: device_mesh=DeviceMesh(" in out


def test_llama_2d_parallel_matches_one_process(folder):
    _needs_mpi()
    out = on_ember(4, folder, str(PROGRAMS / "llama_2d_check.py"))
    found = re.search(r"max differences: logits (\S+), grad (\S+), param (\S+)", out)
    assert found, out[-3000:]
    logits, grad, param = (float(v) for v in found.groups())
    assert logits < 1e-5 and grad < 1e-5 and param < 1e-6, found.group(0)
    assert "wq.weight (_StridedShard(dim=0, sf=2), Shard(dim=0))" in out, out[-2000:]
    assert "attention.wq output (Shard(dim=2),)" in out, out[-2000:]
