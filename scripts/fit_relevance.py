#!/usr/bin/env python3
"""Fit admit's learned query-passage relevance head over frozen MiniLM vectors, and score it out of sample.

Usage::

    python3 scripts/fit_relevance.py --train ../shared/train --valid ../shared/data \\
        [--exclude docs_policyqa] [--out src/admit/modelfiles/relevance.npz] [--no-write]

The head reads, for a question vector ``q`` and a chunk's passage vectors, the best-matching passage ``b``
(highest cosine with ``q``) and the passages' mean ``m``, and scores the pair with a small MLP over
``[q * b, q * m, |q - b|, q . b, q . m]`` (:mod:`admit.prune.setwise_model.relevance`). It is trained on the
training folder's lists with a listwise loss (softmax over each list, every required chunk a positive) plus a
pointwise one, so it learns which directions of the frozen space carry relevance in documentation and
multi-hop text alike. Inference is numpy (two matrix products per list).

Prints, per validation file, the head's top-N R@68 beside dense and BM25 top-N from the same vectors; writes
the weights (``--out``) unless ``--no-write``. Vectors come from the cache ``scripts/fit_setwise.py`` fills.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

from fit_setwise import VectorCache, family, read_folder, recall_at  # noqa: E402
from relevance_head import RelevanceHead, pair_features  # noqa: E402

from admit.backends.embedders.base import text_key  # noqa: E402
from admit.prune import setwise_model as sm  # noqa: E402


@dataclass
class ListVecs:
    """One labelled list as vectors."""

    qid: str
    dataset: str
    q: np.ndarray  # (d,)
    best: np.ndarray  # (n, d)
    mean: np.ndarray  # (n, d)
    y: np.ndarray  # (n,)


def list_vectors(name: str, rows: Sequence[dict[str, Any]], vc: VectorCache) -> list[ListVecs]:
    out = []
    for r in rows:
        qv = vc.vecs.get(text_key(sm.question_text(r["question"])))
        if qv is None:
            continue
        q = qv / max(float(np.linalg.norm(qv)), 1e-9)
        best, mean, ok = [], [], True
        for c in r["candidates"]:
            ps = [p or "-" for p in sm.passages(c.get("title") or "", c.get("text") or "")]
            vs = [vc.vecs.get(text_key(p)) for p in ps]
            if any(v is None for v in vs):
                ok = False
                break
            mat = np.stack(vs).astype(np.float64)
            mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-9)
            best.append(mat[int(np.argmax(mat @ q))])
            m = mat.mean(axis=0)
            mean.append(m / max(float(np.linalg.norm(m)), 1e-9))
        if not ok:
            continue
        req = set(r["required"])
        y = np.array([1.0 if c["id"] in req else 0.0 for c in r["candidates"]])
        out.append(ListVecs(r["id"], name, q, np.stack(best), np.stack(mean), y))
    return out


def topn_r68(lists: Sequence[ListVecs], scores: Sequence[np.ndarray]) -> float:
    nmax = max(lv.y.size for lv in lists)
    pts = [(0.0, 1.0)]
    total = sum(lv.y.size for lv in lists)
    for n in range(1, nmax + 1):
        hit, kept = 0, 0
        for lv, s in zip(lists, scores, strict=True):
            top = np.argsort(-s, kind="stable")[:n]
            kept += top.size
            hit += int(set(np.flatnonzero(lv.y > 0)) <= set(top.tolist()))
        pts.append((1.0 - kept / total, hit / len(lists)))
    return recall_at(pts)


def train_head(
    lists: Sequence[ListVecs], *, hidden: int, epochs: int, lr: float, wd: float, seed: int, dropout: float = 0.1
) -> RelevanceHead:
    """Trains the MLP with torch (fit time only) and returns the numpy head.

    Lists are padded to the longest one and masked, so a batch is one tensor: the listwise loss is
    ``logsumexp(all) - logsumexp(required)`` per list, plus half a pointwise BCE.
    """
    import torch

    torch.manual_seed(seed)
    nmax = max(lv.y.size for lv in lists)
    dim = pair_features(lists[0].q, lists[0].best[:1], lists[0].mean[:1]).shape[1]
    x = np.zeros((len(lists), nmax, dim), dtype=np.float32)
    y = np.zeros((len(lists), nmax), dtype=np.float32)
    mask = np.zeros((len(lists), nmax), dtype=bool)
    for i, lv in enumerate(lists):
        n = lv.y.size
        x[i, :n] = pair_features(lv.q, lv.best, lv.mean)
        y[i, :n] = lv.y
        mask[i, :n] = True
    xt, yt, mt = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(mask)
    net = torch.nn.Sequential(
        torch.nn.Linear(dim, hidden), torch.nn.ReLU(), torch.nn.Dropout(dropout), torch.nn.Linear(hidden, 1)
    )
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=wd)
    gen = torch.Generator().manual_seed(seed)
    batch = 64
    neg = torch.tensor(-1e4)
    for _ in range(epochs):
        net.train()
        perm = torch.randperm(len(lists), generator=gen)
        for s in range(0, len(lists), batch):
            idx = perm[s : s + batch]
            xb, yb, mb = xt[idx], yt[idx], mt[idx]
            lg = net(xb).squeeze(-1)
            has = yb.sum(1) > 0
            lse_all = torch.logsumexp(torch.where(mb, lg, neg), 1)
            lse_pos = torch.logsumexp(torch.where(mb & (yb > 0), lg, neg), 1)
            listwise = ((lse_all - lse_pos) * has).sum()
            bce = torch.nn.functional.binary_cross_entropy_with_logits(lg[mb], yb[mb], reduction="sum")
            loss = (listwise + 0.5 * bce / max(1, int(mb.sum()) // len(idx))) / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    w1, b1 = net[0].weight.detach().numpy().T, net[0].bias.detach().numpy()
    w2, b2 = net[3].weight.detach().numpy()[0], float(net[3].bias.detach().numpy()[0])
    return RelevanceHead(
        w1=np.ascontiguousarray(w1, dtype=np.float32), b1=b1.astype(np.float32), w2=w2.astype(np.float32), b2=b2
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=str(ROOT.parent / "shared" / "train"))
    ap.add_argument("--valid", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache-dir", default="/tmp/setwise_cache")
    ap.add_argument("--exclude", default="", help="comma-separated training file stems to leave out")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lodo", action="store_true", help="also leave each training family out in turn")
    ap.add_argument("--ship-with-valid", action="store_true", help="refit on train + valid before writing")
    ap.add_argument("--out", default=str(ROOT / "src/admit/modelfiles/relevance.npz"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    vc = VectorCache(Path(args.cache_dir) / "vecs.npz")
    excl = set(filter(None, args.exclude.split(",")))
    train = {k: list_vectors(k, v, vc) for k, v in read_folder(Path(args.train)).items() if k not in excl}
    valid = {k: list_vectors(k, v, vc) for k, v in read_folder(Path(args.valid)).items()}
    print("lists with vectors:", {k: len(v) for k, v in {**train, **valid}.items()}, flush=True)
    flat = [lv for v in train.values() for lv in v]
    t0 = time.time()
    kw = {"hidden": args.hidden, "epochs": args.epochs, "lr": args.lr, "wd": args.wd, "seed": args.seed}
    head = train_head(flat, **kw)
    print(f"trained on {len(flat)} lists in {time.time() - t0:.0f}s", flush=True)
    print(f"{'dataset':32s} {'head':>6s} {'dense':>6s} {'mean':>6s}")
    for name, lists in valid.items():
        if not lists:
            continue
        h = topn_r68(lists, [head.score(lv.q, lv.best, lv.mean) for lv in lists])
        d = topn_r68(lists, [lv.best @ lv.q for lv in lists])
        m = topn_r68(lists, [lv.mean @ lv.q for lv in lists])
        print(f"{name:32s} {h:6.3f} {d:6.3f} {m:6.3f}", flush=True)
    if args.lodo:
        fams = sorted({family(k) for k in train})
        for fam in fams:
            rest = [lv for k, v in train.items() if family(k) != fam for lv in v]
            test = {k: v for k, v in train.items() if family(k) == fam}
            hd = train_head(rest, **kw)
            for name, lists in test.items():
                h = topn_r68(lists, [hd.score(lv.q, lv.best, lv.mean) for lv in lists])
                d = topn_r68(lists, [lv.best @ lv.q for lv in lists])
                print(f"leave {fam:20s} {name:32s} head {h:.3f} dense {d:.3f}", flush=True)
    if args.no_write:
        return 0
    if args.ship_with_valid:
        head = train_head(flat + [lv for v in valid.values() for lv in v], **kw)
    head.save(Path(args.out), meta={"trained_on": sorted(train) + (sorted(valid) if args.ship_with_valid else [])})
    print(f"wrote {args.out} ({Path(args.out).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
