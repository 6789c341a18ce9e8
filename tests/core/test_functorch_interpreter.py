"""``torch._C._functorch``'s transform stack and ``torch._C._are_functorch_transforms_active``
(kornia's checks read them), side by side with PyTorch where it is installed."""

import threading

import pytest

import ember
from ember._C import _functorch as F
from ember.func import functionalize, grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

try:
    import torch
except ImportError:
    torch = None


def _seen(lib, functorch, run):
    """The stack each call of the transformed function sees: [(kind, level), ...]."""
    stacks = []

    def f(x):
        stack = functorch.get_interpreter_stack()
        stacks.append(None if stack is None else [(i.key().name, i.level()) for i in stack])
        stacks.append(lib._C._are_functorch_transforms_active())
        return x.sin().sum()

    run(lib, f)
    return stacks


CASES = {  # name -> (run, the stack Ember's function sees)
    "plain": (lambda lib, f: f(lib.ones(2)), [None, False]),
    "vmap": (lambda lib, f: lib.vmap(f)(lib.ones(3, 2)), [[("Vmap", 1)], True]),
    "vmap_vmap": (lambda lib, f: lib.vmap(lib.vmap(f))(lib.ones(2, 3, 2)),
                  [[("Vmap", 1), ("Vmap", 2)], True]),
    "grad": (lambda lib, f: lib.func.grad(f)(lib.ones(2)), [[("Grad", 1)], True]),
    "vjp": (lambda lib, f: lib.func.vjp(f, lib.ones(2)), [[("Grad", 1)], True]),
    "jacrev": (lambda lib, f: lib.func.jacrev(f)(lib.ones(2)), [[("Grad", 1)], True]),
    "jvp": (lambda lib, f: lib.func.jvp(f, (lib.ones(2),), (lib.ones(2),)),
            [[("Jvp", 1)], True]),
    "functionalize": (lambda lib, f: lib.func.functionalize(f)(lib.ones(2)),
                      [[("Functionalize", 1)], True]),
    "vmap_grad": (lambda lib, f: lib.vmap(lib.func.grad(f))(lib.ones(3, 2)),
                  [[("Vmap", 1), ("Grad", 2)], True]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_stack_a_transformed_function_sees(name):
    run, expected = CASES[name]
    assert _seen(ember, F, run) == expected
    assert F.get_interpreter_stack() is None and not ember._C._are_functorch_transforms_active()


@pytest.mark.parity
@pytest.mark.parametrize("name", list(CASES))
def test_the_stack_matches_pytorchs(name):
    if torch is None:
        pytest.skip("PyTorch (the oracle) is not installed")
    run, _ = CASES[name]
    assert _seen(ember, F, run) == _seen(torch, torch._C._functorch, run)


def test_forward_transforms_built_differently_report_their_own_stack():
    """PyTorch's jacfwd is vmap over jvp, and its hessian jacfwd over jacrev; Ember's jacfwd
    pushes the basis through one linearization (no vmap), so its function sees Jvp alone."""
    def run_jacfwd(lib, f):
        jacfwd(f)(lib.ones(2))

    def run_hessian(lib, f):
        hessian(f)(lib.ones(2))

    assert _seen(ember, F, run_jacfwd) == [[("Jvp", 1)], True]
    assert _seen(ember, F, run_hessian) == [[("Jvp", 1), ("Grad", 2)], True]


def test_batched_tensor_queries():
    seen = {}

    def f(x):
        seen.update(batched=F.is_batchedtensor(x), wrapped=F.is_functorch_wrapped_tensor(x),
                    level=F.maybe_get_level(x), bdim=F.maybe_get_bdim(x),
                    unwrapped=tuple(F.get_unwrapped(x).shape), current=F.current_level(),
                    peek=F.peek_interpreter_stack().key(), maybe=F.maybe_current_level())
        vm = F.CVmapInterpreterPtr(F.peek_interpreter_stack())
        seen.update(batch=vm.batchSize(), randomness=vm.randomness())
        return x * 2

    vmap(f, randomness="same")(ember.ones(3, 2))
    assert seen == {"batched": True, "wrapped": True, "level": 1, "bdim": 0,
                    "unwrapped": (3, 2), "current": 1, "peek": F.TransformType.Vmap,
                    "maybe": 1, "batch": 3, "randomness": F.RandomnessType.Same}
    plain = ember.ones(2)
    assert (F.is_batchedtensor(plain), F.maybe_get_level(plain), F.maybe_get_bdim(plain),
            F.is_legacy_batchedtensor(plain), F.is_gradtrackingtensor(plain)) == \
        (False, -1, -1, False, False)
    assert F.peek_interpreter_stack() is None and F.maybe_current_level() is None
    with pytest.raises(RuntimeError):
        F.current_level()
    with pytest.raises(RuntimeError, match="not wrapped"):
        F.get_unwrapped(plain)


def test_the_stack_is_per_thread_and_unwinds_on_errors():
    inside, other = threading.Event(), []

    def f(x):
        inside.set()
        worker.join()
        return x

    def look():
        inside.wait()
        other.append(F.get_interpreter_stack())

    worker = threading.Thread(target=look)
    worker.start()
    vmap(f)(ember.ones(2))
    assert other == [None]

    def bad(x):
        raise ValueError("boom")

    for transform in (vmap(bad), grad(bad), lambda x: jvp(bad, (x,), (x,)),
                      lambda x: vjp(bad, x), jacrev(bad), functionalize(bad)):
        with pytest.raises(ValueError, match="boom"):
            transform(ember.ones(2))
        assert F.get_interpreter_stack() is None


def test_torch_torch_is_torch():
    assert ember.torch is ember
