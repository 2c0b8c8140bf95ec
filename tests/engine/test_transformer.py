"""Worked transformer examples (arithmetic in the comments) and phase invariants."""

from dataclasses import replace

import pytest

from app.engine import (
    MLA,
    MLP,
    Architecture,
    Attention,
    Bound,
    Dtype,
    InvalidInput,
    Phase,
    Precision,
    TransformerSpec,
    estimate,
    kv_bytes_per_token,
    param_counts,
)
from app.engine.breakdown import totals
from app.engine.transformer import decode_terms, experts_touched, prefill_terms, work_of
from app.engine.units import dtype_bytes
from tests.engine.chips import A100, H100
from tests.engine.models import BERT, LLAMA_8B, MISTRAL_7B, MIXTRAL

BF16 = Precision()


def test_llama_31_8b_parameter_counts():
    # embedding 128256 * 4096 = 525,336,576 (and the same again for the untied lm_head)
    # per layer: q 4096^2 + k,v 2 * 4096 * 1024 + o 4096^2 = 41,943,040; MLP 3 * 4096 * 14336
    # = 176,160,768; norms 2 * 4096. 32 layers + final norm: 8,030,261,248 (HF: 8.03B)
    counts = param_counts(LLAMA_8B)
    assert counts.total == 8_030_261_248
    assert counts.matmul == 32 * (41_943_040 + 176_160_768) + 525_336_576
    assert kv_bytes_per_token(LLAMA_8B, Dtype.BF16) == 2 * 32 * 8 * 128 * 2  # 131,072


def test_llama_31_8b_decode_at_batch_1_on_h100_is_memory_bound_at_about_4_5_ms():
    # context C = 1024, bf16.
    # FLOPs = 2 N_mm + 4 L C H dh = 2 * 7,504,658,432 + 4 * 32 * 1024 * 32 * 128
    #       = 15,009,316,864 + 536,870,912 = 15,546,187,776
    # bytes = weights streamed (all but the untied input embedding): 7,504,924,672 * 2
    #       = 15,009,849,344; + KV read 1024 * 131,072 = 134,217,728; + KV written 131,072
    #       = 15,144,198,144
    # memory time = 15.144e9 / 3.35e12 = 4.5206 ms; compute = 1.5546e10 / 989.4e12 = 15.7 us
    result = estimate(LLAMA_8B, H100, TransformerSpec(phase=Phase.DECODE, batch=1, seq_len=1024))
    roof = result.roofline
    assert roof.flops == 15_546_187_776
    assert roof.bytes == 15_144_198_144
    assert roof.bound is Bound.MEMORY
    assert roof.memory_time == pytest.approx(4.5206e-3, rel=1e-4)
    assert roof.compute_time == pytest.approx(15.71e-6, rel=1e-3)
    assert result.tokens_per_s == pytest.approx(221.2, rel=1e-3)
    assert result.time_per_output_token == roof.expected_time


def test_prefill_counts_causal_attention_as_half_the_square():
    # B=1, P=2048: FLOPs = 2 N_mm P + 2 L P^2 H dh
    #   = 2 * 7,504,658,432 * 2048 + 2 * 32 * 2048^2 * 32 * 128 = 3.0738e13 + 1.0995e12
    work = work_of(prefill_terms(LLAMA_8B, 1, 2048, BF16), BF16)
    assert work.flops == 2 * 7_504_658_432 * 2048 + 2 * 32 * 2048**2 * 32 * 128
    # 3.1838e13 FLOPs / 312e12 = 102.0 ms on an A100: compute-bound
    result = estimate(LLAMA_8B, A100, TransformerSpec(phase=Phase.PREFILL, seq_len=2048))
    assert result.roofline.bound is Bound.COMPUTE
    assert result.time_to_first_token == pytest.approx(102.05e-3, rel=1e-3)


def test_generate_sums_prefill_and_decode_steps_in_closed_form():
    spec = TransformerSpec(phase=Phase.GENERATE, batch=4, seq_len=500, gen_len=37)
    result = estimate(LLAMA_8B, A100, spec)
    first = estimate(LLAMA_8B, A100, TransformerSpec(phase=Phase.PREFILL, batch=4, seq_len=500))
    steps = [
        estimate(LLAMA_8B, A100, TransformerSpec(phase=Phase.DECODE, batch=4, seq_len=c))
        for c in range(500, 537)
    ]
    brute = first.roofline.expected_time + sum(s.roofline.expected_time for s in steps)
    assert result.roofline.expected_time == pytest.approx(brute, rel=1e-12)
    assert result.roofline.flops == pytest.approx(
        first.roofline.flops + sum(s.roofline.flops for s in steps), rel=1e-12
    )
    assert result.time_to_first_token == first.roofline.expected_time
    assert result.tokens_per_s == pytest.approx(4 * 37 / brute)


def _generate_vs_steps(arch, batch, start, steps):
    spec = TransformerSpec(phase=Phase.GENERATE, batch=batch, seq_len=start, gen_len=steps)
    got = estimate(arch, A100, spec).roofline
    prefill_time = estimate(
        arch, A100, TransformerSpec(phase=Phase.PREFILL, batch=batch, seq_len=start)
    ).roofline.expected_time
    step_roofs = [
        estimate(arch, A100, TransformerSpec(phase=Phase.DECODE, batch=batch, seq_len=c)).roofline
        for c in range(start, start + steps)
    ]
    brute = prefill_time + sum(s.expected_time for s in step_roofs)
    return got.expected_time, brute, {s.bound for s in step_roofs}


def test_generate_across_the_ridge_matches_the_step_by_step_sum():
    # Mixtral at batch 1024 on an A100: compute 83.7 ms per step vs memory 45.8 ms of weights
    # + C * 1024 * 131,072 B / 2.039e12 B/s = 65.8 us per context token: the steps cross from
    # compute- to memory-bound near C = 576, inside 400..799.
    got, brute, bounds = _generate_vs_steps(MIXTRAL, 1024, 400, 400)
    assert bounds == {Bound.COMPUTE, Bound.MEMORY}
    assert got == pytest.approx(brute, rel=1e-9)


def test_generate_across_a_sliding_window_matches_the_step_by_step_sum():
    # Mistral's 4096-token window bends the KV term at C = 4096, inside 4000..4199
    got, brute, _ = _generate_vs_steps(MISTRAL_7B, 8, 4000, 200)
    assert got == pytest.approx(brute, rel=1e-9)


def test_a_sliding_window_caps_the_kv_cache():
    # Mistral 7B keeps at most 4096 tokens per layer: context 8192 reads what 4096 does
    short = work_of(decode_terms(MISTRAL_7B, 1, 4096, BF16), BF16)
    long = work_of(decode_terms(MISTRAL_7B, 1, 8192, BF16), BF16)
    assert long.bytes == short.bytes and long.flops == short.flops


def _streamed(precision: Precision, context: int = 1) -> float:
    """The bytes one decode step of Llama 3.1 8B at batch 1 moves in `precision`."""
    return totals(decode_terms(LLAMA_8B, 1, context, precision))[1]


def test_weight_only_quantisation_shrinks_the_streamed_weights():
    # w4a16: the blocks' linear weights at 0.5 bytes, embeddings and lm_head stay bf16:
    # 6,979,321,856 * 0.5 + (525,336,576 + 266,240) * 2 = 4,540,866,560 bytes streamed
    kv = 2 * 131_072  # one cached token read, one written
    assert _streamed(Precision(weights=Dtype.INT4)) == pytest.approx(4_540_866_560 + kv)
    fp8_kv = _streamed(Precision(kv=Dtype.FP8), context=1024)
    assert _streamed(BF16, context=1024) - fp8_kv == pytest.approx(1025 * 65_536)


def test_llama_cpp_block_formats_stream_their_scales():
    # GGUF Q4_0 holds 32 4-bit weights and one fp16 scale in 18 bytes (0.5625 a weight), Q8_0
    # 32 int8 weights and one in 34 (1.0625): the blocks' 6,979,321,856 linear weights stream
    # 3,925,868,544 and 7,415,529,472 bytes, embeddings and lm_head in bf16 as for int4:
    # + (525,336,576 + 266,240) * 2 = 1,051,205,632, + the cached token read and written
    kv = 2 * 131_072
    q4 = _streamed(Precision(weights=Dtype.Q4_0))
    assert q4 == pytest.approx(3_925_868_544 + 1_051_205_632 + kv)
    assert _streamed(Precision(weights=Dtype.Q8_0)) == pytest.approx(
        7_415_529_472 + 1_051_205_632 + kv
    )
    # the scales are what a bare int4 (0.5 a weight) leaves out: 0.0625 x 6,979,321,856
    assert q4 - _streamed(Precision(weights=Dtype.INT4)) == pytest.approx(436_207_616)


def test_gptq_and_awq_groups_stream_their_scales_and_zeros():
    # GPTQ's and AWQ's 4-bit weights in groups of 128: per output channel and group, an fp16
    # scale and a 4-bit zero point, (128 x 4 + 16 + 4) / 128 = 4.15625 bits a weight, so the
    # blocks' 6,979,321,856 linear weights stream 6,979,321,856 x 0.51953125 = 3,625,975,808
    # bytes, 136,314,880 (2.5 bytes a group) more than bare int4's 3,489,660,928
    assert dtype_bytes(Dtype.INT4_G128) == 0.51953125
    kv = 2 * 131_072
    g128 = _streamed(Precision(weights=Dtype.INT4_G128))
    assert g128 == pytest.approx(3_625_975_808 + 1_051_205_632 + kv)
    assert g128 - _streamed(Precision(weights=Dtype.INT4)) == pytest.approx(136_314_880)


def test_gpt_fasts_int4_groups_stream_a_bf16_scale_and_zero_per_32():
    # gpt-fast's int4 weights (torch's int4pack): per output channel and group of 32 inputs a
    # bf16 scale and a bf16 zero, (32 x 4 + 16 + 16) / 32 = 5 bits a weight, so the blocks'
    # 6,979,321,856 linear weights stream 6,979,321,856 x 0.625 = 4,362,076,160 bytes, a
    # quarter (872,415,232) more than bare int4's 3,489,660,928
    assert dtype_bytes(Dtype.INT4_G32) == 0.625
    g32 = _streamed(Precision(weights=Dtype.INT4_G32))
    assert g32 == pytest.approx(4_362_076_160 + 1_051_205_632 + 2 * 131_072)
    assert g32 - _streamed(Precision(weights=Dtype.INT4)) == pytest.approx(872_415_232)


def test_moe_decode_reads_more_experts_as_the_batch_grows():
    # one token touches k=2 of 8 experts; 8 tokens touch 8 (1 - (3/4)^8) = 7.2 on average
    assert experts_touched(8, 2, 1) == pytest.approx(2)
    assert experts_touched(8, 2, 8) == pytest.approx(8 * (1 - 0.75**8))
    one = work_of(decode_terms(MIXTRAL, 1, 1, BF16), BF16).bytes
    many = work_of(decode_terms(MIXTRAL, 64, 1, BF16), BF16).bytes
    counts = param_counts(MIXTRAL)
    assert one < many < 2 * counts.total * 1.01


def test_moe_prefill_prices_its_experts_by_the_tokens_each_computes():
    # Mixtral prefill of 2,048 tokens: 4,096 expert-tokens touch all 8 experts (8 (1 - 0.75^
    # 2048) = 8), M = 512 rows each; the experts' FLOPs are k = 2 experts a token,
    # 2 x 2 x (3 x 4096 x 14336 = 176,160,768) x 32 layers x 2,048 = 46,179,488,366,592, and
    # their bytes all 8 experts once: 32 x 8 x 176,160,768 x 2 B = 90,194,313,216
    experts = next(t for t in prefill_terms(MIXTRAL, 1, 2048, BF16) if t.name == "experts")
    assert experts.flops == pytest.approx(46_179_488_366_592)
    assert experts.bytes == pytest.approx(90_194_313_216)


def test_tensor_parallel_splits_the_work_and_adds_all_reduce_time():
    # tp=2 on H100: per layer 2 all-reduces of B d s = 4096 * 2 bytes; ring moves 2 (1/2) of it
    # per chip: 8192 bytes; 32 layers * 2 * 8192 / 450e9 B/s per direction = 1.165 us
    one = estimate(LLAMA_8B, H100, TransformerSpec(seq_len=1024))
    two = estimate(LLAMA_8B, H100, TransformerSpec(seq_len=1024, tp=2))
    assert two.roofline.flops == pytest.approx(one.roofline.flops / 2)
    assert two.roofline.communication_time == pytest.approx(32 * 2 * 8192 / 450e9)
    assert two.memory.weights == pytest.approx(one.memory.weights / 2)


def test_training_flops_are_six_n_d_plus_the_attention_forwards_its_kernel_runs():
    # B=8, S=2048: 6 N_mm T + 3.5 * (2 L B S^2 H dh) with flash attention (its backward
    # recomputes the scores: 2.5 forwards), 3 * without (the backward reads them)
    spec = TransformerSpec(phase=Phase.TRAINING, batch=8, seq_len=2048)
    result = estimate(LLAMA_8B, H100, spec)
    tokens = 8 * 2048
    attention_forward = 2 * 32 * 8 * 2048**2 * 32 * 128
    linear = 6 * 7_504_658_432 * tokens
    assert result.roofline.flops == linear + 3.5 * attention_forward
    stored = estimate(LLAMA_8B, H100, replace(spec, flash_attention=False))
    assert stored.roofline.flops == linear + 3 * attention_forward
    # recomputation runs the forward once more: 4/3 of the linear layers, 4.5 of attention
    recompute = estimate(LLAMA_8B, H100, replace(spec, recompute=True))
    assert recompute.roofline.flops == pytest.approx(linear * 4 / 3 + 4.5 * attention_forward)
    # the model FLOPs (MFU) count neither: 6 N_mm T + 3 attention forwards
    assert result.training is not None
    assert result.training.model_flops == linear + 3 * attention_forward
    # mixed-precision AdamW: 16 bytes per parameter before activations
    memory = result.memory
    assert memory.weights + memory.gradients + memory.optimizer == 16 * 8_030_261_248


def test_an_encoder_has_no_decode_phase():
    with pytest.raises(InvalidInput) as info:
        estimate(BERT, A100, TransformerSpec(phase=Phase.DECODE))
    assert info.value.field == "phase"
    prefill_bert = estimate(BERT, A100, TransformerSpec(phase=Phase.PREFILL, seq_len=512))
    assert prefill_bert.memory.kv_cache == 0


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (TransformerSpec(batch=0), "batch"),
        (TransformerSpec(seq_len=0), "seq_len"),
        (TransformerSpec(tp=33), "tp"),
        (TransformerSpec(reserve_fraction=1.0), "reserve_fraction"),
        (
            TransformerSpec(phase=Phase.TRAINING, precision=Precision(weights=Dtype.INT4)),
            "weight_dtype",
        ),
    ],
)
def test_bad_specs_name_their_field(spec, field):
    with pytest.raises(InvalidInput) as info:
        estimate(LLAMA_8B, A100, spec)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("tp", "kv_shards"),
    [
        (4, 4),  # fewer chips than KV heads: each chip holds 8 / 4 = 2 KV heads
        (8, 8),  # one KV head per chip
        (16, 8),  # more chips than KV heads: each still holds one whole KV head
        (32, 8),
    ],
)
def test_the_kv_cache_splits_over_at_most_the_kv_heads(tp, kv_shards):
    # Llama 3.1 8B has 8 KV heads (GQA). Decode, batch 1, context 1024, bf16, per chip:
    # weights streamed 15,009,849,344 / tp; KV read 1024 * 131,072 / shards; KV written
    # 131,072 / shards. tp = 16: 938,115,584 + 16,777,216 + 16,384 = 954,909,184 bytes
    # (split 16 ways, the KV would be 8,388,608 + 8,192 and the total 946,512,384).
    spec = TransformerSpec(phase=Phase.DECODE, batch=1, seq_len=1024, tp=tp)
    result = estimate(LLAMA_8B, H100, spec)
    expected = 15_009_849_344 / tp + (1024 * 131_072 + 131_072) / kv_shards
    assert result.roofline.bytes == pytest.approx(expected, rel=1e-15)
    if tp == 16:
        assert result.roofline.bytes == 954_909_184
    # memory: the 1025 tokens held after the step, 1025 * 131,072 = 134,348,800 bytes over
    # the shards: 33,587,200 at tp = 4, 16,793,600 from tp = 8 on
    assert result.memory.kv_cache == pytest.approx(134_348_800 / kv_shards, rel=1e-15)


def test_prefill_writes_the_kv_cache_split_over_at_most_the_kv_heads():
    # Llama 3.1 8B prefill, batch 1, 1024 tokens, tp = 16: weights 15,009,849,344 / 16 =
    # 938,115,584; KV written 1024 * 131,072 / min(16, 8) = 16,777,216; the residual stream
    # (replicated) 2 L T d s = 2 * 32 * 1024 * 4096 * 2 = 536,870,912: 1,491,763,712 in all
    work = work_of(prefill_terms(LLAMA_8B, 1, 1024, BF16, tp=16), BF16)
    assert work.bytes == 1_491_763_712


# A small DeepSeek-style MLA model whose counts are done by hand below: d = 64, L = 2, H = 4,
# no query compression, r_kv = 16, qk = 8 (nope) + 4 (rope), v = 8, gated MLP F = 128,
# V = 100 untied, RMSNorm.
TINY_MLA = Architecture(
    hidden=64,
    layers=2,
    vocab=100,
    attention=Attention(
        heads=4,
        kv_heads=4,
        head_dim=12,
        mla=MLA(
            q_lora_rank=0, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8
        ),
    ),
    mlp=MLP(intermediate=128),
)
# per layer: q 64 * 4 * 12 = 3072; kv down 64 * (16 + 4) = 1280; kv up 16 * 4 * (8 + 8) = 1024;
# o 4 * 8 * 64 = 2048: attention 7424; MLP 3 * 64 * 128 = 24,576; 32,000 per layer, 64,000 for
# 2; lm_head 100 * 64 = 6400: N_mm = 70,400.
# Other: per layer the kv_a norm (16) and two RMSNorms (2 * 64); final norm 64: 352.
TINY_MLA_N_MM = 70_400


def test_tiny_mla_parameter_counts():
    counts = param_counts(TINY_MLA)
    assert counts.matmul_active == TINY_MLA_N_MM
    assert counts.block_linear == 64_000
    assert counts.other == 352
    # the cache holds the latent and the rope key: L (r_kv + d_rope) s = 2 * 20 * 2 = 80 bytes
    assert kv_bytes_per_token(TINY_MLA, Dtype.BF16) == 80


def test_mla_decode_attends_over_the_latent_with_absorbed_projections():
    # decode FLOPs = B (2 N_mm + 2 H (d_qk + d_v) L C), absorbed: d_qk = r_kv + d_rope = 20,
    # d_v = r_kv = 16, so 2 * 4 * 36 = 288 per cached token and layer.
    # B = 1, C = 10: 2 * 70,400 + 288 * 2 * 10 = 140,800 + 5,760 = 146,560
    # (unabsorbed, d_qk + d_v = 12 + 8 = 20, it would be 140,800 + 3,200 = 144,000)
    assert work_of(decode_terms(TINY_MLA, 1, 10, BF16), BF16).flops == 146_560
    # B = 3: three times as much; C = 11: one more token per layer, + 288 * 2 = 576
    assert work_of(decode_terms(TINY_MLA, 3, 10, BF16), BF16).flops == 3 * 146_560
    assert work_of(decode_terms(TINY_MLA, 1, 11, BF16), BF16).flops == 146_560 + 576
    # bytes: weights streamed (64,000 + 352 + 6,400) * 2 = 141,504 (the untied input embedding
    # is only indexed); latent read 10 * 80 = 800; written 80: 142,384
    assert work_of(decode_terms(TINY_MLA, 1, 10, BF16), BF16).bytes == 142_384


def test_mla_prefill_uses_the_full_head_dimensions():
    # prefill does not absorb: 2 H (d_qk + d_v) = 2 * 4 * (12 + 8) = 160 per score and layer;
    # causal, P = 10: 10^2 / 2 = 50 scores per layer: 2 N_mm P + 160 * 2 * 50
    # = 1,408,000 + 16,000 = 1,424,000
    assert work_of(prefill_terms(TINY_MLA, 1, 10, BF16), BF16).flops == 1_424_000


def test_the_mla_latent_cache_is_replicated_under_tensor_parallelism():
    # tp = 2: weights and FLOPs halve, the latent cache does not: 141,504 / 2 + 800 + 80 = 71,632
    work = work_of(decode_terms(TINY_MLA, 1, 10, BF16, tp=2), BF16)
    assert work.bytes == 71_632
    assert work.flops == 146_560 / 2
