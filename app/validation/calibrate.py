"""What published runs reach: the engine's table of ratios (app/engine/published_runs.py),
fitted on the validation set, and the same fit with each source left out, so that every
row is also predicted, centre and range, by a table that never saw its source.

A row's ratio is (measured - fixed costs - communication) / sustained-kernel busy time, with
the fixed costs and communication the engine adds for it (app/engine/realism.py). Per kind of
work, `typical` is the median over every row of the kind, each median taken over sources
(`by_source_median`: a source counts once); a stack gets its own median where
at least MIN_OWN_RUNS of its runs were published, and its own on one vendor's backend where
its runs there make an established entry (ESTABLISHED_RUNS runs by ESTABLISHED_SOURCES
sources: the rule that lets a stack's entry keep its own range). The range is the 10th to
90th percentile of how far the runs of the kind fell from the realistic time a fit without
their source predicted, measured / realistic, in the units the range is stated in (all
kinds pooled for a kind published by fewer than MIN_SOURCES sources). A
published generation is a run of its decode steps (`Evidence`): the table has no kind of its
own for generations, which the engine prices phase by phase (`Realism.phases`).
Cross-validated, that whole fit is redone without the predicted row's source: the range's
width too comes only from the other sources. An entry the engine deems not established
(`Fitted.established`), or one borrowed from typical software, is widened to the stack
spread (`stack_spread`): how far a run fell from its realistic time at the medians of its
kind's runs on other stacks."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from app.engine import Backend, Fitted, Kind, Software
from app.engine.published import (
    ESTABLISHED_RUNS,
    ESTABLISHED_SOURCES,
    KERNEL_KINDS,
    MIN_OWN_RUNS,
    entry_in,
    published_kind,
)
from app.engine.realism import Practice, realistic_communication
from app.engine.stacks import GENERATION_PHASES
from app.validation.runs import Result

MIN_SOURCES = 3  # sources of a kind before its range is its own (else: all kinds pooled)
DECIMALS = 4  # of the ratios in the engine's table
ROUNDING = 10.0**-DECIMALS
Entries = dict[Kind, dict[Software, Fitted]]
OnBackend = dict[Kind, dict[Software, dict[Backend, Fitted]]]
# an entry of the table: a stack over every backend (None) or on one
Cell = tuple[Software, Backend | None]


@dataclass(frozen=True, slots=True)
class Table:
    """The fitted entries per kind and stack, those per kind, stack and backend, and the stack
    spread (STACK_SPREAD) that widens an entry that is not established or is borrowed from
    another stack."""

    entries: Entries
    on_backend: OnBackend
    spread: tuple[float, float]


@dataclass(frozen=True, slots=True)
class Parts:
    """A row's sustained-kernel time and what the engine adds to it, apart."""

    busy: float  # sustained-kernel device time
    fixed: float  # fixed costs at the published median
    communication: float  # collectives at the bandwidth NCCL reaches
    ideal: float


def parts(result: Result) -> Parts:
    """The engine's parts of a row's realistic time."""
    roof = result.roofline
    busy = roof.sustained_time - roof.communication_time
    return Parts(busy, roof.overhead_time, realistic_communication(roof), roof.expected_time)


def ratio(result: Result) -> float:
    """(measured - fixed - communication) / busy: what this published run reached against the
    sustained kernels (at least the ideal's ratio, where fixed costs would leave nothing)."""
    p = parts(result)
    spent = p.fixed + p.communication
    return max(result.measured_s - spent, p.ideal - spent) / p.busy


def steps_ratio(result: Result, prefill: float) -> float:
    """A generation's `ratio` for its decode steps alone, its prefill taken at the `prefill`
    ratio: (measured - fixed - communication - prefill x prefill busy) / steps' busy; the
    steps take at least their share of the ideal."""
    p = parts(result)
    (_, prefill_busy), (_, steps_busy) = result.realism.phases
    spent = p.fixed + p.communication
    floor = (p.ideal - spent) * steps_busy / p.busy
    steps = max(result.measured_s - spent, p.ideal - spent) - prefill * prefill_busy
    return max(steps, floor) / steps_busy


def _as_kind(result: Result, kind: Kind) -> Result:
    """`result` as a run of `kind` priced as a whole (no phases)."""
    return replace(result, realism=replace(result.realism, kind=kind, phases=()))


@dataclass(frozen=True, slots=True)
class Evidence:
    """The rows a table is fitted on: each pass's or kernel's `ratio` as it ran (by row id),
    and each generation as a run of its decode steps (GENERATION_PHASES), by row id."""

    ratios: Mapping[str, float]
    steps: Mapping[str, Result]

    @staticmethod
    def of(results: Iterable[Result]) -> Evidence:
        """The evidence of `results`."""
        rows = list(results)
        return Evidence(
            {r.row.id: ratio(r) for r in rows if not r.realism.phases},
            {r.row.id: _as_kind(r, fitted_kind(r)) for r in rows if r.realism.phases},
        )

    def among(self, results: Iterable[Result]) -> tuple[list[Result], dict[str, float]]:
        """`results` as runs a table is fitted on, with their ratios by row id: a generation's
        ratio that of its decode steps (`steps_ratio`), its prefill at the median the other
        rows give its stack's prefill, so that every published generation informs the decode
        steps of its stack."""
        rows = list(results)
        runs = [r for r in rows if r.row.id in self.ratios]
        ratios = {r.row.id: self.ratios[r.row.id] for r in runs}
        prefill_kinds = {phases[0] for phases in GENERATION_PHASES.values()}
        prefill = _points((r for r in runs if r.kind in prefill_kinds), ratios)
        for r in rows:
            if r.row.id in self.steps:
                prefill_ratio = _point(prefill, r, r.realism.phases[0][0])
                ratios[r.row.id] = steps_ratio(r, prefill_ratio)
                runs.append(self.steps[r.row.id])
        return runs, ratios


def _deciles(values: list[float]) -> tuple[float, float]:
    """The 10th and 90th percentiles as order statistics (nearest rank): the narrowest range
    of the values that drops as many from each end and still holds at least 80% of them
    (interpolated percentiles of a dozen values hold fewer: 9 of 13)."""
    ordered = sorted(values)
    cut = len(ordered) // 10
    return ordered[cut], ordered[-1 - cut]


def _own(cell: Cell, rows: list[Result]) -> bool:
    """Whether `rows` of a kind give `cell` its own entry: typical always, a stack from
    MIN_OWN_RUNS runs, a stack on one backend where established."""
    stack, backend = cell
    if backend is not None:
        sources = len({r.row.source for r in rows})
        return len(rows) >= ESTABLISHED_RUNS and sources >= ESTABLISHED_SOURCES
    return stack is Software.TYPICAL or len(rows) >= MIN_OWN_RUNS


def medians(results: Iterable[Result]) -> dict[Kind, dict[Cell, list[Result]]]:
    """The rows behind each entry: every row of a kind for typical, a stack's own rows where
    at least MIN_OWN_RUNS were published, a stack's rows on one backend where established."""
    groups: dict[Kind, dict[Cell, list[Result]]] = {}
    for r in results:
        by_cell = groups.setdefault(r.kind, {(Software.TYPICAL, None): []})
        by_cell[Software.TYPICAL, None].append(r)
        if r.row.profile is not Software.TYPICAL:
            by_cell.setdefault((r.row.profile, None), []).append(r)
            if r.realism.backend is not None:
                by_cell.setdefault((r.row.profile, r.realism.backend), []).append(r)
    return {
        kind: {cell: rows for cell, rows in by_cell.items() if _own(cell, rows)}
        for kind, by_cell in sorted(groups.items())
    }


def by_source_median(rows: Iterable[Result], ratios: Mapping[str, float]) -> float:
    """The median over the sources of `rows` of each source's median ratio (`ratios` by row
    id): a source counts once however many runs it published, as its runs share its
    machine, versions and way of timing."""
    by_source: dict[str, list[float]] = {}
    for r in rows:
        by_source.setdefault(r.row.source, []).append(ratios[r.row.id])
    return statistics.median(statistics.median(runs) for runs in by_source.values())


def _points(
    results: Iterable[Result], ratios: Mapping[str, float]
) -> dict[Kind, dict[Cell, float]]:
    """The median of each entry's rows (`by_source_median` of their `ratios`, by row id)."""
    return {
        kind: {cell: by_source_median(rows, ratios) for cell, rows in by_cell.items()}
        for kind, by_cell in medians(results).items()
    }


def _point(
    points: dict[Kind, dict[Cell, float]], result: Result, kind: Kind | None = None
) -> float:
    """The median `points` predict for `result` as a run of `kind` (default: its own), in the
    engine's order (`entry_in`): its stack's on its backend, its stack's, typical software's,
    of the kind or of the kind it refines where none of its own were published."""
    entries = points.get(published_kind(kind or result.kind, points), {})
    profile = result.row.profile
    for cell in ((profile, result.realism.backend), (profile, None), (Software.TYPICAL, None)):
        if cell in entries:
            return entries[cell]
    return 1.0


def fitted_kind(result: Result) -> Kind:
    """The kind whose entries `result`'s ratio informs: its own, a generation's decode
    steps' (`Evidence`)."""
    return result.realism.phases[1][0] if result.realism.phases else result.kind


def priced_kinds(result: Result) -> list[Kind]:
    """The kinds whose entries price `result`: its own, or its phases' each."""
    return [kind for kind, _ in result.realism.phases] or [result.kind]


def realistic_at(result: Result, centres: Mapping[Kind, float]) -> float:
    """`result`'s realistic time at the median ratio `centres` give each of its
    `priced_kinds`, as the engine computes it (`Practice.median`)."""
    p = parts(result)
    entry = result.realism.priced_by(lambda kind: Fitted(centres[kind], 1.0, 1.0, 0, 0))
    return Practice(entry, result.realism.costs).median(p.busy, p.communication, p.ideal)[0]


def fit(results: Iterable[Result]) -> Table:
    """The table of ratios from `results`: medians per entry, and a range from how far each
    run fell from the realistic time a fit without its source predicts (the 10th-90th
    percentile of measured / realistic per kind), so that the range holds what happens to a
    run the table has not seen."""
    given = list(results)
    evidence = Evidence.of(given)
    rows, ratios = evidence.among(given)
    points = _points(rows, ratios)
    left_out = {
        source: _points(*evidence.among(r for r in given if r.row.source != source))
        for source in {r.row.source for r in rows}
    }
    surprise: dict[Kind, list[float]] = {}
    for r in given:
        without = left_out[r.row.source]
        predicted = realistic_at(r, {kind: _point(without, r, kind) for kind in priced_kinds(r)})
        surprise.setdefault(fitted_kind(r), []).append(r.measured_s / predicted)
    pooled = [q for qs in surprise.values() for q in qs]
    table: Entries = {}
    on_backend: OnBackend = {}
    for kind, by_cell in medians(rows).items():
        sources = len({r.row.source for r in rows if r.kind is kind})
        low, high = _deciles(surprise[kind] if sources >= MIN_SOURCES else pooled)
        table[kind] = {}
        for (profile, backend), group in by_cell.items():
            entry = Fitted(
                ratio=round(points[kind][profile, backend], DECIMALS),
                low=round(low, DECIMALS),
                high=round(high, DECIMALS),
                runs=len(group),
                sources=len({r.row.source for r in group}),
            )
            if backend is None:
                table[kind][profile] = entry
            else:
                on_backend.setdefault(kind, {}).setdefault(profile, {})[backend] = entry
    return Table(table, on_backend, stack_spread(given, (rows, ratios)))


def stack_spread(
    results: list[Result], fitted_on: tuple[list[Result], Mapping[str, float]] | None = None
) -> tuple[float, float]:
    """The 10th and 90th percentiles of how far each run of a whole workload fell (measured /
    realistic) from its realistic time at the medians of its kinds' runs on other stacks,
    by other sources: what borrowing another stack's centre costs; (1, 1) where no kind has
    runs on two stacks. `fitted_on`: the runs and ratios `Evidence.among` gives for
    `results`, where already computed."""
    rows, ratios = fitted_on or Evidence.of(results).among(results)
    by_kind: dict[Kind, list[Result]] = {}
    for r in rows:
        if r.kind not in KERNEL_KINDS:
            by_kind.setdefault(r.kind, []).append(r)

    @functools.cache
    def borrowed(kind: Kind, stack: Software, source: str) -> float | None:
        others = [
            o
            for o in by_kind.get(published_kind(kind, by_kind), [])
            if o.row.profile is not stack and o.row.source != source
        ]
        return by_source_median(others, ratios) if others else None

    misses = []
    for r in results:
        if fitted_kind(r) in KERNEL_KINDS:
            continue
        centres = {kind: borrowed(kind, r.row.profile, r.row.source) for kind in priced_kinds(r)}
        known = {kind: centre for kind, centre in centres.items() if centre is not None}
        if len(known) == len(centres):
            misses.append(r.measured_s / realistic_at(r, known))
    if not misses:
        return 1.0, 1.0
    low, high = _deciles(misses)
    return round(low, DECIMALS), round(high, DECIMALS)


def lookup(table: Table, result: Result) -> Fitted:
    """The entry the engine would use from `table` for `result`'s kind, stack and backend
    (`entry_in`), of each of its phases where they are priced apart (`Realism.priced_by`)."""

    def entry(kind: Kind) -> Fitted:
        return entry_in(
            kind,
            result.row.profile,
            table.entries,
            table.on_backend,
            table.spread,
            backend=result.realism.backend,
        )[0]

    return result.realism.priced_by(entry)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A row's realistic time and range as the engine computes them from one entry of a table
    (`Practice.times`: the entry's ratios, the row's fixed costs and their spread)."""

    result: Result
    realistic: float
    low: float
    high: float

    @staticmethod
    def of(result: Result, entry: Fitted) -> Prediction:
        """`result` predicted from `entry`."""
        p = parts(result)
        realistic, low, high, _ = Practice(entry, result.realism.costs).times(
            p.busy, p.communication, p.ideal
        )
        return Prediction(result, realistic, low, high)

    @property
    def error(self) -> float:
        """|measured / realistic - 1|: how far the run fell from the estimate, as a share of
        the estimate (0.5 is a run 1.5x or 0.5x the realistic time)."""
        return abs(self.result.measured_s / self.realistic - 1)

    @property
    def width(self) -> float:
        """The range's width: its high end over its low end."""
        return self.high / self.low

    @property
    def inside(self) -> bool:
        """Whether the measured time lies inside the predicted range, its ends widened by the
        table's rounding (ratios to 4 decimals: the runs that set an end lie on it)."""
        slack = 1 + ROUNDING
        return self.low / slack <= self.result.measured_s <= self.high * slack


def leave_one_source_out(results: list[Result]) -> list[Prediction]:
    """Each row predicted by the table fitted without its source: its median and its range,
    whose width comes from how far the other sources' runs fell from the medians fitted
    without each of them, so that no figure of the prediction saw the row's source."""
    tables = {
        source: fit(r for r in results if r.row.source != source)
        for source in {r.row.source for r in results}
    }
    return [Prediction.of(r, lookup(tables[r.row.source], r)) for r in results]
