"""CPU time of ``SetwiseScorer.score`` with every passage's vector stored (only the question encoded, once).

The budget of issue 48 is 10 ms p50. Wall time on a shared machine is not comparable between runs; this
reads the thread's CPU clock. To compare with an older tree, run it with that tree on ``PYTHONPATH``
(alternate the two: load drifts).

    PYTHONPATH=src python bench/bench_setwise_stored.py [DATA_DIR] [--questions 3] [--repeat 5] [--chunks 30]
        [--stored-features]

``--stored-features``: each call's chunks also come with the features a knowledge base stores at ingest
(``admit.features.chunk_features``: their words, capitalised words, entity phrases ...), seeded after the caches are
cleared as ``KnowledgeBase.hits`` seeds them; the seeding's CPU time is printed apart (retrieval pays it).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import statistics
import time
from pathlib import Path

import admit  # the tree on PYTHONPATH, imported before bench_setwise puts this checkout's src first


def _lists(data_dir: Path, n_questions: int, n_chunks: int) -> list[tuple[str, list[tuple[str, str]]]]:
    """(question, ``n_chunks`` (title, text)) of MuSiQue: the question's own candidates, then the next ones'."""
    rows = [json.loads(line) for line in (data_dir / "musique.jsonl").read_text(encoding="utf-8").splitlines()]
    out = []
    for k in range(n_questions):
        cands = [c for r in rows[k : k + 1 + n_chunks // 10] for c in r["candidates"]][:n_chunks]
        out.append((str(rows[k]["question"]), [(str(c["title"]), str(c["text"])) for c in cands]))
    return out


def main() -> None:
    from admit.backends.embedders.base import CachedEmbedder
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.features import chunk_features, clear_caches, seed_features
    from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, passages

    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunks", type=int, default=15, help="candidates per list (MuSiQue's 20, then the next's)")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the timed calls to FILE")
    ap.add_argument(
        "--warm-texts",
        action="store_true",
        help="keep the per-text caches between calls (default: forget them first: every call reads its texts anew)",
    )
    ap.add_argument(
        "--stored-features",
        action="store_true",
        help="seed the features stored at ingest after clearing the caches (as a knowledge base's search does)",
    )
    args = ap.parse_args()
    emb = MiniLMEmbedder(threads=1)
    emb.warm_up()
    runs = []
    for q, chunks in _lists(Path(args.data_dir), args.questions, args.chunks):
        cache = CachedEmbedder(emb)
        texts = [p or "-" for t, x in chunks for p in passages(t, x)] + [q] + [f"{t}\n{x}" for t, x in chunks]
        cache.seed(list(zip(texts, emb.embed(texts), strict=True)))
        items = [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(chunks)]
        scorer = SetwiseScorer(embedder=cache)
        scorer.score(q, items)  # first-call overheads
        stored = [json.loads(json.dumps(chunk_features(t, x))) for t, x in chunks] if args.stored_features else []
        runs.append((scorer, q, items, stored))
    cpu, seeding = [], []
    prof = cProfile.Profile() if args.profile else None
    for _ in range(args.repeat):
        for scorer, q, items, stored in runs:
            if not args.warm_texts:
                clear_caches()
            t = time.thread_time()
            for it, f in zip(items, stored, strict=False):
                seed_features(it.title, it.text, f)
            seeding.append((time.thread_time() - t) * 1000)
            if prof is not None:
                prof.enable()
            t = time.thread_time()
            scorer.score(q, items)
            cpu.append((time.thread_time() - t) * 1000)
            if prof is not None:
                prof.disable()
    if prof is not None:
        prof.dump_stats(args.profile)
    texts = "per-text caches kept" if args.warm_texts else "per-text caches cleared before each call"
    if args.stored_features:
        texts += ", then the stored features seeded"
    print(f"{admit.__file__}: setwise score, stored vectors, {args.chunks} chunks, {len(cpu)} calls ({texts})")
    print(f"CPU ms p50 {statistics.median(cpu):.1f}  min {min(cpu):.1f}  max {max(cpu):.1f}")
    if args.stored_features:
        print(f"seeding the stored features, CPU ms p50 {statistics.median(seeding):.1f} (paid at retrieval)")


if __name__ == "__main__":
    main()
