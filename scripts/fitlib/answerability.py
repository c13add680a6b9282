"""Fitting the answerability models (:mod:`admit.answerability`): cases from labelled lists, a logistic
regression and its two thresholds, figures per family (``scripts/fit_answerability.py`` and
``scripts/fit_cross_answerability.py`` are its command lines)."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from admit import answerability as an
from admit.prune import setwise_model as sm
from fitlib.args import FitArgs, arg
from fitlib.data import TRAIN, VALID, Record, read_folder
from fitlib.setwise_data import setwise_items
from fitlib.vectors import VectorCache, setwise_texts

__all__ = [
    "RESEARCH_FILES",
    "TRAIN_FILES",
    "AnswerabilityArgs",
    "Cases",
    "cases",
    "figures",
    "fit_logistic",
    "fit_model",
    "run",
]

Case = tuple[dict[str, float], int]
"""A case's features and label (0 unanswerable, 1 answerable, 2 answerable with its gold all kept)."""
Cases = dict[str, list[Case]]
"""Cases by file (family)."""

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
    "docs2_qmsum",
)
#: Research-use families: scored leave one family out, never in the shipped fit.
RESEARCH_FILES = ("docs_policyqa", "docs2_evidence_inference")


def cases(
    row: Record, scorer: sm.SetwiseScorer, rng: random.Random
) -> list[tuple[str, dict[str, float] | None, dict[str, float], int]]:
    """(question, setwise features, lexical features, label) for lists with and without their gold chunks; the label
    is 2 for an answerable list whose gold chunks the pruner all kept.

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
        items = setwise_items(keep)
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
        all_kept = label == 1 and gold <= {items[j].id for j in kept}
        # the setwise model is used only on lists of MIN_SETWISE_LIST or more (an.assess): fit it on those
        out.append((row["question"], fs if len(items) >= an.MIN_SETWISE_LIST else None, fl, 2 if all_kept else label))
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


def states(model: an.AnswerabilityModel, rows: Sequence[Case]) -> np.ndarray:
    """The three-state verdict per case: 0 not answered, 1 unsure, 2 answered (the rule for short questions
    included, as :func:`admit.answerability.assess` applies it)."""
    return np.array([an.STATES.index(model.state(f)) for f, _ in rows], dtype=np.int64)


def figures(model: an.AnswerabilityModel, rows: Sequence[Case]) -> dict[str, float]:
    """Per family: how often "not answered" is said of answerable lists whose gold the pruner kept (the false
    alarm a user acts on), of unanswerable lists (its recall), and how often each is "unsure"."""
    st = states(model, rows)
    y = np.array([lab for _, lab in rows])
    kept, no = y == 2, y == 0
    ps = np.array([model.probability(f) for f, _ in rows])

    def share(mask: np.ndarray, value: int) -> float:
        return round(float((st[mask] == value).mean()), 4) if mask.any() else float("nan")

    return {
        "cases": len(rows),
        "answerable_kept": int(kept.sum()),
        "unanswerable": int(no.sum()),
        "not_answered_on_answerable_kept": share(kept, 0),
        "unsure_on_answerable_kept": share(kept, 1),
        "not_answered_on_unanswerable": share(no, 0),
        "unsure_on_unanswerable": share(no, 1),
        "brier": round(float(((ps - (y > 0)) ** 2).mean()), 4) if len(rows) else float("nan"),
    }


def fit_model(
    kind: str, data: Cases, families: Sequence[str], *, max_false_alarm: float, max_false_answer: float
) -> an.AnswerabilityModel:
    """Logistic regression on the families' cases, then the two thresholds:

    * ``threshold`` ("not answered" below it): on every family fitted on, at most ``max_false_alarm`` of the
      answerable lists whose gold was kept fall below it (the lowest of the families' quantiles), so one family's
      scale does not set it for another;
    * ``answered_at`` ("answered" at or above it): at most ``max_false_answer`` of the unanswerable lists reach it.
    Between the two the verdict is "unsure", which triggers nothing.
    """
    feats = an.FEATURES[kind]
    tr = [c for k in families for c in data[k]]
    x = np.array([[f[n] for n in feats] for f, _ in tr])
    y = np.array([lab > 0 for _, lab in tr], dtype=np.float64)
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
    lows = []
    for k in families:
        p = np.sort([model.probability(f) for f, lab in data[k] if lab == 2 and not f.get("short_held")])
        if len(p) >= 20:
            lows.append(float(p[int(max_false_alarm * len(p))]))
    thr = min(lows) if lows else 0.05
    p_no = np.sort([model.probability(f) for f, lab in tr if lab == 0])
    hi = float(p_no[min(len(p_no) - 1, int((1 - max_false_answer) * len(p_no)))]) if len(p_no) else 0.5
    return dataclasses.replace(model, threshold=round(min(thr, 0.5), 4), answered_at=round(max(hi, thr), 4))


@dataclass(frozen=True, kw_only=True)
class AnswerabilityArgs(FitArgs):
    """``scripts/fit_answerability.py``'s arguments."""

    train: str = arg(TRAIN)
    valid: str = arg(VALID)
    per_file: int = arg(120)
    valid_per_file: int = arg(150)
    cache_dir: str = arg("/tmp/answer_cache")
    out: str = arg(str(an.DEFAULT_PATH))
    no_write: bool = arg(False)
    dump: str = arg("", help="write every case's features and label (JSON) here")
    cases: str = arg("", help="read the cases of an earlier --dump instead of computing them")
    max_false_alarm: float = arg(0.02)
    max_false_answer: float = arg(0.35)


def compute_cases(
    train: dict[str, list[Record]], valid: dict[str, list[Record]], vc: VectorCache, rng: random.Random
) -> dict[str, Cases]:
    """Every case's features and label, per model kind and file."""
    vc.fill(setwise_texts(r for rows in (*train.values(), *valid.values()) for r in rows))
    scorer = sm.SetwiseScorer(embedder=vc)
    data: dict[str, Cases] = {"setwise": {}, "lexical": {}}
    for name, rows in (*train.items(), *valid.items()):
        got = [c for r in rows for c in cases(r, scorer, rng)]
        data["setwise"][name] = [(fs, lab) for _, fs, _, lab in got if fs is not None]
        data["lexical"][name] = [(fl, lab) for _, _, fl, lab in got]
        print(f"  {name}: {len(got)} cases", file=sys.stderr)
    return data


def write_models(
    args: AnswerabilityArgs, data: dict[str, Cases], train: dict[str, list[Record]], valid: dict[str, list[Record]]
) -> None:
    """Fit both models, score them leave one family out, write the file."""
    limits = {"max_false_alarm": args.max_false_alarm, "max_false_answer": args.max_false_answer}
    fit_on = [k for k in train if k in TRAIN_FILES]
    out: dict[str, Any] = {"version": 2, "models": {}, "meta": {"trained_on": {k: len(train[k]) for k in fit_on}}}
    report: dict[str, Any] = {}
    for kind in ("setwise", "lexical"):
        model = fit_model(kind, data[kind], fit_on, **limits)
        out["models"][kind] = model.to_json()
        # leave one family out: each family scored by a model (and thresholds) fitted without it
        lofo = {}
        for k in [*train, *valid]:
            m = fit_model(kind, data[kind], [f for f in fit_on if f != k], **limits) if k in fit_on else model
            lofo[k] = figures(m, data[kind][k])
        report[kind] = {"thresholds": [model.threshold, model.answered_at], "leave_one_family_out": lofo}
    out["meta"]["figures"] = report
    out["meta"]["validated_on"] = {k: len(v) for k, v in valid.items()}
    print(json.dumps(report, indent=1))
    if not args.no_write:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)


def run(args: AnswerabilityArgs) -> None:
    """Sample the lists, compute (or read) the cases, fit and write both models."""
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    vc = VectorCache(cache / "vecs.npz")
    rng = random.Random(20261201)
    train_all = read_folder(Path(args.train))
    wanted = (*TRAIN_FILES, *RESEARCH_FILES)
    train = {k: rng.sample(v, min(args.per_file, len(v))) for k, v in train_all.items() if k in wanted}
    valid_all = read_folder(Path(args.valid))
    valid = {k: rng.sample(v, min(args.valid_per_file, len(v))) for k, v in valid_all.items()}
    if args.cases and Path(args.cases).exists():  # the features of an earlier run (--dump): refit only
        data = json.loads(Path(args.cases).read_text())
    else:
        data = compute_cases(train, valid, vc, rng)
    if args.dump:
        Path(args.dump).write_text(json.dumps(data))
    write_models(args, data, train, valid)
