"""Store measurements with their verdict, and compare them with earlier runs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app import formatting as fmt
from app.api import calculations
from app.api.catalogs import Catalogs
from app.api.measurement_schemas import (
    DEFAULT_THRESHOLD,
    Comparison,
    Gate,
    HistoryPoint,
    Means,
    MeasurementIn,
    MeasurementOut,
    MeasurementPage,
    MeasurementQuery,
    MeasurementSummary,
    Overhead,
    Rejudged,
    WorkloadComparison,
)
from app.api.schemas import (
    Check,
    CheckRequest,
    ChipRef,
    KernelWorkload,
    RepeatsOut,
    TransformerWorkload,
    without_ignored_training,
)
from app.catalog.names import UnknownName
from app.db import measurements as store
from app.db.models import MeasurementRow
from app.db.session import transaction
from app.engine import InvalidInput
from app.engine.compare import (
    change,
    fit_overhead,
    is_regression,
    mean_rate,
    mean_ratio,
    summarise_times,
)

# The fields that set a workload's size; the rest (model, phase, dtypes, ...) is its family.
SIZE_FIELDS: dict[str, tuple[str, ...]] = {
    "transformer": ("batch", "seq_len", "gen_len"),
    "matmul": ("m", "n", "k"),
    "elementwise": ("n",),
    "saxpy": ("n",),
    "softmax": ("rows", "cols"),
    "layernorm": ("rows", "cols"),
    "rmsnorm": ("rows", "cols"),
    "attention": ("batch", "q_len", "kv_len"),
    "custom": ("flops", "bytes"),
}
HISTORY_LIMIT = 1000  # runs shown per workload, newest kept


def identity(workload: TransformerWorkload | KernelWorkload) -> dict[str, Any]:
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


def _compare(
    session: Session, row: MeasurementRow, baseline: MeasurementRow | None, threshold: float
) -> Comparison:
    previous = store.previous(session, row)
    against = baseline or previous
    return Comparison(
        previous_id=previous.id if previous else None,
        change_vs_previous=change(row.measured_time_s, previous.measured_time_s)
        if previous
        else None,
        baseline_id=baseline.id if baseline else None,
        change_vs_baseline=change(row.measured_time_s, baseline.measured_time_s)
        if baseline
        else None,
        threshold=threshold,
        regression=bool(
            against and is_regression(row.measured_time_s, against.measured_time_s, threshold)
        ),
    )


def _baseline(
    session: Session, row: MeasurementRow, baseline_id: int | None, branch: str | None
) -> MeasurementRow | None:
    if baseline_id is not None:
        baseline = store.get(session, baseline_id)
        if baseline is None:
            raise UnknownName("measurement", str(baseline_id), [])
        if baseline.workload_key != row.workload_key:
            raise InvalidInput(
                "baseline_id", f"measurement {baseline_id} is of another workload or chip"
            )
        return baseline
    if branch is not None:
        return store.latest_on_branch(session, row.workload_key, branch, row.id)
    return None


def _out(row: MeasurementRow, comparison: Comparison) -> MeasurementOut:
    repeats = summarise_times(
        [v * (1.0 if row.measured_unit == "s" else 1e-3) for v in row.measured_values]
    )
    return MeasurementOut(
        id=row.id,
        created_at=row.created_at,
        catalog_version=row.catalog_version,
        chip=ChipRef(**row.expectation["chip"]),
        kind=row.kind,
        model_id=row.model_id,
        phase=row.phase,
        workload=row.workload,
        workload_key=row.workload_key,
        measured_values=row.measured_values,
        measured_unit=row.measured_unit,
        repeats=RepeatsOut.of(repeats),
        measured_time_s=row.measured_time_s,
        expected_time_s=row.expected_time_s,
        ratio=row.ratio,
        efficiency=1 / row.ratio,
        verdict=row.verdict,
        advice=row.expectation["advice"],
        label=row.label,
        git_commit=row.git_commit,
        branch=row.branch,
        hostname=row.hostname,
        software=row.software,
        notes=row.notes,
        expectation=row.expectation,
        comparison=comparison,
    )


def judged_row(
    catalogs: Catalogs,
    body: MeasurementIn,
    *,
    writer: str | None = None,
    idempotency_key: str | None = None,
) -> MeasurementRow:
    """`body` judged against the roofline, as the row that stores it with its verdict."""
    judged = calculations.check(catalogs, body)
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
    if key is not None and (stored := _stored_under(sessions, key, body)) is not None:
        return stored
    row = judged_row(catalogs, body, writer=writer, idempotency_key=key)
    try:
        with transaction(sessions, writes=True) as session:
            store.add(session, row)
            return _answer(session, row, body)
    except IntegrityError:
        if key is None or (stored := _stored_under(sessions, key, body)) is None:
            raise
        return stored  # a concurrent retry committed first


def _answer(session: Session, row: MeasurementRow, body: MeasurementIn) -> MeasurementOut:
    baseline = _baseline(session, row, body.baseline_id, body.baseline_branch)
    return _out(row, _compare(session, row, baseline, body.regression_threshold))


def _stored_under(
    sessions: sessionmaker[Session], key: str, body: MeasurementIn
) -> MeasurementOut | None:
    with sessions() as session:
        row = store.by_idempotency_key(session, key)
        return None if row is None else _answer(session, row, body)


def gate(measurement: MeasurementOut, fail_on: frozenset[str]) -> MeasurementOut:
    """The measurement with its gate: failed when its verdict (or a regression) is in fail_on."""
    reasons = []
    if measurement.verdict in fail_on:
        reasons.append(f"verdict {measurement.verdict}")
    if "regression" in fail_on and measurement.comparison.regression:
        against = measurement.comparison.change_vs_baseline
        if against is None:
            against = measurement.comparison.change_vs_previous
        reasons.append(f"regression: {against:+.1%} slower")
    verdict = Gate(fail_on=sorted(fail_on), failed=bool(reasons), reasons=reasons)
    return measurement.model_copy(update={"gate": verdict})


def read(sessions: sessionmaker[Session], measurement_id: int) -> MeasurementOut:
    """One stored measurement, compared with the run before it."""
    with transaction(sessions) as session:
        row = store.get(session, measurement_id)
        if row is None:
            raise UnknownName("measurement", str(measurement_id), [])
        return _out(row, _compare(session, row, None, DEFAULT_THRESHOLD))


def _summary(row: MeasurementRow) -> MeasurementSummary:
    return MeasurementSummary(
        id=row.id,
        created_at=row.created_at,
        catalog_version=row.catalog_version,
        chip_id=row.chip_id,
        kind=row.kind,
        model_id=row.model_id,
        phase=row.phase,
        label=row.label,
        branch=row.branch,
        git_commit=row.git_commit,
        measured_time_s=row.measured_time_s,
        expected_time_s=row.expected_time_s,
        ratio=row.ratio,
        verdict=row.verdict,
        workload_key=row.workload_key,
    )


def filters_of(query: MeasurementQuery) -> store.Filters:
    """The database filters a GET /measurements query (or the history page) asks for."""
    return store.Filters(
        chip_id=query.chip,
        model_id=query.model,
        phase=query.phase,
        label=query.label,
        branch=query.branch,
        workload_key=query.workload_key,
        since=query.since,
        until=query.until,
    )


def listing(
    sessions: sessionmaker[Session], filters: store.Filters, *, limit: int, offset: int
) -> MeasurementPage:
    """A page of stored measurements, newest first."""
    with transaction(sessions) as session:
        total, rows = store.page(session, filters, limit=limit, offset=offset)
        return MeasurementPage(
            total=total, limit=limit, offset=offset, items=[_summary(r) for r in rows]
        )


def _point(run: store.Run) -> HistoryPoint:
    # measured tokens/s: the expectation's tokens (rate x time) over the measured time
    rate = run.expected_tokens_per_s
    return HistoryPoint(
        id=run.id,
        created_at=run.created_at,
        measured_time_s=run.measured_time_s,
        expected_time_s=run.expected_time_s,
        ratio=run.ratio,
        efficiency=1 / run.ratio,
        verdict=run.verdict,
        tokens_per_s=None if rate is None else rate * run.expected_time_s / run.measured_time_s,
        label=run.label,
        branch=run.branch,
        git_commit=run.git_commit,
        catalog_version=run.catalog_version,
    )


def _overhead(times: list[tuple[float, float]], latest: MeasurementRow) -> Overhead | None:
    fit = fit_overhead(times)
    if fit is None:
        return None
    bound = fit.overhead_bound(latest.expected_time_s)
    if fit.efficiency is None:
        text = (
            f"Time does not grow with the work across {fit.points} sizes: it is all fixed "
            f"overhead (about {fmt.seconds(fit.overhead_s)}): use CUDA graphs, compilation "
            "or bigger batches."
        )
    else:
        text = (
            f"Fitted over {fit.points} runs at different sizes: a fixed overhead of "
            f"{fmt.seconds(fit.overhead_s)} plus the roofline time at {fit.efficiency:.0%} "
            "efficiency. "
            + (
                "At the latest size the overhead exceeds the work itself: overhead-bound "
                "(framework dispatch, kernel launches); use CUDA graphs, compilation or "
                "bigger batches."
                if bound
                else "At the latest size the work, not the overhead, dominates."
            )
        )
    return Overhead(
        overhead_s=fit.overhead_s,
        efficiency=fit.efficiency,
        points=fit.points,
        overhead_bound=bound,
        explanation=text,
    )


def compare(
    sessions: sessionmaker[Session],
    workload_key: str,
    *,
    baseline_id: int | None,
    baseline_branch: str | None,
    threshold: float,
) -> WorkloadComparison:
    """Every run of one workload: history, best, latest, means, change, regression, overhead."""
    with transaction(sessions) as session:
        runs = store.history(session, workload_key, limit=HISTORY_LIMIT)
        latest = store.get(session, runs[-1].id) if runs else None
        if latest is None:
            raise UnknownName("workload", workload_key, [])
        baseline = _baseline(session, latest, baseline_id, baseline_branch)
        points = [_point(run) for run in runs]
        rates = [p.tokens_per_s for p in points if p.tokens_per_s is not None]
        return WorkloadComparison(
            workload_key=workload_key,
            chip_id=latest.chip_id,
            workload=latest.workload,
            count=len(runs),
            history=points,
            best=min(points, key=lambda p: p.measured_time_s),
            latest=points[-1],
            means=Means(
                time_s=summarise_times([r.measured_time_s for r in runs]).mean,
                tokens_per_s=mean_rate(rates) if rates else None,
                efficiency=mean_ratio([p.efficiency for p in points]),
                ratio=mean_ratio([r.ratio for r in runs]),
            ),
            comparison=_compare(session, latest, baseline, threshold),
            overhead=_overhead(
                store.family(session, latest.family_key, limit=HISTORY_LIMIT), latest
            ),
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
        }
    )
    judged: Check = calculations.check(catalogs, request)
    return Rejudged(
        measurement_id=row.id,
        stored_catalog_version=row.catalog_version,
        stored_expected_time_s=row.expected_time_s,
        stored_verdict=row.verdict,
        rejudged=judged,
    )
