"""``torch.jit.annotations``: the typing names TorchScript code imports from here.

Model code written for TorchScript spells its annotations ``from torch.jit.annotations
import List, Tuple, Optional`` (timm's DenseNet, torchvision's older models): these are
:mod:`typing`'s own objects, and ``BroadcastingList1/2/3`` (TorchScript's "an int or a list
of N ints") are ``List`` as Python sees them. Ember traces instead of compiling source, so
nothing here carries TorchScript type objects.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035 (the names themselves)

from ..futures import Future

BroadcastingList1 = List  # noqa: UP006
BroadcastingList2 = List  # noqa: UP006
BroadcastingList3 = List  # noqa: UP006

__all__ = ["Any", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Dict", "Future",
           "List", "Optional", "Tuple", "Union"]
