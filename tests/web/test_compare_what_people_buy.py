"""Compare what people buy (issue 37 item 7): the comparison page takes the chips per copy of
the model (tp) and a price per chip-hour for each chip, and shows the fewest chips each needs
for the workload to fit, as GET /memory-fit answers `min_chips` for that chip alone.

Llama 3.1 70B decoding at batch 8 in bf16: its ~70.6e9 parameters take 141 GB of weights
alone, more than an A100's or H100's 80 GiB (85.9 GB) and an L40S's 48 GB (the KV cache and
activations on top: 155 GB in all), so they need 2 and 4 (tensor parallel over a divisor of
the 8 KV heads that leaves each chip's share within its memory: 155 / 2 < 85.9, 151 / 4 < 48.3
while 151 / 2 > 48.3), while an MI300X's 192 GiB (206 GB) holds all 167 GB on one."""

import re

from playwright.sync_api import expect

from tests.web.test_readable import screen  # noqa: F401  (the fixture: both widths)

QUERY = {
    "chips": "a100,h100,mi300x,l40s",
    "model": "llama-70b",
    "batch": "8",
    "tp": "2",
    "prices": "a100:1.8,h100:3.2",
}
FEWEST = {"a100": "2 (tp 2)", "h100": "2 (tp 2)", "mi300x": "1 (tp 1)", "l40s": "4 (tp 4)"}


def _cells(html: str, label: str) -> list[str]:
    return [c.strip() for c in re.findall(rf'data-label="{label}">(.*?)</td>', html, re.S)]


def test_the_form_takes_tp_and_a_price_per_chip_and_shows_the_fewest_chips(client):
    page = client.get("/comparison", params=QUERY)
    assert page.status_code == 200
    html = page.text
    # the fields, kept as given
    assert 'name="tp"' in html and 'value="2"' in html
    assert 'name="prices"' in html and 'value="a100:1.8,h100:3.2"' in html
    # every row runs on tp = 2 chips
    assert _cells(html, "Chips") == ["2"] * 4
    # the fewest chips to fit, as /memory-fit says for each chip alone
    for chip, shown in FEWEST.items():
        fit = client.get("/memory-fit", params={"chip": chip, "model": "llama-70b", "batch": 8})
        assert fit.json()["min_chips"] == int(shown.split()[0]), chip
    rows = _cells(html, "Fewest chips to fit")
    # in rank order: the MI300X ranks first (the fastest of those 2 chips hold), the L40S,
    # which 2 chips cannot hold, last
    assert rows[0] == FEWEST["mi300x"] and rows[-1] == FEWEST["l40s"]
    assert sorted(rows) == sorted(FEWEST.values())
    # a price for each chip: $/Mtok where one was given, the reason where none was
    costs = _cells(html, r"\$/Mtok")
    assert sum("no price given" in c for c in costs) == 2
    assert sum(c[:1].isdigit() for c in costs) == 2
    # the JSON link is /compare with the same question (tp and prices among it)
    assert "tp=2" in html and "prices=a100%3A1.8%2Ch100%3A3.2" in html


def test_bad_tp_and_prices_are_named_beside_their_fields(client):
    page = client.get("/comparison", params=QUERY | {"tp": "0", "prices": "a100:-1"})
    assert page.status_code == 422
    assert 'id="f-tp-error"' in page.text and 'id="f-prices-error"' in page.text


def test_a_person_sees_the_fewest_chips_and_the_prices_at_both_widths(screen, url):  # noqa: F811
    screen.goto(f"{url}/comparison")
    screen.locator("#f-chips").fill(QUERY["chips"])
    screen.locator("#f-model").fill(QUERY["model"])
    screen.locator("#f-batch").fill(QUERY["batch"])
    screen.locator("#f-tp").fill(QUERY["tp"])
    screen.locator("#f-prices").fill(QUERY["prices"])
    screen.get_by_role("button", name="Compare").click()
    table = screen.locator("#ranked")
    expect(table).to_be_visible()
    l40s = table.locator("tbody tr", has=screen.get_by_role("rowheader", name="NVIDIA L40S"))
    cell = l40s.locator('td[data-label="Fewest chips to fit"]')
    expect(cell).to_be_visible()
    expect(cell).to_have_text("4 (tp 4)")
    expect(screen.locator("#f-tp")).to_have_value("2")
    assert screen.evaluate("document.documentElement.scrollWidth") <= screen.viewport_size["width"]
