"""Validation against published measurements: `python -m app.validation` writes the report.

Each row of validation/measurements.csv is a real, published, measured run (source URL and the
quoted sentence or table row), expressed as a roofcheck workload on a catalog chip. For every
row the report gives the ideal roofline time, the realistic time (sustained fractions of the
catalog), the measured time and their ratios; a measurement faster than the ideal roofline
means a wrong spec or formula and fails the test suite.

How a reported figure becomes a measured time (the workload's FLOPs or bytes divided by the
reported rate, so the time is the one the source measured for that work; a training row's
FLOPs as the source counts them, `quoted_flops`):
  TFLOP/s -> flops / (value * 1e12); GB/s -> bytes / (value * 1e9);
  MFU -> flops / (value * catalog peak); s, ms -> the value itself;
  out_tok/s (generate rows) -> batch * gen_len / value; out_tok/s/chip -> the same over
  value * tp; in_out_tok/s (generate rows whose source divides prompt and generated tokens
  together by the request's time) -> batch * (seq_len + gen_len) / value; tok/s (decode
  rows) -> batch / value, (prefill rows) -> batch * seq_len / value,
  (training rows, all chips together) -> tokens_per_step / value;
  tok/s/chip (training rows) -> tokens_per_step / (chips * value).
Transformer rows (decode, prefill, generate) use the engine's `estimate` on a catalog model.
Training rows are `custom` work of 6 N D FLOPs per step (Kaplan et al. 2020,
https://arxiv.org/abs/2001.08361, eq. 2.1: forward + backward ~ 6 FLOPs per parameter per
token), split evenly over the chips, reading each chip's bf16 weight shard once (2 N / chips
bytes); attention FLOPs are left out, as in the sources' own MFU accounting, except where a
row names the model's layers L, width d and sequence length: then each token's forward adds
causal attention's 2 L d seq FLOPs (Q K^T and the scores times V, 2 d seq each per layer, half
of it masked; Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198, count 4 b s^2 h per
layer unmasked). Every source that names its attention trained with a flash kernel
(FlashAttention in llm-foundry, cuDNN's in MaxText on GPUs, PyTorch's in torchtitan), whose
backward recomputes the scores: 3.5 forwards of attention's FLOPs per step, not 3. A row that
recomputes activations runs the forward twice: 4 passes of the forward's FLOPs instead of 3
(the "HFU" accounting of Chowdhery et al. 2022, https://arxiv.org/abs/2204.02311, appendix B),
4.5 of attention's, as the engine's training step counts them. In a
row narrower than 16 bits (fp8) the attention FLOPs run at the bf16 peak, as the engine's fp8
training step runs them (docs/formulas.md#fp8-training); where the source trained with
FlashAttention-2 or earlier (ATTENTION_KERNELS), they are warp-level MMA, held to the chip's
`warp_mma` share of the peak as an attention row of that kernel is. A training row's step is
the engine's terms (`training_terms`), its sustained time one roofline of them with
attention's FLOPs at the pace published attention kernels reach (`overlapped_busy`), as the
engine's training step's.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from app.catalog.loader import ChipCatalogVersion, ModelCatalogVersion
from app.engine import (
    AttentionKernel,
    Dtype,
    Kind,
    Phase,
    Precision,
    Realism,
    Roofline,
    Software,
    TransformerSpec,
    Work,
    attention,
    estimate,
    matmul,
    memcopy,
    place,
    realize,
    saxpy,
)
from app.engine.breakdown import Term, overlapped_busy
from app.engine.published import KERNEL_KINDS
from app.engine.training import attention_at_wide, attention_passes
from app.engine.transformer import work_of
from app.engine.units import GIGA, TERA, seconds_from_ms
from app.engine.workload import generation, pass_realism

ROOT = Path(__file__).resolve().parent.parent.parent
CSV_PATH = ROOT / "validation" / "measurements.csv"
REPORT_PATH = ROOT / "docs" / "validation.md"
CHART_PATH = ROOT / "docs" / "validation.svg"
PEERS_PATH = ROOT / "validation" / "peers.csv"  # written by validation/run_peers.py
KINDS = {
    "matmul": Kind.MATMUL,
    "attention": Kind.ATTENTION,
    "hbm-copy": Kind.ELEMENTWISE,
    "decode": Kind.DECODE,
    "prefill": Kind.PREFILL,
    "generation": Kind.GENERATE,
    "training": Kind.TRAINING,
}
# The CSV's stacks by the engine profile they are runs of. NIM and NeMo inference serve
# through TensorRT-LLM; NeMo and Megatron-Bridge train with Megatron-Core; gpt-fast decodes
# under torch.compile (reduce-overhead: CUDA graphs) and torchtitan's compiled runs train
# under it. Stacks without an engine profile (lmdeploy, ExLlama, optimum-habana,
# llm-foundry) are typical tuned software. Kernel rows (a single GEMM, attention or copy)
# are typical whatever launched them: a stack changes only their fixed costs, which these
# large kernels do not feel.
PROFILES = {
    "tensorrt-llm": Software.TENSORRT_LLM,
    "nim": Software.TENSORRT_LLM,
    "llama.cpp": Software.LLAMA_CPP,
    "megatron": Software.MEGATRON,
    "megatron-bridge": Software.MEGATRON,
    "megatron-deepspeed": Software.MEGATRON,
    "maxtext": Software.MAXTEXT,
    "gpt-fast": Software.COMPILED,
    "torchtitan-compile": Software.COMPILED,
    "vllm": Software.VLLM,
    "sglang": Software.SGLANG,
    # Hugging Face transformers' `generate` and plain PyTorch, uncompiled: every op
    # dispatched from Python
    "hf-transformers": Software.EAGER,
    "pytorch-eager": Software.EAGER,
}
# Attention by the kernel it ran: FlashAttention-2 issues Ampere's warp-level MMA on every
# chip; FlashAttention-3 and cuDNN use the chip's fastest path. llm-foundry's MPT benchmarks
# train with FlashAttention ("our models use Flash Attention", its benchmarking README of
# 2023, before FlashAttention-3 brought Hopper's asynchronous MMA in 2024): warp-level too, as
# TinyLlama's lit-gpt fork ("flash attention 2", its README).
ATTENTION_KERNELS = {
    "flash-attention-2": AttentionKernel.FLASH_2,
    "llm-foundry": AttentionKernel.FLASH_2,
    "lit-gpt": AttentionKernel.FLASH_2,
}
# NeMo is one name for two stacks: it trains with Megatron-Core and serves through
# TensorRT-LLM.
TRAINING_PROFILES = {"nemo": Software.MEGATRON}
INFERENCE_PROFILES = {"nemo": Software.TENSORRT_LLM}
# Rows whose own figure set a catalog sustained fraction (in-sample: their realistic error
# is zero by construction); the median error is also stated without them. Each tag is part
# of the URL of a catalog source that sets one (tests/test_validation.py checks that every
# such source a row cites is tagged).
CALIBRATION_SOURCES = (
    "maximum-achievable-matmul-flops",
    "torch-performance-test-data/issues/126",  # the A10G's
    "chsasank/device-benchmarks",  # the T4's, A10's, RTX 3090's and RTX 4090's copies
    "BabelStream",
    "gpu-workshop",
)


@dataclass(frozen=True)
class Measurement:
    """One published measurement, as written in the CSV. Its kind, profile and source are
    read once: the cross-validation groups the rows by them thousands of times."""

    id: str
    chip: str
    category: str
    workload: str
    params: dict[str, Any]
    measured: float
    measured_unit: str
    source_url: str
    quote: str
    software: str

    @cached_property
    def kind(self) -> Kind:
        """The kind of work whose published ratio this row informs."""
        return KINDS[self.category]

    @cached_property
    def profile(self) -> Software:
        """The engine's software profile this row's stack belongs to (typical if none; a
        single kernel's, whoever launched it)."""
        if self.kind in KERNEL_KINDS:
            return Software.TYPICAL
        by_phase = TRAINING_PROFILES if self.kind is Kind.TRAINING else INFERENCE_PROFILES
        return by_phase.get(self.software) or PROFILES.get(self.software, Software.TYPICAL)

    @cached_property
    def source(self) -> str:
        """The publication the row comes from (its URL without the fragment)."""
        return self.source_url.split("#", maxsplit=1)[0]

    @property
    def in_sample(self) -> bool:
        """True when this row's source also calibrated the catalog's sustained fractions."""
        return any(tag.lower() in self.source_url.lower() for tag in CALIBRATION_SOURCES)


@dataclass(frozen=True, slots=True)
class Result:
    """A measurement placed on its chip's roofline, realized as `realism` says it runs."""

    row: Measurement
    roofline: Roofline
    realism: Realism
    measured_s: float

    @property
    def kind(self) -> Kind:
        """The kind of work whose published ratio this run informs: the one the engine priced
        it as (its row's category, refined for a pass of fine-grained experts)."""
        return self.realism.kind

    @property
    def measured_over_ideal(self) -> float:
        """>= 1 for every real run; below 1 means a wrong spec or formula."""
        return self.measured_s / self.roofline.expected_time


def load(path: Path = CSV_PATH) -> list[Measurement]:
    """Read the validation set."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            Measurement(
                id=r["id"],
                chip=r["chip"],
                category=r["category"],
                workload=r["workload"],
                params=json.loads(r["params"]),
                measured=float(r["measured"]),
                measured_unit=r["measured_unit"],
                source_url=r["source_url"],
                quote=r["quote"],
                software=r["software"],
            )
            for r in csv.DictReader(fh)
        ]


def work(row: Measurement) -> Work:
    """The roofcheck kernel a row describes (a training row's step: `training_terms`)."""
    p = row.params
    if row.workload == "matmul":
        return matmul(
            p["m"], p["n"], p["k"], Dtype(p["dtype"]), allow_tf32=p.get("allow_tf32", False)
        )
    if row.workload == "attention":
        seq = p["seq"]
        return attention(
            batch=p["batch"],
            heads=p["heads"],
            q_len=seq,
            kv_len=seq,
            head_dim=p["head_dim"],
            dtype=Dtype(p["dtype"]),
            causal=p["causal"],
            implementation=ATTENTION_KERNELS.get(row.software, AttentionKernel.FUSED),
        )
    if row.workload == "copy":
        return memcopy(p["bytes_copied"])
    if row.workload == "triad":  # a = b + s c: saxpy's 2 FLOPs and 3 arrays per element
        return saxpy(p["elements"], Dtype(p["dtype"]))
    raise ValueError(f"{row.id}: unknown workload {row.workload!r}")


def training_terms(row: Measurement) -> tuple[Term, Term, Term]:
    """A training row's step on one chip as the engine's terms: its linear layers' FLOPs,
    its attention's (a fused kernel's: every source trained with one, at the pace its
    kernels reach; warp-level MMA where the stack runs FlashAttention-2 or earlier), its
    bf16 weight shard read once (module docstring)."""
    p = row.params
    linear, attention_flops = training_flops_per_token(p)
    per_chip = p["tokens_per_step"] / p["chips"]
    wide = attention_at_wide(Dtype(p["dtype"]))
    warp = ATTENTION_KERNELS.get(row.software) is AttentionKernel.FLASH_2
    attention_term = Term(
        "attention", 1, flops=attention_flops * per_chip, wide=wide, flash=True, warp=warp
    )
    return (
        Term("linear", 1, flops=linear * per_chip),
        attention_term,
        Term("weights", 1, bytes=2.0 * p["params"] / p["chips"]),
    )


def training_flops_per_token(p: dict[str, Any], *, flash: bool = True) -> tuple[float, float]:
    """A training row's FLOPs per token (module docstring), those of the linear layers and
    those of attention: passes x the forward's 2 N, 3 passes (forward, activation and weight
    gradients: 6 N), 4 with activation recomputation; and, where the row names the model's
    layers and width, causal attention's 2 L d seq x its passes (`attention_passes`: 3.5
    with a `flash` kernel, 4.5 with recomputation)."""
    reads = 3 if p.get("recompute", False) else 2
    attention_flops = 2.0 * float(p.get("layers", 0) * p.get("d_model", 0) * p.get("seq_len", 0))
    linear = (reads + 1) * 2.0 * float(p["params"])
    return linear, attention_passes(reads, flash=flash) * attention_flops


def quoted_flops(row: Measurement, roof: Roofline) -> float:
    """The FLOPs a row's quoted rate (TFLOP/s, MFU) counts: a training row's as its source
    counts them, attention's backward as two forwards whatever kernel ran it (the rows name
    no recomputed scores: MaxText's and Megatron's own accounting); else the roofline's."""
    if row.workload != "training":
        return roof.flops
    p = row.params
    per_chip = float(p["tokens_per_step"]) / float(p["chips"])
    return sum(training_flops_per_token(p, flash=False)) * per_chip


def measured_seconds(row: Measurement, roof: Roofline) -> float:
    """The measured time of the row's work (module docstring)."""
    unit, value = row.measured_unit, row.measured
    if unit == "TFLOP/s":
        return quoted_flops(row, roof) / (value * TERA)
    if unit == "GB/s":
        return roof.bytes / (value * GIGA)
    if unit == "MFU":
        return quoted_flops(row, roof) / (value * roof.peak.flops_per_s)
    if unit == "s":
        return value
    if unit == "ms":
        return seconds_from_ms(value)
    if unit == "out_tok/s":  # a whole generate request: batch x gen_len tokens at this rate
        return float(row.params["batch"] * row.params["gen_len"]) / value
    if unit == "in_out_tok/s":  # a whole generate request: prompt and generated tokens together
        p = row.params
        return float(p["batch"] * (p["seq_len"] + p["gen_len"])) / value
    if unit == "out_tok/s/chip":  # the same, reported per GPU of a tp-way group
        tp = float(row.params["tp"])
        return float(row.params["batch"] * row.params["gen_len"]) / (value * tp)
    if unit == "tok/s":  # decode: batch new tokens per step; prefill: batch x seq_len prompt tokens
        p = row.params
        if row.workload == "training":  # one step's tokens over all the chips together
            return float(p["tokens_per_step"]) / value
        tokens = p["batch"] if p["phase"] == "decode" else p["batch"] * p["seq_len"]
        return float(tokens) / value
    if unit == "tok/s/chip":  # training: one step's tokens over the chips, at this rate per chip
        return float(row.params["tokens_per_step"]) / (float(row.params["chips"]) * value)
    raise ValueError(f"{row.id}: unknown measured_unit {unit!r}")


def _roofline(
    row: Measurement, chips: ChipCatalogVersion, models: ModelCatalogVersion
) -> tuple[Roofline, Realism]:
    chip = chips.resolve(row.chip).chip
    if row.workload == "training":  # the engine's terms, its sustained time as its step's
        terms = training_terms(row)
        step = replace(work_of(terms, Precision(Dtype(row.params["dtype"]))), kind=Kind.TRAINING)
        realism = Realism(Kind.TRAINING, row.profile, step.kernels, backend=chip.backend)
        roof = place(step, chip)
        return realize(roof.with_busy(overlapped_busy(terms, roof, chip)), realism), realism
    if row.workload != "transformer":
        kernel = work(row)
        realism = Realism(kernel.kind, row.profile, kernel.kernels, backend=chip.backend)
        return realize(place(kernel, chip), realism), realism
    p = row.params
    dtype = Dtype(p["dtype"])
    spec = TransformerSpec(
        phase=Phase(p["phase"]),
        batch=p["batch"],
        seq_len=p["seq_len"],
        gen_len=p.get("gen_len", 1),
        precision=Precision(dtype, Dtype(p.get("weights", dtype)), dtype),
        tp=p.get("tp", 1),
        flash_attention=p.get("flash_attention", True),
        software=row.profile,
    )
    arch = models.resolve(p["model"]).arch
    if spec.phase is Phase.GENERATE:
        realism = generation(arch, chip.run_by(spec.software), spec)[2]
    else:
        realism = pass_realism(arch, spec, chip.backend)
    return estimate(arch, chip, spec).roofline, realism


def evaluate(
    rows: list[Measurement], chips: ChipCatalogVersion, models: ModelCatalogVersion
) -> list[Result]:
    """Place every row on its chip's roofline."""
    results = []
    for row in rows:
        roof, realism = _roofline(row, chips, models)
        results.append(Result(row, roof, realism, measured_seconds(row, roof)))
    return results
