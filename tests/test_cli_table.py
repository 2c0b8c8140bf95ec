"""`roofcheck table` against the real service on a loopback port: its exit codes."""

import json

import pytest

from app.cli import ERROR, FAIL, PASS, CliError, run

# 4096^3 bf16 on an H100: ideal 138.9 us (tests/api/test_table_api.py); 0.15 ms is 92.6% of
# the roofline, 0.5 ms 27.8%
TABLE = "label,M,N,K,dtype,ms\nfast,4096,4096,4096,bf16,0.15\nslow,4096,4096,4096,bf16,0.5\n"


def _file(tmp_path, text, name="bench.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_table_passes_and_fails_below_a_fraction(url, tmp_path, capsys):
    path = _file(tmp_path, TABLE)
    assert run(["table", path, "--url", url, "--chip", "h100"]) == PASS
    assert capsys.readouterr().out.startswith("roofcheck: PASS 2 rows on h100-sxm5-80gb")
    assert run(["table", path, "--url", url, "--chip", "h100", "--fail-below", "0.5"]) == FAIL
    out = capsys.readouterr().out
    assert "row 2 slow: 27.8% of the roofline, below 50%" in out and "row 1 " not in out


def test_table_fails_on_a_verdict_or_a_bad_row(url, tmp_path, capsys):
    path = _file(tmp_path, TABLE)
    args = ["table", path, "--url", url, "--chip", "h100", "--fail-on", "room_to_improve"]
    assert run(args) == FAIL
    assert "verdict room_to_improve" in capsys.readouterr().out
    bad = _file(tmp_path, TABLE + "broken,4096,0,4096,bf16,1\n")
    assert run(["table", bad, "--url", url, "--chip", "h100"]) == FAIL
    assert "row 3 broken: not judged: N:" in capsys.readouterr().out


def test_table_errors_exit_2(url, tmp_path, capsys):
    path = _file(tmp_path, TABLE)
    assert run(["table", path, "--url", url, "--chip", "h1000"]) == ERROR
    assert "error 404" in capsys.readouterr().err
    # usage errors: CliError, which main() turns into exit 2
    with pytest.raises(CliError, match="cannot read"):
        run(["table", str(tmp_path / "none.csv"), "--url", url, "--chip", "h100"])
    with pytest.raises(CliError, match="unknown slow"):
        run(["table", path, "--url", url, "--chip", "h100", "--fail-on", "slow"])
    json_rows = _file(tmp_path, '[{"m": 8, "n": 8, "k": 8, "ms": 1}]', "bench.json")
    args = [
        "table",
        json_rows,
        "--url",
        url,
        "--chip",
        "h100",
        "--json",
        "--fail-on",
        "does_not_fit",
    ]
    assert run(args) == PASS
    assert '"geomean_efficiency"' in capsys.readouterr().out


def test_table_fails_by_default_on_a_row_faster_than_the_roofline(url, tmp_path, capsys):
    # 0.1 ms is under the 138.9 us ideal: a timing error, which the default --fail-on names
    path = _file(tmp_path, TABLE + "impossible,4096,4096,4096,bf16,0.1\n")
    assert run(["table", path, "--url", url, "--chip", "h100"]) == FAIL
    out = capsys.readouterr().out
    assert "row 3 impossible: verdict faster_than_roofline (138.9% of the roofline)" in out


def test_table_json_keeps_the_gate(url, tmp_path, capsys):
    """--json prints the answer alone (no summary line), and still exits 1 on a failing row."""
    path = _file(tmp_path, TABLE)
    args = ["table", path, "--url", url, "--chip", "h100", "--json", "--fail-below", "0.5"]
    assert run(args) == FAIL
    answer = json.loads(capsys.readouterr().out)
    assert [row["label"] for row in answer["rows"]] == ["fast", "slow"]
    assert answer["summary"]["rows"] == 2


def test_table_stack_is_sent(url, tmp_path, capsys):
    """--stack picks whose published runs the realistic times assume: eager PyTorch adds its
    ~8 us of host dispatch to a kernel too small to hide it (64^3: an ideal of nanoseconds),
    which the default, typical tuned software, does not pay."""
    path = _file(tmp_path, "M,N,K,dtype,us\n64,64,64,bf16,20\n")
    realistic = {}
    for stack in ("typical", "eager"):
        args = ["table", path, "--url", url, "--chip", "h100", "--json", "--stack", stack]
        assert run([*args, "--fail-on", "does_not_fit"]) == PASS
        answer = json.loads(capsys.readouterr().out)
        assert answer["stack"] == stack
        realistic[stack] = answer["rows"][0]["realistic_time_s"]
    assert realistic["eager"] > realistic["typical"] + 5e-6
    args = ["table", path, "--url", url, "--chip", "h100", "--stack", "numpy"]
    assert run(args) == ERROR
    assert "error 422" in capsys.readouterr().err


@pytest.mark.parametrize("fraction", ["1.5", "-0.1"])
def test_table_fail_below_is_a_fraction(url, tmp_path, fraction):
    path = _file(tmp_path, TABLE)
    with pytest.raises(CliError, match="--fail-below is a fraction"):
        run(["table", path, "--url", url, "--chip", "h100", "--fail-below", fraction])
