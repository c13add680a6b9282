#!/usr/bin/env python3
"""How often each version, enumeration and comparison rule of the setwise pruner fires, and on what: of the chunks
a rule fires on (its condition holds) and of those it moves (its part of the reason is there), how many are
required (hold the answer) against the base rate of required chunks.

Usage (the setwise scorer of whichever ``admit`` is on ``PYTHONPATH``, MiniLM, no cross model)::

    PYTHONPATH=src:scripts python3 scripts/rule_precision.py ../shared/data/rhdh_docs.jsonl [--limit N]

Prints one JSON object per file.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from admit.prune.setwise_model import SetwiseScorer, lists, rules
from fitlib.data import read_file
from fitlib.setwise_data import setwise_items

#: rule -> the part of a reason it writes when it moves a grade
MARKS = {
    "release lift": "; about release ",
    "release cap": "; about another release than ",
    "enumeration": "; enumerates the ",
    "comparison": "; names both ",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    scorer = SetwiseScorer(cross=False, multilingual=False)
    for path in args.files:
        rows = read_file(path)
        if args.limit:
            rows = rows[: args.limit]
        c: Counter[str] = Counter()
        for r in rows:
            items = setwise_items(r["candidates"])
            req = set(r["required"])
            q = r["question"]
            c["chunks"] += len(items)
            c["required"] += sum(it.id in req for it in items)
            hit, other, _ = rules.version_hits(q, [i.title for i in items], [i.text for i in items])
            terms = lists.compared_terms(q)
            fires = {
                "release lift": hit if any(hit) else [False] * len(items),
                "release cap": other if any(hit) else [False] * len(items),
                "enumeration": [lists.enumerates_kind(q, i.title, i.text) is not None for i in items],
                "comparison": [terms is not None and lists.holds_both(terms, i.title, i.text) for i in items],
            }
            if not any(any(v) for v in fires.values()):
                continue  # no rule fires: the grades are the model's (nothing to score)
            reasons = scorer.score(q, items).reasons
            for name, fired in fires.items():
                for it, f, why in zip(items, fired, reasons, strict=True):
                    if f:
                        c[f"{name}: fires"] += 1
                        c[f"{name}: fires on required"] += it.id in req
                    if MARKS[name] in why:
                        c[f"{name}: moves"] += 1
                        c[f"{name}: moves required"] += it.id in req
        out = {"file": path.name, "questions": len(rows), **dict(sorted(c.items()))}
        out["base rate"] = round(c["required"] / max(1, c["chunks"]), 4)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
