"""Extreme inputs (batch to 10^9, lengths to 10^8, tiny and huge chips): the engine raises
its documented errors or answers with finite numbers, never NaN, infinity or a crash."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import (
    Dtype,
    EngineError,
    Phase,
    TransformerSpec,
    estimate,
    memory_fit,
    optimal_batch,
)
from app.engine.hardware import Chip
from tests.engine.models import GPT2, LLAMA_8B, MIXTRAL

EXTREME = settings(max_examples=200, deadline=None)


@st.composite
def chips(draw: st.DrawFn) -> Chip:
    """From a microcontroller-sized device (1 MB, 1 MB/s, 1 MFLOP/s) to beyond any made."""
    rate = draw(st.floats(1e6, 1e19))
    return Chip(
        id="extreme",
        name="extreme",
        memory_bytes=draw(st.floats(1e6, 1e15)),
        memory_bandwidth=draw(st.floats(1e6, 1e16)),
        matrix_peaks={Dtype.BF16: rate, Dtype.FP16: rate},
        vector_peaks={Dtype.FP32: rate / draw(st.floats(1, 64))},
        sustained_matrix=draw(st.floats(0.01, 1)),
        sustained_memory=draw(st.floats(0.01, 1)),
        scale_up_bandwidth=draw(st.floats(1e6, 1e13)),
    )


specs = st.builds(
    TransformerSpec,
    phase=st.sampled_from(list(Phase)),
    batch=st.integers(1, 10**9),
    seq_len=st.integers(1, 10**8),
    gen_len=st.integers(1, 10**8),
    tp=st.sampled_from([1, 2, 8]),
)
archs = st.sampled_from([GPT2, LLAMA_8B, MIXTRAL])


def finite(*values: float) -> bool:
    return all(math.isfinite(v) and v >= 0 for v in values)


@EXTREME
@given(arch=archs, chip=chips(), spec=specs)
def test_estimate_is_finite_or_a_documented_error(arch, chip, spec):
    try:
        answer = estimate(arch, chip, spec)
    except EngineError as error:  # InvalidInput / Unsupported: the API's 422
        assert str(error)
        return
    roof = answer.roofline
    assert finite(roof.flops, roof.bytes, roof.compute_time, roof.memory_time)
    assert finite(roof.expected_time, roof.realistic_time, answer.memory.total)
    assert roof.expected_time > 0


@EXTREME
@given(arch=archs, chip=chips(), spec=specs)
def test_batch_answers_are_finite_or_a_documented_error(arch, chip, spec):
    try:
        fit = memory_fit(arch, chip, spec)
        best = optimal_batch(arch, chip, spec)
    except EngineError as error:
        assert str(error)
        return
    assert fit.max_batch >= 0
    assert best.max_batch == fit.max_batch
    assert best.optimal_batch is None or 1 <= best.optimal_batch <= max(fit.max_batch, 1)
