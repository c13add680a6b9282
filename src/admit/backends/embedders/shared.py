"""One embedder instance per name per process, so the reranker, the pruner and the KB share a loaded model."""

from __future__ import annotations

import threading

from admit.backends.embedders.base import Embedder

__all__ = ["shared_embedder"]

_SHARED: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def shared_embedder(spec: str = "minilm") -> Embedder:
    """Return the process-wide embedder for ``spec`` (created on first use)."""
    with _LOCK:
        if spec not in _SHARED:
            from admit.backends.embedders import resolve_embedder

            _SHARED[spec] = resolve_embedder(spec)
        return _SHARED[spec]
