"""The check form: the raw values a user typed, turned into API requests, and errors mapped
back to the form field that caused them.

The form's names for a transformer are the query parameters of GET /expected-time, plus
`measured_ms`, the latency bounds of GET /optimal-batch and a pasted `config`; kernels add
`kind` and their sizes. Each field applies to some kinds and phases (`applies`): the page
shows only those, and the server reads only those, so that a field of another kind or phase
never changes the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from app.catalog.names import UnknownName
from app.engine import EngineError, InvalidInput, Phase
from app.schemas.copy_bodies import CopyWorkload
from app.schemas.input_pipeline_bodies import InputPipelineFields
from app.schemas.kernel_bodies import AttentionWorkload, CustomWorkload, ElementwiseWorkload
from app.schemas.measurement_bodies import MeasurementIn
from app.schemas.queries import ScalingQuery
from app.schemas.requests import (
    CalculationRequest,
    CheckRequest,
    LatencyBounds,
    MatmulWorkload,
    ScalingRequest,
    TransformerFields,
)
from app.services.catalogs import Catalogs
from app.web import words
from app.web.field_values import field_value

KINDS = (
    *("transformer", "matmul", "elementwise", "saxpy"),
    *("softmax", "layernorm", "rmsnorm", "attention", "custom", "copy", "input_pipeline"),
)
# phase=training only; the form shows the ones engineers change most
TRAINING_FIELDS = (
    *("optimizer", "zero", "dp", "pp", "ep", "cp", "micro_batch"),
    *("lora_rank", "qlora", "recompute", "mfu", "train_tokens"),
)
SCALING_FIELDS = ("chip_counts", "serial_fraction")
INPUT_FIELDS = (
    *("sample_bytes", "samples_per_step", "storage", "read_bytes_per_s", "iops"),
    *("block_bytes", "decode_s_per_sample", "workers", "device_bytes_per_sample"),
)
# a training step's switch: whether the input pipeline's fields feed it (its `input_pipeline`)
FED = "fed"
# the optimal batch's latency bound (GET /optimal-batch), each for the phase it bounds
LATENCY_FIELDS = {"max_tpot_ms": Phase.DECODE, "max_ttft_ms": Phase.PREFILL}
_ROWWISE = {"rows": "rows", "cols": "cols", "dtype": "dtype"}
# schema field -> form field, per workload kind (a form name is one field wherever it is used:
# elementwise and saxpy share `elements`; an attention's batch is not a model's)
FIELDS: dict[str, dict[str, str]] = {
    "transformer": {
        name: name
        for name in (
            *("model", "config", "phase", "batch", "seq_len", "gen_len"),
            *("dtype", "weight_dtype", "kv_dtype", "sparsity", "tp", "flash_attention"),
            *TRAINING_FIELDS,
        )
    },
    "matmul": {name: name for name in ("m", "n", "k", "dtype", "allow_tf32", "sparsity")},
    "elementwise": {
        "n": "elements",
        "ops": "ops",
        "inputs": "inputs",
        "fused": "fused",
        "flops_per_element": "flops_per_element",
        "dtype": "dtype",
    },
    "saxpy": {"n": "elements", "dtype": "dtype"},
    "softmax": _ROWWISE,
    "layernorm": _ROWWISE,
    "rmsnorm": _ROWWISE,
    "attention": {
        "batch": "attn_batch",
        **{name: name for name in ("heads", "kv_heads", "q_len", "kv_len", "head_dim")},
        **{name: name for name in ("causal", "implementation", "dtype")},
    },
    "custom": {"flops": "flops", "bytes": "bytes", "unit": "unit", "dtype": "dtype"},
    "copy": {
        "bytes": "copy_bytes",
        **{name: name for name in ("direction", "pinned", "overlap_s")},
    },
    "input_pipeline": {
        **{name: name for name in INPUT_FIELDS},
        "pinned": "input_pinned",  # the copy's `pinned` is a field of its own
    },
}
PIPELINE_FIELDS = tuple(FIELDS["input_pipeline"].values())
_SERVING = (Phase.DECODE, Phase.PREFILL, Phase.GENERATE)
# form field -> the transformer phases it applies to (absent: every phase). Training keeps
# its weights dense in the compute dtype and holds no KV cache; the new tokens are generate's.
PHASES_OF: dict[str, tuple[str, ...]] = {
    "gen_len": (Phase.GENERATE,),
    **dict.fromkeys(("weight_dtype", "kv_dtype", "sparsity"), _SERVING),
    **dict.fromkeys((*TRAINING_FIELDS, *SCALING_FIELDS, FED), (Phase.TRAINING,)),
    # a transformer reads the input pipeline's fields in training only (its own kind, always)
    **dict.fromkeys(PIPELINE_FIELDS, (Phase.TRAINING,)),
    **{name: (phase,) for name, phase in LATENCY_FIELDS.items()},
}
# What one measured time covers: a transformer's phase, else one call of a kernel
COVERS = {
    Phase.DECODE: "one decode step (one token for each sequence)",
    Phase.GENERATE: "the whole generation (prompt + new tokens)",
    Phase.PREFILL: "one prefill of the prompt",
    Phase.TRAINING: "one optimizer step",
    "elementwise": "one run of the chain (one kernel call when fused)",
    "ops": "one run of the operators (a kernel each, or each fused group)",
    "copy": "one copy",
    "input_pipeline": "one step's batch (read, decoded, copied)",
    "kernel": "one kernel call",
}
STORE_FIELDS = ("label", "branch", "git_commit", "notes")
# the store form's fields as it names them (its errors name them so at the top)
STORE_LABELS = {
    "measured_ms": "Measured time (ms)",
    "label": "Label",
    "branch": "Branch",
    "git_commit": "Git commit",
    "notes": "Notes",
}
NO_TIME = "enter the time you measured to store this run"


def _text(value: object) -> str:
    """A default as the form shows it: '' for none, true/false, 0.5, 2048, bf16."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _declared(model: type[BaseModel], names: Iterable[str]) -> dict[str, str]:
    fields = model.model_fields
    return {name: _text(fields[name].get_default(call_default_factory=True)) for name in names}


# The order is the form's (links to the charts list the values in it). Kernel sizes and the
# first chip and model shown are the form's own; everything the API also takes is read from
# its declaration (tests/api/test_defaults.py pins both).
DEFAULTS: dict[str, str] = {
    "kind": "transformer",
    "chip": "a100",
    "model": "llama-3.1-8b",
    "config": "",
    **_declared(
        TransformerFields,
        [name for name in FIELDS["transformer"] if name not in ("model", "config", "dtype")],
    ),
    "dtype": "",  # each kind's own default: bf16 for models and attention, fp32 for kernels
    **_declared(CalculationRequest, ("stack", "ceilings")),
    **_declared(ScalingQuery, ("chip_counts",)),
    **_declared(ScalingRequest, ("serial_fraction",)),
    **{"m": "4096", "n": "4096", "k": "4096", "elements": "100000000"},
    **_declared(ElementwiseWorkload, ("ops", "inputs", "fused")),
    **{"flops": "1e12", "bytes": "1e9"},
    **_declared(CustomWorkload, ("unit",)),
    **_declared(MatmulWorkload, ("allow_tf32",)),
    "flops_per_element": "",
    **{"rows": "4096", "cols": "4096"},
    "attn_batch": _text(AttentionWorkload.model_fields["batch"].default),
    **{"heads": "32", "kv_heads": "", "q_len": "4096", "kv_len": "", "head_dim": "128"},
    **_declared(AttentionWorkload, ("causal", "implementation")),
    FED: "false",
    "copy_bytes": "1e9",
    **_declared(CopyWorkload, ("direction", "pinned", "overlap_s")),
    # 256 ImageNet JPEGs of 110 kB from local NVMe: the form's own example
    **{"sample_bytes": "110000", "samples_per_step": "256", "storage": "local_nvme"},
    **_declared(InputPipelineFields, INPUT_FIELDS[3:]),
    "input_pinned": _text(InputPipelineFields.model_fields["pinned"].default),
    **dict.fromkeys(LATENCY_FIELDS, ""),
    "measured_ms": "",
    **dict.fromkeys(STORE_FIELDS, ""),
}
GENERAL = "form"  # errors that belong to no single field


def _kinds_using(name: str) -> tuple[str, ...]:
    return tuple(kind for kind in KINDS if name in FIELDS[kind].values())


# form field -> the workload kinds it applies to (absent: every kind)
KINDS_OF: dict[str, tuple[str, ...]] = {
    **{name: kinds for name in DEFAULTS if 0 < len(kinds := _kinds_using(name)) < len(KINDS)},
    **dict.fromkeys((*LATENCY_FIELDS, *SCALING_FIELDS, FED), ("transformer",)),
    **dict.fromkeys(PIPELINE_FIELDS, ("transformer", "input_pipeline")),
}


def applies(name: str, kind: str, phase: str, *, fed: bool = False) -> bool:
    """Whether the form field `name` is read for a workload of `kind` (and `phase`, for a
    transformer, whose input pipeline's fields are read where it is `fed` by one): the page
    shows the same fields (templates/_fields.html, static/form.js)."""
    if kind not in KINDS_OF.get(name, (kind,)):
        return False
    if kind != "transformer":
        return True
    return phase in PHASES_OF.get(name, (phase,)) and (fed or name not in PIPELINE_FIELDS)


def applicable(values: Mapping[str, str]) -> dict[str, str]:
    """The non-empty values that apply to the chosen kind and phase, in the form's order."""
    kind, phase = values.get("kind", ""), values.get("phase", "")
    fed = values.get(FED) == "true"
    return {
        name: values[name]
        for name in DEFAULTS
        if values.get(name) and name not in STORE_FIELDS and applies(name, kind, phase, fed=fed)
    }


def covers(kind: str, phase: str) -> str:
    """What one measured time of this workload covers, in words."""
    if kind == "transformer":
        return COVERS.get(phase, COVERS[Phase.DECODE])
    return COVERS.get(kind, COVERS["kernel"])


def form_values(given: Mapping[str, str], catalogs: Catalogs | None = None) -> dict[str, str]:
    """The defaults overlaid with what the user sent (trimmed); unknown names are dropped."""
    values = dict(DEFAULTS)
    if catalogs is not None:
        values["chip"] = _default_chip(catalogs)
        values["model"] = _default_model(catalogs)
    for name in DEFAULTS:
        if name in given:
            values[name] = str(given[name]).strip()
    return values


def _default_chip(catalogs: Catalogs) -> str:
    chips = catalogs.chips()
    try:
        return chips.resolve("a100").entry.id
    except UnknownName:
        return next(iter(chips.chips), "")


def _default_model(catalogs: Catalogs) -> str:
    models = catalogs.models.models
    return DEFAULTS["model"] if DEFAULTS["model"] in models else next(iter(models), "")


def _workload(values: Mapping[str, str]) -> dict[str, Any]:
    """The workload of the chosen kind from the fields that apply to it; a pasted config
    stands in for the catalog model."""
    kind = values.get("kind", "transformer")
    given = applicable(values)
    workload = {"kind": kind, **_fields_of(kind, given)}
    if "config" in workload:
        workload.pop("model", None)
    if kind == "transformer" and given.get(FED) == "true":
        workload["input_pipeline"] = _fields_of("input_pipeline", given)
    return workload


def _fields_of(kind: str, given: Mapping[str, str]) -> dict[str, Any]:
    """The schema's values of `kind`'s fields among those `given`."""
    return {
        schema_name: field_value(schema_name, given[form_name])
        for schema_name, form_name in FIELDS.get(kind, {}).items()
        if form_name in given
    }


def latency_bounds(values: Mapping[str, str]) -> LatencyBounds:
    """The optimal batch's latency bound of the chosen phase (none for other workloads).

    Raises ValidationError naming the field."""
    given = applicable(values)
    return LatencyBounds.model_validate({n: given[n] for n in LATENCY_FIELDS if n in given})


def scaling_of(values: Mapping[str, str]) -> tuple[list[int], float]:
    """The chip counts and serial fraction of the scaling chart (their ranges are checked
    where the curve is computed); InvalidInput names the one that does not parse."""
    try:
        counts = [int(n) for n in values.get("chip_counts", "").split(",")]
    except ValueError:
        raise InvalidInput(
            "chip_counts", "give comma-separated whole numbers, e.g. 8,16,32"
        ) from None
    try:
        return counts, float(values.get("serial_fraction", "") or 0)
    except ValueError:
        raise InvalidInput("serial_fraction", "give a number between 0 and 1") from None


def measured_ms(values: Mapping[str, str]) -> list[str] | None:
    """The measured milliseconds as typed: one value or comma-separated repeats; None if empty."""
    parts = [p.strip() for p in values.get("measured_ms", "").split(",") if p.strip()]
    return parts or None


def _body(values: Mapping[str, str]) -> dict[str, Any]:
    if values.get("kind") not in KINDS:
        raise UnknownName("workload kind", values.get("kind", ""), list(KINDS))
    body: dict[str, Any] = {"chip": values.get("chip", ""), "workload": _workload(values)}
    for name in ("stack", "ceilings"):
        if values.get(name):
            body[name] = values[name]
    measured = measured_ms(values)
    if measured is not None:
        body["measured_ms"] = measured[0] if len(measured) == 1 else measured
    return body


def calculation(values: Mapping[str, str]) -> CalculationRequest:
    """The request the form describes: a CheckRequest when a measured time is given.

    Raises ValidationError (bad values) or UnknownName (unknown kind)."""
    body = _body(values)
    if "measured_ms" in body:
        return CheckRequest.model_validate(body)
    return CalculationRequest.model_validate(body)


def measurement(values: Mapping[str, str]) -> MeasurementIn:
    """The measurement the store form describes (a measured time is required)."""
    body = _body(values)
    body.setdefault("measured_ms", None)
    body.update({name: values[name] for name in STORE_FIELDS if values.get(name)})
    return MeasurementIn.model_validate(body)


def _form_name(kind: str, schema_name: str) -> str:
    if schema_name in ("measured", "measured_time_s", "measured_ms"):
        return "measured_ms"
    fields = FIELDS.get(kind, {})
    if schema_name in fields:
        return fields[schema_name]
    if schema_name == "chip" or schema_name in (*SCALING_FIELDS, *LATENCY_FIELDS):
        return schema_name
    return GENERAL


def _validation_errors(exc: ValidationError, kind: str) -> dict[str, str]:
    errors: dict[str, str] = {}
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        message = words.in_words(error)
        if loc[:1] == ["workload"]:
            # the workload as a whole: a transformer's model (neither model nor config given)
            whole = "model" if kind == "transformer" else GENERAL
            name = _form_name(kind, loc[2]) if len(loc) > 2 else whole
            if loc[2:3] == ["input_pipeline"]:  # a training step's, by the same form names
                name = _form_name("input_pipeline", loc[3]) if len(loc) > 3 else GENERAL
        elif loc and loc[0] in DEFAULTS:
            name = loc[0]
        elif "measured" in message:
            name = "measured_ms"
        else:
            name = GENERAL
        errors.setdefault(name, message)
    return errors


def errors_of(exc: Exception, kind: str) -> dict[str, str]:
    """Form field -> message for a validation, name or engine error."""
    if isinstance(exc, ValidationError):
        return _validation_errors(exc, kind)
    if isinstance(exc, UnknownName):
        hint = f"; did you mean {', '.join(exc.suggestions)}?" if exc.suggestions else ""
        field = exc.kind if exc.kind in ("chip", "model") else GENERAL
        if exc.kind == "workload kind":
            field = "kind"
        return {field: f"unknown {exc.kind} {exc.name!r}{hint}"}
    if isinstance(exc, EngineError):
        # a pasted config's own fields (config.hidden_size) are named beside the config
        field, _, inner = str(getattr(exc, "field", "")).partition(".")
        message = str(getattr(exc, "message", exc))
        return {_form_name(kind, field): f"{inner}: {message}" if inner else message}
    raise exc
