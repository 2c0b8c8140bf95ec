"""POST /check/table: a benchmark table judged row by row, through the ASGI app."""

import json

import pytest

H100 = "/check/table?chip=h100"
CSV = {"content-type": "text/csv"}

# The hand-checked rows, on an H100 SXM5 (bf16 matrix peak 989.4 TFLOP/s, 3.35 TB/s;
# chip_catalog.json):
# - matmul 4096^3 bf16: 2 * 4096^3 = 137,438,953,472 FLOPs, 3 * 4096^2 * 2 B = 100,663,296 B,
#   intensity 1365 FLOP/B, far above the ridge (295): compute-bound, ideal 1.3744e11 / 989.4e12
#   = 138.9 us. At 0.5 ms: 138.9 / 500 = 27.8% of the roofline, 1.3744e11 / 5e-4 = 274.9
#   TFLOP/s achieved, 500 - 138.9 = 361.1 us lost.
# - custom 1e9 FLOPs, 1e8 B (fp32 vector, 67 TFLOP/s): compute 14.9 us, memory 1e8 / 3.35e12 =
#   29.85 us: memory-bound, ideal 29.85 us. At 0.1 ms: 29.85%, 70.1 us lost.
# - the same matmul given as 500 TFLOP/s: 1.3744e11 / 5e14 = 274.9 us measured, 50.5%.
MATMUL_IDEAL = 2 * 4096**3 / 989.4e12


def _table(rows: int = 300) -> str:
    """A header, the three hand-checked rows, then `rows - 4` matmuls of growing m at 1.5 x
    their own ideal (a 1.5 ratio: a row of its own) and one bad row, the 4th."""
    lines = [
        "label,M,N,K,dtype,kind,flops,bytes,ms,tflops",
        "square,4096,4096,4096,bf16,,,,0.5,",
        "stream,,,,fp32,custom,1e9,1e8,0.1,",
        "rate,4096,4096,4096,bf16,,,,,500",
        "broken,4096,-2,4096,bf16,,,,0.5,",
    ]
    for i in range(rows - 4):
        m = 256 * (i + 1)
        ideal_ms = 2 * m * 4096 * 4096 / 989.4e12 * 1e3
        lines.append(f"m{m},{m},4096,4096,bf16,,,,{ideal_ms * 1.2:.6g},")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def answer(client):
    response = client.post(H100, content=_table(), headers=CSV)
    assert response.status_code == 200, response.text
    return response.json()


def test_hand_checked_rows(answer):
    square, stream, rate = answer["rows"][:3]
    assert square["kind"] == "matmul" and square["bound"] == "compute"
    assert square["flops"] == 137_438_953_472 and square["bytes"] == 100_663_296
    assert square["expected_time_s"] == pytest.approx(MATMUL_IDEAL)
    assert square["expected_time_s"] == pytest.approx(138.9e-6, rel=1e-3)
    assert square["efficiency"] == pytest.approx(0.2778, rel=1e-3)
    assert square["achieved_flops_per_s"] == pytest.approx(274.9e12, rel=1e-3)
    assert square["time_lost_s"] == pytest.approx(361.1e-6, rel=1e-3)
    low, high = square["realistic_range_s"]
    assert low <= square["realistic_time_s"] <= high
    assert stream["kind"] == "custom" and stream["bound"] == "memory"
    assert stream["expected_time_s"] == pytest.approx(29.85e-6, rel=1e-3)
    assert stream["efficiency"] == pytest.approx(0.2985, rel=1e-3)
    assert rate["measured_time_s"] == pytest.approx(274.9e-6, rel=1e-3)
    assert rate["efficiency"] == pytest.approx(0.505, rel=1e-3)


def test_a_bad_row_in_place_naming_its_column(answer):
    broken = answer["rows"][3]
    assert broken["row"] == 4 and broken["label"] == "broken"
    assert (
        broken["error"]["column"] == "N"
        and "greater than or equal to 1" in (broken["error"]["message"])
    )
    assert broken["verdict"] is None and broken["rank"] is None
    assert answer["summary"]["errors"] == 1 and answer["summary"]["judged"] == 299


def test_ranked_by_time_lost_with_a_summary(answer):
    judged = [r for r in answer["rows"] if r["error"] is None]
    by_rank = sorted(judged, key=lambda r: r["rank"])
    assert [r["rank"] for r in by_rank] == list(range(1, 300))
    lost = [r["time_lost_s"] for r in by_rank]
    assert lost == sorted(lost, reverse=True)
    summary = answer["summary"]
    assert summary["worst"][0]["row"] == by_rank[0]["row"] and len(summary["worst"]) == 5
    assert sum(summary["verdicts"].values()) == 299
    # 296 rows at 1 / 1.2 of the roofline and the three above: the geometric mean
    expected = (0.2778 * 0.2985 * 0.505 * (1 / 1.2) ** 296) ** (1 / 299)
    assert summary["geomean_efficiency"] == pytest.approx(expected, rel=1e-3)
    assert answer["columns"]["M"] == "m" and answer["columns"]["ms"] == "measured_ms"


def test_json_rows_answer_as_the_csv(client, answer):
    rows = [
        {"label": "square", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "ms": 0.5},
        {"kind": "custom", "flops": 1e9, "bytes": 1e8, "us": [90, 110]},
        {
            "kind": "attention",
            "batch": 2,
            "nheads": 16,
            "seqlen": 2048,
            "headdim": 128,
            "causal": True,
            "ms": 0.2,
            "speedup": 1.3,
        },
        "not a row",
    ]
    response = client.post(
        H100, content=json.dumps(rows), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text
    got = response.json()
    assert got["rows"][0]["expected_time_s"] == answer["rows"][0]["expected_time_s"]
    assert got["rows"][0]["efficiency"] == answer["rows"][0]["efficiency"]
    # two repeats, 90 and 110 us: their mean, 100 us, as the CSV's 0.1 ms
    assert got["rows"][1]["repeats"] == 2
    assert got["rows"][1]["efficiency"] == pytest.approx(answer["rows"][1]["efficiency"])
    assert got["rows"][2]["kind"] == "attention" and got["rows"][2]["verdict"] is not None
    assert got["rows"][3]["error"]["column"] == "row"
    assert got["ignored_columns"] == ["speedup"]


@pytest.mark.parametrize(
    ("row", "column", "words"),
    [
        ("4096,4096,4096,bf16,0.5,0.4", "time", "the row gives ms, time_us"),
        ("4096,4096,4096,bf16,,", "time", "give one measured time"),
        ("4096,4096,4096,bf16,abc,", "ms", "not a number"),
        ("4096,4096,4096,fp13,0.5,", "dtype", "Input should be"),
        (",,,bf16,0.5,", "kind", "which kernel"),
    ],
)
def test_row_errors_name_the_column(client, row, column, words):
    body = f"m,n,k,dtype,ms,time_us\n{row}\n4096,4096,4096,bf16,0.5,\n"
    got = client.post(H100, content=body, headers=CSV).json()
    assert (
        got["rows"][0]["error"]["column"] == column and words in got["rows"][0]["error"]["message"]
    )
    assert got["rows"][1]["error"] is None


def test_whole_table_errors(client):
    assert client.post(H100, content="m,n,k\n", headers=CSV).status_code == 422
    assert (
        client.post(H100, content="{}", headers={"content-type": "application/json"}).status_code
        == 422
    )
    assert (
        client.post(H100, content="m,n", headers={"content-type": "text/plain"}).status_code == 415
    )
    assert client.post("/check/table?chip=h1000", content=_table(5), headers=CSV).status_code == 404
    duplicate = client.post(H100, content="ms,time_ms\n1,1\n", headers=CSV).json()
    assert "'ms' and 'time_ms' both give measured_ms" in duplicate["rows"][0]["error"]["message"]
    too_many = client.post(H100, content="flops,bytes,ms\n" + "1,1,1\n" * 10_001, headers=CSV)
    assert too_many.status_code == 413 and "10,000 rows" in too_many.text
