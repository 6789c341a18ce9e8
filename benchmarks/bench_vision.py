"""ember-vision workloads, side by side with PyTorch: ResNet-18 and an image-loading pipeline.

torchvision is not assumed: the PyTorch side is a compact ResNet-18 written here with
torchvision's module names (so ``state_dict`` keys match and ember's weights copy over through
NumPy), and a PIL + torch-ops version of RandomResizedCrop / flip / ToTensor / Normalize.
"""

from __future__ import annotations

import math
import os
import random
import tempfile
import time

import numpy as np
from harness import Result, compare

N_IMAGES = 1000
N_CLASSES = 10
IMAGE_SIZE = 256
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


# ---------------------------------------------------------------- torch ResNet-18


def _torch_resnet18(torch):
    """torchvision's resnet18 architecture (same module names), in plain torch.nn."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            self.layer1 = self._layer(64, 1)
            self.layer2 = self._layer(128, 2)
            self.layer3 = self._layer(256, 2)
            self.layer4 = self._layer(512, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def _layer(self, planes, stride):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(
                    nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                    nn.BatchNorm2d(planes))
            blocks = [BasicBlock(self.inplanes, planes, stride, downsample),
                      BasicBlock(planes, planes)]
            self.inplanes = planes
            return nn.Sequential(*blocks)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()


def _resnet_pair(torch):
    """ember's resnet18 and (when torch is there) a torch resnet18 holding the same weights."""
    import ember.vision

    e_model = ember.vision.models.resnet18()
    if torch is None:
        return e_model, None
    t_model = _torch_resnet18(torch)
    state = {k: torch.from_numpy(np.array(v.detach().numpy(), copy=True))
             for k, v in e_model.state_dict().items()}
    t_model.load_state_dict(state)
    return e_model, t_model


def _inference_fn(lib, model, x):
    model.eval()

    def run():
        with lib.no_grad():
            model(x)

    return run


def _train_fn(lib, model, x, y):
    model.train()
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


# ---------------------------------------------------------------- image pipeline


def _image_dir() -> str:
    """``N_IMAGES`` JPEGs in ``N_CLASSES`` class folders, made once and cached in the temp dir."""
    from PIL import Image

    root = os.path.join(tempfile.gettempdir(), f"ember_bench_jpegs_{N_IMAGES}")
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 255, IMAGE_SIZE, dtype=np.float32)
    per_class = N_IMAGES // N_CLASSES
    for c in range(N_CLASSES):
        folder = os.path.join(root, f"class_{c:02d}")
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            base = rng.uniform(0, 1, 3).astype(np.float32)
            grad = (ramp[:, None, None] * base + ramp[None, :, None] * (1 - base)) / 2
            noise = rng.normal(0, 20, (IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
            pixels = np.clip(grad + noise, 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, f"{i:04d}.jpg"), quality=90)
    open(done, "w").close()
    return root


class _TorchTransform:
    """RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize, torchvision-style."""

    def __init__(self, torch, size=224, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        self.torch = torch
        self.size = size
        self.scale = scale
        self.log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        self.ratio = ratio
        self.mean = torch.tensor(MEAN).view(-1, 1, 1)
        self.std = torch.tensor(STD).view(-1, 1, 1)

    def _crop_params(self, width, height):
        torch = self.torch
        area = height * width
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(*self.scale).item()
            aspect = math.exp(torch.empty(1).uniform_(*self.log_ratio).item())
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                i = int(torch.randint(0, height - h + 1, size=(1,)).item())
                j = int(torch.randint(0, width - w + 1, size=(1,)).item())
                return i, j, h, w
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img):
        from PIL import Image

        torch = self.torch
        i, j, h, w = self._crop_params(*img.size)
        img = img.crop((j, i, j + w, i + h)).resize((self.size, self.size), Image.BILINEAR)
        if torch.rand(1).item() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        t = torch.from_numpy(np.array(img, np.uint8, copy=True)).permute(2, 0, 1).contiguous()
        t = t.to(torch.get_default_dtype()).div(255)
        return t.sub_(self.mean).div_(self.std)


class _TorchImageFolder:
    """A minimal ImageFolder for torch: (PIL RGB image -> transform, class index)."""

    def __init__(self, root, transform):
        classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
        self.samples = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        from PIL import Image

        path, target = self.samples[index]
        with open(path, "rb") as f:
            img = Image.open(f).convert("RGB")
        return self.transform(img), target


def _pass_fn(loader):
    def run():
        n = 0
        for x, _ in loader:
            n += x.shape[0]
        assert n == N_IMAGES, n

    return run


def _loader_pair(torch, root):
    import ember.utils.data
    import ember.vision
    from ember.vision import transforms as T

    e_transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                             T.Normalize(MEAN, STD)])
    e_data = ember.vision.datasets.ImageFolder(root, transform=e_transform)
    e_loader = ember.utils.data.DataLoader(e_data, batch_size=32, shuffle=True, num_workers=2)
    t_fn = None
    if torch is not None:
        t_data = _TorchImageFolder(root, _TorchTransform(torch))
        t_loader = torch.utils.data.DataLoader(t_data, batch_size=32, shuffle=True,
                                               num_workers=2)
        t_fn = _pass_fn(t_loader)
    return _pass_fn(e_loader), t_fn


def _per_thousand(name: str, ember_fn, torch_fn, rounds: int = 2) -> Result:
    """Seconds per 1,000 images: the best of ``rounds`` full passes each, taken in turns."""
    best = {"ember": float("inf"), "torch": float("inf")}
    for _ in range(rounds):
        for label, fn in (("ember", ember_fn), ("torch", torch_fn)):
            if fn is None:
                continue
            t0 = time.perf_counter()
            fn()
            best[label] = min(best[label], time.perf_counter() - t0)
            time.sleep(0.3)
    scale = 1000 / N_IMAGES
    torch_s = None if torch_fn is None else best["torch"] * scale
    return Result(name, best["ember"] * scale, torch_s)


def workloads(torch):
    import ember

    rng = np.random.default_rng(0)
    results = []

    ember.manual_seed(0)
    e_model, t_model = _resnet_pair(torch)
    x = rng.standard_normal((8, 3, 224, 224)).astype(np.float32)
    e = _inference_fn(ember, e_model, ember.from_numpy(x))
    t = None if torch is None else _inference_fn(torch, t_model, torch.from_numpy(x))
    results.append(compare("resnet18 inference (b8, 3x224x224, eval, no_grad)", e, t,
                           number=1, repeat=6))

    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 1000, 32)
    e = _train_fn(ember, e_model, ember.from_numpy(x), ember.from_numpy(y))
    t = None if torch is None else _train_fn(torch, t_model, torch.from_numpy(x),
                                             torch.from_numpy(y))
    results.append(compare("resnet18 training step (b32, 3x32x32, SGD momentum)", e, t,
                           number=3, repeat=6))  # 2 rounds of 3 steps per turn, 3 turns

    random.seed(0)
    e, t = _loader_pair(torch, _image_dir())
    results.append(_per_thousand(
        f"ImageFolder + DataLoader pass, per 1,000 JPEGs ({N_IMAGES} of {IMAGE_SIZE}px, "
        "RandomResizedCrop(224)+flip+ToTensor+Normalize, 2 workers, b32)", e, t))
    return results
