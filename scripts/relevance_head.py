"""An experiment, not shipped: a learned query-passage relevance head over the frozen MiniLM vectors.

Cosine similarity weighs every direction of the embedding space alike; the head learns which directions
carry relevance for a question, from labelled lists (``scripts/fit_relevance.py``, fitted on
``../shared/train``, documentation included). For a question vector ``q`` and a chunk's passage vectors it
reads the best-matching passage ``b`` (highest cosine with ``q``) and the passages' normalised mean ``m``,
and scores the pair with a one-hidden-layer MLP over ``[q * b, q * m, |q - b|, q . b, q . m]``.

It needs nothing but the vectors the setwise scorer already has (stored at ingest or encoded once): two small
matrix products per list, numpy only. Fed to the setwise trees as features (out of fold) it gave no gain out of
sample (README, "What was tried"), so it is not shipped; ``scripts/fit_relevance.py`` reproduces the measurement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["RelevanceHead", "pair_features"]

FloatArray = npt.NDArray[np.float64]

HEAD_VERSION = 1


def pair_features(q: FloatArray, best: FloatArray, mean: FloatArray) -> npt.NDArray[np.float32]:
    """The head's input rows for one list.

    Args:
        q: The unit question vector (d,).
        best: Per chunk, its passage vector closest to the question (n, d), unit length.
        mean: Per chunk, its passages' normalised mean vector (n, d).

    Returns:
        Array (n, 3 d + 2), float32.
    """
    qb = best * q[None, :]
    qm = mean * q[None, :]
    diff = np.abs(best - q[None, :])
    dots = np.column_stack([qb.sum(axis=1), qm.sum(axis=1)])
    return np.hstack([qb, qm, diff, dots]).astype(np.float32)


@dataclass(frozen=True, slots=True, eq=False)
class RelevanceHead:
    """The fitted MLP: ``relu(x @ w1 + b1) @ w2 + b2`` gives a relevance logit per chunk."""

    w1: npt.NDArray[np.float32]
    b1: npt.NDArray[np.float32]
    w2: npt.NDArray[np.float32]
    b2: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        """The embedding dimension the head reads."""
        return int((self.w1.shape[0] - 2) // 3)

    def score(self, q: FloatArray, best: FloatArray, mean: FloatArray) -> FloatArray:
        """Relevance logits of a list's chunks (n,); an empty list gives an empty array.

        Raises:
            ValueError: If the vectors do not have the dimension the head was fitted on.
        """
        if best.shape[0] == 0:
            return np.zeros(0)
        if q.shape[-1] != self.dim or best.shape[1] != self.dim:
            raise ValueError(f"relevance head reads {self.dim}-d vectors, got {q.shape[-1]}-d")
        h = np.maximum(pair_features(q, best, mean) @ self.w1 + self.b1, 0.0)
        out: FloatArray = (h @ self.w2 + self.b2).astype(np.float64)
        return out

    def save(self, path: Path, meta: dict[str, Any] | None = None) -> None:
        """Writes the weights (and a JSON meta block) as one ``.npz``."""
        info = {"version": HEAD_VERSION, **(meta or self.meta)}
        np.savez_compressed(
            path,
            w1=self.w1,
            b1=self.b1,
            w2=self.w2,
            b2=np.array([self.b2], dtype=np.float32),
            meta=np.array(json.dumps(info)),
        )

    @classmethod
    def load(cls, path: str | Path) -> RelevanceHead:
        """Reads a head written by :meth:`save`.

        Raises:
            ValueError: If the file is not a head of this version or its shapes disagree.
        """
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if int(meta.get("version", 0)) != HEAD_VERSION:
                raise ValueError(f"unsupported relevance head version {meta.get('version')!r}")
            w1, b1, w2, b2 = z["w1"], z["b1"], z["w2"], float(z["b2"][0])
        if w1.ndim != 2 or b1.shape != (w1.shape[1],) or w2.shape != (w1.shape[1],) or (w1.shape[0] - 2) % 3:
            raise ValueError("relevance head weights have inconsistent shapes")
        return cls(w1=w1.astype(np.float32), b1=b1.astype(np.float32), w2=w2.astype(np.float32), b2=b2, meta=meta)
