"""2:4 sparse linear layers of a transformer (docs/formulas.md#structured-sparsity): worked
Llama 3.1 8B examples on an H100, and the invariants of a step whose linear layers are sparse
and whose attention is not."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Dtype, InvalidInput, Unsupported
from app.engine.breakdown import shares
from app.engine.hardware import SPARSE_SPEEDUP
from app.engine.roofline import place
from app.engine.steps import place_pass, place_steps
from app.engine.transformer import Phase, Precision, decode_terms, work_of
from app.engine.workload import TransformerSpec, estimate, memory_needed
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B, MIXTRAL

# the H100 SXM5's 2:4 sparse bf16 rate: 1,978.8 TFLOP/s, twice the dense 989.4
SPARSE_H100 = replace(H100, sparse_peaks={Dtype.BF16: 1978.8e12})
SPARSE = Precision(sparse=True)

# Llama 3.1 8B, per layer: qkv 4096 x (4096 + 2 x 1024) = 25,165,824; output 4096^2 =
# 16,777,216; gate and up 2 x 4096 x 14336 = 117,440,512; down 58,720,256: 218,103,808, so
# 6,979,321,856 over 32 layers (the sparse ones). Dense: lm_head 128,256 x 4096 = 525,336,576,
# norms 32 x 2 x 4096 + 4096 = 266,240, the input embedding (looked up, not streamed) 525,336,576.
BLOCKS, LM_HEAD, NORMS = 6_979_321_856, 525_336_576, 266_240
# bf16 weights compressed 2:4: half the values, 2 bytes and a 2-bit index each: 1.125 bytes
COMPRESSED = 1.125


def test_llama_8b_decode_on_an_h100_streams_the_compressed_weights():
    # batch 1 after 2048 tokens. Weights streamed: 6,979,321,856 x 1.125 = 7,851,737,088
    # (dense 13,958,643,712) + lm_head and norms in bf16 2 x 525,602,816 = 1,051,205,632;
    # KV: read 2048 x 131,072 (2 x 32 layers x 8 heads x 128 x 2 bytes per token) =
    # 268,435,456, written 131,072. Total 9,171,509,248 bytes (dense 15,278,415,872):
    # 2.7378 ms at 3.35 TB/s against the dense 4.5607 ms, 1.67x: memory-bound either way
    sparse = place(work_of(decode_terms(LLAMA_8B, 1, 2048, SPARSE), SPARSE), SPARSE_H100)
    dense = place(work_of(decode_terms(LLAMA_8B, 1, 2048, Precision()), Precision()), SPARSE_H100)
    assert BLOCKS * COMPRESSED + 2 * (LM_HEAD + NORMS) == 8_902_942_720
    assert sparse.bytes == 9_171_509_248
    assert dense.bytes == 15_278_415_872
    assert sparse.expected_time == pytest.approx(9_171_509_248 / 3.35e12)
    assert sparse.expected_time == pytest.approx(2.7378e-3, rel=1e-4)
    assert dense.expected_time == pytest.approx(4.5607e-3, rel=1e-4)
    # FLOPs unchanged (dense-equivalent): the linear layers' 2 x 7,504,658,432 =
    # 15,009,316,864 at 1,978.8 TFLOP/s = 7.5851 us (lm_head dense: 2 x 525,336,576 =
    # 1,050,673,152 at 989.4: 1.0619 us), attention's 1,073,741,824 at 989.4 = 1.0852 us
    assert sparse.flops == dense.flops == 16_083_058_688
    blocks = 2 * BLOCKS
    assert sparse.compute_time == pytest.approx(
        blocks / 1978.8e12 + (2 * LM_HEAD + 1_073_741_824) / 989.4e12
    )
    assert sparse.peak.flops_per_s == pytest.approx(sparse.flops / sparse.compute_time)


def test_llama_8b_fits_in_the_compressed_weights():
    # resident weights: 7,851,737,088 compressed + lm_head, embedding and norms in bf16
    # 2 x (2 x 525,336,576 + 266,240) = 2,101,878,784: 9,953,615,872 bytes (dense 16,060,522,496)
    spec = TransformerSpec(precision=SPARSE)
    memory = memory_needed(LLAMA_8B, SPARSE_H100, spec, 1)
    dense = memory_needed(LLAMA_8B, SPARSE_H100, TransformerSpec(), 1)
    assert memory.weights == 9_953_615_872
    assert dense.weights == 16_060_522_496
    assert memory.kv_cache == dense.kv_cache


def test_a_prefill_runs_its_linear_layers_at_the_sparse_rate_and_attention_dense():
    # prefill of 2048 tokens: compute-bound. qkv: 2 x 25,165,824 x 2048 x 32 = 3.2985e12 FLOPs
    # at 1,978.8 TFLOP/s = 1.6669 ms; attention 2 x 32 heads x 256 x 2048^2 / 2 x 32 layers =
    # 1.0995e12 at 989.4 = 1.1113 ms: each breakdown row at its own rate
    spec = TransformerSpec(phase=Phase.PREFILL, precision=SPARSE)
    result = estimate(LLAMA_8B, SPARSE_H100, spec)
    rows = {row.name: row for row in shares(result.terms, result.roofline, SPARSE_H100)}
    assert rows["qkv_projection"].time == pytest.approx(3.2985e12 / 1978.8e12, rel=1e-4)
    assert rows["attention"].time == pytest.approx(1.0995e12 / 989.4e12, rel=1e-4)
    assert rows["lm_head"].time == pytest.approx(2 * LM_HEAD * 2048 / 989.4e12)
    # the rows' compute add up to the step's: its peak is their blend
    compute = sum(
        r.flops / (1978.8e12 if t.sparse else 989.4e12)
        for r, t in zip(rows.values(), result.terms, strict=True)
    )
    assert result.roofline.compute_time == pytest.approx(compute)
    # sustained: the sparse share x of the compute time at 1.21 / 2 of the dense share f:
    # f / (1 - x + 2 x / 1.21)
    dense = estimate(LLAMA_8B, SPARSE_H100, replace(spec, precision=Precision()))
    x = 2 * BLOCKS * 2048 / 1978.8e12 / result.roofline.compute_time
    assert result.roofline.sustained_compute == pytest.approx(
        0.803 / (1 - x + 2 * x / SPARSE_SPEEDUP)
    )
    # the ideal under 2x faster (attention and lm_head stay dense), the sustained far less
    ideal_speedup = dense.roofline.expected_time / result.roofline.expected_time
    sustained_speedup = dense.roofline.sustained_time / result.roofline.sustained_time
    assert 1 < sustained_speedup < SPARSE_SPEEDUP < ideal_speedup < 2


def test_generate_sums_its_decode_steps_at_each_steps_own_blend():
    # the closed form over a growing context, whose attention (dense) grows while the linear
    # layers (sparse) do not, equals the steps placed one by one, each its kernels in turn
    def step(context: int):
        return decode_terms(LLAMA_8B, 64, context, SPARSE)

    summed = place_steps(step, SPARSE, 1000, 1099, SPARSE_H100)
    placed = [place_pass(step(c), SPARSE, SPARSE_H100, 0.0) for c in range(1000, 1100)]
    assert summed.expected_time == pytest.approx(sum(r.expected_time for r in placed))
    assert summed.realistic_time == pytest.approx(sum(r.realistic_time for r in placed))
    assert summed.compute_time == pytest.approx(sum(r.compute_time for r in placed))
    assert summed.peak.flops_per_s == pytest.approx(summed.flops / summed.compute_time)
    spec = TransformerSpec(phase=Phase.GENERATE, batch=64, seq_len=1000, gen_len=100)
    generate = estimate(LLAMA_8B, SPARSE_H100, replace(spec, precision=SPARSE))
    dense = estimate(LLAMA_8B, SPARSE_H100, spec)
    assert generate.roofline.expected_time < dense.roofline.expected_time


def test_the_experts_of_a_moe_are_sparse_too():
    # Mixtral's experts are linear layers: a decode step streams them compressed
    terms = {t.name: t for t in decode_terms(MIXTRAL, 1, 2048, SPARSE)}
    dense = {t.name: t for t in decode_terms(MIXTRAL, 1, 2048, Precision())}
    assert terms["experts"].sparse and terms["router"].sparse and not terms["lm_head"].sparse
    assert terms["experts"].bytes == pytest.approx(dense["experts"].bytes * COMPRESSED / 2)
    assert terms["lm_head"].bytes == dense["lm_head"].bytes
    assert terms["attention"].bytes == dense["attention"].bytes


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (TransformerSpec(phase=Phase.TRAINING, precision=SPARSE), "for inference"),
        (
            TransformerSpec(precision=Precision(weights=Dtype.INT4, sparse=True)),
            "stored in the compute dtype (bf16)",
        ),
    ],
)
def test_training_and_quantised_weights_are_refused_on_sparsity(spec, words):
    with pytest.raises(InvalidInput) as raised:
        estimate(LLAMA_8B, SPARSE_H100, spec)
    assert raised.value.field == "sparsity"
    assert words in raised.value.message


def test_a_chip_without_the_sparse_rate_is_refused_naming_it():
    with pytest.raises(Unsupported) as raised:
        memory_needed(LLAMA_8B, H100, TransformerSpec(precision=SPARSE), 1)
    assert raised.value.field == "sparsity"
    assert "h100-sxm5-80gb" in raised.value.message


@settings(max_examples=60, deadline=None)
@given(
    phase=st.sampled_from([Phase.PREFILL, Phase.DECODE, Phase.GENERATE]),
    batch=st.integers(1, 4096),
    length=st.integers(1, 32768),
)
def test_sparse_weights_are_faster_but_never_twice(phase, batch, length):
    # every term shrinks by at most 2x (the sparse rate is 2x the dense; compressed weights
    # are 1.125 / 2 of the dense ones, and the rest does not shrink), and something shrinks
    spec = TransformerSpec(phase=phase, batch=batch, seq_len=length, gen_len=8)
    dense = estimate(LLAMA_8B, SPARSE_H100, spec).roofline
    sparse = estimate(LLAMA_8B, SPARSE_H100, replace(spec, precision=SPARSE)).roofline
    assert dense.expected_time / 2 <= sparse.expected_time < dense.expected_time
    assert sparse.flops == dense.flops
    assert sparse.bytes < dense.bytes
