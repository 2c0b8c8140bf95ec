"""The realistic time: fixed costs, published ratios, regimes and where a run sits against
the published range. Every expected value is derived by hand in the comment beside it."""

import math
from dataclasses import replace

import pytest

from app.engine import (
    AgainstPublished,
    Bound,
    Dtype,
    Kind,
    Realism,
    Software,
    Unit,
    custom,
    elementwise,
    fitted,
    judge,
    matmul,
    place,
    place_kernel,
    realize,
    saxpy,
    step_kernels,
)
from app.engine.realism import fixed_costs, graph_pays
from app.engine.training import Parallelism, Training
from app.engine.transformer import Phase
from app.engine.workload import TransformerSpec, pass_realism
from tests.engine.chips import A100, H100
from tests.engine.models import GPT2, LLAMA_8B, MIXTRAL

US = 1e-6


def test_eager_host_dispatch_outlasts_a_tiny_kernel():
    # 2 kernels: device gaps 2 x 2.31 us launches + 1 boundary of 3.0 us (the second kernel
    # follows the first) = 7.62 us; host dispatch 2 x 8 us = 16 us, which outlasts 1 ns of
    # device work plus the gaps: the costs add 16 - 0.000001 us in all
    costs = fixed_costs(Software.EAGER, kernels=2, steps=1)
    assert costs.gaps == pytest.approx(7.62 * US)
    assert costs.dispatch == pytest.approx(16 * US)
    assert costs.steps == 0  # no graph to launch
    assert costs.on_top_of(1e-9) == pytest.approx(16 * US - 1e-9)
    # with 1 ms of device work the host keeps ahead: only the gaps remain
    assert costs.on_top_of(1e-3) == pytest.approx(7.62 * US)


def test_graphed_stacks_pay_a_small_gap_per_kernel_and_one_launch_per_step():
    # 292 kernels x 0.58 us = 169.36 us, plus 291 boundaries x 3.0 us = 873 us, plus one
    # 15 us graph launch = 1,057.36 us
    costs = fixed_costs(Software.VLLM, kernels=292, steps=1)
    assert costs.on_top_of(0.01) == pytest.approx(1057.36 * US)
    # a single kernel has no boundary with one before it
    assert fixed_costs(Software.VLLM, kernels=1, steps=1).gaps == pytest.approx(2.31 * US)
    # 64 all-reduces inside a node at 12.5 us = 800 us; across nodes at 40 us = 2.56 ms
    assert fixed_costs(Software.VLLM, kernels=0, steps=0, collectives=64).collectives == (
        pytest.approx(800 * US)
    )
    across = fixed_costs(Software.VLLM, kernels=0, steps=0, collectives=64, across_nodes=True)
    assert across.collectives == pytest.approx(2560 * US)


def test_a_graph_is_replayed_only_where_it_costs_less_than_stream_launches():
    # a graph: 15 us + 0.58 us per kernel; a stream: 2.31 us per kernel. 8 kernels: 19.64 us
    # against 18.48 us, launched from a stream; 9 kernels: 20.22 us against 20.79 us, replayed.
    # The boundaries are paid either way: 7 x 3.0 = 21 us and 8 x 3.0 = 24 us
    assert not graph_pays(8, 1)
    assert graph_pays(9, 1)
    assert fixed_costs(Software.TYPICAL, kernels=8, steps=1).on_top_of(1.0) == pytest.approx(
        (18.48 + 21) * US
    )
    assert fixed_costs(Software.TYPICAL, kernels=9, steps=1).on_top_of(1.0) == pytest.approx(
        (20.22 + 24) * US
    )


def test_one_kernel_costs_less_on_a_tuned_stack_than_in_eager_pytorch():
    # a 1,000-element saxpy on an A100: 5.9 ns of work; typical software launches it from a
    # stream (2.31 us), eager PyTorch pays its host dispatch (8 us)
    typical = place_kernel(saxpy(1000, Dtype.FP32), A100, Software.TYPICAL)
    eager = place_kernel(saxpy(1000, Dtype.FP32), A100, Software.EAGER)
    assert typical.realistic_time == pytest.approx(2.31 * US + typical.sustained_time, rel=1e-3)
    assert eager.realistic_time == pytest.approx(8 * US, rel=1e-3)
    assert typical.realistic_time < eager.realistic_time


def test_fixed_costs_have_a_spread_so_their_range_has_a_width():
    # eager dispatch spreads 5-20 us around 8 us (HTA); a stream launch 0.9-6.7 us around 2.31
    eager = place_kernel(saxpy(1000, Dtype.FP32), A100, Software.EAGER)
    assert eager.realistic_low == pytest.approx(5 * US, rel=1e-3)
    assert eager.realistic_high == pytest.approx(20 * US, rel=1e-3)
    costs = fixed_costs(Software.VLLM, kernels=292, steps=1, collectives=2)
    low, high = costs.spread(0), costs.spread(1)
    assert low.gaps == pytest.approx(costs.gaps * 0.9 / 2.31)
    assert high.steps == pytest.approx(costs.steps * 6.7 / 2.31)
    assert high.collectives == pytest.approx(costs.collectives * 6.7 / 2.31)


def test_a_1024_cubed_gemm_on_an_h100_is_not_overhead_bound():
    # 2.15 GFLOP of bf16 at 989 TFLOP/s: 2.17 us ideally, more with 64 tiles on 132 SMs,
    # against one 2.31 us launch: the work, not the launch, sets the time
    gemm = place_kernel(matmul(1024, 1024, 1024, Dtype.BF16), H100)
    assert gemm.bound is Bound.COMPUTE


def test_kernels_per_forward_pass():
    # Llama 3.1 8B, 32 layers: fused 32 x 9 + 4 = 292; eager 32 x 40 + 8 = 1288
    assert step_kernels(LLAMA_8B, Software.TYPICAL) == 292
    assert step_kernels(LLAMA_8B, Software.EAGER) == 1288
    # Mixtral 8x7B, 32 MoE layers, 2 experts per token: fused + 32 x 2 = 356;
    # eager + 32 x 7 x 2 = 1736
    assert step_kernels(MIXTRAL, Software.VLLM) == 356
    assert step_kernels(MIXTRAL, Software.EAGER) == 1736


def test_work_without_published_runs_is_its_sustained_time_plus_fixed_costs():
    # 1e12 FLOPs, 1e9 bytes, bf16 matrix on the test A100: compute 1e12 / 312e12 = 3.205 ms,
    # sustained 3.205 / 0.869 = 3.688 ms; custom work has no published runs (ratio 1); one
    # kernel, even on the typical (graphed) stack, is launched from a stream: 2.31 us, whose
    # spread (0.9 to 6.7 us) is the range's
    roof = place_kernel(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100)
    sustained = 1e12 / 312e12 / 0.869
    assert roof.sustained_time == pytest.approx(sustained)
    assert roof.realistic_time == pytest.approx(sustained + 2.31 * US)
    assert roof.realistic_low == pytest.approx(sustained + 0.9 * US)
    assert roof.realistic_high == pytest.approx(sustained + 6.7 * US)
    assert roof.kernels == 1


def test_the_published_ratio_scales_the_busy_time_and_its_range():
    # a kind with published runs: realistic = busy x median + fixed, the range that times
    # the deciles of how far unseen runs fell from their realistic time. 1e12 bf16 FLOPs on
    # the test A100 keep it busy 1e12 / 312e12 / 0.869 = 3.688 ms; one kernel from a stream
    # adds 2.31 us, 0.9-6.7 us at the ends of its own spread, far inside the deciles' ends;
    # the low end (3.676 ms x 0.818 = 3.007 ms) is held at the 3.205 ms ideal
    published, used, _ = fitted(Kind.MATMUL, Software.EAGER)
    assert used is Software.TYPICAL  # no stack-specific matmul entry: typical's is used
    roof = place(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100)
    busy = roof.realistic_time
    assert busy == pytest.approx(1e12 / 312e12 / 0.869)
    real = realize(roof, Realism(Kind.MATMUL, Software.TYPICAL))
    realistic = busy * published.ratio + 2.31 * US
    assert real.realistic_time == pytest.approx(realistic)
    assert real.realistic_low == pytest.approx(max(realistic * published.low, 1e12 / 312e12))
    assert real.realistic_high == pytest.approx(realistic * published.high)
    assert realistic * published.high > busy * published.ratio + 6.7 * US
    assert real.realistic_low <= real.realistic_time <= real.realistic_high


def test_communication_is_added_at_the_bandwidth_collectives_reach():
    # 1 ms of tensor-parallel traffic at line rate takes 1 / (370 / 450) = 1.2162 ms
    roof = place(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100, 1e-3)
    real = realize(roof, Realism(Kind.CUSTOM, Software.TYPICAL, kernels=0, steps=0))
    busy = 1e12 / 312e12 / 0.869
    assert real.realistic_time == pytest.approx(busy + 1e-3 * 450 / 370)


def test_regimes():
    tiny = place_kernel(saxpy(1000, Dtype.FP32), A100, Software.EAGER)
    # 12 kB at 2.039 TB/s = 5.9 ns of work against 8 us of host dispatch
    assert tiny.bound is Bound.OVERHEAD
    assert tiny.roof is Bound.MEMORY
    chatty = place(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100, 5e-3)
    # 5 ms of collectives against 3.2 ms of compute
    assert chatty.bound is Bound.COMMUNICATION
    busy = place(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100, 1e-3)
    assert busy.bound is Bound.COMPUTE  # 1 ms of collectives < 3.2 ms of compute


def test_sixteen_bit_pointwise_math_runs_at_the_fp32_vector_peak():
    # bf16 x.cos() over 1e9 elements: 1e9 FLOPs at A100's fp32 vector 19.5 TFLOP/s = 51.3 us,
    # even if a chip published a faster bf16 vector rate; bytes 2 x 2e9 = 4e9 at 2.039 TB/s
    work = elementwise(10**9, Dtype.BF16, ops=1)
    assert work.dtype is Dtype.FP32
    a100 = replace(A100, vector_peaks={**A100.vector_peaks, Dtype.BF16: 78e12})
    roof = place(work, a100)
    assert roof.compute_time == pytest.approx(1e9 / 19.5e12)
    assert roof.memory_time == pytest.approx(4e9 / 2.039e12)


def test_unfused_chains_launch_one_kernel_per_op():
    assert elementwise(1000, Dtype.FP32, ops=4, fused=False).kernels == 4
    assert elementwise(1000, Dtype.FP32, ops=4).kernels == 1


@pytest.mark.parametrize(
    ("measured", "place_"),
    [
        (0.99, AgainstPublished.FASTER),  # just below the low end
        (1.0, AgainstPublished.WITHIN),  # at the low end (inclusive)
        (2.0, AgainstPublished.WITHIN),  # at the high end (inclusive)
        (2.01, AgainstPublished.SLOWER),  # just above it
    ],
)
def test_where_a_run_sits_against_the_published_range(measured, place_):
    # a roofline whose realistic range is [1.0, 2.0] s around 1.5 s (ideal 0.5 s)
    roof = place(custom(156e12, 1e9, Dtype.BF16, Unit.MATRIX), A100)
    roof = replace(roof, realistic_time=1.5, realistic_low=1.0, realistic_high=2.0)
    judgement = judge(roof, measured)
    assert judgement.against_published is place_
    assert math.isclose(judgement.realistic_ratio, measured / 1.5)
    if place_ is AgainstPublished.SLOWER:
        assert judgement.advice[-1].startswith(f"{measured / 1.5:.1f}x the realistic estimate")


def test_a_forward_pass_realism_follows_every_field_it_reads():
    """pass_realism reads the kind, model, stack, tp and chips per node: each of them
    changes what it says."""
    spec = TransformerSpec(phase=Phase.DECODE, tp=8)
    base = pass_realism(LLAMA_8B, spec, None)
    assert base == Realism(Kind.DECODE, Software.TYPICAL, 32 * 9 + 4, 1, 64, False)
    apart = TransformerSpec(
        phase=Phase.DECODE, tp=8, training=Training(parallel=Parallelism(chips_per_node=4))
    )
    assert pass_realism(LLAMA_8B, apart, None).across_nodes
    assert pass_realism(LLAMA_8B, TransformerSpec(phase=Phase.DECODE), None).collectives == 0
    assert pass_realism(LLAMA_8B, TransformerSpec(phase=Phase.PREFILL), None).kind is Kind.PREFILL
    eager = TransformerSpec(phase=Phase.DECODE, software=Software.EAGER)
    assert pass_realism(LLAMA_8B, eager, None).kernels == 32 * 40 + 8
    assert pass_realism(GPT2, spec, None).kernels == GPT2.layers * 9 + 4


def test_realized_is_the_roofline_with_its_realistic_figures_replaced():
    roof = place(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100, 1e-3)
    assert roof.realized(2.0, 1.0, 3.0) == replace(
        roof,
        sustained_time=roof.realistic_time,
        realistic_time=2.0,
        realistic_low=1.0,
        realistic_high=3.0,
    )
    assert roof.realized(2.0, 1.0, 3.0, 0.5, 7) == replace(
        roof,
        sustained_time=roof.realistic_time,
        realistic_time=2.0,
        realistic_low=1.0,
        realistic_high=3.0,
        overhead_time=0.5,
        kernels=7,
    )
