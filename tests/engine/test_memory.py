"""Memory terms that a mutation of the engine left unnoticed, each pinned by a worked example
(docs/formulas.md, "Memory" and "Training"): the inference workspace (hidden and MLP
activations of the tokens of a step, fp32 logits), the tokens a generate run holds, LoRA's
adapters, QLoRA's NF4 experts, ZeRO over the expert replicas, the micro-batches in flight,
activations in fp32, the largest trainable model, and the fewest-chips layout.
"""

from dataclasses import replace

import pytest

from app.engine import (
    MLP,
    Architecture,
    Attention,
    Dtype,
    MemoryBreakdown,
    MoE,
    Phase,
    Precision,
    TransformerSpec,
    estimate,
    memory_fit,
)
from app.engine.fit import tensor_parallel_degrees
from app.engine.training import (
    Lora,
    Parallelism,
    Training,
    layout,
    max_trainable_params,
    trainable,
)
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B, MIXTRAL

LLAMA_8B_PARAMS = 8_030_261_248
# Mixtral 8x7B by hand: attention per layer 2 * 4096^2 + 2 * 4096 * 1024 = 41,943,040, router
# 8 * 4096 = 32,768: block matrices 32 * 41,975,808 = 1,343,225,856; one routed expert
# 3 * 4096 * 14,336 = 176,160,768, all 32 * 8 of them 45,097,156,608; embedding and lm_head
# 2 * 32,000 * 4096 = 262,144,000; norms 32 * 2 * 4096 + 4096 = 266,240. Total 46,702,792,704.
MIXTRAL_ROUTED = 45_097_156_608
MIXTRAL_DENSE = 46_702_792_704 - MIXTRAL_ROUTED  # 1,605,636,096


def _train(batch: int = 8, **parallel: object) -> TransformerSpec:
    return TransformerSpec(
        phase=Phase.TRAINING,
        batch=batch,
        seq_len=2048,
        training=Training(parallel=Parallelism(**parallel)),  # type: ignore[arg-type]
    )


# --- inference: the activation workspace and the KV cache held ------------------------------


@pytest.mark.parametrize(
    ("phase", "tp", "activations"),
    [
        # Llama 3.1 8B, batch 1, bf16. Decode processes 1 token: residual and normed hidden
        # states 2 d and gate and up outputs 2 F: (2 * 4096 + 2 * 14,336) * 2 = 73,728 bytes;
        # fp32 logits of the last position 128,256 * 4 = 513,024: 586,752
        (Phase.DECODE, 1, 586_752),
        # the same split over 2 chips: 293,376
        (Phase.DECODE, 2, 293_376),
        # prefill of 1024 tokens: 1024 * 73,728 = 75,497,472 + 513,024 = 76,010,496
        (Phase.PREFILL, 1, 76_010_496),
        # generate's workspace is its prefill's (the larger step)
        (Phase.GENERATE, 1, 76_010_496),
    ],
)
def test_the_inference_workspace_of_llama_8b(phase, tp, activations):
    spec = TransformerSpec(phase=phase, batch=1, seq_len=1024, gen_len=16, tp=tp)
    assert estimate(LLAMA_8B, H100, spec).memory.activations == activations


def test_the_workspace_of_an_moe_counts_k_experts_per_token():
    # Mixtral: every layer is MoE, 2 experts of F = 14,336 per token: MLP width 2 * 14,336 =
    # 28,672. Decode, batch 1: (2 * 4096 + 2 * 28,672) * 2 = 131,072; logits 32,000 * 4 =
    # 128,000: 259,072 bytes
    spec = TransformerSpec(phase=Phase.DECODE, batch=1, seq_len=1024)
    assert estimate(MIXTRAL, H100, spec).memory.activations == 259_072


# d = 64, 2 layers (one dense with F = 128, one MoE with 2 of 4 experts of F = 32 and shared
# experts of F = 96 per token), vocab 100
TINY_SHARED_MOE = Architecture(
    hidden=64,
    layers=2,
    vocab=100,
    attention=Attention(heads=4, kv_heads=4, head_dim=16),
    mlp=MLP(intermediate=128),
    moe=MoE(
        experts=4, experts_per_token=2, expert=MLP(intermediate=32), moe_layers=1, shared=MLP(96)
    ),
)


def test_the_workspace_of_an_moe_counts_its_shared_experts():
    # MLP width: max(dense 128, routed 2 * 32 + shared 96 = 160) = 160. Decode, batch 1, bf16:
    # (2 * 64 + 2 * 160) * 2 = 896; logits 100 * 4 = 400: 1296 bytes (without the shared
    # experts the dense 128 would win: (128 + 256) * 2 + 400 = 1168)
    spec = TransformerSpec(phase=Phase.DECODE, batch=1, seq_len=16)
    assert estimate(TINY_SHARED_MOE, H100, spec).memory.activations == 1296


def test_generate_holds_the_prompt_and_every_generated_token():
    # prompt 1000 + 24 generated = 1024 tokens at the end: 1024 * 131,072 = 134,217,728 bytes
    spec = TransformerSpec(phase=Phase.GENERATE, batch=1, seq_len=1000, gen_len=24)
    assert estimate(LLAMA_8B, H100, spec).memory.kv_cache == 134_217_728


# --- training ---------------------------------------------------------------------------------


def test_lora_adapters_are_stored_beside_the_frozen_base():
    # rank 16 on all seven projections: 41,943,040 adapter parameters. Weights: the bf16 base
    # 2 * 8,030,261,248 = 16,060,522,496 plus the adapters 2 * 41,943,040 = 83,886,080:
    # 16,144,408,576. Gradients 2 * 41,943,040 = 83,886,080; AdamW state and master copy
    # 12 * 41,943,040 = 503,316,480.
    spec = replace(_train(), training=Training(lora=Lora(rank=16)))
    memory = estimate(LLAMA_8B, H100, spec).memory
    assert memory.weights == 16_144_408_576
    assert memory.gradients == 83_886_080
    assert memory.optimizer == 503_316_480


def test_qlora_stores_routed_experts_in_nf4_too():
    # Mixtral's block matrices and routed experts, 1,343,225,856 + 45,097,156,608 =
    # 46,440,382,464, at 4.127 / 8 = 0.515875 bytes: 23,957,432,303.6; embeddings, lm_head and
    # norms 262,410,240 at 2 bytes: 524,820,480. Base: 24,482,252,783.6 bytes
    # (experts left in bf16 would make it 91.4 GB)
    lay = layout(MIXTRAL, 1, 8, Parallelism())
    base = trainable(MIXTRAL, Dtype.BF16, lay, Lora(quantized_base=True)).base_bytes
    assert base == pytest.approx(24_482_252_783.6, rel=1e-12)


def test_zero_shards_routed_experts_over_dp_and_dense_layers_over_dp_times_ep():
    # Mixtral, ep = 2, dp = 2, ZeRO-3, batch 4: dense parameters 1,605,636,096 have
    # dp * ep = 4 replicas; each chip's routed experts, 45,097,156,608 / 2 = 22,548,578,304,
    # are replicated dp = 2 ways.
    # weights = gradients = 2 * 1,605,636,096 / 4 + 2 * 22,548,578,304 / 2
    #   = 802,818,048 + 22,548,578,304 = 23,351,396,352
    # optimizer = 12 * 1,605,636,096 / 4 + 12 * 22,548,578,304 / 2
    #   = 4,816,908,288 + 135,291,469,824 = 140,108,378,112
    spec = _train(batch=4, ep=2, dp=2, zero=3)
    memory = estimate(MIXTRAL, H100, spec).memory
    assert memory.weights == pytest.approx(23_351_396_352, rel=1e-15)
    assert memory.gradients == pytest.approx(23_351_396_352, rel=1e-15)
    assert memory.optimizer == pytest.approx(140_108_378_112, rel=1e-15)


def test_the_first_stage_holds_only_the_micro_batches_there_are():
    # pp = 4 but only m = 2 micro-batches of 1: min(4, 2) = 2 in flight. Per micro-batch the
    # stage's 8 layers save 8 * 2048 * 4096 * 34 = 2,281,701,376 bytes; logits
    # 2048 * 128,256 * 4 = 1,050,673,152: 2 * 2,281,701,376 + 1,050,673,152 = 5,614,075,904
    spec = _train(batch=2, pp=4, micro_batch=1)
    assert estimate(LLAMA_8B, H100, spec).memory.activations == 5_614_075_904


def test_activations_in_fp32_take_twice_korthikantis_16_bit_bytes():
    # b = 1, S = 2048, flash, fp32: per layer 2048 * 4096 * 34 * 4 / 2 = 570,425,344; 32
    # layers 18,253,611,008; logits 2048 * 128,256 * 4 = 1,050,673,152: 19,304,284,160
    fp32 = Precision(compute=Dtype.FP32, weights=Dtype.FP32, kv=Dtype.FP32)
    spec = replace(_train(batch=1), precision=fp32)
    assert estimate(LLAMA_8B, H100, spec).memory.activations == 19_304_284_160


def test_the_largest_trainable_model_counts_every_split():
    # 16 bytes per parameter for bf16 AdamW; tp x pp chips share it: at tp = 2, pp = 4 an
    # 80e9-byte chip holds 80e9 * 8 / 16 = 4e10 parameters' state
    lay = layout(LLAMA_8B, 2, 8, Parallelism(pp=4))
    assert max_trainable_params(80e9, lay, Training(), Dtype.BF16) == pytest.approx(4e10)
    # LoRA stores the bf16 base, 2 bytes, which ZeRO-3 splits over 8 replicas: 0.25 bytes per
    # parameter: 80e9 / 0.25 = 3.2e11; QLoRA's 0.515875 / 8: 80e9 / 0.064484375 = 1.2406e12
    sharded = layout(LLAMA_8B, 1, 8, Parallelism(dp=8))
    zero3 = Parallelism(dp=8, zero=3)
    lora = Training(parallel=zero3, lora=Lora())
    assert max_trainable_params(80e9, sharded, lora, Dtype.BF16) == pytest.approx(3.2e11)
    qlora = Training(parallel=zero3, lora=Lora(quantized_base=True))
    assert max_trainable_params(80e9, sharded, qlora, Dtype.BF16) == pytest.approx(
        80e9 * 8 / 0.515875
    )


def test_the_fewest_chips_keep_tensor_parallelism_within_a_node():
    # Llama 3.1 8B, batch 8, on 80 GiB H100s (85,899,345,920 bytes, 10% reserve 8,589,934,592).
    # Two chips cannot hold 16 N / 2 = 64.2 GB of state plus activations and reserve. Four can,
    # as tp = 4 (79.3 GB), tp = 2 x pp = 2 or pp = 4. With 2 chips per node tp = 4 would leave
    # the node, so tp = 2, pp = 2 is chosen: state 16 N / 4 = 32,121,044,992; activations of
    # 16 layers at b = 8, t = 2: 16 * 8 * 2048 * 4096 * (10 + 12) = 23,622,320,128 and logits
    # 8 * 2048 * 128,256 * 4 / 2 = 4,202,692,608; + reserve = 68,535,992,320 bytes: fits.
    fit = memory_fit(LLAMA_8B, H100, _train(batch=8, chips_per_node=2))
    assert fit.min_chips_layout == {"tp": 2, "pp": 2, "dp": 1, "ep": 1, "cp": 1}
    trial = replace(_train(batch=8), tp=2, training=Training(parallel=Parallelism(pp=2)))
    assert estimate(LLAMA_8B, H100, trial).memory.total == 68_535_992_320
    # with the default 8 chips per node, tp = 4 (the existing test's answer)
    assert memory_fit(LLAMA_8B, H100, _train(batch=8)).min_chips_layout == {
        "tp": 4,
        "pp": 1,
        "dp": 1,
        "ep": 1,
        "cp": 1,
    }


def test_the_tensor_parallel_degrees_are_every_divisor_of_the_heads():
    for heads in [*range(1, 200), 1024, 4095, 4096]:
        arch = replace(LLAMA_8B, attention=replace(LLAMA_8B.attention, heads=heads, kv_heads=1))
        expected = [p for p in range(1, heads + 1) if heads % p == 0]
        assert tensor_parallel_degrees(arch) == expected


def test_memory_fits_a_capacity_it_reaches_exactly():
    # 10 + 5 + 1 = 16 bytes: 16 holds it, 15.999 does not
    memory = MemoryBreakdown(weights=10.0, kv_cache=5.0, reserve=1.0)
    assert memory.fits_in(16.0) and not memory.fits_in(15.999)
