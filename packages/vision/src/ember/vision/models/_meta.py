"""Category names of the models' datasets (torchvision's ``models._meta``).

``_IMAGENET_CATEGORIES``: the 1,000 ImageNet-1k class names in class-index order, read from
``_imagenet_categories.txt`` (built from timm's WordNet lemma lists; see ATTRIBUTION.md).
"""

from importlib import resources

_IMAGENET_CATEGORIES: list[str] = (
    resources.files(__package__)
    .joinpath("_imagenet_categories.txt")
    .read_text(encoding="utf-8")
    .splitlines()
)
