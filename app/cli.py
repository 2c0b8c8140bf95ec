"""`roofcheck`: check or submit a measured runtime from a shell or a CI job.

    roofcheck check  --chip a100 --model llama-8b --batch 8 --measured-ms 5
    roofcheck submit --chip a100 --model llama-8b --batch 8 --measured-ms 5 --label nightly
    roofcheck table  bench.csv --chip h100 --fail-below 0.5

Prints one line and exits 0 when the run passes, 1 when its verdict (or, for submit, a
regression; never a suspected one) is in --fail-on, and 2 on a usage, network or server error.
`submit --confirm N --rerun CMD` re-runs a suspected regression N times to confirm or clear it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app import formatting as fmt
from app.engine.compare import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD, DEFAULT_WINDOW
from app.engine.units import MIB
from app.engine.verdict import gate_choices
from app.measure import command as measure_command
from app.measure import submitting
from app.measure.measure_errors import MeasureError
from app.probe import COPY_BYTES, MATMUL_N, NumpyMissing

PASS, FAIL, ERROR = 0, 1, 2
DEFAULT_URL = "http://localhost:8000"
BAD_VERDICTS = "does_not_fit,faster_than_roofline,order_of_magnitude_slower"
TIMEOUT_S = 30


class CliError(Exception):
    """A usage, network or server problem: exit code 2."""


def _first_env(*names: str) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roofcheck", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="judge a measured time (nothing is stored)")
    submit = commands.add_parser("submit", help="judge and store a measured time")
    probe = commands.add_parser("probe", help="measure this machine's copy and matmul ceilings")
    probe.add_argument(
        "--copy-mib", type=int, default=COPY_BYTES // MIB, help="bytes copied, in MiB"
    )
    probe.add_argument("--n", type=int, default=MATMUL_N, help="matmul size n (GPU; CPU uses n/4)")
    probe.add_argument("--submit", metavar="CHIP", help="store the profile as this chip's")
    probe.add_argument("--json", action="store_true", help="print the profile as JSON")
    probe.add_argument(
        "--force",
        action="store_true",
        help="with --submit: store it even if this device is not the chip (recorded as forced)",
    )
    table = commands.add_parser("table", help="judge a benchmark table, row by row (CSV or JSON)")
    table.add_argument("file", help="a CSV file with a header, or a .json list of rows")
    for flag in ("--chip", "--stack", "--catalog-version"):
        table.add_argument(flag, required=flag == "--chip", help="as for check")
    table.add_argument("--fail-below", type=float, help="a fraction of the roofline, e.g. 0.5")
    table.add_argument("--fail-on", default=BAD_VERDICTS, help=f"verdicts; default {BAD_VERDICTS}")
    table.add_argument("--json", action="store_true", help="print the answer as JSON")
    for client in (check, submit, probe, table):
        client.add_argument(
            "--url",
            default=_first_env("ROOFCHECK_URL") or DEFAULT_URL,
            help="service URL (env ROOFCHECK_URL)",
        )
    for writer in (probe, submit):
        writer.add_argument(
            "--token",
            default=_first_env("ROOFCHECK_TOKEN"),
            help="write token, when the service restricts writes (env ROOFCHECK_TOKEN)",
        )
    measure_command.add_parser(commands)
    commands.add_parser("validate", help="regenerate docs/validation.md from the validation set")
    for sub, fail_on in ((check, BAD_VERDICTS), (submit, BAD_VERDICTS + ",regression")):
        sub.add_argument("--chip", required=True, help="catalog id or alias, e.g. a100")
        what = sub.add_mutually_exclusive_group(required=True)
        what.add_argument("--model", help="a transformer from the catalog, e.g. llama-8b")
        what.add_argument("--workload", help="any workload as JSON, or @file.json")
        for flag, kind in (
            ("--phase", str),
            ("--batch", int),
            ("--seq-len", int),
            ("--gen-len", int),
            ("--dtype", str),
            ("--weight-dtype", str),
            ("--kv-dtype", str),
            ("--tp", int),
        ):
            sub.add_argument(flag, type=kind, help="transformer workload field (see /docs)")
        sub.add_argument("--catalog-version")
        sub.add_argument(
            "--stack",
            help="the software stack (typical, eager, compiled, vllm, tensorrt-llm, ...): "
            "the realistic range comes from published runs on it",
        )
        measured = sub.add_mutually_exclusive_group(required=True)
        measured.add_argument(
            "--measured-ms",
            type=float,
            action="append",
            help="milliseconds; repeat the flag for repeats",
        )
        measured.add_argument("--measured-s", type=float, action="append", help="seconds")
        sub.add_argument(
            "--fail-on",
            default=fail_on,
            help=f"comma-separated verdicts (and 'regression'); default {fail_on}",
        )
    submit.add_argument("--label")
    submit.add_argument("--git-commit", default=_first_env("GITHUB_SHA", "CI_COMMIT_SHA"))
    submit.add_argument(
        "--branch", default=_first_env("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME")
    )
    submit.add_argument("--hostname", default=socket.gethostname())
    submit.add_argument("--software", action="append", default=[], metavar="NAME=VERSION")
    submit.add_argument("--notes")
    submit.add_argument("--baseline-branch", help="compare with the latest runs on this branch")
    submit.add_argument("--baseline-id", type=int, help="compare with this one stored run")
    submit.add_argument(
        "--window",
        type=int,
        help=f"how many latest runs to compare with (default {DEFAULT_WINDOW})",
    )
    submit.add_argument(
        "--threshold", type=float, help=f"regression threshold (default {DEFAULT_THRESHOLD:g})"
    )
    submit.add_argument(
        "--confidence",
        type=float,
        help=f"confidence a slowdown must reach (default {DEFAULT_CONFIDENCE:g})",
    )
    submit.add_argument(
        "--idempotency-key", help="a retried submit with the same key is stored once"
    )
    submit.add_argument(
        "--confirm",
        type=int,
        metavar="N",
        help="when the gate answers 'suspected': run --rerun N times and submit those N "
        "times to confirm (exit 1) or clear (exit 0) the regression",
    )
    submit.add_argument(
        "--rerun",
        metavar="COMMAND",
        help="with --confirm: the command that measures the run once, printing its time (in "
        "the unit of --measured-ms or --measured-s) as the last number of its output",
    )
    return parser


def _workload(args: argparse.Namespace) -> dict[str, Any]:
    if args.workload is not None:
        text = args.workload
        if text.startswith("@"):
            try:
                with open(text[1:], encoding="utf-8") as file:
                    text = file.read()
            except OSError as exc:
                raise CliError(f"cannot read {text[1:]}: {exc}") from exc
        try:
            workload: dict[str, Any] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(f"--workload is not JSON: {exc}") from exc
        return workload
    fields = ("phase", "batch", "seq_len", "gen_len", "dtype", "weight_dtype", "kv_dtype", "tp")
    workload = {"kind": "transformer", "model": args.model}
    workload.update({f: getattr(args, f) for f in fields if getattr(args, f) is not None})
    return workload


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"chip": args.chip, "workload": _workload(args)}
    if args.catalog_version:
        body["catalog_version"] = args.catalog_version
    if args.stack:
        body["stack"] = args.stack
    if args.measured_ms:
        body["measured_ms"] = args.measured_ms
    else:
        body["measured_time_s"] = args.measured_s
    if args.command == "submit":
        software = {}
        for item in args.software:
            name, sep, version = item.partition("=")
            if not sep:
                raise CliError(f"--software takes NAME=VERSION, got {item!r}")
            software[name] = version
        optional = {
            "label": args.label,
            "git_commit": args.git_commit,
            "branch": args.branch,
            "hostname": args.hostname,
            "notes": args.notes,
            "baseline_branch": args.baseline_branch,
            "baseline_id": args.baseline_id,
            "baseline_window": args.window,
            "regression_threshold": args.threshold,
            "confidence": args.confidence,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        body["software"] = software
    return body


def _post(
    url: str, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=body if isinstance(body, bytes) else json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        try:
            detail = json.load(exc)
        except (json.JSONDecodeError, ValueError):
            detail = {"detail": exc.reason}
        return exc.code, detail
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise CliError(f"cannot reach {url}: {exc}") from exc


def _error(status: int, body: dict[str, Any]) -> str:
    detail = body.get("detail")
    if isinstance(detail, list):
        parts = [f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg')}" for e in detail]
        return f"roofcheck: error {status}: " + "; ".join(parts)
    if isinstance(detail, dict):
        hint = detail.get("suggestions")
        more = f" (did you mean {', '.join(hint)}?)" if hint else ""
        return f"roofcheck: error {status}: {detail.get('message')}{more}"
    return f"roofcheck: error {status}: {detail}"


def _writer_headers(args: argparse.Namespace) -> dict[str, str]:
    """The bearer token and idempotency key of a write, when given."""
    headers = {}
    if args.token:
        headers["authorization"] = f"Bearer {args.token}"
    if getattr(args, "idempotency_key", None):
        headers["idempotency-key"] = args.idempotency_key
    return headers


def run(argv: Sequence[str]) -> int:
    """Run the command line `argv`; return the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "probe":
        from app.probe import probe  # noqa: PLC0415 (needs the optional numpy or torch)

        try:
            result = probe(copy_bytes=args.copy_mib * MIB, n=args.n, cpu_n=max(1, args.n // 4))
        except NumpyMissing as error:
            raise CliError(str(error)) from error
        print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
        if args.submit:
            chip = urllib.parse.quote(args.submit, safe="")
            body = result.as_dict()
            body = {k: body[k] for k in body if k not in ("copy_bytes", "matmul_n")}
            body["force"] = args.force
            url = f"{args.url.rstrip('/')}/chips/{chip}/empirical"
            status, answer = _post(url, body, _writer_headers(args))
            if status != 201:
                print(_error(status, answer), file=sys.stderr)
                return ERROR
            print(f"roofcheck: stored empirical profile #{answer['id']} of {answer['chip']}")
        return PASS
    if args.command == "measure":
        return measure_command.run(args)
    if args.command == "table":
        return _table(args)
    if args.command == "validate":
        from app.validation.report import main as validate  # noqa: PLC0415

        validate()
        return PASS
    fail_on = _fail_on(args.fail_on, regression=args.command == "submit")
    base = args.url.rstrip("/")
    if args.command == "check":
        status, answer = _post(f"{base}/check", _body(args))
        if status != 200:
            print(_error(status, answer), file=sys.stderr)
            return ERROR
        failed = [f"verdict {answer['verdict']}"] if answer["verdict"] in fail_on else []
        print(submitting.summary(answer, failed))
        return FAIL if failed else PASS
    return _submit(
        args,
        f"{base}/measurements?{urllib.parse.urlencode({'fail_on': ','.join(sorted(fail_on))})}",
    )


def _submit(args: argparse.Namespace, url: str) -> int:
    """POST /measurements; when its gate answers suspected and --confirm asks, the run
    measured again by --rerun and posted to confirm it: the exit code of the last answer."""
    if (args.confirm is None) != (args.rerun is None) or (args.confirm or 1) < 1:
        raise CliError("--confirm N (at least 1) and --rerun COMMAND go together")
    body = _body(args)
    answer = _submitted(url, body, _writer_headers(args))
    if answer is not None and args.confirm and submitting.suspected(answer):
        try:
            times = submitting.rerun_times(args.rerun, args.confirm)
        except MeasureError as error:
            raise CliError(str(error)) from error
        headers = _writer_headers(args)
        if "idempotency-key" in headers:  # the confirming run is a post of its own
            headers["idempotency-key"] += ":confirm"
        answer = _submitted(url, submitting.confirming_body(body, answer, times), headers)
    if answer is None:
        return ERROR
    return FAIL if answer["gate"]["failed"] else PASS


def _submitted(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any] | None:
    """POST /measurements and print its line: its answer, or None (the error printed)."""
    status, answer = _post(url, body, headers)
    if status not in (201, 412):
        print(_error(status, answer), file=sys.stderr)
        return None
    print(submitting.summary(answer, answer["gate"]["reasons"]))
    return answer


def _table(args: argparse.Namespace) -> int:
    """POST /check/table; FAIL on a row not judged, in --fail-on or below --fail-below."""
    fail_on = _fail_on(args.fail_on, regression=False)
    if not 0 < (args.fail_below or 1) <= 1:
        raise CliError(f"--fail-below is a fraction of the roofline, 0 to 1: {args.fail_below}")
    try:
        body = Path(args.file).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc}") from exc
    media = "application/json" if args.file.lower().endswith(".json") else "text/csv"
    given = {"chip": args.chip, "stack": args.stack, "catalog_version": args.catalog_version}
    query = urllib.parse.urlencode({k: v for k, v in given.items() if v})
    url = f"{args.url.rstrip('/')}/check/table?{query}"
    status, answer = _post(url, body, {"content-type": media})
    if status != 200:
        print(_error(status, answer), file=sys.stderr)
        return ERROR
    failed = [(row, reason) for row in answer["rows"] if (reason := _row_fails(row, fail_on, args))]
    summary, geomean = answer["summary"], answer["summary"]["geomean_efficiency"] or 0.0
    print(
        json.dumps(answer, indent=2)
        if args.json
        else f"roofcheck: {'FAIL' if failed else 'PASS'} {summary['rows']} rows on "
        f"{answer['chip']['id']} ({len(failed)} failing, {summary['errors']} not judged): "
        f"{', '.join(f'{n} {v}' for v, n in summary['verdicts'].items() if n)}; geometric mean "
        f"{geomean:.1%} of the roofline, "
        f"{fmt.seconds(summary['time_lost_s'])} lost"
    )
    for row, reason in [] if args.json else failed[:20]:  # in the table's order
        print(f"  row {row['row']} {row['label'] or ''}: {reason}")
    return FAIL if failed else PASS


def _row_fails(row: dict[str, Any], fail_on: set[str], args: argparse.Namespace) -> str | None:
    if row["error"]:
        return f"not judged: {row['error']['column']}: {row['error']['message']}"
    if row["verdict"] in fail_on:
        return f"verdict {row['verdict']} ({row['efficiency']:.1%} of the roofline)"
    if args.fail_below is not None and row["efficiency"] < args.fail_below:
        return f"{row['efficiency']:.1%} of the roofline, below {args.fail_below:.0%}"
    return None


def _fail_on(text: str, *, regression: bool) -> set[str]:
    """--fail-on's verdicts, each checked: a misspelt one would silently disable the gate."""
    allowed = gate_choices(regression=regression)
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    if unknown := sorted(chosen - allowed):
        raise CliError(
            f"--fail-on: unknown {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    return chosen


def main() -> None:
    """Console entry point."""
    try:
        sys.exit(run(sys.argv[1:]))
    except CliError as exc:
        print(f"roofcheck: {exc}", file=sys.stderr)
        sys.exit(ERROR)
