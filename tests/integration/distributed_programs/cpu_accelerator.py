"""Run one of pytorch/examples' GPU-only distributed programs, unedited, on CPU ranks:
``python cpu_accelerator.py PROGRAM ARGS...`` (under a launcher), with ``torch.accelerator``
reporting the CPU as the accelerator. The tensor-parallel examples check
``torch.accelerator.is_available()`` / ``device_count()`` (they exit when there are fewer than
2 or 4 GPUs) and build their meshes on ``torch.accelerator.current_accelerator().type``; on
the CPU both libraries run the same meshes over their CPU process groups.
"""

import os
import runpy
import sys

import torch

torch.accelerator.is_available = lambda: True
torch.accelerator.device_count = lambda: int(os.environ.get("WORLD_SIZE", "1"))
torch.accelerator.current_accelerator = lambda check_available=False: torch.device("cpu")
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
