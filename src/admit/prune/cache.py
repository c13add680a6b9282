"""A cache of LLM pruner results: an in-memory LRU, optionally backed by a SQLite file.

The key covers everything the answer depends on: the question, a hash of every chunk's title and text in
order (and its rank), the model, the prompt version and the strategy's parameters. Values are small JSON
documents (grades and reasons), so a cache file can be shared between processes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from admit import _scope
from admit._lru import LRU
from admit.errors import ConfigError, StoreError
from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.settings import PruneSettings
from admit.types import Scored, Usage

__all__ = ["PruneCache", "cache_key", "chunk_hash"]


def chunk_hash(title: str, text: str) -> str:
    """SHA-256 of a chunk's title and text."""
    return hashlib.sha256(f"{title}\x00{text}".encode()).hexdigest()


def cache_key(
    *,
    strategy: str,
    model: str,
    prompt_version: str,
    question: str,
    candidates: Sequence[Scored],
    params: Mapping[str, Any],
) -> str:
    """The cache key of one prune call (in the running work's cache scope: one tenant never hits another's)."""
    doc = {
        "s": strategy,
        "m": model,
        "v": prompt_version,
        "q": question,
        "c": [[chunk_hash(c.chunk.title, c.chunk.text), c.rank] for c in candidates],
        "p": {k: params[k] for k in sorted(params)},
    }
    if scope := _scope.current():
        doc["t"] = scope
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


class PruneCache:
    """``PruneCache(maxsize=2048, path="prune-cache.sqlite")``; thread-safe."""

    def __init__(self, maxsize: int = 2048, path: str | Path | None = None) -> None:
        """Create the cache; with ``path``, entries also go to (and are read from) that SQLite file."""
        if maxsize < 0:
            raise ConfigError(f"PruneCache: maxsize must be >= 0, got {maxsize}.")
        self.maxsize = maxsize
        self.path = Path(path) if path is not None else None
        self.hits = 0
        self.misses = 0
        self._mem: LRU[str, dict[str, Any]] = LRU(maxsize)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS prune_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL)"
                )
            except sqlite3.Error as exc:
                raise StoreError(f"prune cache {str(self.path)!r} cannot be opened: {exc}") from exc

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the cached value or ``None``."""
        with self._lock:
            value = self._mem.get(key)
            if value is not None:
                self.hits += 1
                return value
            if self._db is not None:
                try:
                    row = self._db.execute("SELECT value FROM prune_cache WHERE key = ?", (key,)).fetchone()
                except sqlite3.Error as exc:
                    raise StoreError(f"prune cache read failed: {exc}") from exc
                if row is not None:
                    value = json.loads(row[0])
                    self._mem.put(key, value)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
            return value

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` (JSON-serialisable)."""
        doc = dict(value)
        with self._lock:
            self._mem.put(key, doc)
            if self._db is not None:
                try:
                    self._db.execute(
                        "INSERT OR REPLACE INTO prune_cache (key, value, created) VALUES (?, ?, ?)",
                        (key, json.dumps(doc), time.time()),
                    )
                except sqlite3.Error as exc:
                    raise StoreError(f"prune cache write failed: {exc}") from exc

    def __len__(self) -> int:
        """Entries held in memory."""
        return len(self._mem)

    def close(self) -> None:
        """Close the SQLite file, if any."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def cached_outcome(
    cache: PruneCache | None,
    key: str | None,
    strategy: str,
    candidates: Sequence[Scored],
    settings: PruneSettings,
    started: float,
) -> PruneOutcome | None:
    """The outcome rebuilt from a cached grading (threshold and keep_top_k applied afresh), or ``None``."""
    if cache is None or key is None:
        return None
    hit = cache.get(key)
    if hit is None:
        return None
    return apply_threshold(
        strategy,
        candidates,
        hit["grades"],
        settings,
        reasons=hit["reasons"],
        usage=Usage(cached=True, latency_s=time.perf_counter() - started),
        notes=("cache hit",),
    )
