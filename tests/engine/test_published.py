"""Which published entry prices a workload: fine-grained experts are a population of their own,
and the boundary between kernels is the cost its source measured."""

from __future__ import annotations

import pytest

from app.engine import Dtype, Kind, Phase, Precision, Software, TransformerSpec, estimate
from app.engine.published import Fitted, entry_in
from app.engine.realism import GRAPH_NODE_GAP_S, KERNEL_BOUNDARY_S, step_kernels
from app.engine.workload import work_kind
from app.services.catalogs import load_catalog_files
from app.settings import Settings
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B, MIXTRAL

CATALOG, MODELS = load_catalog_files(Settings())


@pytest.mark.parametrize(
    ("model", "fine"),
    [
        # routed expert intermediate vs hidden width: 2,048 <= 7,168; 768 <= 2,048;
        # 2,880 <= 2,880 (gpt-oss's experts are exactly as wide as the model)
        ("deepseek-v3", True),
        ("qwen3-30b-a3b", True),
        ("gpt-oss-120b", True),
        # Mixtral's experts are 14,336 wide against 4,096: a dense MLP's shape, twice
        ("mixtral-8x7b", False),
        ("llama-8b", False),
    ],
)
def test_fine_grained_experts_are_no_wider_than_the_model(model, fine):
    assert MODELS.resolve(model).arch.fine_grained_experts is fine


def test_a_pass_of_fine_grained_experts_is_its_own_kind_of_work():
    deepseek = MODELS.resolve("deepseek-v3").arch
    assert work_kind(deepseek, Phase.DECODE) is Kind.DECODE_FINE_MOE
    assert work_kind(deepseek, Phase.GENERATE) is Kind.GENERATE_FINE_MOE
    assert work_kind(deepseek, Phase.PREFILL) is Kind.PREFILL_FINE_MOE
    assert work_kind(deepseek, Phase.TRAINING) is Kind.TRAINING
    assert work_kind(MIXTRAL, Phase.DECODE) is Kind.DECODE
    assert work_kind(LLAMA_8B, Phase.DECODE) is Kind.DECODE


def test_a_kind_without_runs_of_its_own_takes_the_kind_it_refines_widened():
    # the table has decode runs and none of fine-grained experts: a decode step of fine-grained
    # experts takes decode's median 1.3 (range 0.8-1.4x the realistic time), widened to the
    # spread 0.7-1.7x: 0.7-1.7x
    decode = Fitted(1.3, 0.8, 1.4, 40, 8)
    entries = {Kind.DECODE: {Software.TYPICAL: decode}}
    spread = (0.7, 1.7)
    entry, used, on = entry_in(Kind.DECODE_FINE_MOE, Software.VLLM, entries, {}, spread)
    assert (entry.ratio, used, on) == (1.3, Software.TYPICAL, None)
    assert (entry.low, entry.high) == (0.7, 1.7)
    # an end already wider than the spread stays
    wide = Fitted(1.3, 0.5, 1.4, 40, 8)
    entry = entry_in(
        Kind.DECODE_FINE_MOE, Software.VLLM, {Kind.DECODE: {Software.TYPICAL: wide}}, {}, spread
    )[0]
    assert (entry.low, entry.high) == (0.5, 1.7)
    # where runs of its own were published, they price it, and decode's do not
    fine = Fitted(4.3, 0.6, 2.0, 14, 3)
    entries[Kind.DECODE_FINE_MOE] = {Software.TYPICAL: fine}
    assert entry_in(Kind.DECODE_FINE_MOE, Software.TYPICAL, entries, {}, spread)[0] == fine
    assert entry_in(Kind.DECODE, Software.TYPICAL, entries, {}, spread)[0] == decode


def test_the_kernel_boundary_is_what_its_source_measured_on_llama_3_2_1b():
    # Hazy Research, H100, one sequence of Llama-3.2-1B: vLLM and SGLang at most 50% of the
    # bandwidth, one kernel for the whole step 78%. The step's bytes at 3.35 TB/s take
    # 0.739 ms: at 50% 1.479 ms, at 78% 0.948 ms; 0.531 ms over the 147 boundaries between
    # the engine's 148 kernels is 3.61 us, 0.58 us of which is the graph node's gap: 3.0 us
    arch = MODELS.resolve("llama-3.2-1b").arch
    precision = Precision(Dtype.BF16, Dtype.BF16, Dtype.BF16)
    spec = TransformerSpec(phase=Phase.DECODE, batch=1, seq_len=160, precision=precision)
    ideal = estimate(arch, H100, spec).roofline.expected_time
    assert ideal == pytest.approx(0.739e-3, rel=2e-3)
    kernels = step_kernels(arch, Software.SGLANG)
    assert kernels == 16 * 9 + 4
    per_boundary = (ideal / 0.50 - ideal / 0.78) / (kernels - 1)
    assert per_boundary == pytest.approx(3.61e-6, rel=2e-3)
    assert per_boundary - GRAPH_NODE_GAP_S == pytest.approx(KERNEL_BOUNDARY_S, abs=0.05e-6)
