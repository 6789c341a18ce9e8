"""``ember.utils.hooks``: PyTorch's ``torch.utils.hooks``.

``RemovableHandle`` is the one handle class of Ember: tensor and autograd-node hooks
(``ember.autograd.graph.RemovableHandle`` is this class, as in PyTorch), module hooks
(``ember.nn.modules.module.RemovableHandle`` too) and optimizer hooks all return it.
``BackwardHook`` is the helper that runs ``nn.Module``'s full backward (pre-)hooks, by
passing the module's input and output tensors through an identity autograd Function whose
backward calls the hooks.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Any

from .._forksafe import reinit_in_child

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]

# ids are unique across threads: two hooks registered at once never share one
_ID_LOCK = reinit_in_child(threading.Lock())


class RemovableHandle:
    r"""A handle which provides the capability to remove a hook.

    Args:
        hooks_dict (dict): A dictionary of hooks, indexed by hook ``id``; it must accept a
            weak reference (an ``OrderedDict`` or a dict subclass, not a plain ``dict``).
        extra_dict (Union[dict, List[dict]]): An additional dictionary or list of
            dictionaries whose keys will be deleted when the same keys are
            removed from ``hooks_dict``.

    The handle holds the dictionaries weakly: once they are gone, ``remove()`` does nothing.
    It is also a context manager that removes the hook on exit, and it pickles (and
    deep-copies) with the dictionaries themselves, so that a copied module's handles point
    at the copy's hooks.
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        with _ID_LOCK:
            self.id = RemovableHandle.next_id
            RemovableHandle.next_id += 1

        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None:
            hooks_dict.pop(self.id, None)

        for ref in self.extra_dict_ref:
            extra_dict = ref()
            if extra_dict is not None:
                extra_dict.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        if state[0] is None:
            # create a dead reference
            self.hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self.hooks_dict_ref = weakref.ref(state[0])
        self.id = state[1]
        with _ID_LOCK:
            RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)

        if len(state) < 3 or state[2] is None:
            self.extra_dict_ref = ()
        else:
            # an extra dict collected before pickling has nothing left to remove from
            self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2] if d is not None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, type: Any, value: Any, tb: Any) -> None:
        self.remove()


def unserializable_hook(f):
    """Mark a function as an unserializable hook with this decorator.

    This suppresses warnings that would otherwise arise if you attempt
    to serialize a tensor that has a hook.
    """
    f.__torch_unserializable__ = True
    return f


def _tensor_backward_hooks(tensor) -> list:
    """The hooks ``tensor.register_hook`` put on ``tensor`` (Ember keeps them on the tensor's
    autograd node, keyed by output number; PyTorch in ``tensor._backward_hooks``)."""
    own = getattr(tensor, "_backward_hooks", None)  # set by PyTorch's legacy unpickling
    if own:
        return list(own.values())
    node = tensor.grad_fn
    nr = getattr(tensor, "_nr", 0) if node is not None else 0
    if node is None:
        node = getattr(tensor, "_accum", None)
    pre = getattr(node, "_pre_hooks", None) if node is not None else None
    if not pre:
        return []
    return [fn for hook_nr, fn in list(pre.values()) if hook_nr == nr]


def warn_if_has_hooks(tensor) -> None:
    """Warn once per backward hook of ``tensor`` that is not marked with
    :func:`unserializable_hook`: hooks are not serialized with the tensor."""
    for hook in _tensor_backward_hooks(tensor):
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {repr(hook)} on tensor will not be "
                          "serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook "
                          "to suppress this warning", stacklevel=2)


_FUNCTION = []


def _backward_hook_function():
    """``BackwardHookFunction``: the identity on tensors whose backward hands the gradients
    to a callback (made on first use: ``ember.autograd`` imports this module)."""
    if not _FUNCTION:
        from ..autograd.function import Function, _materialize

        class BackwardHookFunction(Function):
            @staticmethod
            def forward(ctx, callback, raw, *args):
                ctx.callback = callback
                # ``raw``: the callback sees the gradients as they arrive, None for an output
                # that got none (the module's outputs: PyTorch's output hook sees None for
                # an unused one); else zeros (its input hook sees zeros for an input that
                # takes none); what flows on is materialized either way
                ctx.set_materialize_grads(not raw)
                # the tensors that do not require grad leave as new tensors sharing their
                # memory, marked non-differentiable (their gradients arrive as zeros)
                args = tuple(arg if arg.requires_grad else arg.detach() for arg in args)
                ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
                return args

            @staticmethod
            def backward(ctx, *grads):
                res = ctx.callback(grads)
                if len(grads) > 1 and any(g is None for g in res):
                    res = _materialize(res, ctx._out_meta)
                return (None, None, *res)

        _FUNCTION.append(BackwardHookFunction)
    return _FUNCTION[0]


class BackwardHook:
    """A wrapper class to implement nn.Module backward hooks.

    It handles:
      - Ignoring non-Tensor inputs and replacing them by None before calling the user hook
      - Generating the proper Node to capture a set of Tensor's gradients
      - Linking the gradients captures for the outputs with the gradients captured for the input
      - Calling the user hook once both output and input gradients are available

    ``setup_input_hook(args)`` and ``setup_output_hook(outputs)`` return the values to use
    in their place (the same tensors, passed through a ``BackwardHookFunction``, whose
    ``grad_fn`` is ``BackwardHookFunctionBackward``). ``user_pre_hooks`` get
    ``(module, grad_output)`` when the outputs' gradients arrive, ``user_hooks``
    ``(module, grad_input, grad_output)`` when the inputs' do; a non-None result replaces
    the gradients. ``grad_input`` has one entry per positional argument (None for the
    non-tensor ones), ``grad_output`` one per output.
    """

    def __init__(self, module, user_hooks, user_pre_hooks) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module

        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _pack_with_none(self, indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values, strict=True):
            res[idx] = val

        return tuple(res)

    def _unpack_none(self, indices, values):
        res = [values[idx] for idx in indices]

        return tuple(res)

    def _input_hook(self, grad_input):
        """The gradients of the wrapped inputs have arrived: run the user hooks."""
        if self.grad_outputs is None:
            # This happens because the gradient in your nn.Module flows to
            # the Module's input without " passing through the Module's
            # output, e.g. when you're doing double backward.
            return grad_input
        res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)

        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)

            if out is None:
                continue

            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")

            res = out

        self.grad_outputs = None

        return self._unpack_none(self.input_tensors_index, res)

    def _output_hook(self, grad_output):
        """The gradients of the wrapped outputs have arrived: run the user pre-hooks (and
        the hooks themselves when no input takes a gradient)."""
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output,
                                                 self.n_outputs)

        if self.user_pre_hooks:
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                if hook_grad_outputs is None:
                    continue

                actual_len = len(hook_grad_outputs)
                if actual_len != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {actual_len}, but expected "
                                       f"{expected_len}")
                self.grad_outputs = hook_grad_outputs

        # We need to be able to clear self.grad_outputs but also return it
        local_grad_outputs = self.grad_outputs

        # Special case if no input required gradients, this hook should call the user
        # hook directly
        if self.input_tensors_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed "
                          "with respect to module outputs since no inputs require gradients. "
                          "See https://docs.pytorch.org/docs/main/generated/torch.nn.Module"
                          ".html#torch.nn.Module.register_full_backward_hook "
                          "for more details.", stacklevel=5)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None

        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

    def _apply_on_tensors(self, callback, args, raw: bool = False):
        # Pass the tensors of args through one BackwardHookFunction whose backward calls
        # ``callback(grads)``. Returns the updated args and the tensors' indices
        from .._tensor import Tensor
        from ..autograd.grad_mode import is_grad_enabled

        tensors_idx = []
        tensors = []

        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad

        if not (requires_grad and is_grad_enabled()):
            return args, None

        new_tensors = _backward_hook_function().apply(callback, raw, *tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input "
                               "Tensors.")

        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors, strict=True):
            arg_list[idx] = val

        if type(args) is tuple:
            out = tuple(arg_list)
        else:
            out = type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(self._input_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False

        res, output_idx = self._apply_on_tensors(self._output_hook, args, raw=True)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx

        if not is_tuple:
            res = res[0]
        return res
