"""A GPU trace's step split in time (trace_timeline.py), each part against its limit
(trace_breakdown.py), and its host copies priced as copies (trace_copies.py): worked by hand
on tests/traces/gpu_step.json, a trace built from Kineto's documented events (no GPU was lent
to record one: see tests/traces/record.py), on events built here, and as properties."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine.copies import Direction
from app.engine.trace import analyse
from app.engine.trace_copies import host_copies, host_copy_of
from app.engine.trace_events import Call, Device, collect
from app.engine.trace_timeline import timeline
from tests.engine.chips import A100, H100

TRACES = Path(__file__).resolve().parent.parent / "traces"
# PCIe Gen5 x16: 128 GB/s both ways, 64 GB/s each way (docs/formulas.md#copies)
H100_PCIE5 = replace(H100, host_bandwidth=128e9)
US = 1e-6


def step_trace():
    return collect(json.loads((TRACES / "gpu_step.json").read_text())["traceEvents"])


def test_the_steps_time_in_parts_worked_by_hand():
    # gpu_step.json, in microseconds; the step (ProfilerStep#1) is [0, 100]:
    # - host: aten::copy_ queues a memcpy (cudaMemcpyAsync at 5), aten::mm a kernel
    #   (cudaLaunchKernel at 20), aten::item blocks in cudaStreamSynchronize [60, 71),
    #   aten::cos queues its kernel at 88;
    # - device: memcpy HtoD (pinned, 640,000 B) [7, 27), mm [30, 70), cos [92, 97).
    # kernels: 40 + 5 = 45; copies: 20.
    # idle [0, 7): queued at 5: host wait 5, launch gap 2.
    # idle [27, 30): the mm was queued at 20: launch gap 3.
    # idle [70, 92): blocked in the sync [70, 71): 1; the sync returned at 71 and the cos was
    #   queued at 88: the refill 71..88 = 17 is the sync's too (18 in all); launch gap 92 - 88 = 4.
    # idle [97, 100): nothing follows: other 3.
    # launch gaps 2 + 3 + 4 = 9 in 3 stretches; host waits 5; 45+20+9+5+18+3 = 100.
    result = analyse(step_trace(), H100_PCIE5)
    found = result.breakdown
    assert found is not None
    line = found.timeline
    assert line.steps == 1 and line.gaps == 3
    got = {p.name: round(p.time / US, 9) for p in found.parts}
    assert got == {
        "kernels": 45,
        "copies": 20,
        "launch_gaps": 9,
        "host_waits": 5,
        "synchronisation": 18,
        "other": 3,
    }
    assert line.window == pytest.approx(100 * US)
    # limits: mm fp32 1024^3, 2 x 1024^3 = 2,147,483,648 FLOPs at 66.9 TFLOP/s = 32.10 us
    # (memory 3 x 4 MiB / 3.35 TB/s = 3.76 us): lost 40 - 32.10 = 7.90; cos of 160,000 fp32
    # reads and writes 1.28 MB / 3.35 TB/s = 0.382 us: lost 5 - 0.382 = 4.618;
    # kernels' limit 45 - 7.90 - 4.618 = 32.48 us.
    # copies: 640,000 B at 64 GB/s = 10 us (its device side 0.19 us meanwhile): limit 10.
    # launch gaps: 3 x 2.31 = 6.93 us. Host waits, synchronisation, other: 0.
    limits = {p.name: p.limit / US for p in found.parts}
    assert limits["kernels"] == pytest.approx(32.48, abs=0.01)
    assert limits["copies"] == pytest.approx(10.0)
    assert limits["launch_gaps"] == pytest.approx(6.93)
    assert limits["host_waits"] == limits["synchronisation"] == limits["other"] == 0
    # over: kernels 12.52, copies 10, launch gaps 2.07, host waits 5, sync 18, other 3
    assert found.first is not None and found.first.name == "synchronisation"
    assert found.attack_first().startswith(
        "Attack the synchronisation first: 18 µs against a limit of 0 s"
    )
    assert ".item()" in found.attack_first()
    assert found.mapped == pytest.approx(45 * US) and found.unmapped == pytest.approx(0)


def test_the_host_copy_is_priced_as_a_copy_and_its_share_said():
    # the memcpy is no kernel of aten::copy_ (which then launched none: not in the table); it
    # is priced on the host link: 10 us of the 65 us measured (mm 40, cos 5, the copy 20),
    # at least 10 / 65 = 15%.
    result = analyse(step_trace(), H100_PCIE5)
    assert [m.op.name for m in result.modelled] == ["aten::mm", "aten::cos"]
    copies = result.copies
    assert copies is not None
    [group] = copies.groups
    assert (group.direction, group.pinned, group.bytes, group.count) == (
        Direction.H2D,
        True,
        640_000,
        1,
    )
    assert group.launchers == {"aten::copy_"}
    assert group.expected_time == pytest.approx(10 * US)
    # pinned: 10 / 0.75 = 13.3 us
    assert group.realistic_time == pytest.approx(10 * US / 0.75)
    assert result.measured == pytest.approx(65 * US)
    line = copies.share_line(result.measured)
    assert "take at least 15% of the measured time" in line
    assert "1 h2d from pinned memory, launched by aten::copy_" in line


def memcpy(name, start, dur, correlation, *, nbytes=1e6):
    return Device(start, dur, 1, correlation, "gpu_memcpy", name, nbytes)


def test_which_memcpy_is_a_host_copy():
    assert host_copy_of(memcpy("Memcpy DtoH (Device -> Pageable)", 0, 1, 1)) == (
        Direction.D2H,
        False,
    )
    assert host_copy_of(memcpy("Memcpy HtoD (Pinned -> Device)", 0, 1, 1)) == (
        Direction.H2D,
        True,
    )
    for name in ("Memcpy DtoD (Device -> Device)", "Memcpy PtoP (Device -> Device)", "Memcpy"):
        assert host_copy_of(memcpy(name, 0, 1, 1)) is None
    kernel = Device(0, 1, 1, 1, "kernel")
    assert host_copy_of(kernel) is None


def test_copies_a_chip_cannot_price_say_why():
    # an A100 in tests/engine/chips.py has no host link figure; a memcpy without bytes is
    # counted and not priced
    pageable = memcpy("Memcpy DtoH (Device -> Pageable)", 0, 100, 1)
    found = host_copies([(pageable, "aten::_to_copy")], A100)
    assert found is not None and "no host link figure" in found.unpriced
    assert found.expected_time == 0 and found.share_line(1.0) == ""
    unknown = memcpy("Memcpy HtoD (Pageable -> Device)", 0, 100, 1, nbytes=None)
    found = host_copies([(unknown, None)], H100_PCIE5)
    assert found is not None and found.unpriced == "a memcpy event gives no bytes"
    assert found.groups[0].measured == pytest.approx(100 * US)
    # pageable d2h: 1 MB at 64 GB/s = 15.625 us ideal; at 0.75 x 0.478 = 0.359 of the link,
    # 43.5 us
    found = host_copies([(pageable, "aten::_to_copy")], H100_PCIE5)
    assert found is not None and found.unpriced == ""
    assert found.expected_time == pytest.approx(15.625 * US)
    assert found.groups[0].realistic_time == pytest.approx(15.625 * US / (0.75 * 5.5 / 11.5))


def test_a_real_h100_trace_is_host_bound():
    # gpu_linear.json (tests/traces/record.py): ten Linear(4096, 4096) calls on a 64-row
    # input, each a ~85 us GEMM, recorded with the profiler on: the host, dispatching each
    # call, falls behind, and its waits are the largest part over its limit.
    events = json.loads((TRACES / "gpu_linear.json").read_text())["traceEvents"]
    result = analyse(collect(events), H100)
    found = result.breakdown
    assert found is not None and found.timeline.steps == 0
    assert sum(p.time for p in found.parts) == pytest.approx(found.timeline.window)
    assert found.first is not None and found.first.name == "host_waits"
    assert result.copies is None and found.timeline.copies == 0


def test_a_replayed_cuda_graphs_kernels_wait_a_graph_nodes_gap():
    # cudaGraphLaunch at 0 queues two kernels (the same correlation), run [10, 20) and
    # [21, 30): idle [0, 10) and [20, 21) are launch gaps (10 + 1 = 11 us), both before a
    # graph's kernels: their limit 2 x 0.58 = 1.16 us, not 2 x 2.31.
    def kernel(ts, dur):
        return {"cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"correlation": 5}}

    launch = {"cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 0, "dur": 4}
    op = {"cat": "cpu_op", "name": "aten::cos", "ts": 0, "dur": 30}
    op["args"] = {"Input Dims": [[64]], "Input type": ["float"]}
    launch["args"] = {"correlation": 5}
    result = analyse(collect([op, launch, kernel(10, 10), kernel(21, 9)]), H100)
    found = result.breakdown
    assert found is not None
    line = found.timeline
    assert (line.gaps, line.graph_gaps) == (0, 2)
    assert line.launch_gaps == pytest.approx(11 * US)
    [gaps] = [p for p in found.parts if p.name == "launch_gaps"]
    assert gaps.limit == pytest.approx(1.16 * US)
    assert gaps.limit_words == "2 graph nodes, 580 ns each"
    # the kernels (19 us) were launched by no operator: unmapped, their limit as measured
    assert found.unmapped == pytest.approx(19 * US) and found.mapped == 0


def test_a_trace_without_kernel_events_has_no_breakdown():
    trace = collect(
        [
            {
                "cat": "cpu_op",
                "name": "aten::cos",
                "ts": 0,
                "dur": 5,
                "args": {"Input Dims": [[64]], "Input type": ["float"]},
            }
        ]
    )
    result = analyse(trace, A100)
    assert result.breakdown is None and result.copies is None


times = st.floats(0, 1000, allow_nan=False)


@st.composite
def events(draw):
    """Device events on any streams, each maybe queued by a host call, and synchronisations."""
    count = draw(st.integers(0, 12))
    device, calls, copies = [], [], []
    for i in range(count):
        start, dur = draw(st.one_of(st.none(), times)), draw(st.floats(0, 200))  # None: no ts
        device.append(Device(start, dur, None, i, "kernel"))
        copies.append(draw(st.booleans()))
        if draw(st.booleans()):
            calls.append(Call(draw(times), draw(st.floats(0, 50)), i, False))
    for _ in range(draw(st.integers(0, 4))):
        calls.append(Call(draw(times), draw(st.floats(0, 100)), None, True))
    lo = draw(times)
    return device, copies, calls, (lo, lo + draw(st.floats(0, 1500)))


@given(events())
def test_the_parts_add_up_to_the_window_and_none_is_negative(drawn):
    device, copies, calls, window = drawn
    line = timeline(device, copies, calls, window, 0)
    parts = (
        line.kernels,
        line.copies,
        line.launch_gaps,
        line.host_waits,
        line.synchronisation,
        line.other,
    )
    assert all(p >= -1e-12 for p in parts)
    assert sum(parts) == pytest.approx(line.window, abs=1e-12)
    assert line.window == pytest.approx((window[1] - window[0]) * US)
