"""Routing accuracy on a labelled set: today's shipped policy beside the cue-anywhere router it replaced.

The set is ``bench/data/routing.jsonl`` (one question a line: ``question``, ``expected`` class, ``domain``,
``hard``, ``note``); its labels were written from what each question asks, before the shape-reading router
existed. The baseline is a frozen copy of the cues shipped until issue 39 (:data:`OLD_CUES`), run as they ran
then: the first class (by priority) whose regular expression matches anywhere in the raw question wins.

    PYTHONPATH=$PWD/src python bench/bench_routing.py [--policy FILE] [--set FILE] [--errors] [--json]
    PYTHONPATH=$PWD/src python bench/bench_routing.py --typed ../shared/data/hotpotqa_distractor.jsonl

Prints accuracy overall, on the hard cases and per class (recall of the expected class), then each router's
confusion matrix (rows: expected, columns: routed). ``--errors`` lists the questions each router gets wrong.
``--typed FILE`` (JSONL, gzip or not, with ``question`` and ``question_type``, as ``../shared/data``) instead counts
the questions each router sends to ``comparison``, by the records' own ``question_type`` (HotpotQA and
2WikiMultiHopQA label their comparison questions): a check on phrasing the labelled sets do not cover.
The accuracies are deterministic (no model); the one timing row is this machine's, best of three passes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from admit.policy import load_policy_set
from admit.route import Router, RoutingSettings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SET = ROOT / "bench" / "data" / "routing.jsonl"
CLASSES = ("history", "list_all", "comparison", "troubleshooting", "point_lookup", "default")

# The cues of admit/policies/default.toml as shipped before issue 39 (version 2026-11-30.1): (class, priority, cues).
OLD_CUES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    (
        "history",
        60,
        (
            r"\bwhat (has )?changed\b",
            r"\bchange ?log\b",
            r"\brelease notes?\b",
            r"\bprevious versions?\b",
            r"\bsince (version|v)\s*\d",
            r"\bhistory of\b",
            r"\bdeprecated\b",
        ),
    ),
    (
        "list_all",
        50,
        (
            r"\b(list|enumerate|name) (all|every|each)\b",
            r"\ball (the |of the )?(available |supported )?\w+s\b",
            r"\bevery\b",
            r"\bhow many (\w+ ){1,3}(are|were|exist)\b",
            r"\bhow many (kinds|types|sorts) of\b",
            r"\bwhich \w+s (are|were|exist)\b",
            r"\bwhat are (all )?the\b",
        ),
    ),
    (
        "comparison",
        40,
        (
            r"\bcompare[sd]?\b",
            r"\bcomparison\b",
            r"\bvs\.?\b",
            r"\bversus\b",
            r"\bdifferences? between\b",
            r"\bdiffer\b",
            r"\bbetter than\b",
            r"\b(both|either)\b",
            r"\bwhich (one |of the two )?(is|was) (older|younger|larger|bigger|smaller|longer|shorter|first|earlier"
            r"|later|higher|lower)\b",
            r"\b(older|younger|larger|smaller|earlier|later|more|fewer) than\b",
        ),
    ),
    (
        "troubleshooting",
        30,
        (
            r"\berror\b",
            r"\bfail(s|ed|ing|ure)?\b",
            r"\bnot (working|starting|loading|found)\b",
            r"\b(doesn't|does not|won't|will not|can't|cannot|unable to)\b",
            r"\bcrash(es|ed|ing)?\b",
            r"\bfix\b",
            r"\btroubleshoot",
            r"\bexception\b",
            r"\btime[ds]? ?out\b",
            r"\bbroken\b",
            r"\bissue with\b",
            r"\bdebug",
        ),
    ),
    (
        "point_lookup",
        20,
        (
            r"^\s*(what|who|when|where|which|whose|whom)\b",
            r"^\s*how (much|many|long|old|big|far)\b",
            r"\bwhat is the\b",
            r"\bdefault (value|port|setting)\b",
            r"\bname of\b",
            r"^\s*(is|are|was|were|does|do|did|can)\b",
        ),
    ),
    ("default", 0, ()),
)


def old_router() -> Router:
    """Today's cues, matched anywhere in the raw question (no masking, no clause cutting)."""
    return Router(OLD_CUES, default_class="default", settings=RoutingSettings(mask_quoted=False, main_clause=False))


def load_set(path: Path) -> list[dict[str, Any]]:
    """The labelled questions; a bad line or an unknown class is an error naming the line."""
    rows = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("expected") not in CLASSES or not isinstance(row.get("question"), str):
            raise SystemExit(f"{path}:{n}: needs a question and an expected class in {CLASSES}")
        rows.append(row)
    return rows


def score(rows: list[dict[str, Any]], classify: Callable[[str], str]) -> dict[str, Any]:
    """Accuracy overall, on hard cases, per expected class, and the confusion counts."""
    got = [classify(r["question"]) for r in rows]
    ok = [g == r["expected"] for g, r in zip(got, rows, strict=True)]
    hard = [o for o, r in zip(ok, rows, strict=True) if r.get("hard")]
    per_class = {}
    for c in CLASSES:
        idx = [i for i, r in enumerate(rows) if r["expected"] == c]
        per_class[c] = {"n": len(idx), "correct": sum(ok[i] for i in idx)}
    confusion = Counter((r["expected"], g) for r, g in zip(rows, got, strict=True))
    errors = [
        {"question": r["question"], "expected": r["expected"], "got": g}
        for r, g, o in zip(rows, got, ok, strict=True)
        if not o
    ]
    return {
        "n": len(rows),
        "accuracy": sum(ok) / len(rows),
        "hard_n": len(hard),
        "hard_accuracy": sum(hard) / max(len(hard), 1),
        "per_class": per_class,
        "confusion": {f"{e}->{g}": n for (e, g), n in sorted(confusion.items())},
        "errors": errors,
    }


def _time_per_question(router: Any, rows: list[dict[str, Any]]) -> float:
    """Microseconds per ``classify`` call over the set, best of three passes (this machine, this run)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for r in rows:
            router.classify(r["question"])
        best = min(best, time.perf_counter() - start)
    return best / max(len(rows), 1) * 1e6


def _confusion_table(result: dict[str, Any]) -> list[str]:
    short = {"history": "hist", "list_all": "list", "comparison": "comp", "troubleshooting": "trbl",
             "point_lookup": "point", "default": "dflt"}  # fmt: skip
    lines = ["| expected \\ routed | " + " | ".join(short[c] for c in CLASSES) + " |", "|---" * 7 + "|"]
    for e in CLASSES:
        cells = [str(result["confusion"].get(f"{e}->{g}", 0)) for g in CLASSES]
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    return lines


def typed_check(path: Path, routers: dict[str, Any]) -> None:
    """Per ``question_type``: how many questions, and how many each router sends to ``comparison``."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    counts: dict[str, Counter[str]] = {}
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            c = counts.setdefault(str(rec.get("question_type", "")), Counter())
            c["n"] += 1
            for name, router in routers.items():
                c[name] += router.classify(rec["question"]).query_class == "comparison"
    print(f"routed to comparison, by question_type, in {path.name}\n")
    print("| question_type | n | " + " | ".join(routers) + " |")
    print("|---" * (len(routers) + 2) + "|")
    for qt, c in sorted(counts.items()):
        print(f"| {qt} | {c['n']} | " + " | ".join(str(c[name]) for name in routers) + " |")


def main(argv: list[str] | None = None) -> int:
    """Run both routers on the set and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="labelled JSONL (default: %(default)s)")
    ap.add_argument("--policy", default=None, help="policy file for the new router (default: the shipped one)")
    ap.add_argument("--errors", action="store_true", help="list the misrouted questions")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--typed", type=Path, default=None, help="count comparison routes by question_type in FILE")
    args = ap.parse_args(argv)
    old, new = old_router(), load_policy_set(args.policy)
    if args.typed is not None:
        typed_check(args.typed, {"old (cue anywhere)": old, "new (question shape)": new})
        return 0
    rows = load_set(args.set)
    results = {
        "old (cue anywhere)": score(rows, lambda q: old.classify(q).query_class),
        "new (question shape)": score(rows, lambda q: new.classify(q).query_class),
    }
    for name, router in (("old (cue anywhere)", old), ("new (question shape)", new)):
        results[name]["us_per_question"] = _time_per_question(router, rows)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    names = list(results)
    hard_n = results[names[0]]["hard_n"]
    where = args.set.relative_to(ROOT) if args.set.is_relative_to(ROOT) else args.set
    print(f"{len(rows)} questions ({hard_n} hard) from {where}\n")
    print("| | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    print("| all | " + " | ".join(f"{r['accuracy']:.3f}" for r in results.values()) + " |")
    print(f"| hard ({hard_n}) | " + " | ".join(f"{r['hard_accuracy']:.3f}" for r in results.values()) + " |")
    print(
        "| µs per question (best of 3) | " + " | ".join(f"{r['us_per_question']:.0f}" for r in results.values()) + " |"
    )
    for c in CLASSES:
        n = results[names[0]]["per_class"][c]["n"]
        cells = [f"{r['per_class'][c]['correct'] / max(n, 1):.3f}" for r in results.values()]
        print(f"| {c} ({n}) | " + " | ".join(cells) + " |")
    for name, r in results.items():
        print(f"\nconfusion, {name}:\n")
        print("\n".join(_confusion_table(r)))
        if args.errors:
            print()
            for e in r["errors"]:
                print(f"  {e['expected']:>15} -> {e['got']:<15} {e['question']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
