"""Planning a transformer workload: memory per chip and what fits (with its dtype options),
the longest context, the optimal batch, and scaling over chip counts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app import engine
from app import formatting as fmt
from app.engine import Architecture, Chip, Dtype, InvalidInput, Phase, TransformerSpec
from app.engine.context import ContextLimit
from app.engine.context import max_context as longest_context
from app.engine.scaling import scaling as scaling_curve
from app.engine.units import GIGA, MILLI, dtype_bytes
from app.schemas.answers import MemoryBreakdownOut
from app.schemas.planning_answers import (
    MaxContextAnswer,
    MemoryFitAnswer,
    OptimalBatchAnswer,
    ScalingAnswer,
)
from app.schemas.planning_requests import MaxContextRequest, MemoryFitRequest
from app.schemas.requests import (
    CalculationRequest,
    OptimalBatchRequest,
    ScalingRequest,
    TransformerWorkload,
)
from app.services.assumptions import ceilings_assumptions, transformer_assumptions
from app.services.catalogs import Catalogs
from app.services.explanations import (
    batch_lines,
    memory_line,
    scaling_unfit_warning,
    warnings_of,
)
from app.services.inputs import ModelInput, Resolved, chip_ref, model_input, resolve, spec_of


def transformer_inputs(
    catalogs: Catalogs, request: CalculationRequest, endpoint: str
) -> tuple[Resolved, ModelInput]:
    if not isinstance(request.workload, TransformerWorkload):
        raise InvalidInput(
            "kind", f"{endpoint} needs a transformer workload, got {request.workload.kind}"
        )
    resolved = resolve(catalogs, request)
    return resolved, model_input(catalogs, request.workload, resolved.chip.chip)


def header(resolved: Resolved, model: ModelInput) -> dict[str, Any]:
    """The fields every transformer answer echoes: catalog, chip, workload, model, warnings,
    assumptions."""
    chip = resolved.chip.chip
    return {
        "catalog_version": resolved.catalog.version,
        "chip": chip_ref(chip),
        "workload": model.workload,
        "model": model.ref,
        "warnings": warnings_of(model),
        "assumptions": [*transformer_assumptions(model.workload), *model.notes],
    }


def memory_fit(catalogs: Catalogs, request: CalculationRequest) -> MemoryFitAnswer:
    """Memory per chip of a transformer workload, the largest batch and the fewest chips."""
    resolved, model = transformer_inputs(catalogs, request, "memory-fit")
    chip = resolved.chip.chip
    spec = spec_of(model.workload, request.stack)
    fit = engine.memory_fit(model.arch, chip, spec)
    options = None
    if isinstance(request, MemoryFitRequest) and request.options:
        options = dtype_options(model.arch, chip, spec, _checkpoint_dtype(catalogs, model))
    explanation = [memory_line(fit.breakdown, fit.capacity)]
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
            f"activations: {fmt.number(fit.max_trainable_params / GIGA)}B parameters."
        )
    if fit.max_trainable_params_with_activations is not None:
        explanation.append(
            f"With this workload's activations ({fmt.bytes_(fit.breakdown.activations)} per chip "
            f"at batch {model.workload.batch} x {model.workload.seq_len} tokens, held fixed): "
            f"{fmt.number(fit.max_trainable_params_with_activations / GIGA)}B parameters."
        )
    fields = header(resolved, model)
    if options is not None:
        explanation.append(_options_line(options))
        fields["assumptions"] += ceilings_assumptions(resolved.measured)  # their realistic times
    return MemoryFitAnswer.model_validate(
        {
            **fields,
            "explanation": explanation,
            "required_bytes": fit.breakdown.total,
            "available_bytes": fit.capacity,
            "fits": fit.fits,
            "breakdown": MemoryBreakdownOut.model_validate(fit.breakdown, from_attributes=True),
            "max_batch": fit.max_batch,
            "min_chips": fit.min_chips,
            "min_chips_layout": fit.min_chips_layout,
            "max_trainable_params": fit.max_trainable_params,
            "max_trainable_params_with_activations": fit.max_trainable_params_with_activations,
            "options": options,
        }
    )


def _checkpoint_dtype(catalogs: Catalogs, model: ModelInput) -> Dtype | None:
    """The dtype the model's published weights are stored in: the catalog's (models.json's
    `checkpoint`), or an inline config's quantised format."""
    if model.workload.model is not None:
        return catalogs.models.resolve(model.workload.model).entry.checkpoint.dtype
    return None if model.arch.quantised is None else model.arch.quantised.dtype


def _unique(dtypes: list[Dtype | None]) -> list[Dtype]:
    return list(dict.fromkeys(d for d in dtypes if d is not None))


def dtype_options(
    arch: Architecture, chip: Chip, spec: TransformerSpec, checkpoint: Dtype | None
) -> list[dict[str, Any]]:
    """The workload with each weight and KV-cache dtype the chip can use: as given, the
    compute dtype, fp8 where the chip has an fp8 matrix peak (its kernels then read it), int8
    and int4 (stored, widened in the kernel: w8a16, w4a16), and for the weights the
    checkpoint's own (2:4 sparse weights stay in the compute dtype: KV-cache options alone).
    Those that fit come first, the fewest fields changed first, then the widest (the least
    precision given up); those that do not fit after, the nearest first."""
    if spec.phase is Phase.TRAINING:
        raise InvalidInput(
            "options", "training keeps weights in the compute dtype: dtype options are inference's"
        )
    given = spec.precision
    fp8 = Dtype.FP8 if Dtype.FP8 in chip.matrix_peaks else None
    narrow = [given.compute, fp8, Dtype.INT8, Dtype.INT4]
    rows = []
    weight_options = [given.weights, *narrow[:1], checkpoint, *narrow[1:]]
    for weights in _unique(weight_options[:1] if given.sparse else weight_options):
        for kv in _unique([given.kv, *narrow]):
            trial = replace(spec, precision=replace(given, weights=weights, kv=kv))
            result = engine.estimate(arch, chip, trial, breakdown=False)
            rows.append(
                {
                    "weight_dtype": weights,
                    "kv_dtype": kv,
                    "changes": [
                        name
                        for name, old, new in (
                            ("weight_dtype", given.weights, weights),
                            ("kv_dtype", given.kv, kv),
                        )
                        if old != new
                    ],
                    "required_bytes": result.memory.total,
                    "fits": result.fits,
                    "expected_time_s": result.roofline.expected_time,
                    "realistic_time_s": result.roofline.realistic_time,
                }
            )

    def order(row: dict[str, Any]) -> tuple[float, ...]:
        if row["fits"]:
            widths = (dtype_bytes(row["weight_dtype"]), dtype_bytes(row["kv_dtype"]))
            return 0, len(row["changes"]), -widths[0], -widths[1]
        return 1, row["required_bytes"]

    return sorted(rows, key=order)  # a stable sort: ties keep the order above


def _options_line(options: list[dict[str, Any]]) -> str:
    best = options[0]
    if not best["fits"]:
        return "No weight and KV-cache dtype the chip can use fits at this layout."
    if not best["changes"]:
        return "The workload fits as given; the options list what each other dtype needs."
    change = ", ".join(f"{name} {best[name]}" for name in best["changes"])
    return (
        f"The smallest change that fits: {change} ({fmt.bytes_(best['required_bytes'])} per "
        f"chip, realistic time {fmt.seconds(best['realistic_time_s'])})."
    )


def max_context(catalogs: Catalogs, request: CalculationRequest) -> MaxContextAnswer:
    """The longest context of a transformer decode step at its batch, layout and dtypes (and
    within its latency bound, if it gives one), what sets it, and the step there."""
    resolved, model = transformer_inputs(catalogs, request, "max-context")
    if "seq_len" in request.workload.model_fields_set:
        raise InvalidInput("seq_len", "max-context finds the context: leave seq_len out")
    chip = resolved.chip.chip
    bound_ms = request.max_tpot_ms if isinstance(request, MaxContextRequest) else None
    bound = None if bound_ms is None else bound_ms * MILLI
    found = longest_context(model.arch, chip, spec_of(model.workload, request.stack), bound)
    step = found.step
    # the workload echoed at the answer (at context 1 where none fits): the step its times are
    at = model.workload.model_copy(update={"seq_len": max(found.max_context, 1)})
    fields = header(resolved, ModelInput(model.ref, model.arch, at, model.notes))
    fields["assumptions"] += ceilings_assumptions(resolved.measured)  # the realistic step time
    reasons = {
        ContextLimit.MEMORY: "does not fit in memory",
        ContextLimit.LATENCY: f"takes the step past {fmt.seconds(bound or 0)}",
        ContextLimit.MODEL: f"is beyond the model's {found.model_context + 1:,} positions",
    }
    reason = reasons[found.limited_by]
    explanation = [
        f"Longest context at batch {at.batch}: {found.max_context:,} tokens (one token more "
        f"{reason})."
        if found.max_context
        else f"No context at batch {at.batch}: even 1 token {reason}.",
        f"Memory allows {found.memory_context:,} tokens; the model's positions "
        f"{found.model_context:,} (the step's own token takes the last position).",
    ]
    if step is not None:
        explanation.append(
            f"The step there: {fmt.seconds(step.roofline.expected_time)} ideal, "
            f"{fmt.seconds(step.roofline.realistic_time)} realistic; "
            + memory_line(step.memory, step.capacity)
        )
    return MaxContextAnswer.model_validate(
        {
            **fields,
            "explanation": explanation,
            "max_context": found.max_context,
            "limited_by": found.limited_by,
            "memory_context": found.memory_context,
            "latency_context": found.latency_context,
            "model_context": found.model_context,
            "max_step_time_s": bound,
            "expected_time_s": None if step is None else step.roofline.expected_time,
            "realistic_time_s": None if step is None else step.roofline.realistic_time,
            "required_bytes": None if step is None else step.memory.total,
            "available_bytes": chip.memory_bytes,
        }
    )


def scaling(catalogs: Catalogs, request: ScalingRequest) -> ScalingAnswer:
    """Speedup and efficiency of a training step over the request's chip counts."""
    resolved, model = transformer_inputs(catalogs, request, "scaling")
    points = scaling_curve(
        model.arch,
        resolved.chip.chip,
        spec_of(model.workload, request.stack),
        request.chip_counts,
        mode=request.mode,
        serial_fraction=request.serial_fraction,
    )
    f = request.serial_fraction
    last, base = points[-1], points[0].chips
    law = "Amdahl's law" if request.mode == "strong" else "Gustafson's law"
    explanation = [
        f"{request.mode} scaling from {points[0].chips} to {last.chips} chips: speedup "
        f"{fmt.number(last.speedup)}x at {last.efficiency:.0%} efficiency (from the realistic step "
        "time: sustained fractions plus exposed communication).",
        "Amdahl's law limits strong scaling to 1/f"
        + (f" = {fmt.number(1 / f)}x." if f else " (f = 0)."),
        f"{law} at f = {fmt.number(f, 6)} over the {base} chips of the first count (f the "
        f"serial share of that run): {fmt.number(last.law_speedup)}x at {last.chips} chips; "
        f"over one chip: {fmt.number(last.law_speedup_vs_one)}x.",
    ]
    fields = header(resolved, model)
    fields["warnings"] += scaling_unfit_warning(points, resolved.chip.chip.memory_bytes)
    # the curve is of realistic step times, which start from the ceilings
    fields["assumptions"] += ceilings_assumptions(resolved.measured)
    # the rows as plain data: pydantic-core validates them with the answer, in one call
    return ScalingAnswer.model_validate(
        {
            **fields,
            "explanation": explanation,
            "mode": request.mode,
            "serial_fraction": f,
            "base_chips": base,
            "amdahl_limit": 1 / f if f else None,
            "points": [
                {
                    "chips": p.chips,
                    "dp": p.dp,
                    "batch": p.batch,
                    "step_time_s": p.step_time,
                    "tokens_per_s": p.tokens_per_s,
                    "speedup": p.speedup,
                    "efficiency": p.efficiency,
                    "law_speedup": p.law_speedup,
                    "law_speedup_vs_one": p.law_speedup_vs_one,
                    "communication_time_s": p.communication_time,
                    "fits": p.fits,
                }
                for p in points
            ],
        }
    )


def _step_bound(request: CalculationRequest, phase: Phase) -> float | None:
    """The latency bound in seconds, refused where it does not apply: the time per output
    token bounds a decode step, the time to first token a prefill."""
    if not isinstance(request, OptimalBatchRequest):
        return None
    for name, applies in (("max_tpot_ms", Phase.DECODE), ("max_ttft_ms", Phase.PREFILL)):
        if getattr(request, name) is not None and phase is not applies:
            raise InvalidInput(name, f"bounds {applies} batches; this workload's phase is {phase}")
    # at most one applies to any phase, so at most one is left here
    bound = request.max_tpot_ms or request.max_ttft_ms
    return None if bound is None else bound * MILLI


def optimal_batch(catalogs: Catalogs, request: CalculationRequest) -> OptimalBatchAnswer:
    """The optimal batch of a transformer workload (within its latency bound, if it gives one)
    and the sweep behind it."""
    resolved, model = transformer_inputs(catalogs, request, "optimal-batch")
    chip = resolved.chip.chip
    bound = _step_bound(request, model.workload.phase)
    answer = engine.optimal_batch(model.arch, chip, spec_of(model.workload, request.stack), bound)
    # the rows as plain data: pydantic-core validates them with the answer, in one call
    sweep = [
        {
            "batch": p.batch,
            "compute_time_s": p.compute_time,
            "memory_time_s": p.memory_time,
            "expected_time_s": p.expected_time,
            "realistic_time_s": p.realistic_time,
            "memory_required_bytes": p.memory_required,
            "fits": p.fits,
            "tokens_per_s": p.tokens_per_s,
            "bound": p.bound,
        }
        for p in answer.sweep
    ]
    return OptimalBatchAnswer.model_validate(
        dict(
            **header(resolved, model),
            explanation=batch_lines(answer),
            optimal_batch=answer.optimal_batch,
            limited_by=answer.limited_by,
            ridge_batch=answer.ridge_batch,
            max_batch=answer.max_batch,
            max_step_time_s=bound,
            latency_batch=answer.latency_batch,
            throughput_asymptote_tokens_per_s=answer.throughput_asymptote,
            near_asymptote_batch=answer.near_asymptote_batch,
            asymptotic_intensity=answer.asymptotic_intensity,
            ridge_intensity=answer.ridge_intensity,
            sweep=sweep,
        )
    )
