"""Short lists through the adapters' core, on the knowledge bases ``bench/bench_docsites.py`` ingests.

For each answerable question of ``bench/docsites/questions.jsonl``: its 20 best candidates, handed to
:class:`admit.adapters._core.AdmitFilter` without scores (the retriever's order is the rank, as LangChain's
``vectorstore.as_retriever()`` hands them). Prints:

- ``top3``: questions whose answer string is among what ``AdmitFilter(top_k=3)`` keeps;
- ``bm25_3``: the same for the first 3 of a BM25 re-sort of the same 20 (admit's ``bm25`` reranker);
- ``k4_rank1`` / ``k4_rank1_kept``: questions whose first candidate holds the answer, and how many of them keep it
  when only the first 4 are handed over (LangChain's default ``k``);
- ``empty_state``: the verdict on an empty list.

Run after ``bench/bench_docsites.py`` (same ``--cache``): ``python bench/bench_short_lists.py --cache DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_docsites import QUESTIONS, SITES, TENANT, holds  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "admit-docsites"
    ap.add_argument("--cache", type=Path, default=cache)
    ap.add_argument("--sites", nargs="*", default=list(SITES))
    ap.add_argument("--k", type=int, default=20)
    args = ap.parse_args(argv)

    from admit.adapters._core import AdmitFilter, Doc
    from admit.backends.rerankers import resolve_reranker
    from admit.kb import KnowledgeBase
    from admit.kb.knowledge_base import parse_principal

    bm25 = resolve_reranker("bm25")
    top3, whole = AdmitFilter(top_k=3), AdmitFilter()
    out = {"questions": 0, "top3": 0, "bm25_3": 0, "k4_rank1": 0, "k4_rank1_kept": 0}
    out["empty_state"] = whole.run("What is it?", []).answer_state
    questions = [json.loads(line) for line in QUESTIONS.read_text("utf-8").splitlines() if line.strip()]
    who = parse_principal(f"tenant:{TENANT}")
    for site in args.sites:
        kb = KnowledgeBase(args.cache / "kb" / f"{site}.kb")
        try:
            for q in (q for q in questions if q["site"] == site and q["answers"]):
                cands = kb.retrieve(q["question"], who, k=args.k)
                docs = [Doc(id=c.id, text=c.text, title=c.title) for c in cands]
                ans = [holds([f"{c.title}\n{c.text}"], q["answers"], False) for c in cands]
                out["questions"] += 1
                out["top3"] += any(ans[v.index] for v in top3.run(q["question"], docs).kept)
                scores = bm25.score(q["question"], cands)
                out["bm25_3"] += any(ans[i] for i in sorted(range(len(cands)), key=lambda i: -scores[i])[:3])
                if ans and ans[0]:
                    out["k4_rank1"] += 1
                    out["k4_rank1_kept"] += any(v.index == 0 for v in whole.run(q["question"], docs[:4]).kept)
        finally:
            kb.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
