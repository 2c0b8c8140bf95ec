"""The gate's record on the workload page (issue 38 item 3): alarms raised, confirmed, marked
false, and the button that marks one false, in headless Chromium at 375 and 1280 px; the
button's form refused from another site or with write tokens, through the ASGI app.

The runs: ten single-repeat runs of a matmul of its own (1.30 ms first, then 0.96 .. 1.04 ms:
none raises an alarm), a run at 1.15 ms (+14.4% on the median 1.005 ms: suspected, 3 repeats
would decide it, tests/engine/test_rank_power.py), and a run of three repeats at 1.14 .. 1.16
ms confirming it (p = 7/286 = 0.0245: confirmed)."""

import uuid
from pathlib import Path

import httpx
from fastapi.testclient import TestClient
from playwright.sync_api import expect

from app.main import create_app
from app.settings import Settings
from tests.web.test_readable import screen  # noqa: F401  (the fixture: both widths)

WINDOW_MS = (1.30, 0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04)


def _matmul() -> dict[str, object]:
    """A workload no other test stores (the app is shared across the session)."""
    return {"kind": "matmul", "m": 1000 + uuid.uuid4().int % 100_000, "n": 512, "k": 512}


def _store(post, workload) -> tuple[str, int, int]:
    for ms in WINDOW_MS:
        assert post({"chip": "a100", "workload": workload, "measured_ms": [ms]}).status_code == 201
    suspected = post({"chip": "a100", "workload": workload, "measured_ms": [1.15]}).json()
    assert suspected["comparison"]["suspected"] and suspected["comparison"]["repeats_needed"] == 3
    body = {"chip": "a100", "workload": workload, "measured_ms": [1.14, 1.15, 1.16]}
    confirming = post(body | {"confirms": suspected["id"]}).json()
    assert confirming["comparison"]["confirmation"] == "confirmed"
    return suspected["workload_key"], suspected["id"], confirming["id"]


def test_the_workload_page_shows_the_gates_record_and_marks_a_false_alarm(screen, url):  # noqa: F811
    key, suspected, confirming = _store(
        lambda body: httpx.post(f"{url}/measurements", json=body, timeout=30), _matmul()
    )
    screen.goto(f"{url}/history/{key}")
    record = screen.locator("#gate-record")
    expect(record.get_by_role("heading", name="The gate's record")).to_be_visible()
    expect(screen.locator("#gate-counts")).to_have_text(
        "1 alarm raised: 0 regressions outright, 1 suspected (1 confirmed, 0 cleared, 0 open); "
        "0 marked false."
    )
    row = screen.locator("#alarms tbody tr").first
    expect(row).to_contain_text(f"#{suspected}")
    expect(row).to_contain_text("suspected (3 repeats would decide it)")
    expect(row).to_contain_text(f"confirmed by #{confirming}")
    # the latest run is the confirming one: a regression, said in the figures
    expect(screen.locator("#regression")).to_contain_text("yes: time and efficiency beyond 10%")
    button = row.get_by_role("button", name="Mark false alarm")
    expect(button).to_be_visible()
    row.get_by_label("Why (optional)").fill("a shared runner")
    button.click()
    screen.wait_for_url(f"**/history/{key}#gate-record")
    expect(screen.locator("#gate-counts")).to_contain_text("1 marked false.")
    expect(screen.locator("#alarms tbody tr").first).to_contain_text(": a shared runner")
    expect(screen.locator("#alarms").get_by_role("button")).to_have_count(0)
    # the measurement is as stored: the API still answers it suspected when stored
    stored = httpx.get(f"{url}/measurements/{suspected}", timeout=30).json()
    assert stored["measured_values"] == [1.15]


def test_the_false_alarm_form_is_refused_from_another_site_or_with_tokens(tmp_path: Path):
    token = "t" * 32
    for tokens in ("", f"ci:{token}"):
        settings = Settings(database_url=f"sqlite:///{tmp_path}/{len(tokens)}.db")
        app = create_app(settings.model_copy(update={"write_tokens": tokens}))
        with TestClient(app) as client:
            headers = {"authorization": f"Bearer {token}"} if tokens else {}
            key, suspected, _ = _store(
                lambda body, h=headers: client.post("/measurements", json=body, headers=h),
                _matmul(),
            )
            form = {"measurement_id": str(suspected)}
            url = f"/history/{key}/false-alarm"
            foreign = {"origin": "https://elsewhere.example"}
            refused = client.post(url, data=form, headers=foreign, follow_redirects=False)
            assert refused.status_code == 403 and "own page" in refused.text
            own = {"origin": "http://testserver"}
            answer = client.post(url, data=form, headers=own, follow_redirects=False)
            if tokens:  # a browser form has no token to send
                assert answer.status_code == 403 and "needs an API token" in answer.text
                assert 'class="mark-false"' not in client.get(f"/history/{key}").text
            else:
                assert answer.status_code == 303
                assert answer.headers["location"] == f"/history/{key}#gate-record"
                bad = client.post(url, data={"measurement_id": "x"}, headers=own)
                assert bad.status_code == 422 and "measurement_id" in bad.text
        app.state.database.engine.dispose()
