"""``ember.func``: composable function transforms (``torch.func``).

``vmap`` vectorizes a function over a batch dimension; ``grad``, ``grad_and_value``,
``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian`` differentiate functions;
``linearize`` keeps a function's linearization for many jvps; ``functional_call`` calls a
module with given parameters and ``stack_module_state`` stacks the states of several modules;
``functionalize``, ``replace_all_batch_norm_modules_`` and ``debug_unwrap`` as in PyTorch.
``torch.func.rearrange`` (einops) is not provided: it needs the einops package. The transforms
compose: ``vmap(grad(loss))`` gives per-sample gradients, ``jacfwd(jacrev(f))`` the Hessian.

How ``vmap`` runs an op: through the op's batching rule, registered per op in the op
registry (``ember.ops.batching_rules``; :func:`batch_rules` lists them); an op without one
falls back to a loop over the batch (slice, call, stack) that is correct but slower.
"""

from .._functorch.eager_transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from .._functorch.functional_call import functional_call, stack_module_state
from .._functorch.functionalize import (
    debug_unwrap,
    functionalize,
    replace_all_batch_norm_modules_,
)
from .._functorch.vmap import vmap
from ..ops.registry import batch_rules

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state", "linearize", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap", "batch_rules"]
