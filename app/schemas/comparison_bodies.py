"""The regression gate's answer: a measurement against its baseline window, and the record of
alarms the gate raised on a workload's stored runs (docs/formulas.md, "Statistics")."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.engine.compare import DEFAULT_CONFIDENCE, TESTED_REPEATS, Axis


class Finite(BaseModel):
    """An answer that refuses NaN and infinities."""

    # answers built with keyword arguments, so validated: a NaN or an infinity fails where the
    # answer is built, in the transaction storing the measurement (rolled back), not in the JSON
    model_config = ConfigDict(allow_inf_nan=False)


WindowSource = Literal["previous", "branch", "baseline_id"]
TestUsed = Literal["mann_whitney_u", "insufficient", "none"]


class BaselineWindow(Finite):
    """The baseline runs a measurement is compared with, summarised."""

    source: WindowSource = Field(
        description="previous: the latest earlier runs; branch: those on baseline_branch; "
        "baseline_id: that one run (a window of one)."
    )
    requested: int = Field(description="The window asked for (1 for baseline_id).")
    runs: int = Field(description="Runs found: fewer than requested early in a history.")
    run_ids: list[int] = Field(description="Newest first.")
    samples: int = Field(
        description=f"Their repeats (at most {TESTED_REPEATS} a run), pooled for the test."
    )
    median_time_s: float
    spread_time_s: float = Field(description="Median absolute deviation of the runs' times.")
    median_efficiency: float = Field(description="Median of expected / measured.")


class Comparison(Finite):
    """A measurement against earlier runs of the same workload."""

    previous_id: int | None
    change_vs_previous: float | None = Field(description="+0.1 = 10% slower than the previous.")
    baseline_id: int | None = Field(description="baseline_id, or the newest on baseline_branch.")
    change_vs_baseline: float | None
    threshold: float
    regression: bool = Field(
        description="Slower than the window's median (or below its fraction of the roofline) "
        "beyond threshold, and significant at `confidence` unless test is insufficient."
    )
    # the regression gate; its defaults: no window (no earlier run)
    window: BaselineWindow | None = None
    change_vs_median: float | None = Field(None, description="+0.1 = 10% slower than it.")
    efficiency_change: float | None = Field(
        None, description="-0.1: a fraction of the roofline 10% below the window's median."
    )
    confidence: float = DEFAULT_CONFIDENCE
    test: TestUsed = Field(
        "none",
        description="mann_whitney_u: one-sided, over the repeats; insufficient: too few "
        "samples for any outcome to reach `confidence`, so the threshold alone decides; "
        "none: no window.",
    )
    p_value: float | None = Field(None, description="Of 'the run is slower than the window'.")
    efficiency_p_value: float | None = Field(
        None, description="Of 'the run reached less of the roofline than the window'."
    )
    regressed_on: list[Axis] = Field(
        default_factory=list, description="What regressed (efficiency: e.g. a new catalog)."
    )
    suspected: bool = Field(
        False,
        description="Beyond threshold but not significant at `confidence` (too few samples, "
        "or p above 1 - confidence): a suspected regression, which never fails the gate; "
        "`repeats_needed` repeats would decide it (roofcheck submit --confirm).",
    )
    suspected_on: list[Axis] = Field(default_factory=list, description="What is suspected.")
    repeats_needed: int | None = Field(
        None,
        description="Of a suspected regression: the repeats of a run like this one that the "
        "test needs to reach `confidence` with power 0.8 at the window's noise; null when "
        "none suspected, or when no count the test reads would do (widen the window).",
    )
    confirms: int | None = Field(
        None, description="The suspected run this run was posted to confirm (`confirms`)."
    )
    confirmation: Literal["confirmed", "cleared", "open"] | None = Field(
        None,
        description="Of a confirming run: confirmed (a regression: the alarm stands), cleared "
        "(neither regression nor suspected) or open (still suspected).",
    )
    explanation: str = ""


Raised = Literal["regression", "suspected"]
Decided = Literal["confirmed", "cleared"]


class Alarm(Finite):
    """An alarm the gate raised on a stored run, as recorded when the run was stored."""

    measurement_id: int
    raised: Raised = Field(description="regression: failed outright; suspected: not yet sure.")
    repeats_needed: int | None = Field(description="Of a suspected one, as answered then.")
    decided: Decided | None = Field(
        description="Of a suspected one, by a confirming run: confirmed (a regression) or "
        "cleared; null while open, and for a regression raised outright."
    )
    decided_by: int | None = Field(description="The confirming run's id.")
    marked_false: bool = Field(description="Marked a false alarm (POST .../false-alarm).")
    marked_false_at: datetime | None
    marked_false_by: str | None = Field(description="The owner of the token that marked it.")
    note: str | None = Field(description="Why it was marked false, as given.")


class GateRecord(Finite):
    """The gate's record on one workload: alarms raised, how they were decided, how many were
    marked false, and the latest alarms."""

    raised: int = Field(description="Alarms raised: regressions and suspected runs.")
    regressions: int = Field(description="Raised as a regression outright.")
    suspected: int
    confirmed: int = Field(description="Suspected, then confirmed by a confirming run.")
    cleared: int = Field(description="Suspected, then cleared by a confirming run.")
    open: int = Field(description="Suspected and not yet decided.")
    marked_false: int
    latest: list[Alarm] = Field(description="The latest alarms, newest first.")

    @classmethod
    def empty(cls) -> GateRecord:
        """The record of a workload on which no alarm was raised."""
        return cls(
            raised=0,
            regressions=0,
            suspected=0,
            confirmed=0,
            cleared=0,
            open=0,
            marked_false=0,
            latest=[],
        )


class FalseAlarmIn(BaseModel):
    """Why a stored run's alarm is a false one (optional)."""

    note: Annotated[str, Field(max_length=2_000)] | None = None
