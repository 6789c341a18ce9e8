"""``torch.distributed._tensor.api``: the old path of DTensor's API module."""

from ..tensor._api import *  # noqa: F403
from ..tensor._api import __all__  # noqa: F401
