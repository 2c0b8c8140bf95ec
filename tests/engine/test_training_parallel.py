"""Training across chips: tensor, expert, pipeline and context parallel traffic and layout, each a
worked example with its arithmetic in the comments (docs/formulas.md, "Training")."""

from dataclasses import replace

import pytest

from app.engine import Phase, TransformerSpec, estimate
from app.engine.training import Lora, Parallelism, Training
from tests.engine.chips import H100
from tests.engine.models import LLAMA_8B, MIXTRAL

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


def test_training_other_than_the_collectives_is_unchanged_by_tp():
    # the FLOPs of the step are those of tp = 1 split 8 ways
    one = estimate(LLAMA_8B, H100, _train()).roofline.flops
    eight = estimate(LLAMA_8B, H100, replace(_train(), tp=8)).roofline.flops
    assert eight == pytest.approx(one / 8)
