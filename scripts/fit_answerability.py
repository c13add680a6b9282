#!/usr/bin/env python3
"""Fit admit's answerability models and score them out of sample.

Usage::

    python3 scripts/fit_answerability.py --train ../shared/train --valid ../shared/data \\
        [--per-file 120] [--out src/admit/prune/data/answerability.json] [--no-write]

Every labelled list gives two cases: the list as retrieved (answerable: its gold chunks are in it) and the list
with every gold chunk removed (not answerable). The setwise pruner grades each list as it would in a request
(threshold 3, keep_top_k 1); the ``setwise`` model reads the kept chunks' features
(:func:`admit.prune.answerability.features`), the ``lexical`` model the whole list's lexical features (what
strategy ``none`` admits). A logistic regression (L2, standardised features) is fitted on the training folder and
scored on the validation folder, whose questions it never saw: precision and recall of "not answered" per file.
Only coefficients, scalings and figures are written; never a label.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

from fit_setwise import VectorCache, read_folder  # noqa: E402

from admit.prune import answerability as an  # noqa: E402
from admit.prune import setwise_model as sm  # noqa: E402

TRAIN_FILES = (
    "devsplit_hotpotqa_distractor",
    "train_hotpotqa_distractor",
    "train_musique",
    "train_2wikimultihopqa",
    "docs_gorilla_apibench",
    "docs_gorilla_apizoo",
    "docs_restbench",
    "docs2_medquad",
    "docs2_doc2dial",
)


def cases(
    row: dict[str, Any], scorer: sm.SetwiseScorer, rng: random.Random
) -> list[tuple[str, dict[str, float] | None, dict[str, float], int]]:
    """(question, setwise features, lexical features, label) for lists with and without their gold chunks.

    The two lists of a pair have the same length (the answerable one loses as many random distractors as the
    other loses gold chunks), so no feature can tell them apart by size; a second pair is short (the gold and one
    distractor against that many distractors), as a framework's top-2 or top-3 hands over; a third is the gold
    alone against as many distractors alone.
    """
    cands = row["candidates"]
    gold = set(row["required"])
    others = [c for c in cands if c["id"] not in gold]
    k = len(gold & {c["id"] for c in cands})
    if k == 0 or len(others) < k + 1:
        return []
    drop = {c["id"] for c in rng.sample(others, k)}
    full_yes = [c for c in cands if c["id"] not in drop]
    short_no = rng.sample(others, k + 1)
    short_yes = [c for c in cands if c["id"] in gold] + [rng.choice(others)]
    rng.shuffle(short_yes)
    out = []
    gold_only = [c for c in cands if c["id"] in gold]
    pairs = ((1, full_yes), (0, others), (1, short_yes), (0, short_no), (1, gold_only), (0, rng.sample(others, k)))
    for label, keep in pairs:
        if not keep:
            continue
        items = [sm.SetwiseItem(id=c["id"], title=c.get("title") or "", text=c.get("text") or "") for c in keep]
        s = scorer.score(row["question"], items)
        best = int(np.argmax(s.probs))
        kept = [j for j in range(len(items)) if s.grades[j] >= 3 or j == best]
        texts = [f"{items[j].title}\n{items[j].text}" for j in kept]
        fs = an.features(
            row["question"],
            texts,
            dense=[s.dense[j] for j in kept],
            probs=[s.probs[j] for j in kept],
            expected_needed=s.expected_needed,
        )
        fl = an.features(row["question"], [f"{it.title}\n{it.text}" for it in items])
        # the setwise model is used only on lists of MIN_SETWISE_LIST or more (an.assess): fit it on those
        out.append((row["question"], fs if len(items) >= an.MIN_SETWISE_LIST else None, fl, label))
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 400) -> tuple[np.ndarray, float]:
    """Newton's method on the L2-regularised log loss; returns (coef, bias) of standardised features."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        g = xb.T @ (p - y) + reg * w
        h = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


def figures(model: an.AnswerabilityModel, rows: Sequence[tuple[dict[str, float], int]]) -> dict[str, float]:
    """Precision and recall of "not answered" (and accuracy, Brier score) of a model on labelled cases."""
    ps = np.array([model.probability(f) for f, _ in rows])
    y = np.array([lab for _, lab in rows])
    no = ps < model.threshold
    tp = int((no & (y == 0)).sum())
    prec = tp / max(1, int(no.sum()))
    rec = tp / max(1, int((y == 0).sum()))
    return {
        "cases": len(rows),
        "not_answered_precision": round(prec, 4),
        "not_answered_recall": round(rec, 4),
        "answered_kept": round(float(((~no) & (y == 1)).sum() / max(1, (y == 1).sum())), 4),
        "accuracy": round(float((no == (y == 0)).mean()), 4),
        "brier": round(float(((ps - y) ** 2).mean()), 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", default="../shared/train")
    ap.add_argument("--valid", default="../shared/data")
    ap.add_argument("--per-file", type=int, default=120)
    ap.add_argument("--valid-per-file", type=int, default=150)
    ap.add_argument("--cache-dir", default="/tmp/answer_cache")
    ap.add_argument("--out", default=str(an.DEFAULT_PATH))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--max-false-alarm", type=float, default=0.1)
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    vc = VectorCache(cache / "vecs.npz")
    rng = random.Random(20261201)
    train_all = read_folder(Path(args.train))
    train = {k: rng.sample(v, min(args.per_file, len(v))) for k, v in train_all.items() if k in TRAIN_FILES}
    valid_all = read_folder(Path(args.valid))
    valid = {k: rng.sample(v, min(args.valid_per_file, len(v))) for k, v in valid_all.items()}
    texts = []
    for rows in (*train.values(), *valid.values()):
        for r in rows:
            texts.append(sm.question_text(r["question"]))
            for c in r["candidates"]:
                texts.extend(p or "-" for p in sm.passages(c.get("title") or "", c.get("text") or ""))
    vc.fill(texts)
    scorer = sm.SetwiseScorer(embedder=vc)  # type: ignore[arg-type]
    data: dict[str, dict[str, list[tuple[dict[str, float], int]]]] = {"setwise": {}, "lexical": {}}
    for name, rows in (*train.items(), *valid.items()):
        got = [c for r in rows for c in cases(r, scorer, rng)]
        data["setwise"][name] = [(fs, lab) for _, fs, _, lab in got if fs is not None]
        data["lexical"][name] = [(fl, lab) for _, _, fl, lab in got]
        print(f"  {name}: {len(got)} cases", file=sys.stderr)
    out: dict[str, Any] = {"version": 1, "models": {}, "meta": {"trained_on": {k: len(v) for k, v in train.items()}}}
    report: dict[str, Any] = {}
    for kind in ("setwise", "lexical"):
        feats = an.FEATURES[kind]
        tr = [c for k in train for c in data[kind][k]]
        x = np.array([[f[n] for n in feats] for f, _ in tr])
        y = np.array([lab for _, lab in tr], dtype=np.float64)
        mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
        coef, bias = fit_logistic((x - mean) / scale, y)
        model = an.AnswerabilityModel(
            name=kind,
            features=feats,
            mean=tuple(round(float(v), 6) for v in mean),
            scale=tuple(round(float(v), 6) for v in scale),
            coef=tuple(round(float(v), 6) for v in coef),
            bias=round(bias, 6),
        )
        # "not answered" is a claim a user acts on: the threshold is set on the training cases so that at most
        # --max-false-alarm of the answerable ones are said not answered
        p_pos = np.sort([model.probability(f) for f, lab in tr if lab == 1])
        thr = float(p_pos[int(args.max_false_alarm * len(p_pos))]) if len(p_pos) else 0.5
        model = dataclasses.replace(model, threshold=round(min(thr, 0.5), 4))
        out["models"][kind] = model.to_json()
        report[kind] = {
            "train": figures(model, tr),
            "out_of_sample": {k: figures(model, data[kind][k]) for k in valid},
        }
    out["meta"]["figures"] = report
    out["meta"]["validated_on"] = {k: len(v) for k, v in valid.items()}
    print(json.dumps(report, indent=1))
    if not args.no_write:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
