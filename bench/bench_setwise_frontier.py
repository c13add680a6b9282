#!/usr/bin/env python3
"""What a documentation list's passage choice costs and what it keeps: the frontier behind ``LIVE_PASSAGES``.

For each way of choosing the passages ``setwise`` encodes for a list, prints R@68 on each labelled file whose lists
do not fit the budget (``scripts/score_setwise.py``'s scoring: the pruner ``admit prune`` runs, with
``admit.prune.setwise_model.features.list_passages`` replaced by the choice) and the word pieces encoded per list
against dense top-N's (one 256-piece unit per chunk) on ``bench/bench_setwise.py --mix docs``'s lists, each distinct
text counted once (as ``embed_items`` encodes them). The forward passes are ~98% of a live documentation call, so
that ratio is the live cost ratio less the features.

Choices: ``b<X>`` the shipped rule (every chunk's first passage, then the list's best by BM25) with X passages a chunk
on average (fractions allowed here); ``w<X>`` the same rule with a budget of X * 180 words a chunk (a passage costs
its words); ``oracle<X>`` the X * n passages of highest true cosine to the question (an upper bound for any rule that
reads that many: it needs the vectors); ``every`` every passage.

Usage: ``python bench/bench_setwise_frontier.py ../shared/data --vectors VECS.npz [--choices b3,b2.5,w2.5,oracle2]``
(``--vectors``: ``scripts/score_setwise.py --save-vectors`` output, so every choice reads the same vectors; texts
missing from it are encoded with ``--encoder``.)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

Chooser = Callable[[str, Sequence[tuple[str, str]]], list[list[str]]]


def _chooser(name: str, vec: Callable[[str], np.ndarray]) -> Chooser:
    """The passage choice called ``name`` (see the module docstring)."""
    from admit._text import bm25_matrix
    from admit.passages import PASSAGE_WORDS, _passage_terms, best_passages, list_passages, question_text

    def every(q: str, chunks: Sequence[tuple[str, str]]) -> list[list[str]]:
        return [best_passages(q, t, x)[0] for t, x in chunks]

    if name == "every":
        return lambda q, chunks: list_passages(q, chunks, per_chunk=None)
    kind, x = name.rstrip("0123456789."), float(name.lstrip("abcdefghijklmnopqrstuvwxyz"))

    def choose(q: str, chunks: Sequence[tuple[str, str]]) -> list[list[str]]:
        ps_all = every(q, chunks)
        n = len(ps_all)
        cost: Callable[[str], float] = (lambda p: float(len(p.split()))) if kind == "w" else (lambda p: 1.0)
        budget = x * n * (PASSAGE_WORDS if kind == "w" else 1)
        if sum(cost(p) for ps in ps_all for p in ps) <= budget:
            return ps_all
        keep = [{0} for _ in ps_all]
        room = budget - sum(cost(ps[0]) for ps in ps_all)
        rest = [(i, k) for i, ps in enumerate(ps_all) for k in range(1, len(ps))]
        if kind == "oracle":
            qv = vec(question_text(q))
            score = [float(vec(ps_all[i][k] or "-") @ qv) for i, k in rest]
        else:
            score = [
                float(s) for s in bm25_matrix([_passage_terms(q)], [_passage_terms(ps_all[i][k]) for i, k in rest])[0]
            ]
        for r in sorted(range(len(rest)), key=lambda r: (-score[r], r)):
            c = cost(ps_all[rest[r][0]][rest[r][1]])
            if c <= room:
                keep[rest[r][0]].add(rest[r][1])
                room -= c
        return [[ps[k] for k in sorted(ks)] for ps, ks in zip(ps_all, keep, strict=True)]

    return choose


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--vectors", required=True, help="(keys, vecs) .npz of MiniLM vectors keyed by SHA-1 of the text")
    ap.add_argument("--encoder", default="numpy", help="the MiniLM encoder for texts missing from --vectors")
    ap.add_argument("--choices", default="every,b3,b2.9,b2.8,b2.7,b2.6,b2.5,b2.25,b2,w2.5,w2.25,oracle2.5,oracle2")
    ap.add_argument("--runs", type=int, default=8, help="bench_setwise.py --mix docs lists for the cost ratio")
    args = ap.parse_args()
    from bench_setwise import _chunks
    from score_setwise import scored_candidates

    import admit.prune.setwise_model.features as features
    from admit.backends.embedders.base import CachedEmbedder, text_key
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.passages import best_passages
    from admit.prune import PruneSettings
    from admit.prune.setwise import SetwisePruner
    from fitlib.curves import r_at
    from fitlib.data import read_file

    model = MiniLMEmbedder(encoder=args.encoder, threads=1)
    z = np.load(args.vectors)
    stored = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
    emb = CachedEmbedder(model, max_items=2_000_000)
    emb.seed(stored.items(), keys_are_hashes=True)

    def vec(text: str) -> np.ndarray:
        v = stored.get(text_key(text))
        v = emb.embed([text])[0] if v is None else v
        return np.asarray(v, dtype=np.float64) / float(np.linalg.norm(v))

    model.warm_up()
    tok: Any = model._tokenizer
    cases = _chunks(Path(args.data_dir), "docs", args.runs + 1)[1:]

    def pieces(texts: Sequence[str]) -> int:
        return sum(len(e.ids) for e in tok.encode_batch(list(texts)))

    dense = sum(pieces([q] + [f"{t}\n{x}" for t, x in c]) for q, c in cases)
    files = {p.name.split(".jsonl")[0]: read_file(p) for p in sorted(Path(args.data_dir).glob("*.jsonl*"))}
    settings = PruneSettings(strategy="setwise", threshold=1, keep_top_k=0)
    pruner = SetwisePruner(embedder=emb)
    over = {
        fname: sum(
            sum(
                len(best_passages(r["question"], c.get("title") or "", c.get("text") or "")[0]) for c in r["candidates"]
            )
            > 2 * len(r["candidates"])
            for r in rows
        )
        for fname, rows in files.items()
    }
    for name in args.choices.split(","):
        choose = _chooser(name, vec)
        features.list_passages = lambda q, chunks, per_chunk=None, _c=choose: _c(q, chunks)  # type: ignore[misc]
        enc = [list(dict.fromkeys(p for ps in choose(q, c) for p in ps)) for q, c in cases]
        ratio = sum(pieces([q, *ps]) for (q, _), ps in zip(cases, enc, strict=True)) / dense
        cells = [f"{name:10s} pieces/dense {ratio:.2f} ({np.mean([len(ps) for ps in enc]):.1f} passages a list)"]
        for fname, rows in files.items():
            if not over[fname]:  # every list fits a budget of 2: read whole by every choice here
                continue
            kept_at: dict[int, list[bool]] = {t: [] for t in range(1, 6)}
            n_keep, n_all = dict.fromkeys(range(1, 6), 0), 0
            for r in rows:
                cands = scored_candidates(r)
                grades = {g.chunk_id: g.grade for g in pruner.prune(r["question"], cands, settings).graded}
                n_all += len(cands)
                for t in range(1, 6):
                    kept = {cid for cid, g in grades.items() if g >= t}
                    kept_at[t].append(set(r["required"]) <= kept)
                    n_keep[t] += len(kept)
            pts = [(1.0 - n_keep[t] / n_all, float(np.mean(kept_at[t]))) for t in range(1, 6)]
            cells.append(f"{fname} R@68 {r_at(pts):.4f} ({over[fname]} of {len(rows)} lists over 2 a chunk)")
        print("   ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
