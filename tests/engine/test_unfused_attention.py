"""Attention without a flash kernel (flash_attention=false) in inference: the scores reach
memory in fp32, 16 bytes a score entry, and each layer's attention is three kernels. Every
expected value is derived by hand in the comment beside it."""

from dataclasses import replace

import pytest

from app.engine import Phase, Precision, Software, TransformerSpec, estimate
from app.engine.realism import step_kernels
from app.engine.transformer import decode_terms, prefill_terms
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B

BF16 = Precision()


def _score_bytes(terms):
    """The bytes of the scores' own term, none with a flash kernel."""
    return sum(t.bytes for t in terms if t.name == "attention_scores")


def test_a_prefill_without_flash_writes_and_reads_every_score_in_fp32():
    # Llama 3.1 8B (L = 32, H = 32), one prompt of P = 8192: causal score entries per head and
    # layer 8192^2 / 2 = 33,554,432; all heads and layers 32 x 32 x 33,554,432 = 3.436e10;
    # four fp32 accesses each: 16 B x 3.436e10 = 549,755,813,888 B (549.8 GB)
    fused = prefill_terms(LLAMA_8B, 1, 8192, BF16)
    unfused = prefill_terms(LLAMA_8B, 1, 8192, BF16, flash=False)
    assert _score_bytes(fused) == 0
    assert [t.name for t in unfused if t.name not in {f.name for f in fused}] == [
        "attention_scores"
    ]
    # the fused kernel is flash's, at its pace (`sustained_times`); the unfused one's GEMMs are not
    assert [t.flash for t in fused if t.name == "attention"] == [True]
    assert [t.flash for t in unfused if t.name == "attention"] == [False]
    assert _score_bytes(unfused) == 16 * 32 * 32 * 8192**2 / 2 == 549_755_813_888
    # over tp = 4 chips, each computes 8 of the 32 heads: a quarter of the scores
    split = prefill_terms(LLAMA_8B, 1, 8192, BF16, 4, flash=False)
    assert _score_bytes(split) == pytest.approx(549_755_813_888 / 4)


def test_a_decode_step_without_flash_writes_and_reads_one_score_per_cached_token():
    # batch 8 at context 1024: 32 layers x 8 x 1024 cached tokens x 32 heads = 8,388,608
    # scores, 16 B each: 134,217,728 B, next to the 8 x 1024 x 131,072 B = 1,073,741,824 B of
    # KV read (an eighth more)
    unfused = decode_terms(LLAMA_8B, 8, 1024, BF16, flash=False)
    assert _score_bytes(unfused) == 16 * 32 * 8 * 1024 * 32 == 134_217_728
    kv = next(t for t in unfused if t.name == "attention").bytes  # the KV cache's alone
    assert (
        kv == next(t for t in decode_terms(LLAMA_8B, 8, 1024, BF16) if t.name == "attention").bytes
    )


def test_the_flops_are_the_same_and_each_layer_launches_two_more_kernels():
    spec = TransformerSpec(phase=Phase.PREFILL, batch=1, seq_len=8192)
    fused = estimate(LLAMA_8B, H100, spec)
    unfused = estimate(LLAMA_8B, H100, replace(spec, flash_attention=False))
    assert unfused.roofline.flops == fused.roofline.flops
    assert unfused.roofline.bytes - fused.roofline.bytes == pytest.approx(549_755_813_888)
    # fused stacks: 9 kernels a layer and 4 outside: 32 x 9 + 4 = 292; unfused 32 x 11 + 4
    assert step_kernels(LLAMA_8B, Software.TYPICAL) == 292
    assert step_kernels(LLAMA_8B, Software.TYPICAL, flash=False) == 356
    # on an H100 the 549.8 GB take 549.8 / 3350 = 0.164 s at the bandwidth, next to the
    # prompt's 1.23e14 + 1.76e13 FLOPs / 989.4e12 = 0.142 s: the unfused prompt is slower
    assert unfused.roofline.expected_time > fused.roofline.expected_time
