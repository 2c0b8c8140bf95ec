"""Storing a run keeps the user (issue 37 item 4), in headless Chromium at 375 and 1280 px:
the store form sits beside the verdict, a store that fails says why in the form's words at the
field and at the form's top (and the page opens there), and a stored run's page opens at its
comparison with the earlier runs, which comes first."""

import re

from playwright.sync_api import expect

from tests.web.test_readable import screen  # noqa: F401  (the fixture: both widths)

CHECK = "/?chip=a100&model=llama-3.1-8b&batch=8&measured_ms=30"


def test_store_beside_the_verdict_errors_in_words_then_the_comparison_first(screen, url):  # noqa: F811
    screen.goto(url + CHECK)
    verdict = screen.locator("#verdict").bounding_box()
    store = screen.locator("#store").bounding_box()
    assert verdict and store
    # right below the verdict, not thousands of pixels down
    assert 0 <= store["y"] - (verdict["y"] + verdict["height"]) < 120
    # stored without a time: the page opens at the store form, the error at its top and field
    screen.locator("#s-measured_ms").fill("")
    screen.get_by_role("button", name="Store this run").click()
    summary = screen.locator("#store-errors")
    expect(summary).to_be_in_viewport()
    expect(summary).to_contain_text("Measured time (ms): enter the time you measured")
    expect(screen.locator("#s-measured_ms-error")).to_have_text(
        "enter the time you measured to store this run"
    )
    expect(screen.get_by_text("measured_time_s")).to_have_count(0)
    # the time given: the stored run's page, at its comparison, which comes before the verdict
    screen.locator("#s-measured_ms").fill("30")
    screen.locator("#s-label").fill("kept")
    screen.get_by_role("button", name="Store this run").click()
    expect(screen).to_have_url(re.compile(r"/measurements/\d+#comparison$"))
    comparison = screen.locator("#comparison")
    expect(comparison).to_be_in_viewport()
    expect(comparison).to_contain_text("Against the earlier runs")
    first = screen.locator("main > section, main > div.verdict").first
    expect(first).to_have_id("comparison")
    width = screen.viewport_size["width"]
    assert screen.evaluate("document.documentElement.scrollWidth") <= width
