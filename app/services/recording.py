"""Measurements judged and stored with their verdict, gated for CI, and judged again against
another catalog version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.catalog.names import UnknownName
from app.db import measurement_store as store
from app.db.models import MeasurementRow
from app.db.session import transaction, write_together
from app.engine import InvalidInput
from app.schemas.answers import Check
from app.schemas.comparison_bodies import Comparison
from app.schemas.copy_bodies import CopyWorkload
from app.schemas.input_pipeline_bodies import InputPipelineWorkload
from app.schemas.measurement_bodies import (
    Gate,
    MeasurementIn,
    MeasurementOut,
    Rejudged,
)
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.requests import (
    CheckRequest,
    KernelWorkload,
    TransformerWorkload,
    without_ignored_training,
)
from app.services import alarms
from app.services.baselines import Against, comparison
from app.services.catalogs import Catalogs
from app.services.expectations import check
from app.services.history import stored_out

IDEMPOTENCY_KEY = "Idempotency-Key"  # the header naming a post, so that retries store it once

SIZE_FIELDS: dict[str, tuple[str, ...]] = {
    "transformer": ("batch", "seq_len", "gen_len"),
    "matmul": ("m", "n", "k"),
    "elementwise": ("n",),
    "saxpy": ("n",),
    "softmax": ("rows", "cols"),
    "layernorm": ("rows", "cols"),
    "rmsnorm": ("rows", "cols"),
    "attention": ("batch", "q_len", "kv_len"),
    "copy": ("bytes",),
    "input_pipeline": ("samples_per_step",),
    "custom": ("flops", "bytes"),
    "ops": (),  # sizes are in the shapes: each list of ops a family of its own
}


def identity(
    workload: TransformerWorkload
    | KernelWorkload
    | OpsWorkload
    | CopyWorkload
    | InputPipelineWorkload,
) -> dict[str, Any]:
    """The fields that identify a workload: those not at their defaults (so a field added
    later with a default leaves stored keys alone), without training fields outside training."""
    fields = workload.model_dump(mode="json", exclude_defaults=True) | {"kind": workload.kind}
    if isinstance(workload, TransformerWorkload):
        fields = without_ignored_training(fields, workload.phase)
    return fields


def _key(chip_id: str, workload: dict[str, Any], drop: Sequence[str] = ()) -> str:
    kept = {k: v for k, v in workload.items() if k not in drop}
    canonical = json.dumps({"chip": chip_id, "workload": kept}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def judged_row(
    catalogs: Catalogs,
    body: MeasurementIn,
    *,
    writer: str | None = None,
    idempotency_key: str | None = None,
) -> MeasurementRow:
    """`body` judged against the roofline, as the row that stores it with its verdict."""
    judged = check(catalogs, body)
    workload = judged.workload.model_dump(mode="json")
    kind = workload["kind"]
    fields = identity(judged.workload)
    return MeasurementRow(
        catalog_version=judged.catalog_version,
        chip_id=judged.chip.id,
        kind=kind,
        model_id=judged.model.id if judged.model else None,
        phase=workload.get("phase"),
        workload=workload,
        workload_key=_key(judged.chip.id, fields),
        family_key=_key(judged.chip.id, fields, SIZE_FIELDS[kind]),
        measured_values=body.measured_values,
        measured_unit=body.measured_unit,
        measured_time_s=judged.measured_time_s,
        expected_time_s=judged.expected_time_s,
        ratio=judged.ratio,
        verdict=judged.verdict,
        expectation=judged.model_dump(mode="json"),
        expected_tokens_per_s=judged.tokens_per_s,
        label=body.label,
        git_commit=body.git_commit,
        branch=body.branch,
        hostname=body.hostname,
        software=body.software,
        notes=body.notes,
        written_by=writer,
        idempotency_key=idempotency_key,
    )


def record(
    catalogs: Catalogs,
    sessions: sessionmaker[Session],
    body: MeasurementIn,
    *,
    writer: str | None = None,
    idempotency_key: str | None = None,
) -> MeasurementOut:
    """Judge `body` against the roofline and store it with its verdict and expectation, in
    one transaction.

    With an idempotency key, a retry of a stored post (even a concurrent one) stores
    nothing and answers the measurement stored first.
    """
    key = None if idempotency_key is None else f"{writer or ''}:{idempotency_key}"
    row = judged_row(catalogs, body, writer=writer, idempotency_key=key)
    if key is not None and (stored := _stored_under(sessions, row, body)) is not None:
        return stored
    try:
        return write_together(sessions, partial(_stored_and_answered, row, body))
    except IntegrityError:
        if key is None or (stored := _stored_under(sessions, row, body)) is None:
            raise
        return stored  # a concurrent retry committed first


def _stored_and_answered(
    row: MeasurementRow, body: MeasurementIn, session: Session
) -> MeasurementOut:
    """`row` stored, and the answer to `body`, in the transaction of `session`."""
    store.add(session, row)
    if body.confirms is not None:
        alarms.confirmable(session, row, body.confirms)
    answer = _answer(session, row, body)
    alarms.record_answer(session, row, answer.comparison)
    return answer


def _answer(session: Session, row: MeasurementRow, body: MeasurementIn) -> MeasurementOut:
    """The answer to `body`, stored as `row`: gated, in the transaction of `session`, against
    the baseline window it names."""
    against = Against(
        baseline_id=body.baseline_id,
        branch=body.baseline_branch,
        window=body.baseline_window,
        threshold=body.regression_threshold,
        confidence=body.confidence,
        before_id=body.confirms,
    )
    compared = alarms.with_confirmation(comparison(session, row, against), body.confirms)
    return stored_out(row, compared)


# the columns that store a post as it was sent (a retry under its idempotency key sends the
# same), besides the stack and ceilings its expectation names
_POSTED = (
    "chip_id", "workload_key", "measured_values", "measured_unit", "label", "git_commit",
    "branch", "hostname", "software", "notes",
)  # fmt: skip


def _as_posted(row: MeasurementRow) -> tuple[object, ...]:
    settings = (row.expectation.get(name) for name in ("stack", "ceilings"))
    return (*(getattr(row, name) for name in _POSTED), *settings)


def _stored_under(
    sessions: sessionmaker[Session], posted: MeasurementRow, body: MeasurementIn
) -> MeasurementOut | None:
    """The measurement stored under `posted`'s idempotency key, if any; InvalidInput when it
    was stored from another body (as payment APIs answer a key reused for another payment)."""
    with sessions() as session:
        row = store.by_idempotency_key(session, posted.idempotency_key or "")
        if row is None:
            return None
        if _as_posted(row) != _as_posted(posted):
            raise InvalidInput(
                IDEMPOTENCY_KEY,
                "was already used for a different measurement; send a new key",
            )
        return _answer(session, row, body)


def gate(measurement: MeasurementOut, fail_on: frozenset[str]) -> MeasurementOut:
    """The measurement with its gate: failed when its verdict (or a regression) is in fail_on."""
    reasons = []
    if measurement.verdict in fail_on:
        reasons.append(f"verdict {measurement.verdict}")
    compared = measurement.comparison
    if "regression" in fail_on and compared.regression:
        reasons.append(f"regression: {_regression(compared)}")
    verdict = Gate(fail_on=sorted(fail_on), failed=bool(reasons), reasons=reasons)
    return measurement.model_copy(update={"gate": verdict})


def _regression(compared: Comparison) -> str:
    """Why `compared` is a regression, in a few words: what, against what, how sure."""
    runs = 0 if compared.window is None else compared.window.runs
    untested = compared.test == "insufficient"
    said = {
        "time": (compared.change_vs_median, "time", compared.p_value),
        "efficiency": (
            compared.efficiency_change,
            "fraction of the roofline",
            compared.efficiency_p_value,
        ),
    }
    parts = []
    for axis in compared.regressed_on:
        change, what, p_value = said[axis]
        size = "beyond a float" if change is None else f"{change:+.1%}"
        sure = "" if untested or p_value is None else f", p = {p_value:.3g}"
        parts.append(f"{what} {size}{sure}")
    level = f"{compared.confidence * 100:.3g}% confidence"
    return (
        f"{'; '.join(parts)} vs the median of {runs} run{'' if runs == 1 else 's'} "
        f"(threshold {compared.threshold:.1%}; {'too few repeats to test' if untested else level})"
    )


def rejudge(
    catalogs: Catalogs, sessions: sessionmaker[Session], measurement_id: int, version: str | None
) -> Rejudged:
    """Judge a stored measurement again against `version` (default: current); nothing stored."""
    with transaction(sessions) as session:
        row = store.get(session, measurement_id)
        if row is None:
            raise UnknownName("measurement", str(measurement_id), [])
    unit_field = "measured_time_s" if row.measured_unit == "s" else "measured_ms"
    request = CheckRequest.model_validate(
        {
            "chip": row.chip_id,
            "catalog_version": version or catalogs.current,
            "workload": row.workload,
            unit_field: row.measured_values,
            # the stack, ceilings and CPU time it was judged with (answers stored before them:
            # defaults)
            **{
                k: row.expectation[k]
                for k in ("stack", "ceilings", "cpu_time_s")
                if row.expectation.get(k) is not None
            },
        }
    )
    judged: Check = check(catalogs, request)
    return Rejudged(
        measurement_id=row.id,
        stored_catalog_version=row.catalog_version,
        stored_expected_time_s=row.expected_time_s,
        stored_verdict=row.verdict,
        rejudged=judged,
    )
