"""One bounded, thread-safe least-recently-used map: every in-memory cache of admit holds its entries in one.

Example:
    >>> cache: LRU[str, int] = LRU(2)
    >>> cache.put("a", 1); cache.put("b", 2); cache.get("a")
    1
    >>> cache.put("c", 3)  # "b" is the least recently used: it goes
    >>> sorted(cache.keys())
    ['a', 'c']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar, overload

from admit.errors import InvalidValue

__all__ = ["LRU"]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")
_ABSENT = object()


class LRU(Generic[K, V]):
    """At most ``maxsize`` entries (``0``: none is kept); reading or writing an entry makes it the most recent.

    Every method takes the one lock, so threads may share an instance.
    """

    def __init__(self, maxsize: int) -> None:
        """Create an empty map holding at most ``maxsize`` entries."""
        if maxsize < 0:
            raise InvalidValue(f"`maxsize` must be >= 0, got {maxsize}.")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value under ``key`` (now the most recent), else ``default``."""
        with self._lock:
            value = self._data.get(key, _ABSENT)  # two lookups of the key, not three
            if value is _ABSENT:
                return default
            self._data.move_to_end(key)
            return value

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The held ones of ``keys`` and their values (each now the most recent), under one lock."""
        with self._lock:
            out = {k: self._data[k] for k in keys if k in self._data}
            for k in out:
                self._data.move_to_end(k)
            return out

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key`` as the most recent entry; the least recent go beyond ``maxsize``."""
        with self._lock:
            self._put(key, value)

    def put_many(self, items: Iterable[tuple[K, V]]) -> None:
        """:meth:`put` each pair, under one lock."""
        with self._lock:
            for key, value in items:
                self._put(key, value)

    def get_or_put(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``, else ``make()`` stored there. ``make`` runs under the lock: two threads asking
        for the same missing key build it once (keep ``make`` cheap, or it serialises every caller)."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            value = make()
            self._put(key, value)
            return value

    def _put(self, key: K, value: V) -> None:
        if self.maxsize == 0:
            return
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Remove and return the value under ``key`` (``None`` when absent)."""
        with self._lock:
            return self._data.pop(key, None)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._data.clear()

    def keys(self) -> list[K]:
        """The keys, least recent first (a copy)."""
        with self._lock:
            return list(self._data)

    def items(self) -> list[tuple[K, V]]:
        """The entries, least recent first (a copy; their recency is not changed)."""
        with self._lock:
            return list(self._data.items())

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is held (its recency is not changed)."""
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        """The number of entries held."""
        with self._lock:
            return len(self._data)
