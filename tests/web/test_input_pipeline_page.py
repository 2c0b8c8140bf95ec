"""The form offers the input pipeline (docs/formulas.md#input-pipeline): its fields, its
answer, its errors at their fields; in Chromium, only its fields show when it is chosen."""

import re

from playwright.sync_api import Page, expect

# 256 ImageNet JPEGs of 110 kB from local NVMe (the form's defaults), 5 ms of decoding each
# on 8 workers, copied as 150,528-byte uint8 images from pinned memory
IMAGENET = {
    "chip": "a100",
    "kind": "input_pipeline",
    "decode_s_per_sample": "0.005",
    "workers": "8",
    "device_bytes_per_sample": "150528",
    "input_pinned": "true",
}


def test_the_form_offers_the_input_pipeline(client):
    page = client.get("/").text
    assert '<option value="input_pipeline"' in page
    for name in ("sample_bytes", "samples_per_step", "storage", "workers", "input_pinned"):
        assert f'name="{name}"' in page
    assert '<option value="object_store"' in page


def test_the_imagenet_pipeline_from_the_form_is_decode_bound(client):
    # decode 256 x 5 ms / 8 workers = 160 ms, longer than storage (7.68 ms of reads) and the
    # copy (1.61 ms pinned): 160 ms per step, input-bound, set by decode
    page = client.get("/", params=IMAGENET).text
    assert re.search(r'id="expected-time" class="t">160 ms<', page)
    assert 'id="bound">input-bound<' in page
    assert "per step, set by decode" in page
    assert "one step&#39;s batch (read, decoded, copied)" in page


def test_a_measured_step_gets_the_advice_of_its_limit(client):
    page = client.get("/", params={**IMAGENET, "measured_ms": "170"}).text
    assert "Input-bound" in page
    assert "more DataLoader workers" in page


def test_own_storage_figures_missing_one_is_an_error_at_the_form(client):
    response = client.get("/", params={**IMAGENET, "storage": "", "iops": "5"})
    assert response.status_code == 422
    assert "give a storage preset" in response.text


def test_choosing_the_input_pipeline_shows_its_fields_only(page: Page, url, shot):
    page.goto(f"{url}/")
    page.get_by_label("Workload").select_option("input_pipeline")
    expect(page.get_by_label("Model (type to search)")).to_be_hidden()
    expect(page.get_by_label("Bytes copied")).to_be_hidden()
    expect(page.get_by_label("Bytes per sample (stored)")).to_be_visible()
    page.get_by_label("Decode, s per sample on one core").fill("0.005")
    page.get_by_label("DataLoader workers").fill("8")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#bound")).to_have_text("input-bound")
    expect(page.locator("#expected-time")).to_have_text("160 ms")
    shot(page, "input-pipeline")
