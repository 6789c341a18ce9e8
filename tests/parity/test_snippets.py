"""PyTorch programs run unchanged after ``import ember as torch`` and give PyTorch's results.

Each snippet is plain PyTorch source. It runs once with ``torch`` bound to PyTorch (the oracle)
and once bound to ember; the values, dtypes, shapes and raised exception types must agree.
"""

import textwrap

import numpy as np
import pytest

import ember

real_torch = pytest.importorskip("torch")

SNIPPETS = {
    "autograd_basics": """
        x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, -1.5]], requires_grad=True)
        w = torch.linspace(-1, 1, 3, dtype=torch.float32)
        y = (x * w).relu().pow(2).sum(dim=1).mean()
        y.backward()
        result = [y, x.grad, x.grad.dtype, y.shape, x.is_leaf, y.requires_grad]
    """,
    "promotion_and_division": """
        a = torch.arange(6).reshape(2, 3)
        b = torch.tensor([2, 3, 4], dtype=torch.int32)
        result = [a / b, a // b, a % b, (a + 1.5).dtype, (a * b).dtype,
                  torch.div(a, b, rounding_mode="trunc"), a.float().mean(),
                  torch.ones(3, dtype=torch.uint8) + 300]
    """,
    "reductions_and_indexing": """
        x = torch.tensor([[3.0, 1.0, 2.0], [9.0, 7.0, 8.0]])
        m = x.max(dim=1)
        v, i = x.sort(dim=1, descending=True)
        result = [m.values, m.indices, v, i, x.argmax(), x.std(), x.var(dim=0, unbiased=False),
                  x[x > 2.5], x[:, [0, 2]], x.T.contiguous().view(-1), x.topk(2).values,
                  x.cumsum(1), x.logsumexp(1), torch.where(x > 5, x, torch.zeros_like(x))]
    """,
    "shapes": """
        x = torch.arange(24.0).reshape(2, 3, 4)
        result = [x.permute(2, 0, 1).shape, x.flatten(1).shape, x.unsqueeze(0).squeeze().shape,
                  torch.cat([x, x], dim=1).shape, torch.stack([x, x]).shape,
                  [t.shape for t in x.chunk(2, dim=2)], x.transpose(0, 2).is_contiguous(),
                  x.sum((0, 2)), torch.flip(x, [0])[0, 0], x.expand(3, 2, 3, 4).shape]
    """,
    "linalg": """
        a = torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([1.0, 2.0], dtype=torch.float64)
        sol = torch.linalg.solve(a, b)
        (sol.sum() + torch.linalg.det(a) + torch.linalg.inv(a).trace()).backward()
        result = [sol, torch.linalg.norm(a), torch.linalg.eigh(a).eigenvalues, a.grad,
                  torch.einsum("ij,j->i", a, b), torch.matmul(a, b)]
    """,
    "inplace_and_no_grad": """
        w = torch.ones(3, requires_grad=True)
        with torch.no_grad():
            w.mul_(2).add_(1)
        z = torch.zeros(2, 3)
        z[0] = torch.tensor([1.0, 2.0, 3.0])
        z[:, 1] += 5
        result = [w, w.requires_grad, z, torch.is_grad_enabled()]
    """,
    "errors_shape_mismatch": """
        torch.ones(2, 3) @ torch.ones(4, 5)
    """,
    "errors_leaf_inplace": """
        x = torch.ones(2, requires_grad=True)
        x.add_(1)
    """,
    "errors_mean_of_int": """
        torch.arange(3).mean()
    """,
}


def run(source: str, lib):
    namespace = {"torch": lib}
    try:
        exec(textwrap.dedent(source), namespace)
    except Exception as exc:  # the oracle decides which exceptions are expected
        return exc
    return namespace["result"]


def normalise(x):
    if isinstance(x, (real_torch.Tensor, ember.Tensor)):
        arr = x.detach().numpy() if hasattr(x, "detach") else x.numpy()
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), np.asarray(arr))
    if isinstance(x, (real_torch.dtype, ember.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (real_torch.Size, ember.Size)):
        return ("size", tuple(x))
    if isinstance(x, (list, tuple)):
        return [normalise(v) for v in x]
    return x


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_matches_pytorch(name):
    expected = run(SNIPPETS[name], real_torch)
    got = run(SNIPPETS[name], ember)
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), f"ember did not raise; PyTorch raised {expected!r}"
        assert type(got).__name__ == type(expected).__name__, (got, expected)
        return
    assert not isinstance(got, Exception), f"ember raised {got!r}"
    _compare(normalise(got), normalise(expected))


def _compare(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
    elif isinstance(want, tuple) and want and want[0] == "tensor":
        assert got[:3] == want[:3], (got[:3], want[:3])
        np.testing.assert_allclose(got[3], want[3], rtol=1e-5, atol=1e-6)
    else:
        assert got == want
