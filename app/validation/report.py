"""The validation report (docs/validation.md and its chart): every row against the ideal, and
the realistic estimate of each row as a table fitted without the row's source predicts it."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from pathlib import Path

from app.engine.units import ms_from_seconds
from app.services.catalogs import load_catalog_files
from app.settings import Settings
from app.validation.calibrate import Prediction, fit, leave_one_source_out
from app.validation.runs import CHART_PATH, PEERS_PATH, REPORT_PATH, Result, evaluate, load
from app.validation.table_file import write_table
from app.web.svg import esc


def load_peers(path: Path = PEERS_PATH) -> dict[str, dict[str, float]]:
    """Peer predictions (seconds) by peer name ("name version") and row id; {} without a file."""
    if not path.exists():
        return {}
    peers: dict[str, dict[str, float]] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            peers.setdefault(f"{r['peer']} {r['peer_version']}", {})[r["id"]] = float(
                r["predicted_s"]
            )
    return peers


def median_error(predictions: Sequence[Prediction]) -> float:
    """Median |measured / realistic - 1| (`Prediction.error`)."""
    return statistics.median(p.error for p in predictions)


def median_width(predictions: Sequence[Prediction]) -> float:
    """The median width of the predicted ranges (high end over low end)."""
    return statistics.median(p.width for p in predictions)


def percentile_90(values: Sequence[float]) -> float:
    """The 90th percentile (inclusive method; the value itself for one value)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def within_source_error(predictions: Sequence[Prediction]) -> float:
    """The median distance of each row from its own source's median run of its kind, both as
    measured / realistic: the error a table would keep if it knew every source's level,
    which one fitted on other sources cannot (0 where every source published one run)."""
    by_source: dict[tuple[str, str], list[float]] = {}
    for p in predictions:
        key = (p.result.row.source, p.result.kind)
        by_source.setdefault(key, []).append(p.result.measured_s / p.realistic)
    return statistics.median(
        abs(q / statistics.median(qs) - 1) for qs in by_source.values() for q in qs
    )


def inside_share(predictions: Sequence[Prediction]) -> float:
    """The share of rows whose measured time lies inside the predicted range."""
    return sum(p.inside for p in predictions) / len(predictions)


def _peer_lines(predictions: list[Prediction], peers: dict[str, dict[str, float]]) -> list[str]:
    lines = ["", "## Peers on the same rows", ""]
    if not peers:
        return [*lines, "No peer predictions (validation/peers.csv is absent).", ""]
    lines += [
        "Predictions from `validation/run_peers.py` (run in `.venv-peers`, not a dependency)."
        " LLM-Viewer was not run: it is not in the package lists available here.",
        "",
        "| peer | rows | peer median error | roofcheck realistic (cross-validated) "
        "| roofcheck ideal |",
        "| :-- | --: | --: | --: | --: |",
    ]
    by_id = {p.result.row.id: p for p in predictions}
    for name, predicted in sorted(peers.items()):
        common = [(by_id[i], t) for i, t in predicted.items() if i in by_id]
        peer = statistics.median(abs(p.result.measured_s / t - 1) for p, t in common)
        ideal = statistics.median(abs(p.result.measured_over_ideal - 1) for p, _ in common)
        mine = median_error([p for p, _ in common])
        lines.append(f"| {name} | {len(common)} | {peer:.1%} | {mine:.1%} | {ideal:.1%} |")
    return [*lines, ""]


def svg(predictions: list[Prediction]) -> str:
    """Bars of measured / ideal per row (1 = on the roofline), the predicted range as a line
    and the realistic estimate as a tick."""
    bar_h, left, width = 14, 260, 420
    top = max(4.0, *(p.result.measured_over_ideal for p in predictions))
    top = max(top, *(p.high / p.result.roofline.expected_time for p in predictions))
    height = bar_h * len(predictions) + 40

    def x(seconds: float, ideal: float) -> float:
        return left + width * (seconds / ideal) / top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{height}"'
        ' font-family="sans-serif" font-size="10">',
        f'<text x="{left}" y="12">measured / ideal roofline (bar); realistic (tick) and its'
        " range (line), cross-validated</text>",
    ]
    for i, p in enumerate(predictions):
        r, y = p.result, 20 + i * bar_h
        ideal = r.roofline.expected_time
        w = width * r.measured_over_ideal / top
        mid = y + bar_h / 2
        parts += [
            f'<text x="{left - 4}" y="{y + 10}" text-anchor="end">{esc(r.row.id)}</text>',
            f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar_h - 4}" fill="#4a7ab7"/>',
            f'<line x1="{x(p.low, ideal):.1f}" x2="{x(p.high, ideal):.1f}" y1="{mid}" '
            f'y2="{mid}" stroke="#d33"/>',
            f'<line x1="{x(p.realistic, ideal):.1f}" x2="{x(p.realistic, ideal):.1f}" y1="{y}" '
            f'y2="{y + bar_h}" stroke="#d33"/>',
            f'<text x="{left + w + 3:.1f}" y="{y + 10}">{r.measured_over_ideal:.2f}</text>',
        ]
    one = left + width / top
    parts.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="16" y2="{height}" stroke="#000"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _summary_line(label: str, group: Sequence[Prediction]) -> str:
    ratio = statistics.median(p.result.measured_over_ideal for p in group)
    errors = [p.error for p in group]
    return (
        f"| {label} | {len(group)} | {len({p.result.row.source for p in group})} | "
        f"{ratio:.2f} | {statistics.median(errors):.1%} | {within_source_error(group):.1%} | "
        f"{percentile_90(errors):.1%} | {inside_share(group):.0%} | {median_width(group):.2f}x |"
    )


def _summary_lines(predictions: list[Prediction]) -> list[str]:
    """Per kind, then all rows, the rows marked * and the others."""
    kinds = sorted({p.result.kind for p in predictions})
    marked = [p for p in predictions if p.result.row.in_sample]
    return [
        *(_summary_line(kind, [p for p in predictions if p.result.kind is kind]) for kind in kinds),
        _summary_line("**all**", predictions),
        _summary_line("rows marked *", marked),
        _summary_line("the other rows", [p for p in predictions if not p.result.row.in_sample]),
    ]


def _ms(seconds: float) -> str:
    return f"{ms_from_seconds(seconds):.4g}"


def report(
    predictions: list[Prediction], catalog_version: str, peers: dict[str, dict[str, float]]
) -> str:
    """The Markdown report."""
    results = [p.result for p in predictions]
    chips = sorted({r.row.chip for r in results})
    stacks = sorted({r.row.software for r in results})
    errors = [p.error for p in predictions]
    lines = [
        "# Validation against published measurements",
        "",
        "Generated by `python -m app.validation` from `validation/measurements.csv`"
        f" (chip catalog {catalog_version}); do not edit by hand.",
        "",
        f"- Rows: {len(results)} real, published measurements from"
        f" {len({r.row.source for r in results})} sources on {len(chips)} chips"
        f" ({', '.join(chips)}) and {len(stacks)} software stacks ({', '.join(stacks)}).",
        f"- Faster than the ideal roofline: "
        f"{sum(r.measured_over_ideal < 1 for r in results)} rows (must be 0).",
        "- The realistic estimate and its range of every row are predicted by the published-runs"
        " table fitted **without the row's source** (leave one source out): its median ratio"
        " (the median of each source's median, so that a source counts once), and its range,"
        " the 10th to 90th percentile of measured / realistic time of the other sources' runs,"
        " each predicted by a table fitted without its own source too, and at least the row's"
        " fixed costs at the ends of their own spread (docs/formulas.md#realistic-time). No"
        " figure of a row's prediction saw its source."
        " A source is one publication (its URL): publications of one author's machine or one"
        " harness (ggerganov's M2 Ultra in several llama.cpp PRs, InferenceX's issues and"
        " PRs) count apart, so their rows are predicted with their siblings' help; the result"
        " files of one harness published together (a folder at one commit: dstack's, Google's"
        " tpu-recipes) are one publication, cited by that folder, each quote naming its file.",
        "- Error: |measured / realistic - 1|, the distance of the run from the estimate as a"
        " share of the estimate (a run 1.5x or 0.5x the realistic time is 50% off), for every"
        " figure here, the peers' included. Width: the range's high end over its low end.",
        f"- In all: median error {statistics.median(errors):.1%}, 90th percentile"
        f" {percentile_90(errors):.1%}; {inside_share(predictions):.0%} of the rows lie inside"
        f" the predicted 10th-90th percentile range, of median width"
        f" {median_width(predictions):.2f}x.",
        "- Within its source: the median distance of a row from its own source's median run of"
        " its kind (both as measured / realistic), the error that would be left if every"
        " source's level were known. No table fitted on other sources knows it: the median"
        f" error's remainder ({statistics.median(errors):.1%} against"
        f" {within_source_error(predictions):.1%}) is how far one source sits from another,"
        " its machine, versions and way of timing.",
        "- Rows marked * come from a source that also set a chip's sustained fractions (the"
        " catalog's best-case GEMM and copy): their ideal-to-sustained step saw them, so they"
        " are reported apart too.",
        "- Peers: see [Peers on the same rows](#peers-on-the-same-rows).",
        "",
        "| rows | n | sources | median measured/ideal | median error | within its source "
        "| 90th pct error | inside range | median width |",
        "| :-- | --: | --: | --: | --: | --: | --: | --: | --: |",
        *_summary_lines(predictions),
        "",
        "![measured over ideal](validation.svg)",
        "",
        "| id | chip | kind | stack | ideal ms | realistic ms (range) | measured ms"
        " | measured/ideal | error | source |",
        "| :-- | :-- | :-- | :-- | --: | --: | --: | --: | --: | :-- |",
    ]
    for p in predictions:
        r = p.result
        star = "*" if r.row.in_sample else ""
        lines.append(
            f"| {r.row.id}{star} | {r.row.chip} | {r.kind} | {r.row.software} | "
            f"{_ms(r.roofline.expected_time)} | {_ms(p.realistic)} ({_ms(p.low)}-{_ms(p.high)})"
            f" | {_ms(r.measured_s)} | {r.measured_over_ideal:.2f} | {p.error:.1%} | "
            f"[link]({r.row.source_url}) |"
        )
    lines += _peer_lines(predictions, peers)
    lines += ["## Quotes", ""]
    lines += [f"- **{r.row.id}**: {r.row.quote}" for r in results]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Fit the engine's published-runs table, then write docs/validation.md and its chart."""
    catalog, models = load_catalog_files(Settings())
    rows = load()
    results: list[Result] = evaluate(rows, catalog, models)
    write_table(fit(results))
    predictions = leave_one_source_out(results)
    REPORT_PATH.write_text(report(predictions, catalog.version, load_peers()), encoding="utf-8")
    CHART_PATH.write_text(svg(predictions), encoding="utf-8")
    print(
        f"wrote {REPORT_PATH} ({len(results)} rows, cross-validated median error "
        f"{median_error(predictions):.1%}, {inside_share(predictions):.0%} inside the range)"
    )
