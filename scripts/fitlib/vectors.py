"""The one vector cache: MiniLM vectors by text hash, persisted as one ``.npz`` under a fit's ``--cache-dir``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from admit.backends.embedders.base import text_key
from admit.prune import setwise_model as sm
from fitlib.data import Record

__all__ = ["VectorCache", "setwise_texts"]


class VectorCache:
    """MiniLM vectors by text hash, persisted as one ``.npz``; misses are embedded in large batches.

    It is an embedder (``embed``), so the setwise scorer reads it in place of MiniLM.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, path: Path, encoder: str | None = None) -> None:
        self.path = path
        if encoder in (None, "auto"):  # float32 vectors, whichever encoder the library's auto takes
            encoder = "onnx-fp32" if _onnx_installed() else "numpy"
        self.encoder = encoder
        """The MiniLM encoder that fills the misses (``numpy``, ``onnx-fp32``, ``onnx-int8``; ``auto`` or none:
        float32, ``onnx-fp32`` where onnxruntime and onnx are installed, else ``numpy``, whose vectors agree
        within 1e-5)."""
        if encoder == "onnx-int8":
            from admit.backends.embedders.minilm import INT8_NAME

            self.name = INT8_NAME
        self.vecs: dict[str, np.ndarray] = {}
        if path.exists():
            z = np.load(path)
            self.vecs = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
        self._model: Any = None

    def fill(self, texts: Iterable[str]) -> None:
        """Embed the texts not cached yet (shortest first), saving after every 2,048."""
        todo = sorted(
            {text_key(t): t for t in texts if text_key(t) not in self.vecs}.items(), key=lambda kv: len(kv[1])
        )
        if not todo:
            return
        if self._model is None:
            from admit.backends.embedders.minilm import MiniLMEmbedder

            self._model = MiniLMEmbedder(batch_size=64, encoder=self.encoder)
        t0 = time.time()
        for s in range(0, len(todo), 2048):
            part = todo[s : s + 2048]
            for (k, _), v in zip(part, self._model.embed([t for _, t in part]), strict=True):
                self.vecs[k] = v
            if len(todo) >= 64:  # a few misses are saved with the next large batch (or the caller's save)
                print(f"  embedded {s + len(part)}/{len(todo)} ({time.time() - t0:.0f}s)", file=sys.stderr)
                self.save()

    def save(self) -> None:
        """Write the cache (atomically)."""
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(self.vecs)), vecs=np.stack(list(self.vecs.values())).astype(np.float32))
        os.replace(tmp, self.path)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors (embedding the misses first)."""
        self.fill(texts)
        return np.stack([self.vecs[text_key(t)] for t in texts])


def _onnx_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def setwise_texts(rows: Iterable[Record]) -> list[str]:
    """The texts the setwise scorer embeds for some records: each question and every candidate's passages."""
    out = []
    for r in rows:
        out.append(sm.question_text(r["question"]))
        for c in r["candidates"]:
            out.extend(p or "-" for p in sm.passages(c.get("title") or "", c.get("text") or ""))
    return out
