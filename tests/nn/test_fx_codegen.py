"""ember.fx's code generation and the rest of torch.fx's user-facing surface: CodeGen and
Graph.set_codegen / on_generate_code / process_inputs/outputs, type annotations and verbose
code, print_readable, ProxyableClassMeta, Tracer flags (param_shapes_constant,
proxy_buffer_attributes, traced_func_name, record_stack_traces), Node.normalized_arguments,
passes.split_module. Most tests run one program on ember and on torch (the oracle, skipped
without it) and compare what they print, with 'torch' read as 'ember'."""

# no ``from __future__ import annotations``: the traced functions' annotations must be types

import copy
import importlib
import operator
import re
import typing

import numpy as np
import pytest

import ember
import ember.fx as fx
import ember.nn as nn


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().cpu().numpy()),
                               np.asarray(b.detach().cpu().numpy()), rtol=tol, atol=tol)


def both(program):
    """``program(lib)`` (a string) for ember and for torch, 'torch' read as 'ember' in both
    (a user's codegen may write ``torch.Tensor``, which is ember under ``import ember as
    torch`` and in the generated code's globals)."""
    ours = program(ember).replace("torch", "ember")
    torch = pytest.importorskip("torch")
    theirs = program(torch).replace("torch", "ember")
    return ours, theirs


def passes(lib, name: str):
    return importlib.import_module(f"{lib.__name__}.fx.passes.{name}")


# -- CodeGen ------------------------------------------------------------------------------
def test_default_codegen_methods_match_torch():
    def program(lib):
        cg = lib.fx.CodeGen()
        free = ["a", "b"]
        out = [cg.gen_fn_def(free, ""), repr(free), cg.gen_fn_def(["self", "x"], " -> int"),
               cg.gen_fn_def(["a", "b # in"], "", expanded_def=True),
               cg.generate_output(("a", "b")), cg.generate_output(["a", "b"], descs=["x", "y"]),
               cg.generate_output(("a",), descs=["x"], repr_fn=str),
               repr(cg.process_inputs(1, 2)), repr(cg.process_outputs([3])),
               repr(cg.additional_globals())]
        return "\n".join(out)

    ours, theirs = both(program)
    assert ours == theirs
    assert ours.split("\n")[:2] == ["def forward(self, a, b):", "['self', 'a', 'b']"]


class ListCodeGen(fx.CodeGen):
    """PyTorch's own CodeGen example (test_fx's ListCodeGen): forward takes one list."""

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        return f"""
def forward(self, args_list: List[torch.Tensor]){maybe_return_annotation}:
    {', '.join(free_vars)} = args_list"""

    def additional_globals(self):
        return [("List", typing.List)]  # noqa: UP006

    def process_inputs(self, *inputs):
        assert len(inputs) == 1
        return inputs[0]

    def generate_output(self, output_args):
        return f"return list({repr(output_args)})"

    def process_outputs(self, outputs):
        return list(outputs)


def _list_codegen_program(lib):
    # the same ListCodeGen, subclassing lib's CodeGen
    codegen_cls = type("ListCodeGen", (lib.fx.CodeGen,), dict(vars(ListCodeGen)))

    def f(a, b):
        a = a + b
        b = a + b
        return a, b

    nf = lib.fx.symbolic_trace(f)
    vals = [lib.ones(3), lib.ones(3) * 2]
    nf.graph.set_codegen(codegen_cls())
    nf.recompile()
    out = [nf.code, repr([t.tolist() for t in nf(vals)]),
           repr([t.tolist() for t in lib.fx.Interpreter(nf).run(vals)])]
    bare = lib.fx.GraphModule({}, copy.deepcopy(nf.graph))
    out.append(type(bare.graph._codegen).__name__)  # deepcopy keeps the codegen
    bare.graph.set_codegen(lib.fx.CodeGen())
    bare.recompile()
    out += [bare.code, repr([t.tolist() for t in
                             nf.graph.process_outputs(bare(*nf.graph.process_inputs(vals)))])]
    transformed = lib.fx.Transformer(nf).transform()  # the new graph keeps the codegen
    out += [transformed.code, repr([t.tolist() for t in transformed(vals)])]
    interp = lib.fx.Interpreter(nf)
    out.append(repr(interp.run(*vals, enable_io_processing=False)).count("tensor"))
    return "\n".join(map(str, out))


def test_list_codegen_doc_example_matches_torch():
    ours, theirs = both(_list_codegen_program)
    assert ours == theirs
    assert "def forward(self, args_list: List[ember.Tensor]):\n    a, b = args_list\n" in ours
    assert "[[3.0, 3.0, 3.0], [5.0, 5.0, 5.0]]" in ours


def test_codegen_runs_without_torch():
    out = _list_codegen_program(ember)  # the program itself, whatever the oracle
    assert out.count("[[3.0, 3.0, 3.0], [5.0, 5.0, 5.0]]") == 4
    assert "return list((add, add_1))" in out


def _flatten(tree):
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _flatten(item)]
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in _flatten(tree[key])]
    return [tree]


class FlattenCodeGen(fx.CodeGen):
    """A pytree-style codegen: forward takes one nested structure and flattens it; the result
    is a dict."""

    def __init__(self, keys):
        type(self).__mro__[1].__init__(self)  # the test rebuilds this class on torch's CodeGen
        self.keys = keys

    def gen_fn_def(self, free_vars, maybe_return_annotation, *, expanded_def=False):
        return (f"def forward(self, tree){maybe_return_annotation}:\n"
                f"    {', '.join(free_vars)}, = flatten(tree)")

    def generate_output(self, output_args, *, descs=None, repr_fn=None):
        return f"return dict(zip({self.keys!r}, {repr_fn(output_args)}))"

    def additional_globals(self):
        return [("flatten", _flatten)]

    def process_inputs(self, *inputs):
        return _flatten(inputs[0])

    def process_outputs(self, outputs):
        return dict(zip(self.keys, outputs))


def test_flattening_codegen_keeps_process_invariant():
    def program(lib):
        cls = type("FlattenCodeGen", (lib.fx.CodeGen,), dict(vars(FlattenCodeGen)))

        def f(a, b, c):
            return a * b + c, a - c

        gm = lib.fx.symbolic_trace(f)
        gm.graph.set_codegen(cls(("sum", "diff")))
        gm.recompile()
        tree = ((lib.full((2,), 2.0), lib.full((2,), 3.0)), {"c": lib.ones(2)})
        got = gm(tree)
        interp = lib.fx.Interpreter(gm).run(tree)
        return "\n".join([gm.code, repr({k: v.tolist() for k, v in got.items()}),
                          repr({k: v.tolist() for k, v in interp.items()})])

    ours, theirs = both(program)
    assert ours == theirs
    assert "def forward(self, tree):\n    a, b, c, = flatten(tree)\n" in ours
    assert ours.endswith("{'sum': [7.0, 7.0], 'diff': [1.0, 1.0]}\n"
                         "{'sum': [7.0, 7.0], 'diff': [1.0, 1.0]}")


def test_on_generate_code_sees_torchs_body_and_restores():
    def program(lib):
        def f(x, y):
            return (x + y).relu()

        gm = lib.fx.symbolic_trace(f)
        seen = []

        def count_calls(body):
            seen.append(list(body))
            return ["self.calls.append(1)\n", *body]

        gm.calls = []
        with gm.graph.on_generate_code(lambda current: count_calls):
            gm.recompile()
        with_hook = gm.code
        gm(lib.ones(2), lib.ones(2))
        gm.recompile()  # the previous (no) transformer is back
        # a transformer that chains the one installed
        gm.graph.on_generate_code(lambda current: count_calls)
        gm.graph.on_generate_code(
            lambda current: lambda body: ["# outer\n", *current(body)])
        gm.recompile()
        return "\n".join([repr(seen), with_hook, repr(gm.calls), gm.code])

    ours, theirs = both(program)
    assert ours == theirs
    # the transformer gets torch.fx's fragments, node markers included
    assert ours.startswith("[['# COUNTER: 0\\n', '# COUNTER: 1\\n', '# COUNTER: 2\\n', "
                           "'add = x + y', ';  x = y = None\\n', '# COUNTER: 3\\n', "
                           "'relu = add.relu()', ';  add = None\\n', '# COUNTER: 4\\n', "
                           "'return relu', '\\n']")
    assert "def forward(self, x, y):\n    self.calls.append(1)\n    add = x + y" in ours
    assert "[1]\n" in ours and "    # outer\n    self.calls.append(1)\n" in ours


# -- python_code, annotations, verbose code ----------------------------------------------------
def test_python_code_root_module_and_globals_match_torch():
    def program(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)
                self.register_buffer("scale", lib.ones(2))

            def forward(self, x):
                return self.lin(x) * self.scale

        gm = lib.fx.symbolic_trace(M())
        code = gm.graph.python_code(root_module="root")
        return code.src + repr(sorted(k for k in code.globals
                                      if k not in ("torch", "ember", "fx_pytree", "pytree",
                                                   "operator")))

    ours, theirs = both(program)
    assert ours == theirs
    assert "def forward(self, x):\n    lin = root.lin(x);  x = None\n" \
           "    scale = root.scale\n" in ours


def _annotated_program(lib):
    from typing import List, Optional  # noqa: UP035

    def f(x: lib.Tensor, ys: List[lib.Tensor], z: Optional[lib.Tensor] = None,  # noqa: UP006, UP045
          n: int = 3, w: list[int] = None) -> typing.Tuple[lib.Tensor, int]:  # noqa: UP006
        return x + n, 2

    gm = lib.fx.symbolic_trace(f)
    out = gm(lib.ones(2), [])
    return "\n".join([str(gm.graph), gm.code, repr(out[0].tolist()),
                      repr(sorted(k for k in gm.graph.python_code("self").globals
                                  if k.startswith("typing")))])


def test_type_annotations_print_and_generate_as_torch():
    ours, theirs = both(_annotated_program)
    assert ours == theirs
    assert "    %x : ember.Tensor [num_users=1] = placeholder[target=x]\n" in ours
    assert "    %ys : typing.List[ember.Tensor] [num_users=0] = placeholder[target=ys]\n" \
        in ours
    assert "def forward(self, x : ember.Tensor, ys : typing_List[ember.Tensor], " \
           "z : typing_Union[ember.Tensor,NoneType] = None, n : int = 3, " \
           "w : list[int] = None) -> typing_Tuple[ember.Tensor,int]:" in ours


def _readable_program(lib):
    class MyModule(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.param = lib.nn.Parameter(lib.rand(3, 4))
            self.linear = lib.nn.Linear(4, 5)

        def forward(self, x: lib.Tensor):
            return self.linear(x + self.param).clamp(min=0.0, max=1.0)

    gm = lib.fx.symbolic_trace(MyModule())
    plain = gm.print_readable(print_output=False)
    passes(lib, "shape_prop").ShapeProp(gm).propagate(lib.ones(3, 4))
    verbose = gm.print_readable(print_output=False)
    src = gm.graph.python_code("self", verbose=True, include_stride=True,
                               include_device=True).src
    expanded = gm.graph.python_code("self", expanded_def=True).src
    return "\n".join([plain, verbose, src, expanded, gm.code])


def test_print_readable_and_verbose_code_match_torch():
    ours, theirs = both(_readable_program)
    assert ours == theirs
    assert ours.startswith(
        "class MyModule(ember.nn.Module):\n"
        "    def forward(self, x : ember.Tensor):\n"
        "        # No stacktrace found for following nodes\n"
        "        param = self.param\n")
    assert '        add: "f32[3, 4]" = x + param;  x = param = None\n' in ours
    assert "def forward(\n    self,\n    x : ember.Tensor,\n) -> " not in ours  # no return type
    assert "def forward(\n    self,\n    x : ember.Tensor,\n):\n" in ours


def test_print_readable_nests_child_graph_modules():
    def program(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        gm = lib.fx.symbolic_trace(m)
        split = passes(lib, "split_module").split_module(
            gm, m, lambda n: 0 if n.target == "0" else 1)
        return split.print_readable(print_output=False) + "\n" + repr(split) + "\n" + \
            str(split).split("\n\n\n\n")[-1]

    ours, theirs = both(program)
    assert ours == theirs
    assert "\n    class submod_0(ember.nn.Module):\n        def forward(self, input_1):\n" \
        in ours


def test_repr_is_modules_and_str_adds_the_code():
    gm = fx.symbolic_trace(nn.Sequential(nn.ReLU()))
    assert repr(gm) == "Sequential(\n  (0): ReLU()\n)"
    assert str(gm).startswith(repr(gm) + "\n\n\n\ndef forward(self, input):\n")


def test_placeholders_only_graph_still_compiles():
    g = fx.Graph()
    g.placeholder("x")
    gm = fx.GraphModule(nn.Module(), g)
    assert gm.code == "\n\n\ndef forward(self, x):\n    pass\n    "
    assert gm(1) is None


# -- ProxyableClassMeta and tracer flags ------------------------------------------------------
def _proxyable_program(lib):
    class TensorPair(metaclass=lib.fx.ProxyableClassMeta):
        def __init__(self, left, right):
            self.left, self.right = left, right

        def add(self, other):
            return TensorPair(self.left + other.left, self.right + other.right)

        def mul(self, other):
            return TensorPair(self.left * other.left, self.right * other.right)

    def use_tensor_pair_ctor(x: TensorPair, y: lib.Tensor):
        s = x.add(TensorPair(y, y))
        return s.mul(x)

    x = TensorPair(lib.ones(2), lib.full((2,), 2.0))
    y = lib.full((2,), 3.0)
    traced = lib.fx.symbolic_trace(use_tensor_pair_ctor)
    got, want = traced(x, y), use_tensor_pair_ctor(x, y)
    const = TensorPair(lib.ones(1), lib.zeros(1))

    def g(a):
        return TensorPair(a, const)

    gm = lib.fx.symbolic_trace(g)
    pair = gm(lib.ones(1))
    return "\n".join(map(str, [
        traced.code, traced.graph, type(got).__name__, got.left.tolist(), got.right.tolist(),
        want.left.tolist(), want.right.tolist(), gm.code, gm.graph,
        pair.right is gm._TensorPair_constant_0, type(pair.right).__name__]))


def test_proxyable_class_meta_doc_example_matches_torch():
    ours, theirs = both(_proxyable_program)
    assert ours == theirs
    # the class's global is named after its module and name, as torch.fx names it
    assert re.search(r"def forward\(self, x : (\w*test_fx_codegen\w*_TensorPair), "
                     r"y : ember\.Tensor\):\n    tensor_pair = \1\(y, y\);  y = None\n", ours)
    assert "TensorPair\n[4.0, 4.0]\n[10.0, 10.0]\n[4.0, 4.0]\n[10.0, 10.0]\n" in ours
    assert ours.endswith("True\nTensorPair")


def test_proxyable_class_builds_normally_outside_a_trace():
    class Box(metaclass=fx.ProxyableClassMeta):
        def __init__(self, v):
            self.v = v

    assert Box(3).v == 3 and type(Box(3)) is Box
    from ember.fx._symbolic_trace import is_fx_tracing

    seen = []

    def f(x):
        seen.append(is_fx_tracing())
        return Box(2).v * x  # no proxy argument: a real instance, even while tracing

    gm = fx.symbolic_trace(f)
    assert seen == [True] and not is_fx_tracing()
    close(gm(ember.ones(2)), ember.full((2,), 2.0))


def test_tracer_flags_match_torch():
    def program(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = lib.nn.Linear(3, 4)

            def forward(self, x):
                if self.l.weight.shape[0] == 4 and self.l.weight.dim() == 2:
                    return self.l(x) * self.l.weight.numel() + self.l.weight.size()[1]
                return x

        class B(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("b", lib.ones(3))

            def forward(self, x):
                return x + self.b.sum()

        class Other(lib.nn.Module):
            def forward(self, x):
                return x

            def other(self, x):
                return x.relu()

        class OtherTracer(lib.fx.Tracer):
            traced_func_name = "other"

        t = lib.fx.Tracer()
        t.proxy_buffer_attributes = True
        seen = []

        class Spy(lib.fx.Tracer):
            def getattr(self, attr, attr_val, parameter_proxy_cache):
                out = super().getattr(attr, attr_val, parameter_proxy_cache)
                seen.append(repr(out) if attr == "weight" else "")
                return out

        Spy(param_shapes_constant=True).trace(M())
        out = [lib.fx.Tracer(param_shapes_constant=True).trace(M()), t.trace(B()),
               lib.fx.Tracer().trace(B()), OtherTracer().trace(Other()), sorted(set(seen))]
        try:
            lib.fx.Tracer().trace(M())
        except lib.fx.proxy.TraceError as e:
            out.append(e)
        try:
            OtherTracer().trace(B())
        except AssertionError as e:
            out.append(e)
        return "\n".join(map(str, out))

    ours, theirs = both(program)
    assert ours == theirs
    assert "call_function[target=operator.mul](args = (%l, 12), kwargs = {})" in ours
    assert "['', 'ParameterProxy(l.weight)']" in ours
    assert ours.endswith("traced_func_name=other doesn't exist in B")


def test_record_stack_traces_names_the_users_line():
    class M(nn.Module):
        def forward(self, x):
            y = x.relu()
            return y + 1

    tracer = fx.Tracer()
    tracer.record_stack_traces = True
    gm = fx.GraphModule(M(), tracer.trace(M()))
    traces = {n.name: n.stack_trace for n in gm.graph.nodes}
    assert traces["x"] is None and traces["output"] is None  # no forward frame yet / at end
    assert traces["relu"].endswith("y = x.relu()") and "in forward" in traces["relu"]
    assert traces["add"].endswith("return y + 1")
    assert "ember/fx" not in traces["add"] and "module.py" not in traces["add"]
    src = gm.graph.python_code("self", verbose=True).src
    assert "    # File: " in src and "in forward, code: y = x.relu()\n    relu = x.relu()" in src
    node = next(iter(gm.graph.nodes))
    node.stack_trace = "here"
    assert node.meta["stack_trace"] == "here"
    assert fx.symbolic_trace(M()).graph.find_nodes(op="call_method")[0].stack_trace is None


# -- Node and Graph helpers ---------------------------------------------------------------
def scaled(x, scale=2.0, *, shift=0.0):
    return x * scale + shift


fx.wrap("scaled")
try:
    import torch as _torch
except ImportError:
    _torch = None
else:
    _torch.fx.wrap("scaled")


def test_normalized_arguments_match_torch():
    def program(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)

            def forward(self, x):
                a = lib.nn.functional.relu(x, inplace=False)
                b = self.lin(a)
                c = scaled(b, shift=1.0)
                return getattr(c, "shape"), c + 1  # noqa: B009

        gm = lib.fx.symbolic_trace(M())
        out = []
        for n in gm.graph.nodes:
            out.append(f"{n.format_node()} -> {n.normalized_arguments(gm)} | "
                       f"{n.normalized_arguments(gm, normalize_to_only_use_kwargs=True)}")
        out.append(repr(gm.graph.output_node()))
        return "\n".join(out)

    ours, theirs = both(program)
    assert ours == theirs
    assert "target=ember.nn.functional.relu](args = (%x,), kwargs = {inplace: False}) -> " \
           "ArgsKwargsPair(args=(x,), kwargs={'inplace': False}) | " \
           "ArgsKwargsPair(args=(), kwargs={'input': x, 'inplace': False})" in ours
    assert "call_module[target=lin](args = (%relu,), kwargs = {}) -> " \
           "ArgsKwargsPair(args=(relu,), kwargs={})" in ours
    assert "kwargs = {shift: 1.0}) -> ArgsKwargsPair(args=(lin,), kwargs={'scale': 2.0, " \
           "'shift': 1.0}) | ArgsKwargsPair(args=(), kwargs={'x': lin, 'scale': 2.0, " \
           "'shift': 1.0})" in ours
    assert "target=builtins.getattr](args = (%scaled, shape), kwargs = {}) -> None" in ours


def test_normalized_arguments_of_a_user_module_and_bad_calls():
    class Mine(nn.Module):
        def forward(self, x, k=2):
            return x * k

    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.mine = Mine()

        def forward(self, x):
            return ember.clamp(self.mine(x), max=1.0)

    class Leaves(fx.Tracer):
        def is_leaf_module(self, m, name):
            return True

    top = Top()
    gm = fx.GraphModule(top, Leaves().trace(top))
    mine, clamp = gm.graph.find_nodes(op="call_module")[0], \
        gm.graph.find_nodes(op="call_function", target=ember.clamp)[0]
    with pytest.raises(AssertionError, match="target must not be None for call_function op"):
        gm.graph.find_nodes(op="call_function")  # torch.fx's lookup needs the function
    assert mine.normalized_arguments(gm) is None  # not an ember.nn module: as torch.fx
    pair = clamp.normalized_arguments(gm)
    assert pair.args == (mine,) and pair.kwargs == {"min": None, "max": 1.0}
    clamp.kwargs = {"nope": 1}
    with pytest.raises(TypeError):
        clamp.normalized_arguments(gm)
    from ember.fx.operator_schemas import normalize_function

    assert normalize_function(len, ([1],)) is None


def test_codegen_survives_deepcopy_and_graph_module_copies():
    def f(a, b):
        return a - b

    gm = fx.symbolic_trace(f)
    gm.graph.set_codegen(ListCodeGen())
    gm.recompile()
    vals = [ember.full((2,), 5.0), ember.ones(2)]
    for copied in (copy.deepcopy(gm), fx.GraphModule(gm, copy.deepcopy(gm.graph))):
        assert isinstance(copied.graph._codegen, ListCodeGen)
        assert copied.code == gm.code
        close(copied(vals)[0], ember.full((2,), 4.0))
    assert gm.graph.process_inputs([1, 2]) == [1, 2]
    assert gm.graph.process_outputs((1,)) == [1]


# -- passes.split_module --------------------------------------------------------------------
def _split_program(lib):
    lib.manual_seed(0)
    split_module = passes(lib, "split_module").split_module

    class MyModule(lib.nn.Module):  # split_module's documentation example
        def __init__(self):
            super().__init__()
            self.param = lib.nn.Parameter(lib.rand(3, 4))
            self.linear = lib.nn.Linear(4, 5)

        def forward(self, x, y):
            z = self.linear(x + self.param).clamp(min=0.0, max=1.0)
            w = self.linear(y).clamp(min=0.0, max=1.0)
            return z + w

    my_module = MyModule()
    traced = lib.fx.symbolic_trace(my_module)
    counter = [0]

    def mod_partition(node):
        partition = counter[0] % 3
        counter[0] = (counter[0] + 1) % 3
        return partition

    qualname_map: dict = {}
    out = split_module(traced, my_module, mod_partition, qualname_map)
    text = [str(out), *(f"{name}:{child.code}" for name, child in out.named_children()),
            repr(sorted(qualname_map.items())), repr(sorted(out.meta["partition_names"]))]
    counter[0] = 0
    out2 = split_module(traced, my_module, mod_partition, keep_original_order=True,
                        keep_original_node_name=True, keep_original_input_name=False,
                        partition_affix="p", tuple_return=True)
    text += [out2.code, *(f"{name}:{child.code}" for name, child in out2.named_children())]
    x, y = lib.rand(3, 4), lib.rand(3, 4)
    for split in (out, out2):
        text.append(str(bool((split(x, y) - traced(x, y)).abs().max() < 1e-6)))
    try:
        split_module(traced, my_module,
                     lambda n: {"add": 0, "linear": 1, "clamp": 0}.get(n.name, 2))
    except RuntimeError as e:
        text.append(str(e))
    return "\n".join(text)


def test_split_module_doc_example_matches_torch():
    ours, theirs = both(_split_program)
    assert ours == theirs
    assert "    submod_0 = self.submod_0(x, param, y);  x = param = y = None\n" \
           "    getitem = submod_0[0]\n" in ours
    assert "submod_p_2:\n\n\ndef forward(self, arg_0, arg_1):\n" in ours
    assert ours.endswith("True\nTrue\ncycle exists between partitions!")


def test_split_module_values_without_torch():
    out = _split_program(ember)
    assert out.endswith("True\nTrue\ncycle exists between partitions!")
    assert "[('submod_0.linear', 'linear'), ('submod_1.linear', 'linear')]" in out


# -- subgraph_rewriter.replace_pattern_with_filters -----------------------------------------
def test_replace_pattern_with_filters_matches_torch():
    def program(lib):
        sr = importlib.import_module(f"{lib.__name__}.fx.subgraph_rewriter")

        def f(x, y):
            a = lib.relu(x) * 2
            b = lib.relu(y) * 3
            c = lib.relu(a + b) * 2
            return c.sum()

        def pattern(x):
            return lib.relu(x) * 2

        def replacement(x):
            return lib.sigmoid(x) * 2

        out = []
        gm = lib.fx.symbolic_trace(f)
        # only where the pattern's input is computed in the graph (not an input of f)
        res = sr.replace_pattern_with_filters(
            gm, pattern, replacement,
            match_filters=[lambda m, g, p: m.placeholder_nodes[0].op != "placeholder"])
        out += [gm.code, [(r.anchor, sorted(map(str, r.nodes_map.items())), r.replacements)
                          for r in res]]
        gm = lib.fx.symbolic_trace(f)
        res = sr.replace_pattern_with_filters(gm, pattern, replacement, ignore_literals=True)
        out += [gm.code, [(r.anchor, r.replacements) for r in res]]
        gm = lib.fx.symbolic_trace(f)
        seen = []

        def callback(m, g, p):
            seen.append((m.anchors, m.placeholder_nodes, m.returning_nodes))
            return lib.fx.symbolic_trace(lambda x: lib.tanh(x) * 2).graph

        sr.replace_pattern_with_filters(gm, lib.fx.symbolic_trace(pattern).graph,
                                        replacement_callback=callback)
        x = lib.ones(2)
        out += [gm.code, seen, round(float(gm(x, x)), 5)]
        return "\n".join(map(str, out))

    ours, theirs = both(program)
    assert ours == theirs
    assert "[(mul, ['(mul, mul_2)', '(relu, relu_2)', '(x, add)'], [sigmoid, mul_3])]" in ours
    assert "    sigmoid_1 = ember.sigmoid(y);  y = None\n    mul_4 = sigmoid_1 * 2;" in ours
    assert ours.endswith("[([mul], [x], [mul]), ([mul], [add], [mul_2])]\n3.99906")


def test_replace_pattern_with_filters_needs_a_replacement():
    gm = fx.symbolic_trace(lambda x: ember.relu(x) * 2)
    from ember.fx.subgraph_rewriter import replace_pattern_with_filters

    with pytest.raises(AssertionError, match="Must provide either a replacement"):
        replace_pattern_with_filters(gm, lambda x: ember.relu(x) * 2)


# -- how a call is named ----------------------------------------------------------------------
def test_a_calls_name_is_its_functions_name(monkeypatch):
    """torch.arctan and torch.atan are two functions, and a traced call is named after the
    function it calls: a distinct ``arctan`` function (not ``atan`` itself) prints as
    ``arctan``, as torch.fx prints it; ``ember.arctan`` is ``ember.atan`` today (core's
    aliases), so a traced call prints ``atan``."""
    import types

    def trace(lib):
        return lib.fx.symbolic_trace(lambda x: lib.arctan(lib.atan(x))).code

    atan = ember.atan
    if ember.arctan is atan:
        assert "arctan" not in trace(ember)
        # (its body: while dispatch is on, or lingers after a mode, atan's own code is
        # the dispatching check, whose state names atan)
        body = ember.overrides.plain(atan)
        alias = types.FunctionType(body.__code__, body.__globals__, "arctan",
                                   body.__defaults__, body.__closure__)
        alias.__kwdefaults__ = body.__kwdefaults__
        alias.__dict__.update(atan.__dict__)
        alias.__qualname__, alias.__module__ = "arctan", atan.__module__
        monkeypatch.setattr(ember, "arctan", alias)
    ours = trace(ember)
    assert "    arctan = ember.arctan(atan);  atan = None\n    return arctan\n" in ours
    gm = fx.symbolic_trace(lambda x: ember.arctan(x))
    close(gm(ember.ones(3)), atan(ember.ones(3)))
    torch = pytest.importorskip("torch")
    assert trace(torch).replace("torch", "ember") == ours


def test_to_folder_imports_the_globals_of_annotations_and_codegens(tmp_path, monkeypatch):
    from typing import List  # noqa: UP035

    def f(x: ember.Tensor, ys: List[ember.Tensor]) -> typing.Tuple[ember.Tensor, int]:  # noqa: UP006
        return ember.relu(x) + 1, 2

    gm = fx.symbolic_trace(f)
    gm.graph.find_nodes(op="placeholder")[0].type = "Tensor"  # as under __future__ annotations
    gm.recompile()
    assert "def forward(self, x : _Tensor_, ys : " in gm.code  # torch.fx's global for it
    gm.to_folder(tmp_path / "annotated", "Annotated")
    source = (tmp_path / "annotated" / "module.py").read_text()
    assert "from typing import List as typing_List\n" in source
    assert "_Tensor_ = 'Tensor'\n" in source
    assert "    def forward(self, x : _Tensor_, ys : typing_List[ember.Tensor]) -> " \
           "typing_Tuple[ember.Tensor,int]:\n" in source

    lg = fx.symbolic_trace(lambda a, b: (a * b,))
    lg.graph.set_codegen(ListCodeGen())  # its code reads List and torch
    lg.recompile()
    lg.to_folder(tmp_path / "listed", "Listed")
    monkeypatch.syspath_prepend(str(tmp_path))
    got = importlib.import_module("annotated").Annotated()(ember.ones(2), [])
    close(got[0], ember.full((2,), 2.0))
    assert got[1] == 2
    listed = importlib.import_module("listed").Listed()
    out = listed([ember.full((2,), 3.0), ember.full((2,), 2.0)])
    assert isinstance(out, list) and len(out) == 1
    close(out[0], ember.full((2,), 6.0))

    def local_helper(x):
        return x

    class Helper(fx.CodeGen):
        def additional_globals(self):
            return [("local_helper", local_helper)]

    lg.graph.set_codegen(Helper())
    lg.recompile()
    with pytest.raises(RuntimeError, match=r"cannot write the globals \['local_helper'\]"):
        lg.to_folder(tmp_path / "bad")


def test_nn_module_stack_and_scopes_match_torch():
    def program(lib):
        class Sub(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(x).transpose(0, 1)

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.sub = Sub()
                self.seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())

            def forward(self, x):
                y = self.sub(self.seq(x))
                return self.sub(y.t()).sum()  # a second call: keyed 'sub@1'

        tracer = lib.fx.Tracer()
        graph = tracer.trace(M())
        out = []
        for n in graph.nodes:
            stack = n.meta.get("nn_module_stack", {})
            out.append(f"{n.name}: {[(k, p, t.__name__) for k, (p, t) in stack.items()]} "
                       f"{tracer.node_name_to_scope.get(n.name, ('', None))[0]!r}")
        scope = lib.fx.proxy.Scope("", None)
        with lib.fx.proxy.ScopeContextManager(scope, lib.fx.proxy.Scope("a", int)) as s:
            out.append(f"{s is scope} {scope.module_path} {scope.module_type}")
        out.append(f"{scope.module_path!r} {scope.module_type}")
        return "\n".join(out)

    ours, theirs = both(program)
    assert ours == theirs
    assert "seq_0: [('seq', 'seq', 'Sequential'), ('seq.0', 'seq.0', 'ReLU')] 'seq.0'" in ours
    assert "sub_lin_1: [('sub@1', 'sub', 'Sub'), ('sub.lin@1', 'sub.lin', 'Linear')] " \
           "'sub.lin'" in ours
    assert "transpose_1: [('sub@1', 'sub', 'Sub')] 'sub'" in ours


def test_annotate_sets_a_traced_values_type_as_torch():
    def program(lib):
        annotate = importlib.import_module(f"{lib.__name__}.fx.annotate").annotate

        def f(x, n: int):
            y = annotate(x.sum(), lib.Tensor)
            return y + annotate(3, float) + n

        gm = lib.fx.symbolic_trace(f)
        out = [gm.code, str(gm.graph), gm(lib.ones(2), 1).tolist()]

        def twice(x, n: int):
            return annotate(n, int)

        try:
            lib.fx.symbolic_trace(twice)
        except RuntimeError as e:
            out.append(e)
        return "\n".join(map(str, out))

    ours, theirs = both(program)
    assert ours == theirs
    assert "    sum_1 : ember.Tensor = x.sum();  x = None\n" in ours
    assert ours.endswith("Existing type is <class 'int'> and new type is <class 'int'>. This "
                         "could happen if you tried to annotate a function parameter value (in "
                         "which case you should use the type slot on the function signature) "
                         "or you called annotate on the same value twice")


def test_node_and_graph_editing_match_torch():
    def program(lib):
        def f(x, y):
            a = x + y
            b = a.relu()
            c = lib.neg(b)
            lib.sigmoid(a)
            return c * 2

        g = lib.fx.symbolic_trace(f).graph
        nodes = {n.name: n for n in g.nodes}
        out = [[(n.name, n.is_impure()) for n in g.nodes]]
        nodes["neg"].update_arg(0, nodes["add"])
        nodes["mul"].update_kwarg("alpha", 3)
        out.append(g)
        nodes["mul"].kwargs = {}
        nodes["relu"].insert_arg(1, 5)
        out.append(nodes["relu"].args)
        nodes["relu"].args = (nodes["add"],)
        nodes["neg"].replace_input_with(nodes["add"], nodes["relu"])
        nodes["sigmoid"].prepend(nodes["neg"])
        out.append([n.name for n in g.nodes])
        nodes["x"].append(nodes["relu"])
        out.append([n.name for n in g.nodes])
        for graph_op in (g.lint, g.eliminate_dead_code):  # relu reads add before it is made
            try:
                graph_op()
            except RuntimeError as e:
                out.append(str(e).split("\n")[0])
        nodes["relu"].args = (nodes["x"],)
        out += [g.eliminate_dead_code(), g, g.eliminate_dead_code()]
        with g.inserting_after(nodes["x"]):
            n1 = g.call_function(lib.abs, (nodes["x"],))
        with g.inserting_before(nodes["mul"]):
            n3 = g.call_function(operator.add, (n1, 1))
        nodes["mul"].update_arg(1, n3)
        out += [g.python_code("self").src, nodes["mul"].all_input_nodes,
                list(nodes["x"].users),
                [(n.name, n.prev.name, n.next.name) for n in list(g.nodes)[:3]]]
        try:
            g.erase_node(nodes["x"])
        except RuntimeError as e:
            out.append(e)
        return "\n".join(map(str, out))

    ours, theirs = both(program)
    assert ours == theirs
    assert "[('x', True), ('y', True), ('add', False), ('relu', False), ('neg', False), " \
           "('sigmoid', False), ('mul', False), ('output', True)]" in ours
    assert "\nArgument 'add' of Node 'relu' was used before it has been defined! Please check " \
           "that Nodes in the graph are topologically ordered\n" in ours


def test_dead_code_elimination_keeps_in_place_methods():
    """A divergence from torch.fx, whose DCE drops an unused ``x.add_(1)`` (call_method
    nodes count as pure there): ember keeps the mutation."""
    gm = fx.symbolic_trace(lambda x: (x.add_(1), x * 2)[1])
    assert not gm.graph.eliminate_dead_code()
    gm.recompile()
    x = ember.zeros(2)
    close(gm(x), ember.full((2,), 2.0))
    close(x, ember.ones(2))


def test_star_args_and_kwargs_trace_as_torch():
    def program(lib):
        def f(x, *args, scale=2, **kwargs):
            return x * scale + args[0] + kwargs["b"]

        def g(x, *args):
            return x + args[1]

        one = lib.ones(2)
        gm = lib.fx.symbolic_trace(f)
        out = [gm.graph, gm.code]
        gm = lib.fx.symbolic_trace(g)  # a starred placeholder takes the remaining inputs
        out += [gm.code, lib.fx.Interpreter(gm).run(one, one, one * 3).tolist(),
                gm(one, one, one * 3).tolist()]

        class M(lib.nn.Module):
            def forward(self, *inputs):
                return inputs[0] + inputs[1]

        gm = lib.fx.symbolic_trace(M())
        out += [gm.code, gm(one, one * 2).tolist()]
        return "\n".join(map(str, out))

    ours, theirs = both(program)
    assert ours == theirs
    # torch.fx's order: keyword-only parameters become positional ones before *args
    assert "def forward(self, x, scale = 2, *args, **kwargs):\n    _args = args\n" \
           "    _kwargs = kwargs\n" in ours
    assert "    %_args : [num_users=1] = placeholder[target=*args]\n" in ours
    assert "[4.0, 4.0]\n[4.0, 4.0]\n" in ours and ours.endswith("[3.0, 3.0]")


def test_node_arguments_are_immutable_as_torch():
    def program(lib):
        gm = lib.fx.symbolic_trace(lambda x: lib.cat([x, x], dim=0).sum())
        cat = gm.graph.find_nodes(op="call_function", target=lib.cat)[0]
        out = [type(cat.args[0]).__name__, type(cat.kwargs).__name__, cat.args[0],
               hash(cat.args[0]) == hash(tuple(cat.args[0]))]
        for edit in (lambda: cat.args[0].append(1), lambda: cat.kwargs.update(dim=1),
                     lambda: cat.args[0].__setitem__(0, None)):
            try:
                edit()
            except TypeError as e:
                out.append(e)
        import pickle

        imm = importlib.import_module(f"{lib.__name__}.fx.immutable_collections")
        copied = pickle.loads(pickle.dumps(imm.immutable_dict(a=[1])))
        out += [type(copied).__name__, copied, copy.deepcopy(imm.immutable_list([1, [2]]))]
        cat.args = ([*cat.args[0], cat.args[0][0]],)  # the way to change them
        gm.recompile()
        out += [gm.code, gm(lib.ones(1)).item()]
        return "\n".join(map(str, out))

    ours, theirs = both(program)
    assert ours == theirs
    assert ours.startswith("immutable_list\nimmutable_dict\n[x, x]\nTrue\n'immutable_list' "
                           "object does not support mutation. If you are attempting to modify "
                           "the kwargs or args of a ember.fx.Node object,\n")
    assert ours.endswith("    cat = ember.cat([x, x, x], dim = 0);  x = None\n"
                         "    sum_1 = cat.sum();  cat = None\n    return sum_1\n    \n3.0")


def test_an_error_in_the_generated_code_points_at_its_line(capsys):
    def f(x):
        a = x + 1
        b = a.no_such_method()
        return b * 2

    gm = fx.symbolic_trace(f)
    with pytest.raises(AttributeError, match="no_such_method"):
        gm(ember.ones(2))
    err = capsys.readouterr().err
    assert "Call using an FX-traced Module, line 6 of the traced Module's generated forward " \
           "function:\n    add = x + 1;  x = None\n    no_such_method = add.no_such_method();" \
           "  add = None\n\n~~~~~~~~~~" in err
    assert "~~~ <--- HERE\n    mul = no_such_method * 2;" in err
    # an error inside an ember function is left as it is
    with pytest.raises(RuntimeError, match="size"):
        fx.symbolic_trace(lambda x: x.view(5))(ember.ones(2))
    assert "FX-traced" not in capsys.readouterr().err
    # the wrapper calls Module.__call__ as the trace patches it: a GraphModule inside a
    # module traces through
    outer = nn.Sequential(fx.symbolic_trace(nn.Sequential(nn.ReLU())), nn.Tanh())
    assert [n.op for n in fx.symbolic_trace(outer).graph.nodes] == \
        ["placeholder", "call_module", "call_module", "output"]
