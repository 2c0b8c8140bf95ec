"""Training and fine-tuning: worked examples (arithmetic in the comments) and invariants."""

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import (
    Chip,
    Dtype,
    InvalidInput,
    Kind,
    Phase,
    Software,
    TransformerSpec,
    estimate,
    memory_fit,
)
from app.engine import architecture_from_config as from_config
from app.engine.parallel import ring_allreduce_bytes
from app.engine.published import ATTENTION_PACE, fitted
from app.engine.scaling import ScalingMode, law_speedup, scaling
from app.engine.training import (
    DataParallelAlgorithm,
    Lora,
    LoraTarget,
    Optimizer,
    Parallelism,
    Training,
    layout,
    max_trainable_params,
    state_bytes_per_param,
    trainable,
)
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B, MIXTRAL

LLAMA_8B_PARAMS = 8_030_261_248


def _train(batch: int = 8, seq_len: int = 2048, **training: object) -> TransformerSpec:
    parallel = {k: training.pop(k) for k in list(training) if k in Parallelism.__slots__}
    return TransformerSpec(
        phase=Phase.TRAINING,
        batch=batch,
        seq_len=seq_len,
        training=Training(parallel=Parallelism(**parallel), **training),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("optimizer", "dtype", "per_param"),
    [
        # weights + gradients + state + master: 2 + 2 + 8 + 4 (Adam's two fp32 moments)
        (Optimizer.ADAMW, Dtype.BF16, 16),
        # fp32 Adam: 4 + 4 + 8, no master copy
        (Optimizer.ADAM, Dtype.FP32, 16),
        # SGD with momentum, mixed precision: 2 + 2 + 4 + 4
        (Optimizer.SGD_MOMENTUM, Dtype.BF16, 12),
        # 8-bit Adam: 2 + 2 + 2 (two 8-bit moments) + 4
        (Optimizer.ADAM_8BIT, Dtype.BF16, 10),
        # Adafactor (factored second moment, no momentum): 2 + 2 + 0 + 4
        (Optimizer.ADAFACTOR, Dtype.BF16, 8),
    ],
)
def test_training_state_bytes_per_parameter(optimizer, dtype, per_param):
    grad, state = state_bytes_per_param(optimizer, dtype)
    assert (2 if dtype is Dtype.BF16 else 4) + grad + state == per_param


def test_an_80_gb_chip_holds_the_training_state_of_5b_parameters():
    # mixed-precision Adam: 16 bytes per parameter, so 80e9 / 16 = 5e9 (before activations)
    lay = layout(LLAMA_8B, 1, 8, Parallelism())
    assert max_trainable_params(80e9, lay, Training(), Dtype.BF16) == pytest.approx(5e9)
    # ZeRO-3 over 8 replicas splits all 16 bytes: 8 x 5e9 = 4e10
    sharded = layout(LLAMA_8B, 1, 8, Parallelism(dp=8))
    zero3 = Training(parallel=Parallelism(dp=8, zero=3))
    assert max_trainable_params(80e9, sharded, zero3, Dtype.BF16) == pytest.approx(4e10)
    # ZeRO-1 shards only the 12 bytes of optimizer state: 80e9 / (2 + 2 + 12/8) = 1.4545e10
    zero1 = Training(parallel=Parallelism(dp=8, zero=1))
    assert max_trainable_params(80e9, sharded, zero1, Dtype.BF16) == pytest.approx(80e9 / 5.5)
    # QLoRA stores only the NF4 base: 4.127 bits = 0.515875 bytes per parameter
    qlora = Training(lora=Lora(quantized_base=True))
    assert max_trainable_params(80e9, lay, qlora, Dtype.BF16) == pytest.approx(80e9 / 0.515875)


def test_a_96_gb_chip_trains_about_4b_parameters_once_activations_are_counted():
    # 96e9 bytes, no reserve, 16 bytes per parameter: 6e9 before activations. Llama 3.1 8B's
    # activations at batch 3 x 2048 (flash, no recomputation): 32 layers of S b d (10 + 24)
    # = 32 * 2048 * 3 * 4096 * 34 = 27,380,416,512 bytes, plus fp32 logits 3 * 2048 * 128,256
    # * 4 = 3,152,019,456; held fixed, they leave 65,467,564,032 bytes / 16 = 4.09e9
    # parameters: the ~4B of the usual lecture figure for AdamW on a 96 GB H100.
    chip = replace(H100, memory_bytes=96e9)
    fit = memory_fit(LLAMA_8B, chip, replace(_train(batch=3), reserve_fraction=0.0))
    assert fit.breakdown.activations == 27_380_416_512 + 3_152_019_456
    assert fit.max_trainable_params == pytest.approx(6e9)
    assert fit.max_trainable_params_with_activations == pytest.approx(4_091_722_752)
    # activations beyond the memory leave room for no model at all
    huge = memory_fit(LLAMA_8B, chip, replace(_train(batch=64), reserve_fraction=0.0))
    assert huge.max_trainable_params_with_activations == 0


def test_full_training_memory_of_llama_8b_with_zero_stages():
    # N = 8,030,261,248; 8 data-parallel replicas. Weights 2 N, gradients 2 N, AdamW 12 N.
    n = LLAMA_8B_PARAMS
    expected = {
        0: (2 * n, 2 * n, 12 * n),
        1: (2 * n, 2 * n, 12 * n / 8),
        2: (2 * n, 2 * n / 8, 12 * n / 8),
        3: (2 * n / 8, 2 * n / 8, 12 * n / 8),
    }
    for stage, (weights, gradients, optimizer) in expected.items():
        spec = replace(_train(batch=8, dp=8, zero=stage), reserve_fraction=0.0)
        memory = estimate(LLAMA_8B, H100, spec).memory
        assert (memory.weights, memory.gradients, memory.optimizer) == pytest.approx(
            (weights, gradients, optimizer)
        )


def test_activations_follow_korthikanti_with_recomputation_and_pipelining():
    # b = 1, S = 2048, d = 4096, t = 1, flash attention: per layer S b d (10 + 24) bytes
    # = 2048 * 4096 * 34 = 285,212,672; 32 layers = 9,126,805,504; plus fp32 logits
    # b S V 4 = 2048 * 128256 * 4 = 1,050,673,152.
    logits = 2048 * 128_256 * 4
    plain = estimate(LLAMA_8B, H100, _train(batch=1)).memory.activations
    assert plain == 32 * 2048 * 4096 * 34 + logits
    # full recomputation keeps each layer's input only: 2 S b d per layer
    spec = replace(_train(batch=1), recompute=True)
    assert estimate(LLAMA_8B, H100, spec).memory.activations == 32 * 2 * 2048 * 4096 + logits
    # without flash attention the 5 a S^2 b scores come back: + 5 * 32 * 2048^2 per layer
    spec = replace(_train(batch=1), flash_attention=False)
    scores = 32 * 5 * 32 * 2048**2
    assert estimate(LLAMA_8B, H100, spec).memory.activations == plain + scores
    # 4 pipeline stages, 8 micro-batches of 1: the first stage holds min(4, 8) = 4 micro-batches
    # of its 8 layers, i.e. as many layer-activations as the whole model at pp = 1
    piped = estimate(LLAMA_8B, H100, _train(batch=8, pp=4, micro_batch=1)).memory.activations
    assert piped == plain


def test_lora_trains_a_fraction_and_needs_no_weight_gradients():
    # rank 16 on all seven projections of Llama 3.1 8B, per layer r (in + out):
    # q, o 16 * 8192 each; k, v 16 * 5120 each; gate, up, down 16 * 18432 each = 1,310,720;
    # 32 layers = 41,943,040 (Hugging Face PEFT prints the same for this model)
    spec = _train(batch=8, lora=Lora(rank=16))
    step = estimate(LLAMA_8B, H100, spec).training
    assert step is not None
    assert step.trained_params == 41_943_040
    # FLOPs: the linear layers' forward and input gradients (no weight gradients for frozen
    # weights), 2 x 2 N_mm T = 2 x 2 * 7,504,658,432 * 16,384 = 491,825,294,999,552;
    # attention, which has no weights, its forward A and its whole backward (flash: the
    # scores recomputed, 2.5 A), A = 2 L B S^2 H dh = 2 * 32 * 8 * 2048^2 * 32 * 128
    # = 8,796,093,022,208, x3.5 = 30,786,325,577,728; plus 6 P_lora T for the adapters,
    # 6 * 41,943,040 * 16,384 = 4,123,168,604,160: 526,734,789,181,440 in all
    assert step.roofline.flops == 526_734_789_181_440
    # only q and v: per layer 2 * 16 * 8192... q 131,072 + v 81,920 = 212,992; x 32 = 6,815,744
    qv = Lora(rank=16, targets=(LoraTarget.Q, LoraTarget.V))
    lay = layout(LLAMA_8B, 1, 8, Parallelism())
    assert trainable(LLAMA_8B, Dtype.BF16, lay, qv).trained == 6_815_744


def test_qlora_stores_block_matrices_in_nf4():
    # block matrices 32 * (41,943,040 + 176,160,768) = 6,979,321,856 at 0.515875 bytes, the
    # embedding and lm_head (2 * 525,336,576) and norms (32 * 8192 + 4096) stay in bf16
    lay = layout(LLAMA_8B, 1, 1, Parallelism())
    base = trainable(LLAMA_8B, Dtype.BF16, lay, Lora(quantized_base=True)).base_bytes
    blocks = 6_979_321_856
    assert base == pytest.approx(blocks * 0.515875 + (LLAMA_8B_PARAMS - blocks) * 2)


def test_ring_all_reduce_moves_2_n_p_minus_1_over_p_per_chip():
    assert ring_allreduce_bytes(1e9, 8) == pytest.approx(2 * 1e9 * 7 / 8)
    # Llama 8B on 8 data-parallel H100s in one node: bf16 gradients 2 N = 16,060,522,496 bytes;
    # each chip sends 2 * 7/8 of them = 28,105,914,368 bytes over NVLink's 450 GB/s per
    # direction: 62.46 ms, hidden behind the backward pass
    step = estimate(LLAMA_8B, H100, _train(batch=64, dp=8)).training
    assert step is not None
    comm = step.communication
    assert comm.data_parallel_bytes == pytest.approx(28_105_914_368)
    assert comm.data_parallel == pytest.approx(28_105_914_368 / 450e9)
    assert not comm.data_parallel_over_network
    assert comm.data_parallel_exposed == 0
    # 16 replicas span two 8-chip nodes: the ring runs at the 50 GB/s network per chip
    wide = estimate(LLAMA_8B, H100, _train(batch=64, dp=16, overlap=False)).training
    assert wide is not None
    assert wide.communication.data_parallel_over_network
    sent = 2 * 15 / 16 * 2 * LLAMA_8B_PARAMS
    assert wide.communication.data_parallel == pytest.approx(sent / 50e9)
    assert wide.communication.data_parallel_exposed == wide.communication.data_parallel


def test_parameter_server_and_zero3_traffic():
    # a parameter server receives and sends the 2 N gradient bytes of each of p - 1 workers
    server = estimate(
        LLAMA_8B, H100, _train(batch=8, dp=4, dp_algorithm=DataParallelAlgorithm.PARAMETER_SERVER)
    )
    assert server.training is not None
    grads = 2 * LLAMA_8B_PARAMS
    assert server.training.communication.data_parallel_bytes == pytest.approx(2 * grads * 3)
    # ZeRO-3: reduce-scatter + all-gather forward + all-gather backward = 3 (p-1)/p of them
    zero3 = estimate(LLAMA_8B, H100, _train(batch=8, dp=4, zero=3)).training
    assert zero3 is not None
    assert zero3.communication.data_parallel_bytes == pytest.approx(3 * 3 / 4 * grads)


def test_pipeline_bubble_is_p_minus_1_over_m_plus_p_minus_1():
    # p = 4 stages, 16 micro-batches: 3 / 19 of the step idle, the busy time stretched 19/16
    spec = _train(batch=16, pp=4, micro_batch=1)
    step = estimate(LLAMA_8B, H100, spec).training
    assert step is not None
    assert step.layout.bubble_fraction == pytest.approx(3 / 19)
    roof = step.roofline
    busy = max(roof.compute_time, roof.memory_time)
    assert roof.expected_time == pytest.approx(busy * 19 / 16 + roof.communication_time)


def test_palm_540b_mfu_recomputed_from_its_tokens_per_second():
    # PaLM (Chowdhery et al. 2022, Table 3 and Appendix B): 540B parameters on 6144 TPU v4
    # chips (275 TFLOP/s bf16 each) at 238.3K tokens/s is 46.2% MFU, counting 6 N + 12 L H Q T
    # FLOPs per token. Our count takes causal attention as half the pairs (6 L H Q T):
    # 6 * 540,354,281,472 + 6 * 118 * 48 * 256 * 2048 = 3.2599e12 FLOPs per token, so
    # 3.2599e12 * 238.3e3 / (6144 * 275e12) = 45.98%.
    palm = from_config(
        {
            "model_type": "llama",
            "hidden_size": 18432,
            "num_hidden_layers": 118,
            "num_attention_heads": 48,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "intermediate_size": 73728,
            "vocab_size": 256000,
            "tie_word_embeddings": True,
        }
    )
    tpu_v4 = Chip(
        id="tpu-v4",
        name="TPU v4",
        memory_bytes=32 * 2**30,
        memory_bandwidth=1.2e12,
        matrix_peaks={Dtype.BF16: 275e12},
        vector_peaks={},
        sustained_matrix=1.0,
        sustained_memory=1.0,
        scale_up_bandwidth=300e9,
    )
    spec = replace(_train(batch=1024, seq_len=2048, dp=512), tp=12)
    step = estimate(palm, tpu_v4, spec).training
    assert step is not None
    assert step.layout.chips == 6144
    seconds_per_step = 1024 * 2048 / 238.3e3
    assert step.mfu(seconds_per_step) == pytest.approx(0.4598, abs=5e-4)
    assert step.mfu(seconds_per_step) == pytest.approx(0.462, abs=0.005)


def test_the_realistic_step_pays_for_every_flop_it_runs():
    # The published training runs' ratio is measured against every FLOP a run executes (a
    # recomputing run's fourth pass, a flash kernel's recomputed scores: app/validation), so
    # the realistic step is that ratio times the step's own sustained time. Llama 3.1 8B, 8
    # sequences of 2048 tokens on one H100: the linear layers' forward 2 N_mm B S =
    # 2 * 7,504,658,432 * 16,384 = 245,912,647,499,776, attention's A = 2 L B S^2 H dh =
    # 2 * 32 * 8 * 2048^2 * 32 * 128 = 8,796,093,022,208. Without recomputation 3 passes of
    # the first and 3.5 of the second (FlashAttention's backward recomputes the scores):
    # 768,524,268,077,056 FLOPs; with it 4 and 4.5: 1,023,233,008,599,040, 1.3314x as many.
    # Attention's FLOPs run at the pace its kernels reach (ATTENTION_PACE p = 1.4066), so the
    # sustained time is that of 3 x 245.91e12 + 3.5 p x 8.796e12 = 781.04e12 FLOPs at the
    # sustained rate, 4 x 245.91e12 + 4.5 p x 8.796e12 = 1,039.33e12 with recomputation:
    # 1.3307x the realistic time (before, recomputation left it as it was; only the ideal grew)
    plain = estimate(LLAMA_8B, H100, _train(batch=8)).roofline
    again = estimate(LLAMA_8B, H100, replace(_train(batch=8), recompute=True)).roofline
    assert plain.flops == 768_524_268_077_056
    assert again.flops == 1_023_233_008_599_040
    published = fitted(Kind.TRAINING, Software.TYPICAL, H100.backend)[0].ratio
    pace = ATTENTION_PACE
    linear, attention = 245_912_647_499_776, 8_796_093_022_208
    for roof, (passes, attention_passes) in ((plain, (3, 3.5)), (again, (4, 4.5))):
        assert roof.compute_time > roof.memory_time
        paced = passes * linear + attention_passes * pace * attention
        assert roof.realistic_time == pytest.approx(
            published * roof.compute_time * paced / roof.flops / roof.sustained_compute
        )
    assert again.realistic_time / plain.realistic_time == pytest.approx(1.3307, rel=1e-4)


def test_time_to_train_at_a_given_mfu():
    # 1e12 tokens of Llama 3.1 8B on 512 H100s at 40% MFU, S = 2048:
    # per token 6 N_mm + 6 L S H dh = 6 * 7,504,658,432 + 6 * 32 * 2048 * 32 * 128
    # = 45,027,950,592 + 1,610,612,736 = 46,638,563,328 FLOPs; 1e12 tokens take
    # 4.6639e22 / (512 * 989.4e12 * 0.4) = 230,167 s = 2.664 days
    spec = _train(batch=512, dp=512, mfu=0.4, tokens=1e12)
    result = estimate(LLAMA_8B, H100, spec)
    step = result.training
    assert step is not None
    per_token = 6 * 7_504_658_432 + 6 * 32 * 2048 * 32 * 128
    assert step.model_flops == pytest.approx(per_token * 512 * 2048)
    seconds = step.time_to_train(result.roofline.realistic_time)
    assert seconds is not None
    assert seconds == pytest.approx(per_token * 1e12 / (512 * 989.4e12 * 0.4))
    assert seconds / 86400 == pytest.approx(2.664, abs=1e-3)
    assert step.mfu(result.roofline.realistic_time) == pytest.approx(0.4)


def test_fewest_chips_for_training_grows_tensor_then_pipeline_parallelism():
    # Llama 8B at batch 8 does not fit one 80 GiB H100 (16 N = 128 GB of state alone); the
    # fewest chips that hold it split it 4 ways
    fit = memory_fit(LLAMA_8B, H100, _train(batch=8))
    assert not fit.fits
    assert fit.min_chips == 4
    assert fit.min_chips_layout == {"tp": 4, "pp": 1, "dp": 1, "ep": 1, "cp": 1}
    # with ZeRO-3 over 64 replicas and micro-batches of 1 it fits on its 64 chips
    assert memory_fit(LLAMA_8B, H100, _train(batch=64, dp=64, zero=3, micro_batch=1)).fits


def test_expert_parallelism_splits_routed_experts():
    # Mixtral: 8 experts; ep = 8 puts one expert per chip, dense layers replicated
    one = layout(MIXTRAL, 1, 8, Parallelism())
    eight = layout(MIXTRAL, 1, 8, Parallelism(ep=8))
    full = trainable(MIXTRAL, Dtype.BF16, one, None)
    split = trainable(MIXTRAL, Dtype.BF16, eight, None)
    assert split.expert == pytest.approx(full.expert / 8)
    assert split.dense == full.dense
    # all-to-alls: b = 1 sequence per replica in one micro-batch, 2048 tokens, k = 2, bf16:
    # each sends (8 - 1)/8 of 2048 * 2 * 4096 * 2 = 29,360,128 bytes, dispatch and combine
    # (2) in each of the 2 activation passes (forward, backward) of each of 32 MoE layers:
    # 3,758,096,384 bytes over NVLink's 450 GB/s per direction (tp x ep = 8 chips, one node):
    # 8.351 ms
    step = estimate(MIXTRAL, H100, _train(batch=8, ep=8)).training
    assert step is not None
    assert step.communication.expert == pytest.approx(3_758_096_384 / 450e9, rel=1e-12)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (_train(batch=8, pp=33), "pp"),  # 32 layers (pp = 3 is allowed: stages of 11, 11, 10)
        (_train(batch=8, ep=2), "ep"),  # a dense model
        (_train(batch=6, dp=4), "batch"),
        (_train(batch=8, dp=2, micro_batch=3), "micro_batch"),
        (_train(batch=8, zero=4), "zero"),
        (_train(batch=8, mfu=1.5), "mfu"),
        (_train(batch=8, lora=Lora(rank=0)), "lora_rank"),
    ],
)
def test_bad_training_specs_name_their_field(spec, field):
    with pytest.raises(InvalidInput) as info:
        estimate(LLAMA_8B, H100, spec)
    assert info.value.field == field


def test_amdahl_limit_is_one_over_the_serial_fraction():
    # f = 0.05 serial: speedup 1 / (f + (1 - f) / r) tends to 1 / f = 20 (with p = 1 - f the
    # parallel fraction, the familiar 1 / (1 - p)); Gustafson: f + (1 - f) r
    strong, weak = ScalingMode.STRONG, ScalingMode.WEAK
    assert law_speedup(strong, 0.05, 1, 10) == pytest.approx(1 / (0.05 + 0.95 / 10))  # 6.897
    assert law_speedup(strong, 0.05, 1, 10**6) == pytest.approx(20, rel=1e-4)
    assert law_speedup(weak, 0.05, 1, 10) == pytest.approx(0.05 + 0.95 * 10)  # 9.55


def test_amdahl_over_the_first_count_and_over_one_chip():
    # 8 .. 128 chips at f = 0.02. Over the first count (r = 64 / 8 = 8), f being the serial
    # share of the 8-chip run: 1 / (0.02 + 0.98 / 8) = 1 / 0.1425 = 7.018. Over one chip:
    # 1 / (0.02 + 0.98 / 64) = 1 / 0.0353125 = 28.32; Gustafson over one chip 0.02 + 0.98 * 64
    # = 62.74
    counts = [8, 16, 32, 64, 128]
    assert law_speedup(ScalingMode.STRONG, 0.02, 8, 64) == pytest.approx(7.018, abs=1e-3)
    spec = _train(batch=512, zero=1)
    strong = scaling(LLAMA_8B, H100, spec, counts, mode=ScalingMode.STRONG, serial_fraction=0.02)
    assert strong[3].law_speedup == pytest.approx(1 / 0.1425)
    assert strong[3].law_speedup_vs_one == pytest.approx(1 / 0.0353125)  # 28.32
    assert strong[3].law_speedup_vs_one == pytest.approx(28.32, abs=0.01)
    weak = scaling(LLAMA_8B, H100, spec, counts, mode=ScalingMode.WEAK, serial_fraction=0.02)
    assert weak[3].law_speedup_vs_one == pytest.approx(0.02 + 0.98 * 64)


def test_strong_scaling_loses_efficiency_to_the_network_and_weak_scaling_keeps_it():
    spec = _train(batch=512, zero=1)
    counts = [8, 16, 64, 256]
    strong = scaling(LLAMA_8B, H100, spec, counts, mode=ScalingMode.STRONG, serial_fraction=0)
    assert strong[0].speedup == 1
    assert [p.batch for p in strong] == [512] * 4
    assert strong[-1].efficiency < 0.5
    assert strong[-1].communication_time > 0
    weak = scaling(LLAMA_8B, H100, spec, counts, mode=ScalingMode.WEAK, serial_fraction=0)
    assert [p.batch for p in weak] == [512, 1024, 4096, 16384]
    assert weak[-1].efficiency == pytest.approx(1.0)
    with pytest.raises(InvalidInput) as info:
        scaling(LLAMA_8B, H100, spec, [16, 8], mode=ScalingMode.STRONG, serial_fraction=0)
    assert info.value.field == "chip_counts"


def test_scaling_ignores_a_given_mfu_at_every_count():
    # the curve drops the MFU once for all counts (it would hide the communication that makes
    # scaling sub-linear): a spec pinned at 30% MFU gives the same points as an unpinned one,
    # and each point's step is the unpinned step estimated at that count's dp
    counts = [8, 16, 64]
    pinned = _train(batch=512, zero=1, mfu=0.3)
    unpinned = _train(batch=512, zero=1)
    for mode in ScalingMode:
        curve = scaling(LLAMA_8B, H100, pinned, counts, mode=mode, serial_fraction=0)
        assert curve == scaling(LLAMA_8B, H100, unpinned, counts, mode=mode, serial_fraction=0)
    last = scaling(LLAMA_8B, H100, pinned, counts, mode=ScalingMode.STRONG, serial_fraction=0)[-1]
    at_64 = _train(batch=512, zero=1, dp=64)
    assert last.step_time == estimate(LLAMA_8B, H100, at_64).roofline.realistic_time


@settings(max_examples=40, deadline=None)
@given(
    batch_exp=st.integers(0, 6),
    stage=st.integers(0, 3),
    dp_exp=st.integers(0, 3),
    recompute=st.booleans(),
)
def test_training_invariants(batch_exp, stage, dp_exp, recompute):
    dp = 2**dp_exp
    batch = dp * 2**batch_exp
    spec = replace(_train(batch=batch, dp=dp, zero=stage), recompute=recompute)
    result = estimate(LLAMA_8B, H100, spec)
    roof = result.roofline
    # never below either roofline term
    assert roof.expected_time >= max(roof.compute_time, roof.memory_time)
    assert roof.realistic_time >= roof.expected_time
    # a higher ZeRO stage never needs more memory; a larger batch never less
    if stage < 3:
        higher = estimate(LLAMA_8B, H100, replace(_train(batch=batch, dp=dp, zero=stage + 1)))
        lower = estimate(LLAMA_8B, H100, replace(_train(batch=batch, dp=dp, zero=stage)))
        assert higher.memory.total <= lower.memory.total
    bigger = estimate(LLAMA_8B, H100, replace(spec, batch=2 * batch))
    assert bigger.memory.total >= result.memory.total
    assert bigger.roofline.flops == pytest.approx(2 * roof.flops)
    # strong scaling never beats linear
    step = result.training
    assert step is not None
    assert 0 < step.mfu(roof.expected_time) <= 1


def test_each_micro_batch_moves_the_same_bytes_however_many_are_in_flight():
    """A step's traffic grows by the same amount with each micro-batch: its activations and
    its fp32 logits are written and read once whatever the number in flight (min(p, m) with
    p = 4). Dividing all saved activations by the number in flight had divided the logits
    too, so that past m = 4 Llama 3.1 8B's 1 x 2048 x 128,256 x 4 B = 1.05 GB of logits per
    micro-batch counted as 0.26 GB."""
    traffic = [
        estimate(LLAMA_8B, H100, _train(batch=m, pp=4, micro_batch=1)).roofline.bytes
        for m in range(1, 8)
    ]
    steps = [b - a for a, b in itertools.pairwise(traffic)]
    assert steps == pytest.approx([steps[0]] * len(steps), rel=1e-12)


@pytest.mark.parametrize(
    ("tp", "flash", "activations"),
    [
        # b = 1, S = 2048, d = 4096, a = 32 heads, L = 32, bf16; S b d = 8,388,608.
        # tp = 2, no flash: per layer S b d (10 + 24/2) = 184,549,376 plus the scores
        # 5 a S^2 b / t = 5 * 32 * 2048^2 / 2 = 335,544,320: 520,093,696; x 32 layers =
        # 16,642,998,272; logits b S V 4 / t = 2048 * 128,256 * 4 / 2 = 525,336,576
        (2, False, 17_168_334_848),
        # tp = 4, no flash: S b d (10 + 6) = 134,217,728 + 5 * 32 * 2048^2 / 4 = 167,772,160:
        # 301,989,888 x 32 = 9,663,676,416; logits / 4 = 262,668,288
        (4, False, 9_926_344_704),
        # tp = 2, flash: no scores: 184,549,376 x 32 = 5,905,580,032 + 525,336,576
        (2, True, 6_430_916_608),
    ],
)
def test_attention_scores_are_saved_and_split_over_tensor_parallel_chips(tp, flash, activations):
    spec = replace(_train(batch=1), tp=tp, flash_attention=flash)
    assert estimate(LLAMA_8B, H100, spec).memory.activations == activations
