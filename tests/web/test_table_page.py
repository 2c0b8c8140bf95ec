"""The benchmark-table page (/table): paste a table or upload its file and see the summary, one
roofline chart with every row as a point and the rows ranked by time lost, in real headless
Chromium at a desktop's width (1280 px) and a phone's (375 px), and its errors through the
ASGI app."""

import re

from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from app.main import create_app
from tests.api.test_table_api import _table
from tests.api.test_table_scale import roomy
from tests.web.test_readable import CHART_TEXT, LABELS, PHONE, SHOWN, STRUCK, screen

__all__ = ["screen"]  # the fixture: a page at 375 and at 1280 px

# On an H100 SXM5 (tests/api/test_table_api.py): 4096^3 bf16 ideally takes 138.9 us, so
# - square, at 0.5 ms: 27.8% of the roofline (shown 28%), 361.1 us lost, room to improve;
# - fast, at 0.15 ms: 92.6% (93%), 11.1 us lost, near the roofline;
# - skinny, 16 x 4096 x 4096, at the mean of 50, 52 and 49 us (50.33 us): 2 x 16 x 4096^2 =
#   5.37e8 FLOPs, 2 x (16 x 4096 + 4096^2 + 16 x 4096) = 33.8 MB, memory-bound on 3.35 TB/s:
#   10.1 us ideal, 20.0% of it, 40.2 us lost;
# - broken (N = -2): not judged, naming N;
# - copy, a custom row of no FLOPs and 1e8 B at 0.1 ms: 29.85 us ideal, 70.1 us lost, judged
#   but with no place on the chart's log axis.
PASTED = (
    "label,M,N,K,dtype,ms,kind,flops,bytes\n"
    "square,4096,4096,4096,bf16,0.5,,,\n"
    "skinny,16,4096,4096,bf16,0.05;0.052;0.049,,,\n"
    "fast,4096,4096,4096,bf16,0.15,,,\n"
    "broken,4096,-2,4096,bf16,0.5,,,\n"
    "copy,,,,fp32,0.1,custom,0,1e8\n"
)
ORIGIN = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}  # the page's own


def _check(page: Page, url: str, chip: str = "h100") -> None:
    page.goto(f"{url}/")
    page.get_by_role("link", name="Table", exact=True).click()
    expect(page.locator("h1")).to_have_text("Check a benchmark table")
    page.locator("#tb-chip").fill(chip)
    page.get_by_role("button", name="Check table").click()


def test_paste_a_table_and_see_it_ranked_with_its_chart(screen, url, shot):
    screen.goto(f"{url}/table")
    screen.get_by_label("Paste the table").fill(PASTED)
    screen.locator("#tb-chip").fill("h100")
    screen.get_by_role("button", name="Check table").click()
    expect(screen.locator("#table-result h2")).to_have_text("5 rows on NVIDIA H100 SXM5 80GB")
    summary = screen.locator("#table-summary")
    expect(summary).to_contain_text("Judged 4, not judged 1")
    ranked = screen.locator("#table-rows tbody tr")
    expect(ranked).to_have_count(4)
    # ranked by time lost: square (361 us), copy (70 us), skinny (40 us), fast (11 us)
    heads = [h.strip() for h in ranked.locator("th").all_inner_texts()]
    assert heads == ["1 square", "5 copy", "2 skinny", "3 fast"], heads
    first = ranked.first
    expect(first.locator('[data-label="Of the roofline"]')).to_have_text("28%")
    expect(first.locator('[data-label="Verdict"]')).to_have_text("room to improve")
    expect(ranked.nth(2).locator('[data-label="Measured"]')).to_contain_text("mean of 3")
    expect(ranked.nth(3).locator('[data-label="Of the roofline"]')).to_have_text("93%")
    errors = screen.locator("#table-errors tbody tr")
    expect(errors).to_have_count(1)
    expect(errors.first).to_contain_text("N")
    expect(errors.first).to_contain_text("greater than or equal to 1")
    # the chart: the three rows with FLOPs as points, the worst ringed with its tooltip; the
    # copy said not to be drawn
    chart = screen.locator("#table-chart svg:visible")
    expect(chart).to_have_count(1)
    assert chart.locator("g[class^=pt-] circle").count() == 3
    expect(chart.locator("circle.named title").first).to_contain_text("#1 row 1 square")
    expect(screen.locator("#table-chart figcaption")).to_contain_text("1 row judged without FLOPs")
    for figure, text, size in screen.evaluate(CHART_TEXT):
        assert 11 <= size <= 14, (figure, text, size)
    assert screen.evaluate(STRUCK, LABELS) == []
    phone = screen.viewport_size["width"] == PHONE
    if phone:
        width = screen.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE, f"the table's answer is {width} px wide on a {PHONE} px screen"
        # a card per row: its name, then the time, the share of the roofline, the time lost
        # and the verdict, in view
        for label in ("Measured", "Of the roofline", "Time lost", "Verdict"):
            assert first.locator(f'[data-label="{label}"]').evaluate(SHOWN), label
    shot(screen, f"table-{'phone' if phone else 'desktop'}")


def test_upload_a_file_of_three_hundred_rows(page, url, tmp_path, shot):
    path = tmp_path / "bench.csv"
    path.write_text(_table(300))
    page.goto(f"{url}/table")
    page.get_by_label("Or choose its file").set_input_files(str(path))
    page.locator("#tb-chip").fill("h100")
    page.locator("#tb-stack").select_option("eager")
    page.get_by_role("button", name="Check table").click()
    expect(page.locator("#table-result h2")).to_have_text(re.compile(r"^300 rows on "))
    expect(page.locator("#table-rows tbody tr")).to_have_count(299)
    expect(page.locator("#table-errors tbody tr")).to_have_count(1)
    expect(page.locator("#tb-stack")).to_have_value("eager")
    # 296 matmuls at 1 / 1.2 of their roofline and the three others: a point at each place
    # (the large matmuls' intensities converge, so that many share theirs), none drawn twice
    chart = page.locator("#table-chart svg:visible")
    places = chart.locator("g[class^=pt-] circle").evaluate_all(
        "cs => cs.map(c => c.getAttribute('cx') + ',' + c.getAttribute('cy'))"
    )
    assert 50 < len(places) <= 299 and len(set(places)) == len(places)
    # the five rows that lost most are the largest matmuls, at one place: one ring names them
    expect(chart.locator("circle.named")).to_have_count(1)
    assert len(chart.locator("circle.named title").text_content().splitlines()) == 5
    expect(chart.locator("text", has_text="#1, #2, #3, #4, #5")).to_have_count(1)
    shot(page, "table-upload")


def test_the_page_errors_through_the_app(client):
    assert client.get("/table").status_code == 200
    ok = client.post("/table", data={"chip": "h100", "stack": "typical", "text": PASTED})
    assert ok.status_code == 403  # not from the page itself
    asked = {"chip": "h100", "stack": "typical", "text": PASTED}
    assert client.post("/table", data=asked, headers=ORIGIN).status_code == 200
    unknown = client.post("/table", data=asked | {"chip": "h1000"}, headers=ORIGIN)
    assert unknown.status_code == 404 and "Unknown chip" in unknown.text
    no_stack = client.post("/table", data=asked | {"stack": "warp"}, headers=ORIGIN)
    assert no_stack.status_code == 422
    empty = client.post("/table", data=asked | {"text": " "}, headers=ORIGIN)
    assert empty.status_code == 422 and "Paste a table" in empty.text
    files = {"file": ("bench.csv", PASTED.encode(), "text/csv")}
    both = client.post("/table", data=asked, files=files, headers=ORIGIN)
    assert both.status_code == 422 and "not both" in both.text
    header_only = client.post("/table", data=asked | {"text": "m,n,k\n"}, headers=ORIGIN)
    assert header_only.status_code == 422 and "the table has no rows" in header_only.text
    json_file = {"file": ("bench.json", b'[{"m": 8, "n": 8, "k": 8, "us": 5}]', "text/plain")}
    as_json = client.post(
        "/table", data={"chip": "h100", "stack": "typical"}, files=json_file, headers=ORIGIN
    )
    assert as_json.status_code == 200 and "1 row on" in as_json.text
    many = {"text": "flops,bytes,ms\n" + "1,1,1\n" * 10_001}
    too_many = client.post("/table", data=asked | many, headers=ORIGIN)
    assert too_many.status_code == 413 and "10,000 rows" in too_many.text


def test_a_large_table_lists_the_rows_that_lost_most(tmp_path):
    """10,000 rows: every one on the chart (grouped points), the 500 that lost most listed."""
    rows = "\n".join(f"r{i},{64 + i % 2000},4096,4096,bf16,1" for i in range(10_000))
    asked = {"chip": "h100", "stack": "typical", "text": "label,M,N,K,dtype,ms\n" + rows}
    client = TestClient(create_app(roomy(tmp_path)))  # what it says, not how soon
    page = client.post("/table", data=asked, headers=ORIGIN)
    assert page.status_code == 200
    assert page.text.count('<tr><th class="head" scope="row">') == 500
    assert "The 500 rows that lost the most time of 10,000 judged" in page.text


def test_a_browser_asking_for_the_json_address_gets_the_page(client):
    html = {"accept": "text/html"}
    moved = client.get("/check/table", headers=html, follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == "/table"
    assert client.get("/check/table").status_code == 405  # a JSON client: POST alone


def test_the_navigation_names_the_page(client):
    assert '<a href="/table">Table</a>' in client.get("/", headers={"accept": "text/html"}).text


def test_a_label_is_shown_as_text(client):
    """A row's label is the table's own text: shown as written, never as markup (the page and
    the chart's tooltip of a worst row escape it)."""
    hostile = "<script>alert(1)</script>"
    text = f'label,M,N,K,dtype,ms\n"{hostile}",4096,4096,4096,bf16,0.5\n'
    page = client.post(
        "/table", data={"chip": "h100", "stack": "typical", "text": text}, headers=ORIGIN
    )
    assert page.status_code == 200
    assert hostile not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "#1 row 1 &lt;script&gt;" in page.text  # the tooltip


def test_a_paste_as_large_as_a_table_may_be(tmp_path):
    """A pasted table past a form field's usual megabyte (Starlette's part size) is read, up to
    ROOFCHECK_MAX_TABLE_BYTES (2 MiB): 2,000 rows of 600 B, with a column of notes ignored."""
    notes = "n" * 580
    rows = "\n".join(f"{64 + i},4096,4096,bf16,1,{notes}" for i in range(2_000))
    text = "M,N,K,dtype,ms,notes\n" + rows
    assert 2**20 < len(text) < 2 * 2**20
    asked = {"chip": "h100", "stack": "typical", "text": text}
    client = TestClient(create_app(roomy(tmp_path)))  # what it says, not how soon
    page = client.post("/table", data=asked, headers=ORIGIN)
    assert page.status_code == 200 and "2,000 rows on" in page.text
    over = client.post("/table", data=asked | {"text": text * 2}, headers=ORIGIN)
    assert over.status_code == 413


def test_named_rows_at_one_place_share_a_ring_and_a_label(client):
    """The same shape timed three times alike (square, 0.5 ms: 361.1 us lost each, ranks 1-3)
    is one place on the chart: one ring, labelled "#1, #2, #3", whose tooltip names all three;
    fast (rank 4) keeps its own."""
    square = "square,4096,4096,4096,bf16,0.5,,,\n"
    pasted = PASTED.splitlines()[0] + "\n" + square * 3 + "fast,4096,4096,4096,bf16,0.15,,,\n"
    asked = {"chip": "h100", "stack": "typical", "text": pasted}
    answered = client.post("/table", data=asked, headers=ORIGIN)
    assert answered.status_code == 200
    chart = answered.text[answered.text.index('id="table-chart"') :]
    rings = re.findall(r'class="pt-\w+ named"><title>([^<]*)</title>', chart)
    assert len(rings) == 2 * 2  # two places, drawn at a desktop's width and a phone's
    assert rings[0].splitlines() == [
        f"#{rank} row {rank} square: 27.8% of the roofline, 361 µs lost, room to improve"
        for rank in (1, 2, 3)
    ]
    assert ">#1, #2, #3</text>" in chart and ">#4</text>" in chart
