"""CPU time of ``SetwiseScorer.score`` with every passage's vector stored (only the question encoded, once).

The budget of issue 48 is 10 ms p50. Wall time on a shared machine is not comparable between runs; this
reads the thread's CPU clock. To compare with an older tree, run it with that tree on ``PYTHONPATH``
(alternate the two: load drifts).

    PYTHONPATH=src python bench/bench_setwise_stored.py [DATA_DIR] [--questions 3] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import admit  # the tree on PYTHONPATH, imported before bench_setwise puts this checkout's src first

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    import bench_setwise as bs

    from admit.backends.embedders.base import CachedEmbedder
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, passages

    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    emb = MiniLMEmbedder(threads=1)
    emb.warm_up()
    runs = []
    for q, chunks in bs._chunks(Path(args.data_dir), "short", args.questions):
        cache = CachedEmbedder(emb)
        texts = [p or "-" for t, x in chunks for p in passages(t, x)] + [q] + [f"{t}\n{x}" for t, x in chunks]
        cache.seed(list(zip(texts, emb.embed(texts), strict=True)))
        items = [SetwiseItem(id=str(i), title=t, text=x) for i, (t, x) in enumerate(chunks)]
        scorer = SetwiseScorer(embedder=cache)
        scorer.score(q, items)  # first-call overheads
        runs.append((scorer, q, items))
    cpu = []
    for _ in range(args.repeat):
        for scorer, q, items in runs:
            t = time.thread_time()
            scorer.score(q, items)
            cpu.append((time.thread_time() - t) * 1000)
    print(f"{admit.__file__}: setwise score, stored vectors, 15 chunks, {len(cpu)} calls")
    print(f"CPU ms p50 {statistics.median(cpu):.1f}  min {min(cpu):.1f}  max {max(cpu):.1f}")


if __name__ == "__main__":
    main()
