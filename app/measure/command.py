"""`roofcheck measure SCRIPT.py:NAME --chip CHIP`: time a function, count its work and judge it.

NAME is a zero-argument callable in the script that builds its inputs and returns `(fn, args)`,
so that only `fn(*args)` is timed. Prints the report (or, with --json, everything as JSON) and
exits 0, 1 when the verdict is in --fail-on, or 2 on an error (the script's own included).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from app.engine.verdict import Verdict
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
    return FAIL if result.verdict in fail_on else PASS
