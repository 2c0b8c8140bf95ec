"""A transformer step by operation: worked terms (arithmetic in the comments), and the terms
adding up to the step's totals on generated workloads."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Bound, Phase, TransformerSpec, estimate, param_counts
from app.engine.breakdown import Term, shares, totals
from app.engine.training import Parallelism, Training
from tests.engine.chips import A100, H100
from tests.engine.models import BERT, GPT2, LLAMA_8B, MISTRAL_7B, MIXTRAL


def _by_name(result):
    return {t.name: t for t in result.terms}


def test_llama_31_8b_decode_by_operation():
    # Llama 3.1 8B, batch 1, 1024 cached tokens, bf16 (2 B per parameter, 2 FLOPs per parameter):
    # qkv: 32 x (4096^2 + 2 x 4096 x 1024) = 805,306,368 parameters: 1,610,612,736 FLOPs and B
    # o: 32 x 4096^2 = 536,870,912: 1,073,741,824; gate+up 32 x 2 x 4096 x 14336 =
    # 3,758,096,384: 7,516,192,768; down 1,879,048,192: 3,758,096,384; lm_head 525,336,576:
    # 1,050,673,152; norms 32 x 2 x 4096 + 4096 = 266,240 weights: 532,480 B;
    # attention 4 x 32 x 1024 x 32 x 128 = 536,870,912 FLOPs, KV read 134,217,728 + written
    # 131,072 B. Together 15,546,187,776 FLOPs and 15,144,198,144 B: the step's totals.
    result = estimate(LLAMA_8B, H100, TransformerSpec(phase=Phase.DECODE, seq_len=1024))
    terms = _by_name(result)
    assert list(terms) == [
        "qkv_projection",
        "attention",
        "output_projection",
        "mlp_gate_up",
        "mlp_down",
        "lm_head",
        "norms_and_biases",
    ]
    assert (terms["qkv_projection"].flops, terms["qkv_projection"].bytes) == (1_610_612_736,) * 2
    assert terms["qkv_projection"].count == 32
    assert terms["output_projection"].flops == 1_073_741_824
    assert terms["mlp_gate_up"].bytes == 7_516_192_768
    assert terms["mlp_down"].flops == 3_758_096_384
    assert terms["lm_head"].bytes == 1_050_673_152
    assert (terms["norms_and_biases"].flops, terms["norms_and_biases"].bytes) == (0, 532_480)
    assert (terms["attention"].flops, terms["attention"].bytes) == (536_870_912, 134_348_800)
    assert totals(result.terms) == (result.roofline.flops, result.roofline.bytes)
    assert totals(result.terms) == (15_546_187_776, 15_144_198_144)
    # every operation is memory-bound at batch 1: shares are shares of the bytes
    placed = {s.name: s for s in shares(result.terms, result.roofline)}
    assert all(s.bound is Bound.MEMORY for s in placed.values())
    assert placed["mlp_gate_up"].share == pytest.approx(7_516_192_768 / 15_144_198_144)
    assert placed["mlp_gate_up"].time == pytest.approx(7_516_192_768 / 3.35e12)
    assert sum(s.share for s in placed.values()) == pytest.approx(1)


def test_prefill_adds_the_residual_stream_and_tensor_parallel_all_reduces():
    # prefill of 2048 tokens: attention writes the KV cache (2048 x 131,072 B); the residual
    # stream is read and written per layer: 32 x 2 x 2048 x 4096 x 2 = 1,073,741,824 B
    spec = TransformerSpec(phase=Phase.PREFILL, seq_len=2048, tp=2)
    result = estimate(LLAMA_8B, H100, spec)
    terms = _by_name(result)
    assert terms["residual_stream"].bytes == 1_073_741_824
    assert terms["attention"].bytes == 2048 * 131_072 / 2  # KV heads split over tp = 2
    allreduce = terms["tp_allreduce"]
    assert (allreduce.count, allreduce.seconds) == (64, result.roofline.communication_time)
    assert totals(result.terms) == pytest.approx(
        (result.roofline.flops, result.roofline.bytes), rel=1e-12
    )
    placed = {s.name: s for s in shares(result.terms, result.roofline)}
    assert placed["tp_allreduce"].bound is Bound.COMMUNICATION
    assert placed["mlp_gate_up"].bound is Bound.COMPUTE


def test_mixture_of_experts_shows_router_and_experts():
    result = estimate(MIXTRAL, A100, TransformerSpec(phase=Phase.DECODE, batch=4))
    terms = _by_name(result)
    c = param_counts(MIXTRAL)
    # 4 tokens x 2 experts each: 2 x 32 layers x 2 x expert parameters x 4 FLOPs
    assert terms["experts"].flops == 2.0 * 32 * 2 * c.routed_expert * 4
    assert terms["router"].flops == 2.0 * 32 * 8 * 4096 * 4
    assert "mlp_down" not in terms  # every layer is a mixture
    assert totals(result.terms) == pytest.approx(
        (result.roofline.flops, result.roofline.bytes), rel=1e-12
    )


def test_a_training_step_by_operation_with_its_collectives_and_bubble():
    parallel = Parallelism(dp=2, pp=2)
    spec = TransformerSpec(
        phase=Phase.TRAINING, batch=16, seq_len=4096, tp=2, training=Training(parallel=parallel)
    )
    result = estimate(LLAMA_8B, H100, spec)
    terms = _by_name(result)
    for name in ("weight_reads", "saved_activations", "optimizer_update", "tp_allreduce"):
        assert name in terms
    assert "pp_send_recv" in terms and "pipeline_bubble" in terms
    assert "norms_and_biases" not in terms  # no FLOPs; training's bytes are its own terms
    # forward, backward for inputs and for weights: 3 x the forward's FLOPs, over 8 chips
    forward = _by_name(
        estimate(LLAMA_8B, H100, TransformerSpec(phase=Phase.PREFILL, batch=16, seq_len=4096))
    )
    assert terms["qkv_projection"].flops == pytest.approx(forward["qkv_projection"].flops * 3 / 8)
    assert totals(result.terms) == pytest.approx(
        (result.roofline.flops, result.roofline.bytes), rel=1e-12
    )
    # the collectives and the idle pipeline slots are what the step adds beside its roofs
    beside = sum(t.seconds for t in result.terms)
    busy = result.roofline.expected_time - beside
    assert busy == pytest.approx(max(result.roofline.compute_time, result.roofline.memory_time))


def test_generate_has_no_breakdown():
    result = estimate(LLAMA_8B, A100, TransformerSpec(phase=Phase.GENERATE, gen_len=4))
    assert result.terms == ()


def test_shares_of_nothing_are_zero():
    (share,) = shares([Term("idle", 1)], estimate(LLAMA_8B, A100, TransformerSpec()).roofline)
    assert (share.time, share.share) == (0, 0)


@settings(max_examples=60, deadline=None)
@given(
    arch=st.sampled_from([LLAMA_8B, MIXTRAL, MISTRAL_7B, GPT2, BERT]),
    chip=st.sampled_from([A100, H100]),
    phase=st.sampled_from([Phase.PREFILL, Phase.DECODE, Phase.TRAINING]),
    sizes=st.tuples(st.integers(1, 4096), st.integers(1, 32768), st.sampled_from([1, 2, 4])),
)
def test_the_terms_add_up_to_the_totals(arch, chip, phase, sizes):
    batch, seq_len, tp = sizes
    if phase is Phase.DECODE and not arch.causal:
        phase = Phase.PREFILL
    spec = TransformerSpec(phase=phase, batch=batch, seq_len=seq_len, tp=tp)
    result = estimate(arch, chip, spec)
    flops, nbytes = totals(result.terms)
    assert flops == pytest.approx(result.roofline.flops, rel=1e-9)
    assert nbytes == pytest.approx(result.roofline.bytes, rel=1e-9)
    placed = shares(result.terms, result.roofline)
    assert sum(s.share for s in placed) == pytest.approx(1)
    # each operation alone: their times add to at least the step's (which overlaps them all)
    assert sum(s.time for s in placed) >= result.roofline.expected_time * (1 - 1e-12)
