"""Validation against published measurements: `python -m app.validation` writes the report.

Each row of validation/measurements.csv is a real, published, measured run (source URL and the
quoted sentence or table row), expressed as a roofcheck workload on a catalog chip. For every
row the report gives the ideal roofline time, the realistic time (sustained fractions of the
catalog), the measured time and their ratios; a measurement faster than the ideal roofline
means a wrong spec or formula and fails the test suite.

How a reported figure becomes a measured time (the workload's FLOPs or bytes divided by the
reported rate, so the time is the one the source measured for that work):
  TFLOP/s -> flops / (value * 1e12); GB/s -> bytes / (value * 1e9);
  MFU -> flops / (value * catalog peak); s, ms -> the value itself;
  out_tok/s (generate rows) -> batch * gen_len / value; out_tok/s/chip -> the same over
  value * tp; tok/s (decode rows) -> batch / value, (prefill rows) -> batch * seq_len / value;
  tok/s/chip (training rows) -> tokens_per_step / (chips * value).
Transformer rows (decode, prefill, generate) use the engine's `estimate` on a catalog model.
Training rows are `custom` work of 6 N D FLOPs per step (Kaplan et al. 2020,
https://arxiv.org/abs/2001.08361, eq. 2.1: forward + backward ~ 6 FLOPs per parameter per
token), split evenly over the chips, reading each chip's bf16 weight shard once (2 N / chips
bytes); attention FLOPs are left out, as in the sources' own MFU accounting.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.catalog.loader import ChipCatalogVersion, ModelCatalogVersion
from app.engine import (
    Dtype,
    Phase,
    Precision,
    TransformerSpec,
    Unit,
    attention,
    custom,
    estimate,
    matmul,
    memcopy,
    place,
    saxpy,
)
from app.engine.roofline import Roofline, Work
from app.engine.units import GIGA, TERA, ms_from_seconds, seconds_from_ms
from app.services.catalogs import load_catalog_files
from app.settings import Settings
from app.web.svg import esc

ROOT = Path(__file__).resolve().parent.parent
CSV_PATH = ROOT / "validation" / "measurements.csv"
REPORT_PATH = ROOT / "docs" / "validation.md"
CHART_PATH = ROOT / "docs" / "validation.svg"
PEERS_PATH = ROOT / "validation" / "peers.csv"  # written by validation/run_peers.py
# Rows whose own figure set a catalog sustained fraction (in-sample: their realistic error
# is zero by construction); the median error is also stated without them.
CALIBRATION_SOURCES = ("maximum-achievable-matmul-flops", "a10g", "BabelStream", "gpu-workshop")


@dataclass(frozen=True, slots=True)
class Measurement:
    """One published measurement, as written in the CSV."""

    id: str
    chip: str
    category: str
    workload: str
    params: dict[str, Any]
    measured: float
    measured_unit: str
    source_url: str
    quote: str
    software: str

    @property
    def in_sample(self) -> bool:
        """True when this row's source also calibrated the catalog's sustained fractions."""
        return any(tag.lower() in self.source_url.lower() for tag in CALIBRATION_SOURCES)


@dataclass(frozen=True, slots=True)
class Result:
    """A measurement placed on its chip's roofline."""

    row: Measurement
    roofline: Roofline
    measured_s: float

    @property
    def measured_over_ideal(self) -> float:
        """>= 1 for every real run; below 1 means a wrong spec or formula."""
        return self.measured_s / self.roofline.expected_time

    @property
    def realistic_error(self) -> float:
        """Relative error of the realistic estimate: |realistic - measured| / measured."""
        return abs(self.roofline.realistic_time - self.measured_s) / self.measured_s


def load(path: Path = CSV_PATH) -> list[Measurement]:
    """Read the validation set."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            Measurement(
                id=r["id"],
                chip=r["chip"],
                category=r["category"],
                workload=r["workload"],
                params=json.loads(r["params"]),
                measured=float(r["measured"]),
                measured_unit=r["measured_unit"],
                source_url=r["source_url"],
                quote=r["quote"],
                software=r["software"],
            )
            for r in csv.DictReader(fh)
        ]


def work(row: Measurement) -> Work:
    """The roofcheck workload a row describes."""
    p = row.params
    if row.workload == "matmul":
        return matmul(
            p["m"], p["n"], p["k"], Dtype(p["dtype"]), allow_tf32=p.get("allow_tf32", False)
        )
    if row.workload == "attention":
        seq = p["seq"]
        return attention(
            batch=p["batch"],
            heads=p["heads"],
            q_len=seq,
            kv_len=seq,
            head_dim=p["head_dim"],
            dtype=Dtype(p["dtype"]),
            causal=p["causal"],
        )
    if row.workload == "copy":
        return memcopy(p["bytes_copied"])
    if row.workload == "triad":  # a = b + s c: saxpy's 2 FLOPs and 3 arrays per element
        return saxpy(p["elements"], Dtype(p["dtype"]))
    if row.workload == "training":
        flops = 6.0 * p["params"] * p["tokens_per_step"] / p["chips"]
        return custom(flops, 2.0 * p["params"] / p["chips"], Dtype(p["dtype"]), Unit.MATRIX)
    raise ValueError(f"{row.id}: unknown workload {row.workload!r}")


def measured_seconds(row: Measurement, roof: Roofline) -> float:
    """The measured time of the row's work (module docstring)."""
    unit, value = row.measured_unit, row.measured
    if unit == "TFLOP/s":
        return roof.flops / (value * TERA)
    if unit == "GB/s":
        return roof.bytes / (value * GIGA)
    if unit == "MFU":
        return roof.flops / (value * roof.peak.flops_per_s)
    if unit == "s":
        return value
    if unit == "ms":
        return seconds_from_ms(value)
    if unit == "out_tok/s":  # a whole generate request: batch x gen_len tokens at this rate
        return float(row.params["batch"] * row.params["gen_len"]) / value
    if unit == "out_tok/s/chip":  # the same, reported per GPU of a tp-way group
        tp = float(row.params["tp"])
        return float(row.params["batch"] * row.params["gen_len"]) / (value * tp)
    if unit == "tok/s":  # decode: batch new tokens per step; prefill: batch x seq_len prompt tokens
        p = row.params
        tokens = p["batch"] if p["phase"] == "decode" else p["batch"] * p["seq_len"]
        return float(tokens) / value
    if unit == "tok/s/chip":  # training: one step's tokens over the chips, at this rate per chip
        return float(row.params["tokens_per_step"]) / (float(row.params["chips"]) * value)
    raise ValueError(f"{row.id}: unknown measured_unit {unit!r}")


def _roofline(row: Measurement, chips: ChipCatalogVersion, models: ModelCatalogVersion) -> Roofline:
    chip = chips.resolve(row.chip).chip
    if row.workload != "transformer":
        return place(work(row), chip)
    p = row.params
    dtype = Dtype(p["dtype"])
    spec = TransformerSpec(
        phase=Phase(p["phase"]),
        batch=p["batch"],
        seq_len=p["seq_len"],
        gen_len=p.get("gen_len", 1),
        precision=Precision(dtype, dtype, dtype),
        tp=p.get("tp", 1),
    )
    return estimate(models.resolve(p["model"]).arch, chip, spec).roofline


def evaluate(
    rows: list[Measurement], chips: ChipCatalogVersion, models: ModelCatalogVersion
) -> list[Result]:
    """Place every row on its chip's roofline."""
    results = []
    for row in rows:
        roof = _roofline(row, chips, models)
        results.append(Result(row, roof, measured_seconds(row, roof)))
    return results


def median_error(results: list[Result]) -> float:
    """Median relative error of the realistic estimate."""
    return statistics.median(r.realistic_error for r in results)


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


def _peer_lines(results: list[Result], peers: dict[str, dict[str, float]]) -> list[str]:
    lines = ["", "## Peers on the same rows", ""]
    if not peers:
        return [*lines, "No peer predictions (validation/peers.csv is absent).", ""]
    lines += [
        "Predictions from `validation/run_peers.py` (run in `.venv-peers`, not a dependency)."
        " LLM-Viewer was not run: it is not in the package lists available here.",
        "",
        "| peer | rows | peer median error | roofcheck realistic | roofcheck ideal |",
        "| :-- | --: | --: | --: | --: |",
    ]
    by_id = {r.row.id: r for r in results}
    for name, predictions in sorted(peers.items()):
        common = [(by_id[i], t) for i, t in predictions.items() if i in by_id]
        peer = statistics.median(abs(t - r.measured_s) / r.measured_s for r, t in common)
        ideal = statistics.median(
            abs(r.roofline.expected_time - r.measured_s) / r.measured_s for r, _ in common
        )
        mine = median_error([r for r, _ in common])
        lines.append(f"| {name} | {len(common)} | {peer:.1%} | {mine:.1%} | {ideal:.1%} |")
    return [*lines, ""]


def _svg(results: list[Result]) -> str:
    """A horizontal bar chart of measured / ideal per row (1 = on the roofline)."""
    bar_h, left, width = 14, 260, 420
    top = max(4.0, *(r.measured_over_ideal for r in results))
    height = bar_h * len(results) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{height}"'
        ' font-family="sans-serif" font-size="10">',
        f'<text x="{left}" y="12">measured / ideal roofline (bar); realistic / ideal (tick)</text>',
    ]
    for i, r in enumerate(results):
        y = 20 + i * bar_h
        w = width * r.measured_over_ideal / top
        tick = left + width * (r.roofline.realistic_time / r.roofline.expected_time) / top
        parts += [
            f'<text x="{left - 4}" y="{y + 10}" text-anchor="end">{esc(r.row.id)}</text>',
            f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar_h - 4}" fill="#4a7ab7"/>',
            f'<line x1="{tick:.1f}" x2="{tick:.1f}" y1="{y}" y2="{y + bar_h}" stroke="#d33"/>',
            f'<text x="{left + w + 3:.1f}" y="{y + 10}">{r.measured_over_ideal:.2f}</text>',
        ]
    one = left + width / top
    parts.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="16" y2="{height}" stroke="#000"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _category_lines(results: list[Result]) -> list[str]:
    lines = []
    for category in sorted({r.row.category for r in results}):
        group = [r for r in results if r.row.category == category]
        ratio = statistics.median(r.measured_over_ideal for r in group)
        lines.append(f"| {category} | {len(group)} | {ratio:.2f} | {median_error(group):.1%} |")
    return lines


def _ms(seconds: float) -> str:
    return f"{ms_from_seconds(seconds):.4g}"


def report(results: list[Result], catalog_version: str, peers: dict[str, dict[str, float]]) -> str:
    """The Markdown report."""
    out_of_sample = [r for r in results if not r.row.in_sample]
    chips = sorted({r.row.chip for r in results})
    lines = [
        "# Validation against published measurements",
        "",
        "Generated by `python -m app.validation` from `validation/measurements.csv`"
        f" (chip catalog {catalog_version}); do not edit by hand.",
        "",
        f"- Rows: {len(results)} real, published measurements on {len(chips)} chips"
        f" ({', '.join(chips)}).",
        f"- Faster than the ideal roofline: "
        f"{sum(r.measured_over_ideal < 1 for r in results)} rows (must be 0).",
        f"- Median absolute error of the realistic estimate: {median_error(results):.1%} over all"
        f" rows; {median_error(out_of_sample):.1%} over the {len(out_of_sample)} rows whose"
        " source did not calibrate the catalog (in-sample rows are marked *).",
        "- Peers: see [Peers on the same rows](#peers-on-the-same-rows).",
        "",
        "| kind | rows | median measured/ideal | median realistic error |",
        "| :-- | --: | --: | --: |",
        *_category_lines(results),
        "",
        "![measured over ideal](validation.svg)",
        "",
        "| id | chip | kind | ideal ms | realistic ms | measured ms | measured/ideal"
        " | realistic error | source |",
        "| :-- | :-- | :-- | --: | --: | --: | --: | --: | :-- |",
    ]
    for r in results:
        star = "*" if r.row.in_sample else ""
        lines.append(
            f"| {r.row.id}{star} | {r.row.chip} | {r.row.category} | "
            f"{_ms(r.roofline.expected_time)} | {_ms(r.roofline.realistic_time)} | "
            f"{_ms(r.measured_s)} | {r.measured_over_ideal:.2f} | {r.realistic_error:.1%} | "
            f"[link]({r.row.source_url}) |"
        )
    lines += _peer_lines(results, peers)
    lines += ["## Quotes", ""]
    lines += [f"- **{r.row.id}**: {r.row.quote}" for r in results]
    lines += [
        "",
        "## Not covered yet",
        "",
        "Peers on the training, decode and prefill rows, and LLM-Viewer are not in this",
        "revision.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Regenerate docs/validation.md and docs/validation.svg."""
    catalog, models = load_catalog_files(Settings())
    results = evaluate(load(), catalog, models)
    REPORT_PATH.write_text(report(results, catalog.version, load_peers()), encoding="utf-8")
    CHART_PATH.write_text(_svg(results), encoding="utf-8")
    print(f"wrote {REPORT_PATH} ({len(results)} rows, median error {median_error(results):.1%})")


if __name__ == "__main__":
    main()
