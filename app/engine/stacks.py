"""The kinds of work and the software stacks whose published runs the realistic time is
calibrated on (app/engine/realism.py)."""

from __future__ import annotations

from enum import StrEnum


class Software(StrEnum):
    """The software stack that runs the work. `typical` is tuned software as published (the
    default): the median of every published run of the kind of work."""

    TYPICAL = "typical"
    EAGER = "eager"
    COMPILED = "compiled"
    VLLM = "vllm"
    SGLANG = "sglang"
    TENSORRT_LLM = "tensorrt-llm"
    LLAMA_CPP = "llama.cpp"
    MEGATRON = "megatron"
    MAXTEXT = "maxtext"


class Backend(StrEnum):
    """The vendor's software backend a stack runs on, by the chip's vendor: CUDA on NVIDIA,
    ROCm on AMD, Metal on Apple, the Gaudi SynapseAI stack on Intel, XLA on Google's TPUs.
    One stack reaches different shares of the roofline on different backends (its kernels
    are written per backend), so the published-runs table has a stack's own median per
    backend where enough runs of it were published (docs/formulas.md#realistic-time)."""

    NVIDIA = "nvidia"
    AMD = "amd"
    APPLE = "apple"
    INTEL = "intel"
    GOOGLE = "google"


class Kind(StrEnum):
    """Kinds of work whose published runs reach different shares of the sustained roofline."""

    MATMUL = "matmul"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"
    DECODE = "decode"
    PREFILL = "prefill"
    GENERATE = "generate"
    TRAINING = "training"
    CUSTOM = "custom"
    COPY = "copy"  # host <-> device and device copies (app/engine/copies.py)
    # the same passes of models with fine-grained experts (Architecture.fine_grained_experts),
    # whose published runs are a population of their own
    DECODE_FINE_MOE = "decode-fine-moe"
    PREFILL_FINE_MOE = "prefill-fine-moe"
    GENERATE_FINE_MOE = "generate-fine-moe"


# A pass of a model with fine-grained experts is its own kind of work, whose published runs
# set its own ratios; where none were published, those of the kind it refines stand in.
FINE_MOE = {
    Kind.DECODE: Kind.DECODE_FINE_MOE,
    Kind.PREFILL: Kind.PREFILL_FINE_MOE,
    Kind.GENERATE: Kind.GENERATE_FINE_MOE,
}
REFINES = {fine: kind for kind, fine in FINE_MOE.items()}
# A generation is its prefill, then one decode step per new token: each phase's busy time is
# priced by the published runs of its own kind (Realism.phases), and the runs of whole
# generations count among those of their decode steps (app/validation/calibrate.py).
GENERATION_PHASES = {
    Kind.GENERATE: (Kind.PREFILL, Kind.DECODE),
    Kind.GENERATE_FINE_MOE: (Kind.PREFILL_FINE_MOE, Kind.DECODE_FINE_MOE),
}


# The stacks whose 16-bit GEMMs accumulate in fp16, where the chip has a faster fp16-accumulate
# tensor rate (GeForce cards: twice the fp32-accumulate one; docs/formulas.md#accumulation).
# llama.cpp's CUDA backend multiplies fp16 weights (and quantised ones dequantised to fp16)
# through cuBLAS with CUBLAS_COMPUTE_16F on every NVIDIA chip but Volta
# (batched_mul_mat_traits<GGML_TYPE_F16> and ggml_cuda_mul_mat_cublas in
# https://github.com/ggml-org/llama.cpp/blob/00108827d87949b538ad1821f81a6b111827fcda/ggml/src/ggml-cuda/ggml-cuda.cu);
# its bf16 GEMMs use CUBLAS_COMPUTE_32F. Every other stack accumulates in fp32 (PyTorch's
# cuBLAS GEMMs, CUTLASS and TensorRT-LLM's kernels).
FP16_ACCUMULATE = frozenset({Software.LLAMA_CPP})
