"""The answer cache's bound, order, threads and second sight (app/services/answer_cache.py),
and an answer that echoes a zero as it was sent."""

from __future__ import annotations

import json
import threading

from fastapi.testclient import TestClient

from app.services.answer_cache import AnswerCache

QUERY = "/check?chip=a100&model=llama-8b&batch=8"


def key(name: object) -> tuple[str, str, bytes]:
    return ("GET", "/check", str(name).encode())


def test_the_cache_keeps_the_most_recently_used() -> None:
    cache = AnswerCache(2, second_sight=False)
    cache.put(key("a"), b"1")
    cache.put(key("b"), b"2")
    assert cache.get(key("a")) == b"1"  # now the most recent: "b" goes first
    cache.put(key("c"), b"3")
    assert (cache.get(key("a")), cache.get(key("b")), cache.get(key("c"))) == (b"1", None, b"3")
    assert cache.hits == 3 and len(cache) == 2
    empty = AnswerCache(0, second_sight=False)
    empty.put(key("a"), b"1")
    assert empty.get(key("a")) is None and len(empty) == 0


def test_the_cache_takes_writers_from_several_threads() -> None:
    """Concurrent puts and gets keep the bound and lose no update to a race (an unlocked
    move_to_end after an eviction raises)."""
    cache = AnswerCache(64, second_sight=False)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(5_000):
                cache.put(key((i * 7 + offset) % 200), b"%d" % i)
                cache.get(key((i * 3 + offset) % 200))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(cache) == 64


def test_a_cache_with_second_sight_keeps_a_key_put_twice() -> None:
    cache = AnswerCache(2)
    cache.put(key("a"), b"1")
    assert cache.get(key("a")) is None and len(cache) == 0  # seen once: not kept
    cache.put(key("a"), b"2")
    assert cache.get(key("a")) == b"2" and len(cache) == 1
    for name, body in (("b", b"3"), ("c", b"4"), ("b", b"5"), ("c", b"6")):
        cache.put(key(name), body)
    got = (cache.get(key("a")), cache.get(key("b")), cache.get(key("c")))
    assert got == (None, b"5", b"6")  # 2 at most
    # the keys seen once are at most 4 x max_entries = 8: the ninth forgets them
    for n in range(9):
        cache.put(key(n), b"%d" % n)
    cache.put(key(0), b"0")
    assert cache.get(key(0)) is None
    cache.clear()
    cache.put(key("c"), b"7")
    assert cache.get(key("c")) is None  # clearing forgets what was seen too


def test_a_negative_zero_is_echoed_as_sent_after_a_positive_one(client: TestClient) -> None:
    for zero in ("0.0", "-0.0", "0.0"):
        answer = client.get(f"{QUERY}&measured_ms=5&reserve_fraction={zero}").json()
        assert json.dumps(answer["workload"]["reserve_fraction"]) == zero
