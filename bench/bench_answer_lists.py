"""The verdict on labelled lists, with their gold chunks and without (issue 46's check on ``../shared/data``).

For a seeded sample of each file's lists, the setwise pruner grades the list as a request would
(:meth:`admit.Pipeline.prune`, the default policy's settings, strategy ``setwise``) and the verdict is read twice:

- **gold kept**: the list as retrieved, where the pruner kept every gold chunk: "not answered" there is a verdict
  against evidence that holds the answer (target at most 5% per file);
- **gold removed**: the list without its gold chunks (a near miss: the same documents' neighbourhood without the
  answer): "not answered" there is right (target at least 60%).

Retention is not touched by the verdict (``on_no_answer = note`` admits what was packed), so R@68 is the same.
``AUROC``: how well the model's probability tells the gold-kept lists from the gold-removed ones within the file.

``--adapt``: the file's passages are taken as the user's knowledge base (every candidate of every list in the file,
``--adapt-to file``, the default; ``--adapt-to sample``: only the sampled lists') and the verdict is adapted to it
without its labels (:func:`admit.eval.adapt.adapt_to_passages`: the thresholds, and the knowledge base's page names,
:mod:`admit.answerability.pages`); each file gets a second row, ``adapted``, with those verdicts (the same pruning:
only the verdict's adaptation differs).

``--page-rule``: only the page-name rule (:mod:`admit.answerability.pages`), on every list of each file, every
candidate admitted (no pruning: seconds).

Run: ``python bench/bench_answer_lists.py [--data ../shared/data] [--per-file 60] [--adapt [--adapt-to sample]]
[--json PATH] [--encoder E] [--files rhdh_docs ...]``; run it once per checkout (``PYTHONPATH=<checkout>/src``) or
encoder to compare two (``--files``: only those files, by stem, so two can run side by side).
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--per-file", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--adapt", action="store_true", help="also adapt the verdict to each file's passages")
    ap.add_argument(
        "--adapt-to",
        choices=("file", "sample"),
        default="file",
        help="the knowledge base adapted to: every passage of the file (default) or the sampled lists' only",
    )
    ap.add_argument("--encoder", default=None, help="MiniLM's encoder (numpy, onnx-fp32, onnx-int8; default: admit's)")
    ap.add_argument(
        "--page-rule",
        action="store_true",
        help="only the page-name rule, on every list of each file, the file's passages as the knowledge base",
    )
    ap.add_argument("--files", nargs="*", default=None, help="only these data files (stems, e.g. rhdh_docs)")
    args = ap.parse_args(argv)
    if args.page_rule:
        return page_rule(args.data)

    from admit import Pipeline
    from admit.backends.embedders.defaults import EncoderConfig
    from admit.decide import assess_run
    from admit.trace import new_request_id

    pipe = Pipeline(minilm=EncoderConfig(encoder=args.encoder) if args.encoder else None)
    rows: list[dict[str, Any]] = []
    head = "| file | thresholds | lists | gold kept: not answered | unsure | gold removed: not answered | unsure |"
    print(f"{head} AUROC |")
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(args.data.glob("*.jsonl")):
        if args.files and path.stem not in args.files:
            continue
        recs = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        rng = random.Random(args.seed)
        sample = rng.sample(recs, min(args.per_file, len(recs)))
        runs: list[tuple[str, Any, Any, bool]] = []
        for r in sample:
            gold = set(r.get("required") or [])
            cands = candidates(r)
            if not gold or not gold & {c.id for c in cands}:
                continue
            settings = pipe.resolve(r["question"], strategy="setwise", request_id=new_request_id()).policy.prune
            scores = [float(len(cands) - i) for i in range(len(cands))]
            run = pipe.prune(r["question"], cands, settings, scores=scores)
            rest = [c for c in cands if c.id not in gold]
            run2 = pipe.prune(r["question"], rest, settings, scores=scores[: len(rest)])
            runs.append((r["question"], run, run2, gold <= set(run.kept_ids)))
            rows.append(
                {
                    "file": path.stem,
                    "id": r["id"],
                    "gold_kept_state": run.answer.state if gold <= set(run.kept_ids) and run.answer else None,
                    "gold_removed_state": run2.answer.state if run2.answer else None,
                    "gold_kept_p": run.answer.probability if run.answer else None,
                    "gold_removed_p": run2.answer.probability if run2.answer else None,
                }
            )

        _row(path.stem, "shipped", len(sample), runs)
        if args.adapt:
            from admit.eval.adapt import ListAdaptOptions, adapt_to_passages

            if args.adapt_to == "file":
                passages = [c for r in recs for c in candidates(r)]
            else:
                passages = [v.chunk for _, a, _, _ in runs for v in a.verdicts]
            lens = sorted(len(run.verdicts) for _, run, _, _ in runs)
            opts = ListAdaptOptions(list_len=lens[len(lens) // 2] if lens else 10)
            ad, _ = adapt_to_passages(passages, pipe, opts)
            enc = pipe.term_encoder("setwise")
            again = [
                (q, assess_run(q, a, embedder=enc, adaptation=ad), assess_run(q, b, embedder=enc, adaptation=ad), k)
                for q, a, b, k in runs
            ]
            th = ", ".join(f"{m} {lo:.3f}" for m, (lo, _) in sorted(ad.thresholds.items()))
            th += f"; pseudo AUROC {ad.figures['separation']:.2f}; {ad.figures['pages']} page names"
            _row(path.stem, f"adapted ({th})", len(sample), again)
            for row, (_, a, b, _) in zip(rows[-len(again) :], again, strict=True):
                row["adapted_kept_state"] = a.answer.state if a.answer else None
                row["adapted_removed_state"] = b.answer.state if b.answer else None
                row["adapted_kept_reason"] = a.answer.reason if a.answer else None
                row["adapted_removed_reason"] = b.answer.reason if b.answer else None
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return 0


def page_rule(data: Path) -> int:
    """The page-name rule alone (:mod:`admit.answerability.pages`), on every list of each file with its gold chunks
    kept and removed, every candidate admitted, the file's passages as the knowledge base: how often it says "not
    answered" (no candidate from a page the question names). Labels pick the gold chunks to remove, nothing else."""
    from admit.answerability.pages import kb_page_names, page_check

    print("| file | lists | page names | gold kept: not answered | gold removed: not answered |")
    print("|---|---|---|---|---|")
    for path in sorted(data.glob("*.jsonl")):
        recs = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        names = kb_page_names((c.get("title") or "", c.get("text") or "") for r in recs for c in r["candidates"])
        kept = removed = 0
        for r in recs:
            gold = set(r.get("required") or [])
            every = [c.get("title") or "" for c in r["candidates"]]
            rest = [c.get("title") or "" for c in r["candidates"] if c["id"] not in gold]
            kept += bool(page_check(r["question"], names, every, every).absent)
            removed += bool(page_check(r["question"], names, rest, rest).absent)
        n = len(recs)
        print(f"| {path.stem} | {n} | {len(names)} | {kept}/{n} ({kept / n:.0%}) | {removed}/{n} ({removed / n:.0%}) |")
    return 0


def _share(xs: list[str], s: str) -> str:
    return f"{sum(x == s for x in xs)}/{len(xs)} ({sum(x == s for x in xs) / max(1, len(xs)):.0%})"


def candidates(record: dict[str, Any]) -> list[Any]:
    """A labelled record's candidate list as admit chunks (labels are not read here)."""
    from admit import Chunk

    return [
        Chunk(
            id=c["id"],
            source_id=c.get("source_id") or c["id"],
            text=c.get("text") or " ",
            title=c.get("title") or "",
        )
        for c in record["candidates"]
    ]


def auroc(pos: list[float], neg: list[float]) -> float:
    """The chance that a positive scores above a negative (ties count half); NaN without both."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _row(name: str, label: str, n: int, runs: list[tuple[str, Any, Any, bool]]) -> None:
    """One table row: the verdicts of the gold-kept lists whose gold the pruner kept, and of the gold-removed ones."""
    kept = [a.answer for _, a, _, all_kept in runs if all_kept and a.answer is not None]
    removed = [b.answer for _, _, b, _ in runs if b.answer is not None]
    ks, rs = [x.state for x in kept], [x.state for x in removed]
    auc = auroc([x.probability for x in kept], [x.probability for x in removed])
    print(
        f"| {name} | {label} | {n} | {_share(ks, 'not_answered')} | {_share(ks, 'unsure')} "
        f"| {_share(rs, 'not_answered')} | {_share(rs, 'unsure')} | {auc:.3f} |",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
