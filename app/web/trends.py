"""The batch-sweep chart (throughput and latency vs batch) and the scaling chart, both as
stacked SVG panels (a workload's history: app/web/history_chart.py)."""

from __future__ import annotations

from app import formatting as fmt
from app.engine.units import ms_from_seconds
from app.schemas.planning_answers import OptimalBatchAnswer, ScalingAnswer
from app.web.panels import Marker, Panel, Series, XAxis, power_of_two_ticks, stacked_svg
from app.web.svg import WIDTH


def _user_batch(answer: OptimalBatchAnswer) -> int | None:
    """The batch the question named (a transformer workload's), to mark on the sweep."""
    batch = getattr(answer.workload, "batch", None)
    return batch if isinstance(batch, int) else None


def _batch_markers(answer: OptimalBatchAnswer) -> list[Marker]:
    markers = []
    if answer.ridge_batch is not None:
        markers.append(Marker(f"ridge {answer.ridge_batch}", x=answer.ridge_batch))
    if answer.max_batch:
        markers.append(Marker(f"memory limit {answer.max_batch}", x=answer.max_batch, cls="limit"))
    if answer.latency_batch:
        latency = answer.latency_batch
        markers.append(Marker(f"latency limit {latency}", x=latency, cls="latency"))
    if (batch := _user_batch(answer)) is not None:
        markers.append(Marker(f"your batch {batch}", x=batch, cls="you"))
    return markers


def sweep_svg(answer: OptimalBatchAnswer, width: int = WIDTH) -> str:
    """Throughput (tokens/s) and the ideal and realistic time per step (ms) against the batch,
    with the ridge batch, the memory and latency limits (each its own style) and the
    question's own batch marked; batches that do not fit are grey."""
    rows = sorted(answer.sweep, key=lambda r: r["batch"])
    batches = [r["batch"] for r in rows] or [1]
    if (batch := _user_batch(answer)) is not None:
        batches.append(batch)
    lo, hi = min(batches), max(*batches, 2)
    off = [not r["fits"] for r in rows]
    markers = _batch_markers(answer)
    throughput = Series("tokens/s", [(r["batch"], r["tokens_per_s"]) for r in rows], "a", off)
    ideal = Series(
        "ideal time per step (ms)",
        [(r["batch"], ms_from_seconds(r["expected_time_s"])) for r in rows],
        "b",
        off,
    )
    realistic = Series(
        "realistic time per step (ms)",
        [(r["batch"], ms_from_seconds(r["realistic_time_s"])) for r in rows],
        "c",
        off,
    )
    axis = XAxis(lo, hi, "batch", power_of_two_ticks(lo, hi), log=True)
    return stacked_svg(
        "Batch sweep: throughput and latency",
        axis,
        [Panel("tokens/s", [throughput], markers), Panel("ms", [ideal, realistic], markers)],
        width,
    )


def scaling_svg(answer: ScalingAnswer, width: int = WIDTH) -> str:
    """Speedup against chips on log-log axes, where linear scaling (speedup = chips / the first
    count) is the straight line of slope one, beside Amdahl's (or Gustafson's) law; and the
    efficiency. Counts that do not fit in memory are grey."""
    rows = answer.points
    chips = [p["chips"] for p in rows]
    lo, hi = min(chips), max(*chips, 2 * chips[0])
    off = [not p["fits"] for p in rows]
    first = chips[0]
    law = "Amdahl" if answer.mode == "strong" else "Gustafson"
    f = fmt.number(answer.serial_fraction, 6)
    speedup = Series("speedup", [(p["chips"], p["speedup"]) for p in rows], "a", off)
    # ideal: speedup = chips / first, a straight line on log-log axes, drawn end to end
    linear = Series("linear scaling", [(lo, lo / first), (hi, hi / first)], "c")
    limit = Series(f"{law} (f={f})", [(p["chips"], p["law_speedup"]) for p in rows], "b")
    efficiency = Series("efficiency", [(p["chips"], p["efficiency"]) for p in rows], "a", off)
    axis = XAxis(lo, hi, "chips", power_of_two_ticks(lo, hi), log=True)
    return stacked_svg(
        f"{answer.mode.capitalize()} scaling: speedup and efficiency",
        axis,
        [
            Panel(f"speedup over {first} chips", [speedup, linear, limit], log=True),
            Panel("efficiency", [efficiency], [Marker("linear", y=1.0, cls="limit")]),
        ],
        width,
    )
