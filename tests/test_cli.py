"""The `roofcheck` command against the real service on a loopback port: output and exit codes."""

import json
import shlex
import sys
import time
import uuid

import pytest

from app.cli import ERROR, FAIL, PASS, CliError, main, run

# 2 * 4096^3 bf16 FLOPs on an A100: 440.5 us expected
MATMUL = json.dumps({"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"})


def test_check_passes_near_the_roofline(url, capsys):
    code = run(
        ["check", "--url", url, "--chip", "a100", "--workload", MATMUL, "--measured-ms", "0.5"]
    )
    out = capsys.readouterr().out
    assert code == PASS
    assert out.startswith("roofcheck: PASS near_roofline: measured 500 µs vs roofline 441 µs")
    assert "compute-bound" in out and "a100-sxm4-80gb" in out


def test_check_fails_an_order_of_magnitude_off(url, capsys):
    code = run(
        [
            "check",
            "--url",
            url,
            "--chip",
            "a100",
            "--model",
            "llama-8b",
            "--batch",
            "8",
            "--measured-ms",
            "90",
            "--measured-ms",
            "110",
        ]
    )
    assert code == FAIL
    assert "FAIL order_of_magnitude_slower" in capsys.readouterr().out


def test_check_fails_faster_than_the_hardware_allows(url, capsys):
    code = run(
        ["check", "--url", url, "--chip", "a100", "--workload", MATMUL, "--measured-s", "0.0001"]
    )
    assert code == FAIL
    assert "faster_than_roofline" in capsys.readouterr().out


def test_submit_stores_and_flags_a_regression(url, capsys):
    branch = f"cli-{uuid.uuid4().hex[:8]}"
    common = [
        "submit",
        "--url",
        url,
        "--chip",
        "a100",
        "--workload",
        MATMUL,
        "--label",
        "cli-test",
        "--software",
        "torch=2.5.1",
        # a branch of this test's own, compared with itself: the window holds only its runs,
        # whatever else the shared server stored of this workload
        "--branch",
        branch,
        "--baseline-branch",
        branch,
    ]
    assert run([*common, "--measured-ms", "0.5"]) == PASS
    first = capsys.readouterr().out
    assert "[stored #" in first and "no earlier run to compare with" in first
    # 0.6 / 0.5 - 1 = +20% > 10%: a regression fails the job; one repeat against one cannot
    # be tested (the smallest p of 1 vs 1 is 1/C(2,1) = 0.5), which the line says
    assert run([*common, "--measured-ms", "0.6"]) == FAIL
    second = capsys.readouterr().out
    assert (
        "+20.0% vs the median of 1 run on the baseline branch (threshold 10.0%, too few repeats "
        "for a test at 95% confidence)" in second
    )
    assert "regression: time +20.0%" in second
    # a lenient threshold passes
    assert run([*common, "--measured-ms", "0.66", "--threshold", "0.5"]) == PASS
    # only verdicts gate when asked
    assert run([*common, "--measured-ms", "0.9", "--fail-on", "order_of_magnitude_slower"]) == PASS


def test_submit_prints_the_window_test_and_confidence(url, capsys):
    square = json.dumps({"kind": "matmul", "m": 2048, "n": 2048, "k": 2048, "dtype": "bf16"})
    common = ["submit", "--url", url, "--chip", "a100", "--workload", square, "--fail-on"]
    common.append("regression")
    repeats = ["--measured-ms", "0.50", "--measured-ms", "0.51", "--measured-ms", "0.49"]
    assert run([*common, *repeats]) == PASS
    capsys.readouterr()
    # (a workload of its own: the others' runs stay out of its window)
    # 3 repeats of 0.60-0.62 ms against 3 of 0.49-0.51: every pair slower, U = 9; exactly,
    # one of the C(6, 3) = 20 choices of three of the six: p = 0.05, below 0.1 at 90% confidence
    slower = ["--measured-ms", "0.60", "--measured-ms", "0.61", "--measured-ms", "0.62"]
    assert run([*common, *slower, "--window", "5", "--confidence", "0.9"]) == FAIL
    out = capsys.readouterr().out
    # the mean 0.61 ms against 0.50: +22.0% in time, 0.50 / 0.61 - 1 = -18.0% of the roofline
    assert "+22.0% vs the median of the 1 run before it (threshold 10.0%, " in out
    assert "Mann-Whitney p = 0.05 at 90% confidence)" in out
    assert "regression: time +22.0%, p = 0.05; fraction of the roofline -18.0%, p = 0.05" in out
    assert run([*common, *slower, "--window", "0"]) == ERROR
    assert "baseline_window" in capsys.readouterr().err


def test_errors_exit_2_with_the_service_message(url, capsys):
    code = run(
        ["check", "--url", url, "--chip", "a1000", "--model", "llama-8b", "--measured-ms", "1"]
    )
    assert code == ERROR
    err = capsys.readouterr().err
    assert "error 404: unknown chip 'a1000'" in err and "did you mean" in err
    assert (
        run(
            [
                "check",
                "--url",
                url,
                "--chip",
                "a100",
                "--model",
                "llama-8b",
                "--batch",
                "0",
                "--measured-ms",
                "1",
            ]
        )
        == ERROR
    )
    assert "workload.transformer.batch: Input should be greater than or equal to 1" in (
        capsys.readouterr().err
    )


def test_an_unreachable_service_is_an_error_not_a_pass(capsys, monkeypatch):
    monkeypatch.setattr(
        "sys.argv",
        [
            "roofcheck",
            "check",
            "--url",
            "http://127.0.0.1:9",
            "--chip",
            "a100",
            "--model",
            "llama-8b",
            "--measured-ms",
            "1",
        ],
    )
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == ERROR
    assert "cannot reach" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        run(["check", "--chip", "a100"])
    assert info.value.code == 2


def test_a_retried_submit_with_an_idempotency_key_is_stored_once(url, capsys):
    argv = ["submit", "--url", url, "--chip", "a100", "--workload", MATMUL, "--measured-ms", "0.5"]
    argv += ["--idempotency-key", f"cli-retry-{time.monotonic_ns()}"]
    assert run(argv) == PASS
    first = capsys.readouterr().out
    assert run(argv) == PASS
    again = capsys.readouterr().out
    stored = first.rsplit("[stored #", 1)[1].split("]")[0]
    assert f"[stored #{stored}]" in again  # the same measurement, not a second one


def test_check_says_where_the_run_sits_against_published_runs(url, capsys):
    # x.neg().neg() over 1e8 fp32 elements, unfused: 1.6e9 bytes / 2.039e12 B/s = 785 us
    # ideal; 2 ms is 2.55x that, and above what published elementwise runs reach
    chain = {"kind": "elementwise", "n": 10**8, "ops": ["neg", "neg"], "fused": False}
    args = ["check", "--url", url, "--chip", "a100", "--workload", json.dumps(chain)]
    code = run([*args, "--stack", "eager", "--measured-ms", "2"])
    out = capsys.readouterr().out
    assert code == PASS  # room to improve is no failure
    assert "room_to_improve" in out and "(2.55x, memory-bound)" in out
    assert "published runs on eager" in out and out.rstrip().endswith("slower than published")


@pytest.mark.parametrize("command", ["check", "submit"])
def test_a_misspelt_fail_on_is_a_usage_error_not_a_disabled_gate(command):
    # "order_of_magnitude_slow" is no verdict: the gate would never fire, so it is refused
    # before anything is asked or stored (exit 2, naming the allowed values); nothing listens
    # on port 9, so reaching the network would fail differently
    args = [command, "--url", "http://127.0.0.1:9", "--chip", "a100", "--model", "llama-8b"]
    with pytest.raises(CliError, match="--fail-on: unknown order_of_magnitude_slow; allowed: "):
        run([*args, "--measured-ms", "1", "--fail-on", "order_of_magnitude_slow"])


def test_regression_gates_only_what_is_stored():
    # check stores nothing, so there is no previous run to regress against
    args = ["check", "--url", "http://127.0.0.1:9", "--chip", "a100", "--model", "llama-8b"]
    with pytest.raises(CliError, match="unknown regression"):
        run([*args, "--measured-ms", "1", "--fail-on", "regression"])


def _confirming(url: str) -> list[str]:
    """A submit on a branch of its own, after ten single-repeat runs on it: 1.30 ms first (so
    that none of them raised an alarm), then 0.96 .. 1.04 ms."""
    branch = f"confirm-{uuid.uuid4().hex[:8]}"
    square = json.dumps({"kind": "matmul", "m": 2048, "n": 2048, "k": 2048, "dtype": "bf16"})
    common = ["submit", "--url", url, "--chip", "a100", "--workload", square]
    common += ["--branch", branch, "--baseline-branch", branch, "--fail-on", "regression"]
    for ms in (1.30, 0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04):
        assert run([*common, "--measured-ms", str(ms)]) == PASS
    return common


def _printing(ms: float) -> str:
    """A re-run command that prints a measured time last."""
    return shlex.join([sys.executable, "-c", f"print('median of the run:', {ms})"])


def test_a_suspected_regression_passes_and_says_what_would_decide_it(url, capsys):
    common = _confirming(url)
    capsys.readouterr()
    # 1.15 ms, +14.4% on the median 1.005 ms, within 1.30 x 1.1: one repeat against ten
    # reaches p = 1/11 > 0.05 at best, so suspected, not failed; 3 repeats would decide it
    # (worked by hand in tests/engine/test_rank_power.py)
    assert run([*common, "--measured-ms", "1.15"]) == PASS
    out = capsys.readouterr().out
    assert out.rstrip().endswith("; regression: suspected (3 repeats would decide it: --confirm 3)")


def test_confirm_reruns_and_fails_a_confirmed_regression(url, capsys):
    common = _confirming(url)
    capsys.readouterr()
    # three re-runs at 1.15 ms against the same ten runs: each beats nine and loses to 1.30,
    # U = 27 of 30, p = 7/286 = 0.0245 <= 0.05: confirmed, a regression, exit 1
    argv = [*common, "--measured-ms", "1.15", "--confirm", "3", "--rerun", _printing(1.15)]
    assert run(argv) == FAIL
    first, second = capsys.readouterr().out.strip().split("\n")
    assert first.startswith("roofcheck: PASS") and "regression: suspected" in first
    suspected = first.split("[stored #", 1)[1].split(",")[0]
    assert second.startswith("roofcheck: FAIL")
    assert f"; confirming #{suspected}: regression confirmed: regression: time +14.4%" in second


def test_confirm_clears_a_suspicion_the_reruns_do_not_bear_out(url, capsys):
    common = _confirming(url)
    capsys.readouterr()
    # three re-runs at 1.0 ms: no slower than the median, cleared, exit 0
    argv = [*common, "--measured-ms", "1.15", "--confirm", "3", "--rerun", _printing(1.0)]
    assert run(argv) == PASS
    second = capsys.readouterr().out.strip().split("\n")[1]
    assert second.startswith("roofcheck: PASS") and "regression cleared" in second


def test_confirm_needs_a_rerun_that_prints_a_time(url, capsys):
    args = ["submit", "--url", "http://127.0.0.1:9", "--chip", "a100", "--model", "llama-8b"]
    with pytest.raises(
        CliError, match=r"--confirm N \(at least 1\) and --rerun COMMAND go together"
    ):
        run([*args, "--measured-ms", "1", "--confirm", "3"])
    common = _confirming(url)
    silent = shlex.join([sys.executable, "-c", "print('done')"])
    with pytest.raises(CliError, match="run 1 of 2: exit 0, no time at the end of its output"):
        run([*common, "--measured-ms", "1.15", "--confirm", "2", "--rerun", silent])
