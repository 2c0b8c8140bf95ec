"""Which fields of a transformer workload apply to its phase, said once: an answer echoes
only those (app/schemas/answers.py), and names in its warnings any other the request set
(app/services/explanations.py). A kernel or ops workload is a model of its own kind's fields,
so all of its fields apply. The request models keep every field, so that one query or body
can be sent to every phase."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, get_args, get_origin

from pydantic import SerializationInfo, SerializerFunctionWrapHandler, WrapSerializer

from app.engine import Phase
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.requests import KernelWorkload, TrainingFields, TransformerWorkload

# The fields that apply to one phase only; every other field applies to all four.
# chips_per_node is not among them: a tensor-parallel group wider than one node pays the
# scale-out collectives' latency in inference too (app/engine/workload.py, `_realism`).
ONLY_IN: dict[str, Phase] = {
    **dict.fromkeys([*TrainingFields.model_fields, "flash_attention", "recompute"], Phase.TRAINING),
    "gen_len": Phase.GENERATE,
}
del ONLY_IN["chips_per_node"]

_FIELDS = TransformerWorkload.model_fields
APPLIES: dict[Phase, frozenset[str]] = {
    phase: frozenset(name for name in _FIELDS if ONLY_IN.get(name, phase) is phase)
    for phase in Phase
}
_IGNORED = {phase: [name for name in _FIELDS if name not in APPLIES[phase]] for phase in Phase}
_APPLYING = {phase: [name for name in _FIELDS if name in APPLIES[phase]] for phase in Phase}


def _converted(annotation: Any) -> bool:
    """Whether a field of this type may hold an enum or a list (which the echo converts)."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return True
    return get_origin(annotation) is list or any(_converted(a) for a in get_args(annotation))


# of the fields applying to each phase, those the echo converts (the others it copies)
_CONVERTING = {
    phase: [name for name in names if _converted(_FIELDS[name].annotation)]
    for phase, names in _APPLYING.items()
}
_DEFAULTS = {name: _FIELDS[name].get_default(call_default_factory=True) for name in ONLY_IN}
_IGNORED_DEFAULTS = {
    phase: tuple(_DEFAULTS[name] for name in names) for phase, names in _IGNORED.items()
}


def applicable(fields: dict[str, Any], phase: Phase) -> dict[str, Any]:
    """A transformer workload's serialised `fields` that apply to `phase`, in their order."""
    applies = APPLIES[phase]
    return {name: value for name, value in fields.items() if name in applies}


def ignored(workload: TransformerWorkload) -> dict[Phase, list[str]]:
    """The fields `workload` sets away from their defaults that its phase ignores, in their
    declared order, by the phase they apply to."""
    names = _IGNORED[workload.phase]
    values = tuple(map(workload.__dict__.__getitem__, names))
    if values == _IGNORED_DEFAULTS[workload.phase]:  # as most requests leave them: one test
        return {}
    found: dict[Phase, list[str]] = {}
    for name, value in zip(names, values, strict=True):
        if value != _DEFAULTS[name]:
            found.setdefault(ONLY_IN[name], []).append(name)
    return found


def _echo(workload: Any, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
    """The workload as serialised, less the fields its phase ignores.

    To JSON with no options, its applying fields' values, each enum (a list's too) as its
    value: what the fields serialise to, without serialising every field first and filtering
    the result, and without pydantic-core's inference of each enum's type (together half the
    cost of an answer's JSON, docs/performance.md). Any other value is written by that
    inference, as the fields would be."""
    if not isinstance(workload, TransformerWorkload):
        return handler(workload)
    if info.mode == "json" and _plain(info):
        fields, phase = workload.__dict__, workload.phase
        # every applying field in order, then those of an enum or list type converted in
        # place (a field whose type holds neither is copied as it is)
        echoed = {name: fields[name] for name in _APPLYING[phase]}
        for name in _CONVERTING[phase]:
            value = echoed[name]
            if isinstance(value, Enum):
                # the attribute (`.value` is a property: two calls more)
                echoed[name] = value._value_
            elif type(value) is list:
                echoed[name] = [v._value_ if isinstance(v, Enum) else v for v in value]
        return echoed
    return applicable(handler(workload), workload.phase)


def _plain(info: SerializationInfo) -> bool:
    """Whether a serialisation passes no option that changes which fields it writes."""
    return (
        info.include is None
        and info.exclude is None
        and not (
            info.exclude_unset or info.exclude_defaults or info.exclude_none or info.round_trip
        )
    )


# The echo of the request's workload: the fields that applied to it. Through a lambda, which
# declares no return type, so that the schema stays the workload's (a serializer's declared
# return type would replace it); answers stored without this filter still read back.
EchoedWorkload = Annotated[
    TransformerWorkload | KernelWorkload | OpsWorkload,
    WrapSerializer(lambda workload, handler, info: _echo(workload, handler, info)),  # noqa: PLW0108
]
