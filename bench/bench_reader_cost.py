"""What the sentence reader (:mod:`admit.answerability.reader`) adds to a request's verdict, in CPU milliseconds.

On graded lists written by ``bench_answer_models.py --lists DUMP``, each list's verdict is assessed by two model
files in the same process, alternating which goes first: ``shipped`` and a model that reads the reader's features.
Each assessment gets a fresh vector cache holding only the question's vector (the setwise pruner encoded it for the
request already), so the reader's sentences are encoded as in a live request; the term check's word vectors are
warm for both. Prints the CPU ms per verdict of each and the difference (median and mean).

Run: ``python bench/bench_reader_cost.py --lists DUMP MODEL.json [--rows 120]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="a model file that reads the reader's features")
    ap.add_argument("--lists", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=120)
    args = ap.parse_args(argv)

    from admit.answerability import DEFAULT_PATH, assess, load_models
    from admit.backends.embedders import resolve_embedder
    from admit.backends.embedders.base import CachedEmbedder
    from admit.passages import question_text

    rows = [json.loads(line) for line in args.lists.read_text("utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r["dense"]][: args.rows]
    raw = resolve_embedder("minilm")
    named = {"shipped": load_models(str(DEFAULT_PATH)), "reader": load_models(str(args.model))}
    spent: dict[str, list[float]] = {k: [] for k in named}
    for i, r in enumerate(rows):
        qv = raw.embed([question_text(r["question"])])[0]
        order = list(named) if i % 2 == 0 else list(reversed(named))
        for name in order:
            emb = CachedEmbedder(raw, seed={question_text(r["question"]): qv})
            t0 = time.process_time()
            assess(
                r["question"],
                r["texts"],
                models=named[name],
                dense=r["dense"],
                probs=r["probs"],
                expected_needed=r["expected"],
                graded=r["graded"],
                pool=r["pool"],
                embedder=emb,
            )
            spent[name].append((time.process_time() - t0) * 1000)
    diff = [b - a for a, b in zip(spent["shipped"], spent["reader"], strict=True)]
    for name, xs in spent.items():
        print(f"{name}: median {statistics.median(xs):.1f} ms, mean {statistics.fmean(xs):.1f} ms per verdict")
    print(f"added by the reader: median {statistics.median(diff):.1f} ms, mean {statistics.fmean(diff):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
