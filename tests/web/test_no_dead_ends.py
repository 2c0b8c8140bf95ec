"""No dead ends (issue 37 item 6): every GET a browser reaches answers a page to a browser,
while a JSON client (Accept: application/json, or curl's */*) gets the JSON it always got;
a page's "JSON" link (`?format=json`) gives the JSON to a browser too."""

import re

import pytest

HTML = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
CURL = {"accept": "*/*"}
JSON = {"accept": "application/json"}
QUESTION = "chip=h100&model=llama-3.1-8b&batch=8"
COMPARE = "chips=a100,h100&model=llama-3.1-8b&batch=8"


def _page(response) -> str:
    assert response.headers["content-type"].startswith("text/html"), response.headers
    text: str = response.text
    return text


@pytest.mark.parametrize(
    "path",
    ["/chips", "/chips/h100", "/chips/mi300x", "/models", "/models/llama-3.1-8b"],
)
def test_catalog_addresses_answer_a_page_to_a_browser_and_json_to_others(client, path):
    page = client.get(path, headers=HTML)
    assert page.status_code == 200 and "<h1>" in _page(page)
    for accept in (CURL, JSON, {}):
        answer = client.get(path, headers=accept)
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json", accept
    # the page's JSON link gives the JSON to the browser that follows it
    linked = client.get(f"{path}?format=json", headers=HTML)
    assert linked.headers["content-type"] == "application/json"
    assert linked.json() == client.get(path, headers=JSON).json()


def test_a_chip_has_a_page_of_its_figures_and_their_sources(client, app):
    text = _page(client.get("/chips/h100", headers=HTML))
    record = app.state.catalogs.chips().resolve("h100")
    assert f"<h1>{record.entry.name}</h1>" in text
    # the H100 SXM: 3.35 TB/s of HBM3, 989 TFLOP/s bf16 dense (its datasheet)
    assert "3.35 TB/s" in text and "989 TFLOP/s" in text
    cited = {figure.source for figure in record.entry.figures().values()}
    sources = app.state.catalogs.chips().catalog.sources
    for key in cited:
        assert f'id="src-{key}"' in text and sources[key].url in text
    assert 'href="/catalog"' in text and 'href="/chips/h100-sxm5-80gb?format=json"' in text


def test_the_catalog_is_an_index_of_chip_pages(client, app):
    text = client.get("/catalog").text
    links = set(re.findall(r'<a href="/chips/([^"?]+)">', text))
    assert links == set(app.state.catalogs.chips().chips)
    assert '<section class="chip"' not in text  # the figures live on each chip's page
    # its title is a title: the sources list is in the page, once
    assert "<title>Chip catalog · roofcheck</title>" in text
    assert text.count('<details id="sources">') == 1


def test_a_model_has_a_page_of_its_shape_counts_memory_and_links_to_ask(client, app):
    text = _page(client.get("/models/llama-8b", headers=HTML))  # an alias finds it
    model = client.get("/models/llama-3.1-8b").json()
    assert model["name"] in text
    assert f"{model['params_total']:,}" in text  # whole counts: 8,030,261,248
    # its shape: 32 layers, hidden 4,096, 32 heads of which 8 for keys and values, 128 wide
    shape = re.search(r'id="shape">(.*?)</dl>', text, re.S)
    assert shape
    words = " ".join(re.sub(r"<[^>]+>", " ", shape.group(1)).split())
    assert "Layers 32" in words and "Hidden size 4,096" in words
    assert "32 (8 for keys and values), 128 wide" in words
    # memory per dtype: 8.03e9 parameters x 2 bytes = 16.1 GB in bf16, x 4 = 32.1 GB in fp32;
    # the KV cache, 2 (K and V) x 32 layers x 8 heads x 128 x 2 bytes = 131,072 B a token in bf16
    memory = re.search(r'id="memory"[^>]*>(.*?)</table>', text, re.S)
    assert memory
    rows = {
        cells[0]: cells[1:]
        for cells in (
            [
                " ".join(re.sub(r"<[^>]+>", " ", c).split())
                for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
            ]
            for row in re.findall(r"<tr>(.*?)</tr>", memory.group(1), re.S)
        )
    }
    assert rows["bf16"][0] == "16.1 GB" and rows["fp32"][0] == "32.1 GB"
    assert rows["bf16"][1] == "131 kB" and rows["fp8"][1] == "65.5 kB"
    for link in (
        "/?chip=h100&amp;model=llama-3.1-8b",
        "/comparison?chips=",
        "/history?model=llama-3.1-8b",
    ):
        assert f'href="{link}' in text
    index = _page(client.get("/models", headers=HTML))
    assert set(re.findall(r'<a href="/models/([^"?]+)">', index)) == set(
        app.state.catalogs.models.models
    )


@pytest.mark.parametrize("path", ["/chips/h10", "/models/lama-3.1-8b"])
def test_an_unknown_chip_or_model_is_a_page_with_the_close_names(client, path):
    page = client.get(path, headers=HTML)
    assert page.status_code == 404
    assert 'id="suggestions"' in _page(page) and 'id="ways-on"' in page.text
    answer = client.get(path, headers=CURL)
    assert answer.status_code == 404 and "suggestions" in answer.json()["detail"]


def test_an_unknown_address_is_a_page_with_ways_on_to_a_browser(client):
    page = client.get("/no/such/page", headers=HTML)
    assert page.status_code == 404 and "/no/such/page" in _page(page)
    for href in ("/", "/comparison", "/history", "/catalog", "/models"):
        assert f'href="{href}"' in page.text
    assert client.get("/no/such/page", headers=CURL).json() == {"detail": "Not Found"}


def test_a_calculation_address_leads_a_browser_to_its_form_with_the_answer(client):
    # asked once by a JSON client first, so that its answer is stored: the browser still gets
    # the page (a stored answer is never served to a browser)
    calculations = ("/check", "/expected-time", "/memory-fit", "/max-context", "/optimal-batch")
    for path in (*calculations, "/scaling"):
        assert client.get(f"{path}?{QUESTION}", headers=CURL).headers["content-type"] == (
            "application/json"
        )
        moved = client.get(f"{path}?{QUESTION}", headers=HTML, follow_redirects=False)
        assert moved.status_code == 303 and moved.headers["location"] == f"/?{QUESTION}"
    assert client.get(f"/compare?{COMPARE}", headers=CURL).status_code == 200
    moved = client.get(f"/compare?{COMPARE}", headers=HTML, follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == f"/comparison?{COMPARE}"
    page = client.get(f"/compare?{COMPARE}", headers=HTML)
    assert page.status_code == 200 and 'id="ranked"' in _page(page)
    assert len(client.get(f"/compare?{COMPARE}", headers=CURL).json()["rows"]) == 2


def test_the_measurement_pages_json_link_gives_json(client):
    body = {
        "chip": "a100",
        "workload": {"kind": "transformer", "model": "llama-3.1-8b", "phase": "decode"},
        "measured_time_s": 0.03,
    }
    stored = client.post("/measurements", json=body)
    assert stored.status_code == 201, stored.text
    path = f"/measurements/{stored.json()['id']}"
    page = _page(client.get(path, headers=HTML))
    link = re.search(r'<a href="([^"]+)" type="application/json">JSON</a>', page)
    assert link and link.group(1) == f"{path}?format=json"
    answer = client.get(link.group(1), headers=HTML)
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["id"] == stored.json()["id"]


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/measurements?limit=0", "limit: Input should be greater than or equal to 1"),
        ("/measurements/abc", "measurement_id: Input should be a valid integer"),
        ("/chips?catalog_version=" + "x" * 65, "catalog_version: String should have at most 64"),
    ],
)
def test_a_parameter_out_of_range_is_a_page_naming_it_to_a_browser(client, path, says):
    page = client.get(path, headers=HTML)
    assert page.status_code == 422 and f'<p class="error">{says}' in _page(page)
    assert 'id="ways-on"' in page.text
    answer = client.get(path, headers=CURL)  # a JSON client's 422 is unchanged
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"][-1] in says
