"""Copy operators between host and device memory in an `ops` sequence: priced on the host
link (docs/formulas.md#copies), never fused."""

from dataclasses import replace

import pytest

from app.engine import Bound, Software
from app.engine.copies import Direction
from app.engine.errors import InvalidInput
from app.engine.fusion import estimate_ops
from app.engine.op_copies import host_copy
from app.engine.ops import Op, Tensor
from tests.engine.chips import A100

A100_PCIE4 = replace(A100, host_bandwidth=64e9)  # PCIe Gen4 x16: 32 GB/s each way
N = 250_000_000  # fp32 elements: 1 GB
HOST = Tensor((N,), device="cpu", id="x_cpu")
GPU = Tensor((N,), device="cuda:0", id="x")


def test_the_devices_give_the_direction():
    assert host_copy(Op("aten::_to_copy", (HOST,), (GPU,))) is Direction.H2D
    assert host_copy(Op("aten::_to_copy", (GPU,), (HOST,))) is Direction.D2H
    # copy_(dst, src): the second input is the source
    assert host_copy(Op("aten::copy_", (HOST, GPU), (HOST,))) is Direction.D2H
    # devices not given, or the same: a copy within memory, as before
    assert host_copy(Op("aten::_to_copy", (Tensor((N,)),), (GPU,))) is None
    assert host_copy(Op("aten::clone", (GPU,), (GPU,))) is None
    assert host_copy(Op("aten::_to_copy", (GPU,), (replace(GPU, device="cuda:0"),))) is None


def test_a_copy_between_two_devices_is_refused_naming_the_op():
    with pytest.raises(InvalidInput) as error:
        host_copy(Op("aten::_to_copy", (GPU,), (replace(GPU, device="cuda:1"),)), "ops.3")
    assert error.value.field == "ops.3"
    assert "cuda:0 to cuda:1" in error.value.message


def test_an_h2d_copy_then_a_cos_on_an_a100():
    # 1 GB h2d, pageable (no non_blocking): ideal 1e9 / 32e9 = 31.25 ms on the link (the
    # device side 1e9 / 2.039e12 = 0.49 ms meanwhile); then cos reads and writes 1 GB:
    # 2e9 / 2.039e12 = 0.981 ms. The whole's ideal: 31.25 + 0.981 = 32.23 ms; the copies'
    # ideal share: 31.25 ms.
    ops = [Op("aten::_to_copy", (HOST,), (GPU,)), Op("aten::cos", (GPU,), (replace(GPU, id="y"),))]
    result = estimate_ops(ops, A100_PCIE4, Software.EAGER)
    copy, cos = result.ops
    assert copy.copy is Direction.H2D and cos.copy is None
    assert copy.work.bytes == 1e9 and copy.work.flops == 0
    assert copy.expected_time == pytest.approx(31.25e-3)
    assert result.copy_time == pytest.approx(31.25e-3)
    assert result.roofline.communication_time == pytest.approx(31.25e-3)
    assert result.roofline.expected_time == pytest.approx(31.25e-3 + 2e9 / A100.memory_bandwidth)
    # pageable: 31.25 ms / (0.75 * 5.5 / 11.5) = 87.1 ms, realistic, beside the cos kernel
    assert result.roofline.realistic_time > 87.1e-3
    assert result.roofline.bound is Bound.COMMUNICATION
    assert result.kernels == 2  # the copy, and the cos: the copy is its own
    # the copy is in every one of the times, fused too: it fuses with nothing
    assert result.fused_time > result.copy_time
    assert result.unfused_time > result.copy_time


def test_non_blocking_is_taken_for_pinned_memory():
    # pinned: 31.25 / 0.75 = 41.7 ms realistic, against pageable's 87.1 ms
    pinned = estimate_ops([Op("aten::_to_copy", (HOST,), (GPU,), non_blocking=True)], A100_PCIE4)
    assert pinned.roofline.realistic_time == pytest.approx(31.25e-3 / 0.75)
    pageable = estimate_ops([Op("aten::_to_copy", (HOST,), (GPU,))], A100_PCIE4)
    assert pageable.roofline.realistic_time == pytest.approx(31.25e-3 / (0.75 * 5.5 / 11.5))


def test_a_copy_fuses_with_nothing():
    ops = [Op("aten::_to_copy", (HOST,), (GPU,)), Op("aten::cos", (GPU,), (GPU,))]
    with pytest.raises(InvalidInput) as error:
        estimate_ops(ops, A100_PCIE4, groups=[[0, 1]])
    assert error.value.field == "groups"
    assert "op 0" in error.value.message


def test_the_advice_gives_the_copies_share_of_the_measured_time():
    # 31.25 ms of the measured 50 ms: 62%
    ops = [Op("aten::_to_copy", (HOST,), (GPU,)), Op("aten::cos", (GPU,), (replace(GPU, id="y"),))]
    advice = estimate_ops(ops, A100_PCIE4).fusion_advice(50e-3)
    assert "copies (ops 0) take at least 62% of the measured time: 31.25 ms" in advice


def test_without_a_host_link_a_copy_to_the_host_is_one_within_memory():
    # unified memory (no host link in the catalog): read and write 1 GB, 2e9 / 2.039e12
    result = estimate_ops([Op("aten::_to_copy", (HOST,), (GPU,))], A100)
    assert result.copy_time == 0
    assert result.roofline.expected_time == pytest.approx(2e9 / A100.memory_bandwidth)
