"""WikiText2, as ``torchtext.datasets.WikiText2``: Wikipedia articles for language modelling."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import ModuleType

from ._utils import TextDataset, archive_member, dataset, read_lines

__all__ = ["WikiText2"]

URL = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip"

MD5 = "542ccefacc6c27f945fb54453812b3cd"

NUM_LINES = {"train": 36718, "valid": 3760, "test": 4358}

DATASET_NAME = "WikiText2"


def extracted_files(folder: str) -> dict[str, str]:
    """The split files inside a WikiText zip: ``<folder>/wiki.<split>.tokens``."""
    return {split: os.path.join(folder, f"wiki.{split}.tokens")
            for split in ("train", "test", "valid")}


_EXTRACTED_FILES = extracted_files("wikitext-2")


def make_wikitext(module: ModuleType) -> Callable:
    """The torchtext function of one WikiText zip (WikiText2, WikiText103), reading the
    ``URL``, ``MD5``, ``NUM_LINES`` and ``_EXTRACTED_FILES`` of ``module`` when called."""
    name = module.DATASET_NAME

    def wikitext(root: str, split: str) -> TextDataset:
        path = archive_member(root, module.URL, module.MD5, module._EXTRACTED_FILES[split])
        return TextDataset(name, split, path, read_lines, module.NUM_LINES[split])

    wikitext.__name__ = wikitext.__qualname__ = name
    wikitext.__module__ = module.__name__
    details = ("https://blog.salesforceairesearch.com/"
               "the-wikitext-long-term-dependency-language-modeling-dataset/")
    return dataset(name, module.NUM_LINES, details, "text from Wikipedia articles (each line "
                   "with its newline)", "str")(wikitext)


WikiText2 = make_wikitext(sys.modules[__name__])
