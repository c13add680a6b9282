#!/usr/bin/env python3
"""Fit the ``cross`` answerability model: whether the kept chunks answer the question, from the model that reads
question and chunk together (its best and second-best score and their margin) beside the lexical coverage features.

Usage (the same data arguments as the ``scripts/fit_cross.py`` run whose state cache it reads)::

    python3 scripts/fit_cross_answerability.py --model /work/fit/cross.K5.npz --cache-dir /work/fit/cache \\
        [--fit-args /work/fit/fit_log.json] [--write src/admit/modelfiles/answerability.json]

The cross model scores every list the fit kept out of sample (the validation folder and the research-use families,
never fitted on). Each list gives cases of one length: the gold chunks with the best-scored other chunk
(answerable, its gold all kept) against as many of the best-scored other chunks (unanswerable: a near miss, only
related sections remain), and the gold alone against as many others alone. A logistic regression is fitted and its
two thresholds set as in ``scripts/fit_answerability.py`` (``fit_model``), scored leave one family out. The shipped
fit reads the shippable families only (the validation folder's); the research-use families are scored, never fitted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

import fit_answerability as fa  # noqa: E402
import fit_cross as fc  # noqa: E402

from admit import answerability as an  # noqa: E402

RESEARCH = ("docs_policyqa", "docs2_evidence_inference")


def cases(lst: fc.List_, scores: np.ndarray) -> list[tuple[dict[str, float], int]]:
    gold = [i for i in range(len(lst.y)) if lst.y[i] > 0]
    others = sorted((i for i in range(len(lst.y)) if lst.y[i] == 0), key=lambda i: -scores[i])
    k = len(gold)
    if not k or len(others) < k + 1:
        return []
    sets = ((2, [*gold, others[0]]), (0, others[: k + 1]), (2, gold), (0, others[:k]))
    out = []
    for label, kept in sets:
        f = an.features(lst.question, [lst.passages[i] for i in kept], cross=[float(scores[i]) for i in kept])
        out.append((f, label))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--fit-args", default="", help="the fit log whose data arguments rebuild the same lists")
    ap.add_argument("--train", default=str(ROOT.parent / "shared" / "train"))
    ap.add_argument("--valid", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache-dir", default="/tmp/admit_cross")
    ap.add_argument("--per-file", type=int, default=0)
    ap.add_argument("--negatives", type=int, default=4)
    ap.add_argument("--test-sample", type=int, default=150)
    ap.add_argument("--self-supervised", action="store_true")
    ap.add_argument("--ss-per-file", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-false-alarm", type=float, default=0.02)
    ap.add_argument("--max-false-answer", type=float, default=0.35)
    ap.add_argument("--write", default="", help="add the model to this answerability.json")
    ap.add_argument("--scores", default="", help="cache of the cross scores (JSON)")
    args = ap.parse_args()
    args.exclude = ",".join(fc.EXCLUDE)
    args.layers, args.cache_layers = [5], None
    meta_k = _model_k(Path(args.model))
    args.layers = [meta_k]
    train, evals = fc.load_lists(args)
    args.cache_layers = [3, 4, 5]
    qc, pc = fc.build_caches(args, train, evals)
    scores = _scores(args, evals, qc, pc, meta_k)
    data: dict[str, list[tuple[dict[str, float], int]]] = {}
    for name, lists in evals.items():
        fam = name.split(" ")[0]
        data[fam] = [c for lst in lists for c in cases(lst, np.asarray(scores[f"{name}:{lst.qid}"]))]
        print(f"  {fam}: {len(data[fam])} cases", file=sys.stderr)
    fit_on = [f for f in data if f not in RESEARCH]
    model = fa.fit_model("cross", data, fit_on, args)
    report: dict[str, Any] = {"thresholds": [model.threshold, model.answered_at], "leave_one_family_out": {}}
    for fam in data:
        rest = [f for f in fit_on if f != fam]
        m = fa.fit_model("cross", data, rest, args) if fam in fit_on and rest else model
        report["leave_one_family_out"][fam] = fa.figures(m, data[fam])
    print(json.dumps(report, indent=1))
    if args.write:
        path = Path(args.write)
        stored = json.loads(path.read_text(encoding="utf-8"))
        stored["models"]["cross"] = model.to_json()
        stored.setdefault("meta", {}).setdefault("figures", {})["cross"] = report
        stored["meta"]["cross_fitted_on"] = {f: len(data[f]) for f in fit_on}
        path.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
        print(f"wrote the cross model into {path}", file=sys.stderr)
    return 0


def _model_k(path: Path) -> int:
    with np.load(path, allow_pickle=False) as z:
        return int(json.loads(bytes(z["meta"]).decode("utf-8"))["bottom_layers"])


def _scores(
    args: argparse.Namespace, evals: dict[str, list[fc.List_]], qc: fc.StateCache, pc: fc.StateCache, k: int
) -> dict[str, list[float]]:
    cache = Path(args.scores) if args.scores else None
    if cache is not None and cache.exists():
        return dict(json.loads(cache.read_text()))
    model = fc.Joint(k, "cpu", 0)
    model.load(Path(args.model))
    out: dict[str, list[float]] = {}
    for name, lists in evals.items():
        for lst, s in zip(lists, fc.score_lists(model, lists, qc, pc, "cpu"), strict=True):
            out[f"{name}:{lst.qid}"] = [float(v) for v in s]
    if cache is not None:
        cache.write_text(json.dumps(out))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
