"""Requests turned into the engine's inputs: the chip and catalog version, the model's
architecture, the transformer spec, a kernel's work."""

from __future__ import annotations

from dataclasses import dataclass

from app.catalog.loader import ChipCatalogVersion, ChipRecord
from app.engine import (
    Architecture,
    Chip,
    Dtype,
    InvalidInput,
    Phase,
    Precision,
    RowOp,
    Software,
    TransformerSpec,
    Work,
    architecture_from_config,
    attention,
    custom,
    dtype_bytes,
    elementwise,
    matmul,
    param_counts,
    pointwise_flops,
    row_op,
    saxpy,
)
from app.engine.architecture import Quantised
from app.engine.ops import chain_evaluations
from app.engine.training import Lora, Parallelism, Training
from app.schemas.answers import ChipRef, ModelRef
from app.schemas.kernel_bodies import (
    AttentionWorkload,
    CustomWorkload,
    ElementwiseWorkload,
    RowwiseWorkload,
    SaxpyWorkload,
)
from app.schemas.requests import (
    CalculationRequest,
    KernelWorkload,
    MatmulWorkload,
    TransformerWorkload,
)
from app.services.catalogs import Catalogs
from app.services.profiles import MeasuredCeilings, measured_ceilings

DEFAULT_DTYPE = TransformerSpec().precision.compute  # where the chip has it (bf16)


@dataclass(frozen=True, slots=True)
class Resolved:
    catalog: ChipCatalogVersion
    chip: ChipRecord
    measured: MeasuredCeilings | None = None  # with ceilings=empirical


@dataclass(frozen=True, slots=True)
class ModelInput:
    ref: ModelRef
    arch: Architecture
    workload: TransformerWorkload  # with defaults filled and the model's id
    notes: tuple[str, ...] = ()  # assumptions the defaults made


def resolve(catalogs: Catalogs, request: CalculationRequest) -> Resolved:
    """The request's catalog version and chip, with the ceilings it asked for."""
    catalog = catalogs.chips(request.catalog_version)
    record = catalog.resolve(request.chip)
    if request.ceilings == "datasheet":
        return Resolved(catalog, record)
    if catalogs.profiles is None:
        raise InvalidInput("ceilings", "empirical ceilings are read from the database")
    row = catalogs.profiles(record.entry.id)
    if row is None:
        raise InvalidInput(
            "ceilings",
            f"no profile is stored for {record.entry.id}: run `roofcheck probe --submit "
            f"{record.entry.id}` on it, or use ceilings=datasheet",
        )
    measured = measured_ceilings(record, row)
    return Resolved(catalog, measured.record, measured)


def model_input(catalogs: Catalogs, workload: TransformerWorkload, chip: Chip) -> ModelInput:
    if workload.model is not None:
        record = catalogs.models.resolve(workload.model)
        arch, model_id, name = record.arch, record.entry.id, record.entry.name
    else:
        arch = architecture_from_config(workload.config or {})
        model_id = "custom"
        name = str((workload.config or {}).get("_name_or_path") or "custom architecture")
    counts = param_counts(arch)
    preferred = DEFAULT_DTYPE
    dtype = workload.dtype or chip.default_compute_dtype(preferred)
    notes: tuple[str, ...] = ()
    if dtype != (workload.dtype or preferred):
        notes = (f"dtype {dtype} by default: {chip.id} has no {preferred} matrix peak",)
    weights = workload.weight_dtype or dtype
    if workload.weight_dtype is None and (checkpoint := _checkpoint(arch, workload, dtype)):
        weights = checkpoint.dtype
        notes = (*notes, _checkpoint_note(name, checkpoint, dtype))
    filled = workload.model_copy(
        update={
            "model": model_id if workload.model is not None else None,
            "dtype": dtype,
            "weight_dtype": weights,
            "kv_dtype": workload.kv_dtype or dtype,
        }
    )
    ref = ModelRef(id=model_id, name=name, params_total=counts.total, params_active=counts.active)
    return ModelInput(ref, arch, filled, notes)


def _checkpoint(
    arch: Architecture, workload: TransformerWorkload, dtype: Dtype
) -> Quantised | None:
    """The checkpoint's format where an inference keeps its weights in it: narrower than the
    compute dtype (training holds them in the compute dtype)."""
    q = arch.quantised
    if q is None or workload.phase is Phase.TRAINING:
        return None
    return q if dtype_bytes(q.dtype) < dtype_bytes(dtype) else None


def _checkpoint_note(name: str, checkpoint: Quantised, dtype: Dtype) -> str:
    which, rest = (
        ("its routed experts", "the other weights")
        if checkpoint.experts_only
        else ("its blocks' linear weights", "embeddings, lm_head and norms")
    )
    return (
        f"weights {checkpoint.dtype} by default: {name}'s checkpoint stores {which} in it; "
        f"{rest} in the compute dtype ({dtype})"
    )


def chip_ref(chip: Chip) -> ChipRef:
    """The chip an answer names."""
    return ChipRef(id=chip.id, name=chip.name)


def training_of(workload: TransformerWorkload) -> Training:
    """The engine's training options of a transformer workload: its TrainingFields."""
    w = workload
    lora = None
    if w.lora_rank is not None:
        lora = Lora(w.lora_rank, tuple(w.lora_targets), w.qlora)
    elif w.qlora:
        raise InvalidInput("qlora", "QLoRA needs lora_rank (the adapters' rank)")
    return Training(
        optimizer=w.optimizer,
        parallel=Parallelism(
            dp=w.dp,
            pp=w.pp,
            ep=w.ep,
            cp=w.cp,
            micro_batch=w.micro_batch,
            zero=w.zero,
            chips_per_node=w.chips_per_node,
            network_bandwidth=w.network_bandwidth,
            overlap=w.overlap,
            dp_algorithm=w.dp_algorithm,
        ),
        lora=lora,
        mfu=w.mfu,
        tokens=w.train_tokens,
    )


def spec_of(workload: TransformerWorkload, software: Software) -> TransformerSpec:
    """The engine's spec of a transformer workload (filled by `model_input`) on `software`."""
    if workload.dtype is None:
        raise ValueError("spec_of needs the workload model_input filled")
    return TransformerSpec(
        phase=workload.phase,
        batch=workload.batch,
        seq_len=workload.seq_len,
        gen_len=workload.gen_len,
        precision=Precision(
            compute=workload.dtype,
            weights=workload.weight_dtype or workload.dtype,
            kv=workload.kv_dtype or workload.dtype,
            sparse=workload.sparsity is not None,
        ),
        tp=workload.tp,
        reserve_fraction=workload.reserve_fraction,
        flash_attention=workload.flash_attention,
        recompute=workload.recompute,
        training=training_of(workload),
        software=software,
    )


def kernel_evaluations(workload: KernelWorkload) -> dict[str, int]:
    """The transcendental functions a kernel evaluates (counts by function): an elementwise
    chain's named ops over its elements (unless it was given FLOPs per element of its own,
    which replace the engine's count), a softmax's exp per element; none elsewhere."""
    match workload:
        case ElementwiseWorkload(ops=list() as names):
            own = workload.flops_per_element
            if own is not None and own != pointwise_flops(names):
                return {}
            return chain_evaluations(names, workload.n)
        case RowwiseWorkload(kind="softmax"):
            return chain_evaluations(["softmax"], workload.rows * workload.cols)
    return {}


def kernel_work(workload: KernelWorkload) -> tuple[Work, KernelWorkload]:
    """The kernel's work, and the workload with its defaults filled in."""
    match workload:
        case MatmulWorkload():
            work = matmul(
                workload.m,
                workload.n,
                workload.k,
                workload.dtype,
                allow_tf32=workload.allow_tf32,
                sparse=workload.sparsity is not None,
            )
            return work, workload
        case ElementwiseWorkload():
            if isinstance(workload.ops, list):
                names: list[str] | None = workload.ops
                count = len(workload.ops)
            else:
                names, count = None, workload.ops
            per_element = workload.flops_per_element
            if per_element is None and names is not None:
                per_element = float(pointwise_flops(names))
            if count == 0:
                raise InvalidInput("ops", "needs at least one op")
            work = elementwise(
                workload.n,
                workload.dtype,
                ops=count,
                flops_per_element=per_element,
                fused=workload.fused,
                inputs=workload.inputs,
            )
            return work, workload.model_copy(update={"flops_per_element": work.flops / workload.n})
        case SaxpyWorkload():
            return saxpy(workload.n, workload.dtype), workload
        case RowwiseWorkload():
            work = row_op(RowOp(workload.kind), workload.rows, workload.cols, workload.dtype)
            return work, workload
        case AttentionWorkload():
            kv_len = workload.kv_len or workload.q_len
            kv_heads = workload.kv_heads or workload.heads
            work = attention(
                batch=workload.batch,
                heads=workload.heads,
                q_len=workload.q_len,
                kv_len=kv_len,
                head_dim=workload.head_dim,
                dtype=workload.dtype,
                kv_heads=kv_heads,
                causal=workload.causal,
                implementation=workload.kernel,
            )
            return work, workload.model_copy(update={"kv_len": kv_len, "kv_heads": kv_heads})
        case CustomWorkload():
            return custom(workload.flops, workload.bytes, workload.dtype, workload.unit), workload
