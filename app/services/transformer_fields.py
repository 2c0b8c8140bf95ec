"""The fields a transformer workload adds to an expected-time answer: memory and fit, token
rates, the training step's layout, MFU and communication, and the per-term breakdown."""

from __future__ import annotations

from app.engine import Chip, TransformerEstimate
from app.engine.breakdown import shares
from app.engine.training import TrainingStep
from app.engine.units import DAY
from app.schemas.answers import BreakdownRow, CommunicationOut, TrainingOut


def _training_out(step: TrainingStep) -> TrainingOut:
    roof, lay, comm = step.roofline, step.layout, step.communication
    realistic_train = step.time_to_train(roof.realistic_time)
    return TrainingOut(
        chips=lay.chips,
        layout={"tp": lay.tp, "dp": lay.dp, "pp": lay.pp, "ep": lay.ep, "cp": lay.cp},
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
        realistic_time_to_train_days=None if realistic_train is None else realistic_train / DAY,
        communication=CommunicationOut(
            tensor_parallel_s=comm.tensor_parallel,
            pipeline_s=comm.pipeline,
            expert_s=comm.expert,
            context_parallel_s=comm.context_parallel,
            data_parallel_s=comm.data_parallel,
            data_parallel_exposed_s=comm.data_parallel_exposed,
            data_parallel_bytes=comm.data_parallel_bytes,
            data_parallel_over_network=comm.data_parallel_over_network,
        ),
    )


def _breakdown(result: TransformerEstimate, chip: Chip) -> list[BreakdownRow]:
    return [
        BreakdownRow(
            name=row.name,
            count=row.count,
            flops=row.flops,
            bytes=row.bytes,
            time_s=row.time,
            share=row.share,
            bound=row.bound,
        )
        for row in shares(result.terms, result.roofline, chip)
    ]


def transformer_fields(
    result: TransformerEstimate, chip: Chip, breakdown: bool
) -> dict[str, object]:
    """The answer fields of a transformer estimate: its memory, fit, token rates, and its
    breakdown (when asked) and training step."""
    return {
        "breakdown": _breakdown(result, chip) if breakdown and result.terms else None,
        "training": None if result.training is None else _training_out(result.training),
        "memory_required_bytes": result.memory.total,
        "memory_available_bytes": result.capacity,
        "fits": result.fits,
        "tokens_per_s": result.tokens_per_s,
        "realistic_tokens_per_s": result.realistic_tokens_per_s,
        "time_to_first_token_s": result.time_to_first_token,
        "time_per_output_token_s": result.time_per_output_token,
    }
