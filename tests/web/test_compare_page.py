"""The comparison page (/comparison) through the ASGI client: its table is the /compare answer,
a missing figure shows as a dash with its reason, bad input is named beside its field."""

import re
from html import unescape

from app import formatting as fmt

QUERY = {"chips": "a100,h100,t4,apple-m2-max", "model": "llama-8b", "batch": "8"}


def rows_of(html: str) -> list[str]:
    """The ranked table's body rows as text, tags and runs of spaces removed."""
    body = html.split('id="ranked"', 1)[1].split("</tbody>", 1)[0].split("<tbody>", 1)[1]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)
    return [" ".join(unescape(re.sub(r"<[^>]+>", " ", row)).split()) for row in rows]


def test_the_form_alone_offers_an_example_and_the_catalogs_names(client):
    page = client.get("/comparison")
    assert page.status_code == 200
    assert 'value="a100,h100,mi300x"' in page.text and 'value="llama-8b"' in page.text
    assert 'id="compare-chip-list"' in page.text and '<option value="mi300x">' in page.text
    assert 'id="ranked"' not in page.text  # nothing compared yet
    assert '<option value="decode" selected>' in page.text  # the select shows the default
    assert 'href="/comparison">Compare</a>' in client.get("/catalog").text  # in the nav


def test_the_table_is_the_compare_answer_in_rank_order(client):
    answer = client.get("/compare", params={**QUERY, "price_per_hour": "2"}).json()
    page = client.get("/comparison", params={**QUERY, "price_per_hour": "2"})
    assert page.status_code == 200
    rows = rows_of(page.text)
    assert len(rows) == len(answer["rows"]) == 4
    for text, row in zip(rows, answer["rows"], strict=True):
        # rank, chip, chips, dtype, roofline and realistic time, tokens/s as the API has them
        assert text.startswith(f"{row['rank']} {row['chip']['name']} 1 {row['dtype']} ")
        assert fmt.seconds(row["expected_time_s"]) in text
        assert fmt.number(row["realistic_tokens_per_s"]) in text
        assert fmt.number(row["cost_per_million_tokens_usd"]) in text
    # H100 over A100 on a memory-bound decode: 3.35 / 2.04 TB/s; the 16 GB T4 holds no 8B model
    # in bf16 (16 GB of weights + KV): it ranks last, 'no' with its memory
    names = [row["chip"]["name"] for row in answer["rows"]]
    assert names.index("NVIDIA H100 SXM5 80GB") < names.index("NVIDIA A100 SXM4 80GB")
    assert rows[-1].startswith("4 NVIDIA T4") and " no " in rows[-1]
    assert 'class="unfit"' in page.text
    # the Apple chip's board power is not sourced: a dash and why, not an empty cell
    apple = next(r for r in rows if "Apple" in r)
    assert "— board power not sourced" in apple
    # the chart: one bar per chip with figures, the T4's grey
    chart = page.text.split('id="compare-chart"', 1)[1].split("</svg>", 1)[0]
    assert chart.count('class="bar-fits"') == 3 and chart.count('class="bar-unfit"') == 1


def test_without_a_price_the_cost_is_a_dash_with_its_reason(client):
    rows = rows_of(client.get("/comparison", params=QUERY).text)
    assert all(row.endswith("— no price given") for row in rows)


def test_a_chip_without_the_dtype_gets_a_row_with_its_reason(client):
    page = client.get("/comparison", params={**QUERY, "chips": "a100,t4", "dtype": "bf16"})
    assert page.status_code == 200
    rows = rows_of(page.text)
    assert rows[0].startswith("1 NVIDIA A100")
    assert rows[1].startswith("— NVIDIA T4 — no figures: dtype: t4 has no published bf16")


def test_an_unknown_chip_is_named_beside_the_chips_field_with_suggestions(client):
    page = client.get("/comparison", params={**QUERY, "chips": "a100,h1000"})
    assert page.status_code == 404
    error = re.search(r'id="f-chips-error"[^>]*>([^<]*)<', page.text)
    assert error, page.text
    message = unescape(error.group(1))
    assert message.startswith("unknown chip 'h1000'; did you mean h100-sxm5-80gb")
    assert 'aria-invalid="true"' in page.text and 'value="a100,h1000"' in page.text  # kept
    assert 'id="ranked"' not in page.text


def test_an_unknown_model_is_named_beside_the_model_field(client):
    page = client.get("/comparison", params={**QUERY, "model": "llama-9b"})
    assert page.status_code == 404
    assert re.search(r'id="f-model-error"[^>]*>unknown model', page.text)


def test_bad_values_are_named_beside_their_field(client):
    for bad, field, message in (
        ({"batch": "0"}, "batch", "at least 1"),
        ({"price_per_hour": "-1"}, "price_per_hour", "more than 0"),
        ({"chips": "a100,a100-sxm4-80gb"}, "chips", "name the same chip"),
        ({"chips": ",".join(["a100"] * 17)}, "chips", "give 1 to 16 chips"),
        ({"chips": "a100;h100"}, "chips", "should match pattern"),
    ):
        page = client.get("/comparison", params={**QUERY, **bad})
        assert page.status_code == 422, bad
        error = re.search(rf'id="f-{field}-error"[^>]*>([^<]*)<', page.text)
        assert error and message in unescape(error.group(1)), (bad, error)
