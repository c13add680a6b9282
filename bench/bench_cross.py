#!/usr/bin/env python3
"""What the split cross-encoder costs: ``setwise`` with and without it, beside dense top-N, in one run.

15 chunks of real text per question from ``../shared/data`` (``--mix short``: MuSiQue paragraphs; ``docs``: RHDH
documentation chunks; ``mixed``), then p50 / p95 of:

* dense top-N with live encoding (the baseline: embed question and chunks, cosine, sort);
* ``setwise`` live, without the cross model and with it (``cross=True``: bottom layers on each chunk's best
  passage, then the joint layers);
* the ``cross`` reranker alone, live;
* the stored-vector path (a KB that stored MiniLM vectors at ingest): ``setwise`` without the cross model, with it
  computing the chunks' bottom states live, and with stored bottom states (the encoder's state cache warmed: only
  the question's bottom layers and the joint layers run);

plus the cross model's load time and the process's peak RSS.

Usage: ``python3 bench/bench_cross.py [DATA_DIR] [--runs 20] [--threads 2] [--mix short|docs|mixed]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_setwise import _chunks, _pct  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mix", choices=("short", "docs", "mixed"), default="short")
    args = ap.parse_args()
    from admit.backends.embedders.base import CachedEmbedder
    from admit.backends.embedders.defaults import configure_minilm
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.backends.rerankers.cross import CrossEncoder, CrossReranker
    from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, passages
    from admit.types import Chunk

    configure_minilm(threads=args.threads)  # the threads of every MiniLM the run makes

    cases = _chunks(Path(args.data_dir), args.mix, args.runs + 1)
    emb = MiniLMEmbedder(threads=args.threads)
    emb.warm_up()
    t0 = time.perf_counter()
    enc = CrossEncoder(cache_items=0)
    enc.warm_up()
    load_s = time.perf_counter() - t0
    plain = SetwiseScorer(embedder=emb, cross=False)
    joint = SetwiseScorer(embedder=emb, cross=enc)
    rer = CrossReranker(enc)
    stored_enc = CrossEncoder(cache_items=4096)  # the chunks' states as a KB that stored them keeps them
    q0, c0 = cases[0]
    items0 = [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(c0)]
    plain.score(q0, items0)
    joint.score(q0, items0)

    rows: dict[str, list[float]] = {
        k: []
        for k in (
            "dense top-N, live encoding (baseline)",
            "setwise, live",
            "setwise + cross, live",
            "cross reranker alone, live",
            "dense top-N, stored vectors (baseline)",
            "setwise, stored vectors",
            "setwise + cross, stored vectors, states live",
            "setwise + cross, stored vectors and states",
        )
    }
    names = list(rows)
    for q, chunks in cases[1:]:
        items = [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(chunks)]

        def timed(name: str, fn: object) -> None:
            t = time.perf_counter()
            fn()  # type: ignore[operator]
            rows[name].append(time.perf_counter() - t)

        units = [q] + [f"{ti}\n{x}" for ti, x in chunks]
        timed(names[0], lambda units=units: np.argsort(-(emb.embed(units)[1:] @ emb.embed(units[:1])[0])))
        timed(names[1], lambda q=q, items=items: plain.score(q, items))
        timed(names[2], lambda q=q, items=items: joint.score(q, items))
        cs = [Chunk(id=str(i), source_id=str(i), title=t, text=x) for i, (t, x) in enumerate(chunks)]
        timed(names[3], lambda q=q, cs=cs: rer.score(q, cs))

        ps = [p or "-" for t_, x in chunks for p in passages(t_, x)]
        cache = CachedEmbedder(emb)
        cache.seed(list(zip(ps, emb.embed(ps), strict=True)))
        cache.seed(list(zip(units[1:], emb.embed(units[1:]), strict=True)))
        stored_plain = SetwiseScorer(embedder=cache, cross=False)
        timed(names[4], lambda units=units, cache=cache: np.argsort(-(cache.embed(units)[1:] @ cache.embed(units)[0])))
        timed(names[5], lambda q=q, items=items, s=stored_plain: s.score(q, items))
        live_states = SetwiseScorer(embedder=cache, cross=enc)
        timed(names[6], lambda q=q, items=items, s=live_states: s.score(q, items))
        stored_states = SetwiseScorer(embedder=cache, cross=stored_enc)
        stored_states.score(q + " ", items)  # fills the state cache (the chunks' states, as stored at ingest)
        timed(names[7], lambda q=q, items=items, s=stored_states: s.score(q, items))

    words = np.mean([sum(len(x.split()) for _, x in c) for _, c in cases[1:]])
    print(
        f"cross bench: {len(cases) - 1} runs x 15 chunks ({args.mix}, mean {words:.0f} words/list), "
        f"threads {args.threads}, cpu count {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; cross model "
        f"K={enc.k} ({len(enc.joint)} joint layer(s))"
    )
    print(f"cross model load (file + MiniLM weights + tokenizer): {load_s:.2f} s")
    base_live = _pct(rows[names[0]], 50)
    base_stored = _pct(rows[names[4]], 50)
    for i, (name, xs) in enumerate(rows.items()):
        base = base_live if i < 4 else base_stored
        print(
            f"{name:46s} p50 {_pct(xs, 50) * 1000:8.1f} ms   p95 {_pct(xs, 95) * 1000:8.1f} ms"
            f"   mean {statistics.fmean(xs) * 1000:8.1f} ms   p50 / baseline {_pct(xs, 50) / base:5.1f}x"
        )
    added = _pct(rows[names[2]], 50) - _pct(rows[names[1]], 50)
    print(f"the joint pass adds {added * 1000:.0f} ms p50 to live setwise (15 chunks)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
