"""Activation checkpointing (``ember.utils.checkpoint``): peak memory and step time.

The peak is what ``tracemalloc`` sees from just before the forward to the end of the
backward, above what was allocated before (NumPy reports its array buffers to tracemalloc;
parameters and inputs are allocated before the measurement starts, so the number is
activations, saved values, gradients and temporaries). "held" is what is still allocated
when the forward has returned: what the graph keeps for the backward.

Models: a deep MLP (``nn.Sequential`` of Linear+ReLU blocks, checkpointed with
``checkpoint_sequential``) and a Transformer encoder stack (each layer checkpointed), both
float32 on the CPU. Run: ``python benchmarks/bench_checkpoint.py`` (``--quick`` for a smaller
run). PyTorch allocates outside tracemalloc's view, so there is no PyTorch column.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

MiB = 1 << 20


@dataclass
class Row:
    model: str
    variant: str
    peak_mib: float
    held_mib: float
    step_ms: float
    max_grad_diff: float


def _measure(step: Callable[[], Callable[[], None]]) -> tuple[float, float]:
    """(peak, held after the forward) in bytes of one forward + backward.

    ``step()`` runs the forward and returns the function that runs the backward."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        backward = step()
        held = tracemalloc.get_traced_memory()[0] - base
        backward()
        del backward
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, held


def _time(step: Callable[[], Callable[[], None]], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()()
        best = min(best, time.perf_counter() - t0)
    return best


def _grads(model) -> list:
    return [p.grad.numpy().copy() for p in model.parameters()]


def _run_variant(model, forward, x, repeat: int, seed: int = 0):
    """Peak, held, time and the gradients of ``forward(x)`` on ``model``."""
    import ember

    def step():
        for p in model.parameters():
            p.grad = None
        ember.manual_seed(seed)
        loss = forward(x).square().mean()

        def backward():
            loss.backward()

        return backward

    step()()  # one-time costs (a mode's first use builds its dispatch plans) are not measured
    peak, held = _measure(step)
    grads = _grads(model)
    seconds = _time(step, repeat)
    return peak, held, seconds, grads


def _compare(model_name: str, model, x, variants: dict, repeat: int) -> list[Row]:
    rows = []
    reference = None
    for name, forward in variants.items():
        peak, held, seconds, grads = _run_variant(model, forward, x, repeat)
        if reference is None:
            reference = grads
        diff = max(float(abs(a - b).max()) for a, b in zip(grads, reference))
        rows.append(Row(model_name, name, peak / MiB, held / MiB, seconds * 1e3, diff))
    return rows


def deep_mlp(depth: int = 32, width: int = 256, batch: int = 2048, repeat: int = 2) -> list[Row]:
    """A ``depth``-block MLP, plain and with ``checkpoint_sequential`` (2, sqrt and depth
    segments). A large batch, so that activations, not weight gradients, dominate."""
    import ember
    import ember.nn as nn
    from ember.utils.checkpoint import checkpoint_sequential

    ember.manual_seed(0)
    blocks = []
    for _ in range(depth):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*blocks)
    x = ember.randn(batch, width, requires_grad=True)  # the reentrant variant needs it
    n = len(model)
    sqrt_segments = max(2, round(depth ** 0.5))
    variants = {
        "plain": model,
        "checkpoint_sequential(2)": lambda t: checkpoint_sequential(model, 2, t,
                                                                    use_reentrant=False),
        f"checkpoint_sequential({sqrt_segments})":
            lambda t: checkpoint_sequential(model, sqrt_segments, t, use_reentrant=False),
        f"checkpoint_sequential({depth})":
            lambda t: checkpoint_sequential(model, depth, t, use_reentrant=False),
        f"checkpoint_sequential({sqrt_segments}), reentrant":
            lambda t: checkpoint_sequential(model, sqrt_segments, t, use_reentrant=True),
    }
    assert n == 2 * depth
    return _compare(f"MLP {depth}x{width}, batch {batch}", model, x, variants, repeat)


def transformer_stack(layers: int = 6, d_model: int = 256, nhead: int = 8, ff: int = 1024,
                      batch: int = 16, seq: int = 128, repeat: int = 2) -> list[Row]:
    """An ``nn.TransformerEncoder`` (dropout 0.1, train mode), plain and with each layer
    checkpointed (non-reentrant and reentrant; and selectively: the feed-forward products'
    outputs kept, ``create_selective_checkpoint_contexts([aten.addmm.default])``)."""
    import functools

    import ember
    import ember.nn as nn
    from ember.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.1, batch_first=True)
    encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    encoder.train()
    x = ember.randn(batch, seq, d_model, requires_grad=True)

    def per_layer(reentrant, **kwargs):
        def forward(t):
            for mod in encoder.layers:
                t = checkpoint(mod, t, use_reentrant=reentrant, **kwargs)
            return t

        return forward

    keep_products = functools.partial(create_selective_checkpoint_contexts,
                                      [ember.ops.aten.addmm.default])
    variants = {"plain": encoder, "checkpoint per layer": per_layer(False),
                "checkpoint per layer, reentrant": per_layer(True),
                "checkpoint per layer, SAC keeps addmm": per_layer(False,
                                                                   context_fn=keep_products)}
    return _compare(f"TransformerEncoder {layers}x(d={d_model}, ff={ff}), {batch}x{seq}",
                    encoder, x, variants, repeat)


def run(quick: bool = False) -> list[Row]:
    """Every workload's rows."""
    if quick:
        return deep_mlp(depth=16, width=256, batch=128, repeat=1) + transformer_stack(
            layers=2, d_model=64, nhead=4, ff=256, batch=8, seq=32, repeat=1)
    return deep_mlp() + transformer_stack()


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table, with each variant's peak relative to its model's plain
    run."""
    lines = ["| model | variant | peak MiB | vs plain | held after forward MiB | step ms "
             "| max grad diff |", "|---|---|---:|---:|---:|---:|---:|"]
    plain: dict = {}
    for r in rows:
        plain.setdefault(r.model, r)
        base = plain[r.model]
        lines.append(f"| {r.model} | {r.variant} | {r.peak_mib:.1f} | "
                     f"{r.peak_mib / base.peak_mib:.2f}x | {r.held_mib:.1f} | {r.step_ms:.0f} "
                     f"({r.step_ms / base.step_ms:.2f}x) | {r.max_grad_diff:.1e} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small models, one timing round")
    print(table(run(parser.parse_args().quick)))
