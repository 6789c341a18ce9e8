"""Optimizers and learning-rate schedulers for Ember, mirroring ``torch.optim``.

Installed by the ``ember-nn`` distribution. Every optimizer updates its parameters in place on
their arrays and keeps PyTorch's ``state_dict`` layout, so checkpoints move both ways.
"""

import ember  # noqa: F401  (ember.optim builds on ember-core)

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__version__ = "0.1.0"

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "SGD", "lr_scheduler"]
