"""The expected time of a workload on a chip, and a measured time judged against it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.engine import (
    Architecture,
    Chip,
    Kind,
    Phase,
    Precision,
    Roofline,
    Software,
    TransformerEstimate,
    TransformerSpec,
    Work,
    estimate,
    fitted,
    judge,
    place_kernel,
)
from app.engine.cache import cache_roof_time
from app.engine.compare import summarise_times
from app.engine.fit import max_batch
from app.engine.fusion import OpsEstimate
from app.engine.stacks import GENERATION_PHASES
from app.engine.workload import work_kind
from app.schemas.answers import (
    Check,
    ExpectedTime,
    PeakUsed,
    RepeatsOut,
    WhatIfOut,
)
from app.schemas.copy_bodies import CopyWorkload
from app.schemas.input_pipeline_bodies import InputPipelineWorkload
from app.schemas.kernel_bodies import ElementwiseWorkload
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.requests import (
    CalculationRequest,
    CheckRequest,
    KernelWorkload,
    MatmulWorkload,
    TransformerWorkload,
)
from app.services import input_answers as fed
from app.services.assumptions import (
    accumulation_lines,
    assumptions,
    ceilings_assumptions,
    sparsity_lines,
)
from app.services.catalogs import Catalogs
from app.services.copy_answers import copy_facts, copy_lines, copy_roofline
from app.services.explanations import (
    memory_line,
    roofline_lines,
    training_lines,
    unfit_warning,
    warnings_of,
)
from app.services.inputs import (
    chip_ref,
    kernel_evaluations,
    kernel_work,
    model_input,
    resolve,
    spec_of,
)
from app.services.op_sequences import estimate_of, ops_fields, ops_lines
from app.services.transformer_fields import transformer_fields
from app.services.what_if import (
    Alternative,
    kernel_alternatives,
    ops_alternatives,
    transformer_alternatives,
)
from app.services.work_advice import (
    BestChange,
    Chain,
    Decode,
    Gemm,
    Scores,
    Training,
    WorkFacts,
    score_bytes,
    work_lines,
)

BREAKDOWN_WARNING = [
    "breakdown: given for prefill, decode and training steps; ask for generate's prefill and "
    "decode phases one at a time"
]


def _roofline_fields(roof: Roofline, kind: Kind, stack: Software, chip: Chip) -> dict[str, object]:
    """The answer's roofline figures, and `chip`'s cache roof where the work fits in it; the
    published runs named are those of a generation's decode steps (its prefill's are in its
    `assumptions`)."""
    steps = GENERATION_PHASES.get(kind, (kind, kind))[1]
    published, used, on = fitted(steps, stack, chip.backend)
    return {
        "stack": stack,
        "published_stack": used,
        "published_backend": on,
        "published_runs": published.runs,
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
        "realistic_range_s": [roof.realistic_low, roof.realistic_high],
        "sustained_time_s": roof.sustained_time,
        "overhead_time_s": roof.overhead_time,
        "kernels": roof.kernels,
        "sustained_compute_fraction": roof.sustained_compute,
        "sustained_memory_fraction": roof.sustained_memory,
        "bound": roof.bound,
        "cache_roof_time_s": cache_roof_time(roof, chip),
    }


@dataclass(frozen=True, slots=True)
class _Placed:
    """The fields of a request's ExpectedTime answer (a Check adds its own), its roofline,
    for an `ops` workload its operators' estimate, the facts its advice names, and with
    what_if its alternatives, ranked."""

    fields: dict[str, Any]
    roof: Roofline
    ops: OpsEstimate | None = None
    facts: WorkFacts | None = None
    alternatives: list[Alternative] | None = None
    fits: bool | None = None  # in the chip's memory; None where no memory figure applies
    chip: Chip | None = None
    precision: Precision | None = None  # a model's dtypes, which its advice narrows


def _what_if(roof: Roofline, alternatives: list[Alternative] | None) -> dict[str, object]:
    if alternatives is None:
        return {}
    return {
        "what_if": [
            WhatIfOut(
                change=a.change,
                key=a.key,
                expected_time_s=a.roofline.expected_time,
                realistic_time_s=a.roofline.realistic_time,
                speedup=a.speedup(roof),
                work_scale=a.work_scale,
                fits=a.fits,
            )
            for a in alternatives
        ]
    }


def _transformer_facts(
    arch: Architecture, result: TransformerEstimate, spec: TransformerSpec, chip: Chip
) -> WorkFacts | None:
    if result.training is not None:
        return Training(result.training, spec.training.parallel.overlap, spec.recompute)
    if spec.phase is Phase.PREFILL:
        scores = score_bytes(result)
        return Scores(scores) if scores else None
    if spec.phase is not Phase.DECODE:
        return None
    return Decode.of(result, spec, chip, max_batch(arch, chip, spec))


def _kernel_facts(workload: KernelWorkload, work: Work, chip: Chip) -> WorkFacts | None:
    if isinstance(workload, MatmulWorkload):
        return Gemm(work, chip)
    if isinstance(workload, ElementwiseWorkload):
        fused = (
            work if workload.fused else kernel_work(workload.model_copy(update={"fused": True}))[0]
        )
        ideal = place_kernel(fused, chip, evaluations=kernel_evaluations(workload)).expected_time
        return Chain(work.kernels, workload.fused, ideal, workload.dtype)
    return None


def _place(catalogs: Catalogs, request: CalculationRequest) -> _Placed:
    """The request's workload on its chip (`_Placed`)."""
    resolved = resolve(catalogs, request)
    chip = resolved.chip.chip
    common = {
        "catalog_version": resolved.catalog.version,
        "chip": chip_ref(chip),
        "ceilings": request.ceilings,
    }
    if isinstance(request.workload, TransformerWorkload):
        model = model_input(catalogs, request.workload, chip)
        spec = spec_of(model.workload, request.stack)
        result, feeding = fed.feed(model.workload, estimate(model.arch, chip, spec), chip)
        roof = result.roofline
        kind = work_kind(model.arch, model.workload.phase)
        alternatives = (
            fed.alternatives(transformer_alternatives(model.arch, chip, spec, result), feeding)
            if request.what_if
            else None
        )
        fields = {
            **common,
            "workload": model.workload,
            "model": model.ref,
            "explanation": [
                *roofline_lines(roof),
                *([] if result.training is None else training_lines(result.training)),
                *fed.feeding_lines(feeding),
                memory_line(result.memory, result.capacity),
            ],
            "warnings": [
                *unfit_warning(result.memory, result.capacity),
                *warnings_of(model),
                *(BREAKDOWN_WARNING if request.breakdown and not result.terms else []),
            ],
            "assumptions": [
                *assumptions(model.workload, kind, request.stack, chip.backend, roof),
                *fed.feeding_assumptions(feeding),
                *sparsity_lines(model.workload, chip.run_by(request.stack), roof),
                *accumulation_lines(chip, request.stack, roof),
                *model.notes,
                *ceilings_assumptions(resolved.measured),
            ],
            **_roofline_fields(roof, kind, request.stack, chip),
            **transformer_fields(result, chip.run_by(request.stack), request.breakdown),
            **fed.feeding_fields(feeding),
            **_what_if(roof, alternatives),
        }
        return _Placed(
            fields,
            roof,
            None,
            fed.fed_facts(feeding, _transformer_facts(model.arch, result, spec, chip)),
            alternatives,
            result.memory.fits_in(result.capacity),
            chip,
            spec.precision,
        )
    if isinstance(request.workload, OpsWorkload):
        ops = estimate_of(request.workload, chip, request.stack)
        roof = ops.roofline
        alternatives = (
            ops_alternatives(request.workload, chip, request.stack, ops)
            if request.what_if
            else None
        )
        fields = {
            **common,
            "workload": request.workload,
            "explanation": [*ops_lines(ops), *roofline_lines(roof)],
            "assumptions": [
                *assumptions(request.workload, ops.kind, request.stack, chip.backend, roof),
                *accumulation_lines(chip, request.stack, roof),
                *ceilings_assumptions(resolved.measured),
            ],
            **_roofline_fields(roof, ops.kind, request.stack, chip),
            **ops_fields(ops),
            **_what_if(roof, alternatives),
        }
        return _Placed(fields, roof, ops, None, alternatives, chip=chip)
    if isinstance(request.workload, CopyWorkload):
        roof, kind = copy_roofline(request.workload, chip, request.stack)
        fields = {
            **common,
            "workload": request.workload,
            "explanation": copy_lines(request.workload, chip, roof),
            "assumptions": [
                *assumptions(request.workload, kind, request.stack, chip.backend, roof),
                *ceilings_assumptions(resolved.measured),
            ],
            **_roofline_fields(roof, kind, request.stack, chip),
        }
        return _Placed(fields, roof, facts=copy_facts(request.workload, chip), chip=chip)
    if isinstance(request.workload, InputPipelineWorkload):
        roof, pipe = fed.input_roofline(request.workload, chip)
        fields = {
            **common,
            "workload": request.workload,
            **fed.input_fields(pipe),
            **_roofline_fields(roof, Kind.COPY, request.stack, chip),
        }
        return _Placed(fields, roof, facts=fed.facts_of(pipe), chip=chip)
    work, filled = kernel_work(request.workload)
    roof = place_kernel(work, chip, request.stack, kernel_evaluations(filled))
    alternatives = (
        kernel_alternatives(filled, chip, request.stack, roof) if request.what_if else None
    )
    fields = {
        **common,
        "workload": filled,
        "explanation": roofline_lines(roof),
        "assumptions": [
            *assumptions(filled, work.kind, request.stack, chip.backend, roof),
            *sparsity_lines(filled, chip.run_by(request.stack), roof),
            *accumulation_lines(chip, request.stack, roof),
            *ceilings_assumptions(resolved.measured),
        ],
        **_roofline_fields(roof, work.kind, request.stack, chip),
        **_what_if(roof, alternatives),
    }
    return _Placed(fields, roof, None, _kernel_facts(filled, work, chip), alternatives, chip=chip)


def _best(roof: Roofline, alternatives: list[Alternative] | None) -> BestChange | None:
    """The best alternative that does not leave the work unable to fit, in the advice's
    terms: realistic times per unit of the same work."""
    top = next((a for a in alternatives or () if a.fits is not False), None)
    if top is None:
        return None
    after = top.roofline.realistic_time / top.work_scale
    return BestChange(
        top.change, top.speedup(roof), roof.realistic_time, after, top.work_scale != 1
    )


def expected_time(catalogs: Catalogs, request: CalculationRequest) -> ExpectedTime:
    """The roofline time of the request's workload on its chip."""
    return ExpectedTime.model_validate(_place(catalogs, request).fields)


def check(catalogs: Catalogs, request: CheckRequest) -> Check:
    """The request's measured time against its roofline: ratio, verdict and advice."""
    placed = _place(catalogs, request)
    roof, ops = placed.roof, placed.ops
    repeats = summarise_times(request.measured_seconds)
    specific = work_lines(roof, placed.facts, _best(roof, placed.alternatives))
    cpu_time = request.cpu_seconds
    judgement = judge(
        roof,
        repeats.mean,
        specific,
        fits=placed.fits,
        chip=placed.chip,
        cpu_time=cpu_time,
        precision=placed.precision,
    )
    fusion = [] if ops is None else [ops.fusion_advice(judgement.measured_time)]
    lead = 1 if judgement.host_bound else 0
    return Check.model_validate(
        {
            **placed.fields,
            "measured_time_s": judgement.measured_time,
            "repeats": RepeatsOut.of(repeats),
            "ratio": judgement.ratio,
            "efficiency": judgement.efficiency,
            "verdict": judgement.verdict,
            "judged_against": judgement.judged_against,
            "floor_time_s": judgement.floor_time,
            "floor_ratio": judgement.floor_ratio,
            "realistic_ratio": judgement.realistic_ratio,
            "against_published": judgement.against_published,
            "achieved_flops_per_s": judgement.achieved_flops_per_s,
            "achieved_bytes_per_s": judgement.achieved_bytes_per_s,
            "flops_share_of_peak": judgement.flops_share_of_peak,
            "bytes_share_of_bandwidth": judgement.bytes_share_of_bandwidth,
            # a busy host is the first thing to fix, before the fusion of its ops
            "advice": [*judgement.advice[:lead], *fusion, *judgement.advice[lead:]],
            "against_fusion": None if ops is None else ops.against_fusion(judgement.measured_time),
            "cpu_time_s": cpu_time,
            "cpu_share": judgement.cpu_share,
            "host_bound": judgement.host_bound,
        }
    )
