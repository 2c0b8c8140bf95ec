"""Turn validated requests into engine calls and engine results into response bodies."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from app import formatting as fmt
from app.api.catalogs import Catalogs
from app.api.schemas import (
    AttentionWorkload,
    CalculationRequest,
    Check,
    CheckRequest,
    ChipRef,
    CommunicationOut,
    CustomWorkload,
    ElementwiseWorkload,
    ExpectedTime,
    KernelWorkload,
    MatmulWorkload,
    MemoryBreakdownOut,
    MemoryFitAnswer,
    ModelRef,
    OptimalBatchAnswer,
    PeakUsed,
    RepeatsOut,
    RowwiseWorkload,
    SaxpyWorkload,
    ScalingAnswer,
    ScalingRequest,
    ScalingRow,
    SweepRow,
    TrainingFields,
    TrainingOut,
    TransformerWorkload,
)
from app.catalog.loader import ChipCatalogVersion, ChipRecord
from app.engine import (
    Architecture,
    InvalidInput,
    LimitedBy,
    MemoryBreakdown,
    OptimalBatch,
    Precision,
    Roofline,
    RowOp,
    TransformerEstimate,
    TransformerSpec,
    Work,
    architecture_from_config,
    attention,
    custom,
    elementwise,
    estimate,
    judge,
    matmul,
    memory_fit,
    optimal_batch,
    param_counts,
    place,
    pointwise_flops,
    row_op,
    saxpy,
)
from app.engine.compare import summarise_times
from app.engine.scaling import scaling
from app.engine.training import Lora, Parallelism, Training, TrainingStep


@dataclass(frozen=True, slots=True)
class _Resolved:
    catalog: ChipCatalogVersion
    chip: ChipRecord


@dataclass(frozen=True, slots=True)
class _Model:
    ref: ModelRef
    arch: Architecture
    workload: TransformerWorkload  # with defaults filled and the model's id


def _resolve(catalogs: Catalogs, request: CalculationRequest) -> _Resolved:
    catalog = catalogs.chips(request.catalog_version)
    return _Resolved(catalog, catalog.resolve(request.chip))


def _model(catalogs: Catalogs, workload: TransformerWorkload) -> _Model:
    if workload.model is not None:
        record = catalogs.models.resolve(workload.model)
        arch, model_id, name = record.arch, record.entry.id, record.entry.name
    else:
        arch = architecture_from_config(workload.config or {})
        model_id = "custom"
        name = str((workload.config or {}).get("_name_or_path") or "custom architecture")
    counts = param_counts(arch)
    filled = workload.model_copy(
        update={
            "model": model_id if workload.model is not None else None,
            "weight_dtype": workload.weight_dtype or workload.dtype,
            "kv_dtype": workload.kv_dtype or workload.dtype,
        }
    )
    ref = ModelRef(id=model_id, name=name, params_total=counts.total, params_active=counts.active)
    return _Model(ref, arch, filled)


def _training(workload: TransformerWorkload) -> Training:
    lora = None
    if workload.lora_rank is not None:
        lora = Lora(workload.lora_rank, tuple(workload.lora_targets), workload.qlora)
    elif workload.qlora:
        raise InvalidInput("qlora", "QLoRA needs lora_rank (the adapters' rank)")
    return Training(
        optimizer=workload.optimizer,
        parallel=Parallelism(
            dp=workload.dp,
            pp=workload.pp,
            ep=workload.ep,
            micro_batch=workload.micro_batch,
            zero=workload.zero,
            chips_per_node=workload.chips_per_node,
            network_bandwidth=workload.network_bandwidth,
            overlap=workload.overlap,
            dp_algorithm=workload.dp_algorithm,
        ),
        lora=lora,
        mfu=workload.mfu,
        tokens=workload.train_tokens,
    )


def _spec(workload: TransformerWorkload) -> TransformerSpec:
    return TransformerSpec(
        phase=workload.phase,
        batch=workload.batch,
        seq_len=workload.seq_len,
        gen_len=workload.gen_len,
        precision=Precision(
            compute=workload.dtype,
            weights=workload.weight_dtype or workload.dtype,
            kv=workload.kv_dtype or workload.dtype,
        ),
        tp=workload.tp,
        reserve_fraction=workload.reserve_fraction,
        flash_attention=workload.flash_attention,
        recompute=workload.recompute,
        training=_training(workload),
    )


def _kernel(workload: KernelWorkload) -> tuple[Work, KernelWorkload]:
    """The kernel's work, and the workload with its defaults filled in."""
    match workload:
        case MatmulWorkload():
            work = matmul(
                workload.m, workload.n, workload.k, workload.dtype, allow_tf32=workload.allow_tf32
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
                flash=workload.flash,
            )
            return work, workload.model_copy(update={"kv_len": kv_len, "kv_heads": kv_heads})
        case CustomWorkload():
            return custom(workload.flops, workload.bytes, workload.dtype, workload.unit), workload


def _roofline_lines(roof: Roofline) -> list[str]:
    peak = roof.peak
    lines = [
        f"Compute: {fmt.flops(roof.flops)} at the {peak.dtype} {peak.unit} peak of "
        f"{fmt.rate(peak.flops_per_s, 'FLOP/s')} takes {fmt.seconds(roof.compute_time)}.",
        f"Memory: {fmt.bytes_(roof.bytes)} at {fmt.rate(roof.memory_bandwidth, 'B/s')} takes "
        f"{fmt.seconds(roof.memory_time)}.",
        f"Arithmetic intensity {roof.arithmetic_intensity:.3g} FLOP/B vs the ridge "
        f"{roof.ridge_intensity:.3g} FLOP/B: {roof.bound}-bound.",
    ]
    if roof.communication_time:
        lines.append(
            f"Communication (and any pipeline idle) adds {fmt.seconds(roof.communication_time)} "
            "on the critical path."
        )
    lines.append(
        f"Expected (ideal roofline) time {fmt.seconds(roof.expected_time)}; at the chip's "
        f"sustained {roof.sustained_compute:.0%} of peak compute and {roof.sustained_memory:.0%} "
        f"of bandwidth, realistic {fmt.seconds(roof.realistic_time)}."
    )
    return lines


def _memory_line(memory: MemoryBreakdown, capacity: float) -> str:
    parts = [
        f"{name} {fmt.bytes_(value)}"
        for name, value in (
            ("weights", memory.weights),
            ("KV cache", memory.kv_cache),
            ("activations", memory.activations),
            ("gradients", memory.gradients),
            ("optimizer", memory.optimizer),
            ("reserve", memory.reserve),
        )
        if value
    ]
    verdict = "fits" if memory.total <= capacity else "does NOT fit"
    return (
        f"Memory per chip: {' + '.join(parts)} = {fmt.bytes_(memory.total)} of "
        f"{fmt.bytes_(capacity)}: {verdict}."
    )


def _warnings(model: _Model) -> list[str]:
    workload, arch = model.workload, model.arch
    warnings = []
    held = workload.seq_len + (workload.gen_len if workload.phase == "generate" else 0)
    if arch.max_positions and held > arch.max_positions:
        warnings.append(
            f"{held} tokens exceed {model.ref.id}'s max_position_embeddings "
            f"({arch.max_positions}); the model was not trained for that length."
        )
    if workload.phase != "training":
        ignored = list(
            workload.model_dump(include=set(TrainingFields.model_fields), exclude_defaults=True)
        )
        if ignored:
            warnings.append(f"Ignored, as they only apply to phase=training: {', '.join(ignored)}.")
    if arch.attention.heads % workload.tp:
        warnings.append(
            f"tp={workload.tp} does not divide the {arch.attention.heads} attention heads; "
            "Megatron-style sharding needs it to."
        )
    return warnings


def _roofline_fields(roof: Roofline) -> dict[str, object]:
    return {
        "flops": roof.flops,
        "bytes": roof.bytes,
        "arithmetic_intensity": roof.arithmetic_intensity,
        "ridge_intensity": roof.ridge_intensity,
        "peak_flops": roof.peak.flops_per_s,
        "peak": PeakUsed(
            flops_per_s=roof.peak.flops_per_s, dtype=roof.peak.dtype, unit=roof.peak.unit
        ),
        "memory_bandwidth": roof.memory_bandwidth,
        "compute_time_s": roof.compute_time,
        "memory_time_s": roof.memory_time,
        "communication_time_s": roof.communication_time,
        "expected_time_s": roof.expected_time,
        "realistic_time_s": roof.realistic_time,
        "sustained_compute_fraction": roof.sustained_compute,
        "sustained_memory_fraction": roof.sustained_memory,
        "bound": roof.bound,
    }


def _training_out(step: TrainingStep) -> TrainingOut:
    roof, lay, comm = step.roofline, step.layout, step.communication
    realistic_train = step.time_to_train(roof.realistic_time)
    return TrainingOut(
        chips=lay.chips,
        layout={"tp": lay.tp, "dp": lay.dp, "pp": lay.pp, "ep": lay.ep},
        micro_batch=lay.micro_batch,
        micro_batches=lay.micro_batches,
        bubble_fraction=lay.bubble_fraction,
        tokens_per_step=step.tokens_per_step,
        trained_params=step.trained_params,
        model_flops=step.model_flops,
        mfu=step.mfu(roof.expected_time),
        realistic_mfu=step.mfu(roof.realistic_time),
        time_to_train_s=step.time_to_train(roof.expected_time),
        realistic_time_to_train_s=realistic_train,
        realistic_time_to_train_days=None if realistic_train is None else realistic_train / 86400,
        communication=CommunicationOut(
            tensor_parallel_s=comm.tensor_parallel,
            pipeline_s=comm.pipeline,
            expert_s=comm.expert,
            data_parallel_s=comm.data_parallel,
            data_parallel_exposed_s=comm.data_parallel_exposed,
            data_parallel_bytes=comm.data_parallel_bytes,
            data_parallel_over_network=comm.data_parallel_over_network,
        ),
    )


def _training_lines(step: TrainingStep) -> list[str]:
    roof, lay, comm = step.roofline, step.layout, step.communication
    lines = [
        f"{lay.chips} chips (tp={lay.tp} x dp={lay.dp} x pp={lay.pp} x ep={lay.ep}); "
        f"{lay.micro_batches} micro-batch(es) of {lay.micro_batch:g} sequences per replica.",
        f"Model FLOPs per step {fmt.flops(step.model_flops)} (6 N T + attention); "
        f"MFU {step.mfu(roof.expected_time):.0%} at the ideal step time "
        f"{fmt.seconds(roof.expected_time)}, {step.mfu(roof.realistic_time):.0%} at the "
        f"realistic {fmt.seconds(roof.realistic_time)}.",
    ]
    if step.given_mfu is not None:
        lines.append(
            f"The realistic time assumes the given MFU of {step.given_mfu:.0%}, instead of the "
            "chip's sustained fractions."
        )
    if lay.pp > 1:
        lines.append(f"Pipeline bubble: {lay.bubble_fraction:.0%} of the step is idle.")
    if comm.data_parallel:
        where = "the scale-out network" if comm.data_parallel_over_network else "the scale-up link"
        lines.append(
            f"Gradient reduction: {fmt.bytes_(comm.data_parallel_bytes)} per chip over {where}, "
            f"{fmt.seconds(comm.data_parallel)}, of which "
            f"{fmt.seconds(comm.data_parallel_exposed)} is not hidden behind the backward pass."
        )
    days = step.time_to_train(roof.realistic_time)
    if days is not None:
        lines.append(
            f"Training on {step.tokens:.3g} tokens takes {days / 86400:.3g} days (realistic)."
        )
    return lines


def _transformer_fields(result: TransformerEstimate) -> dict[str, object]:
    return {
        "training": None if result.training is None else _training_out(result.training),
        "memory_required_bytes": result.memory.total,
        "memory_available_bytes": result.capacity,
        "fits": result.fits,
        "tokens_per_s": result.tokens_per_s,
        "realistic_tokens_per_s": result.realistic_tokens_per_s,
        "time_to_first_token_s": result.time_to_first_token,
        "time_per_output_token_s": result.time_per_output_token,
    }


def _place(catalogs: Catalogs, request: CalculationRequest) -> tuple[dict[str, Any], Roofline]:
    """The fields of the request's ExpectedTime answer (a Check adds its own), and its roofline."""
    resolved = _resolve(catalogs, request)
    chip = resolved.chip.chip
    common = {
        "catalog_version": resolved.catalog.version,
        "chip": ChipRef(id=chip.id, name=chip.name),
    }
    if isinstance(request.workload, TransformerWorkload):
        model = _model(catalogs, request.workload)
        result = estimate(model.arch, chip, _spec(model.workload))
        roof = result.roofline
        fields = {
            **common,
            "workload": model.workload,
            "model": model.ref,
            "explanation": [
                *_roofline_lines(roof),
                *([] if result.training is None else _training_lines(result.training)),
                _memory_line(result.memory, result.capacity),
            ],
            "warnings": _warnings(model),
            **_roofline_fields(roof),
            **_transformer_fields(result),
        }
        return fields, roof
    work, filled = _kernel(request.workload)
    roof = place(work, chip)
    fields = {
        **common,
        "workload": filled,
        "explanation": _roofline_lines(roof),
        **_roofline_fields(roof),
    }
    return fields, roof


def expected_time(catalogs: Catalogs, request: CalculationRequest) -> ExpectedTime:
    """The roofline time of the request's workload on its chip."""
    return ExpectedTime(**_place(catalogs, request)[0])


def check(catalogs: Catalogs, request: CheckRequest) -> Check:
    """The request's measured time against its roofline: ratio, verdict and advice."""
    fields, roof = _place(catalogs, request)
    repeats = summarise_times(request.measured_seconds)
    judgement = judge(roof, repeats.mean)
    return Check(
        **fields,
        measured_time_s=judgement.measured_time,
        repeats=RepeatsOut.of(repeats),
        ratio=judgement.ratio,
        efficiency=1 / judgement.ratio,
        verdict=judgement.verdict,
        advice=list(judgement.advice),
    )


def _transformer(
    catalogs: Catalogs, request: CalculationRequest, endpoint: str
) -> tuple[_Resolved, _Model]:
    if not isinstance(request.workload, TransformerWorkload):
        raise InvalidInput(
            "kind", f"{endpoint} needs a transformer workload, got {request.workload.kind}"
        )
    return _resolve(catalogs, request), _model(catalogs, request.workload)


def _header(resolved: _Resolved, model: _Model) -> dict[str, Any]:
    """The fields every transformer answer echoes: catalog, chip, workload, model, warnings."""
    chip = resolved.chip.chip
    return {
        "catalog_version": resolved.catalog.version,
        "chip": ChipRef(id=chip.id, name=chip.name),
        "workload": model.workload,
        "model": model.ref,
        "warnings": _warnings(model),
    }


def memory(catalogs: Catalogs, request: CalculationRequest) -> MemoryFitAnswer:
    """Memory per chip of a transformer workload, the largest batch and the fewest chips."""
    resolved, model = _transformer(catalogs, request, "memory-fit")
    chip = resolved.chip.chip
    fit = memory_fit(model.arch, chip, _spec(model.workload))
    explanation = [_memory_line(fit.breakdown, fit.capacity)]
    explanation.append(
        f"Largest batch that fits at this layout: {fit.max_batch}."
        if fit.max_batch
        else "Not even batch 1 fits at this layout."
    )
    explanation.append(
        f"Fewest chips for batch {model.workload.batch}: {fit.min_chips} "
        f"({', '.join(f'{k}={v}' for k, v in (fit.min_chips_layout or {}).items())})."
        if fit.min_chips
        else f"No layout up to tp={model.arch.attention.heads} (the heads) "
        f"fits batch {model.workload.batch}."
    )
    if fit.max_trainable_params is not None:
        explanation.append(
            f"The largest model whose weights and training state fit at this layout, before "
            f"activations: {fit.max_trainable_params / 1e9:.3g}B parameters."
        )
    return MemoryFitAnswer(
        **_header(resolved, model),
        explanation=explanation,
        required_bytes=fit.breakdown.total,
        available_bytes=fit.capacity,
        fits=fit.fits,
        breakdown=MemoryBreakdownOut(**dataclasses.asdict(fit.breakdown)),
        max_batch=fit.max_batch,
        min_chips=fit.min_chips,
        min_chips_layout=fit.min_chips_layout,
        max_trainable_params=fit.max_trainable_params,
    )


def scale(catalogs: Catalogs, request: ScalingRequest) -> ScalingAnswer:
    """Speedup and efficiency of a training step over the request's chip counts."""
    resolved, model = _transformer(catalogs, request, "scaling")
    points = scaling(
        model.arch,
        resolved.chip.chip,
        _spec(model.workload),
        request.chip_counts,
        mode=request.mode,
        serial_fraction=request.serial_fraction,
    )
    f = request.serial_fraction
    last = points[-1]
    explanation = [
        f"{request.mode} scaling from {points[0].chips} to {last.chips} chips: speedup "
        f"{last.speedup:.3g}x at {last.efficiency:.0%} efficiency (from the realistic step "
        "time: sustained fractions plus exposed communication).",
        "Amdahl's law limits strong scaling to 1/f" + (f" = {1 / f:.3g}x." if f else " (f = 0)."),
    ]
    return ScalingAnswer(
        **_header(resolved, model),
        explanation=explanation,
        mode=request.mode,
        serial_fraction=f,
        amdahl_limit=1 / f if f else None,
        points=[
            ScalingRow(
                chips=p.chips,
                dp=p.dp,
                batch=p.batch,
                step_time_s=p.step_time,
                tokens_per_s=p.tokens_per_s,
                speedup=p.speedup,
                efficiency=p.efficiency,
                law_speedup=p.law_speedup,
                communication_time_s=p.communication_time,
                fits=p.fits,
            )
            for p in points
        ],
    )


def best_batch(catalogs: Catalogs, request: CalculationRequest) -> OptimalBatchAnswer:
    """The optimal batch of a transformer workload and the sweep behind it."""
    resolved, model = _transformer(catalogs, request, "optimal-batch")
    chip = resolved.chip.chip
    answer = optimal_batch(model.arch, chip, _spec(model.workload))
    sweep = [
        SweepRow(
            batch=p.batch,
            compute_time_s=p.estimate.roofline.compute_time,
            memory_time_s=p.estimate.roofline.memory_time,
            expected_time_s=p.estimate.roofline.expected_time,
            memory_required_bytes=p.estimate.memory.total,
            fits=p.estimate.fits,
            tokens_per_s=p.estimate.tokens_per_s,
            bound=p.bound,
        )
        for p in answer.sweep
    ]
    return OptimalBatchAnswer(
        **_header(resolved, model),
        explanation=_batch_lines(answer),
        optimal_batch=answer.optimal_batch,
        limited_by=answer.limited_by,
        ridge_batch=answer.ridge_batch,
        max_batch=answer.max_batch,
        throughput_asymptote_tokens_per_s=answer.throughput_asymptote,
        near_asymptote_batch=answer.near_asymptote_batch,
        asymptotic_intensity=answer.asymptotic_intensity,
        ridge_intensity=answer.ridge_intensity,
        sweep=sweep,
    )


def _batch_lines(answer: OptimalBatch) -> list[str]:
    best, ridge, max_batch = answer.optimal_batch, answer.ridge_batch, answer.max_batch
    lines = []
    if ridge is None:
        lines.append(
            "No batch is compute-bound: the memory traffic that grows with the batch (the KV "
            "cache in decode) keeps the arithmetic intensity below the ridge: it tends to "
            f"{answer.asymptotic_intensity:.3g} FLOP/B as the batch grows, against a ridge of "
            f"{answer.ridge_intensity:.3g} FLOP/B."
        )
    else:
        lines.append(f"The smallest compute-bound batch (the ridge) is {ridge}.")
    lines.append(
        f"Memory allows at most batch {max_batch}." if max_batch else "Not even batch 1 fits."
    )
    if best is None:
        lines.append("No batch fits: see /memory-fit for the fewest chips.")
    elif answer.limited_by is LimitedBy.RIDGE:
        lines.append(f"Optimal batch {best}: beyond it throughput stops growing, latency rises.")
    else:
        lines.append(f"Optimal batch {best}: the largest that fits (limited by memory).")
    lines.append(
        f"Throughput tends to {fmt.rate(answer.throughput_asymptote, 'tokens/s')} as the batch "
        f"grows; batch {answer.near_asymptote_batch} reaches 90% of it."
    )
    return lines
