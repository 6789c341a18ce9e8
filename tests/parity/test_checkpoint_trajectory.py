"""A model and optimizer checkpoint written by torch.save continues PyTorch's training
trajectory in ember (and the other way round), through real files."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))


def _steps(lib, model, opt, x, y, n):
    for _ in range(n):
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("direction", ["torch_to_ember", "ember_to_torch"])
@pytest.mark.parametrize("optim", ["Adam", "SGD"])
def test_checkpoint_continues_trajectory(tmp_path, direction, optim):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((16, 6)).astype(np.float32)
    y_np = rng.integers(0, 3, 16)
    kwargs = {"lr": 0.05} if optim == "Adam" else {"lr": 0.1, "momentum": 0.9}
    src_lib, dst_lib = (torch, ember) if direction == "torch_to_ember" else (ember, torch)

    src = _model(src_lib)
    src_opt = getattr(src_lib.optim, optim)(src.parameters(), **kwargs)
    sx, sy = src_lib.tensor(x_np), src_lib.tensor(y_np)  # on the default device, as the model
    _steps(src_lib, src, src_opt, sx, sy, 3)
    path = tmp_path / "ckpt.pt"
    src_lib.save({"model": src.state_dict(), "optimizer": src_opt.state_dict()}, path)

    # map_location: a device's storages are saved with their location, which a CPU torch
    # restores only when told where to; load_state_dict copies onto the model's device
    ckpt = dst_lib.load(path, weights_only=True, map_location="cpu")
    dst = _model(dst_lib)
    dst.load_state_dict(ckpt["model"])
    dst_opt = getattr(dst_lib.optim, optim)(dst.parameters(), **kwargs)
    dst_opt.load_state_dict(ckpt["optimizer"])

    _steps(src_lib, src, src_opt, sx, sy, 5)
    _steps(dst_lib, dst, dst_opt, dst_lib.tensor(x_np), dst_lib.tensor(y_np), 5)
    for (name, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
