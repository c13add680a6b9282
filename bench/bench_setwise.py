#!/usr/bin/env python3
"""Latency benchmark of ``SetwiseScorer.score`` beside a plain dense top-N baseline.

Takes 15 chunks of real text per question from ``../shared/data`` (HotpotQA + MuSiQue paragraphs
and RHDH docs chunks), then reports:

* model load time (embedder warm-up + model file), apart from scoring;
* p50 / p95 latency of ``score`` with live encoding of every chunk (cold: nothing cached);
* p50 / p95 with chunk vectors precomputed (``CachedEmbedder`` seeded, as a knowledge base that
  stored vectors at ingest would do; only the question is encoded);
* the same two figures for a plain dense top-N baseline (embed, cosine, sort);
* peak RSS (``resource``) and peak Python heap during scoring (``tracemalloc``).

Usage: ``python3 bench/bench_setwise.py [DATA_DIR] [--runs 20] [--threads 2] [--mix short|docs|mixed] [--live-only]
[--budgets 2,3] [--process-cache] [--clock wall|cpu]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _chunks(data_dir: Path, mix: str, n_questions: int) -> list[tuple[str, list[tuple[str, str]]]]:
    """(question, 15 (title, text) chunks) tuples of real text."""

    def rows(name: str) -> list[dict[str, object]]:
        with open(data_dir / f"{name}.jsonl", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]

    hot, mus, docs = rows("hotpotqa_distractor"), rows("musique"), rows("rhdh_docs")
    out = []
    for k in range(n_questions):
        if mix == "docs":
            r = docs[k]
            cands = r["candidates"] + docs[k + 1]["candidates"][:5]  # type: ignore[operator]
        elif mix == "mixed":
            r = hot[k]
            cands = r["candidates"][:10] + mus[k]["candidates"][:3] + docs[k]["candidates"][:2]  # type: ignore[operator,index]
        else:
            r = mus[k]
            cands = r["candidates"][:15]  # type: ignore[index]
        out.append((str(r["question"]), [(c["title"], c["text"]) for c in cands][:15]))  # type: ignore[index]
    return out


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mix", choices=("short", "docs", "mixed"), default="short")
    ap.add_argument("--live-only", action="store_true", help="only the live-encoding figures (no stored vectors)")
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time a call by the wall clock or by the process's CPU time (steadier on a loaded machine)",
    )
    ap.add_argument(
        "--process-cache",
        action="store_true",
        help="setwise and dense top-N each keep one vector cache for the whole run (as the default scorer's shared "
        "embedder does: each distinct passage encoded once per process; the lists share chunks), not one per call",
    )
    ap.add_argument(
        "--budgets",
        default="",
        help="passage budgets per chunk to time live beside the default (every passage), e.g. 2,3",
    )
    args = ap.parse_args()
    from admit.backends.embedders.base import CachedEmbedder
    from admit.backends.embedders.defaults import configure_minilm
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, passages

    configure_minilm(threads=args.threads)  # the threads of every MiniLM the run makes

    cases = _chunks(Path(args.data_dir), args.mix, args.runs + 1)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    t0 = time.perf_counter()
    emb = MiniLMEmbedder(threads=args.threads)
    emb.warm_up()
    encoded = {"setwise": 0, "dense": 0}

    class _Counting:
        """The same embedder, counting the texts setwise hands it (no cache: every list is encoded live)."""

        name, dim = emb.name, emb.dim

        def embed(self, texts: list[str]) -> np.ndarray:
            encoded["setwise"] += len(texts)
            return emb.embed(texts)

    class _CountingDense:
        """The same embedder for dense top-N, counting the texts it encodes."""

        name, dim = emb.name, emb.dim

        def embed(self, texts: list[str]) -> np.ndarray:
            encoded["dense"] += len(texts)
            return emb.embed(texts)

    live: object = _Counting()
    dense_emb: object = _CountingDense()
    if args.process_cache:
        live, dense_emb = CachedEmbedder(live), CachedEmbedder(dense_emb)  # type: ignore[arg-type]
    scorer = SetwiseScorer(embedder=live)  # type: ignore[arg-type]
    budgets = [int(b) for b in args.budgets.split(",") if b]
    by_budget = {b: SetwiseScorer(embedder=emb, passage_budget=b) for b in budgets}
    budget_times: dict[int, list[float]] = {b: [] for b in budgets}
    load_s = time.perf_counter() - t0
    rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # warm-up pass (first-call overheads), not timed
    q0, c0 = cases[0]
    scorer.score(q0, [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(c0)])
    dense_emb.embed([q0] + [f"{ti}\n{x}" for ti, x in c0])  # type: ignore[attr-defined]

    clock = time.perf_counter if args.clock == "wall" else time.process_time
    cold, dense_cold, warm, dense_warm, feat_only = [], [], [], [], []
    encoded["setwise"] = encoded["dense"] = 0
    for q, chunks in cases[1:]:
        items = [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(chunks)]
        t = clock()
        scorer.score(q, items)
        cold.append(clock() - t)

        t = clock()
        units = [q] + [f"{ti}\n{x}" for ti, x in chunks]
        v = dense_emb.embed(units)  # type: ignore[attr-defined]
        np.argsort(-(v[1:] @ v[0]))[:5]
        dense_cold.append(clock() - t)
        for b, sc in by_budget.items():
            t = clock()
            sc.score(q, items)
            budget_times[b].append(clock() - t)
        if args.live_only:
            continue

        # precomputed chunk vectors (seeded cache), only the question is encoded
        cache = CachedEmbedder(emb)
        cache.seed(
            [
                (p or "-", vec)
                for p, vec in zip(
                    [p or "-" for t_, x in chunks for p in passages(t_, x)],
                    emb.embed([p or "-" for t_, x in chunks for p in passages(t_, x)]),
                    strict=True,
                )
            ]
        )
        cache.seed(list(zip([f"{ti}\n{x}" for ti, x in chunks], v[1:], strict=True)))
        warm_scorer = SetwiseScorer(embedder=cache)
        t = clock()
        warm_scorer.score(q, items)
        warm.append(clock() - t)
        t = clock()
        warm_scorer.score(q, items)  # question cached too: the model's own cost (features + stages)
        feat_only.append(clock() - t)
        t = clock()
        vv = cache.embed(units)
        np.argsort(-(vv[1:] @ vv[0]))[:5]
        dense_warm.append(clock() - t)
    live_texts, dense_texts = encoded["setwise"], encoded["dense"]  # before the memory pass (one list again)
    # memory pass (tracemalloc slows Python down, so it is kept out of the timed loop)
    tracemalloc.start()
    q, chunks = cases[1]
    scorer.score(q, [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(chunks)])
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    words = np.mean([sum(len(x.split()) for _, x in c) for _, c in cases[1:]])
    print(
        f"setwise bench: {len(cases) - 1} runs x 15 chunks ({args.mix}, mean {words:.0f} words/list), "
        f"torch threads {args.threads}, cpu count {os.cpu_count()}, {args.clock} clock"
    )
    print(f"model load (MiniLM warm-up + model file): {load_s:.2f} s")
    print(
        f"texts encoded per list: setwise {live_texts / (len(cases) - 1):.1f}, "
        f"dense top-N {dense_texts / (len(cases) - 1):.1f} (question included)"
        + ("; one vector cache each for the run" if args.process_cache else "")
    )
    print(
        f"setwise live / dense top-N live, p50: {_pct(cold, 50) / _pct(dense_cold, 50):.2f}x "
        f"(mean {statistics.fmean(cold) / statistics.fmean(dense_cold):.2f}x; budget 2x)"
    )
    for b, xs in budget_times.items():
        print(
            f"setwise live, passage budget {b} / dense top-N live, p50: {_pct(xs, 50) / _pct(dense_cold, 50):.2f}x "
            f"(mean {statistics.fmean(xs) / statistics.fmean(dense_cold):.2f}x)"
        )
    for name, xs in (
        ("setwise, live encoding", cold),
        ("dense top-N, live encoding", dense_cold),
        ("setwise, precomputed chunk vectors", warm),
        ("dense top-N, precomputed", dense_warm),
        ("setwise, everything cached (model only)", feat_only),
    ):
        if not xs:
            continue
        print(
            f"{name:40s} p50 {_pct(xs, 50) * 1000:8.1f} ms   p95 {_pct(xs, 95) * 1000:8.1f} ms"
            f"   mean {statistics.fmean(xs) * 1000:8.1f} ms"
        )
    print(
        f"peak RSS: start {rss0:.0f} MiB, after load {rss_load:.0f} MiB, peak {rss_peak:.0f} MiB; "
        f"peak Python heap during scoring (tracemalloc) {heap_peak / 2**20:.1f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
