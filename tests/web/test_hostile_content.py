"""A stored label or note full of markup is shown as text and never runs (real Chromium)."""

from playwright.sync_api import Page

HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def test_stored_script_never_runs(page: Page, url, client):
    stored = client.post(
        "/measurements",
        json={
            "chip": "a100",
            "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
            "measured_ms": 10.0,
            "label": HOSTILE[:100],
            "notes": HOSTILE + '"><svg onload="window.pwned=3">',
        },
    )
    assert stored.status_code == 201
    body = stored.json()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    for path in (f"/measurements/{body['id']}", "/history", f"/history/{body['workload_key']}"):
        page.goto(url + path, wait_until="load")
        assert page.evaluate("window.pwned") is None, path
        assert page.locator("script").count() == 0, path
        assert page.get_by_text(HOSTILE[:40], exact=False).count() >= 1, path
    assert dialogs == []


def test_the_pages_break_no_rule_of_their_own_content_security_policy(page: Page, url):
    """The inline SVG charts' stylesheet is allowed by its hash: no violation is reported."""
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    for path in ("/?chip=a100&model=llama-8b&batch=8&measured_ms=30", "/history", "/catalog"):
        response = page.goto(url + path, wait_until="load")
        assert response is not None
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert violations == []


def test_the_pages_load_without_a_console_error_or_a_failed_request(page: Page, url):
    """Every resource a page asks for exists (the favicon too: browsers ask for one)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    page.on(
        "response", lambda r: errors.append(f"{r.status}: {r.url}") if r.status >= 400 else None
    )
    for path in ("/", "/?chip=a100&model=llama-8b&batch=8&measured_ms=30", "/history", "/catalog"):
        page.goto(url + path, wait_until="networkidle")
    assert errors == []
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert icon is not None
    icon_response = page.request.get(icon if icon.startswith("http") else url + icon)
    assert icon_response.ok and icon_response.headers["content-type"] == "image/svg+xml"
