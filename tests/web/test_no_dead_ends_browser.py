"""No dead ends, as a person meets them (issue 37 item 6): in headless Chromium at a phone's
width (375 px) and a desktop's (1280 px), every address a browser reaches is a page that fits
the screen, with links on; the JSON link of a page shows JSON."""

import json

import httpx
from playwright.sync_api import expect

from tests.web.test_readable import screen, store  # noqa: F401  (screen: both widths)

QUESTION = "chip=h100&model=llama-3.1-8b&batch=8"
# address -> the heading the page opens with
ADDRESSES = {
    "/no/such/page": "Not found",
    "/chips/h100": "NVIDIA H100 SXM5 80GB",
    "/chips": "Chip catalog",
    "/models": "Models",
    "/models/llama-3.1-8b": "Llama 3.1 8B",
    "/compare?chips=a100,h100&model=llama-3.1-8b&batch=8": "Compare chips",
    f"/check?{QUESTION}": "Does my runtime make sense?",
    f"/optimal-batch?{QUESTION}": "Does my runtime make sense?",
}


# the GET addresses of the API that are for programs, which no page links to: JSON to anyone
PROGRAMS = {"/health", "/catalog/versions"}


def test_every_address_a_browser_reaches_is_a_page_that_fits(screen, url):  # noqa: F811
    width = screen.viewport_size["width"]
    stored = store(url)
    run, key = stored["id"], stored["workload_key"]
    addresses = {
        **ADDRESSES,
        "/": "Does my runtime make sense?",
        "/comparison": "Compare chips",
        "/catalog": "Chip catalog",
        "/trace": "Check a profiler trace",
        "/history": "Stored measurements",
        f"/history/{key}": "Workload history",
        "/measurements": "Stored measurements",
        f"/measurements/{run}": f"Measurement {run}",
        f"/workloads/{key}": "Workload history",
        f"/max-context?{QUESTION}": "Does my runtime make sense?",
        "/measurements?limit=0": "Bad request",  # a 422 page naming the parameter
    }
    for path, heading in addresses.items():
        response = screen.goto(url + path)
        assert response and response.headers["content-type"].startswith("text/html"), path
        expect(screen.locator("h1").first).to_have_text(heading)
        assert screen.locator("main a, main form").count() > 0, path  # a way on
        assert screen.evaluate("document.documentElement.scrollWidth") <= width, path
    # every GET address of the API (none left out as the API grows), asked as a browser asks
    # it: a page, but for the few for programs
    paths = [
        p for p, ops in httpx.get(f"{url}/openapi.json").json()["paths"].items() if "get" in ops
    ]
    assert set(paths) >= PROGRAMS
    names = {"chip": "h100", "model": "llama-3.1-8b", "measurement_id": run, "workload_key": key}
    for path in set(paths) - PROGRAMS:
        response = screen.goto(url + path.format(**names))
        assert response and response.headers["content-type"].startswith("text/html"), path
        assert screen.evaluate("document.documentElement.scrollWidth") <= width, path
    # the calculation's address answers at the form, with the question's answer
    screen.goto(f"{url}/check?{QUESTION}&measured_ms=30")
    expect(screen.locator("#verdict")).to_be_visible()


def test_a_model_page_leads_to_a_check_of_it(screen, url):  # noqa: F811
    screen.goto(f"{url}/models/llama-3.1-8b")
    expect(screen.locator("#memory")).to_be_visible()
    screen.get_by_role("link", name="Check it on an H100").click()
    expect(screen.locator("#f-model")).to_have_value("llama-3.1-8b")
    expect(screen.locator("#answer")).to_be_visible()


def test_the_json_link_shows_json(screen, url):  # noqa: F811
    body = {
        "chip": "a100",
        "workload": {"kind": "transformer", "model": "llama-8b", "batch": 16},
        "measured_ms": 31.5,
    }
    stored = httpx.post(f"{url}/measurements", json=body, timeout=30).json()
    screen.goto(f"{url}/measurements/{stored['id']}")
    with screen.expect_navigation():
        screen.get_by_role("link", name="JSON", exact=True).click()
    shown = json.loads(screen.locator("body").inner_text())
    assert shown["id"] == stored["id"]


def test_the_catalog_is_an_index_a_few_screens_long(screen, url):  # noqa: F811
    screen.goto(f"{url}/catalog")
    # every chip in one table, no chip's figures: about 2,100 px on a desktop, 4,200 px on a
    # phone (it was 34,012 px with every chip's figures and sources)
    height = screen.evaluate("document.documentElement.scrollHeight")
    assert height < 6 * screen.viewport_size["height"]
    screen.get_by_role("link", name="NVIDIA H100 SXM5 80GB").click()
    expect(screen.locator("h1")).to_have_text("NVIDIA H100 SXM5 80GB")
    expect(screen.locator("#chip-h100-sxm5-80gb")).to_contain_text("TFLOP/s")
