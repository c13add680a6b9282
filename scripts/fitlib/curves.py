"""Retained recall and chunk compression of keep masks and of top-N cuts, and R@68 on them.

R@x is :func:`admit.eval.metrics.recall_at`, the evaluation's own: a fit's printed figures are the figures
``admit eval`` gives the same points. It is read through :mod:`admit.eval.report` with named points, as every
checkout of admit has it there (``scripts/score_setwise.py`` scores older checkouts too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from admit.eval import report

__all__ = ["TARGET_COMPRESSION", "keep_figures", "r_at", "topn_curve"]

TARGET_COMPRESSION = 0.68
"""The compression of the published target (R@68)."""


def r_at(curve: Sequence[tuple[float, float]], comp: float = TARGET_COMPRESSION) -> float:
    """Retained recall at a compression along ``(compression, recall)`` points; 0.0 when none compresses that much."""
    return report.recall_at([(c, r, "") for c, r in curve], comp) or 0.0


def keep_figures(ys: Sequence[np.ndarray], kept: Sequence[np.ndarray]) -> tuple[float, float]:
    """(retained recall, chunk compression) of keep masks over lists with labels ``ys``."""
    rec = float(np.mean([bool(np.all(k[y > 0])) for y, k in zip(ys, kept, strict=True)]))
    return rec, 1.0 - sum(int(k.sum()) for k in kept) / sum(int(y.size) for y in ys)


def topn_curve(ys: Sequence[np.ndarray], scores: Sequence[np.ndarray]) -> list[tuple[float, float]]:
    """``(compression, recall)`` of keeping the top N by score, for N from 1 to the longest list, after (0, 1)."""
    pts = [(0.0, 1.0)]
    for n in range(1, max(int(y.size) for y in ys) + 1):
        kept = []
        for s in scores:
            k = np.zeros(s.size, dtype=bool)
            k[np.argsort(-s, kind="stable")[:n]] = True
            kept.append(k)
        r, c = keep_figures(ys, kept)
        pts.append((c, r))
    return pts
