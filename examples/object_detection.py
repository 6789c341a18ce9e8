"""Object detection with Faster R-CNN, in the shape of torchvision's object detection
fine-tuning tutorial: a dataset that returns images and target dicts (boxes, masks, labels),
transforms v2 that flip images and their boxes and masks together, torchvision's FasterRCNN
on a small backbone of our own, trained on synthetic pedestrians (no download), and evaluated
by recall and precision at IoU 0.5. The walk-through is docs/tutorials/object_detection.md,
whose code blocks are this file. Runs in about a minute and a half on a 2-core CPU."""

import time

import ember as torch
import ember.nn as nn
from ember.utils.data import DataLoader, Dataset
from ember.vision import tv_tensors
from ember.vision.models.detection import FasterRCNN
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.ops import MultiScaleRoIAlign, box_iou
from ember.vision.transforms import v2 as T

torch.manual_seed(0)


class SyntheticPedestrians(Dataset):
    """``n`` images of 1 to 3 "pedestrians" (a tall textured body under a round head) on a
    noisy background, each image drawn from its own seeded generator."""

    def __init__(self, n, seed, size=128, transforms=None):
        self.n, self.seed, self.size, self.transforms = n, seed, size, transforms

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(self.seed * 100_003 + idx)
        s = self.size
        image = 0.3 * torch.rand(3, s, s, generator=g) + 0.2 * torch.rand(3, 1, 1, generator=g)
        ys, xs = torch.arange(s).view(s, 1), torch.arange(s).view(1, s)
        count = int(torch.randint(1, 4, (1,), generator=g))
        boxes, masks = [], []
        for _ in range(count):
            h = int(torch.randint(36, 80, (1,), generator=g))
            w = int(h * (0.3 + 0.15 * float(torch.rand(1, generator=g))))
            x0 = int(torch.randint(0, s - w, (1,), generator=g))
            y0 = int(torch.randint(0, s - h, (1,), generator=g))
            head = w // 2
            body = (ys >= y0 + head) & (ys < y0 + h) & (xs >= x0) & (xs < x0 + w)
            round_head = (ys - y0 - head // 2) ** 2 + (xs - x0 - w // 2) ** 2 <= (head // 2) ** 2
            mask = body | round_head
            color = 0.5 + 0.5 * torch.rand(3, 1, 1, generator=g)
            texture = 0.8 + 0.2 * torch.rand(1, s, s, generator=g)
            image = torch.where(mask, color * texture, image)
            pixels = mask.nonzero()  # (row, column) of every pixel of this pedestrian
            boxes.append([pixels[:, 1].min(), pixels[:, 0].min(),
                          pixels[:, 1].max() + 1, pixels[:, 0].max() + 1])
            masks.append(mask)
        target = {
            "boxes": tv_tensors.BoundingBoxes(torch.tensor(boxes, dtype=torch.float32),
                                              format="XYXY", canvas_size=(s, s)),
            "masks": tv_tensors.Mask(torch.stack(masks).to(torch.uint8)),
            "labels": torch.ones(count, dtype=torch.int64),  # class 1: pedestrian (0: background)
            "image_id": idx,
        }
        image = tv_tensors.Image(image)
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target


def get_transform(train):
    transforms = []
    if train:
        transforms.append(T.RandomHorizontalFlip(0.5))
    transforms.append(T.ToPureTensor())
    return T.Compose(transforms)


train_set = SyntheticPedestrians(256, seed=1, transforms=get_transform(train=True))
test_set = SyntheticPedestrians(32, seed=2, transforms=get_transform(train=False))
image, target = train_set[0]
print(f"image {tuple(image.shape)}, {len(target['boxes'])} pedestrians, "
      f"masks {tuple(target['masks'].shape)}")

raw_image, raw_target = SyntheticPedestrians(1, seed=1)[0]  # no transforms: still tv_tensors
flipped_image, flipped_target = T.RandomHorizontalFlip(p=1.0)(raw_image, raw_target)
print(type(raw_image).__name__, type(raw_target["boxes"]).__name__,
      type(raw_target["masks"]).__name__)
print("boxes:        ", raw_target["boxes"][0].tolist())
print("flipped boxes:", flipped_target["boxes"][0].tolist())
assert torch.equal(flipped_target["masks"], raw_target["masks"].flip(-1))


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


backbone = nn.Sequential(block(3, 16), block(16, 32), block(32, 64),
                         nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(inplace=True))
backbone.out_channels = 64  # FasterRCNN reads this

anchor_generator = AnchorGenerator(sizes=((24, 48, 96),), aspect_ratios=((0.5, 1.0, 2.0),))
roi_pooler = MultiScaleRoIAlign(featmap_names=["0"], output_size=7, sampling_ratio=2)
model = FasterRCNN(backbone, num_classes=2, rpn_anchor_generator=anchor_generator,
                   box_roi_pool=roi_pooler, min_size=128, max_size=128,
                   rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=150,
                   rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=50,
                   rpn_batch_size_per_image=64, box_batch_size_per_image=64)
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")


def collate_fn(batch):
    return tuple(zip(*batch))


loader = DataLoader(train_set, batch_size=4, shuffle=True, collate_fn=collate_fn)
params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=0.02, momentum=0.9, weight_decay=1e-4)
epochs = 4
lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.02,
                                                   total_steps=epochs * len(loader))

start = time.time()
for epoch in range(epochs):
    model.train()
    running = 0.0
    for images, targets in loader:
        loss_dict = model(list(images), list(targets))
        loss = sum(loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        running += loss.item()
    parts = ", ".join(f"{k} {v.item():.3f}" for k, v in loss_dict.items())
    print(f"epoch {epoch}: loss {running / len(loader):.3f} ({parts}) "
          f"[{time.time() - start:.0f} s]")

model.eval()
with torch.no_grad():
    prediction = model([test_set[0][0]])[0]
print({k: tuple(v.shape) for k, v in prediction.items()})
print("scores:", [round(s, 3) for s in prediction["scores"][:5].tolist()])

found = detected = truths = 0
with torch.no_grad():
    for i in range(len(test_set)):
        image, target = test_set[i]
        output = model([image])[0]
        boxes = output["boxes"][output["scores"] > 0.5]
        truths += len(target["boxes"])
        detected += len(boxes)
        if len(boxes):
            iou = box_iou(target["boxes"], boxes)  # (truths, detections)
            found += int((iou.max(dim=1).values >= 0.5).sum())
recall, precision = found / truths, found / max(detected, 1)
print(f"recall {recall:.2f}, precision {precision:.2f} at IoU 0.5 "
      f"({truths} pedestrians in {len(test_set)} held-out images)")
