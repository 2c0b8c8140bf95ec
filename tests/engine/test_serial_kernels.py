"""A forward pass's kernels run one after another: its sustained-kernel time is the sum of
each term's roofline at the sustained fractions, its ideal the one roofline of their sums
(breakdown.serial_busy, steps.place_pass, steps.place_steps); a fused attention kernel's FLOPs
at the pace published attention kernels reach next to GEMMs (breakdown.sustained_times)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import Dtype, Phase, Precision, TransformerSpec, estimate
from app.engine.breakdown import Term, overlapped_busy, serial_busy, sustained_times
from app.engine.published import ATTENTION_PACE, PUBLISHED
from app.engine.stacks import Kind, Software
from app.engine.steps import place_pass, place_steps
from app.engine.transformer import decode_terms, prefill_terms
from tests.engine.chips import H100, ROUND
from tests.engine.models import LLAMA_8B

BF16 = Precision(Dtype.BF16)
# on ROUND (1e12 FLOP/s, 1e9 B/s, both reached in full): a GEMM of 2e12 FLOPs reading 1e9
# bytes is 2 s of compute and 1 s of memory; a pointwise term moving 3e9 bytes is 3 s
GEMM = Term("gemm", 1, flops=2e12, bytes=1e9)
POINTWISE = Term("pointwise", 1, bytes=3e9)


def test_a_memory_bound_kernel_adds_to_the_compute_bound_one_before_it() -> None:
    # one roofline of the sums: max(2 s, 4 s) = 4 s, the ideal; run one after the other,
    # max(2, 1) + max(0, 3) = 5 s of sustained kernels
    roof = place_pass([GEMM, POINTWISE], BF16, ROUND, comm=0.0)
    assert roof.expected_time == pytest.approx(4.0)
    assert roof.sustained_time == pytest.approx(5.0)
    assert roof.realistic_time == roof.sustained_time
    # collectives come after the kernels: 0.5 s more on both
    with_comm = place_pass([GEMM, POINTWISE], BF16, ROUND, comm=0.5)
    assert (with_comm.expected_time, with_comm.sustained_time) == pytest.approx((4.5, 5.5))


def test_each_term_is_at_the_chips_sustained_fractions() -> None:
    # on the H100 (80.3% of 989.4 TFLOP/s, 90% of 3.35 TB/s): the GEMM's 2e12 FLOPs take
    # 2.021 ms at the peak, 2.517 ms sustained (its 1e9 bytes 0.332 ms); the pointwise
    # term's 3e9 bytes 0.896 ms at the bandwidth, 0.995 ms sustained: 3.512 ms in all
    roof = place_pass([GEMM, POINTWISE], BF16, H100, comm=0.0)
    gemm = 2e12 / (989.4e12 * 0.803)
    pointwise = 3e9 / (3.35e12 * 0.9)
    assert serial_busy([GEMM, POINTWISE], roof, H100) == pytest.approx(gemm + pointwise)
    assert roof.sustained_time == pytest.approx(3.512e-3, rel=1e-3)
    assert roof.expected_time == pytest.approx(max(2e12 / 989.4e12, 4e9 / 3.35e12))


def test_attentions_pace_is_its_published_kernels_next_to_the_gemms() -> None:
    # the median published attention kernel over the median published GEMM, each against the
    # chip's sustained matrix rate: 1.5515 / 1.1030 = 1.4066 in the committed table
    typical = Software.TYPICAL
    pace = PUBLISHED[Kind.ATTENTION][typical].ratio / PUBLISHED[Kind.MATMUL][typical].ratio
    assert pace == ATTENTION_PACE
    assert 1.3 < pace < 1.8


def test_a_flash_kernels_flops_run_at_attentions_pace() -> None:
    # on ROUND (all rates reached in full) a flash term of 2e12 FLOPs and 1e9 bytes is 2 s of
    # compute at the peak, 2 p s at attention's pace p; the same FLOPs in a GEMM stay 2 s
    pace = ATTENTION_PACE
    flash = Term("attention", 1, flops=2e12, bytes=1e9, flash=True)
    roof = place_pass([GEMM, flash], BF16, ROUND, comm=0.0)
    times = [t for pair in sustained_times([GEMM, flash], roof, ROUND) for t in pair]
    assert times == pytest.approx([2.0, 1.0, 2.0 * pace, 1.0])
    # one after the other: 2 + 2 p s; the ideal is still max(4 s, 2 s)
    assert roof.sustained_time == pytest.approx(2.0 + 2.0 * pace)
    assert roof.expected_time == pytest.approx(4.0)
    # a training step overlaps its terms as one roofline: max(2 + 2 p, 1 + 1 + 3) s
    step = [GEMM, flash, POINTWISE]
    assert overlapped_busy(step, roof, ROUND) == pytest.approx(max(2.0 + 2.0 * pace, 5.0))


def test_a_warp_level_mma_term_is_held_to_the_chips_warp_share() -> None:
    # ROUND with warp-level MMA held to half the peak: a FlashAttention-2 term of 2e12 FLOPs
    # is 2 s at the peak, 2 / min(1, 0.5) = 4 s of compute, times attention's pace p (a
    # flash kernel); the GEMM beside it keeps the full rate, 2 s: one after the other,
    # 2 + 4 p s (the blend the term holds apart, each part at its own rate)
    half = replace(ROUND, warp_mma=0.5)
    fa2 = Term("attention", 1, flops=2e12, bytes=1e9, flash=True, warp=True)
    roof = place_pass([GEMM, fa2], BF16, half, comm=0.0)
    times = [t for pair in sustained_times([GEMM, fa2], roof, half) for t in pair]
    assert times == pytest.approx([2.0, 1.0, 4.0 * ATTENTION_PACE, 1.0])
    assert roof.sustained_time == pytest.approx(2.0 + 4.0 * ATTENTION_PACE)


def test_a_long_prompts_flash_attention_takes_its_pace() -> None:
    # Llama 3.1 8B, one 8,192-token prompt on the H100: the flash kernel's causal 2 L P^2 H dh
    # = 2 x 32 x 8192^2 x 32 x 128 = 1.759e13 FLOPs (Q K^T and P V, half of each masked) take
    # 17.78 ms at the 989.4 TFLOP/s peak, 22.14 ms at the sustained 80.3%, and
    # (p - 1) x 22.14 = 0.4066 x 22.14 = 9.00 ms more at its pace: the pass's sustained time
    # is that much above
    # the same pass with the kernel counted as a GEMM
    terms = prefill_terms(LLAMA_8B, 1, 8192, BF16)
    as_gemm = [replace(t, flash=False) for t in terms]
    roof = place_pass(terms, BF16, H100, comm=0.0)
    attention = 2 * 32 * 8192**2 * 32 * 128
    assert next(t.flops for t in terms if t.name == "attention") == attention
    extra = (ATTENTION_PACE - 1) * attention / (989.4e12 * 0.803)
    assert serial_busy(terms, roof, H100) - serial_busy(as_gemm, roof, H100) == pytest.approx(extra)
    assert extra == pytest.approx(9.00e-3, rel=2e-3)


def test_unfused_scores_add_to_the_prompts_arithmetic() -> None:
    # Llama 3.1 8B, one 8,192-token prompt on the H100 without a flash kernel: the scores'
    # fp32 traffic runs after the GEMMs, not under them. Sustained, the pass is the sum of its
    # terms' own rooflines, more than one roofline of their sums, and the ideal is unchanged
    spec = TransformerSpec(phase=Phase.PREFILL, seq_len=8192, precision=BF16, flash_attention=False)
    answer = estimate(LLAMA_8B, H100, spec)
    roof = answer.roofline
    compute = roof.compute_time / roof.sustained_compute
    memory = roof.memory_time / roof.sustained_memory
    assert roof.sustained_time > max(compute, memory) * 1.2
    assert roof.sustained_time == pytest.approx(
        serial_busy(answer.terms, roof, H100) + roof.communication_time
    )
    assert roof.expected_time == pytest.approx(max(roof.compute_time, roof.memory_time))


@given(batch=st.integers(1, 512), context=st.integers(1, 4096), steps=st.integers(1, 40))
def test_decode_steps_in_closed_form_are_the_sum_of_each_steps_kernels(
    batch: int, context: int, steps: int
) -> None:
    # the closed form sums each term's roofline over the contexts exactly: it equals the
    # steps placed one by one
    def step(c: int) -> list[Term]:
        return decode_terms(LLAMA_8B, batch, c, BF16)

    run = place_steps(step, BF16, context, context + steps - 1, H100)
    one_by_one = [
        place_pass(step(c), BF16, H100, comm=0.0) for c in range(context, context + steps)
    ]
    assert run.sustained_time == pytest.approx(sum(r.sustained_time for r in one_by_one))
    assert run.expected_time == pytest.approx(sum(r.expected_time for r in one_by_one))


def test_a_generations_steps_are_its_decode_steps_kernels() -> None:
    # a generation of 3 tokens after a 100-token prompt: its busy time is its prefill's and
    # the three decode steps' (contexts 100, 101, 102), each serial
    spec = TransformerSpec(phase=Phase.GENERATE, batch=4, seq_len=100, gen_len=3, precision=BF16)
    roof = estimate(LLAMA_8B, H100, spec).roofline
    prefill = estimate(LLAMA_8B, H100, replace(spec, phase=Phase.PREFILL)).roofline
    steps = [
        estimate(LLAMA_8B, H100, replace(spec, phase=Phase.DECODE, seq_len=c)).roofline
        for c in (100, 101, 102)
    ]
    assert roof.sustained_time == pytest.approx(
        prefill.sustained_time + sum(s.sustained_time for s in steps)
    )
