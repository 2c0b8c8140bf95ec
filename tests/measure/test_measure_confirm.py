"""`roofcheck measure --submit --confirm N`: a measured function stored and gated, and a
suspected regression timed again and submitted to confirm it. Real PyTorch on the CPU against
the real service; the window is stored by hand, so that the outcome does not depend on how
fast this machine is.

The window, on a branch of its own: one run at 100 s (stored first, so that it raised no
alarm), then nine at 10 ns (faster than any function: their median is 10 ns). The function,
x.cos().cos() over 10^5 values, takes microseconds on any CPU: far beyond 10 ns x 1.1, far
below 100 s x 1.1. One repeat against ten can reach p = 1/11 > 0.05 at best: suspected. Three
repeats, each above the nine tied 10 ns and below 100 s: U = 27 of 30. Of the C(13, 3) = 286
choices of three of the thirteen values, with a of the tied ones, b of the three repeats and c
of the 100 s one, U = a (9 - a)/2 + b ((9 - a) + (3 - b)/2) + 10 c reaches 27 for (0, 3, 0),
1 way, and (0, 2, 1), 3 ways (29); (1, 1, 1) gives 23, (1, 2, 0) 21: p = 4/286 = 0.014.
Confirmed, exit 1."""

import textwrap
import uuid

import httpx
import torch

from app.cli import ERROR, FAIL, PASS, run
from app.measure import measure

CASE = """
import torch

def case():
    x = torch.randn(100_000)
    return (lambda x: x.cos().cos()), (x,)
"""
ONE = ["--repeats", "1", "--warmup", "1", "--allow-device-mismatch"]


def _window(url: str) -> str:
    """The window above, stored on a branch of its own: its name."""
    x = torch.randn(100_000)
    counted = measure(
        lambda x: x.cos().cos(), x, repeats=1, max_time_s=0.1, chip=None, url=url
    ).counts
    branch = f"measure-confirm-{uuid.uuid4().hex[:8]}"
    for seconds in (100.0, *[1e-8] * 9):
        body = {
            "chip": "a100",
            "workload": counted.workload(),
            "measured_time_s": [seconds],
            "branch": branch,
        }
        assert httpx.post(f"{url}/measurements", json=body, timeout=30).status_code == 201
    return branch


def test_measure_submits_and_confirms_a_suspected_regression(url, tmp_path, capsys):
    script = tmp_path / "bench_case.py"
    script.write_text(textwrap.dedent(CASE))
    argv = ["measure", f"{script}:case", "--chip", "a100", "--url", url, *ONE, "--submit"]

    def on_a_window(*more: str) -> int:
        branch = _window(url)  # each on a window of its own: this run's alone
        return run([*argv, "--branch", branch, "--baseline-branch", branch, *more])

    # one repeat: suspected, not failed
    assert on_a_window() == PASS
    line = capsys.readouterr().out.strip().split("\n")[-1]
    assert "[stored #" in line and "too few repeats for a test at 95% confidence" in line
    assert "; regression: suspected (" in line
    # again, confirmed by three more repeats: a regression, exit 1
    assert on_a_window("--confirm", "3") == FAIL
    lines = capsys.readouterr().out.strip().split("\n")
    assert "regression: suspected" in lines[-2]
    suspected = lines[-2].split("[stored #", 1)[1].split(",")[0]
    assert lines[-1].startswith("roofcheck: FAIL")
    assert f"; confirming #{suspected}: regression confirmed" in lines[-1]
    assert "Mann-Whitney p = 0.014 at 95% confidence" in lines[-1]


def test_submit_needs_a_catalog_chip_and_confirm_a_count(url, tmp_path, capsys):
    script = tmp_path / "bench_case.py"
    script.write_text(textwrap.dedent(CASE))
    local = ["measure", f"{script}:case", "--chip", "local", "--repeats", "1", "--submit"]
    assert run(local) == ERROR
    assert "--submit stores a run judged against a catalog chip" in capsys.readouterr().err
    argv = ["measure", f"{script}:case", "--chip", "a100", "--url", url, *ONE, "--submit"]
    assert run([*argv, "--confirm", "0"]) == ERROR
    assert "--confirm takes a number of repeats, at least 1: 0" in capsys.readouterr().err
