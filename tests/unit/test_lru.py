"""``admit._lru.LRU``: the one bounded, thread-safe least-recently-used map."""

from __future__ import annotations

import threading

import pytest

from admit._lru import LRU


def test_the_least_recently_used_goes_first_and_reading_refreshes() -> None:
    c: LRU[str, int] = LRU(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # "a" is now the most recent
    c.put("c", 3)
    assert c.keys() == ["a", "c"] and "b" not in c and len(c) == 2
    c.put("a", 10)  # a write refreshes too
    c.put("d", 4)
    assert c.keys() == ["a", "d"] and c.get("a") == 10
    assert c.get("zz") is None and c.get("zz", -1) == -1
    assert "a" in c and c.keys() == ["d", "a"]  # get("a") refreshed it; `in` changes nothing
    assert c.pop("a") == 10 and c.pop("a") is None
    c.clear()
    assert len(c) == 0


def test_a_zero_size_map_keeps_nothing_and_a_negative_one_is_refused() -> None:
    c: LRU[str, int] = LRU(0)
    c.put("a", 1)
    assert c.get("a") is None and len(c) == 0
    with pytest.raises(ValueError, match="maxsize"):
        LRU(-1)


def test_get_or_put_builds_a_missing_value_once_across_threads() -> None:
    c: LRU[str, object] = LRU(4)
    built: list[int] = []
    go = threading.Barrier(8)

    def make() -> object:
        built.append(1)
        return object()

    got: list[object] = []

    def worker() -> None:
        go.wait()
        got.append(c.get_or_put("k", make))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and len({id(g) for g in got}) == 1


def test_put_many_evicts_as_put_does() -> None:
    c: LRU[int, int] = LRU(3)
    c.put_many((i, i * i) for i in range(5))
    assert c.keys() == [2, 3, 4] and c.get(4) == 16
    assert c.get_many([2, 9, 3]) == {2: 4, 3: 9}  # the misses left out; the hits now the most recent
    assert c.keys() == [4, 2, 3]
