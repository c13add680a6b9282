"""Fitting the staged tree model of :mod:`admit.prune.setwise_model` on prepared lists.

Stage k reads stage k-1's out-of-fold probabilities; the coverage stage reads the last stage's out-of-fold
probabilities; the grade cut points are chosen on those same out-of-fold values (training data only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from admit.prune import setwise_model as sm
from fitlib.curves import keep_figures
from fitlib.data import family
from fitlib.setwise_data import Question

__all__ = ["GRADE_COMPRESSION", "Fitted", "TreeParams", "choose_cuts", "eval_keep", "fit_all"]

#: Mean training compression each grade threshold is placed at (grades 2, 3, 4, 5).
GRADE_COMPRESSION = (0.55, 0.68, 0.76, 0.85)

ByDataset = dict[str, tuple[list[Question], list[np.ndarray]]]


@dataclass
class TreeParams:
    """The gradient-boosted trees' settings."""

    stages: int = 2
    iters: int = 200
    lr: float = 0.08
    leaves: int = 15
    min_leaf: int = 40
    l2: float = 1.0
    folds: int = 3
    cov_iters: int = 200


def _hgb(p: TreeParams, iters: int | None = None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=iters or p.iters,
        learning_rate=p.lr,
        max_leaf_nodes=p.leaves,
        min_samples_leaf=p.min_leaf,
        l2_regularization=p.l2,
        early_stopping=False,
        random_state=0,
    )


def _split(flat: np.ndarray, qs: Sequence[Question]) -> list[np.ndarray]:
    out, k = [], 0
    for q in qs:
        out.append(flat[k : k + q.n])
        k += q.n
    return out


def eval_keep(qs: Sequence[Question], kept: Sequence[np.ndarray]) -> tuple[float, float]:
    """(retained recall, chunk compression) of keep masks."""
    return keep_figures([q.y for q in qs], kept)


def fit_stages(train: Sequence[Question], p: TreeParams) -> tuple[list[sm.TreeEnsemble], list[np.ndarray]]:
    """Fits the stages; returns them and the last stage's out-of-fold probabilities per question."""
    y = np.concatenate([q.y for q in train])
    fold = np.concatenate([np.full(q.n, i % p.folds) for i, q in enumerate(train)])
    prev: list[np.ndarray | None] = [None] * len(train)
    stages: list[sm.TreeEnsemble] = []
    oof = np.zeros(len(y))
    for s in range(p.stages):
        names = sm.stage_feature_names(0 if s == 0 else 1)
        x = np.vstack([sm.stage_features(q.prep, pr) for q, pr in zip(train, prev, strict=True)])
        stages.append(sm.TreeEnsemble.from_sklearn(_hgb(p).fit(x, y), names))
        for f in range(p.folds):
            tr = fold != f
            oof[~tr] = _hgb(p).fit(x[tr], y[tr]).predict_proba(x[~tr])[:, 1]
        prev = list(_split(oof.copy(), train))
    return stages, [pr for pr in prev if pr is not None]


def complete_targets(q: Question, probs: np.ndarray) -> np.ndarray:
    """1 for the ranks r at which the top-r set (by ``probs``) holds every required chunk."""
    order = np.argsort(-probs, kind="stable")
    pos = np.empty(probs.size, dtype=np.int64)
    pos[order] = np.arange(probs.size)
    last = int(pos[q.y > 0].max()) + 1 if q.y.sum() > 0 else 1
    return (np.arange(1, probs.size + 1) >= last).astype(float)


def fit_coverage(qs: Sequence[Question], probs: Sequence[np.ndarray], p: TreeParams) -> sm.TreeEnsemble:
    """Fits P(top-r set complete) over (question, r) pairs from out-of-fold chunk probabilities."""
    x = np.vstack([sm.coverage_features(pr, q.prep.qfeat) for q, pr in zip(qs, probs, strict=True)])
    y = np.concatenate([complete_targets(q, pr) for q, pr in zip(qs, probs, strict=True)])
    return sm.TreeEnsemble.from_sklearn(_hgb(p, p.cov_iters).fit(x, y), sm.COVERAGE_FEATURES)


def coverage_oof(qs: Sequence[Question], probs: Sequence[np.ndarray], p: TreeParams) -> list[np.ndarray]:
    """Out-of-fold coverage-before values of the training questions (for choosing cut points)."""
    out: list[np.ndarray] = [np.zeros(0)] * len(qs)
    for f in range(p.folds):
        tr = [i for i in range(len(qs)) if i % p.folds != f]
        cov = fit_coverage([qs[i] for i in tr], [probs[i] for i in tr], p)
        model = sm.SetwiseModel(stages=(), coverage=cov)
        for i in range(len(qs)):
            if i % p.folds == f:
                out[i] = sm.coverage_before(probs[i], model.complete_probs(probs[i], qs[i].prep.qfeat))
    return out


def choose_cuts(by_ds: ByDataset) -> tuple[float, float, float, float]:
    """Cut points at which the *mean* training compression (over datasets) is GRADE_COMPRESSION."""
    grid = np.round(np.arange(0.02, 0.99951, 0.0025), 5)
    mean_comp = np.array([np.mean([eval_keep(qs, [c < t for c in cv])[1] for qs, cv in by_ds.values()]) for t in grid])
    cuts = []
    for target in GRADE_COMPRESSION:  # compression falls as the level rises
        ok = grid[mean_comp >= target]
        cuts.append(float(ok.max()) if ok.size else float(grid[0]))
    c = sorted(set(cuts), reverse=True)
    while len(c) < 4:
        c.append(round(c[-1] / 2, 5))
    return c[0], c[1], c[2], c[3]


@dataclass
class Fitted:
    """A fitted model and the out-of-fold coverage values its cut points were chosen on."""

    model: sm.SetwiseModel
    train_oof_cov: ByDataset


def fit_all(train: Sequence[Question], p: TreeParams, meta: dict[str, Any] | None = None) -> Fitted:
    """Stages, coverage stage and cut points, fitted on the training questions."""
    stages, oof = fit_stages(train, p)
    cov = fit_coverage(train, oof, p)
    cov_oof = coverage_oof(train, oof, p)
    by_ds: ByDataset = {}
    for q, c in zip(train, cov_oof, strict=True):
        fam = family(q.dataset) if not q.dataset.startswith("aug_") else q.dataset
        by_ds.setdefault(fam, ([], []))
        by_ds[fam][0].append(q)
        by_ds[fam][1].append(c)
    cuts = choose_cuts(by_ds)
    model = sm.SetwiseModel(stages=tuple(stages), coverage=cov, cuts=cuts, meta=meta or {})
    return Fitted(model, by_ds)
