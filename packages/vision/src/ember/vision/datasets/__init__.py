"""Datasets, mirroring ``torchvision.datasets``."""

from .caltech import Caltech101, Caltech256
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .coco import CocoCaptions, CocoDetection
from .digits import Digits
from .dtd import DTD
from .eurosat import EuroSAT
from .fakedata import FakeData
from .fer2013 import FER2013
from .flowers102 import Flowers102
from .folder import (
    IMG_EXTENSIONS,
    DatasetFolder,
    ImageFolder,
    default_loader,
    find_classes,
    make_dataset,
)
from .food101 import Food101
from .gtsrb import GTSRB
from .imagenet import ImageNet
from .imagenette import Imagenette
from .mnist import KMNIST, MNIST, FashionMNIST
from .mnist_more import EMNIST, QMNIST
from .oxford_iiit_pet import OxfordIIITPet
from .semeion import SEMEION
from .stl10 import STL10
from .svhn import SVHN
from .usps import USPS
from .vision import StandardTransform, VisionDataset
from .voc import VOCDetection, VOCSegmentation

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
    "Caltech101",
    "Caltech256",
    "CelebA",
    "CocoCaptions",
    "CocoDetection",
    "DTD",
    "EuroSAT",
    "FER2013",
    "Flowers102",
    "Food101",
    "GTSRB",
    "ImageNet",
    "Imagenette",
    "EMNIST",
    "QMNIST",
    "OxfordIIITPet",
    "SEMEION",
    "STL10",
    "SVHN",
    "USPS",
    "VOCDetection",
    "VOCSegmentation",
]
