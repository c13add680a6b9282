"""A knowledge-base search's median time on the documentation sites: ``KnowledgeBase.search(prune="setwise")`` (the
whole path: retrieval, rerank, pruner, pack) and ``KnowledgeBase.hits`` (retrieval alone), per site, over the
questions of ``bench/docsites/questions.jsonl``, each question asked once to warm up (its vector, the model) and
then timed once.

Run it with each checkout's ``src`` on ``PYTHONPATH`` in turn, on the knowledge bases ``bench/bench_docsites.py``
built (``--cache``), and compare the two in the same run (the machine is shared):

    PYTHONPATH=OLD/src python bench/bench_search_p50.py --cache DIR --sites git gettext
    PYTHONPATH=src python bench/bench_search_p50.py --cache DIR --sites git gettext
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, required=True, help="bench_docsites.py's --cache (its kb/ folder)")
    ap.add_argument("--questions", type=Path, default=HERE / "docsites" / "questions.jsonl")
    ap.add_argument("--sites", nargs="+", default=["git", "gettext"])
    ap.add_argument("--label", default="", help="a name for this checkout in the printed line")
    args = ap.parse_args(argv)

    from admit.kb import KnowledgeBase
    from admit.kb.knowledge_base import parse_principal

    questions = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines() if line.strip()]
    principal = parse_principal("tenant:docs")
    out: dict[str, dict[str, float]] = {}
    for site in args.sites:
        kb = KnowledgeBase(args.cache / "kb" / f"{site}.kb")
        try:
            asked = [q["question"] for q in questions if q["site"] == site]
            for q in asked:
                kb.search(q, principal, prune="setwise")
            search, hits = [], []
            for q in asked:
                t0 = time.perf_counter()
                kb.search(q, principal, prune="setwise")
                t1 = time.perf_counter()
                kb.hits(q, principal)
                t2 = time.perf_counter()
                search.append(t1 - t0)
                hits.append(t2 - t1)
        finally:
            kb.close()
        out[site] = {
            "questions": len(asked),
            "search_p50_ms": round(1000 * statistics.median(search), 1),
            "hits_p50_ms": round(1000 * statistics.median(hits), 1),
        }
    print(args.label, json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
