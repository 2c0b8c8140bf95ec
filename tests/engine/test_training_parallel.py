"""Training across chips: tensor, expert, pipeline and context parallel traffic and layout, each a
worked example with its arithmetic in the comments (docs/formulas.md, "Training")."""

import math
from dataclasses import replace

import pytest

from app.engine import Dtype, InvalidInput, Phase, Precision, TransformerSpec, estimate
from app.engine import architecture_from_config as from_config
from app.engine.training import Lora, Parallelism, Training, layout
from tests.engine.chips import H100
from tests.engine.models import GPT2, LLAMA_8B, MIXTRAL

NVLINK = 450e9  # H100 SXM5: 900 GB/s bidirectional, one direction


def _train(batch: int = 8, seq_len: int = 2048, **training: object) -> TransformerSpec:
    parallel = {k: training.pop(k) for k in list(training) if k in Parallelism.__slots__}
    tp = training.pop("tp", 1)
    recompute = training.pop("recompute", False)
    return TransformerSpec(
        phase=Phase.TRAINING,
        batch=batch,
        seq_len=seq_len,
        tp=tp,  # type: ignore[arg-type]
        recompute=recompute,  # type: ignore[arg-type]
        training=Training(parallel=Parallelism(**parallel), **training),  # type: ignore[arg-type]
    )


def _comm(spec: TransformerSpec, arch=LLAMA_8B):
    step = estimate(arch, H100, spec).training
    assert step is not None
    return step.communication


def test_megatron_all_reduces_four_times_per_layer_six_with_recomputation():
    # Llama 3.1 8B, tp = 8, batch 8 x 2048 in one micro-batch: the activations b S d s
    # = 8 * 2048 * 4096 * 2 = 134,217,728 bytes; a ring all-reduce over 8 sends 2 * 7/8 of them,
    # 234,881,024 bytes. Forward: after attention and after the MLP (2); backward: the input
    # gradients of the same two (2); weight gradients need none: 4 per layer, 32 layers:
    # 128 * 234,881,024 = 30,064,771,072 bytes / 450e9 = 66.81 ms (6 per layer counted 100.2 ms).
    per_allreduce = 2 * 7 / 8 * 8 * 2048 * 4096 * 2
    assert _comm(_train(tp=8)).tensor_parallel == pytest.approx(32 * 4 * per_allreduce / NVLINK)
    assert _comm(_train(tp=8)).tensor_parallel == pytest.approx(0.06681, abs=1e-5)
    # full recomputation repeats the forward, 2 more: 6 per layer, 100.2 ms (8 counted 133.6 ms)
    rc = _comm(_train(tp=8, recompute=True)).tensor_parallel
    assert rc == pytest.approx(32 * 6 * per_allreduce / NVLINK)
    # LoRA trains no base weights but still all-reduces the activations and their gradients
    lora = _comm(_train(tp=8, lora=Lora())).tensor_parallel
    assert lora == pytest.approx(32 * 4 * per_allreduce / NVLINK)
    lora_rc = _comm(_train(tp=8, recompute=True, lora=Lora())).tensor_parallel
    assert lora_rc == pytest.approx(rc)


def test_expert_all_to_alls_dispatch_and_combine_in_each_activation_pass():
    # Mixtral, ep = 8, batch 8: one sequence of 2048 tokens per replica. Each all-to-all sends
    # 7/8 of b S k d s = 2048 * 2 * 4096 * 2 * 7/8 = 29,360,128 bytes; dispatch and combine in
    # the forward and again in the backward: 4 per MoE layer, 32 layers:
    # 128 * 29,360,128 = 3,758,096,384 bytes / 450e9 = 8.351 ms (6 per layer counted 12.53 ms)
    sent = 2048 * 2 * 4096 * 2 * 7 / 8
    assert _comm(_train(ep=8), MIXTRAL).expert == pytest.approx(32 * 4 * sent / NVLINK)
    rc = _comm(_train(ep=8, recompute=True), MIXTRAL).expert
    assert rc == pytest.approx(32 * 6 * sent / NVLINK)  # 12.53 ms (8 counted 16.70 ms)


def test_tensor_parallelism_splits_the_step_flops():
    # the FLOPs per chip are those of tp = 1 split 8 ways
    one = estimate(LLAMA_8B, H100, _train()).roofline.flops
    eight = estimate(LLAMA_8B, H100, replace(_train(), tp=8)).roofline.flops
    assert eight == pytest.approx(one / 8)


LLAMA_405B = from_config(
    {
        "model_type": "llama",
        "hidden_size": 16384,
        "num_hidden_layers": 126,
        "num_attention_heads": 128,
        "num_key_value_heads": 8,
        "intermediate_size": 53248,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    }
)
LLAMA_405B_PARAMS = 405_853_388_800


def test_uneven_pipeline_stages_are_set_by_the_fullest():
    # Llama 3 405B trains its 126 layers over 16 stages (Llama 3 paper, 3.3.2): 14 stages of 8
    # and 2 of 7 (ceil and floor of 7.875). The fullest holds 8 / 126 of the model.
    lay = layout(LLAMA_405B, 8, 16, Parallelism(pp=16, micro_batch=1))
    assert (lay.stage_layers, lay.pipeline_split) == (8, 126 / 8)
    # weights per chip at tp = 8: 2 N * 8/126 / 8 = 6,442,117,283 bytes (an even split, 2 N/128,
    # would be 6,341,459,200); gradients the same, AdamW's 12 bytes six times that
    spec = replace(_train(batch=16, tp=8, pp=16, micro_batch=1), reserve_fraction=0.0)
    result = estimate(LLAMA_405B, H100, spec)
    memory = result.memory
    assert memory.weights == pytest.approx(2 * LLAMA_405B_PARAMS * 8 / 126 / 8)
    assert memory.weights == pytest.approx(6_442_117_283)
    assert memory.optimizer == pytest.approx(6 * memory.weights)
    # the step's FLOPs per chip are the fullest stage's, 8/126 of the tp = 8 chips' share of the
    # model (1/16 of it for an even split); so are its tensor-parallel all-reduces
    one_stage = replace(spec, training=Training(parallel=Parallelism(micro_batch=1)))
    whole = estimate(LLAMA_405B, H100, one_stage)
    assert result.roofline.flops == pytest.approx(whole.roofline.flops * 8 / 126)
    tp_time = _comm(one_stage, LLAMA_405B).tensor_parallel * 8 / 126
    assert _comm(spec, LLAMA_405B).tensor_parallel == pytest.approx(tp_time)


def test_llama_8b_over_3_stages_holds_11_layers_per_chip():
    # 32 layers over 3 stages: 11, 11, 10 (a ValueError before: pp had to divide L). Batch 3 in
    # micro-batches of 1: the first stage holds min(3, 3) = 3 micro-batches of 11 layers of
    # S b d (10 + 24) = 2048 * 4096 * 34 = 285,212,672 bytes: 9,412,018,176, plus one
    # micro-batch's fp32 logits 2048 * 128,256 * 4 = 1,050,673,152: 10,462,691,328 bytes
    activations = estimate(LLAMA_8B, H100, _train(batch=3, pp=3, micro_batch=1)).memory.activations
    assert activations == 3 * 11 * 285_212_672 + 1_050_673_152 == 10_462_691_328
    with pytest.raises(InvalidInput) as info:
        estimate(LLAMA_8B, H100, _train(pp=33))
    assert info.value.field == "pp"


def test_context_parallelism_splits_each_sequence_and_rings_its_keys_and_values():
    # Llama 3.1 8B, one sequence of 8192 tokens over cp = 4 chips: 2048 tokens each.
    spec = replace(_train(batch=1, seq_len=8192, cp=4), reserve_fraction=0.0)
    result = estimate(LLAMA_8B, H100, spec)
    step = result.training
    assert step is not None
    assert step.layout.chips == 4
    # activations per chip are those of 2048 tokens: 32 * 2048 * 4096 * 34 = 9,126,805,504
    # plus fp32 logits 2048 * 128,256 * 4 = 1,050,673,152 (a quarter of 8192 tokens')
    assert result.memory.activations == 32 * 2048 * 4096 * 34 + 2048 * 128_256 * 4
    # ring attention: each chip passes its K and V (8 KV heads x 128, twice: d_kv = 1024 each)
    # to the next, cp - 1 = 3 times per layer: 2 (cp-1)/cp b S d_kv s = 2 * 3/4 * 8192 * 1024
    # * 2 = 25,165,824 bytes per layer in the forward; the backward passes K, V and dK, dV,
    # twice that: 3 x per layer, 32 layers: 2,415,919,104 bytes / 450e9 = 5.369 ms
    per_layer = 2 * 3 / 4 * 8192 * 1024 * 2
    assert step.communication.context_parallel == pytest.approx(32 * 3 * per_layer / NVLINK)
    assert step.communication.context_parallel == pytest.approx(5.369e-3, abs=1e-6)
    # a recomputed forward passes K and V once more: 4 x, 7.158 ms
    rc = _comm(replace(spec, recompute=True)).context_parallel
    assert rc == pytest.approx(32 * 4 * per_layer / NVLINK)
    # the FLOPs are split 4 ways; the 4 chips hold the same weights and all-reduce their
    # gradients like data-parallel replicas: 2 * 3/4 * 2 N = 24,090,783,744 bytes
    whole = estimate(LLAMA_8B, H100, replace(spec, training=Training()))
    assert result.roofline.flops == pytest.approx(whole.roofline.flops / 4)
    assert step.communication.data_parallel_bytes == pytest.approx(2 * 3 / 4 * 2 * 8_030_261_248)


def test_llama_3_405b_long_context_layout():
    # Llama 3 405B at 128K context (Llama 3 paper, Table 4): tp 8, cp 16, pp 16, dp 8:
    # 8 * 16 * 16 * 8 = 16,384 chips; 126 layers over 16 stages of 8 or 7
    lay = layout(LLAMA_405B, 8, 8, Parallelism(cp=16, pp=16, dp=8))
    assert lay.chips == 16_384
    assert (lay.replicas, lay.stage_layers) == (8 * 16, 8)
    with pytest.raises(InvalidInput) as info:
        layout(LLAMA_8B, 1, 8, Parallelism(cp=0))
    assert info.value.field == "cp"


def test_an_fp8_model_all_reduces_its_activations_in_bf16():
    # Llama 3.1 8B decode, batch 8, tp = 8 on H100s (NVLink 450 GB/s per direction): per layer
    # 2 all-reduces of 8 tokens x 4096 x 2 bytes (bf16 even for fp8 compute) = 65,536 bytes,
    # each sending 2 x 7/8 of it; 32 layers: 32 x 2 x 114,688 / 450e9 = 16.31 us
    spec = TransformerSpec(batch=8, tp=8, precision=Precision(Dtype.FP8, Dtype.FP8, Dtype.FP8))
    roof = estimate(LLAMA_8B, H100, spec).roofline
    assert roof.communication_time == pytest.approx(32 * 2 * 2 * 7 / 8 * 65_536 / 450e9)
    bf16 = estimate(LLAMA_8B, H100, TransformerSpec(batch=8, tp=8)).roofline
    assert roof.communication_time == bf16.communication_time


def test_a_regrouped_layout_is_the_layout_at_that_data_parallel_degree():
    # a scaling curve checks the degrees once and regroups the batch at each count: the same
    # layout, and the same errors for dp and the batch's split
    from app.engine.training.layout import regroup  # noqa: PLC0415 (engine-internal)

    parallel = Parallelism(pp=2, micro_batch=2)
    for dp, batch in ((1, 8), (4, 64), (16, 512)):
        assert regroup(LLAMA_8B, 2, batch, parallel, dp) == layout(
            LLAMA_8B, 2, batch, replace(parallel, dp=dp)
        )
    for dp, batch, field in ((4, 6, "batch"), (4, 4, "micro_batch"), (0, 8, "dp")):
        with pytest.raises(InvalidInput) as info:
            regroup(LLAMA_8B, 2, batch, parallel, dp)
        assert info.value.field == field
    # the same layout for any options beside the degrees; another degree, another layout
    again = regroup(LLAMA_8B, 2, 64, replace(parallel, zero=3, overlap=False), 4)
    assert again == regroup(LLAMA_8B, 2, 64, parallel, 4)
    assert regroup(LLAMA_8B, 2, 64, replace(parallel, cp=2), 4).cp == 2
    assert regroup(GPT2, 2, 64, parallel, 4).layers == GPT2.layers == 12


@pytest.mark.parametrize(
    "degrees",  # pp, dp, ep, cp, batch, micro-batch
    [(1, 1, 1, 1, 8, None), (4, 2, 1, 1, 64, 4), (3, 2, 1, 2, 12, 1), (5, 1, 8, 1, 16, 2)],
)
def test_a_layouts_derived_degrees_follow_its_fields_and_its_copies(degrees):
    # they follow the fields, also after a copy with
    # another micro-batch (as a training step's memory at another batch makes)
    pp, dp, ep, cp, batch, micro_batch = degrees
    parallel = Parallelism(dp=dp, pp=pp, ep=ep, cp=cp, micro_batch=micro_batch)
    for lay in (built := layout(MIXTRAL, 2, batch, parallel), replace(built, micro_batch=0.5)):
        m, layers = lay.micro_batches, MIXTRAL.layers
        stage = math.ceil(layers / pp)
        assert (lay.stage_layers, lay.pipeline_split) == (stage, layers / stage)
        assert lay.chips == 2 * dp * pp * ep * cp and lay.replicas == dp * ep * cp
        assert (lay.batch_shares, lay.expert_replicas) == (dp * ep, dp * cp)
        assert (lay.bubble_fraction, lay.in_flight) == ((pp - 1) / (m + pp - 1), min(pp, m))
