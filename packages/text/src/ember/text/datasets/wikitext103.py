"""WikiText103, as ``torchtext.datasets.WikiText103``: the large WikiText corpus."""

from __future__ import annotations

import sys

from .wikitext2 import extracted_files, make_wikitext

__all__ = ["WikiText103"]

URL = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip"

MD5 = "9ddaacaf6af0710eda8c456decff7832"

NUM_LINES = {"train": 1801350, "valid": 3760, "test": 4358}

DATASET_NAME = "WikiText103"

_EXTRACTED_FILES = extracted_files("wikitext-103")

WikiText103 = make_wikitext(sys.modules[__name__])
