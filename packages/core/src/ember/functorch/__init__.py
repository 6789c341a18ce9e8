"""``functorch``, PyTorch's former home of ``torch.func``, for the programs that still import
it (``python -m ember.as_torch`` maps ``import functorch`` here): ``ember.func``'s transforms
(``vmap``, ``grad``, ``jacrev``...) under their functorch names, and functorch's deprecated
``make_functional``, ``make_functional_with_buffers`` and ``combine_state_for_ensemble``
(with PyTorch's FutureWarning; ``functional_call`` and ``stack_module_state`` replace them).
"""

from .._functorch.make_functional import (
    FunctionalModule,
    FunctionalModuleWithBuffers,
    combine_state_for_ensemble,
    make_functional,
    make_functional_with_buffers,
)
from ..func import (
    functionalize,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    vjp,
    vmap,
)

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "combine_state_for_ensemble",
           "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "make_functional", "make_functional_with_buffers", "vjp", "vmap"]
