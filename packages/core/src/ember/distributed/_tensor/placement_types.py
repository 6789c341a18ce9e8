"""``torch.distributed._tensor.placement_types``: the old path of the placement types."""

from ..tensor._api import DTensorSpec  # noqa: F401
from ..tensor.placement_types import *  # noqa: F403
from ..tensor.placement_types import __all__  # noqa: F401
