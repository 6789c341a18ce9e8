"""The layers of ``ember.nn`` (``torch.nn.modules``)."""

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, LazyLinear, Linear
from .module import Module
from .transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict", "Identity", "Linear", "LazyLinear", "Bilinear", "Flatten", "Unflatten"]
__all__ += ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
            "TransformerEncoderLayer", "TransformerDecoderLayer"]
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
from .lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)

__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
            "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

# layers over ember-core's kernels (conv, pooling, norms, activations, losses, ...)
from . import (
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    conv,
    distance,
    dropout,
    fold,
    instancenorm,
    loss,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    sparse,
    upsampling,
)
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .batchnorm import SyncBatchNorm
from .channelshuffle import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .fold import *  # noqa: F403
from .loss import *  # noqa: F403
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .sparse import *  # noqa: F403
from .upsampling import *  # noqa: F403

# written out (not a loop) so that type checkers follow them: PEP 484's __all__ += form
__all__ += activation.__all__
__all__ += adaptive.__all__
__all__ += channelshuffle.__all__
__all__ += conv.__all__
__all__ += distance.__all__
__all__ += dropout.__all__
__all__ += fold.__all__
__all__ += loss.__all__
__all__ += normalization.__all__
__all__ += padding.__all__
__all__ += pixelshuffle.__all__
__all__ += pooling.__all__
__all__ += sparse.__all__
__all__ += upsampling.__all__
__all__ += ["SyncBatchNorm"]
