"""The verdict on labelled lists, with their gold chunks and without (issue 46's check on ``../shared/data``).

For a seeded sample of each file's lists, the setwise pruner grades the list as a request would
(:meth:`admit.Pipeline.prune`, the default policy's settings, strategy ``setwise``) and the verdict is read twice:

- **gold kept**: the list as retrieved, where the pruner kept every gold chunk: "not answered" there is a verdict
  against evidence that holds the answer (target at most 5% per file);
- **gold removed**: the list without its gold chunks (a near miss: the same documents' neighbourhood without the
  answer): "not answered" there is right (target at least 60%).

Retention is not touched by the verdict (``on_no_answer = note`` admits what was packed), so R@68 is the same.

AUROC: the answer probability of a gold-kept list against a gold-removed one's.

Run: ``python bench/bench_answer_lists.py [--data ../shared/data] [--per-file 60] [--json PATH] [--encoder E]``;
run it once per checkout (``PYTHONPATH=<checkout>/src``) or encoder to compare two.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"


def _auroc(pos: list[float], neg: list[float]) -> float:
    """P(a gold-kept list's answer probability > a gold-removed list's), ties half."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--per-file", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--encoder", default=None, help="MiniLM's encoder (numpy, onnx-fp32, onnx-int8; default: admit's)")
    args = ap.parse_args(argv)

    from admit import Chunk, Pipeline
    from admit.trace import new_request_id

    if args.encoder:
        from admit.backends.embedders.defaults import configure_minilm

        configure_minilm(encoder=args.encoder)
    pipe = Pipeline()
    all_kept: list[float] = []
    all_removed: list[float] = []
    rows: list[dict[str, Any]] = []
    print("| file | lists | gold kept: not answered | unsure | gold removed: not answered | unsure | AUROC |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted(args.data.glob("*.jsonl")):
        recs = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        rng = random.Random(args.seed)
        sample = rng.sample(recs, min(args.per_file, len(recs)))
        kept_states: list[str] = []
        removed_states: list[str] = []
        kept_p: list[float] = []
        removed_p: list[float] = []
        for r in sample:
            gold = set(r.get("required") or [])
            cands = [
                Chunk(
                    id=c["id"],
                    source_id=c.get("source_id") or c["id"],
                    text=c.get("text") or " ",
                    title=c.get("title") or "",
                )
                for c in r["candidates"]
            ]
            if not gold or not gold & {c.id for c in cands}:
                continue
            settings = pipe.resolve(r["question"], strategy="setwise", request_id=new_request_id()).policy.prune
            scores = [float(len(cands) - i) for i in range(len(cands))]
            run = pipe.prune(r["question"], cands, settings, scores=scores)
            if gold <= set(run.kept_ids) and run.answer is not None:
                kept_states.append(run.answer.state)
                kept_p.append(run.answer.probability)
            rest = [c for c in cands if c.id not in gold]
            run2 = pipe.prune(r["question"], rest, settings, scores=scores[: len(rest)])
            if run2.answer is not None:
                removed_states.append(run2.answer.state)
                removed_p.append(run2.answer.probability)
            rows.append(
                {
                    "file": path.stem,
                    "id": r["id"],
                    "gold_kept_state": run.answer.state if gold <= set(run.kept_ids) and run.answer else None,
                    "gold_removed_state": run2.answer.state if run2.answer else None,
                    "gold_kept_p": run.answer.probability if gold <= set(run.kept_ids) and run.answer else None,
                    "gold_removed_p": run2.answer.probability if run2.answer else None,
                }
            )

        def share(xs: list[str], s: str) -> str:
            return f"{sum(x == s for x in xs)}/{len(xs)} ({sum(x == s for x in xs) / max(1, len(xs)):.0%})"

        print(
            f"| {path.stem} | {len(sample)} | {share(kept_states, 'not_answered')} | {share(kept_states, 'unsure')} "
            f"| {share(removed_states, 'not_answered')} | {share(removed_states, 'unsure')} "
            f"| {_auroc(kept_p, removed_p):.3f} |",
            flush=True,
        )
        all_kept += kept_p
        all_removed += removed_p
    print(f"AUROC over every file (answered with gold kept vs gold removed): {_auroc(all_kept, all_removed):.3f}")
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
