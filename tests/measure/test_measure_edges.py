"""The rarer paths of counting and judging: copies between real devices (from recorded
operators: this machine has no GPU), wide operators, allocations, and errors."""

from pathlib import Path

import pytest
import torch

from app.local_probe import LocalProfile
from app.measure import MeasureError, judging, measure
from app.measure.op_counts import MAX_TENSORS, RecordedOp, TensorInfo, count, op_json
from app.probe import Probe


def _t(id_, device="cuda:0", shape=(1000,)):
    return TensorInfo(shape, "float32", device, id_, 4 * shape[0])


def test_copies_between_host_and_device_and_the_sync_of_one_to_the_host():
    ops = [
        # copy_(dst on the GPU, src on the host): 4000 bytes host -> device
        RecordedOp("aten::copy_", (_t("a"), _t("b", "cpu")), (_t("a"),), where="s.py:3"),
        # .cpu(): _to_copy(src on the GPU) -> the host, which waits for the device
        RecordedOp("aten::_to_copy", (_t("a"),), (_t("c", "cpu"),), where="s.py:4"),
        # a copy with no output recorded is no copy between devices
        RecordedOp("aten::_to_copy", (_t("a"), _t("d", "cpu")), ()),
    ]
    counts = count(ops, 0.0)
    assert [(c.index, c.what, c.bytes) for c in counts.copies] == [
        (0, "cpu -> cuda:0", 4000.0),
        (1, "cuda:0 -> cpu", 4000.0),
    ]
    assert [(s.index, s.what) for s in counts.syncs] == [(1, "sync")]


def test_an_operator_with_more_tensors_than_the_service_takes_is_opaque():
    inputs = tuple(_t(f"x{i}", "cpu", (2,)) for i in range(MAX_TENSORS + 1))
    counts = count([RecordedOp("aten::add.Tensor", inputs, (_t("y", "cpu", (2,)),))], 0.0)
    assert counts.ops[0].name == "aten::add[opaque].Tensor"
    assert len(op_json(counts.ops[0])["inputs"]) == MAX_TENSORS
    assert op_json(counts.ops[0])["unit"] == "vector"


def test_allocations_are_left_out():
    counts = count(*_record(lambda x: torch.empty_like(x).copy_(x), torch.ones(4)))
    assert [op.name for op in counts.ops] == ["aten::copy_"]


def _record(fn, *args):
    from app.measure.torch_trace import record  # noqa: PLC0415

    return record(fn, args)


def test_a_dtype_the_local_chip_has_no_peak_for_is_an_error(monkeypatch):
    fp32_only = Probe("cpu", "torch", {}, "2026-01-01", 1e10, {"fp32": 1e10})
    profile = LocalProfile(fp32_only, None, Path("local.json"), cached=True)
    monkeypatch.setattr(judging, "local_ceilings", lambda device, reprobe: profile)
    x = torch.ones(8, dtype=torch.float64)
    with pytest.raises(MeasureError, match="no published fp64 vector peak"):
        measure(torch.cos, x, chip="local", repeats=1, max_time_s=0)


def test_the_services_errors_are_said_in_a_line():
    listed = {"detail": [{"loc": ["body", "chip"], "msg": "Field required"}]}
    assert judging._detail(422, listed) == "the service answered 422: body.chip: Field required"
    named = {"detail": {"message": "unknown chip", "suggestions": []}}
    assert judging._detail(404, named) == "the service answered 404: unknown chip"
    assert judging._detail(502, "Bad Gateway") == "the service answered 502: Bad Gateway"


def test_the_advice_names_the_copy_and_the_ops_counted_by_their_bytes():
    x = torch.ones(1000)
    result = measure(lambda x: torch.cat([x, x]).to("meta"), x, repeats=2, max_time_s=0)
    # cat: 2 * 4000 read + 8000 written; the copy of its 8000 bytes to the meta device
    assert "A copy cpu -> meta of 8 kB at op 1 (" in result.advice[0]
    assert any("1 ops the engine has no formula for (cat)" in line for line in result.advice)
