"""One embedder per name per process, so the reranker, the pruner and the KB share a loaded model.

The shared embedder remembers vectors by text (an LRU of 20,000 vectors, ~30 MB for MiniLM): the dense
reranker and the setwise pruner embed the same passages of the same chunks, and only the first encodes them.
"""

from __future__ import annotations

import threading

from admit.backends.embedders.base import CachedEmbedder, Embedder
from admit.backends.embedders.defaults import EncoderConfig, minilm_defaults

__all__ = ["import_libraries", "shared_embedder"]

_SHARED: dict[tuple[str, EncoderConfig], Embedder] = {}
_LOCK = threading.Lock()


def shared_embedder(spec: str = "minilm", config: EncoderConfig | None = None) -> Embedder:
    """Return the process-wide embedder for ``spec`` and ``config`` (created on first use).

    One per name and configuration (``config``, else the process's fallback
    :func:`~admit.backends.embedders.defaults.minilm_defaults`): ``minilm:numpy`` and ``minilm:onnx-int8`` are two
    embedders, two model folders are two, and a name asked for after
    :func:`~admit.backends.embedders.defaults.configure_minilm` changed the fallback gets one made with it, never
    the one an earlier pipeline holds."""
    key = (spec, config if config is not None else minilm_defaults())
    with _LOCK:
        if key not in _SHARED:
            from admit.backends.embedders import resolve_embedder

            _SHARED[key] = CachedEmbedder(resolve_embedder(spec, config=key[1]), max_items=20_000)
        return _SHARED[key]


def import_libraries() -> None:
    """Import the compiled libraries a MiniLM load needs (``tokenizers``, and ``onnxruntime`` when installed) now.

    Loading compiled code holds the GIL for tens of milliseconds; an adapter calls this when it is built, so the
    first async call's model load, in a worker thread beside an event loop, does not.
    """
    import importlib.util

    for name in ("tokenizers", "onnxruntime"):
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
