"""Text datasets: Jane Austen's novels and *Botchan* embedded (offline), and torchtext's
download datasets through ember-hub's downloader, as in ``torchtext.datasets``.

The download datasets keep torchtext's names, URLs, checksums, splits and item types:
``AG_NEWS(root=".data", split=("train", "test"))`` returns one dataset per split (one
dataset for a split name), each an ``IterableDataset`` whose items are sharded over
DataLoader workers and whose ``len()`` is torchtext's ``NUM_LINES``. Files go to
``<root>/datasets/<NAME>``; downloads are verified (MD5), retried and resumed, and raise
``ember.hub.OfflineError`` when ``EMBER_HUB_OFFLINE=1`` and the files are not there.
``EMBER_TEXT_MIRROR=<base URL>`` fetches every file from ``<base>/<host>/<path>`` instead
of its own URL.
"""

from . import ag_news, imdb, penntreebank, sst2, wikitext2, wikitext103
from ._utils import ENV_MIRROR, SplitError
from .ag_news import AG_NEWS
from .austen import AustenNovels, AustenText, split_sentences
from .botchan import Botchan
from .imdb import IMDB
from .penntreebank import PennTreebank
from .sst2 import SST2
from .wikitext2 import WikiText2
from .wikitext103 import WikiText103

__all__ = [
    "AG_NEWS",
    "DATASETS",
    "ENV_MIRROR",
    "IMDB",
    "MD5",
    "NUM_LINES",
    "URLS",
    "AustenNovels",
    "AustenText",
    "Botchan",
    "PennTreebank",
    "SST2",
    "SplitError",
    "WikiText2",
    "WikiText103",
    "split_sentences",
]

#: torchtext's download datasets by name
DATASETS = {
    "AG_NEWS": AG_NEWS,
    "IMDB": IMDB,
    "PennTreebank": PennTreebank,
    "SST2": SST2,
    "WikiText103": WikiText103,
    "WikiText2": WikiText2,
}

_MODULES = {"AG_NEWS": ag_news, "IMDB": imdb, "PennTreebank": penntreebank, "SST2": sst2,
            "WikiText103": wikitext103, "WikiText2": wikitext2}
#: each download dataset's URL(s), MD5(s) and number of items per split, as in torchtext
URLS = {name: module.URL for name, module in _MODULES.items()}
MD5 = {name: module.MD5 for name, module in _MODULES.items()}
NUM_LINES = {name: module.NUM_LINES for name, module in _MODULES.items()}
