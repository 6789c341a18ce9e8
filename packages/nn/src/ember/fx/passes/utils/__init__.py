"""``ember.fx.passes.utils``: helpers of the passes (``matcher_utils.InternalMatch``)."""

from . import matcher_utils

__all__ = ["matcher_utils"]
