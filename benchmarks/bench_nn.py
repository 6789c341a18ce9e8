"""Training-step workloads of ember-nn (issue: nn/optim/data), side by side with PyTorch.

Every workload is one function written against the PyTorch API and run twice: with ``lib``
bound to ember and to torch. Both start from the same weights (copied through NumPy).
"""

from __future__ import annotations

import numpy as np
from harness import compare


def _copy_weights(src, dst) -> None:
    """Load ``src``'s (torch) parameters and buffers into ``dst`` (ember) by name."""
    import ember

    state = {k: ember.tensor(v.detach().numpy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _lenet(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def _basic_block(lib, channels):
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            out = self.bn1(self.conv1(x)).relu()
            out = self.bn2(self.conv2(out))
            return (out + x).relu()

    return BasicBlock()


def _resnet_blocks(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                         nn.ReLU(), _basic_block(lib, 16), _basic_block(lib, 16),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


class _Tagger:
    """A module factory for the LSTM workload: LSTM then a linear read-out of the last step."""

    def __init__(self, lib):
        nn = lib.nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(64, 128, batch_first=True)
                self.head = nn.Linear(128, 10)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[:, -1])

        self.model = Model()


def _step_fn(lib, model, opt, x, y):
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def _pair(torch, build, make_opt, x_np, y_np):
    import ember

    e_model = build(ember)
    fns = []
    if torch is not None:
        t_model = build(torch)
        _copy_weights(t_model, e_model)
        fns.append(_step_fn(torch, t_model, make_opt(torch, t_model), torch.from_numpy(x_np),
                            torch.from_numpy(y_np)))
    e_step = _step_fn(ember, e_model, make_opt(ember, e_model), ember.from_numpy(x_np),
                      ember.from_numpy(y_np))
    return e_step, (fns[0] if fns else None)


def _small_mlp_inference(torch, rng):
    """Eager overhead of a served model: three small layers under no_grad (issue 10 measured
    the thread-local grad-mode read on it)."""
    import ember

    def make(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).eval()

    x_np = rng.standard_normal((8, 32)).astype(np.float32)
    e_model, ex = make(ember), ember.from_numpy(x_np)

    def e_infer():
        with ember.no_grad():
            e_model(ex)

    t_infer = None
    if torch is not None:
        t_model, tx = make(torch), torch.from_numpy(x_np)
        _copy_weights(t_model, e_model)

        def t_infer():
            with torch.no_grad():
                t_model(tx)

    return compare("MLP 32-64-10 inference (b8, no_grad)", e_infer, t_infer, number=5000)


def _sequence(lib):
    """pytorch/examples time_sequence_prediction's model: two LSTMCells and a linear read-out
    stepped in a Python loop, float64."""
    nn = lib.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, 51)
            self.lstm2 = nn.LSTMCell(51, 51)
            self.linear = nn.Linear(51, 1)

        def forward(self, input):
            outputs = []
            h_t = lib.zeros(input.size(0), 51, dtype=lib.double)
            c_t = lib.zeros(input.size(0), 51, dtype=lib.double)
            h_t2 = lib.zeros(input.size(0), 51, dtype=lib.double)
            c_t2 = lib.zeros(input.size(0), 51, dtype=lib.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs += [self.linear(h_t2)]
            return lib.cat(outputs, dim=1)

    return Sequence().double()


def _cell_loop(torch, rng):
    """The time_sequence_prediction example's closure (forward + backward, 100 steps, b97)
    and its no_grad prediction (b3)."""
    import ember

    data = np.sin(rng.integers(-80, 80, (100, 1)) / 20.0 + np.arange(101) / 20.0)
    pairs = []
    for lib in [ember] + ([torch] if torch is not None else []):
        model = _sequence(lib)
        if lib is not ember:
            _copy_weights(model, pairs[0][0])
        x, y = lib.from_numpy(data[3:, :-1]), lib.from_numpy(data[3:, 1:])
        pairs.append((model, x, y, lib))

    def closure(model, x, y, lib):
        def run():
            model.zero_grad()
            lib.nn.functional.mse_loss(model(x), y).backward()
        return run

    def predict(model, x, y, lib):
        def run():
            with lib.no_grad():
                model(x[:3])
        return run

    out = []
    for name, make in (("LSTMCell loop fwd+bwd (2 cells 1-51-51, b97, 100 steps, f64)", closure),
                       ("LSTMCell loop no_grad (same, b3)", predict)):
        fns = [make(*p) for p in pairs]
        out.append(compare(name, fns[0], fns[1] if len(fns) > 1 else None, number=3))
    return out


def _tiny_gpt(lib):
    """karpathy/makemore's Transformer at its defaults (4 layers, 64 wide, 4 heads, block 16,
    27 characters): GPT-2 blocks written out, attention by hand with a causal mask buffer and
    the tanh GELU, as makemore writes them."""
    import math

    nn, F = lib.nn, lib.nn.functional
    n_embd, n_head, block, vocab = 64, 4, 16, 27

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi)
                                             * (x + 0.044715 * lib.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", lib.tril(lib.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),
                                          c_proj=nn.Linear(4 * n_embd, n_embd), act=NewGELU()))

        def forward(self, x):
            m = self.mlp
            x = x + self.attn(self.ln_1(x))
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block, n_embd),
                h=nn.ModuleList([Block() for _ in range(4)]), ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx):
            t = idx.size(1)
            pos = lib.arange(0, t, dtype=lib.long).unsqueeze(0)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block_ in self.transformer.h:
                x = block_(x)
            return self.lm_head(self.transformer.ln_f(x))

    return Transformer()


def _tiny_gpt_step(torch, rng):
    """makemore's training step: forward, cross-entropy with ``ignore_index=-1`` (its padded
    targets), backward, AdamW (its lr, betas, eps and weight decay)."""
    import ember

    x_np = rng.integers(0, 27, (32, 16))
    y_np = np.where(rng.random((32, 16)) < 0.2, -1, rng.integers(0, 27, (32, 16)))
    steps = []
    t_model = None
    for lib in ([torch] if torch is not None else []) + [ember]:
        model = _tiny_gpt(lib)
        if lib is ember and t_model is not None:
            _copy_weights(t_model, model)
        t_model = t_model or model
        opt = lib.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01,
                              betas=(0.9, 0.99), eps=1e-8)
        x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)

        def step(model=model, opt=opt, x=x, y=y, F=lib.nn.functional):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1)
            model.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        steps.append(step)
    return compare("makemore Transformer step (4 layers, d64, 4 heads, block 16, b32, AdamW)",
                   steps[-1], steps[0] if len(steps) > 1 else None, number=50)


def _conv_layers(torch, rng):
    """Forward + backward of single conv layers (the direct kernels' shapes, session 49)."""
    import ember

    results = []
    for name, (n, c, h, o, k, p) in {
            "conv2d 6->16 5x5 on 14x14 fwd+bwd (b64, LeNet-5's 2nd)": (64, 6, 14, 16, 5, 0),
            "conv2d 16->16 3x3 on 32x32 fwd+bwd (b32, ResNet block's)": (32, 16, 32, 16, 3, 1),
    }.items():
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = rng.standard_normal((o, c, k, k)).astype(np.float32) * 0.1
        b = np.zeros(o, np.float32)

        def make(lib, x=x, w=w, b=b, p=p):
            xt = lib.tensor(x, requires_grad=True)
            wt = lib.tensor(w, requires_grad=True)
            bt = lib.tensor(b, requires_grad=True)

            def step():
                lib.nn.functional.conv2d(xt, wt, bt, padding=p).sum().backward()
                xt.grad = wt.grad = bt.grad = None
            return step

        results.append(compare(name, make(ember), make(torch) if torch else None, number=30))
    return results


def _bf16_decode(torch, rng):
    """One decoding step of a small bfloat16 GPT-style block stack (LLMs-from-scratch's Qwen3
    notebooks run in bfloat16): a token's hidden state through two 1024-wide MLPs (SiLU gate,
    3072 hidden) and a 32000-token output head, under no_grad."""
    import ember

    dims = [(3072, 1024), (3072, 1024), (1024, 3072)] * 2 + [(32000, 1024)]
    weights = [rng.standard_normal(d).astype(np.float32) * 0.02 for d in dims]
    x = rng.standard_normal((1, 1, 1024)).astype(np.float32)

    def make(lib):
        ws = [lib.tensor(w).bfloat16() for w in weights]
        h = lib.tensor(x).bfloat16()
        F = lib.nn.functional

        def step():
            with lib.no_grad():
                y = h
                for i in (0, 3):
                    gate, up, down = ws[i:i + 3]
                    y = y + F.linear(F.silu(F.linear(y, gate)) * F.linear(y, up), down)
                return F.linear(y, ws[-1]).argmax(-1)
        return step

    return compare("bfloat16 decode step (2 SwiGLU MLPs 1024-3072, head 32000, b1)",
                   make(ember), make(torch) if torch else None, number=20)


def workloads(torch):
    rng = np.random.default_rng(0)
    results = []

    def sgd(lib, m):
        return lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

    def adam(lib, m):
        return lib.optim.Adam(m.parameters(), lr=1e-3)

    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    e, t = _pair(torch, _mlp, sgd, x, y)
    results.append(compare("MLP 784-512-256-10 step (b128, SGD momentum)", e, t, number=50))

    results.append(_small_mlp_inference(torch, rng))
    results.append(_bf16_decode(torch, rng))

    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    e, t = _pair(torch, _lenet, sgd, x, y)
    results.append(compare("LeNet-5 step (b64, 28x28)", e, t, number=20))
    results.extend(_conv_layers(torch, rng))

    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    e, t = _pair(torch, _resnet_blocks, sgd, x, y)
    results.append(compare("2 ResNet basic blocks step (b32, 32x32)", e, t, number=10))

    def encoder(lib):
        nn = lib.nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=256,
                                                        dropout=0.0, batch_first=True)
                self.head = nn.Linear(128, 10)

            def forward(self, x):
                return self.head(self.layer(x).mean(1))

        return Model()

    x = rng.standard_normal((8, 64, 128)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    e, t = _pair(torch, encoder, adam, x, y)
    results.append(compare("TransformerEncoderLayer step (d128, 4 heads, seq64, b8, Adam)",
                           e, t, number=20))

    x = rng.standard_normal((16, 32, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    e, t = _pair(torch, lambda lib: _Tagger(lib).model, adam, x, y)
    results.append(compare("LSTM 64->128 step (seq32, b16, Adam)", e, t, number=20))
    results.extend(_cell_loop(torch, rng))
    results.append(_tiny_gpt_step(torch, rng))
    return results
