"""A generation is its prefill then its decode steps: each phase priced by the published runs
of its own kind (`Realism.phases`, `blend`), and a published generation counted among its
stack's decode steps (`steps_ratio`, `Evidence`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine import Dtype, Kind, Phase, Precision, Software, TransformerSpec, estimate
from app.engine.published import Fitted, blend, fitted
from app.engine.published_runs import FITTED
from app.engine.workload import generation
from app.services.catalogs import load_catalog_files
from app.settings import Settings
from app.validation.calibrate import Evidence, parts, ratio, steps_ratio
from app.validation.runs import Result, evaluate, load
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B

CATALOG, MODELS = load_catalog_files(Settings())
ROWS = {r.row.id: r for r in evaluate(load(), CATALOG, MODELS)}
# TensorRT-LLM 0.6.1 on an H100: 80 prompts of 2,048 tokens, 128 new tokens each; and a
# time to first token of one 2,048-token prompt by the same stack
GENERATION = ROWS["trtllm061-llama7b-h100-b80-tp1-in2048-out128"]
PREFILL = ROWS["trtllm05-ttft-llama7b-h100-tp1-in2048"]


def test_blend_weights_each_entry_by_the_seconds_it_prices() -> None:
    # 1 s at ratio 1.8 (range 0.7-1.2x the realistic time) and 3 s at 1.4 (0.8-1.5x):
    # ratio (1.8 + 3 x 1.4) / 4 = 1.5; the ends weighted by the time each part takes at its
    # median, 1.8 s and 4.2 s of 6.0: low (0.7 x 1.8 + 0.8 x 4.2) / 6 = 0.77, high
    # (1.2 x 1.8 + 1.5 x 4.2) / 6 = 1.41; the fewer runs and sources of the two
    prefill, steps = Fitted(1.8, 0.7, 1.2, 61, 10), Fitted(1.4, 0.8, 1.5, 319, 29)
    blended = blend([(prefill, 1.0), (steps, 3.0)])
    assert (blended.ratio, blended.low, blended.high) == pytest.approx((1.5, 0.77, 1.41))
    assert (blended.runs, blended.sources) == (61, 10)
    # the busy time it scales is the sum of each part's at its own entry
    assert blended.ratio * 4.0 == pytest.approx(1.8 * 1.0 + 1.4 * 3.0)
    assert blend([(prefill, 0.0), (steps, 0.0)]) == prefill


def test_a_generation_is_priced_phase_by_phase() -> None:
    # Llama 3.1 8B on an H100, one 512-token prompt then 128 new tokens, typical software:
    # realistic = prefill busy x prefill's median + steps' busy x decode's median + fixed
    # costs (129 forward passes' launches), never the decode median over the prefill
    spec = TransformerSpec(
        phase=Phase.GENERATE, batch=1, seq_len=512, gen_len=128, precision=Precision(Dtype.BF16)
    )
    first, steps, realism = generation(LLAMA_8B, H100, spec)
    (prefill_kind, prefill_busy), (steps_kind, steps_busy) = realism.phases
    assert (prefill_kind, steps_kind) == (Kind.PREFILL, Kind.DECODE)
    assert prefill_busy == pytest.approx(first.realistic_time)
    assert steps_busy == pytest.approx(steps.realistic_time)
    roof = estimate(LLAMA_8B, H100, spec).roofline
    prefill, decode = FITTED["prefill"]["typical"][0], FITTED["decode"]["typical"][0]
    assert roof.realistic_time == pytest.approx(
        prefill_busy * prefill + steps_busy * decode + roof.overhead_time
    )
    # 128 steps each reading the 16 GB of weights: the steps are nearly all of the busy time
    assert steps_busy > 30 * prefill_busy


def test_a_fine_grained_generation_is_priced_by_its_own_phases() -> None:
    # Qwen3-30B-A3B's phases are its own kinds: its steps' published runs price its steps;
    # its prefill, without runs of its own, takes every model's prefill runs, widened
    qwen = MODELS.resolve("qwen3-30b-a3b").arch
    spec = TransformerSpec(phase=Phase.GENERATE, batch=1, seq_len=512, gen_len=16)
    _, _, realism = generation(qwen, H100, spec)
    assert [kind for kind, _ in realism.phases] == [Kind.PREFILL_FINE_MOE, Kind.DECODE_FINE_MOE]
    assert "prefill-fine-moe" not in FITTED
    assert fitted(Kind.PREFILL_FINE_MOE, Software.TYPICAL)[0].ratio == pytest.approx(
        FITTED["prefill"]["typical"][0]
    )


def _taking(result: Result, prefill: float, steps: float) -> Result:
    """`result` as if its prefill's busy time took `prefill` times itself and its steps'
    `steps` times, on top of its fixed costs and communication."""
    p = parts(result)
    if not result.realism.phases:
        return replace(result, measured_s=p.fixed + p.communication + prefill * p.busy)
    (_, prefill_busy), (_, steps_busy) = result.realism.phases
    measured = p.fixed + p.communication + prefill * prefill_busy + steps * steps_busy
    return replace(result, measured_s=measured)


def test_a_published_generation_is_a_run_of_its_decode_steps() -> None:
    # a generation that took 1.7x its prefill's busy time and 1.25x its steps': with its
    # prefill at 1.7, its steps' ratio is (measured - fixed - comm - 1.7 x prefill busy) /
    # steps' busy = 1.25; with its prefill at 2.0 its steps are credited less
    run = _taking(GENERATION, 1.7, 1.25)
    assert steps_ratio(run, 1.7) == pytest.approx(1.25)
    (_, prefill_busy), (_, steps_busy) = run.realism.phases
    assert steps_ratio(run, 2.0) == pytest.approx(1.25 - 0.3 * prefill_busy / steps_busy)
    # a run faster than its ideal is read at the ideal, and the steps keep their share of it
    p = parts(run)
    fast = replace(run, measured_s=p.ideal / 10)
    floor = (p.ideal - p.fixed - p.communication) / p.busy
    assert steps_ratio(fast, 100.0) == pytest.approx(floor)


def test_the_evidence_counts_a_generation_among_its_stacks_decode_steps() -> None:
    # TensorRT-LLM's prefill taking 1.7x and its generation 1.7x then 1.25x: as evidence, the
    # generation is a TensorRT-LLM decode run of ratio 1.25, its prefill at its stack's 1.7
    prefill = _taking(PREFILL, 1.7, 1.7)
    run = _taking(GENERATION, 1.7, 1.25)
    assert ratio(prefill) == pytest.approx(1.7)
    rows, ratios = Evidence.of([prefill, run]).among([prefill, run])
    steps = next(r for r in rows if r.row.id == run.row.id)
    assert steps.kind is Kind.DECODE and not steps.realism.phases
    assert steps.row.profile is Software.TENSORRT_LLM
    assert ratios[run.row.id] == pytest.approx(1.25)
    assert ratios[prefill.row.id] == pytest.approx(1.7)
    # left out with its prefill's source, the generation's prefill takes 1.0 (nothing
    # published): its steps are credited with all of its prefill's extra time
    alone, alone_ratios = Evidence.of([prefill, run]).among([run])
    assert [r.row.id for r in alone] == [run.row.id]
    (_, prefill_busy), (_, steps_busy) = run.realism.phases
    assert alone_ratios[run.row.id] == pytest.approx(1.25 + 0.7 * prefill_busy / steps_busy)


def test_a_generation_says_which_runs_priced_each_phase(client) -> None:
    answer = client.get(
        "/expected-time",
        params={"chip": "h100", "model": "llama-8b", "phase": "generate", "seq_len": 512},
    ).json()
    prefill, decode = FITTED["prefill"]["typical"], FITTED["decode"]["typical"]
    lines = answer["assumptions"]
    assert any(a.startswith("a generation is its prefill then its decode steps") for a in lines)
    assert (
        f"prefill: stack typical: published prefill runs take {prefill[0]:.2f}x the "
        f"sustained-kernel time ({prefill[3]} runs, {prefill[4]} sources)"
    ) in lines
    assert (
        f"decode steps: stack typical: published decode runs take {decode[0]:.2f}x the "
        f"sustained-kernel time ({decode[3]} runs, {decode[4]} sources)"
    ) in lines
    # the answer's published runs are its decode steps'
    assert (answer["published_stack"], answer["published_runs"]) == ("typical", decode[3])
