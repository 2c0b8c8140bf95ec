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
