"""The result page always shows the best changes of the work: the first five items of
what_if, as /expected-time?what_if=true lists them."""

import re

from app import formatting as fmt

DECODE = {"chip": "h100", "kind": "transformer", "model": "llama-3.1-8b", "seq_len": "2048"}
_ROW = re.compile(
    r'<tr data-key="([a-z0-9_]+)"><th class="head" scope="row">([^<]+)</th>'
    r'<td class="num" data-label="Expected">([^<]+)</td>'
    r'<td class="num" data-label="Realistic">([^<]+)</td>'
    r'<td class="num key" data-label="Speed-up">([^<]+)x</td></tr>'
)


def _table(html: str) -> list[tuple[str, ...]]:
    return _ROW.findall(html.split('id="what-if"', 1)[1].split("</table>", 1)[0])


def test_the_result_shows_the_best_changes_as_the_api_ranks_them(client):
    page = client.get("/", params=DECODE)
    assert page.status_code == 200
    answer = client.get(
        "/expected-time",
        params={"chip": "h100", "model": "llama-3.1-8b", "seq_len": 2048, "what_if": "true"},
    ).json()
    rows = _table(page.text)
    # five changes apply to this decode step (the worked example of tests/api): all shown
    assert [row[0] for row in rows] == [item["key"] for item in answer["what_if"]][:5]
    first, item = rows[0], answer["what_if"][0]
    assert first[1] == item["change"]
    assert first[2:] == (
        fmt.seconds(item["expected_time_s"]),
        fmt.seconds(item["realistic_time_s"]),
        fmt.number(item["speedup"]),
    )


def test_a_check_page_shows_them_too_and_a_page_without_changes_none(client):
    page = client.get("/", params={**DECODE, "measured_ms": "30"})
    assert page.status_code == 200 and len(_table(page.text)) == 5
    # a bf16 matmul on an A100 (no fp8, a typical stack): nothing to change, no table
    matmul = {"chip": "a100", "kind": "matmul", "m": "4096", "n": "4096", "k": "4096"}
    bare = client.get("/", params={**matmul, "dtype": "bf16"})
    assert bare.status_code == 200 and 'id="expected-time"' in bare.text
    assert 'id="what-if"' not in bare.text
