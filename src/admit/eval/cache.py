"""The evaluation cache: per-record outcomes and reranker scores in one SQLite file.

An outcome is keyed by the SHA-256 of (record id, question, candidate texts, strategy, grading parameters,
reranker, pruner model, prompt version), so a re-run, or a sweep widened with new values, computes only what
is new. Reranker scores are cached per (record, reranker): they are most of the cold cost.

Only the driver process reads and writes the file; worker processes are pure.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from admit.errors import InvalidValue
from admit.eval.dataset import PruneInput

__all__ = ["CACHE_SCHEMA", "EvalCache", "default_cache_dir", "outcome_key", "record_digest", "score_key", "token_key"]

logger = logging.getLogger(__name__)

CACHE_SCHEMA = "admit-eval-cache/1"
"""Bumped when the stored outcome format changes; part of every key."""

_TABLES = ("outcomes", "scores", "tokens")


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/admit/eval``, else ``~/.cache/admit/eval`` (``admit eval --cache``, or
    ``$ADMIT_EVAL_CACHE``, names another: the face reads that variable)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "admit" / "eval"


def _sha(parts: Iterable[Any]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


def record_digest(inp: PruneInput) -> str:
    """SHA-256 of a record's id, question and candidates (ids, titles, texts)."""
    return _sha([inp.id, inp.question, *[[c.id, c.title, c.text] for c in inp.candidates]])


def score_key(digest: str, reranker: str) -> str:
    """Key of a record's reranker scores."""
    return _sha([CACHE_SCHEMA, "scores", digest, reranker])


def token_key(digest: str, tokenizer: str) -> str:
    """Key of a record's candidate token counts under a generator tokenizer."""
    return _sha([CACHE_SCHEMA, "tokens", digest, tokenizer])


def outcome_key(digest: str, *, strategy: str, params: Mapping[str, Any], reranker: str, pruner_id: str) -> str:
    """Key of one record's pruning outcome under one strategy and parameter set."""
    return _sha([CACHE_SCHEMA, "outcome", digest, strategy, dict(params), reranker, pruner_id])


class EvalCache:
    """A small key -> JSON store in SQLite (WAL). ``path=None`` keeps everything in memory (no cache)."""

    def __init__(self, path: str | Path | None) -> None:
        """Open (create) the cache file; a folder gets ``cache.sqlite`` inside it."""
        self.path: Path | None = None
        if path is not None:
            p = Path(path)
            if p.suffix not in {".sqlite", ".db"}:
                p = p / "cache.sqlite"
            p.parent.mkdir(parents=True, exist_ok=True)
            self.path = p
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path) if self.path else ":memory:", timeout=60, check_same_thread=False)
        if self.path:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        for t in _TABLES:
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {t} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._conn.commit()
        self.hits = 0
        self.misses = 0

    def get_many(self, table: str, keys: Iterable[str]) -> dict[str, Any]:
        """Return the stored values of the keys found."""
        if table not in _TABLES:
            raise InvalidValue(f"no cache table {table!r}: one of {list(_TABLES)}")
        wanted = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        with self._lock:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                q = f"SELECT key, value FROM {table} WHERE key IN ({','.join('?' * len(part))})"
                for k, v in self._conn.execute(q, part):
                    out[k] = json.loads(v)
        self.hits += len(out)
        self.misses += len(wanted) - len(out)
        return out

    def put_many(self, table: str, items: Mapping[str, Any]) -> None:
        """Store values (replacing)."""
        if table not in _TABLES:
            raise InvalidValue(f"no cache table {table!r}: one of {list(_TABLES)}")
        if not items:
            return
        rows = [(k, json.dumps(v, ensure_ascii=False, default=str)) for k, v in items.items()]
        with self._lock:
            self._conn.executemany(f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)", rows)
            self._conn.commit()

    def count(self, table: str) -> int:
        """Number of stored entries."""
        with self._lock:
            return int(self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> EvalCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
