import os
import random
import sys
import time

import pytest

sys.path.insert(0, os.getcwd())

from solution import LRUCache  # noqa: E402


def test_basic_eviction():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1      # "a" becomes most recent
    cache.put("c", 3)               # evicts "b"
    assert cache.get("b") is None
    assert cache.get("a") == 1
    assert cache.get("c") == 3
    assert len(cache) == 2


def test_default_on_miss():
    cache = LRUCache(1)
    assert cache.get("missing") is None
    assert cache.get("missing", -1) == -1
    assert len(cache) == 0


def test_put_existing_key_refreshes_and_replaces():
    cache = LRUCache(2)
    cache.put(1, "one")
    cache.put(2, "two")
    cache.put(1, "ONE")             # 1 is now most recent, 2 is oldest
    cache.put(3, "three")           # evicts 2
    assert cache.get(1) == "ONE"
    assert cache.get(2) is None
    assert cache.get(3) == "three"
    assert len(cache) == 2


def test_miss_does_not_change_order():
    cache = LRUCache(2)
    cache.put("x", 1)
    cache.put("y", 2)
    cache.get("zzz")
    cache.put("z", 3)               # evicts "x" (oldest)
    assert cache.get("x") is None
    assert cache.get("y") == 2


def test_capacity_one():
    cache = LRUCache(1)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") is None
    assert cache.get("b") == 2
    assert len(cache) == 1


def test_stored_falsy_values():
    cache = LRUCache(3)
    cache.put("zero", 0)
    cache.put("none", None)
    assert cache.get("zero", "default") == 0
    assert cache.get("none", "default") is None


@pytest.mark.parametrize("capacity", [0, -3])
def test_bad_capacity(capacity):
    with pytest.raises(ValueError):
        LRUCache(capacity)


def test_random_against_model():
    rng = random.Random(7)
    for capacity in (1, 2, 3, 5):
        cache = LRUCache(capacity)
        model = []  # list of [key, value], oldest first
        for _ in range(2000):
            key = rng.randint(0, 7)
            if rng.random() < 0.5:
                value = rng.randint(0, 100)
                cache.put(key, value)
                model = [kv for kv in model if kv[0] != key] + [[key, value]]
                if len(model) > capacity:
                    model.pop(0)
            else:
                found = [kv for kv in model if kv[0] == key]
                expected = found[0][1] if found else "miss"
                if found:
                    model = [kv for kv in model if kv[0] != key] + found
                assert cache.get(key, "miss") == expected
            assert len(cache) == len(model)


def test_many_operations_are_fast():
    cache = LRUCache(1000)
    start = time.perf_counter()
    for i in range(200_000):
        cache.put(i, i)
        cache.get(i - 500)
    assert time.perf_counter() - start < 5.0
    assert len(cache) == 1000
