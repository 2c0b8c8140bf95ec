"""Which fields of a transformer workload apply to its phase, said once: an answer echoes
only those (app/schemas/answers.py), and names in its warnings any other the request set
(app/services/explanations.py). A kernel or ops workload is a model of its own kind's fields,
so all of its fields apply. The request models keep every field, so that one query or body
can be sent to every phase."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import SerializerFunctionWrapHandler, WrapSerializer

from app.engine import Phase
from app.schemas.copy_bodies import CopyWorkload
from app.schemas.input_pipeline_bodies import InputPipelineWorkload
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.requests import (
    KernelWorkload,
    TrainingFields,
    TransformerWorkload,
)

# The fields that apply to one phase only; every other field applies to all four.
# chips_per_node is not among them: a tensor-parallel group wider than one node pays the
# scale-out collectives' latency in inference too (app/engine/workload.py, `_realism`).
ONLY_IN: dict[str, Phase] = {
    **dict.fromkeys(
        [*TrainingFields.model_fields, "recompute", "input_pipeline"],
        Phase.TRAINING,
    ),
    "gen_len": Phase.GENERATE,
}
del ONLY_IN["chips_per_node"]

_FIELDS = TransformerWorkload.model_fields
APPLIES: dict[Phase, frozenset[str]] = {
    phase: frozenset(name for name in _FIELDS if ONLY_IN.get(name, phase) is phase)
    for phase in Phase
}
_IGNORED = {phase: [name for name in _FIELDS if name not in APPLIES[phase]] for phase in Phase}
_DEFAULTS = {name: _FIELDS[name].get_default(call_default_factory=True) for name in ONLY_IN}


def applicable(fields: dict[str, Any], phase: Phase) -> dict[str, Any]:
    """A transformer workload's serialised `fields` that apply to `phase`, in their order."""
    applies = APPLIES[phase]
    return {name: value for name, value in fields.items() if name in applies}


def ignored(workload: TransformerWorkload) -> dict[Phase, list[str]]:
    """The fields `workload` sets away from their defaults that its phase ignores, in their
    declared order, by the phase they apply to."""
    found: dict[Phase, list[str]] = {}
    for name in _IGNORED[workload.phase]:
        if getattr(workload, name) != _DEFAULTS[name]:
            found.setdefault(ONLY_IN[name], []).append(name)
    return found


def _echo(workload: Any, handler: SerializerFunctionWrapHandler) -> Any:
    """The workload as serialised, less the fields its phase ignores."""
    if not isinstance(workload, TransformerWorkload):
        return handler(workload)
    return applicable(handler(workload), workload.phase)


# The echo of the request's workload: the fields that applied to it. Through a lambda, which
# declares no return type, so that the schema stays the workload's (a serializer's declared
# return type would replace it); answers stored without this filter still read back.
EchoedWorkload = Annotated[
    TransformerWorkload | KernelWorkload | OpsWorkload | CopyWorkload | InputPipelineWorkload,
    WrapSerializer(lambda workload, handler: _echo(workload, handler)),  # noqa: PLW0108
]
