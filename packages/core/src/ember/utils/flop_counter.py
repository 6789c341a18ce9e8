"""``ember.utils.flop_counter``: count the FLOPs a region runs (``torch.utils.flop_counter``).

::

    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    counter.get_total_flops()       # forward and backward
    counter.get_flop_counts()       # {"Global": {aten.mm: ...}, "Net.fc1": {...}, ...}
    print(counter.get_table(depth=2))

PyTorch counts at its dispatcher, after its composite ops have decomposed into ATen kernels,
and has formulas for the matrix products (``aten.mm``, ``addmm``, ``bmm``, ``baddbmm``),
convolutions (``aten.convolution`` and its backward) and attention. Ember's ops are coarser
(``linear``, ``matmul``, ``einsum`` are ops of their own), so each op that does such work is
*lowered* here into the ATen calls PyTorch's decomposition makes (``linear`` of a 3-d input
with a bias is an ``aten.addmm`` over the folded rows, ``matmul`` follows ATen's rules for
when to fold into ``mm``, use ``bmm``, or call ``mv``/``dot``, which PyTorch does not count,
``einsum`` contracts pairwise with ``bmm``, ``tensordot`` is an ``mm``), and the same
formulas (the functions below, registered per packet in ``flop_registry``) count them; the
backward of each is counted when the autograd engine runs its node (``mm`` for each input of
a product that requires grad, ``aten.convolution_backward`` with PyTorch's output mask). The
counts, their keys (``ember.ops.aten`` packets, printed as ``aten.mm``) and the per-module
table (``ModuleTracker``'s names: ``"Net.layer1.0.conv1"``) are PyTorch's.

Where Ember differs: ``scaled_dot_product_attention`` is counted with PyTorch's attention
formulas (its two batched products forward, five backward), under
``aten._scaled_dot_product_flash_attention`` and its backward, as PyTorch counts them on a
GPU; PyTorch's CPU build runs a kernel without a formula and counts 0 there. The recurrent
layers (``nn.RNN``/``LSTM``/``GRU``) count their input projections and the recurrence as
PyTorch's native CPU path does (per step an ``addmm``, backward ``mm``); PyTorch's CPU build
runs an LSTM without projection through oneDNN and counts 0 for it. The cells count their two
products as PyTorch's do.
``nn.MultiheadAttention(batch_first=True)``'s input projection is one ``addmm`` here, where
PyTorch's projects the transposed input with an ``mm`` and adds the bias (the same count
under another key). ``bilinear``, ``addmv``, ``addbmm``, ``mv`` and ``dot`` count 0, as in
PyTorch. A formula given in ``custom_mapping`` or with ``register_flop_formula(...,
get_raw=True)`` receives shapes, not tensors. Other ops run with the counter still active
inside, so a composite written with ember ops is counted through the ops it calls.
"""

from __future__ import annotations

import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable
from functools import wraps
from math import prod
from typing import Any

from .._tensor import Tensor
from ..autograd.graph import peek_sequence_nr
from ..overrides import TorchFunctionMode, undispatched
from ._pytree import tree_map
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]


# -- keys --------------------------------------------------------------------------------------

def _packet(name: str):
    """``ember.ops.aten.<name>``; a packet of that name for the ATen ops Ember does not run
    (``convolution_backward``, the attention kernels), which keys and prints the same."""
    from .._library.ops import OpOverloadPacket
    from ..ops import aten

    try:
        return getattr(aten, name)
    except AttributeError:
        packet = _EXTRA_PACKETS.get(name)
        if packet is None:
            packet = _EXTRA_PACKETS[name] = OpOverloadPacket("aten", name)
        return packet


_EXTRA_PACKETS: dict = {}


class _Aten:
    """``aten.<name>`` for the formulas below (PyTorch's ``aten = torch.ops.aten``)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        packet = _packet(name)
        setattr(self, name, packet)  # (found once: the lowerings name packets on every call)
        return packet


aten = _Aten()


# -- formulas (PyTorch's, over shapes) --------------------------------------------------------

def get_shape(i):
    """A tensor's shape; anything else as it is."""
    if isinstance(i, Tensor):
        return i.shape
    return i


flop_registry: dict[Any, Any] = {}


def shape_wrapper(f):
    """``f(*shapes, out_shape=...)`` as a formula over the op's arguments and output."""

    @wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)

    return nf


def register_flop_formula(targets, get_raw: bool = False) -> Callable:
    """Register a FLOP formula for an op packet (or a list of packets) in ``flop_registry``:
    ``formula(*arg_shapes, out_shape=..., **kwargs) -> int``."""
    from .._library.ops import OpOverloadPacket

    def register_fun(flop_formula):
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)

        def register(target) -> None:
            if not isinstance(target, OpOverloadPacket):
                raise ValueError(
                    f"register_flop_formula(targets): expected each target to be "
                    f"OpOverloadPacket (i.e. torch.ops.mylib.foo), JitFunction, "
                    f"or HigherOrderOperator, got {target} which is of type {type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = flop_formula

        for target in (targets if isinstance(targets, (list, tuple)) else [targets]):
            register(target)
        return flop_formula

    return register_fun


def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for addmm."""
    return mm_flop(a_shape, b_shape)


def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the baddbmm operation."""
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """Count flops for convolution: multiplications and additions of the products, not the
    bias; a transposed convolution counts per point of its input, not its output."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs) -> int:
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


def _t(shape):
    return [shape[1], shape[0]] + list(shape[2:])


def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape,
                       **kwargs) -> int:
    """Count flops for the backward of a convolution: the input's gradient is a transposed
    convolution of the output's, the weight's a convolution of the input by it."""
    flop_count = 0
    if output_mask[0]:
        grad_input_shape = get_shape(out_shape[0])
        flop_count += conv_flop_count(grad_out_shape, w_shape, grad_input_shape,
                                      not transposed)
    if output_mask[1]:
        grad_weight_shape = get_shape(out_shape[1])
        if transposed:
            flop_count += conv_flop_count(_t(grad_out_shape), _t(x_shape),
                                          _t(grad_weight_shape), transposed=False)
        else:
            flop_count += conv_flop_count(_t(x_shape), _t(grad_out_shape),
                                          _t(grad_weight_shape), transposed=False)
    return flop_count


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention (grouped-query attention included)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    return (bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
            + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v)))


def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for self-attention (a causal mask is not discounted)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Count flops for the backward of self-attention: the scores recomputed, then the
    gradients of the two products."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a "
                             f"multiple of key/value heads ({h_kv})")
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError(
            "sdpa_backward_flop_count: grad_out/value/key/query shapes are incompatible")
    bh = b * h_q
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k))
            + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
            + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v))
            + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
            + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))


def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs) -> int:
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def _register_builtin() -> None:
    for targets, formula in (
            (aten.mm, mm_flop), (aten.addmm, addmm_flop), (aten.bmm, bmm_flop),
            (aten.baddbmm, baddbmm_flop),
            ([aten.convolution, aten._convolution], conv_flop),
            (aten.convolution_backward, conv_backward_flop),
            ([aten._scaled_dot_product_efficient_attention,
              aten._scaled_dot_product_flash_attention,
              aten._scaled_dot_product_cudnn_attention], sdpa_flop),
            ([aten._scaled_dot_product_efficient_attention_backward,
              aten._scaled_dot_product_flash_attention_backward,
              aten._scaled_dot_product_cudnn_attention_backward], sdpa_backward_flop)):
        register_flop_formula(targets)(formula)


_register_builtin()


# -- table formatting --------------------------------------------------------------------------

def normalize_tuple(x):
    if not isinstance(x, tuple):
        return (x,)
    return x


suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number) -> str:
    """The suffix that shows ``number`` with 1-3 digits before the point (4 for 1,001K)."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number, suffix: str) -> str:
    index = suffixes.index(suffix)
    value = f"{number / 1000 ** index:.3f}"
    return value + suffixes[index]


def convert_to_percent_str(num, denom) -> str:
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _table(rows: list, header: list) -> str:
    """``tabulate(rows, headers=header, colalign=("left", "right", "right"))`` as PyTorch
    prints it (tabulate's "simple" format: cells stripped, a column of numbers printed with
    ``g``, two spaces between columns, each at least its header plus two wide)."""
    columns = list(zip(*rows))
    for c, column in enumerate(columns):
        cells = [str(v).strip() for v in column]
        if all(_is_number(v) for v in cells):
            cells = [format(float(v), "g") for v in cells]
        columns[c] = cells
    widths = [max([len(header[c]) + 2] + [len(v) for v in columns[c]])
              for c in range(len(header))]

    def line(cells):
        out = [cells[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(cells[1:], widths[1:])]
        return "  ".join(out).rstrip()

    lines = [line(header), "  ".join("-" * w for w in widths)]
    lines += [line([columns[c][r] for c in range(len(header))]) for r in range(len(rows))]
    return "\n".join(lines)


# -- the counter -------------------------------------------------------------------------------

class FlopCounterMode:
    """A context manager that counts the FLOPs run inside it, forward and backward, per
    op and per module (see the module's doc for how they are counted).

    ``depth`` is how deep the printed table goes in the module hierarchy; ``display`` prints
    it on exit; ``custom_mapping`` maps op packets to formulas of one's own (over shapes).
    ``mods`` is accepted and ignored with PyTorch's warning (modules are found as they run).
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict | None = None) -> None:
        self.flop_counts: dict = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode: _FlopCounterMode | None = None
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.flop_registry = {
            **flop_registry,
            **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
               for k, v in custom_mapping.items()},
        }
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """The counts as ``{module name: {op packet: flops}}``, with ``"Global"`` for all."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts per module down to ``depth`` (default: the counter's) and per op, as
        PyTorch's table."""
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        header = ["Module", "FLOP", "% Total"]
        values: list = []
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name: str, depth: int) -> list:
            nonlocal is_global_subsumed
            total_flops = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total_flops >= global_flops
            padding = " " * depth
            rows = [[padding + mod_name, convert_num_with_suffix(total_flops, global_suffix),
                     convert_to_percent_str(total_flops, global_flops)]]
            for k, v in self.flop_counts[mod_name].items():
                rows.append([padding + " - " + str(k),
                             convert_num_with_suffix(v, global_suffix),
                             convert_to_percent_str(v, global_flops)])
            return rows

        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        if "Global" in self.flop_counts and not is_global_subsumed:
            values = process_mod("Global", 0) + values
        if len(values) == 0:
            values = [["Global", "0", "0%"]]
        return _table(values, header)

    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        if self.mode is None:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        b = self.mode.__exit__(*args)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return b

    def _count_flops(self, func_packet, out, args, kwargs):
        """Count one ATen call (``args`` may be shapes): its formula, to every module that
        runs now."""
        if func_packet in self.flop_registry:
            flop_count = self.flop_registry[func_packet](*args, **kwargs, out_val=out)
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += flop_count
        return out


class _FlopCounterMode(TorchFunctionMode):
    """Sees this thread's op calls (counting the lowered ATen calls of those with work to
    count) and the backward nodes of the counted ones."""

    #: ember-nn's recurrent layers run through dispatch while this mode is on
    _ember_sees_fused_layers = True

    def __init__(self, counter: FlopCounterMode) -> None:
        self.counter = counter
        self.pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._outer = None
        self._depth = 0
        self._quiet = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._quiet:  # a counted node's backward: its work is counted already
            return func(*args, **kwargs)
        lower = _LOWERINGS.get(getattr(func, "__name__", None))
        if lower is None:
            packet = _packet_of(func)
            if packet is not None and packet in self.counter.flop_registry:
                out = func(*args, **kwargs)
                self.counter._count_flops(packet, tree_map(get_shape, out),
                                          tree_map(get_shape, tuple(args)),
                                          tree_map(get_shape, kwargs))
                return out
            original = undispatched(func)
            if original is None:
                return func(*args, **kwargs)
            with self:  # inside, the ops a composite calls are seen (and counted) too
                return original(*args, **kwargs)
        start = peek_sequence_nr()
        out = func(*args, **kwargs)
        forward, backward = lower(args, kwargs, out)
        for packet, shapes, extra, out_shape in forward:
            self.counter._count_flops(packet, out_shape, shapes, extra)
        node = _grad_fn(out)
        if node is not None and node.seq >= start:
            # the op's own nodes (a view of a product, ...) run its backward: the first has
            # its backward's calls, all are quiet (see backward_node)
            self.pending[node] = backward
            stack = [node]
            while stack:
                for nxt, _ in stack.pop().next_functions:
                    if nxt is not None and nxt.seq >= start and nxt not in self.pending:
                        self.pending[nxt] = ()
                        stack.append(nxt)
        return out

    # the autograd engine's recorder protocol (autograd/engine.py), chained to a profiler's
    def backward_node(self, node, grad):
        outer = self._outer
        calls = self.pending.get(node)
        # the ops a counted node's backward calls (Ember writes many backward formulas with
        # its ops) are not counted again: the node's calls are PyTorch's backward kernels
        quiet = calls is not None
        self._quiet += quiet
        try:
            out = outer.backward_node(node, grad) if outer is not None else node.backward(grad)
        finally:
            self._quiet -= quiet
        if out.__class__ is not tuple:
            out = (out,)
        if calls:
            for packet, shapes, extra, out_shape in calls:
                self.counter._count_flops(packet, out_shape, shapes, extra)
        return out

    def accumulate_leaf(self, accumulate, node, grad, create_graph, taken) -> None:
        outer = self._outer
        if outer is not None:
            outer.accumulate_leaf(accumulate, node, grad, create_graph, taken)
        else:
            accumulate(node, grad, create_graph, taken)

    def __enter__(self):
        super().__enter__()
        self._depth += 1  # (entered again inside its own handler: see __torch_function__)
        if self._depth == 1:
            from ..autograd import engine, profiler

            self._outer = getattr(engine.PROFILED, "recorder", None)
            engine.PROFILED.recorder = self
            profiler._ACTIVE[0] += 1
            engine.PROFILING[0] = True
        return self

    def __exit__(self, *exc):
        result = super().__exit__(*exc)
        self._depth -= 1
        if self._depth == 0:
            from ..autograd import engine, profiler

            if getattr(engine.PROFILED, "recorder", None) is self:
                engine.PROFILED.recorder = self._outer
            self._outer = None
            profiler._ACTIVE[0] -= 1
            engine.PROFILING[0] = profiler._ACTIVE[0] > 0
        return result


def _packet_of(func):
    """The op packet of a custom op's overload (``ember.ops.<ns>.<name>``), or None."""
    from .. import ops
    from .._library.ops import OpOverload, OpOverloadPacket

    if isinstance(func, OpOverloadPacket):
        return func
    if isinstance(func, OpOverload):
        try:
            return getattr(getattr(ops, func._opdef.ns), func._opname)
        except AttributeError:
            return None
    return None


def _grad_fn(out):
    """The node of an op's (first) result."""
    if isinstance(out, (tuple, list)) and out:
        out = out[0]
    if isinstance(out, Tensor):
        return out.grad_fn
    return None


# -- lowerings: an ember op -> the ATen calls PyTorch's decomposition makes -----------------
# Each returns (forward calls, backward calls); a call is (packet, arg shapes, kwargs,
# out shape), counted by the packet's formula in the counter's registry.

def _rg(t) -> bool:
    return isinstance(t, Tensor) and t.requires_grad


def _mm_calls(m: int, k: int, n: int, a_rg: bool, b_rg: bool, bias: bool):
    fwd = [(aten.addmm if bias else aten.mm,
            ((m, n), (m, k), (k, n)) if bias else ((m, k), (k, n)), {}, (m, n))]
    bwd = []
    if a_rg:
        bwd.append((aten.mm, ((m, n), (n, k)), {}, (m, k)))
    if b_rg:
        bwd.append((aten.mm, ((k, m), (m, n)), {}, (k, n)))
    return fwd, bwd


def _bmm_calls(b: int, m: int, k: int, n: int, a_rg: bool, b_rg: bool, packet=None):
    fwd = [(packet or aten.bmm, ((b, m, k), (b, k, n)), {}, (b, m, n))]
    if packet is aten.baddbmm:
        fwd = [(packet, ((b, m, n), (b, m, k), (b, k, n)), {}, (b, m, n))]
    bwd = []
    if a_rg:
        bwd.append((aten.bmm, ((b, m, n), (b, n, k)), {}, (b, m, k)))
    if b_rg:
        bwd.append((aten.bmm, ((b, k, m), (b, m, n)), {}, (b, k, n)))
    return fwd, bwd


_NONE: tuple = ((), ())


def _lower_mm(args, kwargs, out):
    a, b = _operands(args, kwargs, ("input", "mat2"))
    (m, k), (_, n) = a.shape, b.shape
    return _mm_calls(m, k, n, _rg(a), _rg(b), False)


def _lower_addmm(args, kwargs, out):
    bias, a, b = _operands(args, kwargs, ("input", "mat1", "mat2"))
    (m, k), (_, n) = a.shape, b.shape
    return _mm_calls(m, k, n, _rg(a), _rg(b), True)


def _lower_bmm(args, kwargs, out):
    a, b = _operands(args, kwargs, ("input", "mat2"))
    (bs, m, k), (_, _, n) = a.shape, b.shape
    return _bmm_calls(bs, m, k, n, _rg(a), _rg(b))


def _lower_baddbmm(args, kwargs, out):
    _, a, b = _operands(args, kwargs, ("input", "batch1", "batch2"))
    (bs, m, k), (_, _, n) = a.shape, b.shape
    return _bmm_calls(bs, m, k, n, _rg(a), _rg(b), aten.baddbmm)


def _operands(args, kwargs, names):
    values = list(args[:len(names)])
    for name in names[len(values):]:
        values.append(kwargs[name])
    return values


def _lower_linear(args, kwargs, out):
    """ATen's ``linear``: with a bias, an ``addmm`` over the input's folded rows when the
    input is 2-d or contiguous; otherwise ``matmul(input, weight.t())`` (and the bias added,
    uncounted)."""
    x, w = _operands(args, kwargs, ("input", "weight"))
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    n, k = w.shape
    if bias is not None and (x.dim() == 2 or x.is_contiguous()):
        m = prod(x.shape[:-1]) if x.dim() > 1 else 1
        return _mm_calls(m, k, n, _rg(x), _rg(w), True)
    return _lower_matmul_pair(x, _Layout.of(w).mT, b_rg=_rg(w))


def _fold_ok(t) -> bool:
    """``t.view(-1, t.size(-1))`` needs no copy (ATen's test in ``should_fold``)."""
    if t.numel() == 0:
        return True
    shape, strides = t.shape, t.stride()
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t.dim() - 2))


def _lower_matmul_pair(a, b, b_rg=None):
    """ATen's ``matmul``: dot and mv are not counted; a fold into ``mm`` when the larger
    operand's rows can be flattened without a copy; ``bmm`` over the broadcast batch
    otherwise. (``b_rg``: whether ``b`` requires grad, when ``b`` stands in for another.)"""
    da, db = a.dim(), b.dim()
    a_rg = _rg(a)
    b_rg = _rg(b) if b_rg is None else b_rg
    if da == 1 and db == 1 or da == 2 and db == 1:
        return _NONE
    if da == 1 and db == 2:
        return _mm_calls(1, a.shape[0], b.shape[1], a_rg, b_rg, False)
    if da == 2 and db == 2:
        return _mm_calls(a.shape[0], a.shape[1], b.shape[1], a_rg, b_rg, False)
    if _should_fold(a, b, b_rg):
        if da >= db:  # a's rows folded: mm (or mv for a vector b: not counted)
            if db == 1:
                return _NONE
            return _mm_calls(prod(a.shape[:-1]), a.shape[-1], b.shape[-1], a_rg, b_rg, False)
        if da == 1:  # b^T folded against a vector: mv
            return _NONE
        # a (2-d) @ b (n-d) folded through b^T: an mm of b's folded columns by a^T
        n, k = a.shape
        cols = prod(b.shape[:-2]) * b.shape[-1]
        return _mm_calls(cols, k, n, b_rg, a_rg, False)
    batch_a = a.shape[:-2] if da > 2 else ()
    batch_b = b.shape[:-2] if db > 2 else ()
    batch = prod(_broadcast(tuple(batch_a), tuple(batch_b)))
    m = a.shape[-2] if da > 1 else 1
    k = a.shape[-1]
    n = b.shape[-1] if db > 1 else 1
    return _bmm_calls(batch, m, k, n, a_rg, b_rg)


def _broadcast(s1: tuple, s2: tuple) -> tuple:
    n = max(len(s1), len(s2))
    s1, s2 = (1,) * (n - len(s1)) + s1, (1,) * (n - len(s2)) + s2
    return tuple(max(x, y) for x, y in zip(s1, s2))


class _Layout:
    """A tensor's shape and strides, for the lowerings' questions (no tensor is made: an
    enclosing profiler would record its making)."""

    __slots__ = ("shape", "_strides")

    def __init__(self, shape: tuple, strides: tuple) -> None:
        self.shape, self._strides = shape, strides

    @classmethod
    def of(cls, t) -> _Layout:
        return cls(tuple(t.shape), tuple(t.stride()))

    def dim(self) -> int:
        return len(self.shape)

    def stride(self) -> tuple:
        return self._strides

    def numel(self) -> int:
        return prod(self.shape)

    @property
    def mT(self) -> _Layout:
        return _Layout(self.shape[:-2] + self.shape[-2:][::-1],
                       self._strides[:-2] + self._strides[-2:][::-1])


def _should_fold(a, b, b_rg: bool) -> bool:
    larger_first = a.dim() >= b.dim()
    t1 = a if larger_first else _Layout.of(b).mT if isinstance(b, Tensor) else b.mT
    dim_t2 = b.dim() if larger_first else a.dim()
    if not (t1.dim() >= 3 and dim_t2 <= 2):
        return False
    if b_rg:
        return True
    if a.dim() == 2:
        return False
    return _fold_ok(t1)


def _lower_matmul(args, kwargs, out):
    a, b = _operands(args, kwargs, ("input", "other"))
    return _lower_matmul_pair(a, b)


def _lower_rmatmul(args, kwargs, out):
    b, a = args[0], args[1]
    return _lower_matmul_pair(a, b)


def _lower_conv(transposed: bool):
    def lower(args, kwargs, out):
        x, w = _operands(args, kwargs, ("input", "weight"))
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        if not isinstance(out, Tensor):
            return _NONE
        x_shape, w_shape, o_shape = tuple(x.shape), tuple(w.shape), tuple(out.shape)
        unbatched = x.dim() == w.dim() - 1
        if unbatched:  # PyTorch runs an unbatched input as a batch of one
            x_shape, o_shape = (1,) + x_shape, (1,) + o_shape
        conv_args = (x_shape, w_shape, None if bias is None else tuple(bias.shape), None, None,
                     None, transposed, None, None)
        fwd = [(aten.convolution, conv_args, {}, o_shape)]
        mask = [_rg(x), _rg(w), _rg(bias)]
        bwd = []
        if mask[0] or mask[1]:
            bwd_args = (o_shape, x_shape, w_shape, None, None, None, None, transposed, None,
                        None, mask)
            bwd = [(aten.convolution_backward, bwd_args, {},
                    (x_shape if mask[0] else None, w_shape if mask[1] else None, None))]
        return fwd, bwd

    return lower


def _lower_sdpa(args, kwargs, out):
    q, k, v = _operands(args, kwargs, ("query", "key", "value"))

    def four(shape):  # any leading dims are batch (and heads)
        shape = tuple(shape)
        if len(shape) == 4:
            return shape
        if len(shape) == 3:
            return (1,) + shape
        return (prod(shape[:-3]),) + shape[-3:]

    qs, ks, vs = four(q.shape), four(k.shape), four(v.shape)
    if qs[1] != ks[1] and not kwargs.get("enable_gqa", False):
        return _NONE
    o = (qs[0], qs[1], qs[2], vs[3])
    fwd = [(aten._scaled_dot_product_flash_attention, (qs, ks, vs), {}, o)]
    bwd = []
    if _rg(q) or _rg(k) or _rg(v):
        bwd = [(aten._scaled_dot_product_flash_attention_backward, (o, qs, ks, vs), {},
                (qs, ks, vs))]
    return fwd, bwd


def _lower_tensordot(args, kwargs, out):
    a, b = _operands(args, kwargs, ("a", "b"))
    dims = args[2] if len(args) > 2 else kwargs.get("dims", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        dims_a = list(range(a.dim() - dims, a.dim()))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    dims_a = [d % a.dim() for d in dims_a] if a.dim() else []
    dims_b = [d % b.dim() for d in dims_b] if b.dim() else []
    k = prod(a.shape[d] for d in dims_a)
    m = prod(s for i, s in enumerate(a.shape) if i not in dims_a)
    n = prod(s for i, s in enumerate(b.shape) if i not in dims_b)
    return _mm_calls(m, k, n, _rg(a), _rg(b), False)


def _lower_einsum(args, kwargs, out):
    """Pairwise from the left (PyTorch without opt_einsum): each pair is one ``bmm`` over
    the indices both share and keep (batch), the kept ones of each (rows, columns) and the
    shared ones summed (inner); an index only one side has and nothing needs later is summed
    beforehand, uncounted."""
    if not args:
        return _NONE
    equation = args[0].replace(" ", "")
    operands = list(args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    if len(operands) < 2 or "..." in equation:
        return _NONE
    if "->" in equation:
        lhs, output = equation.split("->")
    else:
        lhs = equation
        letters = lhs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = lhs.split(",")
    if len(terms) != len(operands):
        return _NONE
    sizes: dict = {}
    for term, t in zip(terms, operands):
        for c, s in zip(term, t.shape):
            sizes[c] = max(sizes.get(c, 1), s)
    fwd: list = []
    bwd: list = []
    left, left_rg = terms[0], _rg(operands[0])
    for i in range(1, len(terms)):
        right, right_rg = terms[i], _rg(operands[i])
        later = set(output).union(*terms[i + 1:])
        la, ra = set(left), set(right)
        batch = [c for c in left if c in ra and c in later]
        inner = [c for c in left if c in ra and c not in later]
        rows = [c for c in left if c not in ra and c in later]
        cols = [c for c in right if c not in la and c in later]
        b = prod(sizes[c] for c in batch)
        m = prod(sizes[c] for c in rows)
        k = prod(sizes[c] for c in inner)
        n = prod(sizes[c] for c in cols)
        f, bw = _bmm_calls(b, m, k, n, left_rg, right_rg)
        fwd += f
        bwd += bw
        left = "".join(batch + rows + cols)
        left_rg = left_rg or right_rg
    return fwd, bwd


def _lower_recurrent_layer(args, kwargs, out):
    """ember-nn's fused recurrent layer (one layer and direction of ``nn.RNN``/``LSTM``/
    ``GRU``, its input projection counted before it as a ``linear``), as PyTorch's own
    (native) CPU path computes it: per time step the hidden product, an ``addmm`` with the
    hidden bias (an ``mm`` without), and an LSTM's projection (``mm``); backward, per step,
    the gradient of the previous hidden state (not at the first step when the initial state
    needs none) and of the weights (``mm``)."""
    mode, xw, h0, c0, w, b, w_hr, batch_sizes, reverse = args[:9]
    steps = [int(n) for n in batch_sizes]
    if reverse:  # (in the order they run: the first starts from h0)
        steps.reverse()
    g, p = w.shape
    hidden = g // 4 if mode == "LSTM" else g // 3 if mode == "GRU" else g
    fwd: list = []
    bwd: list = []
    any_rg = any(_rg(t) for t in (xw, h0, c0, w, b, w_hr))
    h0_rg = _rg(h0) or _rg(c0)
    for i, n in enumerate(steps):
        if b is not None:
            fwd.append((aten.addmm, ((n, g), (n, p), (p, g)), {}, (n, g)))
        else:
            fwd.append((aten.mm, ((n, p), (p, g)), {}, (n, g)))
        if w_hr is not None:
            fwd.append((aten.mm, ((n, hidden), (hidden, p)), {}, (n, p)))
        if not any_rg:
            continue
        if w_hr is not None:
            bwd.append((aten.mm, ((n, p), (p, hidden)), {}, (n, hidden)))
            if _rg(w_hr):
                bwd.append((aten.mm, ((p, n), (n, hidden)), {}, (p, hidden)))
        if i > 0 or h0_rg:
            bwd.append((aten.mm, ((n, g), (g, p)), {}, (n, p)))
        if _rg(w):
            bwd.append((aten.mm, ((g, n), (n, p)), {}, (g, p)))
    return fwd, bwd


def _lower_cell(args, kwargs, out):
    """ember-nn's fused cells (``nn.RNNCell``/``LSTMCell``/``GRUCell``): PyTorch's cell is the
    input's and the hidden state's ``linear`` (an ``addmm`` each with its bias, an ``mm``
    without; a missing hidden state is zeros, still multiplied), and their backward."""
    x, h, _c, w_ih, w_hh, b_ih, b_hh = args[:7]
    m = x.shape[0] if x.dim() == 2 else 1
    g, i = w_ih.shape
    p = w_hh.shape[1]
    f1, b1 = _mm_calls(m, i, g, _rg(x), _rg(w_ih), b_ih is not None)
    f2, b2 = _mm_calls(m, p, g, _rg(h), _rg(w_hh), b_hh is not None)
    return f1 + f2, b1 + b2


_LOWERINGS: dict = {
    "mm": _lower_mm, "addmm": _lower_addmm, "bmm": _lower_bmm, "baddbmm": _lower_baddbmm,
    "linear": _lower_linear, "matmul": _lower_matmul, "__matmul__": _lower_matmul,
    "__rmatmul__": _lower_rmatmul,
    "conv1d": _lower_conv(False), "conv2d": _lower_conv(False), "conv3d": _lower_conv(False),
    "conv_transpose1d": _lower_conv(True), "conv_transpose2d": _lower_conv(True),
    "conv_transpose3d": _lower_conv(True),
    "scaled_dot_product_attention": _lower_sdpa,
    "tensordot": _lower_tensordot, "einsum": _lower_einsum,
    "_recurrent_layer": _lower_recurrent_layer,
    "lstm_cell": _lower_cell, "gru_cell": _lower_cell, "rnn_tanh_cell": _lower_cell,
    "rnn_relu_cell": _lower_cell,
}

