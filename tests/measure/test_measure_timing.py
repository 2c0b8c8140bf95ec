"""Timing: warm-up, repeats until the median is known, the first call apart. On a fake clock
for the stopping rules, on the real one for the structure (never absolute times)."""

import itertools
import re
import sys

import pytest
import torch

import app.measure
from app.measure import MeasureError, TorchMissing, measure
from app.measure.timing import median_ci, perf_counter_clock, relative_ci, time_calls


def _clock(times):
    values = iter(times)

    def clock(call):
        call()
        return next(values)

    return clock


def test_the_median_interval_is_distribution_free():
    # n = 100: ranks 100/2 -+ 1.96 * 10 / 2 = 40.2 and 60.8 -> the 40th and 61st of 1..100
    assert median_ci([float(v) for v in range(1, 101)]) == (40.0, 61.0)
    # few samples: the interval is the whole range
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)
    with pytest.raises(ValueError, match="no times"):
        median_ci([])


def test_steady_times_stop_at_the_minimum_repeats():
    calls = []
    timing = time_calls(
        lambda: calls.append(1), _clock(itertools.repeat(1e-3)), first_call_s=0.5, warmup=2
    )
    assert timing.converged and timing.repeats == 10 and timing.relative_ci == 0
    assert len(calls) == 2 + 10  # warm-up untimed, then the repeats
    assert timing.first_call_s == 0.5 and timing.median_s == 1e-3
    assert timing.stdev_s == 0 and timing.p25_s == timing.p75_s == 1e-3


def _spread():
    """Times spread evenly over 1 to 2 s (the golden ratio's multiples, modulo 1): with 50,
    the median's interval spans ranks 25 -+ 7, about +-0.14 s, or +-9%."""
    return (1.0 + (i * 0.6180339887) % 1.0 for i in itertools.count())


def test_noisy_times_repeat_until_the_count_budget():
    timing = time_calls(lambda: None, _clock(_spread()), first_call_s=1.0, max_repeats=50)
    assert timing.repeats == 50 and not timing.converged
    assert 1.0 <= timing.min_s < timing.max_s < 2.0 and timing.relative_ci > 0.02


def test_noisy_times_stop_at_the_time_budget():
    timing = time_calls(lambda: None, _clock(_spread()), first_call_s=1.0, max_time_s=0.0)
    assert timing.repeats == 10 and not timing.converged  # the first check is past the deadline


def test_repeats_converge_once_the_interval_narrows():
    # ten noisy times, then steady ones: the median's interval narrows under 2%
    times = itertools.chain([1.0, 3.0] * 5, itertools.repeat(2.0))
    timing = time_calls(lambda: None, _clock(times), first_call_s=1.0)
    assert timing.converged and 10 < timing.repeats < 100
    assert relative_ci([2.0] * 5) == 0


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="repeats"):
        time_calls(lambda: None, perf_counter_clock, first_call_s=0, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        time_calls(lambda: None, perf_counter_clock, first_call_s=0, warmup=-1)


def test_a_real_function_is_timed_with_its_first_call_apart():
    x = torch.randn(10_000)
    result = measure(torch.cos, x, repeats=5, warmup=2, max_time_s=0.5)
    t = result.timing
    assert t.clock == "perf_counter" and t.warmup == 2 and t.repeats >= 5
    assert t.first_call_s > 0
    assert t.min_s <= t.ci_low_s <= t.median_s <= t.ci_high_s <= t.max_s
    assert t.min_s <= t.p25_s <= t.p75_s <= t.max_s
    assert result.as_dict()["timing"]["repeats"] == t.repeats
    assert "first call" in result.report() and "median" in result.report()


def test_without_torch_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    monkeypatch.delitem(sys.modules, "app.measure.torch_trace")
    monkeypatch.delattr(app.measure, "torch_trace")
    install = re.escape("install the measure extra (pip install -e '.[measure]')")
    with pytest.raises(TorchMissing, match=install) as caught:
        measure(print)
    assert isinstance(caught.value, ImportError)


def test_an_unknown_stack_is_an_error():
    with pytest.raises(MeasureError, match="unknown stack 'jit'"):
        measure(torch.cos, torch.ones(2), stack="jit")


def test_a_compiled_function_is_timed_compiled_after_its_operators_are_recorded():
    # Recording the operators runs the function once under a dispatch mode; a torch.compile'd
    # one run so falls back to eager for good, and on an H200 a compiled x.cos().cos() was
    # timed at eager's 390 us, not its own 292 us. Its compiled graph must run every call.
    graph_runs = [0]

    def backend(graph, _inputs):
        def run(*args):
            graph_runs[0] += 1
            return graph.forward(*args)

        return run

    compiled = torch.compile(lambda x: x.cos().cos(), backend=backend)
    result = measure(compiled, torch.randn(1000), repeats=3, warmup=1, max_time_s=0.05)
    assert [op.name for op in result.counts.ops] == ["aten::cos", "aten::cos"]
    # the first call, the warm-up and every timed call ran the graph; the recording did not
    assert graph_runs[0] == 1 + result.timing.warmup + result.timing.repeats
