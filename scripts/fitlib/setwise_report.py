"""Scoring a setwise model out of sample: the printed table, the figures stored in ``meta`` and the plot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from admit.prune import setwise_model as sm
from admit.prune.setwise_model.scorer import identifier_grades
from fitlib.curves import TARGET_COMPRESSION, r_at, topn_curve
from fitlib.setwise_data import Question
from fitlib.setwise_fit import eval_keep

__all__ = ["CURVES", "MARGIN_LEVELS", "TARGET_RECALL", "plot", "report", "score_model"]

TARGET_RECALL = 0.96
#: Compression levels at which the pruner must be at or above the best top-N baseline (issue: 50% to 80%).
MARGIN_LEVELS = tuple(round(x, 2) for x in np.arange(0.50, 0.8001, 0.05))
#: Curves of the last report() calls, by title then dataset, for --plot.
CURVES: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {}

Curve = list[tuple[float, float]]


def score_model(model: sm.SetwiseModel, qs: Sequence[Question]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Final probabilities and grades (with the identifier rule, as the scorer applies it)."""
    probs, grades = [], []
    for q in qs:
        pr = model.predict(q.prep)[-1]
        cov = sm.coverage_before(pr, model.complete_probs(pr, q.prep.qfeat))
        g = np.array(sm.grades(pr, cov, model.cuts, model.keep_bounds))
        if q.prep.ident_hit.any():
            g = np.array(identifier_grades(g.tolist(), q.prep.ident_hit, q.prep.ident_other))
        probs.append(pr)
        grades.append(g)
    return probs, grades


def _baselines(qs: Sequence[Question]) -> dict[str, Curve]:
    """Top-N curves of the dense, BM25 and hybrid scores the features hold."""
    ys = [q.y for q in qs]
    return {
        "dense": topn_curve(ys, [q.prep.dense for q in qs]),
        "bm25": topn_curve(ys, [q.prep.bm25 for q in qs]),
        "hybrid": topn_curve(ys, [q.prep.feature("hybrid_rank_inv") + 1e-6 * q.prep.dense for q in qs]),
    }


def _row(model: sm.SetwiseModel, qs: Sequence[Question]) -> tuple[dict[str, Any], str, Curve, dict[str, Curve]]:
    """One dataset's figures, its printed line, the model's grade curve and the baselines' curves."""
    probs, grades = score_model(model, qs)
    pts = [eval_keep(qs, [g >= t for g in grades]) for t in range(1, 6)]
    curve = [(c, r) for r, c in pts]
    base = _baselines(qs)
    margin = min(r_at(curve, lvl) - max(r_at(b, lvl) for b in base.values()) for lvl in MARGIN_LEVELS)
    row = {
        "questions": len(qs),
        **{f"thr{t}": {"recall": round(r, 4), "compression": round(c, 4)} for t, (r, c) in enumerate(pts, 1)},
        "R@68": round(r_at(curve), 4),
        "model_topN_R@68": round(r_at(topn_curve([q.y for q in qs], probs)), 4),
        **{f"{k}_topN_R@68": round(r_at(v), 4) for k, v in base.items()},
        "min_margin_50_80": round(margin, 4),
    }
    cells = " ".join(f"{r:.3f}/{c:.3f}" for r, c in pts[1:])
    line = (
        f"{cells}  {row['R@68']:.3f} {row['model_topN_R@68']:.3f} {row['dense_topN_R@68']:.3f}"
        f" {row['bm25_topN_R@68']:.3f} {row['hybrid_topN_R@68']:.3f}  {margin:+.3f}"
    )
    return row, line, curve, base


def report(model: sm.SetwiseModel, sets: dict[str, list[Question]], title: str) -> dict[str, Any]:
    """Print and return the figures of each dataset; keep the curves in :data:`CURVES` under the title."""
    print(f"\n{title}")
    print(
        f"{'dataset':30s} {'thr2':>12s} {'thr3':>12s} {'thr4':>12s} {'thr5':>12s}  R@68  topN  dense  bm25  hybrid"
        "  margin50-80"
    )
    out: dict[str, Any] = {}
    CURVES[title] = {}
    for name, qs in sets.items():
        row, line, curve, base = _row(model, qs)
        CURVES[title][name] = {"setwise": sorted([(0.0, 1.0), *curve]), **base}
        out[name] = row
        print(f"{name:30s} {line}", flush=True)
    return out


_STYLE = {
    "setwise": ("#d62728", "o-"),
    "dense": ("#1f77b4", "--"),
    "bm25": ("#2ca02c", ":"),
    "hybrid": ("#9467bd", "-."),
}


def plot(curves: dict[str, dict[str, Curve]], path: Path, title: str) -> None:
    """Retained recall vs chunk compression, one panel per dataset (setwise at its grade thresholds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves)
    cols = min(4, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        for kind, pts in curves[name].items():
            color, ls = _STYLE[kind]
            xs, ys = zip(*sorted(pts), strict=True)
            ax.plot(xs, ys, ls, color=color, label=kind if kind == "setwise" else f"{kind} top-N", ms=4)
        ax.axvline(TARGET_COMPRESSION, color="grey", lw=0.8)
        ax.axhline(TARGET_RECALL, color="grey", lw=0.8, ls=":")
        ax.set_title(name, fontsize=10)
        ax.set_xlim(0.3, 0.95)
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("chunk compression")
        ax.set_ylabel("retained recall")
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")
