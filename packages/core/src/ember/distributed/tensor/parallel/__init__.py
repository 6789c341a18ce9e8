"""Tensor parallelism: ``parallelize_module`` with PyTorch's parallel styles.

PyTorch's ``torch.distributed.tensor.parallel``. A plan maps submodule names (``"*"`` matches
one name segment: ``"layers.*.attn.q"``) to styles: ``ColwiseParallel`` shards a Linear's
weight by output rows (``Shard(0)``; an Embedding's by columns) and gives the output sharded
on its last dim; ``RowwiseParallel`` shards a Linear's weight by input columns (``Shard(1)``;
an Embedding's by rows), takes its input sharded on the last dim and gives a replicated
output (the partial products summed); ``SequenceParallel`` keeps a norm's or dropout's
activations sharded on the sequence dim with replicated parameters;
``PrepareModuleInput``/``PrepareModuleOutput`` redistribute a module's inputs/outputs.
Inputs given as plain tensors are read as the style's ``input_layouts``; outputs are returned
as local tensors when ``use_local_output``. The sharded Linear runs on the shards (the
column-wise one sums its input's gradient over the ranks), and so do the ops between the
parallel modules where a sharding rule covers them (views, attention by heads, reductions,
elementwise ops with replicated operands, embedding lookups, ...: a ``ColwiseParallel(
use_local_output=False)`` output reshaped to heads stays sharded up to a ``RowwiseParallel``);
other ops gather their operands (``ember.distributed.tensor._ops``).
"""

from __future__ import annotations

import contextlib
import fnmatch

from .._api import DTensor, _mesh_or_current, distribute_tensor
from ..placement_types import Placement, Replicate, Shard

__all__ = ["parallelize_module", "ParallelStyle", "ColwiseParallel", "RowwiseParallel",
           "SequenceParallel", "PrepareModuleInput", "PrepareModuleOutput",
           "PrepareModuleInputOutput", "loss_parallel"]


def _kind(module) -> str:
    name = type(module).__name__
    for base in type(module).__mro__:
        if base.__name__ in ("Linear", "Embedding"):
            return base.__name__
    return name


def _shard_param(module, name: str, mesh, placement, src_data_rank) -> None:
    p = module._parameters.get(name)
    if p is None or isinstance(p, DTensor):
        return
    dt = distribute_tensor(p.detach(), mesh, [placement], src_data_rank=src_data_rank)
    module.register_parameter(name, type(p)(dt, requires_grad=p.requires_grad))


def _replicate_params(module, mesh, src_data_rank) -> None:
    for name in list(module._parameters):
        _shard_param(module, name, mesh, Replicate(), src_data_rank)


def _output_hook(mesh, layouts: tuple, use_local: bool):
    """A forward hook placing a DTensor output as ``layouts`` (a local tensor if asked)."""

    def hook(mod, args, out):
        if isinstance(out, DTensor) and out.placements != layouts:
            out = out.redistribute(mesh, layouts)
        return out.to_local() if use_local and isinstance(out, DTensor) else out

    return hook


def _input_hook(mesh, given: Placement, desired: Placement):
    """A forward pre-hook reading the first input as ``given`` (a plain tensor is this
    rank's part) and redistributing it to ``desired``."""

    def hook(mod, args):
        if not args:
            return args
        x = _as_dtensor(args[0], mesh, given)
        want = Shard(desired.dim % x.ndim) if isinstance(desired, Shard) else desired
        if x.placements != (want,):
            x = x.redistribute(mesh, [want])
        return (x, *args[1:])

    return hook


def _as_dtensor(x, mesh, layout):
    if isinstance(x, DTensor):
        return x
    return DTensor.from_local(x, mesh, [layout], run_check=False)


class ParallelStyle:
    """The base of the styles: ``_apply(module, device_mesh)``."""

    src_data_rank: int | None = 0

    def _apply(self, module, device_mesh):
        raise TypeError(f"{type(self).__name__} is not a parallel style")


class ColwiseParallel(ParallelStyle):
    """A Linear's weight and bias ``Shard(0)`` (an Embedding's weight ``Shard(1)``): the input
    replicated, the output sharded on its last dim."""

    def __init__(self, *, input_layouts: Placement | None = None,
                 output_layouts: Placement | None = None, use_local_output: bool = True):
        self.input_layouts = input_layouts or Replicate()
        self.output_layouts = output_layouts or Shard(-1)
        self.desired_input_layouts = Replicate()
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        kind = _kind(module)
        if kind == "Linear":
            for name in ("weight", "bias"):
                _shard_param(module, name, device_mesh, Shard(0), self.src_data_rank)
        elif kind == "Embedding":
            _shard_param(module, "weight", device_mesh, Shard(1), self.src_data_rank)
        else:
            raise NotImplementedError("ColwiseParallel currently only support nn.Linear and "
                                      "nn.Embedding!")

        module.register_forward_pre_hook(_input_hook(device_mesh, self.input_layouts,
                                                     self.desired_input_layouts))
        module.register_forward_hook(_output_hook(device_mesh, (self.output_layouts,),
                                                  self.use_local_output))
        return module


class RowwiseParallel(ParallelStyle):
    """A Linear's weight ``Shard(1)`` with a replicated bias (an Embedding's weight
    ``Shard(0)``): the input sharded on its last dim, the output replicated."""

    def __init__(self, *, input_layouts: Placement | None = None,
                 output_layouts: Placement | None = None, use_local_output: bool = True):
        self.input_layouts = input_layouts or Shard(-1)
        self.output_layouts = output_layouts or Replicate()
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        kind = _kind(module)
        if kind == "Linear":
            _shard_param(module, "weight", device_mesh, Shard(1), self.src_data_rank)
            _shard_param(module, "bias", device_mesh, Replicate(), self.src_data_rank)
            desired = Shard(-1)
        elif kind == "Embedding":
            _shard_param(module, "weight", device_mesh, Shard(0), self.src_data_rank)
            desired = Replicate()
        else:
            raise NotImplementedError("RowwiseParallel currently only support nn.Linear and "
                                      "nn.Embedding!")

        module.register_forward_pre_hook(_input_hook(device_mesh, self.input_layouts,
                                                     desired))
        module.register_forward_hook(_output_hook(device_mesh, (self.output_layouts,),
                                                  self.use_local_output))
        return module


class SequenceParallel(ParallelStyle):
    """A norm's or dropout's parameters replicated, its input and output sharded on
    ``sequence_dim``."""

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False):
        self.sequence_sharding = (Shard(sequence_dim),)
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        _replicate_params(module, device_mesh, self.src_data_rank)
        seq = self.sequence_sharding

        module.register_forward_pre_hook(_input_hook(device_mesh, seq[0], seq[0]))
        module.register_forward_hook(_output_hook(device_mesh, seq, self.use_local_output))
        return module


def _prepare(values, layouts, desired, mesh, use_local):
    if layouts is None:
        return values
    single = not isinstance(values, tuple)
    items = (values,) if single else values
    layouts = layouts if isinstance(layouts, (list, tuple)) else (layouts,)
    desired = desired if isinstance(desired, (list, tuple)) else (desired,)
    if len(layouts) != len(desired):
        raise ValueError("module inputs and desired_input_layouts should have same length!")
    if len(items) != len(layouts):
        raise ValueError(f"module inputs and input_layouts should have same length! got "
                         f"{len(items)} inputs and {len(layouts)} layouts")
    out = []
    for x, have, want in zip(items, layouts, desired):
        if have is None or x is None:
            out.append(x)
            continue
        d = _as_dtensor(x, mesh, have)
        if want is not None and d.placements != (want,):
            d = d.redistribute(mesh, [want])
        out.append(d.to_local() if use_local else d)
    return out[0] if single else tuple(out)


class PrepareModuleInput(ParallelStyle):
    """Read a module's inputs as ``input_layouts`` and redistribute them to
    ``desired_input_layouts`` (positional, and by keyword with the ``*_kwarg_*`` dicts)."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_output: bool = False):
        self.input_layouts = input_layouts
        self.desired_input_layouts = desired_input_layouts
        self.input_kwarg_layouts = input_kwarg_layouts or {}
        self.desired_input_kwarg_layouts = desired_input_kwarg_layouts or {}
        self.use_local_output = use_local_output
        if (input_layouts is None) != (desired_input_layouts is None):
            raise AssertionError("input_layouts and desired_input_layouts should be both "
                                 "None or both set")

    def _apply(self, module, device_mesh):
        def hook(mod, args, kwargs):
            args = _prepare(tuple(args), self.input_layouts, self.desired_input_layouts,
                            device_mesh, self.use_local_output) \
                if self.input_layouts is not None else args
            kwargs = dict(kwargs)
            for key, have in self.input_kwarg_layouts.items():
                if key in kwargs:
                    kwargs[key] = _prepare(kwargs[key], have,
                                           self.desired_input_kwarg_layouts.get(key, have),
                                           device_mesh, self.use_local_output)
            return args, kwargs

        module.register_forward_pre_hook(hook, with_kwargs=True)
        return module


class PrepareModuleOutput(ParallelStyle):
    """Read a module's outputs as ``output_layouts`` and redistribute them to
    ``desired_output_layouts``."""

    def __init__(self, *, output_layouts, desired_output_layouts,
                 use_local_output: bool = True):
        self.output_layouts = output_layouts
        self.desired_output_layouts = desired_output_layouts
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        def hook(mod, args, out):
            return _prepare(out, self.output_layouts, self.desired_output_layouts,
                            device_mesh, self.use_local_output)

        module.register_forward_hook(hook)
        return module


class PrepareModuleInputOutput(ParallelStyle):
    """``PrepareModuleInput`` and ``PrepareModuleOutput`` on one module."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_input: bool = False, output_layouts=None,
                 desired_output_layouts=None, use_local_output: bool = True):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts, desired_input_layouts=desired_input_layouts,
            input_kwarg_layouts=input_kwarg_layouts,
            desired_input_kwarg_layouts=desired_input_kwarg_layouts,
            use_local_output=use_local_input)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts, desired_output_layouts=desired_output_layouts,
            use_local_output=use_local_output)

    def _apply(self, module, device_mesh):
        self.prepare_module_input._apply(module, device_mesh)
        self.prepare_module_output._apply(module, device_mesh)
        return module


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *,
                       src_data_rank: int | None = 0):
    """Apply ``parallelize_plan`` (a style, or ``{submodule name pattern: style}``) over the
    1-d ``device_mesh``. Returns ``module``."""
    mesh = _mesh_or_current(device_mesh)
    if mesh.ndim != 1:
        raise ValueError(f"Tensor Parallel only accepts a 1D DeviceMesh, but found "
                         f"{mesh.ndim}D! If you have a 2-D or N-D device_mesh, consider "
                         f"passing in device_mesh[\"tp\"]")
    if parallelize_plan is None:
        import warnings

        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at "
                      "the moment, so this parallelize_module call will do nothing.",
                      stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for "
                        f"parallelize_plan, {type(parallelize_plan)} found!")
    for pattern, style in parallelize_plan.items():
        parts = pattern.split(".")
        if not parts or any(not p for p in parts):
            raise ValueError(f"Expect module path to be non-empty, but got {pattern!r}.")
        matched = [m for name, m in module.named_modules()
                   if name and len(name.split(".")) == len(parts)
                   and all(fnmatch.fnmatchcase(a, b) for a, b in zip(name.split("."), parts))]
        if not matched:
            raise ValueError(f"parallelize_plan: no submodule matches {pattern!r}")
        for sub in matched:
            parallelize_module(sub, mesh, style, src_data_rank=src_data_rank)
    return module


@contextlib.contextmanager
def loss_parallel():
    """PyTorch's context for a cross-entropy of logits sharded on the class dim. Ember's
    ``cross_entropy`` of such a DTensor already runs (on the gathered logits), so the context
    only marks the region."""
    yield

