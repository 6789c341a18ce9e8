"""ONNX's recurrent operators, LSTM, GRU and RNN, run step by step with Ember ops.

Layouts as the ONNX spec gives them: ``W`` ``[num_directions, gates * hidden, input]``, ``R``
``[num_directions, gates * hidden, hidden]``, ``B`` ``[num_directions, 2 * gates * hidden]``
(input biases, then recurrent ones); gate order ``i, o, f, c`` (LSTM) and ``z, r, h`` (GRU).
``X`` is ``[seq, batch, input]`` (``layout=1``: ``[batch, seq, input]``); ``Y``
``[seq, num_directions, batch, hidden]`` and ``Y_h`` / ``Y_c``
``[num_directions, batch, hidden]`` (``layout=1``: batch first). With ``sequence_lens`` a
sequence's state stops at its length (the reverse direction starts there) and ``Y`` is zero
past it.
"""

from __future__ import annotations

from collections.abc import Callable

import ember
import ember.nn.functional as F

from ._ops_import import Call, register, versions

# name -> (function(x, alpha, beta), default alpha, default beta); ONNX names, any case
_ACTIVATIONS: dict[str, tuple[Callable, float | None, float | None]] = {
    "relu": (lambda x, a, b: F.relu(x), None, None),
    "tanh": (lambda x, a, b: ember.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: ember.sigmoid(x), None, None),
    "affine": (lambda x, a, b: x * a + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: F.leaky_relu(x, a), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: ember.where(x > a, x, ember.zeros_like(x)), 1.0, None),
    "scaledtanh": (lambda x, a, b: ember.tanh(x * b) * a, 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: ember.clamp(x * a + b, 0.0, 1.0), 0.2, 0.5),
    "elu": (lambda x, a, b: F.elu(x, a), 1.0, None),
    "softsign": (lambda x, a, b: F.softsign(x), None, None),
    "softplus": (lambda x, a, b: F.softplus(x), None, None),
}

_DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
                        "RNN": ["Tanh"]}


def _recurrent_check(attrs: dict) -> str | None:
    for name in attrs.get("activations") or []:
        if name.lower() not in _ACTIVATIONS:
            return f"activation {name}"
    if attrs.get("direction", "forward") not in ("forward", "reverse", "bidirectional"):
        return f"direction={attrs['direction']}"
    return None


def _activations(c: Call, op: str, num_directions: int) -> list[list[Callable]]:
    """Per direction, the activation functions with their alpha/beta bound (the lists
    ``activation_alpha`` / ``activation_beta`` are consumed in order by the functions that
    take them, as onnxruntime reads them)."""
    names = c.attr("activations") or _DEFAULT_ACTIVATIONS[op] * num_directions
    alphas = list(c.attr("activation_alpha") or [])
    betas = list(c.attr("activation_beta") or [])
    bound = []
    for name in names:
        fn, alpha, beta = _ACTIVATIONS[name.lower()]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        bound.append(lambda x, fn=fn, a=alpha, b=beta: fn(x, a, b))
    per = len(names) // num_directions
    return [bound[d * per:(d + 1) * per] for d in range(num_directions)]


class _Recurrence:
    """What the three operators share: inputs in ``[seq, batch, ...]`` layout, directions,
    clipping, the per-step validity masks of ``sequence_lens``, and assembling outputs."""

    def __init__(self, c: Call, op: str, gates: int, states: int) -> None:
        self.c = c
        x, self.w, self.r, self.b = c.x(0), c.x(1), c.x(2), c.x(3)
        self.batch_first = bool(c.attr("layout", 0))
        self.x = x.transpose(0, 1) if self.batch_first else x
        direction = c.attr("direction", "forward")
        self.directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        self.hidden = c.attr("hidden_size") or self.r.shape[-1]
        self.gates = gates
        self.clip = c.attr("clip")
        self.activations = _activations(c, op, len(self.directions))
        seq, batch = self.x.shape[:2]
        self.valid = None
        if c.has(4):  # sequence_lens: valid[t] is (batch, 1), true while t < length
            steps = ember.arange(seq, device=x.device).reshape(seq, 1)
            self.valid = (steps < c.x(4).to(ember.int64).reshape(1, batch)).unsqueeze(-1)
        self.initial = []
        for i in range(states):
            state = c.x(5 + i)
            if state is None:
                state = ember.zeros((len(self.directions), batch, self.hidden), dtype=x.dtype,
                                    device=x.device)
            elif self.batch_first:
                state = state.transpose(0, 1)
            self.initial.append(state)

    def pre(self, t: ember.Tensor) -> ember.Tensor:
        """Gate pre-activations, clipped to ``[-clip, clip]`` when ``clip`` is set."""
        return t if self.clip is None else ember.clamp(t, -self.clip, self.clip)

    def input_projection(self, d: int) -> ember.Tensor:
        """``X W^T + Wb`` for every step at once: ``[seq, batch, gates * hidden]``."""
        projected = ember.matmul(self.x, self.w[d].t())
        if self.b is not None:
            projected = projected + self.b[d, :self.gates * self.hidden]
        return projected

    def recurrent_bias(self, d: int) -> ember.Tensor | None:
        return None if self.b is None else self.b[d, self.gates * self.hidden:]

    def run(self, step: Callable) -> tuple:
        """Run ``step(d, xw_t, states) -> (output, new states)`` over time in each direction;
        returns ``Y`` and the final states, in the node's layout."""
        seq = self.x.shape[0]
        ys, finals = [], [[] for _ in self.initial]
        for d, direction in enumerate(self.directions):
            xw = self.input_projection(d)
            states = [s[d] for s in self.initial]
            outputs = [None] * seq
            order = range(seq) if direction == "forward" else range(seq - 1, -1, -1)
            for t in order:
                h, new_states = step(d, xw[t], states)
                if self.valid is not None:
                    valid = self.valid[t]
                    new_states = [ember.where(valid, n, s) for n, s in zip(new_states, states)]
                    h = ember.where(valid, h, ember.zeros_like(h))
                states = new_states
                outputs[t] = h
            ys.append(ember.stack(outputs, 0))
            for final, state in zip(finals, states):
                final.append(state)
        y = ember.stack(ys, 1)  # [seq, directions, batch, hidden]
        finals = [ember.stack(f, 0) for f in finals]
        if self.batch_first:
            y = y.permute(2, 0, 1, 3)
            finals = [f.transpose(0, 1) for f in finals]
        return (y, *finals)


@register("LSTM", versions(7, 14, 22), check=_recurrent_check)
def _lstm(c: Call):
    rec = _Recurrence(c, "LSTM", gates=4, states=2)
    hidden = rec.hidden
    peepholes = c.x(7)
    couple = bool(c.attr("input_forget", 0))

    def step(d, xw, states):
        h, cell = states
        f_act, g_act, h_act = rec.activations[d]
        gates = xw + ember.matmul(h, rec.r[d].t())
        bias = rec.recurrent_bias(d)
        if bias is not None:
            gates = gates + bias
        i, o, f, candidate = gates.split(hidden, -1)
        if peepholes is not None:
            p_i, p_o, p_f = peepholes[d].split(hidden, -1)
            i, f = i + p_i * cell, f + p_f * cell
        i = f_act(rec.pre(i))
        f = 1 - i if couple else f_act(rec.pre(f))
        cell = f * cell + i * g_act(rec.pre(candidate))
        if peepholes is not None:
            o = o + p_o * cell
        h = f_act(rec.pre(o)) * h_act(cell)
        return h, [h, cell]

    return rec.run(step)


@register("GRU", versions(7, 14, 22), check=_recurrent_check)
def _gru(c: Call):
    rec = _Recurrence(c, "GRU", gates=3, states=1)
    hidden = rec.hidden
    before_reset = bool(c.attr("linear_before_reset", 0))

    def step(d, xw, states):
        (h,) = states
        f_act, g_act = rec.activations[d]
        weights, bias = rec.r[d], rec.recurrent_bias(d)
        x_z, x_r, x_h = xw.split(hidden, -1)
        zr = ember.matmul(h, weights[:2 * hidden].t())
        if bias is not None:
            zr = zr + bias[:2 * hidden]
        h_z, h_r = zr.split(hidden, -1)
        z = f_act(rec.pre(x_z + h_z))
        r = f_act(rec.pre(x_r + h_r))
        w_h = weights[2 * hidden:].t()
        b_h = None if bias is None else bias[2 * hidden:]
        if before_reset:
            recurrent = ember.matmul(h, w_h)
            recurrent = recurrent if b_h is None else recurrent + b_h
            candidate = g_act(rec.pre(x_h + r * recurrent))
        else:
            recurrent = ember.matmul(r * h, w_h)
            recurrent = recurrent if b_h is None else recurrent + b_h
            candidate = g_act(rec.pre(x_h + recurrent))
        h = (1 - z) * candidate + z * h
        return h, [h]

    return rec.run(step)


@register("RNN", versions(7, 14, 22), check=_recurrent_check)
def _rnn(c: Call):
    rec = _Recurrence(c, "RNN", gates=1, states=1)

    def step(d, xw, states):
        (h,) = states
        pre = xw + ember.matmul(h, rec.r[d].t())
        bias = rec.recurrent_bias(d)
        if bias is not None:
            pre = pre + bias
        h = rec.activations[d][0](rec.pre(pre))
        return h, [h]

    return rec.run(step)
