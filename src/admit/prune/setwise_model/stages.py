"""Propagation features: what a chunk is worth given what the previous stage believes about the others.

Stage 0 reads the within-list features alone. Every later stage adds, for chunk ``j``, evidence propagated
from the chunks the previous stage believes in: ``max_i p_i * link[i, j]`` for every link (and the same
weighted by ``i``'s rank), the dense similarity to the question expanded with the probability-weighted
other chunks (the next hop of a chain), the question words and entities ``j`` adds beyond the stronger
chunks (the second entity of a comparison), redundancy with a stronger chunk, and the previous stage's
logit and rank. Iterating this is the soft beam search over hops.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from admit.prune.setwise_model.features import BASE_FEATURES, QUESTION_FEATURES, Prepared, rank_inv, zscore
from admit.prune.setwise_model.links import LINK_NAMES

__all__ = ["NONLINEAR", "STAGE_EXTRA", "stage_feature_names", "stage_features"]

FloatArray = npt.NDArray[np.float64]

NONLINEAR: tuple[str, ...] = ("dense_z_sq", "dense_z_pos", "dense_top1")
STAGE_EXTRA: tuple[str, ...] = (
    *(f"prop_{name}" for name in LINK_NAMES),
    *(f"rankprop_{name}" for name in LINK_NAMES),
    "dup_of_stronger",
    "novel_q_cov_top1",
    "novel_q_ent_top1",
    "novel_q_cov_strong",
    "novel_q_ent_strong",
    "cmp_title_in_question",
    "cmp_q_entity_cov",
    "cmp_novel_q_ent_top1",
    "soft_expand_z",
    "prev_logit",
    "prev_rank_inv",
    "prev_rel",
    "prev_mass_others",
)


def stage_feature_names(stage: int) -> tuple[str, ...]:
    """The feature names a stage reads: 0 for the first stage, >= 1 for propagation stages."""
    names = BASE_FEATURES + QUESTION_FEATURES + NONLINEAR
    return names if stage == 0 else names + STAGE_EXTRA


def _novel_coverage(prep: Prepared, p: FloatArray) -> FloatArray:
    """Share of the question's words (all / entity words) a chunk adds beyond stronger chunks.

    "top1": beyond the most probable other chunk; "strong": beyond every other chunk with a higher
    probability that is itself >= 0.3 (or the top one).
    """
    n = prep.n
    out = np.zeros((n, 4), dtype=np.float64)
    hits = prep.q_hits
    if n == 0 or hits.shape[1] == 0:
        return out
    ent = prep.q_is_entity
    n_all = float(hits.shape[1])
    n_ent = float(ent.sum())
    order = np.argsort(-p, kind="stable")
    first = int(order[0])
    idx = np.arange(n)
    # each chunk's top other chunk: the most probable, or the second for the most probable itself
    top = np.full(n, first)
    top[first] = int(order[1]) if n > 1 else first
    new_top = np.where((top != idx)[:, None], hits * (1.0 - hits[top]), hits)
    # strong[j, i]: chunk i is more probable than j and itself >= 0.3 (or the top one); the hits are 0/1, so the
    # words some strong chunk holds are those whose count over the strong chunks is positive
    strong = (p[None, :] > p[:, None]) & ((p >= 0.3) | (idx == first))[None, :] & (idx[None, :] != idx[:, None])
    covered = ((strong.astype(np.float64) @ hits) > 0).astype(np.float64)
    new_strong = hits * (1.0 - covered)
    out[:, 0] = new_top.sum(axis=1) / n_all
    out[:, 2] = new_strong.sum(axis=1) / n_all
    if n_ent > 0:
        out[:, 1] = (new_top * ent).sum(axis=1) / n_ent
        out[:, 3] = (new_strong * ent).sum(axis=1) / n_ent
    return out


def stage_features(prep: Prepared, prev: FloatArray | None) -> FloatArray:
    """Builds the feature matrix of one stage.

    Args:
        prep: The prepared list.
        prev: The previous stage's probabilities, or None for stage 0.

    Returns:
        Array of shape (n, len(stage_feature_names(stage))).
    """
    n = prep.n
    qf = np.repeat(prep.qfeat[None, :], n, axis=0)
    dz = prep.feature("dense_z")
    top1 = (prep.feature("dense_rank_inv") >= 1.0).astype(np.float64)
    feats = np.hstack([prep.base, qf, np.column_stack([dz**2, np.maximum(dz, 0.0), top1]).reshape(n, 3)])
    if prev is None:
        return feats
    extra = np.zeros((n, len(STAGE_EXTRA)), dtype=np.float64)
    if n:
        p = np.clip(prev, 1e-6, 1 - 1e-6)
        rinv = rank_inv(p)
        nl = len(LINK_NAMES)
        for k in range(nl):
            extra[:, k] = (p[:, None] * prep.links[k]).max(axis=0)
            extra[:, nl + k] = (rinv[:, None] * prep.links[k]).max(axis=0)
        sim = prep.vecs @ prep.vecs.T
        stronger = p[:, None] > p[None, :]
        extra[:, 2 * nl] = np.where(stronger, sim, -1.0).max(axis=0).clip(min=0.0)
        weighted = p[:, None] * prep.vecs
        total = weighted.sum(axis=0)
        psum = float(p.sum())
        soft = np.zeros(n, dtype=np.float64)
        for j in range(n):
            other = (total - weighted[j]) / max(psum - p[j], 1e-6)
            e = prep.qvec + other
            ne = float(np.linalg.norm(e))
            soft[j] = float(prep.vecs[j] @ e) / ne if ne > 0 else 0.0
        extra[:, 2 * nl + 1 : 2 * nl + 5] = _novel_coverage(prep, p)
        cmp = max(prep.qfeature("q_comparison"), prep.qfeature("q_or_choice"))
        extra[:, 2 * nl + 5] = cmp * prep.feature("title_in_question")
        extra[:, 2 * nl + 6] = cmp * prep.feature("q_entity_cov")
        extra[:, 2 * nl + 7] = cmp * extra[:, 2 * nl + 2]
        extra[:, 2 * nl + 8] = zscore(soft)
        extra[:, 2 * nl + 9] = np.log(p / (1 - p))
        extra[:, 2 * nl + 10] = rinv
        extra[:, 2 * nl + 11] = p / float(p.max())
        extra[:, 2 * nl + 12] = psum - p
    return np.hstack([feats, extra])
