"""The front end in real headless Chromium: fill the form, submit, see the verdict and the
chart, save, find it in history; a bad value shows its message; phone layout; no JavaScript."""

import re
import uuid

from playwright.sync_api import Page, expect


def fill_decode(page: Page, url: str, measured: str = "30") -> None:
    page.goto(f"{url}/")
    page.get_by_label("Chip (id or alias; type to search)").fill("a100")
    page.get_by_label("Model (type to search)").fill("llama-3.1-8b")
    page.get_by_label("Batch (sequences)").fill("8")
    page.locator("#f-measured_ms").fill(measured)
    page.get_by_role("button", name="Check").click()


def test_check_store_and_find_it_in_history(page, url, shot):
    fill_decode(page, url)
    expect(page.locator("#verdict")).to_contain_text("room to improve")
    expect(page.locator("#expected-time")).to_have_text(re.compile(r"[\d.]+ ms"))
    expect(page.locator("#roofline svg")).to_be_visible()
    expect(page.locator("#roofline svg circle.measured")).to_have_count(1)
    expect(page.locator("#sweep svg")).to_be_visible()
    expect(page.locator("#f-batch")).to_have_value("8")
    breakdown = page.locator("#breakdown")
    expect(breakdown).to_be_visible()
    expect(breakdown.locator("tbody tr.bound th")).to_have_text("mlp gate up")
    expect(breakdown.locator("tbody tr").first).to_contain_text("memory")
    shot(page, "01-result")

    label = f"browser-{uuid.uuid4().hex[:8]}"
    page.locator("#s-label").fill(label)
    page.locator("#s-branch").fill("main")
    page.get_by_role("button", name="Store measurement").click()
    expect(page).to_have_url(re.compile(r"/measurements/\d+$"))
    expect(page.locator("h1")).to_have_text(re.compile(r"Measurement \d+"))
    expect(page.locator("main")).to_contain_text(label)
    expect(page.locator("#roofline svg")).to_be_visible()
    shot(page, "02-measurement")

    page.get_by_role("navigation").get_by_role("link", name="History").click()
    page.get_by_label("Label").fill(label)
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(label)
    # the verdict tag wears its verdict's colour (--warn, #9a6200), not the plain tag's grey
    tag = rows.first.locator("span.tag")
    colour = tag.evaluate("e => getComputedStyle(e).borderLeftColor")
    assert colour == "rgb(154, 98, 0)", colour
    shot(page, "03-history")

    rows.first.get_by_role("link", name=re.compile("llama")).click()
    expect(page.locator("#history svg")).to_be_visible()
    expect(page.locator("#runs")).to_contain_text(label)
    shot(page, "04-workload")


def test_a_bad_value_shows_its_message_and_keeps_the_form(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_label("Batch (sequences)").fill("0")
    page.get_by_label("Sequence length (tokens)").fill("4096")
    page.get_by_role("button", name="Check").click()
    error = page.locator("#f-batch-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("greater than or equal to 1")
    expect(page.get_by_label("Batch (sequences)")).to_have_value("0")
    expect(page.get_by_label("Sequence length (tokens)")).to_have_value("4096")
    expect(page.locator("#verdict")).to_have_count(0)
    shot(page, "05-bad-value")


def test_a_custom_kernel_shows_only_its_fields(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_label("Matmul").check()
    expect(page.get_by_label("Model (type to search)")).to_be_hidden()
    for name in ("m", "n", "k"):
        page.get_by_label(name, exact=True).fill("8192")
    page.get_by_label("Compute dtype").select_option("bf16")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#bound")).to_have_text("compute-bound")
    expect(page.locator("#roofline svg circle.expected")).to_have_count(1)
    shot(page, "06-matmul")


def test_readable_on_a_phone(phone, url, shot):
    fill_decode(phone, url)
    expect(phone.locator("#verdict")).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone: {width}px"
    shot(phone, "07-phone-result")


def test_works_without_javascript(no_js, url, shot):
    fill_decode(no_js, url, measured="9")
    expect(no_js.locator("#verdict")).to_contain_text("Near the roofline")
    shot(no_js, "08-no-javascript")


def test_catalog_and_chart_alone(page, url, shot):
    page.goto(f"{url}/catalog")
    expect(page.locator("h1")).to_have_text("Chip catalog")
    expect(page.locator("section.chip").first).to_contain_text("TFLOP/s")
    shot(page, "09-catalog")
    page.goto(f"{url}/roofline.svg?chip=a100&model=llama-3.1-8b&batch=8&measured_ms=30")
    expect(page.locator("circle.measured")).to_have_count(1)
    shot(page, "10-roofline-svg", full_page=False)


def test_training_run_with_scaling_chart(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_label("Chip (id or alias; type to search)").fill("h100")
    page.get_by_label("Model (type to search)").fill("llama-3.1-8b")
    page.get_by_label("Phase").select_option("training")
    page.get_by_label("Batch (sequences)").fill("512")
    page.get_by_label("Data-parallel replicas").fill("64")
    page.get_by_label("ZeRO stage").select_option("1")
    page.get_by_label("Tokens to train on (optional)").fill("1e12")
    page.get_by_label("Scaling: chip counts").fill("8,16,32,64,128,256")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#training")).to_contain_text("64 chips")
    expect(page.locator("#mfu")).to_have_text(re.compile(r"\d+% / \d+%"))
    expect(page.locator("#time-to-train")).to_have_text(re.compile(r"[\d.]+ days"))
    expect(page.locator("#scaling svg")).to_be_visible()
    expect(page.locator("#breakdown")).to_contain_text("optimizer update")
    expect(page.locator("#breakdown")).to_contain_text("dp gradient sync")
    shot(page, "11-training")


def test_the_interactive_schema_works_without_the_internet(page, url, shot):
    # every request of /docs goes to this service: Swagger UI's files come from the
    # swagger-ui-bundle package, and the page lists the operations
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(url) else outside.append(r.url))
    page.goto(f"{url}/docs")
    expect(page.locator(".swagger-ui .opblock-summary-path").first).to_be_visible()
    expect(page.locator(".swagger-ui")).to_contain_text("/check")
    assert outside == []
    shot(page, "09-docs")
