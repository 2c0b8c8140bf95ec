"""The front end in real headless Chromium: fill the form, submit, see the verdict and the
chart, save, find it in history; a bad value shows its message; phone layout; no JavaScript."""

import json
import re
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit
from urllib.request import urlopen

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect


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
    expect(page.locator("#roofline svg:visible")).to_have_count(1)
    expect(page.locator("#roofline svg:visible circle.measured")).to_have_count(1)
    expect(page.locator("#sweep svg:visible")).to_have_count(1)
    expect(page.locator("#f-batch")).to_have_value("8")
    breakdown = page.locator("#breakdown")
    expect(breakdown).to_be_visible()
    expect(breakdown.locator("tbody tr.bound th")).to_have_text("mlp gate up")
    expect(breakdown.locator("tbody tr").first).to_contain_text("memory")
    shot(page, "01-result")

    label = f"browser-{uuid.uuid4().hex[:8]}"
    page.locator("#s-label").fill(label)
    page.locator("#s-branch").fill("main")
    page.get_by_role("button", name="Store this run").click()
    expect(page).to_have_url(re.compile(r"/measurements/\d+#comparison$"))
    expect(page.locator("h1")).to_have_text(re.compile(r"Measurement \d+"))
    expect(page.locator("main")).to_contain_text(label)
    expect(page.locator("#roofline svg:visible")).to_have_count(1)
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
    expect(page.locator("#history svg:visible")).to_have_count(1)
    expect(page.locator("#runs")).to_contain_text(label)
    shot(page, "04-workload")


def test_a_bad_value_shows_its_message_and_keeps_the_form(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_label("Batch (sequences)").fill("0")
    page.get_by_label("Sequence length (tokens)").fill("4096")
    page.get_by_role("button", name="Check").click()
    error = page.locator("#f-batch-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("at least 1")
    expect(page.get_by_label("Batch (sequences)")).to_have_value("0")
    expect(page.get_by_label("Sequence length (tokens)")).to_have_value("4096")
    expect(page.locator("#verdict")).to_have_count(0)
    shot(page, "05-bad-value")


def test_a_custom_kernel_shows_only_its_fields(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_label("Workload").select_option("matmul")
    expect(page.get_by_label("Model (type to search)")).to_be_hidden()
    for name in ("m", "n", "k"):
        page.get_by_label(name, exact=True).fill("8192")
    page.get_by_label("Compute dtype").select_option("bf16")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#bound")).to_have_text("compute-bound")
    expect(page.locator("#roofline svg:visible circle.expected")).to_have_count(1)
    shot(page, "06-matmul")


def test_readable_on_a_phone(phone, url, shot):
    fill_decode(phone, url)
    expect(phone.locator("#verdict")).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone: {width}px"
    shot(phone, "07-phone-result")


def test_works_without_javascript(no_js, url, shot):
    no_js.goto(f"{url}/")
    # every field stays visible: the other kinds' and phases' too
    for name in ("gen_len", "dp", "m", "heads", "rows", "flops", "max_ttft_ms"):
        expect(no_js.locator(f"#f-{name}")).to_be_visible()
    no_js.locator("#f-dp").fill("64")  # a training field: a decode step does not read it
    no_js.locator("#f-batch").fill("8")
    no_js.locator("#f-measured_ms").fill("9")
    no_js.get_by_role("button", name="Check").click()
    expect(no_js.locator("#verdict")).to_contain_text("Near the roofline")
    # the answer's shareable URL holds only what applies to a decode step
    sent = parse_qs(urlsplit(no_js.url).query)
    assert sent["batch"] == ["8"] and sent["phase"] == ["decode"], sent
    assert not {"dp", "m", "heads", "gen_len", "max_ttft_ms"} & set(sent), sent
    expect(no_js.locator("main")).not_to_contain_text("Ignored")
    shot(no_js, "08-no-javascript")


def test_catalog_and_chart_alone(page, url, shot):
    page.goto(f"{url}/catalog")
    expect(page.locator("h1")).to_have_text("Chip catalog")
    expect(page.locator("#chip-table")).to_contain_text("TFLOP/s")
    shot(page, "09-catalog")
    page.goto(f"{url}/chips/a100")
    expect(page.locator("section.chip").first).to_contain_text("TFLOP/s")
    shot(page, "09-chip")
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
    expect(page.locator("#scaling svg:visible")).to_have_count(1)
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


def visible(page: Page, *names: str) -> None:
    for name in names:
        expect(page.locator(f"#f-{name}")).to_be_visible()


def hidden(page: Page, *names: str) -> None:
    for name in names:
        expect(page.locator(f"#f-{name}")).to_be_hidden()
        expect(page.locator(f"#f-{name}")).to_be_disabled()  # and not sent


def covers(page: Page, words: str) -> None:
    expect(page.locator("#f-measured_ms-covers")).to_have_text(f"It covers {words}.")


def test_the_form_shows_the_fields_of_the_chosen_kind_and_phase(page, url, shot):
    page.goto(f"{url}/")
    # the measured time sits right after the chip and the workload, before the model
    top = page.locator("#f-measured_ms").bounding_box()
    model = page.locator("#f-model").bounding_box()
    assert top and model and top["y"] < model["y"]
    phase = page.get_by_label("Phase")
    visible(page, "model", "batch", "seq_len", "kv_dtype", "sparsity", "max_tpot_ms")
    visible(page, "flash_attention")  # every phase's attention kernel
    hidden(page, "gen_len", "max_ttft_ms", "dp", "chip_counts", "m", "heads", "rows")
    expect(page.locator("#training-fields")).to_be_hidden()
    covers(page, "one decode step (one token for each sequence)")

    phase.select_option("generate")
    visible(page, "gen_len", "kv_dtype")
    hidden(page, "max_tpot_ms", "max_ttft_ms", "dp")
    covers(page, "the whole generation (prompt + new tokens)")

    phase.select_option("prefill")
    visible(page, "max_ttft_ms")
    hidden(page, "gen_len", "max_tpot_ms")
    covers(page, "one prefill of the prompt")

    phase.select_option("training")
    visible(page, "dp", "zero", "chip_counts", "serial_fraction", "batch", "flash_attention")
    hidden(page, "weight_dtype", "kv_dtype", "sparsity", "gen_len", "max_tpot_ms", "max_ttft_ms")
    covers(page, "one optimizer step")
    shot(page, "12-form-training")

    kind = page.get_by_label("Workload")
    for name, shown, gone in (
        ("attention", ("attn_batch", "heads", "kv_heads", "causal", "implementation"), ("rows",)),
        ("saxpy", ("elements",), ("ops", "fused", "heads")),
        ("elementwise", ("elements", "ops", "fused", "flops_per_element"), ()),
        ("softmax", ("rows", "cols"), ("elements",)),
        ("rmsnorm", ("rows", "cols"), ()),
        ("matmul", ("m", "n", "k", "allow_tf32", "sparsity"), ("rows",)),
        ("custom", ("flops", "bytes", "unit"), ("m",)),
    ):
        kind.select_option(name)
        visible(page, *shown, "chip", "measured_ms", "dtype", "stack")
        hidden(page, *gone, "model", "config", "phase", "batch", "dp", "max_tpot_ms")
        expect(page.locator("#training-fields")).to_be_hidden()
        covers(
            page,
            "one run of the chain (one kernel call when fused)"
            if name == "elementwise"
            else "one kernel call",
        )
    shot(page, "13-form-custom")

    # a field left behind by another phase is not sent: dp typed for training, then decode
    kind.select_option("transformer")
    phase.select_option("training")
    covers(page, "one optimizer step")
    page.locator("#f-dp").fill("64")
    phase.select_option("decode")
    page.locator("#f-measured_ms").fill("30")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#verdict")).to_contain_text(
        "for one decode step (one token for each sequence) against"
    )
    expect(page.locator("#answer-covers")).to_have_text(
        "Times are for one decode step (one token for each sequence)."
    )
    assert "dp" not in parse_qs(urlsplit(page.url).query)
    expect(page.locator("main")).not_to_contain_text("Ignored")
    hidden(page, "dp")  # the answer's form shows the same fields again


def test_on_a_phone_the_answer_comes_first(browser, url, shot):
    context = browser.new_context(viewport={"width": 375, "height": 812}, is_mobile=True)
    context.set_default_timeout(15_000)
    phone = context.new_page()
    try:
        phone.goto(f"{url}/")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375
        shot(phone, "14-phone-form")
        phone.locator("#f-model").fill("llama-3.1-70b")
        phone.locator("#f-batch").fill("8")
        phone.locator("#f-tp").fill("4")
        phone.locator("#f-measured_ms").fill("30")
        phone.get_by_role("button", name="Check").click()
        expect(phone.locator("#verdict")).to_be_visible()
        # the answer starts on the first screen, without scrolling past the form
        answer = phone.locator("#answer").bounding_box()
        assert answer and answer["y"] < 812 / 2, answer
        verdict = phone.locator("#verdict").bounding_box()
        assert verdict and verdict["y"] < 812, verdict
        # the page never scrolls sideways: the wide tables scroll inside their own box
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375
        breakdown = phone.locator("#breakdown")
        assert breakdown.evaluate("e => e.scrollWidth") > 375  # wider than the screen...
        box = breakdown.evaluate("e => e.parentElement.getBoundingClientRect().right")
        assert box <= 375  # ...within a box that is not
        shot(phone, "15-phone-answer", full_page=False)
        shot(phone, "16-phone-answer-whole")
        # the form follows, one tap away
        phone.get_by_role("link", name="Change the inputs ↓").click()
        expect(phone.locator("#f-batch")).to_be_in_viewport()
    finally:
        context.close()


def test_a_pasted_config_json_round_trip(page, url, shot):
    # Llama 3.1 8B's own config.json, pasted: the same answer as the catalog model's
    with urlopen(f"{url}/models/llama-3.1-8b") as response:
        config = json.load(response)["config"]
    page.goto(f"{url}/?chip=a100&model=llama-3.1-8b&batch=8")
    catalog_time = page.locator("#expected-time").inner_text()

    page.get_by_text("…or paste a Hugging Face config.json").click()
    page.get_by_label("config.json (a model not in the catalog)").fill(json.dumps(config, indent=2))
    expect(page.locator("#f-model")).to_be_disabled()  # the config stands in for the model
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#answer h2")).to_contain_text("NVIDIA A100")
    expect(page.locator("#expected-time")).to_have_text(catalog_time)
    assert urlsplit(page.url).query == ""  # a config is too long for a URL: answered as posted
    assert json.loads(page.locator("#f-config").input_value()) == config  # kept in the form
    expect(page.locator("#f-batch")).to_have_value("8")
    shot(page, "17-config")

    # a config that is not JSON, and one that lacks a size, are named beside the textarea
    page.locator("#f-config").fill('{"model_type": "llama",}')
    page.get_by_role("button", name="Check").click()
    error = page.locator("#f-config-error")
    expect(error).to_contain_text("not valid JSON")
    expect(error).to_contain_text("line 1")
    expect(page.locator("#f-config")).to_have_value('{"model_type": "llama",}')
    broken = {k: v for k, v in config.items() if k != "num_hidden_layers"}
    page.locator("#f-config").fill(json.dumps(broken))
    page.get_by_role("button", name="Check").click()
    expect(error).to_have_text("num_hidden_layers: is required")
    expect(page.locator("#answer")).to_have_count(0)
    shot(page, "18-config-error")

    # emptied, the catalog model is back and the answer has a shareable URL again
    page.locator("#f-config").fill("")
    expect(page.locator("#f-model")).to_be_enabled()
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#expected-time")).to_have_text(catalog_time)
    assert parse_qs(urlsplit(page.url).query)["model"] == ["llama-3.1-8b"]


def test_the_latency_bound_gives_the_largest_batch_within_it(page, url, shot):
    page.goto(f"{url}/")
    page.locator("#f-max_tpot_ms").fill("20")
    page.get_by_role("button", name="Check").click()
    with urlopen(f"{url}/optimal-batch?chip=a100&model=llama-3.1-8b&max_tpot_ms=20") as response:
        latency_batch = json.load(response)["latency_batch"]
    expect(page.locator("#latency-batch")).to_have_text(str(latency_batch))
    expect(page.locator("main")).to_contain_text("Largest batch within 20 ms per output token")
    shot(page, "19-latency-bound", full_page=False)


def test_desktop_screenshot_of_an_answer(page, url, shot):
    page.goto(f"{url}/?chip=h100&model=llama-2-70b&phase=training&batch=8")
    expect(page.locator("#does-not-fit")).to_be_visible()
    headline = page.locator("#does-not-fit").bounding_box()
    first_time = page.locator("#expected-time").bounding_box()
    assert headline and first_time and headline["y"] < first_time["y"]
    marked = page.locator("#expected-time").evaluate("e => getComputedStyle(e, '::after').content")
    assert marked == '" (cannot run)"', marked
    shot(page, "20-does-not-fit", full_page=False)


# --- the comparison page, the catalog's filter, phone widths, labels in the real browser ---

PHONE, PHONE_HEIGHT = 375, 812
LABELS = (
    ".label, .label-used, .cache-label, .marker-label, .limit-label, .latency-label, "
    ".floor-label, .you-label"
)
# in the page: the boxes Chromium lays each chart's placed labels out in, and its viewBox
LABEL_BOXES = """svg => {
  const view = svg.viewBox.baseVal;
  const boxes = Array.from(svg.querySelectorAll(arguments_labels)).map(t => {
    const b = t.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height, t.textContent];
  });
  return {width: view.width, height: view.height, boxes: boxes};
}"""


@pytest.fixture
def phone375(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": PHONE, "height": PHONE_HEIGHT}, device_scale_factor=2, is_mobile=True
    )
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def compare(page: Page, url: str) -> None:
    page.goto(f"{url}/comparison")
    page.get_by_label("Chips (comma-separated ids or aliases)").fill("a100, H100, mi300x")
    page.get_by_label("Model", exact=True).fill("llama-8b")
    page.get_by_label("Batch (sequences)").fill("8")
    page.get_by_label("Price per chip-hour of the others (USD)").fill("2")
    page.get_by_role("button", name="Compare").click()


def test_compare_chips_ranks_them_in_a_table_and_a_chart(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_role("navigation").get_by_role("link", name="Compare").click()
    expect(page.locator("h1")).to_have_text("Compare chips")
    compare(page, url)
    rows = page.locator("#ranked tbody tr")
    expect(rows).to_have_count(3)
    # decode is memory-bound: the MI300X's 5.3 TB/s, then the H100's 3.35, the A100's 2.04
    expect(rows.nth(0)).to_contain_text("1 AMD Instinct MI300X")
    expect(rows.nth(1)).to_contain_text("NVIDIA H100")
    expect(rows.nth(2)).to_contain_text("NVIDIA A100")
    expect(page.locator("#compare-chart svg:visible rect.bar-fits:not(.key)")).to_have_count(3)
    expect(page.get_by_label("Chips (comma-separated ids or aliases)")).to_have_value(
        "a100, H100, mi300x"
    )
    shot(page, "12-compare")
    page.get_by_label("Chips (comma-separated ids or aliases)").fill("a100,h1000")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#f-chips-error")).to_contain_text("did you mean h100-sxm5-80gb")


def test_the_catalog_filter_hides_rows_as_you_type(page, url, shot):
    page.goto(f"{url}/catalog")
    rows = page.locator("#chip-table tbody tr[data-search]")
    total = rows.count()
    assert total >= 39
    page.get_by_label("Filter chips").press_sequentially("mi3")
    expect(page.locator("#chip-table tbody tr[data-search]:visible")).to_have_count(3)
    expect(page.locator("#chip-filter-count")).to_have_text(f"3 of {total} chips")
    page.get_by_label("Filter chips").fill("PCIe H100")  # every word, any order and case
    expect(page.locator("#chip-table tbody tr[data-search]:visible")).to_have_count(1)
    page.get_by_label("Filter chips").fill("no such chip")
    expect(page.locator("#chip-filter-none")).to_be_visible()
    page.get_by_label("Filter chips").fill("")
    expect(page.locator("#chip-table tbody tr[data-search]:visible")).to_have_count(total)
    shot(page, "13-catalog-table", full_page=False)
    page.locator("#chip-table").get_by_role("link", name="AMD Instinct MI300X").click()
    expect(page).to_have_url(re.compile(r"/chips/mi300x$"))
    expect(page.locator("h1")).to_have_text("AMD Instinct MI300X")
    expect(page.locator("#chip-mi300x")).to_be_in_viewport()


def test_the_catalog_is_a_plain_table_without_javascript(no_js, url):
    no_js.goto(f"{url}/catalog")
    expect(no_js.locator("#chip-filter-box")).to_be_hidden()
    rows = no_js.locator("#chip-table tbody tr[data-search]")
    expect(no_js.locator("#chip-table tbody tr[data-search]:visible")).to_have_count(rows.count())


def _stored_measurement(url: str) -> dict[str, object]:
    body = {
        "chip": "a100",
        "workload": {"kind": "transformer", "model": "llama-8b", "batch": 16},
        "measured_ms": [31.5, 30.1],
        "label": "phone-width",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "notes": "a long note without spaces: " + "x" * 120,
    }
    response = httpx.post(f"{url}/measurements", json=body, timeout=30)
    assert response.status_code == 201, response.text
    stored: dict[str, object] = response.json()
    return stored


def test_pages_fit_a_375_px_phone_and_their_charts_scale(phone375, url, shot):
    stored = _stored_measurement(url)
    pages = {
        "catalog": "/catalog",
        "compare": "/comparison?chips=a100,h100,mi300x,l40s,t4&model=llama-8b&batch=8"
        "&price_per_hour=2",
        "history": "/history",
        "workload": f"/history/{stored['workload_key']}",
        "measurement": f"/measurements/{stored['id']}",
        "check": "/?chip=a100&model=llama-3.1-8b&batch=8&measured_ms=30",
    }
    for name, path in pages.items():
        phone375.goto(url + path)
        width = phone375.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE, f"{name} scrolls sideways at {PHONE} px: {width}px"
        for chart in phone375.locator("figure.chart svg:visible").all():
            box = chart.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE, (name, box)
        for wide in phone375.locator(".scroll").all():  # tables scroll inside their box
            box = wide.bounding_box()
            assert box and box["x"] + box["width"] <= PHONE, (name, box)
        # the whole page, unless it runs past ten screens (the catalog at this width: some
        # 67,000 px, which Chromium takes 17-20 s to capture): its first screen
        height = phone375.evaluate("document.documentElement.scrollHeight")
        shot(phone375, f"14-phone-{name}", full_page=height <= 10 * PHONE_HEIGHT)
    # the check page: the roofline and the sweep, each as drawn for a phone
    assert phone375.locator("figure.chart svg.narrow:visible").count() == 2


# a bf16 GEMV of 32,016,000 B on an A100: 15.7 us at 2.039 TB/s, 4.43 us at its L2's 7.219
# TB/s; measured 8 us, between them, with the bytes within the 40 MiB L2: cache-resident
CACHE_RESIDENT = "/?chip=a100&kind=matmul&m=1&n=4000&k=4000&dtype=bf16&measured_ms=0.008"


def test_a_cache_resident_run_is_explained_and_its_cache_roof_drawn(page, url, shot):
    page.goto(url + CACHE_RESIDENT)
    verdict = page.locator(".verdict").first
    assert "Cache-resident" in verdict.inner_text()
    assert page.locator("#roofline svg .cache-slope").count() >= 1
    label = page.locator("#roofline svg .cache-label").first
    assert label.text_content() == "L2 40 MiB 7.22 TB/s"
    size = float(label.evaluate("t => getComputedStyle(t).fontSize").removesuffix("px"))
    assert 11 <= size <= 14
    shot(page, "20-cache-resident")


def test_chart_labels_do_not_collide_or_clip_as_drawn(page, url):
    # the boxes Chromium draws the placed labels in (not estimates): none overlaps another,
    # none leaves its chart's viewBox; on the roofline, batch sweep and scaling charts, each as
    # drawn for a desktop and for a phone
    page.goto(f"{url}/?chip=a100&model=llama-3.1-8b&batch=200&measured_ms=30&max_tpot_ms=20")
    training = "/?chip=h100&model=llama-3.1-8b&phase=training&batch=512&dp=64&zero=1"
    boxes = LABEL_BOXES.replace("arguments_labels", repr(LABELS))
    charts = page.locator("#roofline svg").all() + page.locator("#sweep svg").all()
    drawn = [c.evaluate(boxes) for c in charts]
    page.goto(f"{url}/?chip=h100&kind=saxpy&elements=1000&measured_ms=0.02")  # a floor
    drawn += [c.evaluate(boxes) for c in page.locator("#roofline svg").all()]
    page.goto(f"{url}{CACHE_RESIDENT}")  # the L2's slope and its label beside memory's
    drawn += [c.evaluate(boxes) for c in page.locator("#roofline svg").all()]
    page.goto(f"{url}{training}&chip_counts=8,16,32,64,128,256")
    drawn += [c.evaluate(boxes) for c in page.locator("#scaling svg").all()]
    assert len(drawn) == 10
    for chart in drawn:
        boxes = chart["boxes"]
        assert boxes
        for i, (left, top, right, bottom, text) in enumerate(boxes):
            assert left >= 0 and top >= 0, text
            assert right <= chart["width"] and bottom <= chart["height"], text
            for other in boxes[i + 1 :]:
                apart = (
                    right <= other[0] + 0.5
                    or other[2] <= left + 0.5
                    or bottom <= other[1] + 0.5
                    or other[3] <= top + 0.5
                )
                assert apart, (text, other[4])
