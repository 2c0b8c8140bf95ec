"""fp8 training (docs/formulas.md#fp8-training): the linear layers' GEMMs at the fp8 peak,
attention's score and value products at the bf16 peak. A worked Llama 3.1 8B step on an
H100, and the invariants of the split."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Dtype, Phase, TransformerSpec, estimate
from app.engine.breakdown import shares
from app.engine.roofline import Work, on_the_roofs
from app.engine.transformer import Precision, prefill_terms, work_of
from app.engine.units import Unit
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B

FP8 = Precision(Dtype.FP8, Dtype.FP8, Dtype.FP8)


def _step(precision: Precision, seq_len: int = 8192):
    spec = TransformerSpec(phase=Phase.TRAINING, batch=1, seq_len=seq_len, precision=precision)
    step = estimate(LLAMA_8B, H100, spec)
    assert step.training is not None
    return step


def test_llama_8b_fp8_training_step_runs_attention_at_the_bf16_peak():
    # Llama 3.1 8B, one sequence of 8192 tokens, no recomputation: forward + backward = 3 x
    # the forward's FLOPs. Linear: 2 x 7,504,658,432 matrix parameters (6,979,321,856 in the
    # blocks + the 525,336,576 of lm_head) x 8192 = 122,956,323,749,888, x3 =
    # 368,868,971,249,664 at the fp8 1978.9 TFLOP/s: 0.186401 s. Attention: 32 layers x
    # 2 x 32 heads x (128 + 128) x 8192^2 / 2 causal pairs = 17,592,186,044,416, x3.5 (the
    # flash kernel's backward recomputes the scores) = 61,572,651,155,456 at the bf16
    # 989.4 TFLOP/s: 0.062232 s. Compute time 0.248633 s (all at the fp8 peak it would be
    # 430,441,622,405,120 / 1978.9e12 = 0.217516 s); the step's peak is their blend,
    # 430,441,622,405,120 / 0.248633 = 1731.23 TFLOP/s.
    roof = _step(FP8).roofline
    assert roof.flops == pytest.approx(430_441_622_405_120)
    assert roof.compute_time == pytest.approx(0.248633, rel=1e-5)
    assert roof.peak.flops_per_s == pytest.approx(1731.23e12, rel=1e-5)
    assert roof.peak.dtype is Dtype.FP8
    # the breakdown prices attention at the bf16 peak: 61,572,651,155,456 / 989.4e12
    attention = next(s for s in shares(_step(FP8).terms, roof, H100) if s.name == "attention")
    assert attention.time == pytest.approx(0.062232, rel=1e-4)


def test_bf16_training_and_fp8_inference_are_unchanged():
    # a bf16 step runs everything at the bf16 peak: the step's peak is the chip's
    assert _step(Precision()).roofline.peak.flops_per_s == 989.4e12
    # fp8 inference engines (TensorRT-LLM's fp8 context attention) keep attention in fp8:
    # a prefill's work has no FLOPs at the 16-bit peak
    assert work_of(prefill_terms(LLAMA_8B, 1, 8192, FP8), FP8).wide_flops == 0.0


@settings(max_examples=30, deadline=None)
@given(
    dense=st.floats(0, 1e18, allow_nan=False),
    wide=st.floats(0, 1e18, allow_nan=False),
)
def test_wide_flops_take_the_sum_of_their_times_at_their_own_peaks(dense, wide):
    # the compute time is dense / fp8 peak + wide / bf16 peak, so it lies between the times
    # of all of it at the fp8 peak and all of it at the bf16 peak
    work = Work(dense + wide, 1.0, Dtype.FP8, Unit.MATRIX, wide_flops=wide)
    _, compute_time, _ = on_the_roofs(work, H100)
    assert compute_time == pytest.approx(dense / 1978.9e12 + wide / 989.4e12)
    assert (dense + wide) / 1978.9e12 * (1 - 1e-12) <= compute_time
    assert compute_time <= (dense + wide) / 989.4e12 * (1 + 1e-12)


def test_the_attention_share_grows_with_the_sequence():
    # attention grows as S^2 and the linear layers as S: the longer the sequence, the more of
    # an fp8 step runs at the bf16 peak and the lower the step's blended peak
    peaks = [_step(FP8, seq).roofline.peak.flops_per_s for seq in (1024, 8192, 32768)]
    assert peaks[0] > peaks[1] > peaks[2] > 989.4e12
