"""Datasets, mirroring ``torchvision.datasets``."""

from .cifar import CIFAR10, CIFAR100
from .digits import Digits
from .fakedata import FakeData
from .folder import (
    IMG_EXTENSIONS,
    DatasetFolder,
    ImageFolder,
    default_loader,
    find_classes,
    make_dataset,
)
from .mnist import KMNIST, MNIST, FashionMNIST
from .vision import StandardTransform, VisionDataset

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "Digits",
    "FakeData",
    "IMG_EXTENSIONS",
    "DatasetFolder",
    "ImageFolder",
    "default_loader",
    "find_classes",
    "make_dataset",
    "KMNIST",
    "MNIST",
    "FashionMNIST",
    "StandardTransform",
    "VisionDataset",
]
