"""People's words, the rest of issue 37 item 8: the batch sweep never cites a batch that does
not fit, an answer's counts are said in words ("1 chip", "8 chips", "1 fused group"), the
optimizers are named as people name them, and chip counts left as the form offers them are
never a red error."""

import re

HTML = {"accept": "text/html"}


def test_the_sweep_never_cites_a_batch_that_does_not_fit(client):
    # Llama 3.1 8B decoding 2,048 tokens on an A100: batch 227 fits (the weights' 16.1 GB and
    # 227 x 2,048 x 131,072 B of KV cache in the 80 GB less the runtime's share); 90% of the
    # throughput's limit needs batch 503, which does not fit
    answer = client.get("/optimal-batch?chip=a100&model=llama-3.1-8b&seq_len=2048").json()
    assert answer["max_batch"] == 227 and answer["near_asymptote_batch"] == 503
    [said] = [line for line in answer["explanation"] if line.startswith("Throughput tends")]
    assert "503" not in said
    assert "no batch that fits reaches 90% of it: batch 227, the largest that fits" in said
    page = client.get("/?chip=a100&model=llama-3.1-8b&batch=8&seq_len=2048").text
    assert "batch 503" not in page
    # where it fits, the batch that reaches 90% is named: 512-token sequences on an H200
    # (141 GB) fit batch 1,763, and batch 994 reaches 90%
    roomy = client.get("/optimal-batch?chip=h200&model=llama-3.1-8b&seq_len=512").json()
    assert roomy["near_asymptote_batch"] == 994 < roomy["max_batch"]
    assert roomy["explanation"][-1].endswith("; batch 994 reaches 90% of it.")


def test_assumptions_count_in_words(client):
    one = client.get("/expected-time?chip=h100&model=llama-3.1-8b").json()["assumptions"]
    assert "tensor parallel over 1 chip" in one and not any("(s)" in line for line in one)
    eight = client.get("/expected-time?chip=h100&model=llama-3.1-70b&tp=8").json()
    assert "tensor parallel over 8 chips" in eight["assumptions"]


def test_the_optimizers_are_named_in_words(client):
    page = client.get("/").text
    options = dict(re.findall(r'<option value="(\w+)"[^>]*>([^<]+)</option>', page))
    assert options["sgd_momentum"] == "SGD with momentum"
    assert options["adamw"] == "AdamW" and options["adam_8bit"] == "8-bit Adam"


def test_chip_counts_left_as_offered_are_a_note_not_an_error(client):
    # a training step of batch 1: no count of 8 to 128 chips divides it among replicas
    page = client.get("/?chip=h100&model=llama-3.1-8b&phase=training")
    assert page.status_code == 200
    assert 'id="f-chip_counts-error"' not in page.text
    assert 'aria-invalid="true"' not in page.text
    note = re.search(r'id="scaling-note">([^<]*)', page.text)
    assert note and "must be a multiple of" in note.group(1)
    # counts the user typed: an error beside the field, as before
    typed = client.get("/?chip=h100&model=llama-3.1-8b&phase=training&chip_counts=8,16")
    assert 'id="f-chip_counts-error"' in typed.text
