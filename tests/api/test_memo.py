"""The bounded memo the answer cache keeps its answers in (app/services/memo.py), and an
answer that echoes a zero as it was sent."""

from __future__ import annotations

import json
import threading

from fastapi.testclient import TestClient

from app.services.memo import Memo

QUERY = "/check?chip=a100&model=llama-8b&batch=8"


def test_the_memo_keeps_the_most_recently_used() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # now the most recent: "b" goes first
    memo.put("c", 3)
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (1, None, 3)
    assert memo.hits == 3 and len(memo) == 2
    empty: Memo[str, int] = Memo(0)
    empty.put("a", 1)
    assert empty.get("a") is None and len(empty) == 0


def test_the_memo_takes_writers_from_several_threads() -> None:
    """Measurements are judged on worker threads: concurrent puts and gets keep the bound
    and lose no update to a race (an unlocked move_to_end after an eviction raises)."""
    memo: Memo[int, int] = Memo(64)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(5_000):
                memo.put((i * 7 + offset) % 200, i)
                memo.get((i * 3 + offset) % 200)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(memo) == 64


def test_a_memo_with_second_sight_keeps_a_key_put_twice() -> None:
    memo: Memo[str, int] = Memo(2, second_sight=True)
    memo.put("a", 1)
    assert memo.get("a") is None and len(memo) == 0  # seen once: not kept
    memo.put("a", 2)
    assert memo.get("a") == 2 and len(memo) == 1
    memo.put("b", 3)
    memo.put("c", 4)
    memo.put("b", 5)
    memo.put("c", 6)
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (None, 5, 6)  # 2 at most
    # the keys seen once are at most 4 x max_entries = 8: the ninth forgets them
    for key in range(9):
        memo.put(str(key), key)
    memo.put("0", 0)
    assert memo.get("0") is None
    memo.clear()
    memo.put("c", 7)
    assert memo.get("c") is None  # clearing forgets what was seen too


def test_a_negative_zero_is_echoed_as_sent_after_a_positive_one(client: TestClient) -> None:
    for zero in ("0.0", "-0.0", "0.0"):
        answer = client.get(f"{QUERY}&measured_ms=5&reserve_fraction={zero}").json()
        assert json.dumps(answer["workload"]["reserve_fraction"]) == zero
