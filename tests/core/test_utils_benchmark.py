"""``ember.utils.benchmark``: Timer runs what it is given, Measurement's statistics, reprs and
Compare's tables against PyTorch's (built from the same raw times, never timed)."""

import re

import numpy as np
import pytest

import ember
from ember.utils import benchmark
from ember.utils.benchmark import Compare, Measurement, TaskSpec, Timer, select_unit

RAW = [1e-5, 2e-5, 3e-5, 4e-5, 5e-5]


def _counter_globals():
    calls = {"stmt": 0, "setup": 0}

    def bump(key):
        calls[key] += 1

    return calls, {"bump": bump}


def _norm(text: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x?", text.replace("ember.", "torch."))


def test_attribute_after_import_ember():
    assert ember.utils.benchmark is benchmark
    assert benchmark.Timer is Timer


def test_timeit_runs_stmt_number_times_after_warmup_and_setup_per_block():
    calls, g = _counter_globals()
    m = Timer(stmt="bump('stmt')", setup="bump('setup')", globals=g).timeit(100)
    # warmup of max(100 // 100, 2) executions, then the 100 measured
    assert calls == {"stmt": 102, "setup": 2}
    assert isinstance(m, Measurement)
    assert m.number_per_run == 100 and len(m.raw_times) == 1
    assert m.times == [m.raw_times[0] / 100]


def test_timeit_warmup_scales_with_number():
    calls, g = _counter_globals()
    Timer(stmt="bump('stmt')", globals=g).timeit(1000)
    assert calls["stmt"] == 1010


def test_setup_defines_names_and_globals_are_copied():
    g = {"x": ember.ones(3)}
    seen = []
    g["seen"] = seen
    Timer(stmt="seen.append(float((x + y).sum()))", setup="y = x * 2", globals=g).timeit(3)
    assert seen == [9.0] * 5
    assert set(g) == {"x", "seen"}  # exec's __builtins__ and the added torch stay out


def test_torch_and_ember_are_in_the_namespace():
    out = []
    Timer(stmt="out.append((torch, ember))", globals={"out": out}).timeit(2)
    assert out[0] == (ember, ember)


def test_multiline_stmt_is_dedented_and_stripped():
    t = Timer(stmt="""
        a = 1
        b = a + 1
    """)
    assert t._task_spec.stmt == "a = 1\nb = a + 1"
    t.timeit(2)


def test_blocked_autorange_blocks_and_callback():
    calls, g = _counter_globals()
    seen = []
    m = Timer(stmt="bump('stmt')", globals=g).blocked_autorange(
        callback=lambda number, t: seen.append(number), min_run_time=0.01)
    assert len(seen) == len(m.raw_times) >= 1
    assert set(seen) == {m.number_per_run}
    assert m.number_per_run >= 1 and str(m.number_per_run).strip("0") == "1"  # a power of 10
    # every measured block ran number_per_run times, plus the block-size estimate's runs
    assert calls["stmt"] >= len(m.raw_times) * m.number_per_run


def test_adaptive_autorange_measures_more_than_three_blocks_or_hits_the_cap():
    m = Timer(stmt="pass").adaptive_autorange(min_run_time=0.001, max_run_time=0.05)
    assert len(m.raw_times) > 3 or sum(m.raw_times) > 0.05


def test_num_threads_set_during_the_run_and_restored():
    prior = ember.get_num_threads()
    seen = []
    g = {"seen": seen}
    Timer(stmt="seen.append(torch.get_num_threads())", globals=g, num_threads=1).timeit(2)
    assert set(seen) == {1}
    assert ember.get_num_threads() == prior
    if prior > 1 or ember.get_num_threads() > 0:
        seen.clear()
        Timer(stmt="seen.append(torch.get_num_threads())", globals=g, num_threads=2,
              ).blocked_autorange(min_run_time=0.001)
        ember.set_num_threads(2)
        expect = ember.get_num_threads()  # 2 where the BLAS pool allows it
        ember.set_num_threads(prior)
        assert set(seen) == {expect}
        assert ember.get_num_threads() == prior


def test_errors_as_torch():
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        Timer(stmt=lambda: None)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer(global_setup="#include <x>")
    with pytest.raises(ValueError, match="Invalid language `rust`."):
        Timer(language="rust")
    for lang in ("c++", "cpp", benchmark.Language.CPP):
        with pytest.raises(RuntimeError, match="C\\+\\+ timing"):
            Timer(language=lang)
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer().repeat()
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer().autorange()
    with pytest.raises(NameError):
        Timer(stmt="undefined_name").timeit(1)
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        Compare([1])


def test_measurement_statistics_by_hand():
    m = Measurement(10, RAW, TaskSpec("x + 1", "pass"))
    times = np.array(RAW) / 10
    assert m.times == pytest.approx(list(times))
    assert m.median == pytest.approx(3e-6)
    assert m.mean == pytest.approx(3e-6)
    # linear interpolation: p25 = 2e-6, p75 = 4e-6
    assert m.iqr == pytest.approx(2e-6)
    assert m.has_warnings  # IQR is 67% of the median
    assert m.significant_figures == 1
    assert m.title == "x + 1" and m.as_row_name == "x + 1"
    assert m.stmt == "x + 1" and m.num_threads == 1 and m.env is None

    even = Measurement(1, [4.0, 1.0, 3.0, 2.0], TaskSpec("s", "pass"))
    assert even.median == pytest.approx(2.5)
    assert even.iqr == pytest.approx(3.25 - 1.75)

    tight = Measurement(1, [1.0, 1.001, 0.999, 1.0005, 0.9995, 1.0], TaskSpec("s", "pass"))
    assert not tight.has_warnings and tight.meets_confidence()
    # IQR points 0.9995, 1, 1, 1.0005: std 3.5e-4, ci = 1.645 * std / 2 = 2.9e-4,
    # floor(log10(1 / 2.9e-4)) = 3
    assert tight.significant_figures == 3


def test_taskspec_title_and_sub_label():
    assert TaskSpec("s", "pass", label="L", sub_label="f").title == "L: f"
    assert TaskSpec("a\nb", "pass", sub_label="f").title == "stmt: (f)\n  a\n  b"
    m = Measurement(1, [1.0], TaskSpec("s", "pass", sub_label="row"))
    assert m.as_row_name == "row"


def test_merge_extrapolates_to_one_run():
    spec = TaskSpec("s", "pass")
    a = Measurement(10, [1.0, 2.0], spec)
    b = Measurement(2, [1.0], spec, metadata={"k": 1})
    other = Measurement(1, [5.0], TaskSpec("t", "pass"))
    merged = Measurement.merge([a, b, other])
    assert len(merged) == 2
    assert merged[0].number_per_run == 1 and merged[0].raw_times == [0.1, 0.2, 0.5]
    assert merged[0].metadata is None and merged[1].raw_times == [5.0]


def test_select_unit_and_trim():
    assert select_unit(2e-9) == ("ns", 1e-9)
    assert select_unit(2e-6) == ("us", 1e-6)
    assert select_unit(2e-3) == ("ms", 1e-3)
    assert select_unit(2.0) == ("s", 1)
    assert benchmark.trim_sigfig(3.14159, 2) == pytest.approx(3.1)
    assert benchmark.unit_to_english("us") == "microsecond"


def test_repr_structure():
    m = Measurement(10, RAW, TaskSpec("x + 1", "y = 2", label="add", description="n=4"))
    lines = repr(m).splitlines()
    assert re.fullmatch(r"<ember\.utils\.benchmark\.utils\.common\.Measurement object at "
                        r"0x[0-9a-f]+>", lines[0])
    assert lines[1:] == ["add", "n=4", "setup: y = 2", "  Median: 3.00 us",
                         "  IQR:    2.00 us (2.00 to 4.00)",
                         "  5 measurements, 10 runs per measurement, 1 thread",
                         "  WARNING: Interquartile range is 66.7% of the median measurement.",
                         "           This suggests significant environmental influence."]
    one = Measurement(100, [2.5e-4], TaskSpec("f(x)", "pass", num_threads=4))
    assert repr(one).splitlines()[1:] == ["f(x)", "  2.50 us",
                                          "  1 measurement, 100 runs , 4 threads"]


def _cases(mod):
    spec = mod.TaskSpec
    mk = mod.Measurement
    return [
        mk(10, RAW, spec("x + 1", "pass", label="add", sub_label="f32", description="n=1")),
        mk(10, [v * 2 for v in RAW], spec("x + 1", "pass", label="add", sub_label="f64",
                                          description="n=1")),
        mk(100, [1.2e-4, 1.21e-4, 1.19e-4, 1.2e-4], spec("x + 1", "pass", label="add",
                                                         sub_label="f32", description="n=8")),
        mk(1, [3e-3, 3.1e-3], spec("x + 1", "pass", label="add", sub_label="f32",
                                   description="n=1", num_threads=4)),
        mk(1, [0.5, 0.6, 0.55, 0.52], spec("mm", "pass", label="matmul", description="big")),
        mk(1, [7e-9] * 4, spec("nop", "pass", label="tiny", description="d")),
    ]


@pytest.mark.parametrize("style", ["plain", "trim", "all"])
def test_compare_table_matches_torch(style, capsys):
    torch_bench = pytest.importorskip("torch.utils.benchmark")

    def render(mod):
        c = mod.Compare(_cases(mod))
        if style != "plain":
            c.trim_significant_figures()
        if style == "all":
            c.colorize(rowwise=True)
            c.highlight_warnings()
        return str(c)

    ours = render(benchmark)
    assert ours == render(torch_bench)
    assert "[-" in ours and "matmul" in ours and "f64" in ours and "n=8" in ours
    assert "4 threads: " in ours and "Times are in microseconds (us)." in ours
    Compare(_cases(benchmark)).print()
    assert capsys.readouterr().out == str(Compare(_cases(benchmark))) + "\n"


def test_compare_without_description():
    # PyTorch's Compare fails on a column without description (len(None)); Ember's prints an
    # unnamed column
    text = str(Compare([Measurement(1, [7e-9] * 4, TaskSpec("nop", "pass", label="tiny"))]))
    lines = text.splitlines()
    assert lines[0].startswith("[") and " tiny " in lines[0]
    assert lines[2].startswith("1 threads: ")
    assert lines[3].lstrip().startswith("nop") and "7.0" in lines[3]
    assert "Times are in nanoseconds (ns)." in text


def test_measurement_repr_and_stats_match_torch():
    torch_bench = pytest.importorskip("torch.utils.benchmark")
    for ours, theirs in zip(_cases(benchmark), _cases(torch_bench), strict=True):
        assert _norm(repr(ours)) == _norm(repr(theirs))
        assert ours.median == pytest.approx(theirs.median)
        assert ours.iqr == pytest.approx(theirs.iqr)
        assert ours.significant_figures == theirs.significant_figures
        assert ours.has_warnings == theirs.has_warnings
    for t in (1e-9, 1e-6, 9.99e-4, 1e-3, 0.9, 12.0):
        assert select_unit(t) == torch_bench.select_unit(t)
    for x, n in ((3.14159, 2), (123.456, 1), (0.000123456, 3), (99.99, 2)):
        assert benchmark.trim_sigfig(x, n) == torch_bench.trim_sigfig(x, n)


def test_timeit_repr_structure_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.benchmark import Timer as TorchTimer

    def shape(text):
        return re.sub(r"\d+\.\d+ \w+", "T", _norm(text))

    def f(x):
        return x * 2

    ours = Timer(stmt="f(x)", globals={"f": f, "x": ember.ones(4)}).timeit(100)
    theirs = TorchTimer(stmt="f(x)", globals={"f": f, "x": torch.ones(4)}).timeit(100)
    assert shape(repr(ours)) == shape(repr(theirs))
