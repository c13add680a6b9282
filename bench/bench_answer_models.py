"""Answerability model files side by side on labelled lists, gold kept and gold removed (issue 46, item "better
evidence"): the AUROC of each model's probability within each file, and its verdicts.

The lists are graded once by the shipped pipeline (:meth:`admit.Pipeline.prune`, strategy ``setwise``, as
``bench_answer_lists.py`` does; a seeded sample per file); each model file then decides on the same kept chunks
(:func:`admit.answerability.assess` with its models). A model file is what ``scripts/fit_answerability.py --out``
writes (``--setwise-extra`` to read more features).

Run: ``python bench/bench_answer_models.py [--data ../shared/data] [--per-file 60] [--lists DUMP] MODEL.json ...``
(``shipped`` names the shipped file; ``--lists``: read the graded lists from DUMP when it exists, else write them).
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
sys.path.insert(0, str(HERE))

from bench_answer_lists import candidates  # noqa: E402


def _text(c: Any) -> str:
    return f"{c.title}\n{c.text}" if c.title else str(c.text)


def graded_lists(data: Path, per_file: int, seed: int) -> list[dict[str, Any]]:
    """Each sampled list, with and without its gold chunks, as the shipped pipeline grades it."""
    from admit import Pipeline
    from admit.trace import new_request_id

    pipe = Pipeline()
    rows: list[dict[str, Any]] = []
    for path in sorted(data.glob("*.jsonl")):
        recs = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        for r in random.Random(seed).sample(recs, min(per_file, len(recs))):
            gold = set(r.get("required") or [])
            cands = candidates(r)
            if not gold & {c.id for c in cands}:
                continue
            settings = pipe.resolve(r["question"], strategy="setwise", request_id=new_request_id()).policy.prune
            scores = [float(len(cands) - i) for i in range(len(cands))]
            for kind, cl in (("kept", cands), ("removed", [c for c in cands if c.id not in gold])):
                run = pipe.prune(r["question"], cl, settings, scores=scores[: len(cl)])
                kept = [v.chunk for v in run.verdicts if v.kept]
                sig = run.outcome.signals if run.outcome else {}
                rows.append(
                    {
                        "file": path.stem,
                        "kind": kind,
                        "question": r["question"],
                        "all_gold": gold <= set(run.kept_ids),
                        "texts": [_text(c) for c in kept],
                        "pool": [_text(c) for c in cl],
                        "dense": [sig[c.id][0] for c in kept if c.id in sig],
                        "probs": [sig[c.id][1] for c in kept if c.id in sig],
                        "expected": run.outcome.expected_needed if run.outcome else None,
                        "graded": len(run.outcome.graded) if run.outcome else None,
                    }
                )
        print(f"  {path.stem}: graded", file=sys.stderr, flush=True)
    return rows


def auroc(pos: list[float], neg: list[float]) -> float:
    """The chance that a positive scores above a negative (ties count half); NaN without both."""
    if not pos or not neg:
        return float("nan")
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="model files (shipped: the shipped one)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--per-file", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lists", type=Path, default=None, help="read the graded lists here when it exists, else write")
    args = ap.parse_args(argv)

    from admit.answerability import DEFAULT_PATH, assess, load_models
    from admit.backends.embedders.shared import shared_embedder

    if args.lists is not None and args.lists.exists():
        rows = [json.loads(line) for line in args.lists.read_text("utf-8").splitlines() if line.strip()]
    else:
        rows = graded_lists(args.data, args.per_file, args.seed)
        if args.lists is not None:
            args.lists.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    emb = shared_embedder("minilm")
    print("| model | file | gold kept (pruner kept all) | gold removed | AUROC | NA gold kept | NA gold removed |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models:
        models = load_models(str(DEFAULT_PATH) if name == "shipped" else name)
        for f in sorted({r["file"] for r in rows}):
            got: dict[str, list[tuple[float, str]]] = {"kept": [], "removed": []}
            for r in rows:
                if r["file"] != f or (r["kind"] == "kept" and not r["all_gold"]):
                    continue
                a = assess(
                    r["question"],
                    r["texts"],
                    models=models,
                    dense=r["dense"] or None,
                    probs=r["probs"] or None,
                    expected_needed=r["expected"],
                    graded=r["graded"],
                    pool=r["pool"],
                    embedder=emb,
                )
                got[r["kind"]].append((a.probability, a.state))
            k, m = got["kept"], got["removed"]
            auc = auroc([p for p, _ in k], [p for p, _ in m])
            na_k = sum(s == "not_answered" for _, s in k)
            na_m = sum(s == "not_answered" for _, s in m)
            print(f"| {name} | {f} | {len(k)} | {len(m)} | {auc:.3f} | {na_k}/{len(k)} | {na_m}/{len(m)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
