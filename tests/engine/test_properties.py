"""Invariants of the engine, checked on generated inputs (hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import (
    Bound,
    Dtype,
    InvalidInput,
    LimitedBy,
    Phase,
    TransformerSpec,
    Unit,
    custom,
    estimate,
    memory_fit,
    optimal_batch,
    place,
)
from app.engine.roofline import on_the_roofs, roofline_time
from app.engine.transformer import experts_touched
from app.engine.workload import ideal_pass
from tests.engine.chips import A100, H100
from tests.engine.models import GPT2, LLAMA_8B, MISTRAL_7B, MIXTRAL

archs = st.sampled_from([LLAMA_8B, MIXTRAL, MISTRAL_7B, GPT2])
chips = st.sampled_from([A100, H100])
phases = st.sampled_from(list(Phase))
batches = st.integers(1, 10**6)
lengths = st.integers(1, 10**6)


@given(
    flops=st.floats(0, 1e25),
    nbytes=st.floats(1e-3, 1e25),
    dtype=st.sampled_from([Dtype.BF16, Dtype.FP32]),
    unit=st.sampled_from(list(Unit)),
)
def test_time_is_never_below_either_term(flops, nbytes, dtype, unit):
    roof = place(custom(flops, nbytes, dtype, unit), A100)
    assert roof.expected_time >= roof.compute_time
    assert roof.expected_time >= roof.memory_time
    assert roof.expected_time == max(roof.compute_time, roof.memory_time)
    assert roof.realistic_time >= roof.expected_time
    assert (roof.roof is Bound.COMPUTE) == (roof.arithmetic_intensity >= roof.ridge_intensity)
    # what a training step's communication overlaps, before its Roofline is built: the same
    # float
    roofs = on_the_roofs(custom(flops, nbytes, dtype, unit), A100)
    assert roofline_time(roofs[1], roofs[2]) == roof.expected_time


@settings(max_examples=150, deadline=None)
@given(arch=archs, chip=chips, phase=phases, batch=batches, length=lengths)
def test_flops_bytes_and_memory_grow_with_batch_and_length(arch, chip, phase, batch, length):
    spec = TransformerSpec(phase=phase, batch=batch, seq_len=length, gen_len=16)
    base = estimate(arch, chip, spec)
    for bigger in (
        spec.with_batch(batch + 1 + batch // 3),
        TransformerSpec(phase=phase, batch=batch, seq_len=length + 1 + length // 3, gen_len=16),
    ):
        grown = estimate(arch, chip, bigger)
        assert grown.roofline.flops >= base.roofline.flops
        assert grown.roofline.bytes >= base.roofline.bytes
        assert grown.memory.total >= base.memory.total
        assert grown.roofline.expected_time >= base.roofline.expected_time
    roof = base.roofline
    assert roof.expected_time >= max(roof.compute_time, roof.memory_time)


@settings(max_examples=60, deadline=None)
@given(
    arch=archs,
    chip=chips,
    phase=st.sampled_from([Phase.DECODE, Phase.PREFILL, Phase.TRAINING]),
    length=st.integers(1, 65536),
    tp=st.sampled_from([1, 2, 4]),
)
def test_the_optimal_batch_fits_and_is_the_smallest_compute_bound_one(
    arch, chip, phase, length, tp
):
    spec = TransformerSpec(phase=phase, seq_len=length, tp=tp)
    answer = optimal_batch(arch, chip, spec)

    def at(b):
        return estimate(arch, chip, spec.with_batch(b))

    if answer.optimal_batch is None:
        assert answer.max_batch == 0
        assert not at(1).fits
        return
    best = at(answer.optimal_batch)
    assert best.fits
    if answer.limited_by is LimitedBy.RIDGE:
        assert answer.optimal_batch == answer.ridge_batch
        assert best.roofline.roof is Bound.COMPUTE
        if answer.optimal_batch > 1:
            assert at(answer.optimal_batch - 1).roofline.roof is Bound.MEMORY
    else:
        assert answer.optimal_batch == answer.max_batch
        assert not at(answer.max_batch + 1).fits
        assert answer.ridge_batch is None or answer.ridge_batch > answer.max_batch
    assert memory_fit(arch, chip, spec).max_batch == answer.max_batch


@given(experts=st.integers(1, 512), data=st.data())
def test_experts_touched_lies_between_k_and_all(experts, data):
    k = data.draw(st.integers(1, experts))
    tokens = data.draw(st.integers(1, 10**6))
    touched = experts_touched(experts, k, tokens)
    assert k - 1e-9 <= touched <= experts + 1e-9
    assert experts_touched(experts, k, tokens + 1) >= touched - 1e-9


@settings(max_examples=100, deadline=None)
@given(
    arch=archs,
    chip=chips,
    phase=st.sampled_from([Phase.DECODE, Phase.PREFILL]),
    batch=batches,
    length=lengths,
    tp=st.sampled_from([1, 2, 8]),
)
def test_an_ideal_pass_is_the_estimate_before_what_software_adds(
    arch, chip, phase, batch, length, *, tp
):
    """What the optimal batch's lines read of a forward pass (its ideal roofline, memory,
    tokens and terms) is the estimate's, to the last bit; only the realistic time differs,
    left at the sustained one."""
    spec = TransformerSpec(phase=phase, batch=batch, seq_len=length, tp=tp)
    full, ideal = estimate(arch, chip, spec), ideal_pass(arch, chip, spec)
    assert (ideal.memory, ideal.tokens, ideal.terms) == (full.memory, full.tokens, full.terms)
    a, b = ideal.roofline, full.roofline
    read = ("flops", "bytes", "peak", "compute_time", "memory_time", "communication_time")
    for name in (*read, "expected_time", "sustained_compute", "sustained_memory"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.realistic_time == a.sustained_time == b.sustained_time
    assert ideal.tokens_per_s == full.tokens_per_s
    assert (ideal.time_to_first_token, ideal.time_per_output_token) == (None, None)


def test_an_ideal_pass_is_a_forward_pass_of_a_valid_spec() -> None:
    for phase in (Phase.GENERATE, Phase.TRAINING):
        with pytest.raises(ValueError, match="prefill or a decode step"):
            ideal_pass(LLAMA_8B, A100, TransformerSpec(phase=phase))
    with pytest.raises(InvalidInput, match="gen_len"):  # validated as the estimate is
        ideal_pass(LLAMA_8B, A100, TransformerSpec(phase=Phase.DECODE, gen_len=0))


def test_a_spec_at_its_own_batch_is_itself() -> None:
    spec = TransformerSpec(phase=Phase.DECODE, batch=8)
    assert spec.with_batch(8) is spec
    assert spec.with_batch(9) == TransformerSpec(phase=Phase.DECODE, batch=9)
