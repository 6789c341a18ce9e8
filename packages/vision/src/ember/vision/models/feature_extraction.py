"""Feature extraction through ``ember.fx`` (``torchvision.models.feature_extraction``).

:func:`create_feature_extractor` traces a model and rewrites its graph so that it returns
the values of chosen intermediate nodes, as a dict; :func:`get_graph_node_names` lists the
names those nodes can be chosen by. A node's name is the ``.``-separated path of the module
it was traced in, followed, for anything but a leaf module's call, by the node's own name
(``layer1.0.relu_1``, ``layer2.0.downsample.0``, ``add``, ``x``); an operation or leaf module
repeated within one module gets a ``_{counter}`` suffix counted within that module.

Each model is traced twice, in train and in eval mode; the returned :class:`DualGraphModule`
runs the graph of the mode it is in.
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable
from itertools import chain
from typing import Any

import ember
from ember import fx, nn

from .. import ops

__all__ = ["create_feature_extractor", "get_graph_node_names"]

#: a name that already carries ember.fx's graph-wide ``_{counter}`` suffix
_COUNTER_SUFFIX = re.compile(r".+_[0-9]+$")


class LeafModuleAwareTracer(fx.Tracer):
    """An :class:`ember.fx.Tracer` that is told which module classes not to trace through
    (``leaf_modules=[...]``, a keyword argument besides the Tracer's own): each call of such
    a module becomes one ``call_module`` node."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.leaf_modules = kwargs.pop("leaf_modules", ())
        super().__init__(*args, **kwargs)

    def is_leaf_module(self, m: nn.Module, module_qualname: str) -> bool:
        if isinstance(m, tuple(self.leaf_modules)):
            return True
        return super().is_leaf_module(m, module_qualname)


class NodePathTracer(LeafModuleAwareTracer):
    """A tracer that also names each node it records by its path in the module tree
    (``node_to_qualname``: Node -> name, in the order the nodes were traced).

    The name is the qualified name of the module being traced when the node was made (the
    root module's name left out), followed by ``.`` and the node's own name unless the node
    is the call of that (leaf) module itself. ember.fx numbers repeated names across the
    whole graph (``relu_3``); here the counter is local to the name: the first
    ``layer1.0.relu`` is followed by ``layer1.0.relu_1``, and ``layer2.0.relu`` starts
    again without one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the qualified name of the module whose forward is being traced
        self.current_module_qualname = ""
        self.node_to_qualname: OrderedDict[fx.Node, str] = OrderedDict()

    def call_module(self, m: nn.Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """Trace the call with ``m``'s qualified name as the current one, then restore the
        caller's."""
        old_qualname = self.current_module_qualname
        try:
            self.current_module_qualname = self.path_of_module(m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.current_module_qualname = old_qualname

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Callable | None = None) -> fx.Proxy:
        """Record the node as the Tracer does, and its qualified name."""
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr,
                                     proxy_factory_fn)
        self.node_to_qualname[proxy.node] = self._get_node_qualname(
            self.current_module_qualname, proxy.node)
        return proxy

    def _get_node_qualname(self, module_qualname: str, node: fx.Node) -> str:
        node_qualname = module_qualname
        if node.op != "call_module":
            # the module path stops at the module; append the operation's own name
            if node_qualname:
                node_qualname += "."
            node_qualname += str(node)
        # drop a trailing ``_{int}`` (ember.fx's graph-wide counter, or part of the
        # module's own name, as torchvision does) ...
        if _COUNTER_SUFFIX.match(node_qualname) is not None:
            node_qualname = node_qualname.rsplit("_", 1)[0]
        # ... and count from the latest name recorded as this one or this one + _{int}
        same_name = re.compile(rf"{re.escape(node_qualname)}(_[0-9]+)?$")
        for existing_qualname in reversed(self.node_to_qualname.values()):
            if same_name.match(existing_qualname) is not None:
                postfix = existing_qualname[len(node_qualname):]
                next_index = int(postfix[1:]) + 1 if postfix else 1
                node_qualname += f"_{next_index}"
                break
        return node_qualname


def _is_subseq(x: list, y: list) -> bool:
    """Whether ``y`` is a subsequence of ``x``."""
    iter_x = iter(x)
    return all(any(x_item == y_item for x_item in iter_x) for y_item in y)


def _warn_graph_differences(train_tracer: NodePathTracer, eval_tracer: NodePathTracer) -> None:
    """Warn when tracing in train mode and in eval mode gave different nodes."""
    train_nodes = list(train_tracer.node_to_qualname.values())
    eval_nodes = list(eval_tracer.node_to_qualname.values())
    if train_nodes == eval_nodes:
        return
    suggestion_msg = ("When choosing nodes for feature extraction, you may need to specify "
                      "output nodes for train and eval mode separately.")
    if _is_subseq(train_nodes, eval_nodes):
        msg = ("NOTE: The nodes obtained by tracing the model in eval mode "
               "are a subsequence of those obtained in train mode. ")
    elif _is_subseq(eval_nodes, train_nodes):
        msg = ("NOTE: The nodes obtained by tracing the model in train mode "
               "are a subsequence of those obtained in eval mode. ")
    else:
        msg = ("The nodes obtained by tracing the model in train mode are different to "
               "those obtained in eval mode. ")
    warnings.warn(msg + suggestion_msg, stacklevel=3)


def _get_leaf_modules_for_ops() -> list[type]:
    """The Module classes of ``ember.vision.ops`` (``Conv2dNormActivation``,
    ``SqueezeExcitation``, ``StochasticDepth``...): leaves by default."""
    return [obj for _, obj in inspect.getmembers(ops)
            if inspect.isclass(obj) and issubclass(obj, nn.Module)]


def _set_default_tracer_kwargs(original_tr_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """Add ``math`` and ``ember.vision.ops`` to ``autowrap_modules`` and the ops' Module
    classes to ``leaf_modules``, in the given dict (as torchvision does) or a new one."""
    default_autowrap_modules = (math, ops)
    default_leaf_modules = _get_leaf_modules_for_ops()
    result = {} if original_tr_kwargs is None else original_tr_kwargs
    if "autowrap_modules" in result:
        result["autowrap_modules"] = tuple(
            set(result["autowrap_modules"] + default_autowrap_modules))
    else:
        result["autowrap_modules"] = default_autowrap_modules
    if "leaf_modules" in result:
        result["leaf_modules"] = list(set(result["leaf_modules"] + default_leaf_modules))
    else:
        result["leaf_modules"] = default_leaf_modules
    return result


def get_graph_node_names(
    model: nn.Module,
    tracer_kwargs: dict[str, Any] | None = None,
    suppress_diff_warning: bool = False,
    concrete_args: dict[str, Any] | None = None,
) -> tuple[list[str], list[str]]:
    """The names of a model's nodes in the order they run, traced once in train mode and
    once in eval mode: the names :func:`create_feature_extractor` accepts. They cannot
    always be read off the model's code: leaf modules (ember.nn's own, ember.vision.ops')
    are not traced through, and an operation or leaf module repeated within one module gets
    a ``_{counter}`` suffix.

    Args:
        model (nn.Module): the model whose nodes to name.
        tracer_kwargs (dict, optional): keyword arguments of :class:`NodePathTracer` (and
            of :class:`ember.fx.Tracer`). ``math`` and ``ember.vision.ops`` are always
            added to ``autowrap_modules`` and the Module classes of ``ember.vision.ops`` to
            ``leaf_modules``; a dict given here is updated with them.
        suppress_diff_warning (bool, optional): do not warn when the train and eval graphs
            differ. Default: False.
        concrete_args (dict, optional): arguments of ``forward`` that are not traced as
            proxies (see :meth:`ember.fx.Tracer.trace`).

    Returns:
        tuple(list, list): the node names traced in train mode, and in eval mode.

    Example::

        >>> model = ember.vision.models.resnet18()
        >>> train_nodes, eval_nodes = get_graph_node_names(model)
        >>> train_nodes[:6]
        ['x', 'conv1', 'bn1', 'relu', 'maxpool', 'layer1.0.conv1']
    """
    tracer_kwargs = _set_default_tracer_kwargs(tracer_kwargs)
    is_training = model.training
    train_tracer = NodePathTracer(**tracer_kwargs)
    train_tracer.trace(model.train(), concrete_args=concrete_args)
    eval_tracer = NodePathTracer(**tracer_kwargs)
    eval_tracer.trace(model.eval(), concrete_args=concrete_args)
    train_nodes = list(train_tracer.node_to_qualname.values())
    eval_nodes = list(eval_tracer.node_to_qualname.values())
    if not suppress_diff_warning:
        _warn_graph_differences(train_tracer, eval_tracer)
    model.train(is_training)
    return train_nodes, eval_nodes


class DualGraphModule(fx.GraphModule):
    """A :class:`~ember.fx.GraphModule` with two graphs: ``train_graph`` runs in train mode
    and ``eval_graph`` in eval mode; ``.train()`` / ``.eval()`` switch between them. It holds
    the submodules and attributes either graph uses, copied from ``root``."""

    def __init__(self, root: nn.Module, train_graph: fx.Graph, eval_graph: fx.Graph,
                 class_name: str = "GraphModule") -> None:
        nn.Module.__init__(self)
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        self.train_graph = train_graph
        self.eval_graph = eval_graph
        for node in chain(train_graph.nodes, eval_graph.nodes):
            if node.op in ("get_attr", "call_module"):
                if not isinstance(node.target, str):
                    raise TypeError("node.target should be of type str instead of "
                                    f"{type(node.target)}")
                _copy_attr(root, self, node.target)
        self.meta: dict[str, Any] = {}
        self.train()
        self.graph = train_graph
        if eval_graph._tracer_cls != train_graph._tracer_cls:
            raise TypeError("Train mode and eval mode should use the same tracer class. "
                            f"Instead got {eval_graph._tracer_cls} for eval vs "
                            f"{train_graph._tracer_cls} for train")
        tracer_cls = train_graph._tracer_cls
        self._tracer_cls = tracer_cls if tracer_cls and \
            "<locals>" not in tracer_cls.__qualname__ else None

    def train(self, mode: bool = True) -> DualGraphModule:
        """Set train or eval mode and run that mode's graph (recompiled only when the mode
        changes)."""
        if mode and not self.training:
            self.graph = self.train_graph
        elif not mode and self.training:
            self.graph = self.eval_graph
        return super().train(mode)

    def __deepcopy__(self, memo: dict) -> DualGraphModule:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_graph", "_code", "_code_globals", "_lineno_map",
                              "_prologue_start")}
        cls = type(self).__bases__[0]
        res = cls.__new__(cls)
        memo[id(self)] = res
        fake = nn.Module()
        fake.__dict__.update(copy.deepcopy(state, memo))
        DualGraphModule.__init__(res, fake, fake.__dict__["train_graph"],
                                 fake.__dict__["eval_graph"], type(self).__name__)
        for k, v in fake.__dict__.items():  # hooks and flags: what __init__ did not copy
            res.__dict__.setdefault(k, v)
        res.train(self.training)
        res.meta = copy.deepcopy(self.meta, memo)
        return res


def _copy_attr(from_module: nn.Module, to_module: nn.Module, target: str) -> None:
    """Put ``from_module``'s attribute at the dotted path ``target`` at the same path in
    ``to_module``, with empty Modules for missing parents; a plain tensor becomes a buffer.
    (GraphModule's constructor does this for one graph; its helper is private to ember-nn,
    which is versioned apart.)"""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # the whole submodule is there already
            return
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _to_strdict(nodes: list[str] | dict[str, str]) -> dict[str, str]:
    """Return nodes as a dict node name -> output name (a list names them by themselves)."""
    if isinstance(nodes, list):
        return {str(i): str(i) for i in nodes}
    return {str(k): str(v) for k, v in nodes.items()}


def create_feature_extractor(
    model: nn.Module,
    return_nodes: list[str] | dict[str, str] | None = None,
    train_return_nodes: list[str] | dict[str, str] | None = None,
    eval_return_nodes: list[str] | dict[str, str] | None = None,
    tracer_kwargs: dict[str, Any] | None = None,
    suppress_diff_warning: bool = False,
    concrete_args: dict[str, Any] | None = None,
) -> fx.GraphModule:
    """A module that runs ``model`` up to the chosen nodes and returns their values as a
    dict (output name -> tensor, in the order the nodes run). The model is traced with
    ember.fx and its graph rewritten to return those nodes; what they do not need is
    removed, with the parameters only it used.

    A node is chosen by its name (see :func:`get_graph_node_names`) or by a ``.``-separated
    prefix of names: ``"layer1"`` chooses the last node traced inside ``layer1``.

    Models that do not trace as they are can often be helped: a submodule that should not
    be traced through can be made a leaf (``tracer_kwargs={"leaf_modules": [MyModule]}``)
    and a function one node (``tracer_kwargs={"autowrap_functions": [my_function]}``), for
    instance one that calls ``int`` on a traced value.

    Args:
        model (nn.Module): the model to extract features from.
        return_nodes (list or dict, optional): the nodes to return: a dict of node name ->
            output name, or a list of node names, each its own output name. Not to be given
            with ``train_return_nodes`` and ``eval_return_nodes``.
        train_return_nodes (list or dict, optional): as ``return_nodes``, for train mode
            only; needs ``eval_return_nodes`` too, and no ``return_nodes``.
        eval_return_nodes (list or dict, optional): as ``return_nodes``, for eval mode
            only; needs ``train_return_nodes`` too, and no ``return_nodes``.
        tracer_kwargs (dict, optional): keyword arguments of :class:`NodePathTracer` (and of
            :class:`ember.fx.Tracer`). ``math`` and ``ember.vision.ops`` are always added to
            ``autowrap_modules`` and the Module classes of ``ember.vision.ops`` to
            ``leaf_modules``; a dict given here is updated with them.
        suppress_diff_warning (bool, optional): do not warn when the train and eval graphs
            differ. Default: False.
        concrete_args (dict, optional): arguments of ``forward`` that are not traced as
            proxies (see :meth:`ember.fx.Tracer.trace`).

    Example::

        >>> model = ember.vision.models.resnet18()
        >>> extractor = create_feature_extractor(
        ...     model, {"layer1": "feat1", "layer3": "feat2"})
        >>> out = extractor(ember.rand(1, 3, 224, 224))
        >>> [(k, v.shape) for k, v in out.items()]
        [('feat1', ember.Size([1, 64, 56, 56])), ('feat2', ember.Size([1, 256, 14, 14]))]
    """
    tracer_kwargs = _set_default_tracer_kwargs(tracer_kwargs)
    is_training = model.training

    if all(arg is None for arg in (return_nodes, train_return_nodes, eval_return_nodes)):
        raise ValueError("Either `return_nodes` or `train_return_nodes` and "
                         "`eval_return_nodes` together, should be specified")
    if (train_return_nodes is None) ^ (eval_return_nodes is None):
        raise ValueError("If any of `train_return_nodes` and `eval_return_nodes` are "
                         "specified, then both should be specified")
    if not ((return_nodes is None) ^ (train_return_nodes is None)):
        raise ValueError("If `train_return_nodes` and `eval_return_nodes` are specified, "
                         "then both should be specified")

    if train_return_nodes is None:
        return_nodes = _to_strdict(return_nodes)
        train_return_nodes = dict(return_nodes)
        eval_return_nodes = dict(return_nodes)
    else:
        train_return_nodes = _to_strdict(train_return_nodes)
        eval_return_nodes = _to_strdict(eval_return_nodes)
    mode_return_nodes = {"train": train_return_nodes, "eval": eval_return_nodes}

    name = type(model).__name__ if isinstance(model, nn.Module) else model.__name__
    tracers: dict[str, NodePathTracer] = {}
    graphs: dict[str, fx.Graph] = {}
    for mode in ("train", "eval"):
        model.train(mode == "train")
        tracer = NodePathTracer(**tracer_kwargs)
        graph = tracer.trace(model, concrete_args=concrete_args)
        graph_module = fx.GraphModule(tracer.root, graph, name)
        _return_nodes_as_output(graph, tracer, mode_return_nodes[mode])
        graph.eliminate_dead_code()  # what the chosen nodes do not need
        graph_module.recompile()
        tracers[mode] = tracer
        graphs[mode] = graph

    if not suppress_diff_warning:
        _warn_graph_differences(tracers["train"], tracers["eval"])

    graph_module = DualGraphModule(model, graphs["train"], graphs["eval"], class_name=name)
    model.train(is_training)
    graph_module.train(is_training)
    return graph_module


def _return_nodes_as_output(graph: fx.Graph, tracer: NodePathTracer,
                            return_nodes: dict[str, str]) -> None:
    """Replace ``graph``'s output by a dict of the nodes chosen in ``return_nodes`` (node
    name or prefix -> output name), in graph order."""
    available_nodes = list(tracer.node_to_qualname.values())
    if len(set(available_nodes)) != len(available_nodes):
        raise ValueError("There are duplicate nodes! Please raise an issue "
                         "https://github.com/pytorch/vision/issues")
    for query in return_nodes:
        # a query names a node, or a prefix of node names up to a '.'
        prefix = re.compile(rf"^{re.escape(query)}(\.|$)")
        if not any(prefix.match(n) is not None for n in available_nodes):
            raise ValueError(
                f"node: '{query}' is not present in model. Hint: use "
                "`get_graph_node_names` to make sure the "
                "`return_nodes` you specified are present. It may even "
                "be that you need to specify `train_return_nodes` and "
                "`eval_return_nodes` separately.")

    orig_output_nodes = [n for n in reversed(graph.nodes) if n.op == "output"]
    if not orig_output_nodes:
        raise ValueError("No output nodes found in graph_module.graph.nodes")
    for n in orig_output_nodes:
        graph.erase_node(n)

    # the last node (in graph order) whose name starts with the query, for each query
    pending = dict(return_nodes)
    nodes = list(graph.nodes)
    output_nodes: OrderedDict[str, fx.Node] = OrderedDict()
    for n in reversed(nodes):
        module_qualname = tracer.node_to_qualname.get(n)
        if module_qualname is None:
            # not recorded by create_proxy: a tensor constant, a value packed by create_arg
            continue
        for query in pending:
            depth = query.count(".")
            if ".".join(module_qualname.split(".")[:depth + 1]) == query:
                output_nodes[pending.pop(query)] = n
                break
    output_nodes = OrderedDict(reversed(list(output_nodes.items())))
    with graph.inserting_after(nodes[-1]):
        graph.output(output_nodes)
