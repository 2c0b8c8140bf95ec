"""The ideal at the fastest accumulate mode the stack uses (docs/formulas.md#accumulation)."""

from dataclasses import replace

import pytest

from app.engine import Dtype, Software, matmul, place_kernel
from app.engine.transformer import Phase, Precision
from app.engine.workload import TransformerSpec, estimate
from tests.engine.chips import ROUND
from tests.engine.models import LLAMA_8B

# ROUND with a GeForce-style fp16 tensor core: 1e12 FLOP/s accumulating in fp32, 2e12 in fp16
GEFORCE = replace(
    ROUND,
    matrix_peaks={Dtype.BF16: 1e12, Dtype.FP16: 1e12},
    fp16_accumulate_peaks={Dtype.FP16: 2e12},
)


def test_an_fp16_matmul_on_llama_cpp_computes_at_the_fp16_accumulate_peak():
    # 2 * 4096^3 = 1.374e11 FLOPs: 0.1374 s at 1e12 (fp32 accumulate), 0.0687 s at 2e12;
    # 3 * 4096^2 * 2 = 1.007e8 bytes at 1e9 B/s = 0.1007 s: compute-bound at fp32 accumulate
    # (0.1374 s), memory-bound at fp16 accumulate (0.1007 s > 0.0687 s)
    work = matmul(4096, 4096, 4096, Dtype.FP16)
    fp32_acc = place_kernel(work, GEFORCE, Software.TYPICAL)
    fp16_acc = place_kernel(work, GEFORCE, Software.LLAMA_CPP)
    assert fp32_acc.expected_time == pytest.approx(2 * 4096**3 / 1e12)
    assert fp16_acc.peak.flops_per_s == 2e12
    assert fp16_acc.compute_time == pytest.approx(2 * 4096**3 / 2e12)
    assert fp16_acc.expected_time == pytest.approx(3 * 4096**2 * 2 / 1e9)


def test_a_bf16_matmul_accumulates_in_fp32_on_every_stack():
    work = matmul(4096, 4096, 4096, Dtype.BF16)
    llama = place_kernel(work, GEFORCE, Software.LLAMA_CPP)
    assert llama.peak.flops_per_s == 1e12
    assert llama.expected_time == place_kernel(work, GEFORCE, Software.TYPICAL).expected_time


def test_an_fp16_prefill_on_llama_cpp_is_at_the_fp16_accumulate_peak():
    spec = TransformerSpec(
        phase=Phase.PREFILL,
        seq_len=512,
        precision=Precision(Dtype.FP16, Dtype.FP16, Dtype.FP16),
        software=Software.LLAMA_CPP,
    )
    llama = estimate(LLAMA_8B, GEFORCE, spec)
    typical = estimate(LLAMA_8B, GEFORCE, replace(spec, software=Software.TYPICAL))
    assert llama.roofline.flops == typical.roofline.flops
    assert llama.roofline.compute_time == pytest.approx(typical.roofline.compute_time / 2)
    assert llama.roofline.peak.flops_per_s == 2e12
