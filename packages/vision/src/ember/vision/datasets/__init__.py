"""Datasets, mirroring ``torchvision.datasets``."""

from ._optical_flow import HD1K, FlyingChairs, FlyingThings3D, KittiFlow, Sintel
from ._stereo_matching import (
    CarlaStereo,
    CREStereo,
    ETH3DStereo,
    FallingThingsStereo,
    InStereo2k,
    Kitti2012Stereo,
    Kitti2015Stereo,
    Middlebury2014Stereo,
    SceneFlowStereo,
    SintelStereo,
)
from ._tv_tensors_dataset_wrapper import wrap_dataset_for_transforms_v2
from .caltech import Caltech101, Caltech256
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .cityscapes import Cityscapes
from .clevr import CLEVRClassification
from .coco import CocoCaptions, CocoDetection
from .country211 import Country211
from .digits import Digits
from .dtd import DTD
from .eurosat import EuroSAT
from .fakedata import FakeData
from .fer2013 import FER2013
from .fgvc_aircraft import FGVCAircraft
from .flickr import Flickr8k, Flickr30k
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
from .inaturalist import INaturalist
from .kitti import Kitti
from .lfw import LFWPairs, LFWPeople
from .lsun import LSUN, LSUNClass
from .mnist import KMNIST, MNIST, FashionMNIST
from .mnist_more import EMNIST, QMNIST
from .omniglot import Omniglot
from .oxford_iiit_pet import OxfordIIITPet
from .pcam import PCAM
from .phototour import PhotoTour
from .places365 import Places365
from .rendered_sst2 import RenderedSST2
from .sbd import SBDataset
from .sbu import SBU
from .semeion import SEMEION
from .stanford_cars import StanfordCars
from .stl10 import STL10
from .sun397 import SUN397
from .svhn import SVHN
from .usps import USPS
from .vision import StandardTransform, VisionDataset
from .voc import VOCDetection, VOCSegmentation
from .widerface import WIDERFace

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
    "Country211",
    "FGVCAircraft",
    "LFWPairs",
    "LFWPeople",
    "Omniglot",
    "RenderedSST2",
    "StanfordCars",
    "SUN397",
    "CLEVRClassification",
    "Flickr8k",
    "Flickr30k",
    "Places365",
    "SBDataset",
    "Cityscapes",
    "Kitti",
    "WIDERFace",
    "INaturalist",
    "PhotoTour",
    "FlyingChairs",
    "FlyingThings3D",
    "Sintel",
    "SBU",
    "HD1K",
    "KittiFlow",
    "CarlaStereo",
    "CREStereo",
    "ETH3DStereo",
    "FallingThingsStereo",
    "InStereo2k",
    "Kitti2012Stereo",
    "Kitti2015Stereo",
    "Middlebury2014Stereo",
    "SceneFlowStereo",
    "SintelStereo",
    "LSUN",
    "LSUNClass",
    "PCAM",
    "wrap_dataset_for_transforms_v2",
]
