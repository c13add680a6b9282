"""One embedder per name per process, so the reranker, the pruner and the KB share a loaded model.

The shared embedder remembers vectors by text (an LRU of 20,000 vectors, ~30 MB for MiniLM): the dense
reranker and the setwise pruner embed the same passages of the same chunks, and only the first encodes them.
"""

from __future__ import annotations

import threading

from admit.backends.embedders.base import CachedEmbedder, Embedder

__all__ = ["import_libraries", "shared_embedder"]

_SHARED: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def shared_embedder(spec: str = "minilm") -> Embedder:
    """Return the process-wide embedder for ``spec`` (created on first use)."""
    with _LOCK:
        if spec not in _SHARED:
            from admit.backends.embedders import resolve_embedder

            _SHARED[spec] = CachedEmbedder(resolve_embedder(spec), max_items=20_000)
        return _SHARED[spec]


def import_libraries() -> None:
    """Import the compiled libraries a MiniLM load needs (``tokenizers``, and ``onnxruntime`` when installed) now.

    Loading compiled code holds the GIL for tens of milliseconds; an adapter calls this when it is built, so the
    first async call's model load, in a worker thread beside an event loop, does not.
    """
    import importlib.util

    for name in ("tokenizers", "onnxruntime"):
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
