"""chip="local": the engine prices a CPU's transcendental functions and the first touch of
fresh outputs at the rates its probe measured (fixed here: nothing is timed), the report
says which ceilings it used, and the second run reads them from the cache."""

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from app import local_probe as probes
from app.engine import Software, judge
from app.engine.fusion import estimate_ops
from app.engine.ops import HostCosts, Op, Tensor, special_evaluations
from app.engine.units import MIB, Dtype
from app.local_probe import HostRates, LocalProfile
from app.measure import LOCAL, judging, measure
from app.probe import Probe

N = 10_000_000  # the README's bench_cos.py: x = torch.randn(10_000_000)
# The reporting machine (issue 34): a copy at 20 GB/s; cos 3.5x slower than a copy of the
# same size (40 MB read, 40 MB written: 4 ms; cos 14 ms: 1e7 / 14 ms = 7.14e8 cos/s); a fresh
# output's first touch about 1 ms per MB (1e-9 s/B), for outputs from 32 MiB (glibc maps
# those anew on every call).
REPORTER = Probe("cpu", "torch", {"torch": "2.13"}, "2026-11-28", 2e10, {"fp32": 1e11}, 2**30)
REPORTER_HOST = HostRates({"cos": N / 0.014}, 1e-9, 32 * MIB)
# x.cos().cos() as measure records it: t0 -> t1 -> t2, each 40 MB of fp32
COS_COS = [
    Op("aten::cos", (Tensor((N,), Dtype.FP32, "t0"),), (Tensor((N,), Dtype.FP32, "t1"),)),
    Op("aten::cos", (Tensor((N,), Dtype.FP32, "t1"),), (Tensor((N,), Dtype.FP32, "t2"),)),
]


def _local(result: Probe = REPORTER, host: HostRates | None = REPORTER_HOST) -> LocalProfile:
    return LocalProfile(result, host, Path("local-test.json"), cached=True)


@pytest.fixture
def reporter(monkeypatch: pytest.MonkeyPatch) -> None:
    """chip="local" is the reporting machine's fixed profile: nothing is probed."""
    monkeypatch.setattr(judging, "local_ceilings", lambda device, reprobe: _local())


def test_the_readme_cos_example_on_a_cpu_is_judged_near_its_roofline(reporter) -> None:
    # Measured on such a machine: 127 ms (15.9x the 8 ms of the old pricing, below).
    # Each cos: compute 1e7 / 7.14e8 = 14 ms; memory 80 MB / 2e10 = 4 ms, plus its fresh
    # 40 MB output's first touch 40 ms: 44 ms; the two 88 ms; 127 / 88 = 1.44x
    answer = judging.local_check(COS_COS, 0.127, Software.EAGER)
    assert answer["expected_time_s"] == pytest.approx(0.088)
    assert answer["ratio"] == pytest.approx(0.127 / 0.088)
    assert answer["verdict"] in {"near_roofline", "room_to_improve"}
    assert answer["bound"] == "memory"
    # fused: one fresh output; compute 2 x 14 = 28 ms, memory 4 + 40 = 44 ms; plus one
    # kernel's launch from a stream, 2.31 µs (eager's 8 µs dispatch hides under the work)
    assert answer["fused_time_s"] == pytest.approx(0.044 + 2.31e-6)
    assert answer["ceilings"]["special_per_s"] == {"cos": N / 0.014}
    # before: a CPU priced as a catalog chip (one FLOP per cos at the matmul rate, no first
    # touch): 2 x 80 MB / 2e10 = 8 ms, and 127 ms was 15.9x, "order of magnitude slower"
    old = estimate_ops(COS_COS, judging.chip_from_probe(REPORTER), Software.EAGER)
    assert old.roofline.expected_time == pytest.approx(0.008)
    assert str(judge(old.roofline, 0.127).verdict) == "order_of_magnitude_slower"


def test_transcendental_functions_are_priced_at_their_rate_and_others_as_before() -> None:
    chip = judging.chip_from_probe(REPORTER)
    host = HostCosts({"cos": 1e9})  # no first touch
    small = Tensor((1000,))
    cos = [Op("aten::cos", (small,), (small,))]
    add = [Op("aten::add", (small, small), (small,))]
    # cos over 1000 values: compute 1000 / 1e9 = 1 µs; memory 8 kB / 2e10 = 0.4 µs
    assert estimate_ops(cos, chip, host=host).roofline.expected_time == pytest.approx(1e-6)
    # add has no transcendental: 1000 FLOPs / 1e11 = 10 ns; memory 12 kB / 2e10 = 0.6 µs
    priced, plain = estimate_ops(add, chip, host=host), estimate_ops(add, chip)
    assert priced.roofline.expected_time == plain.roofline.expected_time == pytest.approx(6e-7)
    # a function without a probed rate keeps its FLOP at the vector peak
    sin = [Op("aten::sin", (small,), (small,))]
    assert estimate_ops(sin, chip, host=host).roofline == estimate_ops(sin, chip).roofline


def test_costs_measured_as_nothing_price_as_a_catalog_chip() -> None:
    # no rates, no first touch: the local pricing is the catalog's, to the bit
    chip = judging.chip_from_probe(REPORTER)
    t2 = Tensor((N,), id="t2")
    ops = [*COS_COS, Op("aten::add_", (t2, Tensor((N,))), (t2,))]
    for groups in ((), ([0, 1],), ([0, 1, 2],)):
        priced = estimate_ops(ops, chip, Software.EAGER, groups, host=HostCosts())
        plain = estimate_ops(ops, chip, Software.EAGER, groups)
        assert priced == plain


def test_only_fresh_outputs_from_the_threshold_pay_their_first_touch() -> None:
    chip = judging.chip_from_probe(REPORTER)
    host = HostCosts(first_touch_s_per_byte=1e-9, fresh_from_bytes=32 * MIB)
    x, y = Tensor((N,), id="x"), Tensor((N,), id="y")
    # x.add_(y) writes x in place: no fresh memory; 120 MB / 2e10 = 6 ms
    in_place = [Op("aten::add_", (x, y), (x,))]
    assert estimate_ops(in_place, chip, host=host).roofline.expected_time == pytest.approx(6e-3)
    # x + y into a fresh 40 MB output: 6 ms + 40 MB x 1e-9 = 46 ms
    fresh = [Op("aten::add", (x, y), (Tensor((N,), id="z"),))]
    assert estimate_ops(fresh, chip, host=host).roofline.expected_time == pytest.approx(0.046)
    # a 4 MB output comes from reused memory: 12 MB / 2e10 = 0.6 ms, no first touch
    small = Tensor((N // 10,))
    reused = [Op("aten::add", (small, small), (small,))]
    assert estimate_ops(reused, chip, host=host).roofline.expected_time == pytest.approx(6e-4)
    # grouped, the cos chain writes only its result fresh: t1 stays on chip
    chain = estimate_ops(COS_COS, chip, groups=([0, 1],), host=host)
    assert chain.roofline.expected_time == pytest.approx(0.004 + 0.040)


def test_which_transcendental_functions_an_operator_evaluates() -> None:
    x = Tensor((4, 8))
    assert special_evaluations(Op("aten::cos", (x,), (x,))) == {"cos": 32}
    assert special_evaluations(Op("aten::gelu", (x,), (x,))) == {"erf": 32}
    assert special_evaluations(Op("aten::pow", (x, x), (x,))) == {"exp2": 32, "log2": 32}
    assert special_evaluations(Op("aten::_softmax", (x,), (x,))) == {"exp": 32}
    assert special_evaluations(Op("aten::add", (x, x), (x,))) == {}
    # an operator given its FLOPs is counted as given
    assert special_evaluations(Op("aten::cos", (x,), (x,), flops=1.0)) == {}


def test_the_local_chip_from_a_gpu_probe_carries_no_host_costs() -> None:
    assert judging.host_costs(None) is None
    costs = judging.host_costs(HostRates({"exp": 1e9}, 1e-9, None))
    assert costs == HostCosts({"exp": 1e9}, 1e-9, math.inf)


def test_the_report_says_which_ceilings_it_used_and_that_the_second_run_reads_the_cache(
    small_probe, monkeypatch
) -> None:
    # a real probe at tiny sizes, then the cache: the second measure probes nothing
    probed = []
    real = probes.probe_host

    def counted(torch_: object) -> HostRates:
        probed.append(1)
        return real(torch_)

    monkeypatch.setattr(probes, "probe_host", counted)
    x = torch.randn(1000)

    def run(**options: Any) -> str:
        result = measure(lambda x: x.cos().cos(), x, chip=LOCAL, repeats=1, max_time_s=0, **options)
        return result.report()

    first = run()
    assert len(probed) == 1
    line = next(line for line in first.splitlines() if line.startswith("  ceilings "))
    assert "copy " in line and "fp32 matmul " in line and "fp64 matmul " in line
    assert ", cos " in line and "probed now, " in line and "(cached in " in line
    lines = first.splitlines()
    assert lines.index(line) < next(i for i, text in enumerate(lines) if text.startswith("  - "))
    judging.forget_local()  # a new process
    second = run()
    assert len(probed) == 1
    assert "read from the cache of " in second and "--reprobe measures again" in second
    assert not judging.local_ceilings("cpu", reprobe=True).cached and len(probed) == 2
    judging.forget_local()
    monkeypatch.setenv(judging.REPROBE_ENV, "1")
    assert not judging.local_ceilings("cpu").cached and len(probed) == 3
