"""vjp/jvp/grad inside vmap run once per level their function varies over, and the
function transforms under ember.compile (a graph break that runs them eagerly)."""
import pytest

import ember
from ember import nn
from ember.func import functional_call, grad, jacfwd, jacrev, jvp, vjp, vmap


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.fc = nn.Linear(3 * 4 * 4, 4)

    def forward(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


def _ntk_setup():
    ember.manual_seed(0)
    net = _CNN().double()
    params = {k: v.detach() for k, v in net.named_parameters()}

    def f(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    return f, params, ember.randn(3, 2, 6, 6, dtype=ember.float64), \
        ember.randn(2, 2, 6, 6, dtype=ember.float64)


def _ntk_contraction(f, params, x1, x2):
    j1 = [j.flatten(2) for j in vmap(jacrev(f), (None, 0))(params, x1).values()]
    j2 = [j.flatten(2) for j in vmap(jacrev(f), (None, 0))(params, x2).values()]
    return sum(ember.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(j1, j2))


def _ntk_vps(f, params, x1, x2):
    # pytorch/tutorials neural_tangent_kernels: vmap(vmap(vjp then jvp over a basis))
    def get_ntk(x1, x2):
        out, vjp_fn = vjp(lambda p: f(p, x1), params)

        def ntk_slice(vec):
            (ct,) = vjp_fn(vec)
            return jvp(lambda p: f(p, x2), (params,), (ct,))[1]

        return vmap(ntk_slice)(ember.eye(out.numel(), dtype=out.dtype))

    return vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)


def test_ntk_by_vector_products_equals_the_jacobian_contraction():
    f, params, x1, x2 = _ntk_setup()
    a = _ntk_contraction(f, params, x1, x2)
    b = _ntk_vps(f, params, x1, x2)
    assert b.shape == (3, 2, 4, 4)
    ember.testing.assert_close(b, a, rtol=1e-10, atol=1e-10)
    # and equals the kernel built one pair at a time, without vmap
    for i in range(3):
        for j in range(2):
            ja = jacrev(f)(params, x1[i])
            jb = jacrev(f)(params, x2[j])
            k = sum(ja[n].flatten(1) @ jb[n].flatten(1).T for n in params)
            ember.testing.assert_close(b[i, j], k, rtol=1e-10, atol=1e-10)


_G: dict = {}


def _uses_a_global(w):
    return (w * _G["b"]).sin().sum()


def test_grad_in_vmap_sees_a_batched_tensor_reached_through_a_global():
    # the transform cannot see ``_G["b"]`` in its function's closure: it learns from the
    # output that it varies over the vmap level and runs again per example
    w = ember.randn(3, dtype=ember.float64)
    bs = ember.randn(4, 3, dtype=ember.float64)

    def per_example(b):
        _G["b"] = b
        try:
            return grad(_uses_a_global)(w)
        finally:
            _G.clear()

    got = vmap(per_example)(bs)
    want = ember.stack([(w * b).cos() * b for b in bs])
    ember.testing.assert_close(got, want)


def test_vjp_in_vmap_of_an_unbatched_function_gives_every_example_the_same_gradient():
    w = ember.randn(3, 3, dtype=ember.float64)
    x = ember.randn(3, dtype=ember.float64)

    def g(v):  # the function of ``vjp`` does not vary over vmap's level; ``v`` does
        out, fn = vjp(lambda w: (w @ x).tanh(), w)
        return fn(v)[0]

    vs = ember.randn(5, 3, dtype=ember.float64)
    got = vmap(g)(vs)
    for v, gv in zip(vs, got):
        ember.testing.assert_close(gv, g(v))


def _loss(w, x):
    return (x @ w).sin().sum()


_TRANSFORMED = {
    "grad": lambda w, x: grad(_loss)(w, x) * 2 + 1,
    "vmap_grad": lambda w, x: vmap(grad(_loss), (None, 0))(w, x.unsqueeze(1)),
    "vjp": lambda w, x: vjp(lambda w: (x @ w).sin(), w)[1](x[:, 0])[0],
    "jvp": lambda w, x: jvp(lambda w: (x @ w).sin(), (w,), (w.cos(),))[1],
    "jacrev": lambda w, x: jacrev(lambda w: (x @ w).sin())(w),
    "jacfwd": lambda w, x: jacfwd(lambda w: (x @ w).sin())(w),
}


@pytest.mark.parametrize("name", sorted(_TRANSFORMED))
def test_compiled_function_transforms_equal_eager(name):
    fn = _TRANSFORMED[name]
    compiled = ember.compile(fn)
    for _ in range(3):  # the capturing call and replays, on new values each time
        w = ember.randn(3, dtype=ember.float64)
        x = ember.randn(4, 3, dtype=ember.float64)
        ember.testing.assert_close(compiled(w, x), fn(w, x))


def test_compiled_function_transform_is_a_graph_break_under_fullgraph():
    with pytest.raises(RuntimeError, match=r"torch\.func\.grad is not compiled"):
        ember.compile(_TRANSFORMED["grad"], fullgraph=True)(ember.randn(3), ember.randn(4, 3))
