"""Ember hub, mirroring ``torch.hub``: ``load``, ``list``, ``help`` and the weights cache.

Models of other distributions are found through the ``ember.hub`` entry-point
group, never by a static import. Installed by the ``ember-hub`` distribution.
"""

__version__ = "0.1.0"
