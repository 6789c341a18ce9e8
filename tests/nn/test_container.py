"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from collections import OrderedDict

import pytest

import ember
import ember.nn as nn


def layers(n):
    return [nn.Linear(i + 1, i + 2) for i in range(n)]


# -- Sequential --------------------------------------------------------------------------------

def test_sequential_forward_and_indexing():
    a, b, c = layers(3)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c
    assert list(seq) == [a, b, c]
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    assert list(sub._modules) == ["1", "2"]
    out = seq(ember.randn(5, 1))
    assert out.shape == (5, 4)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]


def test_sequential_ordered_dict_and_mutation():
    a, b, c, d = layers(4)
    seq = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert seq.first is a and list(seq._modules) == ["first", "second"]
    seq = nn.Sequential(a)
    seq.append(b).extend([c])
    assert list(seq) == [a, b, c]
    seq.insert(1, d)
    assert list(seq) == [a, d, b, c] and list(seq._modules) == ["0", "1", "2", "3"]
    assert seq.pop(1) is d
    assert list(seq) == [a, b, c] and list(seq._modules) == ["0", "1", "2"]
    del seq[0]
    assert list(seq) == [b, c]
    seq[0] = d
    assert seq[0] is d
    assert list(seq + nn.Sequential(a)) == [d, c, a]
    assert len(nn.Sequential(a) * 3) == 3


# -- ModuleList --------------------------------------------------------------------------------

def test_module_list():
    a, b, c = layers(3)
    ml = nn.ModuleList([a, b])
    ml.append(c)
    assert len(ml) == 3 and ml[-1] is c
    assert isinstance(ml[:2], nn.ModuleList) and list(ml[:2]) == [a, b]
    ml.insert(0, c)
    assert list(ml) == [c, a, b, c]
    del ml[0]
    assert list(ml) == [a, b, c] and list(ml._modules) == ["0", "1", "2"]
    assert len(list(ml.parameters())) == 6
    ml += [nn.Identity()]
    assert len(ml) == 4
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        ml.extend(3)
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_list_repr_compresses_repeats():
    ml = nn.ModuleList([nn.Identity(), nn.Identity(), nn.Linear(1, 1)])
    assert repr(ml) == ("ModuleList(\n  (0-1): 2 x Identity()\n"
                        "  (2): Linear(in_features=1, out_features=1, bias=True)\n)")


# -- ModuleDict --------------------------------------------------------------------------------

def test_module_dict():
    a, b = layers(2)
    md = nn.ModuleDict({"a": a})
    md["b"] = b
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert md.pop("a") is a and list(md) == ["b"]
    md.update([("c", a)])
    assert list(md.values()) == [b, a]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


# -- ParameterList / ParameterDict -------------------------------------------------------------

def test_parameter_list_wraps_tensors():
    pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    assert len(pl) == 2 and len(list(pl.parameters())) == 2
    pl.append(ember.zeros(1))
    assert pl[-1].shape == (1,)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    # a CPU tensor's entry has no device suffix (PyTorch adds " (cuda:0)" for a device's)
    assert repr(nn.ParameterList([ember.zeros(2, 3, device="cpu")])) == (
        "ParameterList(  (0): Parameter containing: [ember.float32 of size 2x3])")
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()


def test_parameter_dict():
    pd = nn.ParameterDict({"b": ember.zeros(2), "a": ember.ones(1)})
    assert list(pd) == ["a", "b"]  # a plain dict is sorted, as in PyTorch
    assert isinstance(pd["a"], nn.Parameter)
    pd["c"] = nn.Parameter(ember.zeros(3))
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    assert pd.pop("b").shape == (2,)
    assert "b" not in pd and len(pd) == 2
    assert pd.get("zz") is None
    assert repr(nn.ParameterDict({"p": ember.zeros(2, device="cpu")})) == (
        "ParameterDict(  (p): Parameter containing: [ember.FloatTensor of size 2])")
    with pytest.raises(TypeError, match="cannot be used as a key"):
        pd[1]


def test_containers_state_dict_keys():
    model = nn.Sequential(nn.Linear(2, 2), nn.ModuleList([nn.Linear(2, 1)]),
                          nn.ModuleDict({"head": nn.Linear(1, 1, bias=False)}))
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.0.weight", "1.0.bias",
                                        "2.head.weight"]
