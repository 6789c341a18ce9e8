"""``functorch``, PyTorch's former home of ``torch.func``, for the programs that still import
it (``python -m ember.as_torch`` maps ``import functorch`` here): ``ember.func``'s transforms
(``vmap``, ``grad``, ``jacrev``...) under their functorch names, each call with PyTorch's
FutureWarning (functorch's transforms are deprecated since PyTorch 2.0), and functorch's
deprecated ``make_functional``, ``make_functional_with_buffers`` and
``combine_state_for_ensemble`` (with PyTorch's FutureWarning too; ``functional_call`` and
``stack_module_state`` replace them).
"""

import functools as _functools
import warnings as _warnings

from .. import func as _func
from .._functorch.make_functional import (
    FunctionalModule,
    FunctionalModuleWithBuffers,
    combine_state_for_ensemble,
    make_functional,
    make_functional_with_buffers,
)


def _deprecated(name: str, replacement: str):
    transform = getattr(_func, name)

    @_functools.wraps(transform)
    def wrapper(*args, **kwargs):
        _warnings.warn(
            f"We've integrated functorch into PyTorch. As the final step of the integration, "
            f"`functorch.{name}` is deprecated as of PyTorch 2.0 and will be deleted in a "
            f"future version of PyTorch >= 2.3. Please use `{replacement}` instead; see the "
            "PyTorch 2.0 release notes and/or the `torch.func` migration guide for more "
            "details https://pytorch.org/docs/main/func.migrating.html", FutureWarning,
            stacklevel=2)
        return transform(*args, **kwargs)

    return wrapper


vmap = _deprecated("vmap", "torch.vmap")
grad = _deprecated("grad", "torch.func.grad")
grad_and_value = _deprecated("grad_and_value", "torch.func.grad_and_value")
vjp = _deprecated("vjp", "torch.func.vjp")
jvp = _deprecated("jvp", "torch.func.jvp")
jacrev = _deprecated("jacrev", "torch.func.jacrev")
jacfwd = _deprecated("jacfwd", "torch.func.jacfwd")
hessian = _deprecated("hessian", "torch.func.hessian")
functionalize = _deprecated("functionalize", "torch.func.functionalize")

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "combine_state_for_ensemble",
           "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "make_functional", "make_functional_with_buffers", "vjp", "vmap"]
