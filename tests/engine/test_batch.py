"""The optimal batch: worked examples and the definition's invariants."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.engine.batch as batch_module
from app.engine import (
    Bound,
    LimitedBy,
    Phase,
    TransformerSpec,
    estimate,
    optimal_batch,
)
from app.engine.batch import Line, search, smallest_batch
from app.engine.training import Parallelism, Training
from app.engine.workload import MAX_BATCH, ideal_pass
from tests.engine.chips import A100
from tests.engine.models import LLAMA_8B, MIXTRAL


def test_llama_8b_short_context_decode_on_a100_turns_compute_bound_at_batch_184():
    # Per sequence and step at C = 128: compute (2 N_mm + 4 L C H dh) / peak
    #   = (15,009,316,864 + 67,108,864) / 312e12 = 48.322 us
    # KV read and written: (128 + 1) * 131,072 B / 2.039e12 B/s = 8.292 us
    # weights streamed once per step: 15,009,849,344 B / 2.039e12 = 7,361.4 us
    # ridge: B * 48.322 >= 7,361.4 + B * 8.292  ->  B >= 183.9  ->  184
    spec = TransformerSpec(phase=Phase.DECODE, seq_len=128)
    answer = optimal_batch(LLAMA_8B, A100, spec)
    assert answer.ridge_batch == 184
    assert answer.optimal_batch == 184
    assert answer.limited_by is LimitedBy.RIDGE
    at = {p.batch: p for p in answer.sweep}
    assert at[184].bound is Bound.COMPUTE
    assert estimate(LLAMA_8B, A100, spec.with_batch(183)).roofline.bound is Bound.MEMORY


def test_llama_8b_at_2048_context_has_no_compute_bound_batch_and_is_memory_limited():
    # Per sequence: compute 51.55 us < KV traffic (2048 + 1) * 131,072 B / 2.039e12 = 131.7 us,
    # so the intensity never reaches the ridge. Memory (80 GiB = 85.90e9 B):
    # reserve 10% 8.590e9 + weights 8,030,261,248 * 2 = 16.061e9; per sequence the KV cache
    # 2049 * 131,072 = 268.57e6 + workspace (2*4096 + 2*14336) * 2 + 128,256 * 4 = 586,752
    # -> (85.899e9 - 8.590e9 - 16.061e9) / 269.157e6 = 227.6 -> 227 sequences.
    # Throughput tends to 2.039e12 / 268.57e6 = 7,592 tokens/s; 90% of it at
    # B = 9 * 15.0098e9 / 268.57e6 = 503.
    answer = optimal_batch(LLAMA_8B, A100, TransformerSpec(phase=Phase.DECODE, seq_len=2048))
    assert answer.ridge_batch is None
    assert answer.limited_by is LimitedBy.MEMORY
    assert answer.optimal_batch == answer.max_batch == 227
    assert answer.throughput_asymptote == pytest.approx(7592, rel=1e-3)
    assert answer.near_asymptote_batch in (503, 504)
    assert [p.batch for p in answer.sweep] == sorted({p.batch for p in answer.sweep})


def test_a_model_too_big_for_the_chip_has_no_optimal_batch():
    # Mixtral 8x7B in bf16: 46.7e9 params * 2 = 93.4 GB > 80 GiB
    answer = optimal_batch(MIXTRAL, A100, TransformerSpec())
    assert answer.optimal_batch is None
    assert answer.max_batch == 0
    assert answer.limited_by is LimitedBy.MEMORY


def test_smallest_batch_bisects_a_monotone_predicate():
    calls = []

    def predicate(b):
        calls.append(b)
        return b >= 10**7

    assert smallest_batch(predicate) == 10**7
    assert len(calls) < 50  # bisection, not a scan
    assert smallest_batch(lambda b: False) is None


def test_smallest_batch_finds_every_threshold():
    for threshold in (1, 2, 3, 5, 8, 9, 1000, 1023, 1024, 1025):
        assert smallest_batch(threshold.__le__, upper=4096) == threshold
    assert smallest_batch(lambda b: b >= 4096, upper=4096) == 4096


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(2, 10**7),
    phase=st.sampled_from(list(Phase)),
    seq_len=st.sampled_from([128, 2048, 32768]),
    recompute=st.booleans(),
    zero=st.sampled_from([0, 3]),
)
def test_the_requested_batch_does_not_change_the_search(
    batch: int, phase: Phase, seq_len: int, recompute: bool, zero: int
) -> None:
    """Whatever batch a request names, the search gives the same answer as at batch 1."""
    training = Training(parallel=Parallelism(zero=zero))
    spec = TransformerSpec(phase=phase, seq_len=seq_len, recompute=recompute, training=training)
    assert search(LLAMA_8B, A100, spec.with_batch(batch)) == search(LLAMA_8B, A100, spec)
    assert optimal_batch(LLAMA_8B, A100, spec.with_batch(batch)) == optimal_batch(
        LLAMA_8B, A100, spec
    )


@settings(max_examples=200, deadline=None)
@given(
    threshold=st.integers(1, 5000),
    guess=st.one_of(st.none(), st.integers(-5, 6000)),
)
def test_a_guess_never_changes_the_answer(threshold: int, guess: int | None) -> None:
    """Right, wrong, or out of range: the guess only saves evaluations."""
    calls: list[int] = []

    def predicate(b: int) -> bool:
        calls.append(b)
        return b >= threshold

    assert smallest_batch(predicate, upper=4096, guess=guess) == (
        threshold if threshold <= 4096 else None
    )
    if guess == threshold <= 4096:
        assert len(calls) <= 2  # checked at the guess and one below


def test_the_guesses_come_from_lines_through_batches_one_and_two():
    # compute(b) = 1 + 2 (b - 1), memory(b) = 10 + 0.5 (b - 1): compute >= memory from
    # 2 (b - 1) - 0.5 (b - 1) >= 9, b - 1 >= 6, b = 7
    compute, memory = Line(1.0, 2.0), Line(10.0, 0.5)
    assert compute.first_above(memory) == 7
    assert memory.first_above(compute) == 1  # already above at batch 1
    assert Line(1.0, 0.5).first_above(memory) is None  # never: it grows no faster
    assert memory.scaled(2.0) == Line(20.0, 1.0)


def test_a_dense_decode_search_evaluates_the_engine_twice_whatever_the_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Llama 3.1 8B decoding on an A100: ridge 184 and 90% of the asymptote at 163 at 128
    tokens of context (the worked example above) come from lines through the forward passes
    at batch 1 and at MAX_BATCH, and so does every row of the sweep: two evaluations, at any
    context or batch, where bisecting and sweeping took about twenty. The lines need no
    realistic times: both are ideal passes, and no estimate is made."""
    passes: list[int] = []
    estimates: list[int] = []

    def counted(calls: list[int], function: Any) -> Any:
        def call(arch: Any, chip: Any, spec: TransformerSpec) -> Any:
            calls.append(spec.batch)
            return function(arch, chip, spec)

        return call

    monkeypatch.setattr(batch_module, "ideal_pass", counted(passes, ideal_pass))
    monkeypatch.setattr(batch_module, "estimate", counted(estimates, estimate))
    answer = search(LLAMA_8B, A100, TransformerSpec(phase=Phase.DECODE, seq_len=128))
    assert (answer.ridge_batch, answer.near_asymptote_batch) == (184, 163)
    assert (sorted(passes), estimates) == ([1, MAX_BATCH], [])
    for context in (1, 2048, 10**7):
        passes.clear()
        search(LLAMA_8B, A100, TransformerSpec(phase=Phase.PREFILL, seq_len=context))
        assert (sorted(passes), estimates) == ([1, MAX_BATCH], [])


def test_a_step_time_bound_applies_to_a_decode_step_or_a_prefill_only() -> None:
    for phase in (Phase.GENERATE, Phase.TRAINING):
        with pytest.raises(ValueError, match="decode step or a prefill"):
            optimal_batch(LLAMA_8B, A100, TransformerSpec(phase=phase), max_step_time=1.0)
