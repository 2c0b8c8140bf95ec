"""GET and POST /compare: one workload over several chips, with energy and cost."""

import json

import pytest

from app.settings import Settings

LLAMA_DECODE = "model=llama-8b&phase=decode&batch=1&seq_len=1024"


def _rows(answer):
    return {row["chip"]["id"]: row for row in answer["rows"]}


def test_energy_and_cost_per_token_of_llama_8b_decode_on_an_a100(client):
    # one decode step of batch 1 makes one token; on the A100 SXM4 80GB its realistic time is
    # /expected-time's: 8.527 ms of sustained kernels x typical decode's 1.3028 + 1.057 ms of
    # fixed costs, t = 12.166 ms (82.19 tokens/s). At its 400 W board power:
    #   energy per token = 400 W x 1 chip x 0.012166 s / 1 token = 4.866 J
    # and at 1.8 USD per chip-hour:
    #   cost per million tokens = 1.8 / 3600 x 1 x 0.012166 / 1 x 1e6 = 6.083 USD
    compared = client.get(f"/compare?chips=a100,h100&{LLAMA_DECODE}&prices=a100:1.8")
    assert compared.status_code == 200
    alone = client.get(f"/expected-time?chip=a100&{LLAMA_DECODE}").json()
    a100 = _rows(compared.json())["a100-sxm4-80gb"]
    t = alone["realistic_time_s"]
    assert a100["realistic_time_s"] == pytest.approx(t)
    assert a100["expected_time_s"] == pytest.approx(alone["expected_time_s"])
    assert a100["realistic_tokens_per_s"] == pytest.approx(1 / t)
    assert t == pytest.approx(0.012166, rel=1e-3)
    assert a100["board_power_w"] == 400
    assert a100["energy_per_token_j"] == pytest.approx(400 * t)
    assert a100["energy_per_token_j"] == pytest.approx(4.866, rel=1e-3)
    assert a100["cost_per_million_tokens_usd"] == pytest.approx(1.8 / 3600 * t * 1e6)
    assert a100["cost_per_million_tokens_usd"] == pytest.approx(6.083, rel=1e-3)
    # no price given for the H100, and no price_per_hour: its cost is unknown
    h100 = _rows(compared.json())["h100-sxm5-80gb"]
    assert h100["price_per_hour"] is None and h100["cost_per_million_tokens_usd"] is None
    assert h100["energy_per_token_j"] == pytest.approx(700 / h100["realistic_tokens_per_s"])


def test_tensor_parallel_chips_count_in_energy_and_cost(client):
    # tp=2: two chips draw power and are paid for, so both figures are per 2 chips
    answer = client.get(f"/compare?chips=h100&{LLAMA_DECODE}&tp=2&price_per_hour=3").json()
    row = answer["rows"][0]
    assert row["chips"] == 2
    rate = row["realistic_tokens_per_s"]
    assert row["energy_per_token_j"] == pytest.approx(700 * 2 / rate)
    assert row["cost_per_million_tokens_usd"] == pytest.approx(3 / 3600 * 2 / rate * 1e6)


def test_ranked_by_realistic_tokens_per_s_and_the_unfit_last(client):
    # llama-70b in bf16 needs ~141 GB for its weights alone: it fits on the MI300X (192 GB),
    # not on the H100 or A100 (80 GB) nor the L4 (24 GB), which still get their rows
    answer = client.get("/compare?chips=l4,h100,mi300x,a100&model=llama-70b&phase=decode").json()
    rows = answer["rows"]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    fitting = [r for r in rows if r["fits"]]
    unfit = [r for r in rows if not r["fits"]]
    assert rows == fitting + unfit  # every chip it fits on ranks before those it does not
    for group in (fitting, unfit):
        rates = [r["realistic_tokens_per_s"] for r in group]
        assert rates == sorted(rates, reverse=True)
    l4 = _rows(answer)["l4"]
    assert l4["fits"] is False
    assert l4["memory_required_bytes"] > l4["memory_available_bytes"]
    assert l4["warnings"] and l4["warnings"][0].startswith("Does not fit")
    assert l4["realistic_time_s"] > 0  # its figures are still given, marked by the warning


def test_a_chip_the_work_fits_on_ranks_above_a_faster_one_it_does_not(client):
    # llama-8b decode at batch 64 with an 8192-token context: its KV cache, 64 x 8192 tokens x
    # 32 layers x 2 (K, V) x 1024 (8 KV heads of 128) x 2 bytes = 68.7 GB, plus 16 GB of
    # weights: ~93 GB per chip with the rest the answer counts, more than the H100's or A100's
    # 80 GB, less than the MI250X's 128 GB. The H100 is still the fastest of the three, so
    # ranking by tokens/s alone would put it first; the answer's own fit flags give the order
    answer = client.get("/compare?chips=h100,mi250x,a100&model=llama-8b&batch=64&seq_len=8192")
    rows = _rows(answer.json())
    h100, mi250x, a100 = rows["h100-sxm5-80gb"], rows["mi250x"], rows["a100-sxm4-80gb"]
    assert (mi250x["fits"], h100["fits"], a100["fits"]) == (True, False, False)
    for unfit in (h100, a100):
        assert unfit["memory_required_bytes"] > unfit["memory_available_bytes"]
    rate = {chip: row["realistic_tokens_per_s"] for chip, row in rows.items()}
    assert rate["h100-sxm5-80gb"] > rate["mi250x"] > rate["a100-sxm4-80gb"]
    # the one it fits on first, then those it does not, fastest first
    ranked = [(row["chip"]["id"], row["rank"]) for row in answer.json()["rows"]]
    assert ranked == [("mi250x", 1), ("h100-sxm5-80gb", 2), ("a100-sxm4-80gb", 3)]


def test_a_chip_without_bf16_falls_back_to_fp16_and_says_so(client):
    rows = _rows(client.get(f"/compare?chips=v100,a100&{LLAMA_DECODE}").json())
    assert rows["v100-sxm2-32gb"]["dtype"] == "fp16"
    assert rows["v100-sxm2-32gb"]["notes"] == [
        "dtype fp16 by default: v100-sxm2-32gb has no bf16 matrix peak"
    ]
    assert rows["a100-sxm4-80gb"]["dtype"] == "bf16" and rows["a100-sxm4-80gb"]["notes"] == []


def test_a_chip_without_the_dtype_asked_for_gets_an_error_row(client):
    answer = client.get(f"/compare?chips=t4,a100&{LLAMA_DECODE}&dtype=bf16").json()
    a100, t4 = answer["rows"]
    assert a100["rank"] == 1 and a100["error"] is None
    assert t4["chip"]["id"] == "t4" and t4["rank"] is None
    assert "no published bf16 matrix peak" in t4["error"]
    assert t4["realistic_time_s"] is None


def test_a_chip_without_a_sourced_board_power_has_no_energy(client):
    row = client.get(f"/compare?chips=tpu-v5e&{LLAMA_DECODE}").json()["rows"][0]
    assert row["board_power_w"] is None and row["energy_per_token_j"] is None
    assert row["realistic_tokens_per_s"] > 0


def test_post_takes_a_list_and_a_dict_of_prices(client):
    body = {
        "chips": ["a100", "mi300x"],
        "workload": {"model": "llama-8b", "phase": "decode", "batch": 1, "seq_len": 1024},
        "price_per_hour": 2.0,
        "prices": {"a100-sxm4-80gb": 1.5},  # any name of a compared chip
    }
    answer = client.post("/compare", json=body)
    assert answer.status_code == 200
    rows = _rows(answer.json())
    assert rows["a100-sxm4-80gb"]["price_per_hour"] == 1.5
    assert rows["mi300x"]["price_per_hour"] == 2.0
    got = client.get(f"/compare?chips=a100,mi300x&{LLAMA_DECODE}&price_per_hour=2&prices=a100:1.5")
    assert got.json()["rows"] == answer.json()["rows"]


def test_an_unknown_chip_is_404_with_suggestions(client):
    answer = client.get(f"/compare?chips=a100,h1000&{LLAMA_DECODE}")
    assert answer.status_code == 404
    detail = answer.json()["detail"]
    assert detail["message"] == "unknown chip 'h1000'"
    assert "h100-sxm5-80gb" in detail["suggestions"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("chips=", "chips"),
        ("chips=" + ",".join(["a100"] * 17), "chips"),
        ("chips=a100,a100-sxm4-80gb", "chips"),  # one chip twice
        ("chips=a100&prices=h100:2", "prices"),  # a chip not compared
        ("chips=a100&prices=nosuchchip:2", "prices"),
        ("chips=a100&prices=a100:-1", "prices"),
        ("chips=a100&prices=a100:0", "prices"),
        ("chips=a100&prices=a100:1e999", "prices"),
        ("chips=a100&prices=a100", "prices"),
        ("chips=a100&price_per_hour=0", "price_per_hour"),
    ],
)
def test_bad_chips_and_prices_are_422_naming_the_field(client, query, field):
    answer = client.get(f"/compare?{query}&model=llama-8b")
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == ["query", field]


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"chips": []}, ["body", "chips"]),
        ({"chips": ["a100"] * 17}, ["body", "chips"]),
        ({"prices": {"a100": -2}}, ["body", "prices", "a100"]),
        ({"prices": {"h200": 2}}, ["body", "prices"]),
    ],
)
def test_bad_post_bodies_are_422_naming_the_field(client, change, loc):
    body = {"chips": ["a100"], "workload": {"model": "llama-8b"}, **change}
    answer = client.post("/compare", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == loc


def test_the_answer_states_its_assumptions(client):
    answer = client.get(f"/compare?chips=a100&{LLAMA_DECODE}").json()
    assert answer["ranked_by"] == "realistic_tokens_per_s"
    # the version of the catalog the service loaded, as chip_catalog.json states it
    assert answer["catalog_version"] == json.loads(Settings().chip_catalog.read_text())["version"]
    assert any("upper bound" in line for line in answer["assumptions"])


def test_the_echoed_workload_holds_only_the_fields_of_its_phase(client):
    # decode: no training field (zero, optimizer, dp...) and no gen_len in the echo
    answer = client.get(f"/compare?chips=a100,h100&{LLAMA_DECODE}").json()
    echoed = answer["workload"]
    assert echoed["phase"] == "decode" and echoed["batch"] >= 1
    assert not {"zero", "optimizer", "dp", "gen_len", "recompute"} & set(echoed)
