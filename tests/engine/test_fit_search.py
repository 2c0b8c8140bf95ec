"""The cheap searches of /memory-fit and /scaling against the brute force they replace.

The fewest-chips search bisects each pp's tps and shares one inference footprint over every
tp; a scaling curve reuses each step's forward pass. The brute forces below are the engine's
former code, kept here: every layout in order with a full `memory_needed`, and one uncached
training estimate per chip count. Answers must match exactly, over the catalogs' models
(MoE, sliding windows, MLA, BERT, quantised weights) and chips.
"""

import itertools
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.catalog.loader import load_chip_catalog, load_model_catalog
from app.engine import (
    Dtype,
    InvalidInput,
    Phase,
    Precision,
    TransformerSpec,
    Unsupported,
    estimate,
    memory_fit,
)
from app.engine.fit import _divisors, _fewest_chips, max_batch, tensor_parallel_degrees
from app.engine.memory import MemoryBreakdown, largest_batch
from app.engine.scaling import ScalingMode, scaling
from app.engine.training import Lora, Parallelism, Training, trainable
from app.engine.training.footprint import micro_batch_activations
from app.engine.workload import memory_needed, training_memory_needed
from app.settings import Settings
from tests.engine.chips import A100, H100
from tests.engine.models import LLAMA_8B

_SETTINGS = Settings()
MODELS = load_model_catalog(_SETTINGS.model_catalog).models
CHIPS = load_chip_catalog(_SETTINGS.chip_catalog).chips
archs = st.sampled_from(sorted(MODELS)).map(lambda name: MODELS[name].arch)
chips = st.sampled_from(sorted(CHIPS)).map(lambda name: CHIPS[name].chip)


def brute_fewest_chips(arch, chip, spec):
    """The former search: every (tp, pp) in order of chips, tp within a node, pp; the first
    whose memory_needed fits."""
    parallel = spec.training.parallel
    training = spec.phase is Phase.TRAINING
    candidates = sorted(
        itertools.product(
            tensor_parallel_degrees(arch), _divisors(arch.layers) if training else [1]
        ),
        key=lambda tp_pp: (tp_pp[0] * tp_pp[1], tp_pp[0] > parallel.chips_per_node, tp_pp[1]),
    )
    for tp, pp in candidates:
        trial = replace(
            spec, tp=tp, training=replace(spec.training, parallel=replace(parallel, pp=pp))
        )
        if memory_needed(arch, chip, trial, trial.batch).total <= chip.memory_bytes:
            if training:
                return {"tp": tp, "pp": pp, "dp": parallel.dp, "ep": parallel.ep, "cp": parallel.cp}
            return {"tp": tp}
    return None


def brute_scaling(arch, chip, spec, counts, mode):
    """The former curve: a full training estimate per count."""
    parallel = spec.training.parallel
    group = spec.tp * parallel.cp * parallel.pp * parallel.ep
    first_dp = counts[0] // group
    rows = []
    for n in counts:
        dp = n // group
        batch = spec.batch if mode is ScalingMode.STRONG else spec.batch // first_dp * dp
        training = replace(spec.training, mfu=None, parallel=replace(parallel, dp=dp))
        result = estimate(arch, chip, replace(spec, batch=batch, training=training))
        rows.append(
            (
                n,
                dp,
                batch,
                result.roofline.realistic_time,
                result.realistic_tokens_per_s,
                result.roofline.communication_time,
                result.fits,
            )
        )
    return rows


def _outcome(f, *args, **kwargs):
    """A call's answer, or the error it raised (the same error must come from both)."""
    try:
        return f(*args, **kwargs)
    except (InvalidInput, Unsupported) as error:
        return type(error), str(error)


inference_specs = st.builds(
    TransformerSpec,
    phase=st.sampled_from([Phase.DECODE, Phase.PREFILL, Phase.GENERATE]),
    batch=st.integers(1, 4096),
    seq_len=st.integers(1, 2**17),
    gen_len=st.integers(1, 4096),
    precision=st.sampled_from(
        [
            Precision(),
            Precision(weights=Dtype.INT4, kv=Dtype.FP8),
            Precision(weights=Dtype.FP8, kv=Dtype.BF16),
            Precision(Dtype.FP16, Dtype.INT8, Dtype.FP16),
        ]
    ),
    reserve_fraction=st.sampled_from([0.0, 0.1, 0.5]),
)

trainings = st.builds(
    Training,
    parallel=st.builds(
        Parallelism,
        dp=st.sampled_from([1, 2, 8]),
        pp=st.sampled_from([1, 2, 4]),
        ep=st.sampled_from([1, 2]),
        cp=st.sampled_from([1, 2]),
        zero=st.integers(0, 3),
        chips_per_node=st.sampled_from([1, 4, 8]),
    ),
    lora=st.one_of(
        st.none(),
        st.builds(Lora, rank=st.sampled_from([8, 64]), quantized_base=st.booleans()),
        st.just(Lora(targets=("gate", "up", "down"))),  # type: ignore[arg-type]
    ),
)

training_specs = st.builds(
    TransformerSpec,
    phase=st.just(Phase.TRAINING),
    batch=st.sampled_from([8, 32, 256, 1024]),
    seq_len=st.integers(1, 2**15),
    tp=st.sampled_from([1, 2, 4]),
    recompute=st.booleans(),
    flash_attention=st.booleans(),
    reserve_fraction=st.sampled_from([0.0, 0.1]),
    training=trainings,
)


@settings(max_examples=300, deadline=None)
@given(arch=archs, chip=chips, spec=st.one_of(inference_specs, training_specs))
def test_the_fewest_chips_are_the_brute_forces(arch, chip, spec):
    expected = _outcome(estimate, arch, chip, spec)
    assume(not isinstance(expected, tuple))  # only what memory_fit answers
    assert _fewest_chips(arch, chip, spec) == brute_fewest_chips(arch, chip, spec)


@settings(max_examples=150, deadline=None)
@given(arch=archs, chip=chips, spec=st.one_of(inference_specs, training_specs))
def test_memory_fit_answers_or_refuses_as_before(arch, chip, spec):
    fit = _outcome(memory_fit, arch, chip, spec)
    validated = _outcome(estimate, arch, chip, spec)
    if isinstance(validated, tuple):
        assert fit == validated
        return
    assert fit.breakdown == memory_needed(arch, chip, spec, spec.batch)
    assert fit.min_chips_layout == brute_fewest_chips(arch, chip, spec)


@pytest.mark.parametrize(
    ("batch", "layout"),
    [
        # Llama 3.1 8B decode at 2,049 tokens held, bf16, A100 80 GiB (85,899,345,920 B) less a
        # 10% reserve: weights 16,060,522,496 B, KV 2 * 32 * 8 * 128 * 2 = 131,072 B a token,
        # 268,566,528 B a sequence. 64 sequences: 16.06e9 + 17.19e9 + workspace fit on one chip
        (64, {"tp": 1}),
        # 256: KV 68.75e9 B; at tp = 2 weights 8.03e9 + KV 34.4e9 fit
        (256, {"tp": 2}),
        # 1024: KV 275e9 B; at tp = 4 weights 4.02e9 + KV 68.75e9 + reserve 8.59e9 fit
        (1024, {"tp": 4}),
        # 4096: KV 1.1e12 B shards at most 8 ways (8 KV heads): 137.5e9 at any tp: none
        (4096, None),
    ],
)
def test_the_fewest_chips_of_llama_8b_decode(batch, layout):
    spec = TransformerSpec(phase=Phase.DECODE, batch=batch, seq_len=2048)
    assert _fewest_chips(LLAMA_8B, A100, spec) == layout == brute_fewest_chips(LLAMA_8B, A100, spec)


def test_a_training_layout_grows_pp_when_tp_alone_would_cross_the_node():
    # Llama 3.1 8B, AdamW bf16, 16 bytes a parameter, batch 64 x 512 tokens with full
    # recomputation, on 80 GiB H100s (85.90e9 B, 8.59e9 of it reserved). At tp = 2: state
    # 2 + 2 + 12 bytes x 4.015e9 = 64.24e9 + activations 17.00e9 > 77.31e9; at 4 chips the
    # state is 32.12e9 and tp 4 (activations 12.79e9) and tp 2 x pp 2 (12.70e9) both fit. tp 4
    # within an 8-chip node comes first; with 2 chips a node it would cross one: tp 2 x pp 2
    spec = TransformerSpec(phase=Phase.TRAINING, batch=64, seq_len=512, recompute=True)
    within = _fewest_chips(LLAMA_8B, H100, spec)
    narrow = replace(spec, training=Training(parallel=Parallelism(chips_per_node=2)))
    across = _fewest_chips(LLAMA_8B, H100, narrow)
    assert within == {"tp": 4, "pp": 1, "dp": 1, "ep": 1, "cp": 1}
    assert across == {"tp": 2, "pp": 2, "dp": 1, "ep": 1, "cp": 1}
    assert (within, across) == (
        brute_fewest_chips(LLAMA_8B, H100, spec),
        brute_fewest_chips(LLAMA_8B, H100, narrow),
    )


counts = st.lists(st.integers(1, 64), min_size=1, max_size=6, unique=True).map(sorted)


@settings(max_examples=120, deadline=None)
@given(
    arch=archs,
    chip=chips,
    spec=training_specs,
    multiples=counts,
    mode=st.sampled_from(list(ScalingMode)),
)
def test_a_scaling_curve_is_the_brute_forces(arch, chip, spec, multiples, mode):
    parallel = spec.training.parallel
    group = spec.tp * parallel.cp * parallel.pp * parallel.ep
    chip_counts = [group * m for m in multiples]
    spec = replace(spec, batch=spec.batch * multiples[0])  # weak scaling splits it dp ways
    points = _outcome(scaling, arch, chip, spec, chip_counts, mode=mode, serial_fraction=0.05)
    expected = _outcome(brute_scaling, arch, chip, spec, chip_counts, mode)
    if isinstance(expected, tuple):
        assert points == expected
        return
    got = [
        (p.chips, p.dp, p.batch, p.step_time, p.tokens_per_s, p.communication_time, p.fits)
        for p in points
    ]
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(arch=archs, chip=chips, spec=training_specs, mfu=st.sampled_from([None, 0.4]))
def test_a_training_step_without_its_breakdown_is_the_same_step(arch, chip, spec, mfu):
    # what a scaling curve computes at each count: every time, byte and memory figure of the
    # step with its terms, only the terms left out (and the same error where one is raised)
    spec = replace(spec, training=replace(spec.training, mfu=mfu))
    full = _outcome(estimate, arch, chip, spec)
    lean = _outcome(estimate, arch, chip, spec, breakdown=False)
    if isinstance(full, tuple):
        assert lean == full
        return
    assert full.terms and full.training.terms
    assert not lean.terms
    assert not lean.training.terms
    assert replace(lean, training=replace(lean.training, terms=full.training.terms)) == replace(
        full, terms=()
    )


@settings(max_examples=150, deadline=None)
@given(arch=archs, chip=chips, spec=training_specs)
def test_a_training_steps_memory_is_that_of_its_layout(arch, chip, spec):
    # the step's parameter share and micro-batch activations are those of its layout, and so
    # is the estimate's memory
    result = _outcome(estimate, arch, chip, spec, breakdown=False)
    assume(not isinstance(result, tuple))
    step, lay, dtype = result.training, result.training.layout, spec.precision.compute
    assert step.params == trainable(arch, dtype, lay, spec.training.lora)
    assert step.activations == micro_batch_activations(
        arch, lay, seq_len=spec.seq_len, dtype=dtype, flash=spec.flash_attention,
        recompute=spec.recompute,
    )  # fmt: skip
    assert result.memory == training_memory_needed(arch, chip, spec, spec.batch, lay)
    assert result.memory == memory_needed(arch, chip, spec, spec.batch)


@settings(max_examples=300, deadline=None)
@given(arch=archs, chip=chips, spec=st.one_of(inference_specs, training_specs))
def test_the_largest_batch_fits_and_the_next_does_not(arch, chip, spec):
    """Whether the closed form decided alone or was checked near a whole number of sequences."""
    assume(not isinstance(_outcome(estimate, arch, chip, spec), tuple))
    batch = largest_batch(lambda b: memory_needed(arch, chip, spec, b), chip.memory_bytes)
    assert batch == 0 or memory_needed(arch, chip, spec, batch).total <= chip.memory_bytes
    assert memory_needed(arch, chip, spec, batch + 1).total > chip.memory_bytes


def test_the_closed_form_is_checked_only_near_a_whole_number_of_sequences():
    asked: list[float] = []

    def memory_at(batch: float) -> MemoryBreakdown:  # 10 B fixed, 3 B a sequence
        asked.append(batch)
        return MemoryBreakdown(weights=10.0, kv_cache=3.0 * batch)

    # room for 5.5 sequences: 5, from the batches 0 and 1 alone
    assert largest_batch(memory_at, 10.0 + 3.0 * 5.5) == 5 and asked == [0.0, 1.0]
    asked.clear()
    # room for exactly 5: the closed form is checked at 5 (fits) and at 6 (does not)
    assert largest_batch(memory_at, 10.0 + 3.0 * 5) == 5 and asked == [0.0, 1.0, 5.0, 6.0]


@settings(max_examples=200, deadline=None)
@given(arch=archs, chip=chips, spec=st.one_of(inference_specs, training_specs))
def test_the_largest_batch_from_an_estimates_memory_at_batch_one_is_the_same(arch, chip, spec):
    """The optimal batch's search hands max_batch its estimate's memory at batch 1."""
    one = _outcome(estimate, arch, chip, spec.with_batch(1))
    assume(not isinstance(one, tuple))
    assert max_batch(arch, chip, spec, one.memory) == max_batch(arch, chip, spec)
    assert one.memory == memory_needed(arch, chip, spec, 1.0)
