"""The process CPU time of each timed run beside its wall time
(docs/formulas.md#measuring-a-function, #host-bound-runs): read over the call alone, not over
the clock's wait for the device; on a device a host busy >= 0.9 of the run is host-bound,
advised first; on the CPU the share is the threads busy."""

import time

import pytest
import torch

from app.measure import measure
from app.measure.findings import advice, cpu_words, host_line, report
from app.measure.timing import perf_counter_clock, time_calls
from tests.measure.test_measure_advice import _cos_chain, _timing


class _Host:
    """A fake process CPU clock, advanced by the calls and clocks below."""

    def __init__(self) -> None:
        self.now = 0.0

    def process_time(self) -> float:
        return self.now


@pytest.fixture
def host(monkeypatch):
    fake = _Host()
    monkeypatch.setattr("app.measure.timing.time.process_time", fake.process_time)
    return fake


@pytest.mark.parametrize("busy", [0.5e-3, 0.9e-3, 3e-3])
def test_the_cpu_time_is_read_over_the_call_alone(host, busy):
    # each call keeps the host busy `busy` seconds; the clock then spins 5 ms waiting for the
    # device (CUDA's default wait), which is not the call's, and says the run took 1 ms
    def call():
        host.now += busy

    def clock(timed):
        timed()
        host.now += 5e-3
        return 1e-3

    timing = time_calls(call, clock, first_call_s=1.0, warmup=2)
    assert timing.repeats == 10 and timing.median_s == 1e-3
    assert timing.cpu_median_s == pytest.approx(busy)
    assert timing.cpu_share == pytest.approx(busy / 1e-3)
    assert timing.as_dict()["cpu_share"] == timing.cpu_share


def test_a_sleeping_call_keeps_the_host_idle():
    # real clocks: a call that sleeps 2 ms uses next to no CPU time, whatever else runs
    timing = time_calls(lambda: time.sleep(2e-3), perf_counter_clock, first_call_s=0, warmup=0)
    assert timing.median_s >= 2e-3
    assert 0 <= timing.cpu_median_s < 1e-3 and timing.cpu_share < 0.5


@pytest.mark.parametrize(("share", "busy"), [(0.89, False), (0.9, True), (0.95, True)])
def test_on_a_gpu_a_busy_host_is_advised_first(share, busy):
    # 0.9 inclusive: the 1 ms run's host busy 0.89 ms is not host-bound, 0.9 ms is
    counts, timing = _cos_chain("cuda:0"), _timing(share)
    lines = advice(counts, timing, None)
    assert (lines[:1] == host_line(counts, timing, None) != []) is busy
    assert any(line.startswith("Host-bound") for line in lines) is busy
    assert f"{share:.0%} of the wall time" in cpu_words(counts, timing)


@pytest.mark.parametrize(
    ("verdict", "busy"),
    [("near_roofline", False), ("faster_than_roofline", False), ("room_to_improve", True)],
)
def test_judged_a_busy_host_limits_only_a_run_slower_than_its_floor(verdict, busy):
    lines = host_line(_cos_chain("cuda:0"), _timing(1.0), {"verdict": verdict})
    assert bool(lines) is busy


def test_on_the_cpu_the_share_is_the_threads_not_a_busy_host():
    counts, timing = _cos_chain("cpu"), _timing(3.0)
    assert not host_line(counts, timing, None)
    assert "CPU time 3 ms, 3.0 threads busy on average" in report("f", timing, counts, None, ())


def test_a_real_function_reports_its_cpu_time():
    # torch.cos on the CPU: its ops run on this process's threads, so it is busy a part of
    # each run at least (CPU time > 0), never called host-bound
    result = measure(torch.cos, torch.randn(100_000), repeats=5, warmup=1, max_time_s=0.5)
    t = result.timing
    assert t.cpu_median_s > 0 and t.cpu_share == t.cpu_median_s / t.median_s
    assert result.as_dict()["timing"]["cpu_median_s"] == t.cpu_median_s
    assert "threads busy on average" in result.report()
    assert not any(line.startswith("Host-bound") for line in result.advice)
