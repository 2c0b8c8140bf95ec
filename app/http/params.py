"""Path and query parameters of the measurement endpoints, declared once for the JSON routes
and the pages a browser gets at the same addresses."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from app.columns import MAX_ID
from app.engine.compare import MAX_WINDOW

MeasurementId = Annotated[int, Path(ge=1, le=MAX_ID)]
WorkloadKey = Annotated[str, Path(max_length=64)]
Text = Annotated[str | None, Query(min_length=1, max_length=200)]
BaselineId = Annotated[int | None, Query(ge=1, le=MAX_ID)]
Threshold = Annotated[
    float, Query(gt=0, le=100, description="Slower by more than this fraction is a regression.")
]
BaselineWindow = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_WINDOW,
        description="How many of the latest earlier runs (on baseline_branch, if given) the "
        "regression gate compares with.",
    ),
]
Confidence = Annotated[
    float,
    Query(
        gt=0.5,
        lt=1,
        description="The one-sided confidence a slowdown must reach in the Mann-Whitney test.",
    ),
]
