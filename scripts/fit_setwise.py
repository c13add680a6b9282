#!/usr/bin/env python3
"""Fit admit's ``setwise`` model on a training folder and score it out of sample on a validation folder.

Usage::

    python3 scripts/fit_setwise.py --train ../shared/train --valid ../shared/data \\
        [--out src/admit/modelfiles/setwise.json] [--ship train+valid|train] [--lodo] [--no-write]

1. Reads every ``*.jsonl`` / ``*.jsonl.gz`` file of both folders (the record format of ``../shared/data``;
   labels are read for fitting and scoring only, never stored) and adds augmented training lists made from
   the *training* records alone: the single-hop sub-questions of MuSiQue decompositions and of 2Wiki evidence
   triples (one required chunk each, so the model also learns questions that need one chunk), and MuSiQue lists
   re-sampled to 10 candidates.
2. Embeds every question and passage with all-MiniLM-L6-v2 (vectors cached under ``--cache-dir``) and computes
   the features of :mod:`admit.prune.setwise_model`.
3. Fits the staged tree model on the training lists: stage k reads stage k-1's out-of-fold probabilities; the
   coverage stage reads the last stage's out-of-fold probabilities; the grade cut points are chosen on those
   same out-of-fold values (training data only): grade 3 at the level whose mean compression over the training
   datasets is 68%, grades 2 / 4 / 5 at the levels for 55% / 76% / 85%.
4. Prints, per validation dataset, retained recall and chunk compression at grade thresholds 1-5, R@68 (recall at
   68% chunk compression, interpolated along the grade thresholds, as ``admit prune`` output is scored), the
   model's top-N R@68, and the dense / BM25 / hybrid top-N baselines, in the same run.
5. ``--lodo``: leave one dataset family out (fit on every other family of train + valid, score on it).
6. Writes the model JSON (with ``--ship train+valid``, the default, refit on both folders; the figures printed
   and stored in ``meta`` are those of the train-only fit scored on the validation folder).

Needs numpy, scikit-learn and the ``admit[fit]`` extras.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pickle
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from admit.backends.embedders.base import text_key  # noqa: E402
from admit.eval.report import recall_at as _report_recall_at  # noqa: E402
from admit.prune import setwise_model as sm  # noqa: E402
from admit.prune.setwise_model.scorer import identifier_grades  # noqa: E402

TARGET_RECALL = 0.96
TARGET_COMPRESSION = 0.68
#: Mean training compression each grade threshold is placed at (grades 2, 3, 4, 5).
GRADE_COMPRESSION = (0.55, 0.68, 0.76, 0.85)


# ------------------------------------------------------------------------------------------- data


def family(name: str) -> str:
    """Dataset family of a file name (``train_musique`` -> ``musique``), for leave-one-out."""
    for fam in ("hotpotqa_fullwiki", "hotpotqa", "musique", "2wikimultihopqa", "rhdh_docs"):
        if fam in name:
            return fam
    return name.split("_", 1)[-1]


def read_folder(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Every JSONL(.gz) file of a folder, by file stem."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.jsonl*")):
        stem = path.name.split(".jsonl")[0]
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            out[stem] = [json.loads(line) for line in fh if line.strip()]
    return out


_TEMPLATES = {
    "date of birth": "When was {s} born?",
    "date of death": "When did {s} die?",
    "place of birth": "Where was {s} born?",
    "place of death": "Where did {s} die?",
    "country of citizenship": "What country is {s} a citizen of?",
    "director": "Who directed {s}?",
    "father": "Who is the father of {s}?",
    "mother": "Who is the mother of {s}?",
    "spouse": "Who is the spouse of {s}?",
    "publication date": "When was {s} published?",
    "country": "Which country is {s} in?",
    "performer": "Who performed {s}?",
    "founded by": "Who founded {s}?",
    "inception": "When was {s} founded?",
}


def augment(train: dict[str, list[dict[str, Any]]], seed: int) -> dict[str, list[dict[str, Any]]]:
    """Augmented lists made from the training records only (see the module docstring)."""
    rng = random.Random(seed)
    single_mus: list[dict[str, Any]] = []
    single_wiki: list[dict[str, Any]] = []
    resampled: list[dict[str, Any]] = []
    for name, rows in train.items():
        for r in rows:
            meta = r.get("meta") or {}
            answers: list[str] = []
            for k, d in enumerate(meta.get("decomposition") or []):
                q = str(d.get("question", ""))
                for i, a in enumerate(answers, start=1):
                    q = q.replace(f"#{i}", a)
                answers.append(str(d.get("answer", "")))
                if "#" not in q and d.get("support") in r["required"]:
                    single_mus.append({**r, "id": f"{r['id']}::sub{k}", "question": q, "required": [d["support"]]})
            titles = {c.get("title", ""): c["id"] for c in r["candidates"]}
            for k, ev in enumerate(meta.get("evidences") or []):
                if len(ev) != 3:
                    continue
                s, rel, _ = ev
                cid = titles.get(s)
                if cid in r["required"]:
                    q = _TEMPLATES.get(rel, "What is the " + str(rel) + " of {s}?").format(s=s)
                    single_wiki.append({**r, "id": f"{r['id']}::ev{k}", "question": q, "required": [cid]})
            if family(name) == "musique":
                req = set(r["required"])
                gold = [c for c in r["candidates"] if c["id"] in req]
                dis = [c for c in r["candidates"] if c["id"] not in req]
                if len(dis) > 10 - len(gold):
                    for k in range(2):
                        cand = gold + rng.sample(dis, 10 - len(gold))
                        rng.shuffle(cand)
                        resampled.append({**r, "id": f"{r['id']}::rs{k}", "candidates": cand})
    return {
        "aug_single_musique": single_mus,
        "aug_single_2wikimultihopqa": single_wiki,
        "aug_resample_musique": resampled,
    }


class VectorCache:
    """MiniLM vectors by text hash, persisted as one ``.npz``; misses are embedded in large batches."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vecs: dict[str, np.ndarray] = {}
        if path.exists():
            z = np.load(path)
            self.vecs = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
        self._model: Any = None

    def fill(self, texts: Sequence[str]) -> None:
        todo = sorted(
            {text_key(t): t for t in texts if text_key(t) not in self.vecs}.items(), key=lambda kv: len(kv[1])
        )
        if not todo:
            return
        if self._model is None:
            from admit.backends.embedders.minilm import MiniLMEmbedder

            self._model = MiniLMEmbedder(batch_size=64)
        t0 = time.time()
        for s in range(0, len(todo), 2048):
            part = todo[s : s + 2048]
            for (k, _), v in zip(part, self._model.embed([t for _, t in part]), strict=True):
                self.vecs[k] = v
            print(f"  embedded {s + len(part)}/{len(todo)} ({time.time() - t0:.0f}s)", file=sys.stderr)
            self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(self.vecs)), vecs=np.stack(list(self.vecs.values())).astype(np.float32))
        os.replace(tmp, self.path)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.fill(texts)
        return np.stack([self.vecs[text_key(t)] for t in texts])


@dataclass
class Question:
    """One labelled list with its prepared features."""

    qid: str
    dataset: str
    prep: sm.Prepared
    y: np.ndarray

    @property
    def n(self) -> int:
        return int(self.y.size)


def units(rows: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        out.append(sm.question_text(r["question"]))
        for c in r["candidates"]:
            out.extend(p or "-" for p in sm.passages(c.get("title") or "", c.get("text") or ""))
    return out


def prepare_set(name: str, rows: Sequence[dict[str, Any]], vc: VectorCache, cache_dir: Path) -> list[Question]:
    """Prepared questions of one dataset (pickled by feature-code hash and record ids)."""
    code = hashlib.sha1()
    for mod in ("text", "features", "links"):
        code.update((ROOT / "src/admit/prune/setwise_model" / f"{mod}.py").read_bytes())
    code.update((ROOT / "src/admit/passages.py").read_bytes())
    ids = hashlib.sha1("|".join(r["id"] for r in rows).encode()).hexdigest()[:10]
    pkl = cache_dir / f"prep_{name}_{code.hexdigest()[:10]}_{ids}.pkl"
    if pkl.exists():
        with open(pkl, "rb") as fh:
            out: list[Question] = pickle.load(fh)
            return out
    vc.fill(units(rows))
    out = []
    for r in rows:
        items = [
            sm.SetwiseItem(id=c["id"], title=c.get("title") or "", text=c.get("text") or "") for c in r["candidates"]
        ]
        req = set(r["required"])
        y = np.array([1.0 if c["id"] in req else 0.0 for c in r["candidates"]])
        out.append(Question(r["id"], name, sm.prepare(r["question"], items, vc), y))
    with open(pkl, "wb") as fh:
        pickle.dump(out, fh)
    return out


# ---------------------------------------------------------------------------------------- fitting


@dataclass
class FitParams:
    stages: int = 2
    iters: int = 200
    lr: float = 0.08
    leaves: int = 15
    min_leaf: int = 40
    l2: float = 1.0
    folds: int = 3
    cov_iters: int = 200


def _hgb(p: FitParams, iters: int | None = None) -> Any:
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


def fit_stages(train: Sequence[Question], p: FitParams) -> tuple[list[sm.TreeEnsemble], list[np.ndarray]]:
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


def fit_coverage(qs: Sequence[Question], probs: Sequence[np.ndarray], p: FitParams) -> sm.TreeEnsemble:
    """Fits P(top-r set complete) over (question, r) pairs from out-of-fold chunk probabilities."""
    x = np.vstack([sm.coverage_features(pr, q.prep.qfeat) for q, pr in zip(qs, probs, strict=True)])
    y = np.concatenate([complete_targets(q, pr) for q, pr in zip(qs, probs, strict=True)])
    return sm.TreeEnsemble.from_sklearn(_hgb(p, p.cov_iters).fit(x, y), sm.COVERAGE_FEATURES)


def coverage_oof(qs: Sequence[Question], probs: Sequence[np.ndarray], p: FitParams) -> list[np.ndarray]:
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


def eval_keep(qs: Sequence[Question], kept: Sequence[np.ndarray]) -> tuple[float, float]:
    """(retained recall, chunk compression) of keep masks."""
    rec = float(np.mean([bool(np.all(k[q.y > 0])) for q, k in zip(qs, kept, strict=True)]))
    return rec, 1.0 - sum(int(k.sum()) for k in kept) / sum(q.n for q in qs)


def choose_cuts(by_ds: dict[str, tuple[list[Question], list[np.ndarray]]]) -> tuple[float, float, float, float]:
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
    model: sm.SetwiseModel
    train_oof_cov: dict[str, tuple[list[Question], list[np.ndarray]]]


def fit_all(train: Sequence[Question], p: FitParams, meta: dict[str, Any] | None = None) -> Fitted:
    stages, oof = fit_stages(train, p)
    cov = fit_coverage(train, oof, p)
    cov_oof = coverage_oof(train, oof, p)
    by_ds: dict[str, tuple[list[Question], list[np.ndarray]]] = {}
    for q, c in zip(train, cov_oof, strict=True):
        fam = family(q.dataset) if not q.dataset.startswith("aug_") else q.dataset
        by_ds.setdefault(fam, ([], []))
        by_ds[fam][0].append(q)
        by_ds[fam][1].append(c)
    cuts = choose_cuts(by_ds)
    model = sm.SetwiseModel(stages=tuple(stages), coverage=cov, cuts=cuts, meta=meta or {})
    return Fitted(model, by_ds)


# ------------------------------------------------------------------------------------- evaluation


def recall_at(curve: Sequence[tuple[float, float]], comp: float = TARGET_COMPRESSION) -> float:
    """Retained recall at a compression, interpolated on (compression, recall) points (admit's own R@68)."""
    return _report_recall_at([(c, r, "") for c, r in curve], comp) or 0.0


def topn_curve(qs: Sequence[Question], scores: Sequence[np.ndarray]) -> list[tuple[float, float]]:
    nmax = max(q.n for q in qs)
    pts = [(0.0, 1.0)]
    for n in range(1, nmax + 1):
        kept = []
        for s in scores:
            k = np.zeros(s.size, dtype=bool)
            k[np.argsort(-s, kind="stable")[:n]] = True
            kept.append(k)
        r, c = eval_keep(qs, kept)
        pts.append((c, r))
    return pts


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


#: Compression levels at which the pruner must be at or above the best top-N baseline (issue: 50% to 80%).
MARGIN_LEVELS = tuple(round(x, 2) for x in np.arange(0.50, 0.8001, 0.05))
#: Curves of the last report() calls, by title then dataset, for --plot.
CURVES: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {}


def report(model: sm.SetwiseModel, sets: dict[str, list[Question]], title: str) -> dict[str, Any]:
    print(f"\n{title}")
    print(
        f"{'dataset':30s} {'thr2':>12s} {'thr3':>12s} {'thr4':>12s} {'thr5':>12s}  R@68  topN  dense  bm25  hybrid"
        "  margin50-80"
    )
    out: dict[str, Any] = {}
    CURVES[title] = {}
    for name, qs in sets.items():
        probs, grades = score_model(model, qs)
        pts = [eval_keep(qs, [g >= t for g in grades]) for t in range(1, 6)]
        curve = [(c, r) for r, c in pts]
        base = {
            "dense": topn_curve(qs, [q.prep.dense for q in qs]),
            "bm25": topn_curve(qs, [q.prep.bm25 for q in qs]),
            "hybrid": topn_curve(qs, [q.prep.feature("hybrid_rank_inv") + 1e-6 * q.prep.dense for q in qs]),
        }
        margin = min(recall_at(curve, lvl) - max(recall_at(b, lvl) for b in base.values()) for lvl in MARGIN_LEVELS)
        row = {
            "questions": len(qs),
            **{f"thr{t}": {"recall": round(r, 4), "compression": round(c, 4)} for t, (r, c) in enumerate(pts, 1)},
            "R@68": round(recall_at(curve), 4),
            "model_topN_R@68": round(recall_at(topn_curve(qs, probs)), 4),
            **{f"{k}_topN_R@68": round(recall_at(v), 4) for k, v in base.items()},
            "min_margin_50_80": round(margin, 4),
        }
        CURVES[title][name] = {"setwise": sorted([(0.0, 1.0), *curve]), **base}
        out[name] = row
        cells = " ".join(f"{r:.3f}/{c:.3f}" for r, c in pts[1:])
        print(
            f"{name:30s} {cells}  {row['R@68']:.3f} {row['model_topN_R@68']:.3f} {row['dense_topN_R@68']:.3f}"
            f" {row['bm25_topN_R@68']:.3f} {row['hybrid_topN_R@68']:.3f}  {margin:+.3f}",
            flush=True,
        )
    return out


def plot(curves: dict[str, dict[str, list[tuple[float, float]]]], path: Path, title: str) -> None:
    """Retained recall vs chunk compression, one panel per dataset (setwise at its grade thresholds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves)
    cols = min(4, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    style = {
        "setwise": ("#d62728", "o-"),
        "dense": ("#1f77b4", "--"),
        "bm25": ("#2ca02c", ":"),
        "hybrid": ("#9467bd", "-."),
    }
    for ax, name in zip(axes.flat, names, strict=False):
        for kind, pts in curves[name].items():
            color, ls = style[kind]
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=str(ROOT.parent / "shared" / "train"))
    ap.add_argument("--valid", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(sm.DEFAULT_MODEL_PATH))
    ap.add_argument("--cache-dir", default="/tmp/setwise_cache")
    ap.add_argument("--ship", choices=("train+valid", "train"), default="train+valid")
    ap.add_argument("--lodo", action="store_true", help="leave-one-dataset-family-out figures")
    ap.add_argument("--no-aug", action="store_true", help="no augmented training lists")
    ap.add_argument("--exclude", default="", help="comma-separated training file stems to leave out")
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.08)
    ap.add_argument("--leaves", type=int, default=15)
    ap.add_argument("--folds", type=int, default=3, help="out-of-fold splits for the stacked stages")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--no-write", action="store_true", help="report only, do not write the model file")
    ap.add_argument(
        "--test-only",
        default="docs_policyqa",
        help="comma-separated training file stems never fitted on, only scored out of sample by the train-only and"
        " the shipped fit (docs_policyqa is research-use text: no shipped model may be fitted on it)",
    )
    ap.add_argument("--drop-features", default="", help="comma-separated base features set to 0 (ablation)")
    ap.add_argument("--train-only-out", default="", help="also write the train-only fit here")
    ap.add_argument("--plot", default="", help="draw the out-of-sample curves (and leave-one-out ones) to this PNG")
    ap.add_argument("--lodo-only", default="", help="comma-separated families: leave out only these with --lodo")
    args = ap.parse_args(argv)
    p = FitParams(stages=args.stages, iters=args.iters, lr=args.lr, leaves=args.leaves, folds=args.folds)
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    vc = VectorCache(cache_dir / "vecs.npz")

    excluded = set(filter(None, args.exclude.split(",")))
    test_only = set(filter(None, args.test_only.split(",")))
    all_train = read_folder(Path(args.train))
    train_rows = {k: v for k, v in all_train.items() if k not in excluded | test_only}
    held_rows = {k: v for k, v in all_train.items() if k in test_only and k not in excluded}
    valid_rows = read_folder(Path(args.valid))
    if not train_rows or not valid_rows:
        print("no data: --train and --valid must hold *.jsonl(.gz) files", file=sys.stderr)
        return 2
    if not args.no_aug:
        train_rows.update(augment(train_rows, args.seed))
    t0 = time.time()
    train = {k: prepare_set(k, v, vc, cache_dir) for k, v in train_rows.items()}
    valid = {k: prepare_set(k, v, vc, cache_dir) for k, v in valid_rows.items()}
    held_out = {k: prepare_set(k, v, vc, cache_dir) for k, v in held_rows.items()}
    print(
        f"prepared {sum(map(len, train.values()))} training and {sum(map(len, valid.values()))} validation lists"
        f" in {time.time() - t0:.0f}s: "
        + ", ".join(f"{k} {len(v)}" for k, v in {**train, **valid}.items())
        + (f"; never fitted on: {', '.join(held_out)}" if held_out else "")
    )
    scored = {**valid, **held_out}
    for name in filter(None, args.drop_features.split(",")):
        col = sm.BASE_FEATURES.index(name)
        for qs in (*train.values(), *scored.values()):
            for q in qs:
                q.prep.base[:, col] = 0.0

    t0 = time.time()
    flat = [q for qs in train.values() for q in qs]
    fitted = fit_all(flat, p)
    print(
        f"fitted on the training folder in {time.time() - t0:.0f}s; cut points {fitted.model.cuts};"
        f" keep bounds {fitted.model.keep_bounds}",
        flush=True,
    )
    held_title = "Fitted on the training folder, scored on the validation folder (out of sample):"
    held = report(fitted.model, scored, held_title)
    if args.train_only_out:
        tpath = Path(args.train_only_out)
        tmeta: dict[str, Any] = {"trained_on": {k: len(v) for k, v in train.items()}, "out_of_sample": held}
        m0 = fitted.model
        m_train = sm.SetwiseModel(
            stages=m0.stages, coverage=m0.coverage, cuts=m0.cuts, meta=tmeta, keep_bounds=m0.keep_bounds
        )
        tpath.write_text(json.dumps(m_train.to_json()) + "\n", encoding="utf-8")
        print(f"wrote the train-only fit to {tpath}")

    lodo: dict[str, Any] = {}
    if args.lodo:
        everything = {**train, **valid}
        only = set(filter(None, args.lodo_only.split(",")))
        for fam in sorted({family(k) for k in everything if not k.startswith("aug_")}):
            if only and fam not in only:
                continue
            rest = [
                q
                for k, qs in everything.items()
                if family(k) != fam and not (k.startswith("aug_") and fam in k)
                for q in qs
            ]
            test = {k: qs for k, qs in everything.items() if family(k) == fam and not k.startswith("aug_")}
            m = fit_all(rest, p).model
            lodo[fam] = report(m, test, f"Leave {fam} out (fitted on every other family of train + valid):")

    if args.plot:
        panels = dict(CURVES[held_title])
        for title, sets in CURVES.items():
            if title.startswith("Leave "):
                panels.update({f"{k} (left out)": v for k, v in sets.items() if k not in valid_rows})
        plot(panels, Path(args.plot), "out of sample: fitted on ../shared/train only (or leaving the family out)")
    if args.no_write:
        return 0
    meta = {
        "embedder": "all-MiniLM-L6-v2",
        "passage_words": sm.PASSAGE_WORDS,
        "fit": {"stages": p.stages, "iters": p.iters, "lr": p.lr, "leaves": p.leaves, "augmented": not args.no_aug},
        "trained_on": {k: len(v) for k, v in (train | (valid if args.ship == "train+valid" else {})).items()},
        "out_of_sample": {"fitted_on": sorted(train), "scored_on": held},
        "leave_one_family_out": lodo,
        "cut_rule": "grade g (2..5) when coverage_before < cuts[g-2]; cuts put the mean out-of-fold training"
        f" compression at {GRADE_COMPRESSION} for grades 2..5; each threshold's keep count clamped to keep_bounds",
    }
    meta["never_fitted_on"] = sorted(held_out)
    ship = [q for qs in train.values() for q in qs]
    if args.ship == "train+valid":
        ship += [q for qs in valid.values() for q in qs]
    t0 = time.time()
    out = Path(args.out)
    if args.ship == "train+valid":
        model = fit_all(ship, p, meta).model
        print(f"refitted on train + valid in {time.time() - t0:.0f}s; cut points {model.cuts}")
        if held_out:
            meta["never_fitted_on_scores"] = report(model, held_out, "The shipped fit on files it never saw:")
    else:
        model = sm.SetwiseModel(
            stages=fitted.model.stages,
            coverage=fitted.model.coverage,
            cuts=fitted.model.cuts,
            meta=meta,
            keep_bounds=fitted.model.keep_bounds,
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
