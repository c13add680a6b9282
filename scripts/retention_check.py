#!/usr/bin/env python3
"""Retention and chunks kept by the setwise grades of whichever ``admit`` is on ``PYTHONPATH`` (a before/after check).

Usage (the same seeded sample of 120 questions per validation file, vectors from ``fit_answerability.py``'s cache)::

    PYTHONPATH=/path/to/checkout/src python3 scripts/retention_check.py

"Retained": every required chunk graded >= 3 (threshold 3, keep_top_k 0); "kept_share": graded >= 3 / all.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import admit
from admit.prune import setwise_model as sm
from fitlib.data import VALID, read_file
from fitlib.setwise_data import setwise_items
from fitlib.vectors import VectorCache


def main() -> None:
    data = Path(os.environ.get("DATA", VALID))
    vc = VectorCache(Path(os.environ.get("CACHE", "/tmp/answer_cache")) / "vecs.npz")
    scorer = sm.SetwiseScorer(embedder=vc)  # type: ignore[arg-type]
    out: dict[str, object] = {"admit": admit.__file__}
    for name in ("hotpotqa_distractor", "musique", "rhdh_docs"):
        rows = random.Random(7).sample(read_file(data / f"{name}.jsonl"), 120)
        ret = kept = n = 0
        for r in rows:
            items = setwise_items(r["candidates"])
            grades = scorer.score(r["question"], items).grades
            k = {it.id for it, g in zip(items, grades, strict=True) if g >= 3}
            ret += set(r["required"]) <= k
            kept += len(k)
            n += len(items)
        out[name] = {"retained": round(ret / len(rows), 4), "kept_share": round(kept / n, 4)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
