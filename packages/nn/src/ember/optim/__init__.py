"""Optimizers and learning-rate schedulers for Ember, mirroring ``torch.optim``.

Installed by the ``ember-nn`` distribution. Every optimizer updates its parameters in place on
their arrays and keeps PyTorch's ``state_dict`` layout, so checkpoints move both ways.
"""

import ember  # (ember.optim builds on ember-core)

from . import lr_scheduler, swa_utils
from ._adafactor import Adafactor
from ._muon import Muon
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

# PyTorch shows these under ``torch.optim`` though they live in private modules
Adafactor.__module__ = "ember.optim"
Muon.__module__ = "ember.optim"
swap_in_optimizer_params_and_state.__module__ = "ember.optim"

__version__ = "0.1.0"

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon",
           "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler",
           "swa_utils", "swap_in_optimizer_params_and_state"]
