"""`roofcheck measure SCRIPT.py:NAME --chip CHIP`: time a function, count its work and judge it.

NAME is a zero-argument callable in the script that builds its inputs and returns `(fn, args)`,
so that only `fn(*args)` is timed. Prints the report (or, with --json, everything as JSON) and
exits 0, 1 when the verdict is in --fail-on, or 2 on an error (the script's own included).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from app.engine.verdict import Verdict
from app.measure import judging, submitting
from app.measure.judging import LOCAL, REPROBE_ENV, default_url
from app.measure.measure_errors import MeasureError, explain
from app.measure.timing import MAX_TIME_S, MIN_REPEATS, TARGET_CI

PASS, FAIL, ERROR = 0, 1, 2


def add_parser(commands: Any) -> None:
    """Add the `measure` command to the `roofcheck` subcommands."""
    sub = commands.add_parser(
        "measure",
        help="time a PyTorch function, count its work and judge it",
        description=__doc__.split("\n\n")[0],
    )
    sub.add_argument("target", metavar="SCRIPT.py:NAME", help="NAME() returns (fn, args)")
    sub.add_argument(
        "--chip",
        required=True,
        help=f"catalog id or alias, e.g. a100; or {LOCAL}: this machine's probed ceilings, "
        "judged here without a service",
    )
    sub.add_argument("--url", default=default_url(), help="service URL (env ROOFCHECK_URL)")
    sub.add_argument(
        "--stack",
        help="the software stack (default: compiled for a torch.compile'd function, else eager)",
    )
    sub.add_argument("--repeats", type=int, default=MIN_REPEATS, help="fewest timed runs")
    sub.add_argument("--warmup", type=int, default=3, help="untimed runs before timing")
    sub.add_argument(
        "--max-time-s", type=float, default=MAX_TIME_S, help="time budget of the repeats"
    )
    sub.add_argument(
        "--target-ci",
        type=float,
        default=TARGET_CI,
        help="stop when the median's 95%% interval is within this fraction of it",
    )
    sub.add_argument("--fail-on", default="", help="comma-separated verdicts that exit 1")
    sub.add_argument(
        "--allow-device-mismatch",
        action="store_true",
        help="judge a run on the CPU against a catalog chip anyway (the report warns first); "
        "without it that is refused (exit 2)",
    )
    sub.add_argument(
        "--reprobe",
        action="store_true",
        help=f"with --chip {LOCAL}: probe this machine again rather than read its cached "
        f"ceilings (env {REPROBE_ENV})",
    )
    sub.add_argument("--json", action="store_true", help="print everything as JSON")
    sub.add_argument(
        "--submit",
        action="store_true",
        help="also store the run (POST /measurements, its repeats as measured) and gate it "
        "on a regression against the latest runs (exit 1 on a regression)",
    )
    for flag, what in (
        ("--label", "the stored run's label"),
        ("--branch", "the stored run's branch"),
        ("--baseline-branch", "compare with the latest runs on this branch"),
        ("--token", "write token, when the service restricts writes (env ROOFCHECK_TOKEN)"),
    ):
        sub.add_argument(flag, help=f"with --submit: {what}")
    sub.add_argument(
        "--confirm",
        type=int,
        metavar="N",
        help="with --submit, when the gate answers 'suspected': time N more repeats and "
        "submit them to confirm (exit 1) or clear (exit 0) the regression",
    )


def load_case(target: str) -> tuple[Any, tuple[Any, ...]]:
    """Import SCRIPT.py and call NAME(): the function and its arguments."""
    path_text, sep, name = target.rpartition(":")
    if not sep or not path_text or not name:
        raise MeasureError(f"give SCRIPT.py:NAME, got {target!r}")
    path = Path(path_text)
    spec = importlib.util.spec_from_file_location(f"roofcheck_case_{path.stem}", path)
    if not path.is_file() or spec is None or spec.loader is None:
        raise MeasureError(f"cannot read {path_text}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))  # the script imports its neighbours
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.resolve().parent))
    case = getattr(module, name, None)
    if not callable(case):
        raise MeasureError(f"{path_text} has no callable {name}")
    made = case()
    if not (isinstance(made, tuple | list) and len(made) == 2 and callable(made[0])):
        raise MeasureError(f"{name}() must return (fn, args), got {type(made).__name__}")
    fn, args = made
    return fn, tuple(args) if isinstance(args, tuple | list) else (args,)


def _fail_on(text: str) -> set[str]:
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    allowed = {v.value for v in Verdict}
    if unknown := sorted(chosen - allowed):
        raise MeasureError(
            f"--fail-on: unknown {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    return chosen


def run(args: argparse.Namespace) -> int:
    """Run `roofcheck measure`; return the exit code."""
    from app.measure.runner import measure  # noqa: PLC0415

    try:
        fail_on = _fail_on(args.fail_on)
        fn, fn_args = load_case(args.target)
        result = measure(
            fn,
            *fn_args,
            chip=args.chip,
            url=args.url,
            stack=args.stack,
            repeats=args.repeats,
            warmup=args.warmup,
            max_time_s=args.max_time_s,
            target_ci=args.target_ci,
            allow_device_mismatch=args.allow_device_mismatch,
            reprobe=args.reprobe,
        )
    except ImportError as error:
        print(f"roofcheck: {explain(error)}", file=sys.stderr)
        return ERROR
    except (MeasureError, ValueError) as error:
        print(f"roofcheck: {error}", file=sys.stderr)
        return ERROR
    except Exception:  # the script's own error: its traceback, and a usage exit code
        traceback.print_exc()
        return ERROR
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.report())
    failed = result.verdict in fail_on
    if args.submit:
        try:
            failed = _submitted(args, result, fn, fn_args) or failed
        except (MeasureError, ValueError) as error:
            print(f"roofcheck: {error}", file=sys.stderr)
            return ERROR
    return FAIL if failed else PASS


def _submitted(args: argparse.Namespace, result: Any, fn: Any, fn_args: tuple[Any, ...]) -> bool:
    """Store the measured run and print its gate's line; when suspected and --confirm asks,
    time N more repeats and submit them to confirm it: whether the last answer's gate failed
    (a regression)."""
    from app.measure.runner import time_again  # noqa: PLC0415 (needs torch, as measure does)

    if result.answer is None or args.chip == LOCAL:
        raise MeasureError("--submit stores a run judged against a catalog chip, not local")
    if args.confirm is not None and args.confirm < 1:
        raise MeasureError(f"--confirm takes a number of repeats, at least 1: {args.confirm}")
    given = {
        "label": args.label,
        "branch": args.branch,
        "baseline_branch": args.baseline_branch,
    }
    body = {
        "chip": result.answer["chip"]["id"],
        "stack": result.answer["stack"],
        "workload": result.workload,
        "measured_time_s": list(result.timing.times_s),
        **{k: v for k, v in given.items() if v is not None},
    }
    token = args.token or os.environ.get("ROOFCHECK_TOKEN") or None
    answer = judging.store(args.url, body, token)
    print(submitting.summary(answer, answer["gate"]["reasons"]))
    if args.confirm and submitting.suspected(answer):
        again = time_again(
            fn, *fn_args, clock=result.timing.clock, repeats=args.confirm, warmup=args.warmup
        )
        body = submitting.confirming_body(body, answer, list(again.times_s))
        answer = judging.store(args.url, body, token)
        print(submitting.summary(answer, answer["gate"]["reasons"]))
    return bool(answer["gate"]["failed"])
