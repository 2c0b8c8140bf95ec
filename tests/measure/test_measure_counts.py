"""What `measure` counts from a function's aten operators, run for real by PyTorch on the CPU.
Every expected figure is derived by hand in the test's comment (fp32: 4 bytes an element)."""

import math

import pytest
import torch
import torch.nn.functional as F

from app.engine import Dtype
from app.engine.ops import Op
from app.measure import UnsupportedDtype, engine_dtype, measure
from app.measure.op_counts import count, engine_op
from app.measure.torch_dtypes import counted_as
from app.measure.torch_trace import record


def _counts(fn, *args):
    return count(*record(fn, args))


def test_a_matmul():
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    counts = _counts(torch.mm, a, b)
    # 2 m n k = 2 * 64 * 32 * 16 = 65536 FLOPs, by PyTorch's FlopCounterMode and the engine;
    # bytes (m k + k n + m n) * 4 = (2048 + 512 + 1024) * 4 = 14336, fused or not
    assert counts.flops == counts.engine_flops == 65536
    assert counts.unfused_bytes == counts.fused_bytes == 14336
    assert counts.launches == 1 and counts.views == 0
    assert [op.name for op in counts.ops] == ["aten::mm"]


def test_cos_cos_is_two_kernels_unfused_and_one_read_and_write_fused():
    n = 1000
    x = torch.randn(n)
    counts = _counts(lambda x: x.cos().cos(), x)
    # unfused: each cos reads and writes N s = 4 N s = 16000 bytes; fused: x read, the result
    # written: 2 N s = 8000; 1 FLOP an element each (the engine; PyTorch counts none)
    assert counts.unfused_bytes == 4 * n * 4
    assert counts.fused_bytes == 2 * n * 4
    assert counts.launches == 2
    assert counts.flops == 0 and counts.engine_flops == 2 * n
    # the second cos reads the first one's output: the same id, so that fusion matches them
    first, second = counts.workload()["ops"]
    assert first["outputs"][0]["id"] == second["inputs"][0]["id"]
    assert first["inputs"][0]["id"] != second["outputs"][0]["id"]


def test_a_softmax():
    rows, cols = 8, 100
    counts = _counts(lambda x: torch.softmax(x, dim=-1), torch.randn(rows, cols))
    # one aten::_softmax: 5 FLOPs an element (max, subtract, exp, sum, divide) = 4000; the
    # input read and the output written: 2 * 800 * 4 = 6400 bytes
    assert [op.name for op in counts.ops] == ["aten::_softmax"]
    assert counts.engine_flops == 5 * rows * cols
    assert counts.unfused_bytes == counts.fused_bytes == 2 * rows * cols * 4


def test_an_mlp_block():
    b, d, h = 4, 8, 16
    x, w1, b1 = torch.randn(b, d), torch.randn(h, d), torch.randn(h)
    w2, b2 = torch.randn(d, h), torch.randn(d)

    def mlp(x):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    counts = _counts(mlp, x)
    # t(w1), addmm(b1, x, w1^T), gelu, t(w2), addmm(b2, g, w2^T): two views, three kernels
    names = [op.name for op in counts.ops]
    assert names == ["aten::t", "aten::addmm", "aten::gelu", "aten::t", "aten::addmm"]
    assert counts.launches == 3 and counts.views == 2
    # FLOPs: 2 b d h per linear = 2 * 4 * 8 * 16 * 2 = 2048 (PyTorch); the engine adds gelu's
    # 5 an element over b h = 64: 320
    assert counts.flops == 2 * (2 * b * d * h) == 2048
    assert counts.engine_flops == 2048 + 5 * b * h
    # unfused, in elements: addmm1 h + b d + d h + b h = 240, gelu 2 b h = 128, addmm2
    # d + b h + h d + b d = 232: 600 * 4 = 2400 bytes
    assert counts.unfused_bytes == 600 * 4
    # fused: b1, x, w1^T, b2, w2^T read and the output written: 16 + 32 + 128 + 8 + 128 + 32
    # = 344 elements; the hidden activations stay on chip
    assert counts.fused_bytes == 344 * 4


def test_item_and_a_copy_between_devices_are_reported_with_their_op_index():
    def step(x):
        y = x * 2
        scale = y.sum().item()  # a synchronisation
        return (y * scale).to("meta")  # a copy to another device

    counts = _counts(step, torch.randn(100))
    # mul (0), sum (1), _local_scalar_dense (2), mul (3), _to_copy (4)
    assert [op.name for op in counts.ops][2] == "aten::_local_scalar_dense"
    (sync,) = counts.syncs
    assert sync.index == 2 and sync.what == "sync" and sync.bytes == 4
    assert sync.where is not None and "test_measure_counts.py" in sync.where
    assert "in step" in sync.where
    (copy,) = counts.copies
    assert (copy.index, copy.what, copy.bytes) == (4, "cpu -> meta", 400)
    assert counts.launches == 3  # mul, sum, mul: neither the sync nor the copy


def test_a_sync_in_a_loop_is_said_to_be_in_a_loop():
    def loop(x):
        return [x[i].item() for i in range(3)]

    result = measure(loop, torch.randn(3), repeats=3, warmup=1, max_time_s=0.2)
    assert len(result.counts.syncs) == 3
    assert any("3 times from that line: in a loop" in line for line in result.advice)
    assert result.answer is None and result.verdict is None


def test_ops_the_engine_does_not_know_are_sent_with_their_flops_and_bytes():
    a, b = torch.randn(10, 4), torch.randn(10, 4)
    counts = _counts(lambda a, b: torch.cat([a, b]), a, b)
    (op,) = counts.ops
    # aten::cat: no engine formula; its bytes are its tensors': (40 + 40 + 80) * 4 = 640
    assert op.name == "aten::cat" and op.bytes == 640 and op.flops == 0
    assert counts.opaque == (0,)


def test_a_known_op_the_engine_cannot_take_is_made_opaque():
    deep = torch.ones((1,) * 9 + (2,))  # 10 dimensions: the service takes at most 8
    counts = _counts(torch.cos, deep)
    (op,) = counts.ops
    assert op.name == "aten::cos[opaque]"  # not the engine's cos, which needs its tensors
    assert op.bytes == 2 * 2 * 4 and op.inputs == op.outputs == ()


def test_integer_and_bool_tensors_are_counted_by_their_width():
    x = torch.randn(6)
    counts = _counts(lambda x: (x > 0, x.argmax()), x)
    gt, argmax = counts.ops
    assert gt.outputs[0].dtype is Dtype.INT8  # bool, one byte
    # argmax: an int64 scalar, counted as two fp32 words
    assert argmax.outputs[0].dtype is Dtype.FP32 and argmax.outputs[0].shape == (2,)
    assert argmax.outputs[0].bytes == 8


@pytest.mark.parametrize(
    ("torch_dtype", "dtype"),
    [
        (torch.float32, Dtype.FP32),
        (torch.bfloat16, Dtype.BF16),
        (torch.float16, Dtype.FP16),
        (torch.float8_e4m3fn, Dtype.FP8),
        (torch.float8_e5m2, Dtype.FP8),
        (torch.int8, Dtype.INT8),
        (torch.float64, Dtype.FP64),
    ],
)
def test_torch_dtypes_map_onto_the_engines(torch_dtype, dtype):
    assert engine_dtype(torch_dtype) is dtype


def test_other_dtypes_are_an_error_that_names_them():
    with pytest.raises(UnsupportedDtype, match="int64"):
        engine_dtype(torch.int64)
    with pytest.raises(UnsupportedDtype, match="quint8"):
        counted_as(torch.quint8, (4,))
    assert counted_as(torch.int16, (4,)) == (Dtype.BF16, (4,))
    assert counted_as(torch.int32, (4,)) == (Dtype.FP32, (4,))


def test_bf16_work_is_counted_in_bf16():
    x = torch.randn(16, 16, dtype=torch.bfloat16)
    counts = _counts(torch.mm, x, x)
    assert counts.ops[0].inputs[0].dtype is Dtype.BF16
    # 3 * 256 elements * 2 bytes
    assert counts.unfused_bytes == 3 * 256 * 2
    assert math.isclose(counts.flops, 2 * 16**3)


def test_a_recorded_op_becomes_the_engines_op():
    counts = _counts(torch.cos, torch.randn(3))
    op, opaque = engine_op(counts.recorded[0])
    assert isinstance(op, Op) and not opaque


@pytest.mark.parametrize("causal", [False, True])
def test_attention_counts_its_score_pairs_and_a_causal_one_half(causal):
    b, h, length, d = 2, 4, 64, 16
    q = torch.randn(b, h, length, d)
    counts = _counts(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), q, q, q
    )
    # one fused attention operator (on the CPU, _scaled_dot_product_flash_attention_for_cpu):
    # 4 B H Lq Lk d = 4 * 2 * 4 * 64 * 64 * 16 = 2,097,152 FLOPs (Q K^T and P V, 2 each per
    # pair and dimension); causal, half the pairs: L^2 / 2, so 1,048,576. On an H200 PyTorch
    # counted every pair of a causal one and the run looked faster than the roofline.
    [op] = counts.ops
    assert op.causal is causal and counts.workload()["ops"][0].get("causal", False) is causal
    assert counts.engine_flops == (1_048_576 if causal else 2_097_152)


def test_is_causal_is_read_from_the_operators_schema_keyword_or_default():
    from app.measure.torch_trace import _argument  # noqa: PLC0415

    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    q = torch.ones(1)
    assert _argument(flash, (q, q, q, 0.0, True), {}, "is_causal") is True  # positional
    assert _argument(flash, (q, q, q), {"is_causal": True}, "is_causal") is True  # keyword
    assert _argument(flash, (q, q, q), {}, "is_causal") is False  # the schema's default
    assert _argument(torch.ops.aten.mm.default, (q, q), {}, "is_causal") is None  # none


def test_a_pytorch_flop_formula_that_fails_leaves_the_count_to_the_engine(monkeypatch):
    # On an H200, PyTorch 2.11's attention formula asserted that the key had as many heads as
    # the query (a grouped-query attention has fewer) and the whole measurement died. A
    # formula failing now counts nothing for PyTorch; the engine counts the operator itself.
    from torch.utils.flop_counter import flop_registry  # noqa: PLC0415

    def fails(*args, **kwargs):
        raise AssertionError("sdpa_flop_count: query/key/value shapes are incompatible")

    monkeypatch.setitem(flop_registry, torch.ops.aten.mm, fails)
    counts = _counts(torch.mm, torch.randn(64, 32), torch.randn(32, 16))
    assert counts.flops == 0 and counts.engine_flops == 2 * 64 * 32 * 16


def test_a_grouped_query_attention_counts_the_querys_heads():
    # 8 query heads over 2 key-value heads: 4 B Hq L^2 d = 4 * 1 * 8 * 32 * 32 * 16 = 524,288
    q, kv = torch.randn(1, 8, 32, 16), torch.randn(1, 2, 32, 16)
    counts = _counts(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, kv, kv
    )
    assert counts.engine_flops == 524_288


def test_a_compiler_fuses_each_run_of_connected_pointwise_operators():
    x = torch.randn(1000)
    # cos then cos: one kernel, and the workload judged as compiled says so
    chain = _counts(lambda x: x.cos().cos(), x)
    assert chain.compiled_groups() == [[0, 1]]
    assert chain.workload(compiled=True)["groups"] == [[0, 1]]
    assert "groups" not in chain.workload()
    # a multiply, an add and the sum of the result, through a view: one kernel
    assert _counts(lambda x: (x * 2 + 1).view(10, 100).sum(), x).compiled_groups() == [[0, 1, 3]]
    # two chains that share no tensor: two kernels, none of two operators
    assert _counts(lambda x, y: (x.cos(), y.sin()), x, x.clone()).compiled_groups() == []


def test_a_compiler_leaves_matrix_products_to_their_library():
    # Linear, GELU, Linear: addmm (a library GEMM), then GELU alone between two GEMMs
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    counts = _counts(mlp, torch.randn(4, 8))
    names = [op.name.split(".")[0] for op in counts.ops]
    assert "aten::gelu" in names and counts.compiled_groups() == []
    # a residual add and an RMSNorm after a product: fused together, the product alone
    w = torch.randn(8, 8)
    counts = _counts(lambda x: F.rms_norm(x @ w + x, (8,)), torch.randn(4, 8))
    kinds = [op.name for op in counts.ops]
    [group] = counts.compiled_groups()
    assert kinds[0] == "aten::mm" and 0 not in group and len(group) >= 2
