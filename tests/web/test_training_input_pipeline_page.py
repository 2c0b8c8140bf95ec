"""A training step from the form can be fed by the input pipeline, with the input pipeline
kind's own fields (docs/formulas.md#input-pipeline): read only when the step is said to be
fed by it, errors at their fields; in Chromium, the fields show for training alone."""

import re

from playwright.sync_api import Page, expect

from app.web import forms
from app.web.views import workload_params

# 256 ImageNet JPEGs of 110 kB from local NVMe (the form's defaults) decoded at 5 ms each on
# 8 workers: 256 x 5 ms / 8 = 160 ms of decoding per step, longer than the reads (7.68 ms)
# and the pinned copy of 256 x 150,528 B (1.61 ms): the pipeline takes 160 ms, set by decode
TRAINING = {
    "chip": "a100",
    "kind": "transformer",
    "phase": "training",
    "fed": "true",
    "decode_s_per_sample": "0.005",
    "workers": "8",
    "device_bytes_per_sample": "150528",
    "input_pinned": "true",
}
ROW = re.compile(r"Input pipeline</th><td colspan=\"2\">per step, set by decode</td><td>160 ms<")


def test_a_training_step_fed_by_the_pipeline_shows_its_time(client):
    page = client.get("/", params=TRAINING).text
    assert ROW.search(page)


def test_not_fed_its_fields_are_not_read(client):
    page = client.get("/", params={**TRAINING, "fed": "false"}).text
    assert not ROW.search(page) and "per step, set by" not in page
    # nor in another phase, fed or not
    assert "per step, set by" not in client.get("/", params={**TRAINING, "phase": "decode"}).text


def test_a_bad_pipeline_figure_is_an_error_at_its_field(client):
    response = client.get("/", params={**TRAINING, "workers": "0"})
    assert response.status_code == 422
    assert re.search(r'id="f-workers-error" role="alert">must be at least 1<', response.text)


def test_a_stored_fed_step_is_checked_again_with_its_pipeline():
    # a stored run's "check again" link carries the pipeline back into the form's fields
    first = forms.calculation(forms.form_values(TRAINING)).workload
    stored = first.model_dump(mode="json", exclude_none=True)
    params = workload_params(stored, "a100-sxm4-80gb")
    assert params["fed"] == "true" and params["input_pinned"] == "true"
    assert forms.calculation(forms.form_values(params)).workload == first


def test_the_pipeline_fields_show_for_a_fed_training_step_only(page: Page, url, shot):
    page.goto(f"{url}/")
    samples = page.get_by_label("Bytes per sample (stored)")
    fed = page.get_by_label("Input pipeline", exact=True)
    expect(samples).to_be_hidden()  # decode, the form's first phase
    expect(fed).to_be_hidden()
    page.get_by_label("Phase").select_option("training")
    expect(samples).to_be_hidden()  # not fed yet
    fed.select_option("true")
    expect(samples).to_be_visible()
    page.get_by_label("Decode, s per sample on one core").fill("0.005")
    page.get_by_label("DataLoader workers").fill("8")
    page.get_by_label("Bytes per sample on the device (optional)").fill("150528")
    page.locator("#f-input_pinned").select_option("true")
    shot(page, "training-input-pipeline-form")
    page.get_by_label("Phase").select_option("decode")
    expect(samples).to_be_hidden()  # another phase takes no pipeline
    page.get_by_label("Phase").select_option("training")
    expect(samples).to_be_visible()
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#answer")).to_contain_text("per step, set by decode")
    shot(page, "training-input-pipeline")
