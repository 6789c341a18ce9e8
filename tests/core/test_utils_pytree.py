"""ember.utils._pytree (torch.utils._pytree): every public name on each node type, TreeSpec's
attributes and errors, key paths, registering a class and a dataclass, the JSON round trip and
its refusals (loading imports and runs nothing), and parity with PyTorch's module where the
oracle is installed: the same leaves, specs' reprs, dumps, key paths and error messages, and a
spec dumped by one loads in the other."""

import collections
import copy
import dataclasses
import enum
import json
import os
import pickle
import sys
import time
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

import numpy as np
import pytest

import ember
import ember.utils._pytree as pytree
from ember.utils._pytree import (
    GetAttrKey,
    LeafSpec,
    MappingKey,
    SequenceKey,
    TreeSpec,
    keystr,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
    treespec_dumps,
    treespec_loads,
)

Point = namedtuple("Point", "x y")


def _enum_module():
    """A module already imported (in sys.modules) holding an Enum and a factory function, as a
    user's module holding the classes a spec's context names."""
    mod = types.ModuleType("_pytree_test_ctx_module")
    mod.Color = enum.Enum("Color", "RED GREEN")
    mod.Color.__module__ = mod.__name__

    def factory():
        return 7

    factory.__module__, factory.__qualname__ = mod.__name__, "factory"
    mod.factory = factory
    mod.not_callable = 3
    return mod


@pytest.fixture
def ctx_module(monkeypatch):
    mod = _enum_module()
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return mod


@pytest.fixture
def registered():
    """Registers classes through the given module's register function and forgets them after."""
    done = []

    def register(module, cls, *args, **kwargs):
        register_fn = kwargs.pop("register_fn", None) or module.register_pytree_node
        register_fn(cls, *args, **kwargs)
        done.append((module, cls))

    yield register
    for module, cls in done:
        if cls in module.SUPPORTED_NODES:
            module._deregister_pytree_node(cls)


def _torch_pytree():
    pytest.importorskip("torch")
    import torch.utils._pytree as tp

    return tp


# --- structures -------------------------------------------------------------------------------


NESTED = {"a": [1, (2, None)], "b": OrderedDict(x=3, y=Point(4, [5])),
          "c": defaultdict(list, {"k": deque([6, 7], maxlen=4)})}


def test_none_and_scalars_are_leaves():
    assert pytree.tree_is_leaf(None) and pytree.tree_is_leaf(1) and pytree.tree_is_leaf("ab")
    leaves, spec = tree_flatten(None)
    assert leaves == [None] and spec.is_leaf() and repr(spec) == "*"
    assert tree_flatten([None, {"a": None}])[0] == [None, None]
    assert not pytree.tree_is_leaf([]) and not pytree.tree_is_leaf({"a": None})
    assert pytree.tree_is_leaf((1, 2), is_leaf=lambda x: isinstance(x, tuple))


def test_flatten_unflatten_every_node_type():
    leaves, spec = tree_flatten(NESTED)
    assert leaves == [1, 2, None, 3, 4, 5, 6, 7]
    back = tree_unflatten(leaves, spec)
    assert back == NESTED
    assert type(back["b"]) is OrderedDict and type(back["b"]["y"]) is Point
    assert type(back["c"]) is defaultdict and back["c"].default_factory is list
    assert back["c"]["k"].maxlen == 4 and type(back["c"]["k"]) is deque
    assert tree_unflatten(list(range(8)), spec)["b"]["y"] == Point(4, [5])
    for empty in ([], (), {}, OrderedDict(), deque()):
        leaves, spec = tree_flatten(empty)
        assert leaves == [] and spec.num_leaves == 0 and tree_unflatten([], spec) == empty


def test_tensors_and_arrays_are_leaves():
    x, y = ember.ones(2), ember.zeros(3)
    leaves, spec = tree_flatten({"x": x, "y": [y, np.ones(1)]})
    assert leaves[0] is x and leaves[1] is y and len(leaves) == 3
    out = tree_map(lambda t: t * 2 if isinstance(t, ember.Tensor) else t, {"x": x})
    assert out["x"].tolist() == [2.0, 2.0]


def test_return_types_are_nodes_like_torch_structseqs():
    res = ember.max(ember.tensor([[1.0, 3.0], [4.0, 2.0]]), 1)
    leaves, spec = tree_flatten(res)
    assert len(leaves) == 2 and spec.type is type(res) and spec.context is None
    assert repr(spec) == "TreeSpec(max, None, [*,\n  *])"
    back = tree_unflatten(leaves, spec)
    assert type(back) is type(res) and back.values is leaves[0]
    assert [keystr(k) for k, _ in pytree.tree_leaves_with_path(res)] == ["[0]", "[1]"]
    with pytest.raises(NotImplementedError, match="No registered serialization name"):
        treespec_dumps(spec)
    # a return type made after the module's import is a node too
    late = namedtuple("late", "a b")
    late.__module__ = ember.return_types.__name__
    try:
        assert tree_structure(late(1, 2)).type is late
    finally:
        pytree._deregister_pytree_node(late)


def test_namedtuple_node_type_and_context():
    spec = tree_structure(Point(1, 2))
    assert spec.type is namedtuple and spec.context is Point
    assert repr(spec) == f"TreeSpec(namedtuple, {Point}, [*,\n  *])"


def test_tree_iter_leaves_structure():
    it = pytree.tree_iter(NESTED)
    assert iter(it) is it and next(it) == 1
    assert pytree.tree_leaves(NESTED) == [1, 2, None, 3, 4, 5, 6, 7]
    assert pytree.tree_leaves(NESTED, is_leaf=lambda x: isinstance(x, tuple)) == \
        [1, (2, None), 3, Point(4, [5]), 6, 7]
    assert tree_structure(NESTED) == tree_flatten(NESTED)[1]


def test_subclass_of_a_node_type_is_a_leaf():
    class MyList(list):
        pass

    assert pytree.tree_leaves([MyList([1, 2])]) == [MyList([1, 2])]


# --- TreeSpec ---------------------------------------------------------------------------------


def test_treespec_attributes():
    spec = tree_structure({"a": [1, (2, 3)], "b": 4})
    assert spec.type is dict and spec.context == ["a", "b"]
    assert (spec.num_nodes, spec.num_leaves, spec.num_children) == (7, 4, 2)
    assert not spec.is_leaf() and spec.child(1).is_leaf()
    kids = spec.children()
    assert kids == [tree_structure([1, (2, 3)]), tree_structure(4)]
    kids.append(None)
    assert spec.num_children == 2 and len(spec.children()) == 2
    with pytest.warns(FutureWarning, match="children_specs"):
        assert spec.children_specs == spec.children()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.type = list
    assert repr(spec) == ("TreeSpec(dict, ['a', 'b'], [TreeSpec(list, None, [*,\n"
                          "    TreeSpec(tuple, None, [*,\n      *])]),\n  *])")
    assert repr(tree_structure([])) == "TreeSpec(list, None, [])"
    assert repr(tree_structure([1])) == "TreeSpec(list, None, [*])"


def test_treespec_equality_and_hash():
    a, b = tree_structure({"a": [1, 2]}), tree_structure({"a": [3, 4]})
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != tree_structure({"b": [1, 2]}) and a != tree_structure({"a": (1, 2)})
    assert a != tree_structure({"a": [1, 2, 3]}) and a != "x"
    assert tree_structure(OrderedDict(a=1)) != tree_structure({"a": 1})
    assert tree_structure(defaultdict(list, a=1)) != tree_structure(defaultdict(set, a=1))
    assert len({tree_structure(t) for t in ([1], [2], (1,), {"a": 1}, deque([1]))}) == 4
    assert hash(tree_structure(defaultdict(list, a=1))) == hash(tree_structure(
        defaultdict(list, a=2)))
    assert tree_structure(Point(1, 2)) != tree_structure(namedtuple("Point", "x y")(1, 2))


def test_treespec_copy_and_pickle():
    spec = tree_structure(NESTED)
    assert copy.deepcopy(spec) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_leafspec_is_deprecated_and_is_every_leafs_spec():
    spec = tree_structure(1)
    assert isinstance(spec, LeafSpec) and spec is tree_structure("x")
    with pytest.warns(FutureWarning, match="LeafSpec"):
        leaf = LeafSpec()
    assert leaf == spec and repr(leaf) == "*" and leaf.is_leaf()
    assert (leaf.num_nodes, leaf.num_leaves, leaf.num_children) == (1, 1, 0)
    assert pytree.treespec_leaf() is spec
    assert TreeSpec(None, None, []).is_leaf()
    with pytest.raises(AssertionError, match="leaf node should not have a context"):
        TreeSpec(None, 1, [])
    with pytest.raises(AssertionError, match="leaf node should not have children"):
        TreeSpec(None, None, [spec])


def test_treespec_constructors():
    leaf = pytree.treespec_leaf()
    assert pytree.treespec_tuple([leaf, leaf]) == tree_structure((1, 2))
    assert pytree.treespec_dict({"a": leaf}, b=leaf) == tree_structure({"a": 1, "b": 2})
    assert pytree.treespec_tuple() == tree_structure(())
    with pytest.raises(ValueError, match="Expected a tuple of TreeSpec values"):
        pytree.treespec_tuple([1])
    with pytest.raises(ValueError, match="Expected a dictionary of TreeSpec values"):
        pytree.treespec_dict(a=1)


def test_unflatten_errors():
    spec = tree_structure([1, (2, 3)])
    with pytest.raises(ValueError) as e:
        spec.unflatten([1, 2])
    assert str(e.value) == (
        "treespec.unflatten(leaves): `leaves` has length 2 but the spec refers to a pytree "
        f"that holds 3 items ({spec}).")
    assert spec.unflatten(iter([1, 2, 3])) == [1, (2, 3)]
    assert tree_unflatten(spec, [1, 2, 3]) == [1, (2, 3)]  # either order
    with pytest.raises(TypeError, match="Expected `treespec` to be an instance of PyTreeSpec"):
        tree_unflatten([1], [1])


def test_flatten_up_to_and_its_errors():
    spec = tree_structure([1, {"a": 2, "b": 3}])
    assert spec.flatten_up_to([[9], {"b": (1,), "a": 0}]) == [[9], 0, (1,)]
    assert spec.flatten_up_to([1, OrderedDict(a=2, b=3)]) == [1, 2, 3]  # dict kinds mix
    assert tree_structure(deque([1], maxlen=2)).flatten_up_to(deque([5])) == [5]
    cases = [
        ((1, {"a": 2, "b": 3}), "Node type mismatch; expected <class 'list'>, but got "
                                "<class 'tuple'>."),
        ([1, {"a": 2, "b": 3}, 4], "Node arity mismatch; expected 2, but got 3."),
        ([1, {"a": 2, "c": 3}], "Node keys mismatch; missing key(s): {'b'}; extra key(s): "
                                "{'c'}."),
        ([1, 2], "Node type mismatch; expected <class 'dict'>, but got <class 'int'>."),
    ]
    for tree, message in cases:
        with pytest.raises(ValueError) as e:
            spec.flatten_up_to(tree)
        assert str(e.value) == message
    other = namedtuple("Other", "x y")
    with pytest.raises(ValueError, match="Node context mismatch for node type"):
        tree_structure(Point(1, 2)).flatten_up_to(other(1, 2))


# --- map and friends --------------------------------------------------------------------------


def test_tree_map_one_and_several_trees():
    assert tree_map(lambda x: x + 1, {"x": 7, "y": (42, 64)}) == {"x": 8, "y": (43, 65)}
    assert tree_map(lambda x: x is None, {"x": 7, "z": None}) == {"x": False, "z": True}
    assert tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]]) == [[5, 7, 9], [6, 1, 2]]
    assert tree_map(lambda a, b, c: a + b + c, (1, 2), (10, 20), (100, 200)) == (111, 222)
    assert tree_map(lambda x: len(x) if isinstance(x, tuple) else x, [(1, 2), [3]],
                    is_leaf=lambda x: isinstance(x, tuple)) == [2, [3]]
    with pytest.raises(ValueError, match=r"Node arity mismatch; expected 2, but got 3\."):
        tree_map(lambda x, y: x, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="Node keys mismatch; missing key"):
        tree_map(lambda x, y: x, {"a": 1}, {"b": 1})


def test_tree_map_inplace():
    seen = []
    tree = [1, {"a": 2}]
    assert pytree.tree_map_(seen.append, tree) is tree and seen == [1, 2]
    seen.clear()
    pytree.tree_map_(lambda x, y: seen.append(x + y), tree, [10, {"a": 20}])
    assert seen == [11, 22]


def test_tree_map_only_and_all_any():
    tree = [1, 2.5, "s", (3, None)]
    assert pytree.tree_map_only(int, lambda x: -x, tree) == [-1, 2.5, "s", (-3, None)]
    assert pytree.tree_map_only((int, float), lambda x: 0, tree) == [0, 0, "s", (0, None)]
    assert pytree.tree_map_only(int | str, lambda x: 0, tree) == [0, 2.5, 0, (0, None)]
    assert pytree.tree_map_only(lambda x: x is None, lambda x: "n", tree)[3] == (3, "n")
    assert pytree.tree_map_only(tuple, len, tree, is_leaf=lambda x: isinstance(x, tuple))[3] == 2
    seen = []
    assert pytree.tree_map_only_(str, seen.append, tree) is tree and seen == ["s"]
    with pytest.raises(TypeError, match="Argument must be a type, a tuple of types"):
        pytree.tree_map_only(3, lambda x: x, tree)
    assert pytree.tree_all(lambda x: x is not None, [1, [2]])
    assert not pytree.tree_all(lambda x: x is not None, tree)
    assert pytree.tree_any(lambda x: x == "s", tree) and not pytree.tree_any(bool, [0, [None]])
    assert pytree.tree_all_only(int, lambda x: x > 0, tree)
    assert not pytree.tree_any_only(str, lambda x: x == "t", tree)
    assert pytree.tree_any_only((str, float), lambda x: x == 2.5, tree)
    assert pytree.tree_all(lambda x: isinstance(x, tuple), [(1,)], is_leaf=lambda x:
                           isinstance(x, tuple))


def test_arg_tree_leaves_and_broadcast():
    assert pytree.arg_tree_leaves(1, [2, 3], a=(4,)) == [1, 2, 3, 4]
    spec = tree_structure((1, {"a": 2, "b": 3}))
    assert pytree._broadcast_to_and_flatten(0, spec) == [0, 0, 0]
    assert pytree._broadcast_to_and_flatten((0, 1), spec) == [0, 1, 1]
    assert pytree._broadcast_to_and_flatten([0, 1], spec) is None


# --- key paths --------------------------------------------------------------------------------


def test_key_classes():
    assert str(SequenceKey(0)) == "[0]" and repr(SequenceKey(0)) == "SequenceKey(idx=0)"
    assert str(MappingKey("a")) == "['a']" and repr(MappingKey("a")) == "MappingKey(key='a')"
    assert str(GetAttrKey("x")) == ".x" and repr(GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert SequenceKey(1).get([5, 6]) == 6 and MappingKey(2).get({2: "v"}) == "v"
    assert GetAttrKey("y").get(Point(1, 2)) == 2
    assert SequenceKey(1) == SequenceKey(1) and hash(MappingKey("a")) == hash(MappingKey("a"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        SequenceKey(1).idx = 2


def test_key_paths():
    pairs = pytree.tree_leaves_with_path(NESTED)
    assert [keystr(k) for k, _ in pairs] == [
        "['a'][0]", "['a'][1][0]", "['a'][1][1]", "['b']['x']", "['b']['y'].x",
        "['b']['y'].y[0]", "['c']['k'][0]", "['c']['k'][1]"]
    assert [v for _, v in pairs] == pytree.tree_leaves(NESTED)
    for path, leaf in pairs:
        assert pytree.key_get(NESTED, path) == leaf
    flat, spec = pytree.tree_flatten_with_path(NESTED)
    assert flat == pairs and spec == tree_structure(NESTED)
    assert pytree.tree_leaves_with_path([(1,)], is_leaf=lambda x: isinstance(x, tuple)) == \
        [((SequenceKey(0),), (1,))]
    assert pytree.tree_leaves_with_path(3) == [((), 3)]
    out = pytree.tree_map_with_path(lambda p, x, y: f"{keystr(p)}={x + y}", {"a": [1, 2]},
                                    {"a": [10, 20]})
    assert out == {"a": ["['a'][0]=11", "['a'][1]=22"]}


# --- registering ------------------------------------------------------------------------------


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b) == (other.a, other.b)


def _pair_flatten(p):
    return [p.a, p.b], "pair"


def _pair_unflatten(values, context):
    return Pair(*values)


def _pair_flatten_with_keys(p):
    return [(GetAttrKey("a"), p.a), (GetAttrKey("b"), p.b)], "pair"


def test_register_pytree_node(registered):
    registered(pytree, Pair, _pair_flatten, _pair_unflatten,
               serialized_type_name="tests.Pair", flatten_with_keys_fn=_pair_flatten_with_keys)
    tree = [Pair(1, (2, 3)), 4]
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4] and tree_unflatten(leaves, spec) == tree
    assert repr(spec.child(0)) == "TreeSpec(Pair, pair, [*,\n  TreeSpec(tuple, None, [*,\n" \
                                  "    *])])"
    assert tree_map(lambda x: x * 10, Pair(1, 2)) == Pair(10, 20)
    assert [keystr(k) for k, _ in pytree.tree_leaves_with_path(tree)] == \
        ["[0].a", "[0].b[0]", "[0].b[1]", "[1]"]
    assert treespec_loads(treespec_dumps(spec)) == spec
    with pytest.raises(ValueError, match="Type mismatch; expected"):
        spec.flatten_up_to([(1, 2), 4])
    with pytest.raises(ValueError) as e:
        pytree.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)
    assert str(e.value) == f"{Pair} is already registered as pytree node."


def test_register_errors_and_missing_keys_fn(registered):
    class Box:
        def __init__(self, v):
            self.v = v

    with pytest.raises(ValueError, match="Both to_dumpable_context and from_dumpable_context"):
        pytree.register_pytree_node(Box, lambda b: ([b.v], None), lambda v, c: Box(*v),
                                    to_dumpable_context=str)
    assert Box not in pytree.SUPPORTED_NODES
    registered(pytree, Box, lambda b: ([b.v], None), lambda v, c: Box(*v))
    assert tree_map(lambda x: x + 1, Box(1)).v == 2
    with pytest.raises(ValueError, match="Did not find a flatten_with_keys_fn for type"):
        pytree.tree_leaves_with_path(Box(1))
    with pytest.raises(NotImplementedError, match="No registered serialization name for"):
        treespec_dumps(tree_structure(Box(1)))
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_pytree_node(list, lambda x: x, lambda x: x)
    with pytest.warns(UserWarning, match="Overwriting the previous registration"):
        pytree._private_register_pytree_node(Box, lambda b: ([], b.v), lambda v, c: Box(c))
    assert tree_flatten(Box(5))[0] == []
    with pytest.warns(FutureWarning, match="_register_pytree_node` is deprecated"):
        registered(pytree, Pair, _pair_flatten, _pair_unflatten,
                   register_fn=pytree._register_pytree_node)
    assert tree_flatten(Pair(1, 2))[0] == [1, 2]


def test_custom_context_serializers(registered):
    class Tagged:
        def __init__(self, tag, v):
            self.tag, self.v = tag, v

    registered(pytree, Tagged, lambda t: ([t.v], {"tag": t.tag}),
               lambda v, c: Tagged(c["tag"], *v), serialized_type_name="tests.Tagged",
               to_dumpable_context=lambda c: c["tag"].upper(),
               from_dumpable_context=lambda d: {"tag": d.lower()})
    spec = tree_structure(Tagged("t", 1))
    dumped = treespec_dumps(spec)
    assert json.loads(dumped)[1]["context"] == "T"
    assert treespec_loads(dumped).context == {"tag": "t"}


@dataclasses.dataclass
class Model:
    w: object
    b: object = None
    name: str = "m"


def test_register_dataclass(registered):
    registered(pytree, Model, register_fn=pytree.register_dataclass,
               serialized_type_name="tests.Model")
    leaves, spec = tree_flatten(Model([1, 2], None, "n"))
    assert leaves == [1, 2, "n"] and spec.context == [["w", "name"], ["b"]]
    back = tree_unflatten([5, 6, "q"], spec)
    assert back == Model([5, 6], None, "q")
    assert [keystr(k) for k, _ in pytree.tree_leaves_with_path(Model(1, 2))] == \
        [".w", ".b", ".name"]
    assert treespec_loads(treespec_dumps(spec)) == spec


def test_register_dataclass_field_names(registered):
    with pytest.raises(ValueError) as e:
        pytree.register_dataclass(Model, field_names=["w", "extra"])
    assert "Missing fields in `field_names`: " in str(e.value)
    assert "Unexpected fields in `field_names`: {'extra'}" in str(e.value)
    registered(pytree, Model, register_fn=pytree.register_dataclass, field_names=["w", "b"],
               drop_field_names=["name"])
    assert tree_flatten(Model(1, 2, "x"))[0] == [1, 2]
    assert tree_unflatten([3, 4], tree_structure(Model(1, 2))) == Model(3, 4)

    class Plain:
        def __init__(self, x):
            self.x = x

    with pytest.raises(ValueError, match="field_names must be specified"):
        pytree.register_dataclass(Plain)
    registered(pytree, Plain, register_fn=pytree.register_dataclass, field_names=["x"])
    assert tree_map(lambda v: v + 1, Plain(1)).x == 2


def test_register_dataclass_drop_without_field_names(registered):
    registered(pytree, Model, register_fn=pytree.register_dataclass, drop_field_names=["name"])
    assert tree_flatten(Model(1, 2, "x"))[0] == [1, 2]


# --- namedtuple and structseq predicates ------------------------------------------------------


def test_namedtuple_and_structseq_predicates():
    st = os.stat(".")
    assert pytree.is_namedtuple(Point) and pytree.is_namedtuple(Point(1, 2))
    assert pytree.is_namedtuple_class(Point) and not pytree.is_namedtuple_class(Point(1, 2))
    assert pytree.is_namedtuple_instance(Point(1, 2)) and not pytree.is_namedtuple_instance(Point)
    assert not pytree.is_namedtuple((1, 2)) and not pytree.is_namedtuple(st)
    assert pytree.is_structseq(st) and pytree.is_structseq(os.stat_result)
    assert pytree.is_structseq_class(time.struct_time)
    assert pytree.is_structseq_instance(time.localtime()) and not pytree.is_structseq_instance(
        time.struct_time)
    assert not pytree.is_structseq(Point(1, 2)) and not pytree.is_structseq_class(tuple)
    assert pytree.is_namedtuple(ember.return_types.max)  # Ember's are namedtuples
    assert pytree.tree_is_leaf(st)  # structseqs are not nodes unless registered


# --- serialization ----------------------------------------------------------------------------


def test_dumps_format_and_round_trip():
    spec = tree_structure([1, (2, None)])
    assert treespec_dumps(spec) == (
        '[1, {"type": "builtins.list", "context": "null", "children_spec": [{"type": null, '
        '"context": null, "children_spec": []}, {"type": "builtins.tuple", "context": "null", '
        '"children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, '
        '"context": null, "children_spec": []}]}]}]')
    tree = {k: v for k, v in NESTED.items() if k != "b"}  # Point has no serialized name
    spec = tree_structure(tree)
    loaded = treespec_loads(treespec_dumps(spec))
    assert loaded == spec and loaded.unflatten(range(spec.num_leaves))["c"].default_factory \
        is list
    assert treespec_loads(treespec_dumps(tree_structure(1))) is tree_structure(2)
    assert treespec_dumps(spec, protocol=1) == treespec_dumps(spec)
    with pytest.raises(ValueError, match=r"Unknown protocol 2\. Available protocols: \[1\]"):
        treespec_dumps(spec, protocol=2)
    with pytest.raises(TypeError, match="Expected `treespec` to be an instance of PyTreeSpec"):
        treespec_dumps([1])


def test_namedtuple_serialization_needs_a_name(registered):
    spec = tree_structure(Point(1, 2))
    with pytest.raises(NotImplementedError, match="didn't register a serializated_type_name"):
        treespec_dumps(spec)
    registered(pytree, Point, register_fn=pytree._register_namedtuple,
               serialized_type_name="tests.Point")
    dumped = treespec_dumps(spec)
    assert json.loads(dumped)[1]["context"] == "tests.Point"
    assert treespec_loads(dumped) == spec
    with pytest.raises(NotImplementedError, match="Can't deserialize TreeSpec of namedtuple"):
        treespec_loads(dumped.replace("tests.Point", "tests.Nope"))


def test_enum_and_factory_contexts(ctx_module):
    red = ctx_module.Color.RED
    tree = {red: 1, "d": defaultdict(ctx_module.factory, {1: 2})}
    spec = tree_structure(tree)
    dumped = treespec_dumps(spec)
    assert json.loads(json.loads(dumped)[1]["context"])[0] == {
        "__enum__": True, "fqn": "_pytree_test_ctx_module:Color", "name": "RED"}
    loaded = treespec_loads(dumped)
    assert loaded == spec and loaded.context[0] is red
    assert loaded.child(1).context[0] is ctx_module.factory
    with pytest.raises(TypeError, match="Unable to serialize context"):
        treespec_dumps(tree_structure({object(): 1}))


def _leaf():
    return {"type": None, "context": None, "children_spec": []}


def _node(type_, context, *children):
    return {"type": type_, "context": context, "children_spec": list(children)}


@pytest.mark.parametrize("doc, error, message", [
    ("not json", ValueError, "not a JSON document"),
    ("[1]", ValueError, r"expected a JSON array \[protocol, treespec\]"),
    ('{"a": 1}', ValueError, r"expected a JSON array \[protocol, treespec\]"),
    (json.dumps([9, _leaf()]), ValueError, r"Unknown protocol 9\. Available protocols: \[1\]"),
    (json.dumps(["1", _leaf()]), ValueError, "Unknown protocol 1"),
    (json.dumps([True, _leaf()]), ValueError, "Unknown protocol True"),
    (json.dumps([1, {"type": None}]), ValueError, "must be an object with the keys"),
    (json.dumps([1, [1, 2]]), ValueError, "must be an object with the keys"),
    (json.dumps([1, _node("builtins.list", "null", 5)]), ValueError,
     "must be an object with the keys"),
    (json.dumps([1, {**_leaf(), "children_spec": 3}]), ValueError, "'children_spec' must be"),
    (json.dumps([1, _node("os.system", "null")]), NotImplementedError,
     "Deserializing os.system in pytree is not registered"),
    (json.dumps([1, _node(None, "null", _leaf())]), NotImplementedError,
     "Deserializing None in pytree is not registered"),
    (json.dumps([1, _node("builtins.list", 5)]), TypeError, "Unable to deserialize context"),
    (json.dumps([1, _node("collections.defaultdict", {"a": 1})]), ValueError,
     "a defaultdict's context must be an object with the keys"),
])
def test_loads_rejects_bad_documents(doc, error, message):
    with pytest.raises(error, match=message):
        treespec_loads(doc)


def test_loads_imports_and_runs_nothing(ctx_module):
    name = "_pytree_never_imported_module"
    ctx = {"default_factory_module": name, "default_factory_name": "f", "dict_context": []}
    with pytest.raises(ValueError, match="is not imported"):
        treespec_loads(json.dumps([1, _node("collections.defaultdict", ctx)]))
    enum_ctx = json.dumps([{"__enum__": True, "fqn": f"{name}:E", "name": "A"}])
    with pytest.raises(ValueError, match="is not imported"):
        treespec_loads(json.dumps([1, _node("builtins.dict", enum_ctx, _leaf())]))
    assert name not in sys.modules
    mod = ctx_module.__name__
    bad = [
        ({"default_factory_module": mod, "default_factory_name": "not_callable",
          "dict_context": []}, "is not callable"),
        ({"default_factory_module": mod, "default_factory_name": "missing",
          "dict_context": []}, "cannot find"),
        ({"default_factory_module": "builtins", "default_factory_name": "eval.__call__",
          "dict_context": []}, "cannot find"),
    ]
    for ctx, message in bad:
        with pytest.raises(ValueError, match=message):
            treespec_loads(json.dumps([1, _node("collections.defaultdict", ctx)]))
    for entry, message in [({"__enum__": True, "fqn": f"{mod}:factory", "name": "A"},
                            "is not an Enum class"),
                           ({"__enum__": True, "fqn": f"{mod}:Color", "name": "BLUE"},
                            "has no member 'BLUE'"),
                           ({"__enum__": True, "fqn": "nocolon", "name": "A"},
                            "malformed Enum entry")]:
        doc = json.dumps([1, _node("builtins.list", json.dumps([entry]))])
        with pytest.raises(ValueError, match=message):
            treespec_loads(doc)


def test_treespec_pprint():
    assert pytree.treespec_pprint(tree_structure({"a": [1, (2, None)], "p": Point(1, 2)})) == \
        "{'a': [*, (*, *)], 'p': Point(x=*, y=*)}"
    assert pytree.treespec_pprint(tree_structure(1)) == "*"


def test_public_names_and_import_path():
    for name in pytree.__all__:
        assert hasattr(pytree, name), name
    assert pytree.PyTreeSpec is TreeSpec
    assert ember.utils._pytree is pytree
    for alias in ("PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext",
                  "ToDumpableContextFn", "FromDumpableContextFn"):
        assert alias in pytree.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree_flatten(NESTED)  # no warnings on the common path


# --- parity with PyTorch ----------------------------------------------------------------------


def _parity_trees():
    return [
        None, 1, "s", [], (), {}, deque(), [1, None, (2, 3)], [[[]]], {"a": {}, "b": ()},
        {"b": 1, "a": [2, {"c": (3, 4)}]}, OrderedDict(z=1, a=(2,)),
        defaultdict(list, {1: 2, "k": [3]}), deque([1, 2], maxlen=3), deque([(1, 2)]),
        Point(1, [2, 3]), [Point(1, 2), {"p": Point((3,), None)}], {1: "a", 2.5: ["b"]},
    ]


def test_parity_all():
    tp = _torch_pytree()
    assert pytree.__all__ == tp.__all__


def test_parity_flatten_repr_paths_pprint():
    tp = _torch_pytree()
    for tree in _parity_trees():
        el, es = pytree.tree_flatten(tree)
        tl, ts = tp.tree_flatten(tree)
        assert el == tl and repr(es) == repr(ts), tree
        assert (es.num_nodes, es.num_leaves, es.num_children, es.is_leaf()) == \
            (ts.num_nodes, ts.num_leaves, ts.num_children, ts.is_leaf())
        assert pytree.treespec_pprint(es) == tp.treespec_pprint(ts)
        e_paths = [(pytree.keystr(k), repr(k), v) for k, v in pytree.tree_leaves_with_path(tree)]
        t_paths = [(tp.keystr(k), repr(k), v) for k, v in tp.tree_leaves_with_path(tree)]
        assert e_paths == t_paths
        is_leaf = lambda x: isinstance(x, tuple)
        assert pytree.tree_leaves(tree, is_leaf) == tp.tree_leaves(tree, is_leaf)
        assert repr(pytree.tree_structure(tree, is_leaf)) == repr(tp.tree_structure(tree,
                                                                                    is_leaf))


def test_parity_dumps_and_cross_loads():
    tp = _torch_pytree()
    for tree in _parity_trees():
        if any(isinstance(x, tuple) and pytree.is_namedtuple(x) for x in
               pytree.tree_leaves(tree, lambda x: pytree.is_namedtuple(x))):
            continue  # namedtuples need a serialized name
        es, ts = pytree.tree_structure(tree), tp.tree_structure(tree)
        e_dump, t_dump = pytree.treespec_dumps(es), tp.treespec_dumps(ts)
        assert e_dump == t_dump
        from_torch, from_ember = pytree.treespec_loads(t_dump), tp.treespec_loads(e_dump)
        assert from_torch == es and repr(from_torch) == repr(from_ember)
        leaves = list(range(es.num_leaves))
        assert from_torch.unflatten(leaves) == from_ember.unflatten(leaves)


def test_parity_enum_context(ctx_module):
    tp = _torch_pytree()
    tree = {ctx_module.Color.GREEN: [1], "d": defaultdict(ctx_module.factory, {"x": 1})}
    e_dump = pytree.treespec_dumps(pytree.tree_structure(tree))
    assert e_dump == tp.treespec_dumps(tp.tree_structure(tree))
    assert pytree.treespec_loads(e_dump).context[0] is ctx_module.Color.GREEN


def test_parity_return_types():
    tp = _torch_pytree()
    import torch

    data = [[1.0, 3.0], [4.0, 2.0]]
    for op in ("max", "sort", "topk"):
        args = (1,) if op != "topk" else (1, 1)
        e_res = getattr(ember, op)(ember.tensor(data), *args)
        t_res = getattr(torch, op)(torch.tensor(data), *args)
        assert repr(pytree.tree_structure(e_res)) == repr(tp.tree_structure(t_res))
        assert [pytree.keystr(k) for k, _ in pytree.tree_leaves_with_path(e_res)] == \
            [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(t_res)]


def test_parity_error_messages():
    tp = _torch_pytree()

    def message(module, fn, *args):
        with pytest.raises(Exception) as e:
            fn(module)(*args)
        return type(e.value), str(e.value)

    cases = [
        (lambda m: lambda *a: m.tree_map(lambda x, y: x, *a), ([1, 2], [1, 2, 3])),
        (lambda m: lambda *a: m.tree_map(lambda x, y: x, *a), ([1, 2], (1, 2))),
        (lambda m: lambda *a: m.tree_map(lambda x, y: x, *a), ({"a": 1, "b": 2}, {"a": 1, "c": 2})),
        (lambda m: lambda *a: m.tree_map(lambda x, y: x, *a), ({"a": 1}, [1])),
        (lambda m: lambda *a: m.tree_map(lambda x, y: x, *a), (Point(1, 2), (1, 2))),
        (lambda m: lambda *a: m.tree_map(lambda x, y: x, *a),
         (Point(1, 2), namedtuple("Q", "x y")(1, 2))),
        (lambda m: lambda *a: m.tree_unflatten(*a), ([1], None)),
        (lambda m: lambda *a: m.tree_structure([1, (2,)]).unflatten(*a), ([1],)),
        (lambda m: lambda *a: m.register_pytree_node(*a), (dict, None, None)),
        (lambda m: lambda *a: m.treespec_dumps(*a), ([1],)),
        (lambda m: lambda *a: m.treespec_dumps(m.tree_structure([1]), *a), (5,)),
        (lambda m: lambda *a: m.treespec_dumps(m.tree_structure(*a)), ({object: 1},)),
        (lambda m: lambda *a: m.treespec_dumps(m.tree_structure(*a)), (Point(1, 2),)),
        (lambda m: lambda *a: m.treespec_loads(*a), ("[7, null]",)),
        (lambda m: lambda *a: m.treespec_loads(*a),
         (json.dumps([1, _node("nope.T", "null")]),)),
        (lambda m: lambda *a: m.register_dataclass(*a), (Pair,)),
    ]
    for fn, args in cases:
        assert message(pytree, fn, *args) == message(tp, fn, *args), args


def test_parity_dataclass_and_custom_node(registered):
    tp = _torch_pytree()
    for module in (pytree, tp):
        registered(module, Model, register_fn=module.register_dataclass,
                   serialized_type_name="tests.Model")
        registered(module, Pair, _pair_flatten, _pair_unflatten,
                   register_fn=module._private_register_pytree_node,
                   serialized_type_name="tests.Pair", flatten_with_keys_fn=_pair_flatten_with_keys)
    tree = [Model([1, Pair(2, 3)], None), {"p": Pair((4,), 5)}]
    es, ts = pytree.tree_structure(tree), tp.tree_structure(tree)
    assert repr(es) == repr(ts) and pytree.tree_leaves(tree) == tp.tree_leaves(tree)
    assert pytree.treespec_dumps(es) == tp.treespec_dumps(ts)
    assert [pytree.keystr(k) for k, _ in pytree.tree_leaves_with_path(tree)] == \
        [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(tree)]
    assert pytree.treespec_loads(tp.treespec_dumps(ts)) == es


def test_parity_treespec_equality_and_flatten_up_to():
    tp = _torch_pytree()
    trees = _parity_trees()
    for a in trees:
        for b in trees:
            ea, eb = pytree.tree_structure(a), pytree.tree_structure(b)
            ta, tb = tp.tree_structure(a), tp.tree_structure(b)
            assert (ea == eb) == (ta == tb), (a, b)
            try:
                t_res = ("ok", ta.flatten_up_to(b))
            except ValueError as e:
                t_res = ("error", str(e))
            try:
                e_res = ("ok", ea.flatten_up_to(b))
            except ValueError as e:
                e_res = ("error", str(e))
            assert e_res == t_res, (a, b)


def test_collections_namespace_unchanged():
    # the registry holds the namedtuple factory itself, as PyTorch's does
    assert collections.namedtuple in pytree.SUPPORTED_NODES
