"""A stored run as the command line says it, and its confirmation: when the regression gate
answers `suspected`, `--confirm N` re-measures N repeats and posts them to confirm or clear
it (docs/formulas.md, "Confirming, and false alarms"). Standard library only."""

from __future__ import annotations

import re
import shlex
import subprocess
from typing import Any

from app import formatting as fmt
from app.measure.measure_errors import MeasureError

# what a re-run's output must end with: its measured time, a plain decimal number
_LAST_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*$")
RERUN_TIMEOUT_S = 3600  # one re-run of a benchmark: an hour before it is called stuck


def summary(answer: dict[str, Any], failed: list[str]) -> str:
    """The answer of /check or of a stored run in one line: PASS or FAIL, the verdict, the
    times, where it sits among published runs, and for a stored one its gate's reading."""
    status = "FAIL" if failed else "PASS"
    judged = answer.get("expectation", answer)
    line = (
        f"roofcheck: {status} {answer['verdict']}: measured "
        f"{fmt.seconds(answer['measured_time_s'])} vs roofline "
        f"{fmt.seconds(answer['expected_time_s'])} ({answer['ratio']:.2f}x, "
        f"{judged.get('bound', '?')}-bound) on {answer['chip']['id']}"
    )
    if judged.get("realistic_range_s") and judged.get("against_published"):
        low, high = judged["realistic_range_s"]
        line += (
            f"; published runs on {judged['stack']} {fmt.seconds(low)}-{fmt.seconds(high)}: "
            f"{judged['against_published'].replace('_', ' ')}"
        )
    if "id" in answer:
        compared = answer.get("comparison") or {}
        line += f" [stored #{answer['id']}{_against(compared)}]{_suspicion(compared)}"
    if failed:
        line += ": " + "; ".join(failed)
    return line


def _against(comparison: dict[str, Any]) -> str:
    """The regression gate's reading: the change vs the window's median, the window, the
    threshold, the test and the confidence."""
    window = comparison.get("window")
    if not window:
        return ", no earlier run to compare with"
    runs = window["runs"]
    change = comparison.get("change_vs_median")
    where = {
        "previous": f"of the {runs} run{'' if runs == 1 else 's'} before it",
        "branch": f"of {runs} run{'' if runs == 1 else 's'} on the baseline branch",
        "baseline_id": "of the baseline run alone",
    }.get(window["source"], f"of {runs} runs")
    text = (
        f", {'?' if change is None else format(change, '+.1%')} vs the median {where} "
        f"(threshold {comparison['threshold']:.1%}, "
    )
    confidence = f"{comparison['confidence'] * 100:.3g}% confidence"
    if comparison.get("test") == "insufficient":
        return text + f"too few repeats for a test at {confidence})"
    return text + f"Mann-Whitney p = {comparison['p_value']:.3g} at {confidence})"


def _suspicion(comparison: dict[str, Any]) -> str:
    """What a confirming run decided, or of a suspected regression what would decide it."""
    decided = comparison.get("confirmation")
    if decided is not None:
        said = {"confirmed": "confirmed", "cleared": "cleared", "open": "still suspected"}
        return f"; confirming #{comparison['confirms']}: regression {said[decided]}"
    if not comparison.get("suspected"):
        return ""
    needed = comparison.get("repeats_needed")
    if needed is None:
        return "; regression: suspected (no run the test reads would decide it: widen the window)"
    return f"; regression: suspected ({needed} repeats would decide it: --confirm {needed})"


def suspected(answer: dict[str, Any]) -> bool:
    """Whether a stored run's gate answered `suspected`."""
    return bool((answer.get("comparison") or {}).get("suspected"))


def confirming_body(
    body: dict[str, Any], answer: dict[str, Any], times: list[float]
) -> dict[str, Any]:
    """The body of the run confirming `answer`'s: the same run, with the fresh `times` (in the
    unit `body` gave its own) and `confirms` naming it."""
    unit = "measured_ms" if "measured_ms" in body else "measured_time_s"
    return {**body, unit: times, "confirms": answer["id"]}


def rerun_times(command: str, count: int) -> list[float]:
    """Run `command` (split as a shell would, run without one) `count` times: each time, the
    last number it prints is one measured time (MeasureError when it fails or prints none)."""
    argv = shlex.split(command)
    if not argv:
        raise MeasureError("--rerun: give the command that measures the run again")
    times = []
    for number in range(1, count + 1):
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=RERUN_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise MeasureError(f"--rerun {command!r}: {error}") from error
        found = _LAST_NUMBER.search(done.stdout)
        if done.returncode != 0 or found is None:
            raise MeasureError(
                f"--rerun {command!r}, run {number} of {count}: exit {done.returncode}, "
                f"{'no time at the end of its output' if found is None else 'failed'}"
            )
        times.append(float(found.group(1)))
    return times
