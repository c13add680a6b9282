"""How ``setwise`` reads the ``cross`` score: a logistic regression fitted leave one family out on held-out lists
(``scripts/fit_cross_fusion.py`` is its command line; its docstring describes both phases)."""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from admit.prune.setwise_model.fusion import FUSION_FEATURES, fusion_features
from fitlib.args import FitArgs, arg
from fitlib.cross_data import EXCLUDE
from fitlib.curves import r_at, topn_curve
from fitlib.data import TRAIN, VALID, Record, labels, read_folder
from fitlib.setwise_data import setwise_items

__all__ = ["FAMILIES", "FusionArgs", "fit_logistic", "held_out", "phase_fuse", "phase_setwise"]

FAMILIES = ("docs2_doc2dial", "docs2_medquad", "docs2_qmsum", "docs2_evidence_inference", "docs_policyqa")
#: Multi-hop validation sets scored too (the shipped trees were fitted on them: setwise is in sample there, so a
#: fusion that holds up on them does so against a flattered baseline).
MULTI_HOP = ("hotpotqa_distractor", "musique")
#: Validation sets scored beside them (documentation: the product's own kind of list).
VALIDATION = (*MULTI_HOP, "rhdh_docs")
RESEARCH = ("docs2_evidence_inference", "docs_policyqa")

FusionList = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A list's setwise probabilities, cross scores and labels."""


@dataclass(frozen=True, kw_only=True)
class FusionArgs(FitArgs):
    """``scripts/fit_cross_fusion.py``'s arguments."""

    phase: str = arg(choices=("setwise", "fuse"), required=True)
    train: str = arg(TRAIN)
    out: str = arg("/tmp/admit_fusion")
    cross: str = arg("/tmp/admit_cross/cross.npz")
    write: str = arg("")
    per_family: int = arg(60)
    per_multi_hop: int = arg(80)
    valid: str = arg(VALID)
    families: str = arg("", help="only these (comma-separated)")
    tag: str = arg("", help="setwise phase: write OUT/setwise_TAG.json")
    seed: int = arg(0)
    cross_per_file: int = arg(200, help="fit_cross.py's --per-file")
    cross_test_sample: int = arg(100, help="fit_cross.py's --test-sample")


def held_out(args: FusionArgs) -> dict[str, list[Record]]:
    """Per family, lists no model was fitted on (the cross fit's own seeded draws are redrawn and skipped)."""
    files = read_folder(Path(args.train))
    rng = random.Random(args.seed)
    out: dict[str, list[Record]] = {}
    exclude = set(EXCLUDE)
    for name, rows in sorted(files.items()):  # the same draws as fit_cross's load_lists, in the same order
        rows = [r for r in rows if r.get("required")]
        if name in exclude:
            pick = rng.sample(rows, min(len(rows), args.cross_test_sample))
        else:
            pick = rng.sample(rows, min(len(rows), args.cross_per_file)) if args.cross_per_file else rows
        if name not in FAMILIES:
            continue
        if name in exclude:
            pool = pick  # never trained on: the cross script's own test sample (its states are cached)
        else:
            taken = {r["id"] for r in pick}
            pool = [r for r in rows if r["id"] not in taken]
        out[name] = random.Random(f"{args.seed}:{name}").sample(pool, min(len(pool), args.per_family))
    valid = read_folder(Path(args.valid))
    for name in VALIDATION:
        rows = [r for r in valid.get(name, []) if r.get("required")]
        out[name] = random.Random(f"{args.seed}:{name}").sample(rows, min(len(rows), args.per_multi_hop))
    if args.families:
        out = {k: v for k, v in out.items() if k in args.families.split(",")}
    return out


def phase_setwise(args: FusionArgs) -> None:
    """The shipped setwise model's final-stage probabilities of every held-out list (resumable per family)."""
    from admit.backends.embedders.base import CachedEmbedder
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.prune.setwise_model import prepare
    from admit.prune.setwise_model.model import DEFAULT_MODEL_PATH, load_model

    model = load_model(str(DEFAULT_MODEL_PATH))
    emb = CachedEmbedder(MiniLMEmbedder(), max_items=500_000)
    out_path = Path(args.out) / (f"setwise_{args.tag}.json" if args.tag else "setwise.json")
    done: dict[str, Any] = json.loads(out_path.read_text()) if out_path.exists() else {}
    for name, rows in held_out(args).items():
        if name in done:
            continue
        recs = []
        for i, r in enumerate(rows):
            prep = prepare(r["question"], setwise_items(r["candidates"]), emb)
            final = model.predict(prep)[-1]
            recs.append(
                {
                    "id": r["id"],
                    "probs": [float(p) for p in final],
                    "qfeat": [float(v) for v in prep.qfeat],
                    "hit": [float(v) for v in prep.ident_hit],
                    "other": [float(v) for v in prep.ident_other],
                }
            )
            if i % 10 == 0:
                print(f"  setwise {name}: {i + 1}/{len(rows)}", file=sys.stderr, flush=True)
        done[name] = recs
        out_path.write_text(json.dumps(done))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, iters: int = 300) -> np.ndarray:
    """Weights (with the bias last) of an L2-regularised logistic regression, by Newton steps."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(xb @ w)))
        g = xb.T @ (p - y) + l2 * w
        h = xb.T @ (xb * (p * (1 - p))[:, None]) + l2 * np.eye(len(w))
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


@dataclass
class _Held:
    """The held-out lists' inputs to the fusion and what the setwise grades need beside them."""

    data: dict[str, list[FusionList]]
    extra: dict[tuple[str, int], dict[str, Any]]


def _cross_scores(args: FusionArgs, rows_by: dict[str, list[Record]], names: list[str]) -> dict[str, list[list[float]]]:
    """The cross model's scores of the named families' lists (cached beside the outputs, per model file)."""
    from admit.backends.rerankers.cross import CrossEncoder, chunk_passage

    cache_path = Path(args.out) / f"cross_{Path(args.cross).stem}.json"
    cached: dict[str, list[list[float]]] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    enc = None
    for name in names:
        if name in cached:
            continue
        enc = enc or CrossEncoder(args.cross)
        cached[name] = []
        for r in rows_by[name]:
            q = r["question"]
            ps = [chunk_passage(q, c.get("title") or "", c.get("text") or "") for c in r["candidates"]]
            cached[name].append([float(v) for v in enc.score(q, ps)])
        cache_path.write_text(json.dumps(cached))
        print(f"  cross scored {name}", file=sys.stderr, flush=True)
    return cached


def _held(args: FusionArgs) -> _Held:
    """Every held-out family that the setwise phase scored, with its cross scores and labels."""
    sw: dict[str, Any] = {}
    for f in sorted(Path(args.out).glob("setwise*.json")):
        sw.update(json.loads(f.read_text()))
    rows_by = held_out(args)
    names = [n for n, rows in rows_by.items() if n in sw and rows]  # skip a family the cross model saw whole
    cached = _cross_scores(args, rows_by, names)
    held = _Held({}, {})
    for name in names:
        info = {r["id"]: r for r in sw[name]}
        held.data[name] = []
        for i, (r, cs) in enumerate(zip(rows_by[name], cached[name], strict=True)):
            held.extra[(name, i)] = info[r["id"]]
            held.data[name].append((np.array(info[r["id"]]["probs"]), np.array(cs), labels(r)))
    return held


def grade_curve(model: Any, held: _Held, name: str, w: np.ndarray | None) -> list[tuple[float, float]]:
    """(compression, retained recall) at grade thresholds 1-5: setwise alone, or fused with weights ``w``."""
    from admit.prune.setwise_model.coverage import coverage_before, grades
    from admit.prune.setwise_model.scorer import identifier_grades

    kept_at: dict[int, list[bool]] = {t: [] for t in range(1, 6)}
    n_keep = dict.fromkeys(range(1, 6), 0)
    n_all = 0
    for i, (p, c, y) in enumerate(held.data[name]):
        if w is not None:
            xb = np.hstack([fusion_features(p, c), np.ones((len(p), 1))])
            p = 1 / (1 + np.exp(-(xb @ w)))
        ex = held.extra[(name, i)]
        cov = coverage_before(p, model.complete_probs(p, np.array(ex["qfeat"])))
        graded = grades(p, cov, model.cuts, model.keep_bounds)
        hit = np.array(ex["hit"])
        if hit.any():
            graded = identifier_grades(graded, hit, np.array(ex["other"]))
        g = np.array(graded)
        n_all += len(p)
        for t in range(1, 6):
            kept_at[t].append(bool(np.all(g[y > 0] >= t)))
            n_keep[t] += int((g >= t).sum())
    return [(1 - n_keep[t] / n_all, float(np.mean(kept_at[t]))) for t in range(1, 6)]


def _fit(lists: list[FusionList]) -> np.ndarray:
    x = np.vstack([fusion_features(p, c) for p, c, _ in lists])
    y = np.concatenate([yy for _, _, yy in lists])
    return fit_logistic(x, y)


def leave_one_family_out(model: Any, held: _Held) -> dict[str, Any]:
    """Per family: the fusion fitted on the others, its figures beside setwise's and the top-N ones; printed."""
    rows_out: dict[str, Any] = {}
    print(f"{'family':28s} {'setwise':>8s} {'fused':>8s} {'cross-topN':>10s} {'sw-topN':>8s}  thr3 sw / fused")
    for name, lists in held.data.items():
        w = _fit([t for n, ls in held.data.items() if n != name for t in ls])
        sw_pts = grade_curve(model, held, name, None)
        fu_pts = grade_curve(model, held, name, w)
        ys = [y for _, _, y in lists]
        cross_topn = r_at(topn_curve(ys, [c for _, c, _ in lists]))
        sw_topn = r_at(topn_curve(ys, [p for p, _, _ in lists]))
        r_sw, r_fu = r_at([(0.0, 1.0), *sw_pts]), r_at([(0.0, 1.0), *fu_pts])
        rows_out[name] = {
            "setwise_R@68": r_sw,
            "fused_R@68": r_fu,
            "cross_topN_R@68": cross_topn,
            "setwise_topN_R@68": sw_topn,
            "setwise_thr3": sw_pts[2],
            "fused_thr3": fu_pts[2],
            "weights": w.tolist(),
            "lists": len(lists),
        }
        print(
            f"{name:28s} {r_sw:8.3f} {r_fu:8.3f} {cross_topn:10.3f} {sw_topn:8.3f}  "
            f"{sw_pts[2][1]:.3f}/{sw_pts[2][0]:.3f}  {fu_pts[2][1]:.3f}/{fu_pts[2][0]:.3f}",
            flush=True,
        )
    return rows_out


def _write_fusion(args: FusionArgs, held: _Held, rows_out: dict[str, Any]) -> None:
    """The fusion fitted on every shippable family, into a copy of the cross model file (``--write``)."""
    w = _fit([t for n, ls in held.data.items() if n not in RESEARCH for t in ls])
    with np.load(args.cross, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    meta["fusion"] = {
        "features": list(FUSION_FEATURES),
        "weights": [round(float(v), 6) for v in w],
        "fitted_on": sorted(n for n in held.data if n not in RESEARCH),
        "leave_one_family_out": {n: {k: v for k, v in r.items() if k != "weights"} for n, r in rows_out.items()},
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    np.savez_compressed(args.write, **arrays)
    print(f"wrote {args.write} with fusion weights {meta['fusion']['weights']}", file=sys.stderr)


def phase_fuse(args: FusionArgs) -> None:
    """Fit and score the fusion leave one family out; write the figures (and ``--write`` the shipped fusion)."""
    from admit.prune.setwise_model.model import DEFAULT_MODEL_PATH, load_model

    model = load_model(str(DEFAULT_MODEL_PATH))
    held = _held(args)
    rows_out = leave_one_family_out(model, held)
    (Path(args.out) / f"fusion_{Path(args.cross).stem}.json").write_text(json.dumps(rows_out, indent=1))
    if args.write:
        _write_fusion(args, held, rows_out)
