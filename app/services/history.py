"""Stored measurements read back: one, a filtered page, and every run of one workload compared
(history, best, latest, means, regression, fixed overhead)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app import formatting as fmt
from app.catalog.names import UnknownName
from app.columns import Position
from app.db import measurement_store as store
from app.db.models import MeasurementRow
from app.db.session import transaction
from app.engine import efficiency
from app.engine.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_WINDOW,
    WindowGate,
    fit_overhead,
    mean_rate,
    mean_ratio,
    summarise_times,
)
from app.schemas.answers import ChipRef, RepeatsOut
from app.schemas.comparison_bodies import Comparison
from app.schemas.measurement_bodies import (
    HistoryPoint,
    Means,
    MeasurementOut,
    MeasurementPage,
    MeasurementQuery,
    MeasurementSummary,
    Overhead,
    WorkloadComparison,
    encode_cursor,
)
from app.services.alarms import gate_record
from app.services.baselines import Against, comparison, judged, seconds_of
from app.services.catalogs import Catalogs

HISTORY_LIMIT = 1000  # runs shown per workload, newest kept


def stored_out(row: MeasurementRow, comparison: Comparison) -> MeasurementOut:
    """`row` as stored and judged, with `comparison`. Its repeats are those its expectation
    was judged by (summarised again from its values for one stored without them)."""
    judged = row.expectation.get("repeats")
    repeats = (
        RepeatsOut.of(summarise_times(seconds_of(row.measured_values, row.measured_unit)))
        if judged is None
        else RepeatsOut.model_validate(judged)
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
        repeats=repeats,
        measured_time_s=row.measured_time_s,
        expected_time_s=row.expected_time_s,
        ratio=row.ratio,
        efficiency=efficiency(row.ratio),
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


def read(sessions: sessionmaker[Session], measurement_id: int) -> MeasurementOut:
    """One stored measurement, compared with the run before it."""
    with transaction(sessions) as session:
        row = store.get(session, measurement_id)
        if row is None:
            raise UnknownName("measurement", str(measurement_id), [])
        return stored_out(row, comparison(session, row, Against()))


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


def _catalog_id(resolve: Callable[[str], str], name: str | None) -> str | None:
    """The catalog id an alias names, in any case; a name the current catalog does not know
    is kept (an id of an older catalog version still filters its measurements)."""
    if name is None:
        return None
    try:
        return resolve(name)
    except UnknownName:
        return name


def filters_of(query: MeasurementQuery, catalogs: Catalogs) -> store.Filters:
    """The database filters a GET /measurements query (or the history page) asks for; chip
    and model are resolved like every other endpoint's (aliases, any case)."""
    chips, models = catalogs.chips(None), catalogs.models
    return store.Filters(
        chip_id=_catalog_id(lambda name: chips.resolve(name).entry.id, query.chip),
        model_id=_catalog_id(lambda name: models.resolve(name).entry.id, query.model),
        phase=query.phase,
        label=query.label,
        branch=query.branch,
        workload_key=query.workload_key,
        since=query.since,
        until=query.until,
    )


def listing(
    sessions: sessionmaker[Session],
    filters: store.Filters,
    *,
    limit: int,
    offset: int,
    after: Position | None,
) -> MeasurementPage:
    """A page of stored measurements, newest first, after the position `after` (a cursor)."""
    with transaction(sessions) as session:
        rows, last = store.page(session, filters, limit=limit, offset=offset, after=after)
        total, kind = store.total(session, filters)
        return MeasurementPage(
            total=total,
            total_kind=kind,
            limit=limit,
            offset=offset,
            next=None if last is None else encode_cursor(last),
            items=[_summary(r) for r in rows],
        )


def workloads(sessions: sessionmaker[Session], ids: list[int]) -> dict[int, dict[str, Any]]:
    """The workloads of the listed measurements `ids` (the list page shows their sizes)."""
    with transaction(sessions) as session:
        return store.workloads(session, ids)


def regressions(sessions: sessionmaker[Session], ids: list[int]) -> dict[int, WindowGate]:
    """Which of the listed measurements `ids` the regression gate calls regressions, with its
    decision on each: judged as each one's own page judges it (against the latest runs of its
    workload before it, on any branch, at the default window, threshold and confidence), the
    windows of a whole page read in one query."""
    against = Against()
    with transaction(sessions) as session:
        windows = store.windows(session, ids, size=against.window)
    decisions = {id_: judged(run, runs, against) for id_, (run, runs) in windows.items() if runs}
    return {id_: gate for id_, gate in decisions.items() if gate.regression}


def _point(run: store.Run) -> HistoryPoint:
    # measured tokens/s: the expectation's tokens (rate x time) over the measured time
    rate = run.expected_tokens_per_s
    return HistoryPoint(
        id=run.id,
        created_at=run.created_at,
        measured_time_s=run.measured_time_s,
        expected_time_s=run.expected_time_s,
        ratio=run.ratio,
        efficiency=efficiency(run.ratio),
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
    bound = fit.good and fit.overhead_bound(latest.expected_time_s)
    sizes = f"{fit.runs} run{'' if fit.runs == 1 else 's'} at {fit.sizes} sizes"
    quality = f"R² {fit.r_squared:.2f}, RMS residual {fit.relative_residual:.0%} of the mean time"
    contradicts = fit.contradicts_roofline  # its numbers are never reported, even if noisy
    if not fit.good:
        text = (
            f"The times of {sizes} do not follow a fixed overhead plus the roofline time "
            f"({quality}): too noisy to say how much of them is overhead."
        )
    elif contradicts:
        text = (
            f"Fitted over {sizes} ({quality}), the time grows more slowly than the roofline "
            f"time: the work would run at {fit.efficiency:.0%} of the roofline, faster than the "
            "chip allows. The fit contradicts the roofline, so the measurements or the "
            "workload's spec are wrong (asynchronous work timed without synchronising, a unit "
            "off, or sizes, a dtype or a chip other than those that ran): no overhead or "
            "efficiency is concluded."
        )
    elif fit.efficiency is None:
        text = (
            f"Time does not grow with the work across {sizes} ({quality}): it is all fixed "
            f"overhead (about {fmt.seconds(fit.overhead_s)}): use CUDA graphs, compilation "
            "or bigger batches."
        )
    else:
        text = (
            f"Fitted over {sizes} ({quality}): a fixed overhead of "
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
        overhead_s=None if contradicts else fit.overhead_s,
        efficiency=None if contradicts else fit.efficiency,
        points=fit.runs,
        sizes=fit.sizes,
        r_squared=fit.r_squared,
        relative_residual=fit.relative_residual,
        good_fit=fit.good,
        overhead_bound=bound,
        contradicts_roofline=contradicts,
        explanation=text,
    )


def compare(
    sessions: sessionmaker[Session],
    workload_key: str,
    *,
    baseline_id: int | None,
    baseline_branch: str | None,
    threshold: float,
    window: int = DEFAULT_WINDOW,
    confidence: float = DEFAULT_CONFIDENCE,
) -> WorkloadComparison:
    """Every run of one workload: history, best, latest, means, regression (the latest run
    against its baseline window), overhead."""
    against = Against(
        baseline_id=baseline_id,
        branch=baseline_branch,
        window=window,
        threshold=threshold,
        confidence=confidence,
    )
    with transaction(sessions) as session:
        runs = store.history(session, workload_key, limit=HISTORY_LIMIT)
        latest = store.get(session, runs[-1].id) if runs else None
        if latest is None:
            raise UnknownName("workload", workload_key, [])
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
            comparison=comparison(session, latest, against),
            overhead=_overhead(
                store.family(session, latest.family_key, limit=HISTORY_LIMIT), latest
            ),
            gate_record=gate_record(session, workload_key),
        )
