"""What the children of tests/core/test_multiprocessing.py run.

A spawned child unpickles its target by module name; pytest imports test modules under names
(``tests.core...``) a child cannot import, while this folder is on ``sys.path`` (pytest.ini's
``pythonpath``), which a spawned child inherits.
"""

import os
import signal
import sys
import time

import ember

WAIT = 30  # seconds: any wait on a child (they take well under a second here)

def _echo(inbox, outbox):
    """Receive tensors; send back what they look like here, and the tensors themselves."""
    tensors = inbox.get(timeout=WAIT)
    outbox.put([(tuple(t.shape), t.stride(), str(t.dtype), t.is_shared(), t.tolist(),
                 t.storage_offset(), t.device.type) for t in tensors])
    outbox.put(tensors)
    inbox.get(timeout=WAIT)  # stay alive until the parent has unpickled the tensors


def _write(inbox, outbox):
    """Receive a tensor, add 10 to it in place, say what it was."""
    t = inbox.get(timeout=WAIT)
    with ember.no_grad():
        t.add_(10)
    outbox.put((type(t).__name__, t.is_shared(), t.requires_grad))


def _write_and_send_new(conn):
    """Over a pipe: receive a tensor, write into it, send a new tensor back."""
    t = conn.recv()
    t[0] = -1
    conn.send(ember.full((3,), 7.0, device="cpu"))
    conn.recv()


def _spawn_sum(i, folder, a, b):
    with open(os.path.join(folder, str(i)), "w") as f:
        f.write(str(i + a + b))


def _spawn_raise(i):
    if i == 1:
        raise ValueError("process 1 fails on purpose")
    time.sleep(WAIT)


def _spawn_kill(i):
    if i == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(WAIT)


def _spawn_exit(i):
    if i == 0:
        sys.exit(3)
    time.sleep(WAIT)


def _spawn_shared(i, t):
    assert t.is_shared()
    t[i] = i + 100


def _hogwild_train(rank, model, x, y, steps):
    import ember.nn as nn
    import ember.optim as optim

    assert all(isinstance(p, nn.Parameter) and p.is_shared() for p in model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
