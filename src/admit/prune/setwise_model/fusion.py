"""The split cross-encoder as ``setwise``'s strongest signal: a fitted logistic fusion of the two.

``setwise``'s trees read frozen MiniLM vectors and lexical features; they cannot see what those miss. The
``cross`` model (:mod:`admit.backends.rerankers.cross`) reads the question and each chunk's best passage together.
The fusion maps, per chunk, ``logit(p_setwise)``, the cross score's z-score within the list and its raw value to a
probability that the chunk is needed (weights fitted by ``scripts/fit_cross_fusion.py`` on documentation lists
neither model was fitted on, kept in the cross model file's ``meta.fusion``); the coverage stage and the grades
then read the fused probabilities exactly as they read the trees'.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["FUSION_FEATURES", "fuse", "fusion_features"]

FloatArray = npt.NDArray[np.float64]

FUSION_FEATURES = ("logit_setwise", "cross_z", "cross")


def _logit(p: FloatArray) -> FloatArray:
    q = np.clip(p, 1e-4, 1 - 1e-4)
    out: FloatArray = np.log(q / (1 - q))
    return out


def fusion_features(probs: FloatArray, cross: npt.ArrayLike) -> FloatArray:
    """The fusion's inputs per chunk, ``(n, 3)``: see :data:`FUSION_FEATURES`."""
    c = np.asarray(cross, dtype=np.float64)
    sd = float(c.std()) or 1.0
    return np.stack([_logit(np.asarray(probs, dtype=np.float64)), (c - c.mean()) / sd, c], axis=1)


def fuse(probs: FloatArray, cross: npt.ArrayLike, weights: Sequence[float]) -> FloatArray:
    """Fused probabilities (weights per feature, the bias last)."""
    w = np.asarray(weights, dtype=np.float64)
    z = fusion_features(probs, cross) @ w[:-1] + w[-1]
    out: FloatArray = 1.0 / (1.0 + np.exp(-z))
    return out
