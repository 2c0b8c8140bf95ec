"""A run against its baselines: the run before it, the run or branch it names, and the window
of recent runs the regression gate judges it by (docs/formulas.md, "Statistics")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app import formatting as fmt
from app.catalog.names import UnknownName
from app.db import measurement_store as store
from app.db.models import MeasurementRow
from app.engine import InvalidInput
from app.engine.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    TESTED_REPEATS,
    RunSample,
    WindowGate,
    change,
    gate_against_window,
)
from app.engine.rank_power import POWER, fewest_testable
from app.engine.rank_test import smallest_p
from app.engine.units import seconds_from_ms
from app.schemas.comparison_bodies import BaselineWindow, Comparison, WindowSource


@dataclass(frozen=True, slots=True)
class Against:
    """What a run is compared with: a named run, the latest runs on a branch, or (neither
    given) the latest runs before it; how many; and the gate's threshold and confidence."""

    baseline_id: int | None = None
    branch: str | None = None
    window: int = DEFAULT_WINDOW
    threshold: float = DEFAULT_THRESHOLD
    confidence: float = DEFAULT_CONFIDENCE
    # the window ends before this run rather than before the run compared: that of a
    # suspected run, for a run confirming it (which it must not count against itself)
    before_id: int | None = None

    @property
    def source(self) -> WindowSource:
        """Where the window's runs come from."""
        if self.baseline_id is not None:
            return "baseline_id"
        return "previous" if self.branch is None else "branch"


def seconds_of(values: Sequence[float], unit: str) -> list[float]:
    """Measured values in seconds, whether given in seconds or milliseconds."""
    return [v if unit == "s" else seconds_from_ms(v) for v in values]


def _sample(run: store.BaselineRun | MeasurementRow) -> RunSample:
    """A run as the gate reads it, with its mean as stored (the time it was judged by)."""
    repeats = tuple(seconds_of(run.measured_values, run.measured_unit))
    return RunSample(repeats, run.measured_time_s, run.expected_time_s)


def _window(session: Session, row: MeasurementRow, against: Against) -> list[store.BaselineRun]:
    """The baseline runs of `row`, newest first (one query)."""
    if against.baseline_id is None:
        return store.window(
            session,
            row.workload_key,
            before_id=row.id if against.before_id is None else against.before_id,
            size=against.window,
            branch=against.branch,
        )
    baseline = store.baseline(session, against.baseline_id)
    if baseline is None:
        raise UnknownName("measurement", str(against.baseline_id), [])
    if baseline.workload_key != row.workload_key:
        raise InvalidInput(
            "baseline_id", f"measurement {against.baseline_id} is of another workload or chip"
        )
    return [baseline]


def _change(new: float | None) -> str:
    return "beyond a float's range" if new is None else f"{new:+.1%}"


def _beyond_the_window(gate: WindowGate) -> str:
    """What lies beyond the threshold of the window's whole range, and so regressed whatever
    the test says."""
    beyond = []
    if gate.beyond_slowest:
        beyond.append(f"slower than its slowest repeat ({fmt.seconds(gate.slowest_time_s)})")
    if gate.below_least:
        share = fmt.percent(gate.least_efficiency)
        beyond.append(f"less of the roofline than its least efficient repeat ({share})")
    if not beyond:
        return ""
    return (
        f"Beyond the window: {' and '.join(beyond)} by more than the threshold, a regression "
        "whatever the test says. "
    )


def _explain(gate: WindowGate, window: BaselineWindow, against: Against, repeats: int) -> str:
    """The gate's decision in a sentence: against what, by how much, how sure."""
    runs = f"{window.runs} run{'' if window.runs == 1 else 's'}"
    where = {
        "previous": f"the latest {runs} before it",
        "branch": f"the latest {runs} on {against.branch}",
        "baseline_id": f"run #{against.baseline_id} alone, a window of one",
    }[window.source]
    text = (
        f"Against {where} (median {fmt.seconds(window.median_time_s)}, median absolute "
        f"deviation {fmt.seconds(window.spread_time_s)}): {_change(gate.change)} in time, "
        f"{_change(gate.efficiency_change)} in fraction of the roofline. "
    )
    level = f"{against.confidence * 100:.3g}% confidence"
    if gate.test == "insufficient":
        text += (
            f"Too few repeats for a test ({repeats} against {gate.samples}: no ordering of "
            f"them gives a p-value below {gate.smallest_p:.3g}, and "
            f"{gate.alpha:.3g} is needed at {level}). "
        )
    else:
        tests = (
            f"{what} at p = {test.p_value:.3g} "
            f"({'significant' if test.p_value <= gate.alpha else 'not significant'})"
            for what, test in (
                ("slower", gate.time_test),
                ("less of the roofline", gate.efficiency_test),
            )
        )
        method = {"exact": "exact", "normal": "by its normal approximation"}
        text += (
            f"Mann-Whitney U over {repeats} repeats against {gate.samples}, "
            f"{method[gate.time_test.method]}, one-sided at {level}: {', '.join(tests)}. "
        )
    text += _beyond_the_window(gate)
    verdict = "A regression" if gate.regression else "No regression"
    text = f"{text}{verdict} (threshold {against.threshold:.1%})."
    return text + _suspicion(gate, repeats)


def _suspicion(gate: WindowGate, repeats: int) -> str:
    """What a suspected regression would take to decide: the repeats by the power of the
    test at the window's noise, or why no count would do."""
    if not gate.suspected_on:
        return ""
    what = " and ".join(
        {"time": "slower", "efficiency": "less of the roofline"}[a] for a in gate.suspected_on
    )
    text = f" Suspected: {what} beyond the threshold, not yet significant. "
    if fewest_testable(gate.samples, gate.alpha, TESTED_REPEATS) != 1:
        text += (
            f"No single repeat can confirm it against {gate.samples} (its smallest p is "
            f"{smallest_p(1, gate.samples):.3g} > {gate.alpha:.3g}). "
        )
    needed = gate.repeats_needed
    if needed is None:
        return text + (
            f"No run of up to {TESTED_REPEATS} repeats would decide it at this window's noise "
            f"({gate.time_noise:.1%}): widen the window."
        )
    return text + (
        f"{needed} repeats would decide it with power {POWER:.0%} at this window's noise "
        f"({gate.time_noise:.1%} of its median time; this run had {repeats}): a run of "
        f"{needed} repeats confirming it (roofcheck submit --confirm {needed})."
    )


def judged(
    run: store.BaselineRun | MeasurementRow, runs: Sequence[store.BaselineRun], against: Against
) -> WindowGate:
    """The regression gate's decision on `run` against its window `runs` (not empty)."""
    return gate_against_window(
        _sample(run), [_sample(r) for r in runs], against.threshold, against.confidence
    )


def comparison(session: Session, row: MeasurementRow, against: Against) -> Comparison:
    """`row` against the run before it and its baseline window, gated (docs/formulas.md,
    "Statistics")."""
    runs = _window(session, row, against)
    previous = runs[0] if runs and against.source == "previous" else store.previous(session, row)
    named = runs[0] if runs and against.source != "previous" else None
    common = {
        "previous_id": previous.id if previous else None,
        "change_vs_previous": change(row.measured_time_s, previous.measured_time_s)
        if previous
        else None,
        "baseline_id": named.id if named else None,
        "change_vs_baseline": change(row.measured_time_s, named.measured_time_s) if named else None,
        "threshold": against.threshold,
        "confidence": against.confidence,
    }
    if not runs:
        explanation = "No earlier run of this workload" + (
            f" on {against.branch}" if against.branch else ""
        )
        return Comparison(**common, regression=False, explanation=explanation + " to compare with.")
    gate = judged(row, runs, against)
    window = BaselineWindow(
        source=against.source,
        requested=1 if against.baseline_id is not None else against.window,
        runs=gate.runs,
        run_ids=[r.id for r in runs],
        samples=gate.samples,
        median_time_s=gate.median_time_s,
        spread_time_s=gate.spread_time_s,
        median_efficiency=gate.median_efficiency,
    )
    return Comparison(
        **common,
        regression=gate.regression,
        regressed_on=list(gate.regressed_on),
        suspected=bool(gate.suspected_on),
        suspected_on=list(gate.suspected_on),
        repeats_needed=gate.repeats_needed,
        window=window,
        change_vs_median=gate.change,
        efficiency_change=gate.efficiency_change,
        test=gate.test,
        p_value=gate.time_test.p_value,
        efficiency_p_value=gate.efficiency_test.p_value,
        explanation=_explain(gate, window, against, len(row.measured_values)),
    )
