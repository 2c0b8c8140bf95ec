"""The regression gate of POST /measurements on SQLite and PostgreSQL: a window of baseline
runs, its median and spread, the Mann-Whitney test, the efficiency, and each key said once."""

import pytest
import sqlalchemy as sa

from app.db.models import MeasurementRow

MATMUL = {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
MAIN = (0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04)  # ms, and a noisy 1.30 last


def post(client, status=201, params=None, **fields):
    body = {"chip": "a100", "workload": MATMUL, **fields}
    response = client.post("/measurements", json=body, params=params)
    assert response.status_code == status, response.text
    return response.json()


def test_a_noisy_slow_run_on_main_does_not_let_a_slower_pr_through(db_client):
    for ms in (*MAIN, 1.30):
        post(db_client, measured_ms=[ms], branch="main")
    # the PR: 1.24, 1.25, 1.26 ms, 25% slower than main, 3.8% faster than its last run
    pr = post(
        db_client,
        status=412,
        params={"fail_on": "regression"},
        measured_ms=[1.24, 1.25, 1.26],
        branch="dev",
        baseline_branch="main",
    )
    compared = pr["comparison"]
    assert compared["change_vs_baseline"] == pytest.approx(1.25 / 1.30 - 1)  # the latest
    window = compared["window"]
    assert (window["source"], window["requested"], window["runs"], window["samples"]) == (
        "branch",
        10,
        10,
        10,
    )
    # median of the ten: (1.00 + 1.01) / 2 = 1.005 ms; MAD 0.025 ms (tests/engine)
    assert window["median_time_s"] == pytest.approx(1.005e-3)
    assert window["spread_time_s"] == pytest.approx(0.025e-3)
    assert compared["change_vs_median"] == pytest.approx(1.25 / 1.005 - 1)
    # U = 27 of 30 pairs: exactly, 7 of the C(13, 3) = 286 choices of three values reach it,
    # p = 0.0245 < 0.05 (tests/engine)
    assert compared["test"] == "mann_whitney_u" and compared["confidence"] == 0.95
    assert compared["p_value"] == pytest.approx(7 / 286)
    assert compared["regression"] is True and compared["regressed_on"] == ["time", "efficiency"]
    assert compared["explanation"].startswith(
        "Against the latest 10 runs on main (median 1.01 ms, median absolute deviation 25 µs): "
        "+24.4% in time, -19.6% in fraction of the roofline. Mann-Whitney U over 3 repeats "
        "against 10, exact, one-sided at 95% confidence: slower at p = 0.0245 (significant)"
    )
    assert pr["gate"]["reasons"] == [
        "regression: time +24.4%, p = 0.0245; fraction of the roofline -19.6%, p = 0.0245 vs "
        "the median of 10 runs (threshold 10.0%; 95% confidence)"
    ]
    # at 99% confidence p = 0.0245 is not enough: stored, not gated
    sure = post(
        db_client,
        measured_ms=[1.24, 1.25, 1.26],
        baseline_branch="main",
        confidence=0.99,
        params={"fail_on": "regression"},
    )
    assert sure["comparison"]["regression"] is False
    assert (
        "one-sided at 99% confidence: slower at p = 0.0245 (not significant), less of the "
        "roofline at p = 0.0245 (not significant). No regression (threshold 10.0%)."
    ) in sure["comparison"]["explanation"]
    # the pages say it too: the measurement's (against the latest 10 runs before it) and its
    # workload's (its latest run against the 10 before)
    html = {"accept": "text/html"}
    page = db_client.get(f"/measurements/{pr['id']}", headers=html).text
    assert 'id="regression"><strong class="bad">yes' in page
    assert "vs the median of 10 runs" in page and 'id="gate">Against the latest 10' in page
    history = db_client.get(f"/workloads/{pr['workload_key']}", headers=html).text
    assert "Window median" in history and "Mann-Whitney U over 3 repeats" in history


def test_the_window_is_the_latest_runs_before_this_one(db_client):
    ids = [post(db_client, measured_ms=[ms])["id"] for ms in (1.0, 2.0, 3.0, 4.0)]
    new = post(db_client, measured_ms=[2.5], baseline_window=3)
    window = new["comparison"]["window"]
    # the three before it, newest first: 4, 3, 2 ms; median 3 ms, MAD 1 ms
    assert window["run_ids"] == ids[:0:-1] and window["source"] == "previous"
    assert window["median_time_s"] == pytest.approx(3e-3)
    assert window["spread_time_s"] == pytest.approx(1e-3)
    assert new["comparison"]["previous_id"] == ids[-1]
    # read back later it is compared with the default window, as of when it was stored
    read = db_client.get(f"/measurements/{new['id']}").json()["comparison"]
    assert read["window"]["run_ids"] == ids[::-1]


def test_one_repeat_ten_times_slower_than_a_window_of_three_repeats_regresses(db_client):
    # ten runs of three repeats on main, 30 distinct values from 0.90 to 1.10 ms (run i:
    # 0.90 + 0.01 i, 1.000 + 0.001 i, 1.10 - 0.01 i; mean 1 + i / 3000), then one repeat of
    # 10 ms: U = 30, every pair. Exactly, one of the 31 equally likely places of one value
    # among 30 is above them all: p = 1/31 = 0.0323 <= 0.05, a regression. The normal
    # approximation's p here, z = (30 - 15 - 0.5) / sqrt(30 * 32 / 12) = 1.621, p = 0.0525,
    # was never significant: "No regression"
    for i in range(10):
        post(
            db_client,
            measured_ms=[0.90 + 0.01 * i, 1.0 + 0.001 * i, 1.10 - 0.01 * i],
            branch="main",
        )
    gated = {"status": 412, "params": {"fail_on": "regression"}, "baseline_branch": "main"}
    slow = post(db_client, measured_ms=[10.0], **gated)
    compared = slow["comparison"]
    assert (compared["window"]["runs"], compared["window"]["samples"]) == (10, 30)
    assert compared["test"] == "mann_whitney_u"
    assert compared["p_value"] == pytest.approx(1 / 31)
    assert compared["regression"] is True and compared["regressed_on"] == ["time", "efficiency"]
    assert slow["gate"]["failed"] is True
    assert "over 1 repeats against 30, exact, one-sided" in compared["explanation"]
    assert "slower at p = 0.0323 (significant)" in compared["explanation"]
    # two repeats, 0.5 and 25 ms: U = 0 + 30 of 60. Of the C(32, 2) = 496 choices of two, the
    # pairs (b1 <= b2) of window values below each summing to 30 or more: 496 less the 240
    # summing to at most 29 (30 - 2 b1 for b1 = 0 .. 14): p = 256/496 = 0.516, not
    # significant. But the mean, 12.75 ms, is beyond the slowest repeat, 1.10 ms x 1.1
    split = post(db_client, measured_ms=[0.5, 25.0], **gated)["comparison"]
    assert split["p_value"] == pytest.approx(256 / 496)
    assert split["regressed_on"] == ["time", "efficiency"]
    assert (
        "slower at p = 0.516 (not significant), less of the roofline at p = 0.516 (not "
        "significant). Beyond the window: slower than its slowest repeat (1.1 ms) and less of "
        "the roofline than its least efficient repeat"
    ) in split["explanation"]
    assert split["explanation"].endswith(
        "by more than the threshold, a regression whatever the test says. A regression "
        "(threshold 10.0%)."
    )


def test_too_few_samples_say_so_and_only_the_whole_range_decides(db_client):
    first = post(db_client, measured_ms=[1.0])
    assert first["comparison"]["window"] is None and first["comparison"]["test"] == "none"
    assert first["comparison"]["explanation"] == "No earlier run of this workload to compare with."
    named = post(db_client, measured_ms=[1.2], baseline_id=first["id"])
    compared = named["comparison"]
    assert compared["window"]["source"] == "baseline_id" and compared["window"]["requested"] == 1
    # one repeat against one: the smallest p is 1/C(2,1) = 0.5 > 0.05, no test; +20% beyond
    # the window's one repeat (1 ms x 1.1) is beyond its whole range: a regression
    assert compared["test"] == "insufficient" and compared["regression"] is True
    assert compared["suspected"] is False
    assert "a window of one" in compared["explanation"]
    assert "Too few repeats for a test (1 against 1" in compared["explanation"]
    assert "a regression whatever the test says" in compared["explanation"]


def test_a_slowdown_no_single_repeat_can_confirm_is_suspected(db_client):
    for ms in (*MAIN, 1.30):
        post(db_client, measured_ms=[ms])
    # 1.15 ms, +14.4% on the median 1.005 ms, within 1.30 ms x 1.1; one repeat against ten
    # reaches p = 1/11 at best: suspected, not failed, and 3 repeats would decide it at the
    # window's noise (worked by hand in tests/engine/test_rank_power.py)
    answer = post(db_client, status=201, params={"fail_on": "regression"}, measured_ms=[1.15])
    compared = answer["comparison"]
    assert compared["test"] == "insufficient" and compared["regression"] is False
    assert compared["suspected"] is True and compared["suspected_on"] == ["time", "efficiency"]
    assert compared["repeats_needed"] == 3
    assert answer["gate"] == {"fail_on": ["regression"], "failed": False, "reasons": []}
    assert (
        "Suspected: slower and less of the roofline beyond the threshold, not yet significant. "
        "No single repeat can confirm it against 10 (its smallest p is 0.0909 > 0.05). 3 "
        "repeats would decide it with power 80% at this window's noise (3.7% of its median "
        "time; this run had 1)"
    ) in compared["explanation"]


def test_a_fall_in_the_fraction_of_the_roofline_regresses(db_app, db_client):
    # three runs, then their expectation doubled by hand (as if judged by a catalog whose
    # roofline was twice as slow): the same time now reaches half the fraction of it
    repeats = ([0.99, 1.0, 1.01], [0.98, 1.02, 1.03], [0.97, 1.04, 1.05])  # means 1, 1.01, 1.02
    runs = [post(db_client, measured_ms=ms) for ms in repeats]
    with db_app.state.database.sessions()() as session, session.begin():
        session.execute(
            sa.update(MeasurementRow)
            .where(MeasurementRow.id.in_([r["id"] for r in runs]))
            .values(expected_time_s=MeasurementRow.expected_time_s * 2)
        )
    new = post(db_client, measured_ms=[0.995, 1.005, 1.015])["comparison"]
    # time: median of 1.0, 1.01, 1.02 ms; the run's 1.005 ms: -0.5%, not slower
    assert new["change_vs_median"] == pytest.approx(1.005 / 1.01 - 1)
    # efficiency: e / 1.005 against 2e / 1.01: 1.01 / (2 * 1.005) - 1 = -49.8%; the window's
    # nine repeat efficiencies all above the run's three: U = 27, p = 1/C(12, 3) = 1/220
    assert new["efficiency_change"] == pytest.approx(1.01 / (2 * 1.005) - 1)
    assert new["efficiency_p_value"] == pytest.approx(1 / 220)
    assert new["regressed_on"] == ["efficiency"] and new["regression"] is True


@pytest.mark.parametrize(
    ("field", "value"),
    [("baseline_window", 0), ("baseline_window", 101), ("confidence", 0.5), ("confidence", 1)],
)
def test_the_window_and_confidence_are_validated(db_client, field, value):
    response = db_client.post(
        "/measurements",
        json={"chip": "a100", "workload": MATMUL, "measured_ms": [1.0], field: value},
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][-1] == field
    assert db_client.get("/measurements").json()["total"] == 0


def test_each_key_is_said_once_and_the_database_keeps_the_whole_expectation(db_app, db_client):
    posted = post(db_client, measured_ms=[0.5, 0.52])
    read = db_client.get(f"/measurements/{posted['id']}").json()
    assert read.keys() == posted.keys() and read["expectation"] == posted["expectation"]
    top = set(posted) - {"expectation"}
    assert not top & set(posted["expectation"])
    # what CI reads stays at the top; what only the judgement says stays in expectation
    assert {"verdict", "ratio", "efficiency", "chip", "measured_time_s", "advice"} <= top
    assert {"bound", "flops", "achieved_flops_per_s", "stack"} <= set(posted["expectation"])
    with db_app.state.database.engine.connect() as connection:
        stored = connection.execute(
            sa.select(MeasurementRow.expectation).where(MeasurementRow.id == posted["id"])
        ).scalar_one()
    assert stored["verdict"] == posted["verdict"] and stored["ratio"] == posted["ratio"]
    assert stored["chip"] == posted["chip"] and stored["repeats"] == posted["repeats"]
    assert set(stored) == set(posted["expectation"]) | (top & set(stored))
    # the page still draws the roofline from the whole expectation
    page = db_client.get(f"/measurements/{posted['id']}", headers={"accept": "text/html"})
    assert 'id="roofline"' in page.text and "No earlier run of this workload" in page.text


@pytest.mark.parametrize("branch", [None, "main"])
def test_the_window_is_one_indexed_query_with_a_limit(db_app, db_client, branch):
    for ms in (1.0, 1.1):
        post(db_client, measured_ms=[ms], branch="main")
    engine = db_app.state.database.engine
    seen: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many):
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        post(db_client, measured_ms=[1.2], baseline_branch=branch, baseline_window=5)
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    windows = [(s, p) for s, p in seen if "measured_values" in s]
    assert len(windows) == 1 and "LIMIT" in windows[0][0].upper()
    if engine.dialect.name == "sqlite":
        statement, parameters = windows[0]
        with engine.connect() as connection:
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            details = " ".join(str(row[-1]) for row in plan)
        index = "workload_key_branch_id" if branch else "workload_key_id"
        assert f"USING INDEX ix_measurements_{index}" in details, details
        assert "TEMP B-TREE" not in details, details  # read in index order: no sort


def test_the_workload_comparison_takes_the_window_and_the_confidence(db_client):
    for ms in (*MAIN, 1.30):
        post(db_client, measured_ms=[ms], branch="main")
    latest = post(db_client, measured_ms=[1.24, 1.25, 1.26], branch="main")
    key = latest["workload_key"]
    # the latest run against the 10 before it by default, the 3 before it when asked:
    # 1.02 < 1.03 < 1.04 < 1.30 ms; median of 1.03, 1.04, 1.30 = 1.04 ms
    default = db_client.get(f"/workloads/{key}").json()["comparison"]
    assert default["window"]["requested"] == 10 and default["window"]["runs"] == 10
    three = db_client.get(f"/workloads/{key}", params={"baseline_window": 3}).json()
    window = three["comparison"]["window"]
    assert (window["requested"], window["runs"]) == (3, 3)
    assert window["median_time_s"] == pytest.approx(1.04e-3)
    sure = db_client.get(f"/workloads/{key}", params={"confidence": 0.99}).json()
    assert sure["comparison"]["confidence"] == 0.99
    # out of range: a 422 naming the parameter, on the API and on the page
    for name, value in (("baseline_window", 0), ("baseline_window", 101), ("confidence", 1)):
        bad = db_client.get(f"/workloads/{key}", params={name: value})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", name]
        page = db_client.get(f"/history/{key}", params={name: value})
        assert page.status_code == 422 and name in page.text
    page = db_client.get(f"/history/{key}", params={"baseline_window": 3}).text
    assert 'name="baseline_window" inputmode="numeric" value="3"' in page
    assert "Against the latest 3 runs before it" in page
