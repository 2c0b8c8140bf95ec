"""The HTML pages through the ASGI client: status, key content, validation messages next to
their field, the form keeping what was typed, storing, history and content negotiation."""

import html
import json
import re
import typing
import uuid
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import pytest

from app.formatting import seconds
from app.http.negotiation import wants_html
from app.schemas.requests import Workload
from app.web.field_values import MAX_CONFIG_CHARS
from app.web.forms import DEFAULTS

HTML = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
DECODE = {"chip": "a100", "kind": "transformer", "model": "llama-3.1-8b", "batch": "8"}
SAME_SITE = {"origin": "http://testserver"}  # the store form refuses cross-site posts
MATMUL = {"chip": "a100", "kind": "matmul", "m": "4096", "n": "4096", "k": "4096"}


class Controls(HTMLParser):
    """Collects form controls (with their id) and the ids that labels point at."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict[str, str | None]] = []
        self.labelled: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("input", "select", "textarea") and found.get("type") != "hidden":
            self.controls.append(found)
        if tag == "label" and found.get("for"):
            self.labelled.add(str(found["for"]))


def controls(html: str) -> Controls:
    parser = Controls()
    parser.feed(html)
    return parser


def value_of(html: str, control_id: str) -> str:
    match = re.search(rf'id="{control_id}" name="[^"]+" type="text" value="([^"]*)"', html)
    assert match, control_id
    return match.group(1)


def test_form_has_a_label_on_every_input_and_sensible_defaults(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    parsed = controls(page.text)
    for control in parsed.controls:
        assert control.get("id") in parsed.labelled, control
    assert value_of(page.text, "f-batch") == "1" and value_of(page.text, "f-seq_len") == "2048"
    assert 'id="chip-list"' in page.text and 'id="model-list"' in page.text  # searchable
    assert "http://" not in page.text.split("</footer>")[0][:200]
    # one script, the app's own file (the CSP allows no inline script)
    assert re.findall(r"<script[^>]*>", page.text) == [
        '<script src="http://testserver/static/form.js" defer>'
    ]
    assert client.get("/static/form.js").headers["content-type"].startswith("text/javascript")


def test_stylesheet_is_served_by_the_app(client):
    page = client.get("/")
    href = re.search(r'<link rel="stylesheet" href="([^"]+)"', page.text)
    assert href and not href.group(1).startswith("https://")
    css = client.get(href.group(1))
    assert css.status_code == 200 and "@media" in css.text


def test_result_of_a_transformer_check(client):
    page = client.get("/", params={**DECODE, "measured_ms": "30"})
    assert page.status_code == 200
    text = page.text
    assert 'id="verdict"' in text and "room to improve" in text
    assert re.search(r'id="expected-time" class="t">[\d.]+ ms<', text)
    assert "memory-bound" in text and "FLOP/B" in text and "TFLOP/s" in text
    assert 'id="memory"' in text and "Weights" in text and " GB" in text
    # roofline and batch sweep, each drawn for a desktop and for a phone
    assert text.count("<svg") == 4 and text.count('class="chart narrow"') == 2
    assert 'class="measured"' in text and 'id="sweep"' in text and "memory limit" in text
    assert value_of(text, "f-batch") == "8" and value_of(text, "f-measured_ms") == "30"
    assert 'id="store"' in text
    assert re.search(r'id="achieved">Achieved [\d.]+ [GT]FLOP/s\s+\([\d.]+% of the peak\)', text)


def test_result_of_a_matmul_without_a_measurement(client):
    page = client.get("/", params=MATMUL | {"dtype": "bf16"})
    assert page.status_code == 200
    assert "compute-bound" in page.text and "441 µs" in page.text
    assert 'id="verdict"' not in page.text and 'id="sweep"' not in page.text
    assert 'class="measured"' not in page.text and 'class="expected"' in page.text


@pytest.mark.parametrize(
    ("params", "bound"),
    [
        # cos then exp on the A100: CUDA's precise routines, 40.8 + 9.1 fp32 instructions an
        # element at 9.75e12 a second, 512 us, over the 392 us of the chain's 800 MB
        ({"kind": "elementwise", "elements": "1e8", "ops": "cos,exp", "dtype": "fp32"}, "compute"),
        ({"kind": "elementwise", "elements": "100000000", "ops": "2", "fused": "false"}, "memory"),
        ({"kind": "custom", "flops": "1e12", "bytes": "1e9", "unit": "vector"}, "compute"),
        ({"model": "llama-3.1-70b", "phase": "training", "batch": "8", "tp": "8"}, "compute"),
        # 1 GB from pageable memory over the A100's PCIe Gen4 x16 (32 GB/s each way)
        ({"kind": "copy", "copy_bytes": "1e9", "direction": "h2d"}, "communication"),
        ({"kind": "copy", "copy_bytes": "1e9", "direction": "d2d"}, "memory"),
    ],
)
def test_every_workload_kind_of_the_form(client, params, bound):
    page = client.get("/", params={"chip": "a100", **params})
    assert page.status_code == 200, page.text[:2000]
    assert f'id="bound">{bound}-bound<' in page.text


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (DECODE | {"batch": "0"}, "batch", "at least 1"),
        (DECODE | {"batch": "eight"}, "batch", "whole number"),
        (DECODE | {"chip": "a1000"}, "chip", "unknown chip 'a1000'; did you mean"),
        (DECODE | {"model": "lama-8b"}, "model", "unknown model 'lama-8b'"),
        (DECODE | {"measured_ms": "-3"}, "measured_ms", "at least 0.000001"),
        (DECODE | {"measured_ms": "1e-297"}, "measured_ms", "at least 0.000001"),
        (DECODE | {"measured_ms": "2e10"}, "measured_ms", "at most 10,000,000,000"),
        (MATMUL | {"k": "1.5"}, "k", "whole number"),
        ({"chip": "a100", "kind": "custom", "flops": "lots", "bytes": "1e9"}, "flops", "number"),
        (
            # the A100 has no fp8 matrix peak
            {"chip": "a100", "kind": "custom", "flops": "1", "bytes": "1", "dtype": "fp8"}
            | {"unit": "matrix"},
            "dtype",
            "fp8",
        ),
    ],
)
def test_bad_values_show_their_message_next_to_the_field(client, params, field, message):
    page = client.get("/", params=params)
    assert page.status_code == 422
    error = re.search(rf'<p class="error" id="f-{field}-error" role="alert">([^<]*)</p>', page.text)
    assert error, page.text[:3000]
    assert message in error.group(1).replace("&#39;", "'")
    assert f'aria-describedby="f-{field}-error"' in page.text
    assert "Traceback" not in page.text and 'id="verdict"' not in page.text
    if field not in ("dtype", "kind"):  # the form keeps what the user typed
        assert value_of(page.text, f"f-{field}") == params[field].replace("'", "&#39;")


def test_roofline_svg_alone(client):
    chart = client.get("/roofline.svg", params={**DECODE, "measured_ms": "30"})
    assert chart.status_code == 200 and chart.headers["content-type"] == "image/svg+xml"
    root = ElementTree.fromstring(chart.text)
    classes = {c.get("class") for c in root.iter("{http://www.w3.org/2000/svg}circle")}
    assert classes == {"ridge", "expected", "realistic", "measured"}
    # the /expected-time query parameters alone are enough (kind defaults to transformer)
    plain = client.get("/roofline.svg", params={"chip": "h100", "model": "llama-3.1-8b"})
    assert plain.status_code == 200 and "NVIDIA H100" in plain.text
    bad = client.get("/roofline.svg", params={**DECODE, "batch": "0"})
    assert bad.status_code == 422 and bad.headers["content-type"] == "image/svg+xml"
    assert "batch: must be at least 1" in bad.text
    tiny = client.get("/roofline.svg", params={**DECODE, "measured_ms": "1e-297"})
    assert tiny.status_code == 422 and "measured_ms: must be at least" in tiny.text


def test_batch_sweep_svg_alone(client):
    chart = client.get("/batch-sweep.svg", params=DECODE)
    assert chart.status_code == 200 and chart.headers["content-type"] == "image/svg+xml"
    assert "memory limit" in chart.text
    kernel = client.get("/batch-sweep.svg", params=MATMUL)
    assert kernel.status_code == 422 and "transformer" in kernel.text


def store(client, label: str, measured_ms: str = "30", branch: str = "main"):
    form = {**DECODE, "measured_ms": measured_ms, "label": label, "branch": branch}
    return client.post("/save", data=form, headers=SAME_SITE, follow_redirects=False)


def test_store_button_saves_through_the_measurement_api(client):
    label = f"web-{uuid.uuid4().hex[:8]}"
    saved = store(client, label)
    assert saved.status_code == 303
    location = saved.headers["location"]
    assert re.fullmatch(r"/measurements/\d+#comparison", location)
    as_json = client.get(location)  # JSON stays the default
    assert as_json.headers["content-type"] == "application/json"
    body = as_json.json()
    assert body["label"] == label and body["measured_time_s"] == pytest.approx(0.03)
    assert body["verdict"] == "room_to_improve" and body["branch"] == "main"
    page = client.get(location, headers=HTML)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert label in page.text and "30 ms" in page.text and 'id="roofline"' in page.text
    assert f'href="/history/{body["workload_key"]}"' in page.text


def test_store_needs_a_measured_time_said_in_the_forms_words_once(client):
    page = client.post("/save", data={**DECODE, "measured_ms": ""}, headers=SAME_SITE)
    assert page.status_code == 422
    said = "enter the time you measured to store this run"
    # at the field, and at the top of the store form, linking to the field; never the API's
    # words ("give exactly one of measured_time_s or measured_ms"), never at the check form
    assert re.search(rf'id="s-measured_ms-error" role="alert">{said}', page.text)
    top = re.search(r'id="store-errors".*?</div>', page.text, re.S)
    assert top and f'<a href="#s-measured_ms">Measured time (ms)</a>: {said}' in top.group(0)
    assert "measured_time_s" not in page.text and 'id="f-measured_ms-error"' not in page.text
    # a bad value in a store field: its own message there
    bad = client.post("/save", data={**DECODE, "measured_ms": "-3"}, headers=SAME_SITE)
    assert bad.status_code == 422 and 'id="s-measured_ms-error"' in bad.text
    assert 'id="store-errors"' in bad.text and 'id="f-measured_ms-error"' not in bad.text


def test_history_lists_and_filters_stored_measurements(client):
    label = f"hist-{uuid.uuid4().hex[:8]}"
    store(client, label, "30")
    store(client, label, "40")
    listed = client.get("/measurements", params={"label": label}, headers=HTML)
    assert listed.status_code == 200 and listed.text.count("room to improve") == 2
    assert "2 measurements" in listed.text
    tolerant = client.get("/history", params={"chip": "", "label": label, "phase": ""})
    assert tolerant.status_code == 200 and "2 measurements" in tolerant.text
    assert value_of(tolerant.text, "f-label") == label
    bad = client.get("/history", params={"since": "yesterday"})
    assert bad.status_code == 422 and 'id="f-since-error"' in bad.text
    as_json = client.get("/measurements", params={"label": label})
    assert set(as_json.json()) == {"total", "total_kind", "limit", "offset", "next", "items"}


def test_workload_page_shows_history_chart_and_regression(client):
    label = f"wl-{uuid.uuid4().hex[:8]}"
    # a branch of this test's own, compared with itself: the window holds only its two runs,
    # whatever else the shared server stored of this workload (failed in CI's random order)
    branch = {"baseline_branch": label}
    first = client.get(store(client, label, "30", label).headers["location"]).json()
    store(client, label, "45", label)  # +50%: a regression against the previous run
    key = first["workload_key"]
    page = client.get(f"/workloads/{key}", params=branch, headers=HTML)
    assert page.status_code == 200 and 'id="history"' in page.text
    assert "fraction of roofline" in page.text and "<svg" in page.text
    assert re.search(r'id="regression"><strong class="bad">yes', page.text)
    assert "Best" in page.text and "Latest" in page.text and "Baseline" in page.text
    same = client.get(f"/history/{key}", params={**branch, "threshold": "0.6"})
    assert same.status_code == 200 and 'id="regression">no' in same.text
    assert client.get(f"/workloads/{key}").json()["workload_key"] == key


def test_unknown_pages_are_html_404s_without_traces(client):
    missing = client.get("/measurements/999999", headers=HTML)
    assert missing.status_code == 404 and "There is no measurement 999999" in missing.text
    assert client.get("/measurements/999999").json()["detail"]["message"]
    unknown = client.get(f"/history/{'0' * 64}")
    assert unknown.status_code == 404 and "Traceback" not in unknown.text


def test_catalog_page_lists_chips_with_figures_and_sources(client, app):
    page = client.get("/catalog")
    assert page.status_code == 200
    catalog = app.state.catalogs.chips()
    for record in catalog.chips.values():
        assert record.entry.name in page.text
    for source in catalog.catalog.sources.values():
        assert source.url in page.text
    assert "TB/s" in page.text and "TFLOP/s" in page.text and " GB" in page.text


def _headers(accept: str | None) -> dict[str, str]:
    return {} if accept is None else {"accept": accept}


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        (HTML["accept"], True),
        ("text/html", True),
        ("*/*", False),
        (None, False),
        ("application/json", False),
        ("application/json, text/html;q=0.5", False),
        ("text/html;q=0.9, application/json", False),
        ("text/*, application/json;q=0.5", True),
        ("text/html;q=bogus", False),
    ],
)
def test_content_negotiation_prefers_json_on_ties(accept, html):
    assert wants_html(_headers(accept)) is html


TRAINING = {
    "chip": "h100",
    "kind": "transformer",
    "model": "llama-3.1-8b",
    "phase": "training",
    "batch": "512",
    "dp": "64",
    "zero": "1",
    "mfu": "0.4",
    "train_tokens": "1e12",
    "chip_counts": "8,16,64,256",
    "serial_fraction": "0.02",
}


def test_result_of_a_training_run_with_its_scaling_chart(client):
    page = client.get("/", params=TRAINING)
    assert page.status_code == 200
    html = page.text
    assert 'id="training"' in html and "Training step on 64 chips (" in html
    # one chip is a chip, not "1 chips"
    one = client.get("/", params={**TRAINING, "dp": "1", "model": "llama-3.2-1b"}).text
    assert "Training step on 1 chip (" in one
    assert re.search(r'id="mfu" class="t">\d+% / 40%<', html)  # realistic MFU is the one given
    assert re.search(r'id="time-to-train" class="t">[\d.]+ days<', html)
    assert 'id="scaling"' in html and "Strong scaling: speedup and efficiency" in html
    assert "Amdahl (f=0.02)" in html
    assert value_of(html, "f-dp") == "64"  # the form keeps what was typed
    # the fewest-chips sentence names the layout
    assert re.search(
        r"Fewest chips for this batch: \d+\s+\(tp=\d+, pp=\d+, dp=64, ep=1, cp=1\)", html
    )


def test_scaling_svg_alone(client):
    chart = client.get("/scaling.svg", params=TRAINING)
    assert chart.status_code == 200 and chart.headers["content-type"] == "image/svg+xml"
    root = ElementTree.fromstring(chart.text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "efficiency" in chart.text and "linear" in chart.text
    weak = client.get("/scaling.svg", params={**TRAINING, "chip_counts": "64,128"})
    assert weak.status_code == 200
    for bad, message in (
        ({"chip_counts": "8,x"}, "comma-separated"),
        ({"chip_counts": "16,8"}, "distinct and ascending"),
        ({"phase": "decode"}, "training"),
        ({"dp": "0"}, "at least 1"),
    ):
        response = client.get("/scaling.svg", params={**TRAINING, **bad})
        assert response.status_code == 422, bad
        assert message in response.text, (bad, response.text)


def test_bad_training_values_show_their_message_next_to_the_field(client):
    page = client.get("/", params={**TRAINING, "pp": "33"})
    assert page.status_code == 422
    assert 'id="f-pp-error"' in page.text and "at most the model&#39;s 32 layers" in page.text


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        ({"chip_counts": "8,x"}, "chip_counts", "comma-separated whole numbers"),
        ({"chip_counts": "128,64"}, "chip_counts", "distinct and ascending"),
        ({"serial_fraction": "2"}, "serial_fraction", "at most 1"),
        ({"serial_fraction": "some"}, "serial_fraction", "a number between 0 and 1"),
    ],
)
def test_bad_scaling_values_keep_the_answer_and_say_what_is_wrong(client, bad, field, message):
    """The scaling curve is extra: the training answer stands, and the field that stopped the
    curve says why (it had vanished without a word)."""
    page = client.get("/", params={**TRAINING, **bad})
    html = page.text
    assert 'id="training"' in html and 'id="scaling"' not in html
    error = re.search(rf'<p class="error" id="f-{field}-error" role="alert">([^<]*)</p>', html)
    assert error and message in error.group(1), html[:3000]


def test_the_result_shows_the_step_by_operation(client):
    # the same rows as /expected-time?breakdown=true: Llama 3.1 8B decode at batch 8 on an
    # A100, memory-bound, the MLP's gate and up projections the largest share (in bold)
    page = client.get("/", params=DECODE)
    assert page.status_code == 200
    table = page.text.split('id="breakdown"')[1].split("</table>")[0]
    rows = re.findall(r'<tr( class="bound")?><th scope="row">([^<]+)</th>', table)
    assert [name for _, name in rows][:3] == ["qkv projection", "attention", "output projection"]
    assert [name for bold, name in rows if bold] == ["mlp gate up"]
    answer = client.get(
        "/expected-time",
        params={"chip": "a100", "model": "llama-3.1-8b", "batch": 8, "breakdown": "true"},
    ).json()
    assert len(rows) == len(answer["breakdown"])


def test_a_kernel_result_has_no_breakdown(client):
    page = client.get("/", params=MATMUL)
    assert page.status_code == 200 and 'id="breakdown"' not in page.text


def test_a_configuration_that_cannot_run_leads_with_that(client):
    # Llama 2 70B training on one H100 (80 GiB): 16 bytes per parameter of weights,
    # gradients and AdamW state alone are ~1.1 TB, far over the chip: the page's headline
    # says it does not fit, and its time figures are marked as those of what cannot run
    page = client.get(
        "/", params={"chip": "h100", "model": "llama-2-70b", "phase": "training", "batch": "8"}
    )
    assert page.status_code == 200
    html = page.text
    headline = html.index('id="does-not-fit"')
    assert headline < html.index('id="expected-time"')
    assert '<dl class="figures unrunnable">' in html
    fitting = client.get("/", params={"chip": "h100", "model": "llama-3.2-1b"}).text
    assert 'id="does-not-fit"' not in fitting and "unrunnable" not in fitting


def _kinds_of_the_api() -> set[str]:
    """Every workload kind POST /check takes (the discriminator of its workload union)."""
    union = typing.get_args(typing.get_args(Workload)[0])
    return {
        literal
        for model in union
        for literal in typing.get_args(model.model_fields["kind"].annotation)
    }


def test_the_form_offers_every_kind_of_the_api_but_a_sequence_of_operators(client):
    page = client.get("/").text
    select = page.split('<select id="f-kind"')[1].split("</select>")[0]
    offered = set(re.findall(r'<option value="([^"]+)"', select))
    assert offered == _kinds_of_the_api() - {"ops"}
    assert "<code>ops</code>" in page and 'href="/trace"' in page  # and where ops go instead


def expected_time_of(page: str) -> str:
    match = re.search(r'id="expected-time" class="t">([^<]+)<', page)
    assert match, page[:3000]
    return match.group(1)


@pytest.mark.parametrize(
    ("params", "workload"),
    [
        ({"kind": "saxpy", "elements": "1e8"}, {"kind": "saxpy", "n": 100_000_000}),
        (
            {"kind": "softmax", "rows": "8192", "cols": "4096"},
            {"kind": "softmax", "rows": 8192, "cols": 4096},
        ),
        (
            {"kind": "layernorm", "rows": "8192", "cols": "4096", "dtype": "bf16"},
            {"kind": "layernorm", "rows": 8192, "cols": 4096, "dtype": "bf16"},
        ),
        (
            {"kind": "rmsnorm", "rows": "1e6", "cols": "8192"},
            {"kind": "rmsnorm", "rows": 1_000_000, "cols": 8192},
        ),
        (
            {"kind": "attention", "attn_batch": "4", "heads": "32", "kv_heads": "8"}
            | {"q_len": "4096", "head_dim": "128", "causal": "true"},
            {"kind": "attention", "batch": 4, "heads": 32, "kv_heads": 8, "q_len": 4096}
            | {"head_dim": 128, "causal": True},
        ),
        (
            {"kind": "attention", "heads": "16", "q_len": "1", "kv_len": "8192"}
            | {"head_dim": "64", "implementation": "naive"},
            {"kind": "attention", "heads": 16, "q_len": 1, "kv_len": 8192, "head_dim": 64}
            | {"implementation": "naive"},
        ),
        (
            {"kind": "matmul", "m": "4096", "n": "4096", "k": "4096", "allow_tf32": "true"},
            {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "allow_tf32": True},
        ),
        (
            {"kind": "matmul", "m": "4096", "n": "4096", "k": "4096", "dtype": "bf16"}
            | {"sparsity": "2:4"},
            {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
            | {"sparsity": "2:4"},
        ),
        (
            {"kind": "elementwise", "elements": "1e8", "ops": "2", "flops_per_element": "10"},
            {"kind": "elementwise", "n": 100_000_000, "ops": 2, "flops_per_element": 10},
        ),
    ],
)
def test_every_kernel_kind_of_the_api_is_answered_by_the_form(client, params, workload):
    # the page's time is the API's: the form's fields are the workload's
    page = client.get("/", params={"chip": "a100", **params})
    assert page.status_code == 200, page.text[:2000]
    answer = client.post("/expected-time", json={"chip": "a100", "workload": workload}).json()
    assert expected_time_of(page.text) == seconds(answer["expected_time_s"])
    assert 'id="answer-covers">Times are for one ' in page.text


@pytest.mark.parametrize("phase", ["decode", "prefill", "generate"])
def test_the_form_takes_sparse_linear_layers_as_the_api_does(client, phase):
    # llama-8b on an H100 with 2:4 sparse linear layers: the page's time is the API's
    params = {"chip": "h100", "model": "llama-8b", "phase": phase, "sparsity": "2:4"}
    page = client.get("/", params={"kind": "transformer", **params})
    assert page.status_code == 200, page.text[:2000]
    sparse = client.get("/expected-time", params=params).json()
    dense_params = {name: value for name, value in params.items() if name != "sparsity"}
    dense = client.get("/expected-time", params=dense_params).json()
    assert expected_time_of(page.text) == seconds(sparse["expected_time_s"])
    assert sparse["expected_time_s"] < dense["expected_time_s"]
    assert 'option value="2:4" selected' in page.text


def test_the_form_takes_an_unfused_attention_as_the_api_does(client):
    # a llama.cpp prompt of 8,192 tokens on an RTX 4090 before FlashAttention: the page's time
    # is the API's, slower than with the fused kernel (16 B of fp32 traffic a score)
    params = {
        "chip": "rtx4090",
        "model": "llama-8b",
        "phase": "prefill",
        "seq_len": "8192",
        "dtype": "fp16",
        "stack": "llama.cpp",
        "flash_attention": "false",
    }
    page = client.get("/", params={"kind": "transformer", **params})
    assert page.status_code == 200, page.text[:2000]
    unfused = client.get("/expected-time", params=params).json()
    fused = client.get("/expected-time", params={**params, "flash_attention": "true"}).json()
    assert expected_time_of(page.text) == seconds(unfused["expected_time_s"])
    assert unfused["expected_time_s"] > fused["expected_time_s"]
    assert _selected(page.text, "flash_attention") == "false"
    assert _selected(client.get("/").text, "flash_attention") == "true"  # fused, the default


def _selected(html: str, name: str) -> str:
    """The value of the selected option of the select named `name`."""
    select = re.search(rf'<select[^>]*name="{name}".*?</select>', html, re.S)
    assert select, name
    chosen = re.search(r'option value="([^"]*)" selected', select.group(0))
    assert chosen, name
    return chosen.group(1)


def test_a_saxpy_from_the_form_worked_by_hand(client):
    # y = a x + y over 1e8 fp32 elements on the A100 SXM4 80GB: x and y read, y written,
    # 3 x 4 B x 1e8 = 1.2 GB over 2.039 TB/s = 588.5 µs; 2 FLOPs an element, 2e8 FLOPs
    # at the 19.5 TFLOP/s fp32 vector peak take 10.3 µs: memory-bound, 589 µs
    page = client.get("/", params={"chip": "a100", "kind": "saxpy", "elements": "1e8"})
    assert page.status_code == 200
    assert expected_time_of(page.text) == "589 µs"
    assert 'id="bound">memory-bound<' in page.text and "1.2 GB" in page.text


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"kind": "saxpy", "elements": "many"}, "elements", "whole number"),
        ({"kind": "softmax", "rows": "0", "cols": "8"}, "rows", "at least 1"),
        ({"kind": "rmsnorm", "rows": "8", "cols": "2e9"}, "cols", "at most"),
        (
            {"kind": "attention", "attn_batch": "0", "heads": "8", "q_len": "8", "head_dim": "8"},
            "attn_batch",
            "at least 1",
        ),
        (
            {"kind": "attention", "heads": "32", "kv_heads": "7", "q_len": "8", "head_dim": "8"},
            "kv_heads",
            "must divide heads (32), got 7",
        ),
        (
            {"kind": "attention", "heads": "", "q_len": "8", "head_dim": "8"},
            "heads",
            "is required",
        ),
        (
            {"kind": "attention", "heads": "8", "q_len": "8", "head_dim": "8"}
            | {"implementation": "slow"},
            "implementation",
            "'fused', 'flash-attention-2' or 'naive'",
        ),
        (
            {"kind": "matmul", "m": "8", "n": "8", "k": "8", "allow_tf32": "maybe"},
            "allow_tf32",
            "boolean",
        ),
        (
            {"kind": "elementwise", "elements": "8", "flops_per_element": "-1"},
            "flops_per_element",
            "at least 0",
        ),
        (DECODE | {"max_tpot_ms": "0"}, "max_tpot_ms", "at least 0.000001"),
        (
            DECODE | {"phase": "prefill", "max_ttft_ms": "soon"},
            "max_ttft_ms",
            "must be a number",
        ),
    ],
)
def test_bad_kernel_values_show_their_message_next_to_the_field(client, params, field, message):
    page = client.get("/", params={"chip": "a100", **params})
    assert page.status_code == 422
    error = re.search(rf'<p class="error" id="f-{field}-error" role="alert">([^<]*)</p>', page.text)
    assert error, page.text[:3000]
    assert message in html.unescape(error.group(1))
    assert 'id="answer"' not in page.text


def test_fields_of_other_kinds_and_phases_are_not_read(client):
    # a decode step with a training field, generate's new tokens, the prefill's bound and a
    # matmul's size left in the form: the same answer as without them, and no warning
    plain = client.get("/", params=DECODE).text
    stale = {"dp": "64", "gen_len": "7", "max_ttft_ms": "1", "m": "0", "heads": "x"}
    page = client.get("/", params=DECODE | stale)
    assert page.status_code == 200
    assert expected_time_of(page.text) == expected_time_of(plain)
    assert "Ignored" not in page.text and 'id="latency-batch"' not in page.text
    # a kernel reads no model: an unknown one does not stop a matmul
    kernel = client.get("/", params=MATMUL | {"model": "no-such-model", "phase": "nonsense"})
    assert kernel.status_code == 200


def test_the_form_posts_and_a_catalog_model_answer_gets_a_shareable_url(client):
    # the form as a browser without JavaScript sends it: every field, applicable or not
    form = {**DEFAULTS, "chip": "a100", "batch": "8", "dp": "64", "m": "1", "measured_ms": "30"}
    sent = client.post("/", data=form, follow_redirects=False)
    assert sent.status_code == 303
    location = urlsplit(sent.headers["location"])
    assert location.path == "/"
    query = parse_qs(location.query)
    assert set(query) == {
        *("kind", "chip", "model", "phase", "batch", "seq_len", "tp", "flash_attention"),
        *("stack", "ceilings", "measured_ms"),
    }
    page = client.get(sent.headers["location"])
    assert page.status_code == 200 and "room to improve" in page.text
    assert value_of(page.text, "f-batch") == "8"


def _config(client) -> dict[str, object]:
    config: dict[str, object] = client.get("/models/llama-3.1-8b").json()["config"]
    return config


def test_a_pasted_config_is_answered_like_its_catalog_model(client):
    config = json.dumps(_config(client), indent=2)
    catalog = client.get("/", params=DECODE | {"measured_ms": "30"}).text
    posted = client.post("/", data=DECODE | {"config": config, "measured_ms": "30"})
    assert posted.status_code == 200
    assert expected_time_of(posted.text) == expected_time_of(catalog)
    assert "custom architecture" in posted.text and "room to improve" in posted.text
    # the textarea keeps the config; the chart links do not carry it
    kept = re.search(r'<textarea id="f-config"[^>]*>([^<]*)</textarea>', posted.text)
    assert kept and html.unescape(kept.group(1)) == config
    assert "roofline.svg?" not in posted.text
    assert 'id="f-model" name="model" type="text" value="llama-3.1-8b"' in posted.text
    # the link to check a stored measurement again carries a config as JSON
    stored = client.post(
        "/save",
        data=DECODE | {"config": config, "measured_ms": "30", "label": "pasted"},
        headers=SAME_SITE,
        follow_redirects=False,
    )
    assert stored.status_code == 303
    again = re.search(
        r'<a href="/\?([^"]+)">Check it again',
        client.get(stored.headers["location"], headers=HTML).text,
    )
    assert again
    query = parse_qs(html.unescape(again.group(1)))
    assert json.loads(query["config"][0]) == _config(client)
    assert expected_time_of(client.get("/", params=query).text) == expected_time_of(catalog)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            '{"model_type": "llama",}',
            "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 24)",
        ),
        ("[4096, 32]", "must be a JSON object {...}, got an array"),
        ("[" * 5000, "not valid JSON: nested too deeply"),
        ("{}", "hidden_size: is required"),
        ('{"model_type": "llama", "hidden_size": 4096}', "num_hidden_layers: is required"),
        (
            '{"hidden_size": 4096, "num_hidden_layers": 1e9}',
            "num_hidden_layers: must be an integer",
        ),
        ("x" * (MAX_CONFIG_CHARS + 1), f"at most {MAX_CONFIG_CHARS:,} characters"),
    ],
)
def test_a_bad_config_is_named_beside_the_textarea(client, config, message):
    page = client.post("/", data=DECODE | {"config": config})
    assert page.status_code == 422
    error = re.search(r'<p class="error" id="f-config-error" role="alert">([^<]*)</p>', page.text)
    assert error, page.text[:3000]
    assert message in html.unescape(error.group(1))
    assert 'aria-describedby="f-config-error"' in page.text and 'id="answer"' not in page.text
    assert '<details class="config" open>' in page.text  # the error is not folded away


@pytest.mark.parametrize(
    ("phase", "bound", "ms", "words"),
    [
        ("decode", "max_tpot_ms", "40", "per output token"),
        ("prefill", "max_ttft_ms", "1000", "to first token"),
    ],
)
def test_the_latency_bound_gives_the_largest_batch_within_it(client, phase, bound, ms, words):
    # the page's latency-limited batch is GET /optimal-batch's with the same bound
    params = DECODE | {"phase": phase, bound: ms}
    page = client.get("/", params=params)
    assert page.status_code == 200
    api = client.get(
        "/optimal-batch",
        params={"chip": "a100", "model": "llama-3.1-8b", "phase": phase, bound: ms},
    ).json()
    assert api["latency_batch"] > 1 and api["max_step_time_s"] == float(ms) / 1000
    shown = re.search(
        r'Largest batch within ([\d.]+ m?s) ([a-z ]+)</dt>\s*<dd id="latency-batch">(\d+)<',
        page.text,
    )
    assert shown, page.text[:3000]
    assert shown.groups() == (seconds(float(ms) / 1000), words, str(api["latency_batch"]))
    # a bound so tight that not even batch 1 meets it says so
    tight = client.get("/", params=params | {bound: "0.001"}).text
    assert 'id="latency-batch">none: batch 1 takes longer<' in tight


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (DECODE, "one decode step (one token for each sequence)"),
        (DECODE | {"phase": "generate"}, "the whole generation (prompt + new tokens)"),
        (DECODE | {"phase": "prefill"}, "one prefill of the prompt"),
        (TRAINING, "one optimizer step"),
        (MATMUL, "one kernel call"),
        (
            {"chip": "a100", "kind": "elementwise"},
            "one run of the chain (one kernel call when fused)",
        ),
    ],
)
def test_the_answer_says_what_the_measured_time_covers(client, params, words):
    page = client.get("/", params=params | {"measured_ms": "30"}).text
    assert f"It covers <strong>{words}</strong>." in page  # beside the field
    assert f'id="answer-covers">Times are for {words}.<' in page
    assert re.search(rf"Measured <strong>30 ms</strong> for {re.escape(words)} against", page)


def test_a_stored_measurement_says_what_its_time_covers(client):
    stored = client.post(
        "/save",
        data=DECODE | {"phase": "prefill", "measured_ms": "300", "label": "covers"},
        headers=SAME_SITE,
        follow_redirects=False,
    )
    page = client.get(stored.headers["location"], headers=HTML).text
    assert "for one prefill of the prompt against" in page


def test_history_filters_take_aliases_in_any_case_on_the_page_and_the_api(client):
    # stored as a100 / llama-3.1-8b; asked for by an alias and the id, in other cases
    label = f"alias-{uuid.uuid4().hex[:8]}"
    store(client, label)
    for chip, model in (("A100", "Llama-3.1-8B"), ("A100-SXM4-80GB", "LLAMA-8B")):
        query = {"chip": chip, "model": model, "label": label}
        assert "1 measurement." in client.get("/history", params=query).text, query
        html = client.get("/measurements", params=query, headers=HTML)
        assert "1 measurement." in html.text, query
        assert client.get("/measurements", params=query).json()["total"] == 1, query


def test_the_history_list_tells_batch_4_from_batch_16(client):
    # one model and phase at two batches: two workloads, each row saying its batch
    label = f"batch-{uuid.uuid4().hex[:8]}"
    for batch in ("4", "16"):
        form = {**DECODE, "batch": batch, "measured_ms": "30", "label": label}
        assert client.post("/save", data=form, headers=SAME_SITE).status_code == 200
    page = client.get("/history", params={"label": label})
    cells = re.findall(
        r'<td class="wide" data-label="Workload"><a href="/history/[0-9a-f]{64}">(.*?)</td>',
        page.text,
        re.S,
    )
    text = [" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in cells]
    assert text == [
        "llama-3.1-8b decode batch 16, 2,048 tokens, bf16, one chip",
        "llama-3.1-8b decode batch 4, 2,048 tokens, bf16, one chip",
    ]


def test_the_catalog_compares_every_chip_in_one_table_that_links_to_its_page(client, app):
    page = client.get("/catalog").text
    table = page.split('id="chip-table"', 1)[1].split("</table>", 1)[0]
    catalog = app.state.catalogs.chips()
    links = re.findall(r'<th scope="row"><a href="/chips/([^"]+)">', table)
    # every chip, newest first: Ironwood (2025-04) before Trillium (2024-05) before the
    # TPU v4 (2021-05); the A10G, which no page dates, last
    assert sorted(links) == sorted(catalog.chips)
    assert links.index("tpu7x") < links.index("tpu-v6e") < links.index("tpu-v4")
    assert links.index("b200") < links.index("h200-sxm-141gb") < links.index("a100-sxm4-40gb")
    assert links[-1] == "a10g"
    months = [catalog.chips[c].entry.released for c in links[:-1]]
    values = [m.value for m in months if m is not None]
    assert values == sorted(values, reverse=True) and len(values) == len(links) - 1
    for chip_id in links[:3]:
        chip_page = client.get(f"/chips/{chip_id}", headers=HTML).text
        assert f'<section class="chip" id="chip-{chip_id}">' in chip_page
    # the H100 SXM: 3.35 TB/s, 989 TFLOP/s bf16 dense, ridge 989e12 / 3.35e12 = 295 FLOP/B
    h100 = re.search(r"/chips/h100-sxm5-80gb.*?</tr>", table, re.S)
    assert h100
    row = " ".join(re.sub(r"<[^>]+>", " ", h100.group(0)).split())
    assert "3.35 TB/s" in row and "989 TFLOP/s bf16" in row and " 295 " in row
    # the filter box is hidden until its script shows it: without JavaScript, a plain table
    assert '<p class="filter-box" id="chip-filter-box" hidden>' in page
    assert "catalog-filter.js" in page
    assert client.get("/static/catalog-filter.js").status_code == 200
    assert "newest first by the month the vendor announced or launched them" in page


def test_a_geforce_chip_page_shows_its_sparse_and_fp16_accumulate_rates(client):
    # the RTX 4090's Ada whitepaper rows: bf16 165.2 dense, 330.4 with 2:4 sparsity; fp16 with
    # fp16 accumulation 330.3, each with its source
    page = client.get("/chips/rtx-4090", headers=HTML).text
    rows = [" ".join(re.sub(r"<[^>]+>", " ", r).split()) for r in page.split("<tr>")]
    assert any(r.startswith("bf16 2:4 sparse matrix peak 330 TFLOP/s nv-ada-wp") for r in rows)
    assert any(
        r.startswith("fp16 matrix (fp16 accumulate) peak 330 TFLOP/s nv-ada-wp") for r in rows
    )
    assert any(r.startswith("fp16 matrix peak 165 TFLOP/s nv-ada-wp") for r in rows)


def test_a_copy_from_the_form_reads_its_own_fields(client):
    # 1 GB host to device on an A100: 1e9 / 32e9 = 31.25 ms over the link (expected); from
    # pinned memory at 0.75 of it, 41.7 ms realistic; it says what one measured time covers
    copy = {"chip": "a100", "kind": "copy", "copy_bytes": "1e9", "direction": "h2d"}
    page = client.get("/", params={**copy, "pinned": "true", "measured_ms": "45"}).text
    assert expected_time_of(page) == "31.2 ms"
    assert "41.7 ms" in page and "one copy" in page
    assert value_of(page, "f-copy_bytes") == "1e9"
    # pinned memory means nothing within device memory: the error names the field
    refused = client.get("/", params={**copy, "direction": "d2d", "pinned": "true"})
    assert refused.status_code == 422
    assert "applies to host memory" in refused.text


def test_a_chip_page_shows_its_cache_and_its_peaks_from_their_parts(client):
    page = client.get("/chips/a100-sxm4-40gb", headers=HTML).text
    # 40 MiB = 41,943,040 B, shown as 41.9 MB (decimal, as every size) and 40 MiB
    assert 'Last-level cache (L2) size</th><td class="num">41.9 MB (40 MiB)' in page
    assert 'Last-level cache (L2) bandwidth</th><td class="num">7.22 TB/s' in page
    # 108 SMs x 1.41 GHz x 2,048 FLOP per SM per cycle = 311.9e12, shown as the listed 312
    derivation = page.split('id="peak-derivation"')[1]
    row = re.search(
        r"<th scope=\"row\" class=\"head\">bf16 matrix</th>(.*?)</tr>", derivation, re.S
    )
    assert row is not None
    cells = re.findall(r"<td class=\"num[^\"]*\"[^>]*>([^<]*)</td>", row.group(1))
    times = "\N{MULTIPLICATION SIGN}"
    assert cells == [
        "108 SMs",
        f"{times} 1.41 GHz",
        f"{times} 2,048",
        "= 312 TFLOP/s",
        "312 TFLOP/s",
    ]
    # a figure no source gives says why, and a chip without the parts has no derivation
    l40s = client.get("/chips/l40s", headers=HTML).text
    assert 'Last-level cache (L2) size</th><td class="num">101 MB (96 MiB)' in l40s
    assert '<td class="num">unknown</td><td colspan="2">AD102&#39;s L2 bandwidth' in l40s
    assert 'id="peak-derivation"' not in l40s
