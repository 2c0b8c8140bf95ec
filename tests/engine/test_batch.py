"""The optimal batch: worked examples and the definition's invariants."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Bound, LimitedBy, Phase, TransformerSpec, estimate, optimal_batch
from app.engine.batch import search, smallest_batch
from app.engine.training import Parallelism, Training
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
    """So `optimal_batch` keys its cache by batch 1: whatever batch a request names, the
    uncached search gives the same answer as at batch 1."""
    training = Training(parallel=Parallelism(zero=zero))
    spec = TransformerSpec(phase=phase, seq_len=seq_len, recompute=recompute, training=training)
    uncached = search.__wrapped__
    assert uncached(LLAMA_8B, A100, spec.with_batch(batch)) == uncached(LLAMA_8B, A100, spec)
    assert optimal_batch(LLAMA_8B, A100, spec.with_batch(batch)) == optimal_batch(
        LLAMA_8B, A100, spec
    )
