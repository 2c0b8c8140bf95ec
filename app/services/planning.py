"""Planning a transformer workload: memory per chip and what fits, the optimal batch, and
scaling over chip counts."""

from __future__ import annotations

from typing import Any

from app import engine
from app import formatting as fmt
from app.engine import InvalidInput, Phase
from app.engine.scaling import scaling as scaling_curve
from app.engine.units import GIGA, MILLI
from app.schemas.answers import MemoryBreakdownOut
from app.schemas.planning_answers import MemoryFitAnswer, OptimalBatchAnswer, ScalingAnswer
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
    fit = engine.memory_fit(model.arch, chip, spec_of(model.workload, request.stack))
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
    return MemoryFitAnswer.model_validate(
        {
            **header(resolved, model),
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
