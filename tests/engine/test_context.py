"""The longest context of a decode step (app/engine/context.py) against the memory and the
step time it is the boundary of: at the answer the step fits (and meets the bound), one token
more it does not, over the catalogs' models (sliding windows, MoE, MLA, quantised weights)."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.catalog.loader import load_chip_catalog, load_model_catalog
from app.engine import Dtype, InvalidInput, Phase, Precision, TransformerSpec, estimate
from app.engine.context import MAX_CONTEXT, ContextLimit, max_context, memory_context
from app.engine.workload import memory_needed
from app.settings import Settings
from tests.engine.chips import A100
from tests.engine.models import LLAMA_8B

_SETTINGS = Settings()
MODELS = load_model_catalog(_SETTINGS.model_catalog).models
CHIPS = load_chip_catalog(_SETTINGS.chip_catalog).chips
causal = sorted(name for name, record in MODELS.items() if record.arch.causal)


def _spec_on(chip, **fields):
    """A spec in the chip's compute dtype (bf16; fp16 on a chip without it)."""
    dtype = chip.default_compute_dtype(Dtype.BF16)
    return TransformerSpec(precision=Precision(dtype, dtype, dtype), **fields)


def _fits(arch, chip, spec, context):
    return memory_needed(arch, chip, replace(spec, seq_len=context), spec.batch).fits_in(
        chip.memory_bytes
    )


def test_llama_8b_at_batch_8_on_an_a100_80gb():
    # capacity 80 GiB = 85,899,345,920 B; reserve 10% = 8,589,934,592 B; bf16 weights
    # 2 x 8,030,261,248 = 16,060,522,496 B; workspace 8 x (2 x 4096 + 2 x 14336) x 2 B plus
    # fp32 logits 8 x 128,256 x 4 B = 589,824 + 4,104,192 = 4,694,016 B; KV cache per token of
    # context 8 sequences x 32 layers x 2 (K, V) x 8 heads x 128 x 2 B = 1,048,576 B, for the
    # C + 1 tokens a step holds. Room: 85,899,345,920 - 24,655,151,104 = 61,244,194,816 B
    # = 58,407.4 tokens of cache: C + 1 = 58,407, C = 58,406.
    spec = TransformerSpec(batch=8)
    found = max_context(LLAMA_8B, A100, spec)
    assert found.memory_context == 58_406
    assert (found.max_context, found.limited_by) == (58_406, ContextLimit.MEMORY)
    assert found.model_context == 131_071  # max_position_embeddings 131,072, less the step's
    assert found.step is not None and found.step.fits
    assert not _fits(LLAMA_8B, A100, spec, 58_407)


def test_a_latency_bound_sets_it_where_the_step_is_slower_past_it():
    spec = TransformerSpec(batch=8)
    found = max_context(LLAMA_8B, A100, spec, max_step_time=0.02)
    assert found.limited_by is ContextLimit.LATENCY
    assert found.latency_context == found.max_context < found.memory_context

    def realistic(context):
        return estimate(LLAMA_8B, A100, replace(spec, seq_len=context)).roofline.realistic_time

    assert realistic(found.max_context) <= 0.02 < realistic(found.max_context + 1)


def test_the_models_positions_set_it_where_memory_and_time_allow_more():
    found = max_context(LLAMA_8B, A100, TransformerSpec(batch=1), max_step_time=1.0)
    assert (found.max_context, found.limited_by) == (131_071, ContextLimit.MODEL)
    assert found.memory_context > 131_071
    # the latency search stops at the others' limit, which then sets the context
    assert found.latency_context == 131_071


def test_nothing_fits_is_zero_with_no_step():
    found = max_context(MODELS["llama-3.1-70b"].arch, A100, TransformerSpec())
    assert (found.max_context, found.limited_by, found.step) == (0, ContextLimit.MEMORY, None)


def test_all_sliding_layers_hold_a_window_so_memory_never_runs_out():
    # Mistral 7B v0.1: every layer attends over a 4,096-token window, so the cache stops
    # growing there; its 32,768 positions set the context
    arch = MODELS["mistral-7b-v0.1"].arch
    assert arch.attention.sliding_layers == arch.layers
    found = max_context(arch, A100, TransformerSpec(batch=64))
    assert found.memory_context == MAX_CONTEXT
    assert (found.max_context, found.limited_by) == (32_767, ContextLimit.MODEL)


@pytest.mark.parametrize("phase", [Phase.PREFILL, Phase.GENERATE, Phase.TRAINING])
def test_only_a_decode_step_has_a_longest_context(phase):
    with pytest.raises(InvalidInput) as error:
        max_context(LLAMA_8B, A100, TransformerSpec(phase=phase))
    assert error.value.field == "phase"


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(causal),
    chip=st.sampled_from(sorted(CHIPS)),
    batch=st.sampled_from([1, 3, 8, 64, 1000]),
    tp=st.sampled_from([1, 2, 8]),
)
def test_the_memory_context_is_the_boundary(name, chip, batch, tp):
    arch, hardware = MODELS[name].arch, CHIPS[chip].chip
    spec = _spec_on(hardware, batch=batch, tp=tp)
    found = memory_context(arch, hardware, spec)
    if found:
        assert _fits(arch, hardware, spec, found)
    if found < MAX_CONTEXT:
        assert not _fits(arch, hardware, spec, found + 1)


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(causal),
    chip=st.sampled_from(sorted(CHIPS)),
    batch=st.sampled_from([1, 8, 64]),
    bound_ms=st.sampled_from([5.0, 20.0, 100.0]),
)
def test_the_latency_context_is_the_boundary(name, chip, batch, bound_ms):
    arch, hardware = MODELS[name].arch, CHIPS[chip].chip
    spec, bound = _spec_on(hardware, batch=batch), bound_ms / 1000
    found = max_context(arch, hardware, spec, bound)

    def within(context):
        step = estimate(arch, hardware, replace(spec, seq_len=context))
        return step.roofline.realistic_time <= bound

    assert found.latency_context is not None
    assert found.max_context == min(
        found.memory_context, found.model_context, found.latency_context
    )
    if found.latency_context:
        assert within(found.latency_context)
    if found.latency_context < min(found.memory_context, found.model_context):
        assert not within(found.latency_context + 1)
