"""The optimal batch's closed forms against a brute force: the exact estimate at every batch
the searches probe and every row of the sweep, as the search ran before its closed forms
(issue 14). Integers, regimes and fits must be equal; times, memory and rates equal to the
last few digits (the lines and the estimate round differently)."""

import math
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.catalog.loader import load_chip_catalog, load_model_catalog
from app.engine import Dtype, Phase, Precision, TransformerSpec, estimate
from app.engine.batch import (
    NEAR_ASYMPTOTE,
    LimitedBy,
    OptimalBatch,
    SweepPoint,
    _sweep_batches,
    search,
    smallest_batch,
)
from app.engine.fit import max_batch as largest_fitting_batch
from app.engine.roofline import Bound
from app.engine.stacks import Software
from app.engine.workload import MAX_BATCH
from app.settings import Settings


@cache
def _catalogs():
    settings = Settings()
    return load_chip_catalog(settings.chip_catalog), load_model_catalog(settings.model_catalog)


def brute_force(arch, chip, spec, max_step_time=None) -> OptimalBatch:
    """The definition, evaluated with the exact estimate only (bisection, no guesses)."""

    def at(b: int):
        return estimate(arch, chip, spec.with_batch(b))

    unbounded = at(MAX_BATCH)
    asymptote = unbounded.tokens_per_s
    ridge = smallest_batch(lambda b: at(b).roofline.roof is Bound.COMPUTE)
    near = smallest_batch(lambda b: at(b).tokens_per_s >= NEAR_ASYMPTOTE * asymptote)
    near = near or MAX_BATCH
    most = largest_fitting_batch(arch, chip, spec)
    latency = None
    if max_step_time is not None:  # the largest batch whose realistic step time is within it
        over = smallest_batch(lambda b: at(b).roofline.realistic_time > max_step_time)
        latency = (over or MAX_BATCH + 1) - 1
    cap = most if latency is None else min(most, latency)
    if most == 0:
        best, limited_by = None, LimitedBy.MEMORY
    elif ridge is not None and ridge <= cap:
        best, limited_by = ridge, LimitedBy.RIDGE
    elif cap == most:
        best, limited_by = most, LimitedBy.MEMORY
    else:
        best, limited_by = cap or None, LimitedBy.LATENCY
    named = {b for b in (ridge, most, near, best, latency) if b}
    return OptimalBatch(
        optimal_batch=best,
        limited_by=limited_by,
        ridge_batch=ridge,
        max_batch=most,
        throughput_asymptote=asymptote,
        asymptotic_intensity=unbounded.roofline.arithmetic_intensity,
        ridge_intensity=unbounded.roofline.ridge_intensity,
        near_asymptote_batch=near,
        sweep=tuple(SweepPoint.of(b, at(b)) for b in _sweep_batches(named)),
        latency_batch=latency,
    )


def _same(fast: OptimalBatch, slow: OptimalBatch) -> None:
    exact = ["optimal_batch", "limited_by", "ridge_batch", "max_batch", "near_asymptote_batch"]
    exact.append("latency_batch")
    for name in exact:
        assert getattr(fast, name) == getattr(slow, name), name
    for name in ("throughput_asymptote", "asymptotic_intensity", "ridge_intensity"):
        assert getattr(fast, name) == getattr(slow, name), name  # both from the same estimate
    assert [p.batch for p in fast.sweep] == [p.batch for p in slow.sweep]
    for f, s in zip(fast.sweep, slow.sweep, strict=True):
        assert (f.fits, f.bound) == (s.fits, s.bound), f.batch
        for name in (
            "compute_time",
            "memory_time",
            "expected_time",
            "realistic_time",
            "memory_required",
        ):
            assert math.isclose(getattr(f, name), getattr(s, name), rel_tol=1e-12), (f.batch, name)
        assert math.isclose(f.tokens_per_s, s.tokens_per_s, rel_tol=1e-12), f.batch


MODELS = ["llama-8b", "llama-70b", "gpt2", "bert-base-uncased", "gemma-2-9b", "mixtral-8x7b",
          "deepseek-v3", "qwen3-8b", "phi-3-mini-4k", "llama-3.2-1b", "gpt-oss-20b"]  # fmt: skip
CHIPS = ["a100", "h100", "t4", "mi300x", "b200", "l4", "tpu-v5e", "h20"]


@settings(max_examples=150, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    chip=st.sampled_from(CHIPS),
    phase=st.sampled_from([Phase.DECODE, Phase.PREFILL]),
    seq_len=st.one_of(st.sampled_from([1, 128, 2048, 32768]), st.integers(1, 10**6)),
    tp=st.sampled_from([1, 2, 8]),
    weights=st.sampled_from([None, Dtype.INT8, Dtype.INT4]),
    kv=st.sampled_from([None, Dtype.FP8]),
    software=st.sampled_from([Software.TYPICAL, Software.EAGER, Software.VLLM]),
    # a latency bound, as a multiple of the realistic step time at batch 1 (below 1: none meets it)
    slack=st.one_of(st.none(), st.sampled_from([0.5, 1.0, 1.01, 2.0, 10.0, 1e3, 1e9])),
)
def test_the_closed_forms_match_the_brute_force(  # noqa: PLR0917
    model, chip, phase, seq_len, tp, weights, kv, software, slack
):
    chips, models = _catalogs()
    arch, record = models.resolve(model).arch, chips.resolve(chip)
    compute = record.chip.default_compute_dtype(Dtype.BF16)
    precision = Precision(compute, weights or compute, kv or compute)
    spec = TransformerSpec(
        phase=phase, seq_len=seq_len, tp=tp, precision=precision, software=software
    )
    if tp > arch.attention.heads or (phase is Phase.DECODE and not arch.causal):
        return
    bound = None
    if slack is not None:
        bound = slack * estimate(arch, record.chip, spec).roofline.realistic_time
    _same(
        search(arch, record.chip, spec, bound),
        brute_force(arch, record.chip, spec, bound),
    )


@pytest.mark.parametrize("seq_len", [128, 2048])
def test_a_crossing_too_close_to_call_on_the_lines_is_decided_by_the_estimate(
    monkeypatch: pytest.MonkeyPatch, seq_len: int
) -> None:
    """With every comparison on the lines declared too close to call, the exact search
    decides, and the answer is the same."""
    import app.engine.batch as batch_module  # noqa: PLC0415

    chips, models = _catalogs()
    arch, chip = models.resolve("llama-8b").arch, chips.resolve("a100").chip
    spec = TransformerSpec(phase=Phase.DECODE, seq_len=seq_len)
    bound = 20e-3  # a 20 ms time per output token
    fast = search(arch, chip, spec, bound)
    monkeypatch.setattr(batch_module, "_CLEAR", math.inf)
    _same(search(arch, chip, spec, bound), fast)
    _same(fast, brute_force(arch, chip, spec, bound))
