"""The key under which the catalogs' memo keeps a check's expectation
(app/services/expectations.py): every field of the request but a measured time."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, get_args, get_origin

from app.schemas.requests import CalculationRequest, TransformerWorkload

# what an expectation depends on besides the catalogs: every field of the request but a
# measured time (a Check's, a stored measurement's)
_EXPECTATION_FIELDS = set(CalculationRequest.model_fields)
_BESIDE_THE_WORKLOAD = tuple(name for name in CalculationRequest.model_fields if name != "workload")
_WORKLOAD_FIELDS = tuple(TransformerWorkload.model_fields)


def _holds(annotation: Any, kind: type) -> bool:
    """Whether a field of this type may hold a `kind` (a list[...] holds a list)."""
    return (
        annotation is kind
        or get_origin(annotation) is kind
        or any(_holds(a, kind) for a in get_args(annotation))
    )


# where a catalog transformer's key holds a list or a float: the positions among the fields
# beside the workload, then the workload's, of those that may
_KEY_TYPES = [
    f.annotation
    for fields, names in (
        (CalculationRequest.model_fields, _BESIDE_THE_WORKLOAD),
        (TransformerWorkload.model_fields, _WORKLOAD_FIELDS),
    )
    for f in map(fields.__getitem__, names)
]
_LISTS = tuple(i for i, annotation in enumerate(_KEY_TYPES) if _holds(annotation, list))
_FLOATS = tuple(i for i, annotation in enumerate(_KEY_TYPES) if _holds(annotation, float))


def memo_key(request: CalculationRequest) -> Hashable:
    """The request's expectation fields, as a key of the memo: a catalog transformer's field
    values themselves (a list as a tuple, a zero float with its sign, as its JSON echo shows
    it), else the fields' JSON, which costs three times as much (an inline config is a dict,
    an operator list a list of models)."""
    workload = request.workload
    if not isinstance(workload, TransformerWorkload) or workload.config is not None:
        return request.model_dump_json(include=_EXPECTATION_FIELDS)
    values = [
        *map(request.__dict__.__getitem__, _BESIDE_THE_WORKLOAD),
        *map(workload.__dict__.__getitem__, _WORKLOAD_FIELDS),
    ]
    for i in _LISTS:
        if type(values[i]) is list:
            values[i] = tuple(values[i])
    for i in _FLOATS:
        value = values[i]
        if type(value) is float and not value:
            values[i] = repr(value)  # 0.0 and -0.0 are equal, and echoed differently
    return tuple(values)
