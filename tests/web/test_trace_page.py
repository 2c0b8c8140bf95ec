"""The trace page: upload a recorded torch.profiler trace (tests/traces/) and see the table,
in real headless Chromium and through the ASGI app (its errors)."""

import re
from pathlib import Path

from playwright.sync_api import expect

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_upload_a_trace_and_see_the_table(page, url, shot):
    page.goto(f"{url}/")
    page.get_by_role("link", name="Trace").click()
    expect(page.locator("h1")).to_have_text("Check a profiler trace")
    page.get_by_label("Trace (the JSON file export_chrome_trace writes)").set_input_files(
        str(TRACES / "mixed.json")
    )
    page.get_by_label("Chip (id or alias)").fill("a100")
    # a CPU recording: judged on an A100 only when asked, and then the page says so first
    page.get_by_label("Judge a trace without GPU kernel events").check()
    page.get_by_role("button", name="Check trace").click()
    expect(page.locator("#trace-warnings")).to_contain_text("a chip the trace did not run on")
    expect(page.locator("#verdict")).to_contain_text("order of magnitude")
    rows = page.locator("#trace-ops tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("th")).to_have_text(re.compile(r"aten::(cos|_to_copy)"))
    expect(rows.first).to_contain_text("1000000")
    expect(page.locator("#trace-not-modelled")).to_contain_text("aten::cumsum")
    expect(page.locator("#trace-summary")).to_contain_text("operators on the CPU")
    expect(page.locator("#t-chip")).to_have_value("a100")
    shot(page, "trace-result")


def test_a_gpu_step_in_parts_with_what_to_attack_first(page, url, shot):
    # tests/traces/gpu_step.json on its H100 (worked by hand in
    # tests/engine/test_trace_breakdown.py): 100 us in six parts, the synchronisation's
    # 18 us furthest over its limit; the 640,000-byte pinned copy 10 us at the link's rate.
    page.goto(f"{url}/trace")
    page.locator("#t-trace").set_input_files(str(TRACES / "gpu_step.json"))
    page.locator("#t-chip").fill("h100")
    page.get_by_role("button", name="Check trace").click()
    expect(page.locator("#trace-breakdown")).to_contain_text("took 100 µs (1 step)")
    rows = page.locator("#trace-parts tbody tr")
    expect(rows).to_have_count(6)
    expect(rows.nth(0)).to_contain_text("Kernel time")
    expect(rows.nth(0)).to_contain_text("45 µs")
    expect(rows.nth(4)).to_contain_text("Synchronisation")
    expect(rows.nth(4)).to_contain_text("18 µs")
    expect(page.locator("#trace-attack-first")).to_contain_text("Attack the synchronisation first")
    copies = page.locator("#trace-copies tbody tr")
    expect(copies).to_have_count(1)
    expect(copies.first).to_contain_text("pinned")
    expect(copies.first).to_contain_text("aten::copy_")
    expect(page.locator("#trace-copy-share")).to_contain_text("15")
    shot(page, "trace-breakdown")


def test_a_file_that_is_not_a_trace_says_how_to_record_one(page, url, tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "world"}')
    page.goto(f"{url}/trace")
    page.locator("#t-trace").set_input_files(str(bad))
    page.locator("#t-chip").fill("h100")
    page.get_by_role("button", name="Check trace").click()
    expect(page.locator("#trace-error")).to_contain_text("record_shapes=True")
    expect(page.locator("#trace-result")).to_have_count(0)


ORIGIN = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}  # the page's own


def test_a_step_lost_outside_its_kernels_says_so_in_the_headline(client):
    # the eager decode step recorded on an H200: kernels near their roofline (1.41x), but the
    # host kept the GPU waiting 5.04 ms of the 8.65 ms; the headline said "Near the roofline:
    # this runtime makes sense" above a breakdown that said to attack the host waits
    files = {"trace": ("d.json", (TRACES / "gpu_decode_h200.json").read_bytes(), "x")}
    page = client.post(
        "/trace", data={"chip": "h200", "stack": "eager"}, files=files, headers=ORIGIN
    )
    headline = re.search(r'id="trace-headline"><strong>(.*?)</strong>\s*(.*?)</p>', page.text, re.S)
    assert headline is not None
    assert headline[1] == "The step loses its time outside its kernels: host waits first."
    assert headline[2] == "Its kernels alone: Near the roofline: this runtime makes sense."
    # a trace with no breakdown (a CPU run's: no kernel events) keeps the verdict's own
    files = {"trace": ("m.json", (TRACES / "matmul.json").read_bytes(), "x")}
    allowed = {"chip": "a100", "stack": "eager", "allow_device_mismatch": "true"}
    page = client.post("/trace", data=allowed, files=files, headers=ORIGIN)
    assert re.search(r'id="trace-headline"><strong>An order of magnitude slower', page.text)


def test_the_page_errors_through_the_app(client):
    files = {"trace": ("m.json", (TRACES / "matmul.json").read_bytes(), "application/json")}
    assert client.get("/trace").status_code == 200
    allowed = {"chip": "a100", "stack": "eager", "allow_device_mismatch": "true"}
    ok = client.post("/trace", data=allowed, files=files, headers=ORIGIN)
    assert ok.status_code == 200 and "aten::matmul" in ok.text
    assert 'id="t-mismatch" name="allow_device_mismatch" value="true" checked' in ok.text
    refused = client.post(
        "/trace", data={"chip": "a100", "stack": "eager"}, files=files, headers=ORIGIN
    )
    assert refused.status_code == 422 and "no GPU kernel events: it ran on cpu" in refused.text
    gpu = {"trace": ("g.json", (TRACES / "gpu_cos.json").read_bytes(), "application/json")}
    on_its_chip = client.post(
        "/trace", data={"chip": "h100", "stack": "eager"}, files=gpu, headers=ORIGIN
    )
    assert on_its_chip.status_code == 200 and "trace-warnings" not in on_its_chip.text
    assert 'id="trace-parts"' in on_its_chip.text and "Attack the" in on_its_chip.text
    unknown = client.post(
        "/trace", data={"chip": "a1000", "stack": "eager"}, files=files, headers=ORIGIN
    )
    assert unknown.status_code == 404 and "Unknown chip" in unknown.text
    no_file = client.post("/trace", data={"chip": "a100", "stack": "eager"}, headers=ORIGIN)
    assert no_file.status_code == 422 and "Choose a trace file" in no_file.text
    no_stack = client.post(
        "/trace", data={"chip": "a100", "stack": "warp"}, files=files, headers=ORIGIN
    )
    assert no_stack.status_code == 422
    many = {"trace": ("t.json", b'{"traceEvents": [' + b",".join([b"{}"] * 500_001) + b"]}")}
    assert (
        client.post(
            "/trace", data={"chip": "a100", "stack": "eager"}, files=many, headers=ORIGIN
        ).status_code
        == 413
    )
