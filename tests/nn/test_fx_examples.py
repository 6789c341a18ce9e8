"""PyTorch's torch.fx example programs (pytorch/examples, fx/) run unedited on Ember under
``python -m ember.as_torch`` and print what they print under PyTorch.

The programs are not part of this repository: they are read from a local copy of
pytorch/examples at the commit ``tools/upstream_sources.py`` pins (without one these tests
skip, saying so), and each run is the program followed by a short block of checks of this
test's own (``CHECKS``). The expected text below is PyTorch's output of the same programs with
``torch.`` written ``ember.`` (what ``as_torch`` code prints); where Ember prints something
else on purpose, the test says so. ``native_interpreter/`` is left out: it needs a TorchScript
C++ extension built with CMake.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from testutils import upstream

#: what each run adds after the program: it prints what the program computed, checked
CHECKS = {
    "custom_tracer": """
x = torch.randn(5)
lowered = GraphModule(M1(), LowerReluTracer().trace(M1()))
print("same values:", torch.equal(lowered(x), torch.relu(x)))
""",
    "inline_function": """
m.recompile()
print(m.code)
x = torch.randn(6)
print("same values:", torch.equal(m(x), torch.relu(x) + 1.0))
""",
    "invert": """
x = torch.arange(5) + 1
print("f(res(x)) == x:", torch.allclose(f(res(x)), x.float()))
""",
    "module_tracer": """
x = torch.randn(2, 3, 32, 32)
rn18.eval()
print("same values:", torch.allclose(torch.fx.GraphModule(rn18, traced_rn18)(x), rn18(x)))
""",
    "primitive_library": """
x, y = torch.randn(4), torch.randn(4)
expected = (torch.sigmoid(x).half().float() + torch.sigmoid(y).half().float()).half()
print("same values:", torch.equal(module(x, y), expected), torch.equal(traced(x, y), expected))
""",
    "profiling_tracer": """
print(traced_with_profiler.code)
print("dead code eliminated:", graph_with_profiler.eliminate_dead_code())
with torch.autograd.profiler.profile() as prof:
  traced_with_profiler(x)
print("ranges:", [(e.name, e.cpu_parent.name if e.cpu_parent is not None else None)
                  for e in prof.function_events if e.name in ("foo", "aten::relu")])
print("same values:", torch.equal(traced_with_profiler(x), torch.relu(x)))
""",
    "proxy_based_graph_creation": """
print(mod.code)
x, y = torch.randn(3), torch.randn(2)
print("same values:", torch.equal(mod(x, y), torch.neg(torch.tanh(torch.cat([x, y])))))
""",
    "replace_op": """
print(traced.code)
x, y = torch.tensor([6, 5, 12]), torch.tensor([3, 4, 10])
print("same values:", all(torch.equal(r, x & y) for r in traced(x, y)))
""",
    "subgraph_rewriter_basic_use": """
print(traced.code)
x, w1, w2 = torch.randn(3), torch.randn(3), torch.randn(3)
m = torch.max(torch.stack([w1, w2]))
print("same values:", torch.equal(traced(x, w1, w2), x + m + m))
""",
    "wrap_output_dynamically": """
print(traced.code)
print("same values:", torch.equal(new_output, torch.nn.functional.leaky_relu(torch.cat([x, y]))))
""",
}


def fx_examples() -> Path:
    """pytorch/examples' fx/ folder at the pinned commit; the test skips where there is none."""
    return upstream("pytorch/examples") / "fx"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Each example's run, the program and its checks: started all at once (each takes about
    a second, most of it the interpreter and ember importing)."""
    work = tmp_path_factory.mktemp("fx")
    for name, checks in CHECKS.items():
        program = (fx_examples() / f"{name}.py").read_text()
        (work / f"{name}.py").write_text(program + "\n# -- the test's checks --" + checks)
    procs = {name: subprocess.Popen([sys.executable, "-m", "ember.as_torch", f"{name}.py"],
                                    cwd=work, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name in CHECKS}
    runs = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=300)
        runs[name] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return runs


def run(outputs, name: str) -> str:
    r = outputs[name]
    assert r.returncode == 0, f"{name}.py failed:\n{r.stderr}"
    return r.stdout


def test_every_example_is_tested():
    names = sorted(p.stem for p in fx_examples().glob("*.py"))
    assert names == ["custom_tracer", "inline_function", "invert", "module_tracer",
                     "primitive_library", "profiling_tracer", "proxy_based_graph_creation",
                     "replace_op", "subgraph_rewriter_basic_use", "wrap_output_dynamically"]
    assert sorted(CHECKS) == names


def test_custom_tracer(outputs):
    out = run(outputs, "custom_tracer")
    # torch.fx's print_tabular is tabulate's 'simple' table (a column is its header + 2 wide
    # at least); a function target is printed by its qualified name where tabulate shows
    # the function's repr ('<function relu at 0x7f...>')
    assert out == (
        "opcode       name    target    args     kwargs\n"
        "-----------  ------  --------  -------  --------\n"
        "placeholder  x       x         ()       {}\n"
        "call_module  relu    relu      (x,)     {}\n"
        "output       output  output    (relu,)  {}\n"
        "opcode         name    target                    args     kwargs\n"
        "-------------  ------  ------------------------  -------  ------------------\n"
        "placeholder    x       x                         ()       {}\n"
        "call_function  relu    ember.nn.functional.relu  (x,)     {'inplace': False}\n"
        "output         output  output                    (relu,)  {}\n"
        "True\n"
        "same values: True\n")


def test_inline_function(outputs):
    assert run(outputs, "inline_function") == (
        "\n\n\ndef forward(self, x):\n"
        "    relu_1 = ember.nn.functional.relu(x, inplace = False);  x = None\n"
        "    add = relu_1 + 1.0;  relu_1 = None\n"
        "    return add\n    \n"
        "same values: True\n")


def test_invert(outputs):
    out = run(outputs, "invert")
    assert "def forward(self, output):\n    log = ember.log(output);  output = None\n" in out
    # torch.arctan and torch.atan are two functions, ember.arctan is ember.atan: the node is
    # named after the function ('atan' where PyTorch prints 'arctan')
    assert re.search(r"\n    (arctan|atan) = ember\.\1\(log\);  log = None\n    return \1\n",
                     out)
    assert out.endswith("f(res(x)) == x: True\n")


def test_module_tracer_records_each_nodes_module(outputs):
    pytest.importorskip("ember.vision")
    source = (fx_examples() / "module_tracer.py").read_text()
    expected = source.split('"""\nNode x is from module \n')[1].split('"""')[0]
    expected_lines = ["Node x is from module "] + expected.strip("\n").split("\n")
    out = run(outputs, "module_tracer").split("\n")
    assert out[-2:] == ["same values: True", ""]
    # the same nodes from the same modules; ember.vision's residual blocks run downsample
    # before conv1 (torchvision: after bn2), which moves those two nodes up in each block
    assert sorted(out[:-2]) == sorted(expected_lines) and len(out[:-2]) == 71


def test_primitive_library(outputs):
    wrapped = "\n".join(f'ember.fx._symbolic_trace.wrap("__main___{n}")'
                        for n in ("sigmoid_lowp", "add_lowp"))
    assert run(outputs, "primitive_library") == (
        f"\n{wrapped}\n\n"
        "def forward(self, x, y):\n"
        "    sigmoid_lowp = __main___sigmoid_lowp(x);  x = None\n"
        "    sigmoid_lowp_1 = __main___sigmoid_lowp(y);  y = None\n"
        "    add_lowp = __main___add_lowp(sigmoid_lowp, sigmoid_lowp_1);  "
        "sigmoid_lowp = sigmoid_lowp_1 = None\n"
        "    return add_lowp\n    \n"
        '\nember.fx._symbolic_trace.wrap("__main___add_lowp")\n\n'
        "def forward(self, x, y):\n"
        "    float_1 = x.float();  x = None\n"
        "    sigmoid = float_1.sigmoid();  float_1 = None\n"
        "    half = sigmoid.half();  sigmoid = None\n"
        "    float_2 = y.float();  y = None\n"
        "    sigmoid_1 = float_2.sigmoid();  float_2 = None\n"
        "    half_1 = sigmoid_1.half();  sigmoid_1 = None\n"
        "    add_lowp = __main___add_lowp(half, half_1);  half = half_1 = None\n"
        "    return add_lowp\n    \n"
        '\nember.fx._symbolic_trace.wrap("__main___sigmoid_lowp")\n\n'
        "def forward(self, x, y):\n"
        "    sigmoid_lowp = __main___sigmoid_lowp(x);  x = None\n"
        "    sigmoid_lowp_1 = __main___sigmoid_lowp(y);  y = None\n"
        "    float_1 = sigmoid_lowp.float();  sigmoid_lowp = None\n"
        "    float_2 = sigmoid_lowp_1.float();  sigmoid_lowp_1 = None\n"
        "    add = float_1 + float_2;  float_1 = float_2 = None\n"
        "    half = add.half();  add = None\n"
        "    return half\n    \n"
        "same values: True True\n")


def test_profiling_tracer(outputs):
    out = run(outputs, "profiling_tracer")
    tables = out.split("Self CPU time total")[:3]
    rows = [[line.split()[0] for line in t.split("\n") if line.strip()
             and not line.lstrip().startswith(("-", "Name", ":"))] for t in tables]
    # the range 'foo' of the eager run, none in the plain trace, 'foo' again in the trace
    # whose record_function became _record_function_enter/_exit nodes (PyTorch also lists
    # the handle's aten::empty in it, and clamp_min under relu)
    assert rows[0] == ["foo", "aten::relu"] and rows[1] == ["aten::relu"]
    assert rows[2][0] == "foo" and "aten::relu" in rows[2]
    assert (
        "def forward(self, x):\n"
        "    _record_function_enter = ember.ops.profiler._record_function_enter('foo')\n"
        "    relu = ember.relu(x);  x = None\n"
        "    _record_function_exit = ember.ops.profiler._record_function_exit("
        "_record_function_enter);  _record_function_enter = _record_function_exit = None\n"
        "    return relu\n") in out
    assert out.endswith("dead code eliminated: False\n"
                        "ranges: [('foo', None), ('aten::relu', 'foo')]\n"
                        "same values: True\n")


def test_proxy_based_graph_creation(outputs):
    assert run(outputs, "proxy_based_graph_creation") == (
        "\n\n\ndef forward(self, x, y):\n"
        "    cat = ember.cat([x, y]);  x = y = None\n"
        "    tanh = ember.tanh(cat);  cat = None\n"
        "    neg = ember.neg(tanh)\n"
        "    add = ember.add(tanh, neg);  tanh = add = None\n"
        "    return neg\n    \n"
        "same values: True\n")


def test_replace_op(outputs):
    assert run(outputs, "replace_op") == (
        "\n\n\ndef forward(self, x, y):\n"
        "    bitwise_and = ember.bitwise_and(x, y)\n"
        "    bitwise_and_1 = ember.bitwise_and(x, y)\n"
        "    bitwise_and_2 = ember.bitwise_and(x, y);  x = y = None\n"
        "    return (bitwise_and, bitwise_and_1, bitwise_and_2)\n    \n"
        "same values: True\n")


def test_subgraph_rewriter_basic_use(outputs):
    assert run(outputs, "subgraph_rewriter_basic_use") == (
        "\n\n\ndef forward(self, x, w1, w2):\n"
        "    stack = ember.stack([w1, w2])\n"
        "    max_1 = ember.max(stack);  stack = None\n"
        "    add = x + max_1;  x = max_1 = None\n"
        "    stack_1 = ember.stack([w1, w2]);  w1 = w2 = None\n"
        "    max_2 = ember.max(stack_1);  stack_1 = None\n"
        "    add_1 = add + max_2;  add = max_2 = None\n"
        "    return add_1\n    \n"
        "same values: True\n")


def test_wrap_output_dynamically(outputs):
    out = run(outputs, "wrap_output_dynamically")
    assert out.startswith("\n\n\ndef forward(self, x, y):\n"
                          "    cat = ember.cat([x, y]);  x = y = None\n")
    # PyTorch's F.leaky_relu hands its options to __torch_function__ as keywords
    # ('negative_slope = 0.01, inplace = False'); Ember records the call as LeakyReLU made it
    assert re.search(r"\n    leaky_relu = ember\.nn\.functional\.leaky_relu\(cat, "
                     r"(0\.01, False|negative_slope = 0\.01, inplace = False)\);  cat = None\n"
                     r"    return leaky_relu\n", out)
    assert out.endswith("same values: True\n")
